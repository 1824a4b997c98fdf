//! Tests of the A2A client against in-process axum servers on 127.0.0.1:0 (stopped on drop), and
//! of the wire format against the official `a2a-lf` types. No sleeps: a "hanging" server simply
//! never answers, and deadlines are the client's own.

use super::card::{Card, candidates};
use super::wire::{parse_send_result, parse_task_result};
use super::{A2aError, Outgoing, Started, TaskView, Worker, http_client};
use a2a_mod_config::{OAuthConfig, WorkerConfig};
use a2a_mod_core::task::TaskState;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, Clone)]
struct Req {
    base: String,
    method: String,
    path: String,
    query: String,
    headers: HeaderMap,
    body: Value,
}

impl Req {
    fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    }
    fn rpc_method(&self) -> &str {
        self.body["method"].as_str().unwrap_or("")
    }
}

enum Reply {
    Json(u16, Value),
    Raw(u16, &'static str, Vec<u8>),
    /// No Content-Length: the client must stop reading by itself.
    Stream(Vec<u8>),
    Hang,
}

type Handler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

struct Fake {
    base: String,
    log: Arc<Mutex<Vec<Req>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fake {
    fn requests(&self) -> Vec<Req> {
        self.log.lock().unwrap().clone()
    }
    fn count(&self, pred: impl Fn(&Req) -> bool) -> usize {
        self.requests().iter().filter(|r| pred(r)).count()
    }
    fn worker(&self) -> Worker {
        self.worker_with(|_| {})
    }
    fn worker_with(&self, f: impl FnOnce(&mut WorkerConfig)) -> Worker {
        let mut cfg = WorkerConfig {
            url: self.base.clone(),
            ..Default::default()
        };
        f(&mut cfg);
        Worker::new("fake", cfg, http_client())
    }
}

#[derive(Clone)]
struct Shared {
    base: String,
    log: Arc<Mutex<Vec<Req>>>,
    handler: Handler,
}

async fn handle(
    State(st): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = Req {
        base: st.base.clone(),
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().unwrap_or("").to_string(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    st.log.lock().unwrap().push(req.clone());
    let reply = (st.handler)(&req);
    let (status, ctype, body) = match reply {
        Reply::Json(s, v) => (s, "application/json", Body::from(v.to_string())),
        Reply::Raw(s, c, b) => (s, c, Body::from(b)),
        Reply::Stream(b) => {
            let chunks: Vec<Result<Bytes, std::io::Error>> = b
                .chunks(64 * 1024)
                .map(|c| Ok(Bytes::copy_from_slice(c)))
                .collect();
            (
                200,
                "application/json",
                Body::from_stream(futures::stream::iter(chunks)),
            )
        }
        Reply::Hang => std::future::pending().await,
    };
    Response::builder()
        .status(status)
        .header("content-type", ctype)
        .body(body)
        .unwrap()
}

async fn serve(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Fake {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let log = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared {
        base: base.clone(),
        log: log.clone(),
        handler: Arc::new(handler),
    };
    let app = axum::Router::new().fallback(handle).with_state(shared);
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Fake { base, log, task }
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(10)
}

/// The tests' shorthand for [`Worker::send`]: a text message, plain or streamed.
trait Says {
    fn me(&self) -> &Worker;

    async fn plain(
        &self,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
        deadline: Instant,
    ) -> Result<TaskView, A2aError> {
        let m = Outgoing {
            text,
            task_id,
            context_id,
            ..Outgoing::default()
        };
        match self.me().send(&m, deadline).await? {
            Started::Plain(v) => Ok(v),
            Started::Stream(_) => unreachable!("a plain send does not stream"),
        }
    }

    async fn streamed(
        &self,
        text: &str,
        task_id: Option<&str>,
        context_id: Option<&str>,
        deadline: Instant,
    ) -> Result<Started, A2aError> {
        let m = Outgoing {
            text,
            task_id,
            context_id,
            stream: true,
            ..Outgoing::default()
        };
        self.me().send(&m, deadline).await
    }
}

impl Says for Worker {
    fn me(&self) -> &Worker {
        self
    }
}

fn v1_card(base: &str) -> Value {
    json!({
        "name": "Fake", "description": "A fake worker", "version": "1",
        "supportedInterfaces": [
            {"url": format!("{base}/a2a"), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {},
        "skills": [{"id": "s1", "name": "Echo", "description": "echoes", "tags": []}]
    })
}

fn v03_card(base: &str) -> Value {
    json!({
        "name": "Old", "description": "v0.3 worker", "version": "1",
        "protocolVersion": "0.3.0", "url": format!("{base}/rpc"), "preferredTransport": "JSONRPC",
        "capabilities": {}, "skills": []
    })
}

fn rpc_ok(req: &Req, result: Value) -> Reply {
    Reply::Json(
        200,
        json!({"jsonrpc": "2.0", "id": req.body["id"], "result": result}),
    )
}

fn rpc_err(req: &Req, code: i64, msg: &str) -> Reply {
    Reply::Json(
        200,
        json!({"jsonrpc": "2.0", "id": req.body["id"], "error": {"code": code, "message": msg}}),
    )
}

fn v1_task(id: &str, state: &str) -> Value {
    json!({"id": id, "contextId": "c1", "status": {"state": state}})
}

fn not_found() -> Reply {
    Reply::Raw(404, "text/plain", b"not found".to_vec())
}

/// A v1 worker: the card at the standard place, everything else to `rpc`.
async fn v1_server(rpc: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Fake {
    serve(move |r| {
        if r.path == "/.well-known/agent-card.json" {
            Reply::Json(200, v1_card(&r.base))
        } else {
            rpc(r)
        }
    })
    .await
}

/// The `a2a-lf` wire types are the oracle: what we send must parse as the official request, and
/// what an official server sends must parse in our client.
#[tokio::test]
async fn v1_card_and_jsonrpc_match_the_official_types() {
    let fake = v1_server(|r| {
        assert_eq!(r.path, "/a2a");
        match r.rpc_method() {
            "SendMessage" => {
                let resp = ::a2a::SendMessageResponse::Task(::a2a::Task {
                    id: "t1".into(),
                    context_id: "c1".into(),
                    status: ::a2a::TaskStatus {
                        state: ::a2a::TaskState::Submitted,
                        message: None,
                        timestamp: None,
                    },
                    artifacts: None,
                    history: None,
                    metadata: None,
                });
                rpc_ok(r, serde_json::to_value(resp).unwrap())
            }
            "GetTask" | "CancelTask" => {
                let state = if r.rpc_method() == "GetTask" {
                    ::a2a::TaskState::Completed
                } else {
                    ::a2a::TaskState::Canceled
                };
                let task = ::a2a::Task {
                    id: "t1".into(),
                    context_id: "c1".into(),
                    status: ::a2a::TaskStatus {
                        state,
                        message: None,
                        timestamp: None,
                    },
                    artifacts: Some(vec![::a2a::Artifact {
                        artifact_id: "a1".into(),
                        name: None,
                        description: None,
                        parts: vec![
                            ::a2a::Part::text("hello"),
                            ::a2a::Part::raw(vec![1, 2, 3])
                                .with_filename("x.bin")
                                .with_media_type("application/octet-stream"),
                        ],
                        metadata: None,
                        extensions: None,
                    }]),
                    history: None,
                    metadata: None,
                };
                rpc_ok(r, serde_json::to_value(task).unwrap())
            }
            _ => rpc_err(r, -32601, "nope"),
        }
    })
    .await;
    let w = fake.worker();
    let card = w.card(soon()).await.unwrap();
    assert_eq!(card.name, "Fake");
    assert_eq!(card.protocol, format!("1.0 JSONRPC {}/a2a", fake.base));
    assert_eq!(card.skills[0].name, "Echo");

    let v = w.plain("do it", None, Some("c0"), soon()).await.unwrap();
    assert_eq!((v.task_id.as_str(), v.state), ("t1", TaskState::Submitted));
    assert_eq!(v.wire_state, "TASK_STATE_SUBMITTED");
    let v = w.get_task("t1", soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Completed);
    assert_eq!(
        v.text.as_deref(),
        Some("hello\n[file: x.bin (application/octet-stream, 3 bytes)]")
    );
    let v = w.cancel("t1", soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Canceled);

    let reqs = fake.requests();
    assert_eq!(fake.count(|r| r.path.starts_with("/.well-known")), 1);
    let rpcs: Vec<&Req> = reqs.iter().filter(|r| r.path == "/a2a").collect();
    assert_eq!(rpcs.len(), 3);
    for r in &rpcs {
        assert_eq!(r.header("a2a-version").as_deref(), Some("1.0"));
        assert_eq!(r.body["jsonrpc"], "2.0");
    }
    let send: ::a2a::SendMessageRequest =
        serde_json::from_value(rpcs[0].body["params"].clone()).unwrap();
    assert_eq!(send.message.role, ::a2a::Role::User);
    assert_eq!(send.message.text(), Some("do it"));
    assert_eq!(send.message.context_id.as_deref(), Some("c0"));
    assert_eq!(send.message.task_id, None);
    let conf = send.configuration.unwrap();
    assert_eq!(conf.return_immediately, Some(true));
    assert_eq!(conf.history_length, Some(0));
    let get: ::a2a::GetTaskRequest =
        serde_json::from_value(rpcs[1].body["params"].clone()).unwrap();
    assert_eq!((get.id.as_str(), get.history_length), ("t1", Some(0)));
    let cancel: ::a2a::CancelTaskRequest =
        serde_json::from_value(rpcs[2].body["params"].clone()).unwrap();
    assert_eq!(cancel.id, "t1");
}

/// A card serialized from `::a2a::AgentCard` is read by our discovery.
#[test]
fn official_card_parses() {
    let mut iface = ::a2a::AgentInterface::new("http://h:1/a2a", "JSONRPC");
    iface.tenant = Some("ten".into());
    let card = ::a2a::AgentCard {
        name: "n".into(),
        description: "d".into(),
        version: "1".into(),
        supported_interfaces: vec![iface],
        capabilities: Default::default(),
        default_input_modes: vec![],
        default_output_modes: vec![],
        skills: vec![],
        provider: None,
        documentation_url: None,
        icon_url: None,
        security_schemes: None,
        security_requirements: None,
        signatures: None,
    };
    let v = serde_json::to_value(card).unwrap();
    let c = Card::parse(v, "http://h:1/.well-known/agent-card.json", None).unwrap();
    assert_eq!(c.primary.describe(), "1.0 JSONRPC http://h:1/a2a");
    assert_eq!(c.primary.tenant.as_deref(), Some("ten"));
    assert!(c.fallback.is_some());
}

#[tokio::test]
async fn v03_only_card_at_the_old_path() {
    let fake = serve(|r| match r.path.as_str() {
        "/.well-known/agent.json" => Reply::Json(200, v03_card(&r.base)),
        "/rpc" => match r.rpc_method() {
            "message/send" => rpc_ok(
                r,
                json!({"kind": "task", "id": "t9", "contextId": "c9",
                       "status": {"state": "submitted"}}),
            ),
            "tasks/get" => rpc_ok(
                r,
                json!({"kind": "task", "id": "t9", "contextId": "c9",
                       "status": {"state": "input-required", "message": {"kind": "message",
                        "messageId": "m", "role": "agent",
                        "parts": [{"kind": "text", "text": "which one?"}]}}}),
            ),
            "tasks/cancel" => rpc_err(r, -32002, "terminal"),
            _ => rpc_err(r, -32601, "Method not found"),
        },
        _ => not_found(),
    })
    .await;
    let w = fake.worker();
    assert_eq!(
        w.card(soon()).await.unwrap().protocol,
        format!("0.3 JSONRPC {}/rpc", fake.base)
    );
    let v = w.plain("hi", Some("t9"), None, soon()).await.unwrap();
    assert_eq!((v.task_id.as_str(), v.state), ("t9", TaskState::Submitted));
    let v = w.get_task("t9", soon()).await.unwrap();
    assert_eq!(v.state, TaskState::InputRequired);
    assert_eq!(v.question.as_deref(), Some("which one?"));
    assert_eq!(v.text.as_deref(), Some("which one?"));
    assert_eq!(w.cancel("t9", soon()).await, Err(A2aError::NotCancelable));

    let rpcs: Vec<Req> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/rpc")
        .collect();
    assert_eq!(rpcs.len(), 3);
    assert!(rpcs.iter().all(|r| r.header("a2a-version").is_none()));
    let p = &rpcs[0].body["params"];
    assert_eq!(p["message"]["kind"], "message");
    assert_eq!(p["message"]["role"], "user");
    assert_eq!(p["message"]["taskId"], "t9");
    assert_eq!(
        p["message"]["parts"],
        json!([{"kind": "text", "text": "hi"}])
    );
    assert_eq!(
        p["configuration"],
        json!({"blocking": false, "historyLength": 0})
    );
    assert_eq!(
        rpcs[1].body["params"],
        json!({"id": "t9", "historyLength": 0})
    );
    assert_eq!(rpcs[2].body["params"], json!({"id": "t9"}));
}

#[tokio::test]
async fn hybrid_card_picks_v1() {
    let fake = serve(|r| match r.path.as_str() {
        "/.well-known/agent-card.json" => {
            let mut c = v03_card(&r.base);
            c["supportedInterfaces"] = json!([
                {"url": format!("{}/rpc", r.base), "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": format!("{}/v1rpc", r.base), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            ]);
            Reply::Json(200, c)
        }
        "/v1rpc" => rpc_ok(r, json!({"task": v1_task("t1", "TASK_STATE_WORKING")})),
        _ => not_found(),
    })
    .await;
    let v = fake.worker().plain("x", None, None, soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Working);
    assert_eq!(fake.count(|r| r.rpc_method() == "SendMessage"), 1);

    // Forcing 0.3 picks the 0.3 interface instead.
    let w = fake.worker_with(|c| c.protocol = Some("0.3".into()));
    assert_eq!(
        w.card(soon()).await.unwrap().protocol,
        format!("0.3 JSONRPC {}/rpc", fake.base)
    );
}

/// Every attempt of one send carries its one messageId, so a worker that keys messages by it sees
/// one message: the plain send after a refused stream call, the v0.3 send after a v1 method the
/// worker does not know. Another send is another message.
#[tokio::test]
async fn one_send_keeps_its_message_id_through_every_attempt() {
    let ids = |fake: &Fake, methods: &[&str]| -> Vec<String> {
        fake.requests()
            .iter()
            .filter(|r| methods.contains(&r.rpc_method()))
            .map(|r| {
                r.body["params"]["message"]["messageId"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let refusing = serve(|r| match (r.path.as_str(), r.rpc_method()) {
        ("/.well-known/agent-card.json", _) => {
            let mut c = v1_card(&r.base);
            c["capabilities"] = json!({"streaming": true});
            Reply::Json(200, c)
        }
        (_, "SendStreamingMessage") => rpc_err(r, -32004, "streaming is not served"),
        _ => rpc_ok(r, json!({"task": v1_task("t1", "TASK_STATE_WORKING")})),
    })
    .await;
    let w = refusing.worker();
    match w.streamed("x", None, None, soon()).await.unwrap() {
        Started::Plain(v) => assert_eq!(v.task_id, "t1"),
        Started::Stream(_) => panic!("a refused stream call streamed"),
    }
    let sent = ids(&refusing, &["SendStreamingMessage", "SendMessage"]);
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[0], sent[1]);

    let old = v1_server(|r| match r.rpc_method() {
        "message/send" => rpc_ok(
            r,
            json!({"kind": "task", "id": "t1", "status": {"state": "submitted"}}),
        ),
        _ => rpc_err(r, -32601, "Method not found"),
    })
    .await;
    let w = old.worker();
    w.plain("x", None, None, soon()).await.unwrap();
    w.plain("x", None, None, soon()).await.unwrap();
    let sent = ids(&old, &["SendMessage", "message/send"]);
    assert_eq!(
        sent.len(),
        3,
        "v1, its v0.3 fallback, then v0.3 alone: {sent:?}"
    );
    assert_eq!(sent[0], sent[1]);
    assert_ne!(sent[1], sent[2]);
}

#[tokio::test]
async fn method_not_found_falls_back_to_v03_once() {
    let fake = v1_server(|r| match r.rpc_method() {
        "message/send" => rpc_ok(
            r,
            json!({"kind": "task", "id": "t1", "status": {"state": "submitted"}}),
        ),
        // With an answer: an ended task without one is asked again for its history.
        "tasks/get" => rpc_ok(
            r,
            json!({"kind": "task", "id": "t1", "status": {"state": "completed"},
                "artifacts": [{"artifactId": "a", "parts": [{"kind": "text", "text": "ok"}]}]}),
        ),
        _ => rpc_err(r, -32601, "Method not found"),
    })
    .await;
    let w = fake.worker();
    let v = w.plain("x", None, None, soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Submitted);
    let v = w.get_task("t1", soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Completed);
    assert_eq!(fake.count(|r| r.rpc_method() == "SendMessage"), 1);
    assert_eq!(fake.count(|r| r.rpc_method() == "GetTask"), 0);
    assert_eq!(
        fake.count(|r| r.rpc_method().contains('/') && r.header("a2a-version").is_none()),
        2
    );
    assert!(w.card(soon()).await.unwrap().protocol.starts_with("0.3 "));

    // Forced 1.0: no fallback, the -32601 is reported.
    let w = fake.worker_with(|c| c.protocol = Some("1.0".into()));
    assert!(matches!(
        w.get_task("t1", soon()).await,
        Err(A2aError::Rpc { code: -32601, .. })
    ));
}

#[tokio::test]
async fn rest_only_card() {
    let fake = serve(|r| {
        let a2a_json = |s: u16, v: Value| Reply::Raw(s, "application/a2a+json", v.to_string().into_bytes());
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/.well-known/agent-card.json") => Reply::Json(200, json!({
                "name": "Rest", "supportedInterfaces": [
                    {"url": format!("{}/api", r.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]
            })),
            ("POST", "/api/message:send") => a2a_json(200, json!({"task": v1_task("t1", "TASK_STATE_SUBMITTED")})),
            ("GET", "/api/tasks/t1") => a2a_json(200, v1_task("t1", "TASK_STATE_COMPLETED")),
            ("POST", "/api/tasks/t1:cancel") => a2a_json(400, json!({"error": {"code": 400,
                "status": "FAILED_PRECONDITION", "message": "terminal",
                "details": [{"reason": "TASK_NOT_CANCELABLE"}]}})),
            ("GET", "/api/tasks/nope") => a2a_json(404, json!({"error": {"code": 404,
                "status": "NOT_FOUND", "message": "no such task",
                "details": [{"reason": "TASK_NOT_FOUND"}]}})),
            _ => not_found(),
        }
    })
    .await;
    let w = fake.worker();
    assert_eq!(
        w.card(soon()).await.unwrap().protocol,
        format!("1.0 HTTP+JSON {}/api", fake.base)
    );
    let v = w.plain("x", None, None, soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Submitted);
    assert_eq!(
        w.get_task("t1", soon()).await.unwrap().state,
        TaskState::Completed
    );
    assert_eq!(w.cancel("t1", soon()).await, Err(A2aError::NotCancelable));
    assert_eq!(
        w.get_task("nope", soon()).await,
        Err(A2aError::TaskNotFound)
    );

    let reqs = fake.requests();
    let send = reqs.iter().find(|r| r.path == "/api/message:send").unwrap();
    assert_eq!(
        send.header("content-type").as_deref(),
        Some("application/a2a+json")
    );
    assert_eq!(send.header("a2a-version").as_deref(), Some("1.0"));
    let body: ::a2a::SendMessageRequest = serde_json::from_value(send.body.clone()).unwrap();
    assert_eq!(body.message.text(), Some("x"));
    let get = reqs.iter().find(|r| r.path == "/api/tasks/t1").unwrap();
    assert_eq!(get.query, "historyLength=0");
}

#[tokio::test]
async fn direct_message_reply_is_completed() {
    let fake = v1_server(|r| {
        rpc_ok(
            r,
            json!({"message": {"messageId": "m1", "contextId": "c", "role": "ROLE_AGENT",
                               "parts": [{"text": "hi there"}]}}),
        )
    })
    .await;
    let v = fake.worker().plain("x", None, None, soon()).await.unwrap();
    assert_eq!(v.state, TaskState::Completed);
    assert_eq!(v.task_id, "m1");
    assert_eq!(v.text.as_deref(), Some("hi there"));

    let v = parse_send_result(
        &json!({"kind": "message", "messageId": "m2", "taskId": "t2",
        "role": "agent", "parts": [{"kind": "text", "text": "ok"}]}),
    )
    .unwrap();
    assert_eq!((v.task_id.as_str(), v.state), ("t2", TaskState::Completed));
}

#[test]
fn state_spellings() {
    for (wire, want) in [
        ("TASK_STATE_WORKING", TaskState::Working),
        ("working", TaskState::Working),
        ("TASK_STATE_INPUT_REQUIRED", TaskState::InputRequired),
        ("input-required", TaskState::InputRequired),
        ("auth-required", TaskState::AuthRequired),
        ("TASK_STATE_CANCELLED", TaskState::Canceled),
        ("TASK_STATE_CANCELED", TaskState::Canceled),
        ("canceled", TaskState::Canceled),
        ("TASK_STATE_REJECTED", TaskState::Rejected),
        ("TASK_STATE_UNSPECIFIED", TaskState::Unknown),
        ("paused", TaskState::Unknown),
    ] {
        let v = parse_task_result(&json!({"id": "t", "status": {"state": wire}})).unwrap();
        assert_eq!((v.state, v.wire_state.as_str()), (want, wire));
    }
    let v = parse_task_result(&json!({"id": "t", "status": {}})).unwrap();
    assert_eq!((v.state, v.wire_state.as_str()), (TaskState::Unknown, ""));
}

#[test]
fn text_from_artifacts_files_and_data() {
    let v = parse_task_result(&json!({
        "id": "t", "status": {"state": "TASK_STATE_COMPLETED",
            "message": {"parts": [{"text": "done"}]}},
        "artifacts": [
            {"artifactId": "a", "parts": [
                {"text": "line 1"},
                {"raw": "aGVsbG8=", "filename": "h.txt", "mediaType": "text/plain"},
                {"url": "https://x/y.pdf", "filename": "y.pdf", "mediaType": "application/pdf"},
            ]},
            {"artifactId": "b", "parts": [
                {"kind": "file", "file": {"name": "z.png", "mimeType": "image/png", "bytes": "AAAA"}},
                {"kind": "file", "file": {"uri": "https://x/u"}},
                {"kind": "data", "data": {"k": [1, 2]}},
                {"data": {"big": "x".repeat(500)}},
            ]},
        ]
    }))
    .unwrap();
    let text = v.text.unwrap();
    let want_head = "line 1\n[file: h.txt (text/plain, 5 bytes)]\n\
        [file: y.pdf (application/pdf, https://x/y.pdf)]\n\n\
        [file: z.png (image/png, 3 bytes)]\n[file: unnamed (https://x/u)]\n\
        [data: {\"k\":[1,2]}]\n[data: {\"big\":\"xxx";
    assert!(text.starts_with(want_head), "{text}");
    let last = text.lines().last().unwrap();
    assert!(last.ends_with("…]") && last.chars().count() < 220, "{last}");
    assert_eq!(v.question, None);

    // No artifacts: the status message; input-required also asks it as the question.
    let v = parse_task_result(
        &json!({"id": "t", "status": {"state": "TASK_STATE_AUTH_REQUIRED",
        "message": {"role": "ROLE_AGENT", "parts": [{"text": "log in"}, {"data": {"a": 1}}]}}}),
    )
    .unwrap();
    assert_eq!(v.text.as_deref(), Some("log in\n[data: {\"a\":1}]"));
    assert_eq!(v.question, v.text);

    // a2a-mod serve's question: its line, the structured part left to readers that know it.
    let v = parse_task_result(&json!({"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
        "message": {"role": "ROLE_AGENT", "extensions": [a2a_mod_core::task::TOOL_CONFIRMATION_EXTENSION],
            "parts": [{"text": "Claude wants to run Bash: ls. Reply allow"}, {"data": {"toolCall": {}}}]}}}))
    .unwrap();
    assert_eq!(
        v.question.as_deref(),
        Some("Claude wants to run Bash: ls. Reply allow")
    );

    // Its structured part is what says a permission is asked, whatever the line's words; the
    // command comes cleaned of control sequences.
    let call = json!({"toolCall": {"toolName": "Bash", "confirmationRequest": {
        "executeDetails": {"command": "rm -rf build\u{1b}[2J"}}}});
    let v = parse_task_result(&json!({"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED",
        "message": {"role": "ROLE_AGENT", "extensions": [a2a_mod_core::task::TOOL_CONFIRMATION_EXTENSION],
            "parts": [{"text": "May I clean the build?"}, {"data": call}]}}}))
    .unwrap();
    let q = v.question.unwrap_or_default();
    assert_eq!(
        a2a_mod_core::status::approval_of(&q).as_deref(),
        Some("Bash rm -rf build"),
        "{q}"
    );
}

async fn err_of(reply: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> A2aError {
    let fake = v1_server(reply).await;
    fake.worker().get_task("t1", soon()).await.unwrap_err()
}

#[tokio::test]
async fn errors_are_classified() {
    assert_eq!(
        err_of(|_| Reply::Json(401, json!({}))).await,
        A2aError::Auth {
            status: 401,
            by: None
        }
    );
    assert_eq!(
        err_of(|_| Reply::Json(403, json!({}))).await,
        A2aError::Auth {
            status: 403,
            by: None
        }
    );
    let e = err_of(|_| Reply::Raw(500, "text/plain", b"boom\nstack".to_vec())).await;
    assert!(
        matches!(&e, A2aError::Protocol(m) if m.ends_with("/a2a answered HTTP 500")),
        "{e}"
    );
    let e = err_of(|_| {
        Reply::Raw(
            200,
            "text/html",
            b"<html><body>login</body></html>".to_vec(),
        )
    })
    .await;
    assert!(
        matches!(&e, A2aError::Protocol(m) if m.contains("HTML")),
        "{e}"
    );
    let e = err_of(|_| Reply::Raw(200, "application/json", b"\x00garbage{".to_vec())).await;
    assert!(
        matches!(&e, A2aError::Protocol(m) if m.contains("not JSON")),
        "{e}"
    );
    let e = err_of(|_| Reply::Json(200, json!({"hello": 1}))).await;
    assert!(
        matches!(&e, A2aError::Protocol(m) if m.contains("not JSON-RPC")),
        "{e}"
    );
    let e = err_of(|_| Reply::Json(200, json!({"jsonrpc": "2.0", "id": 999, "result": {}}))).await;
    assert!(
        matches!(&e, A2aError::Protocol(m) if m.contains("another")),
        "{e}"
    );
    assert_eq!(
        err_of(|r| rpc_err(r, -32001, "Task not found")).await,
        A2aError::TaskNotFound
    );
    assert_eq!(
        err_of(|r| rpc_err(r, -32002, "no")).await,
        A2aError::NotCancelable
    );
    assert_eq!(
        err_of(|r| rpc_err(r, -32603, "inner\nboom")).await,
        A2aError::Rpc {
            code: -32603,
            message: "inner boom".into()
        }
    );
    let big = vec![b' '; 5 * 1024 * 1024];
    let b2 = big.clone();
    let e = err_of(move |_| Reply::Raw(200, "application/json", big.clone())).await;
    assert_eq!(e, A2aError::Protocol("answer larger than 4 MiB".into()));
    let e = err_of(move |_| Reply::Stream(b2.clone())).await;
    assert_eq!(e, A2aError::Protocol("answer larger than 4 MiB".into()));
}

#[tokio::test]
async fn missing_card_is_named() {
    let fake = serve(|_| not_found()).await;
    let e = fake.worker().card(soon()).await.unwrap_err();
    assert_eq!(
        e,
        A2aError::Protocol(format!(
            "no agent card at {}/.well-known/agent-card.json (HTTP 404)",
            fake.base
        ))
    );
    // A URL with a path also tries the origin; a .json URL is fetched as is.
    assert_eq!(
        candidates("http://h:1/agents/x/").unwrap(),
        [
            "http://h:1/agents/x/.well-known/agent-card.json",
            "http://h:1/agents/x/.well-known/agent.json",
            "http://h:1/.well-known/agent-card.json",
            "http://h:1/.well-known/agent.json",
        ]
    );
    assert_eq!(
        candidates("http://h:1/card.json").unwrap(),
        ["http://h:1/card.json"]
    );
}

#[tokio::test]
async fn card_found_at_the_origin_and_at_a_json_url() {
    let fake = serve(|r| match r.path.as_str() {
        "/.well-known/agent-card.json" | "/cards/x.json" => Reply::Json(200, v1_card(&r.base)),
        _ => not_found(),
    })
    .await;
    let w = fake.worker_with(|c| c.url = format!("{}/agents/x", fake.base));
    assert_eq!(w.card(soon()).await.unwrap().name, "Fake");
    let w = fake.worker_with(|c| c.url = format!("{}/cards/x.json", fake.base));
    assert_eq!(w.card(soon()).await.unwrap().name, "Fake");
}

#[tokio::test]
async fn unreachable_and_deadlines() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let cfg = WorkerConfig {
        url: format!("http://127.0.0.1:{port}"),
        ..Default::default()
    };
    let e = Worker::new("gone", cfg, http_client())
        .card(soon())
        .await
        .unwrap_err();
    assert!(
        matches!(&e, A2aError::Unreachable(m) if m.contains("cannot connect")),
        "{e}"
    );

    let fake = v1_server(|_| Reply::Hang).await;
    let w = fake.worker();
    let e = w
        .get_task("t1", Instant::now() - Duration::from_millis(1))
        .await
        .unwrap_err();
    assert_eq!(e, A2aError::Timeout(0.0));
    assert!(
        fake.requests().is_empty(),
        "nothing is sent after the deadline"
    );
    let e = w
        .get_task("t1", Instant::now() + Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(
        matches!(e, A2aError::Timeout(s) if s > 0.0 && s <= 0.3),
        "{e}"
    );
}

/// An env var every test environment has, so no test needs the racy `set_var`.
fn present_env() -> (&'static str, String) {
    for k in ["PATH", "HOME"] {
        if let Ok(v) = std::env::var(k)
            && !v.trim().is_empty()
        {
            return (k, v.trim().to_string());
        }
    }
    panic!("neither PATH nor HOME is set");
}

#[tokio::test]
async fn bearer_and_api_key_headers() {
    let (var, val) = present_env();
    let fake = v1_server(|r| rpc_ok(r, v1_task("t1", "TASK_STATE_WORKING"))).await;
    let w = fake.worker_with(|c| c.bearer_env = Some(var.into()));
    w.get_task("t1", soon()).await.unwrap();
    let w = fake.worker_with(|c| c.api_key_env = Some(var.into()));
    w.get_task("t1", soon()).await.unwrap();
    let w = fake.worker_with(|c| {
        c.api_key_env = Some(var.into());
        c.api_key_header = Some("X-Custom".into());
    });
    w.get_task("t1", soon()).await.unwrap();
    let rpcs: Vec<Req> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/a2a")
        .collect();
    assert_eq!(
        rpcs[0].header("authorization"),
        Some(format!("Bearer {val}"))
    );
    assert_eq!(rpcs[1].header("x-api-key"), Some(val.clone()));
    assert_eq!(rpcs[2].header("x-custom"), Some(val));

    let w = fake.worker_with(|c| c.bearer_env = Some("A2A_MOD_TEST_SURELY_UNSET".into()));
    let e = w.get_task("t1", soon()).await.unwrap_err();
    assert!(
        matches!(&e, A2aError::Credentials(m) if m.contains("A2A_MOD_TEST_SURELY_UNSET")),
        "{e}"
    );
}

#[tokio::test]
async fn api_key_header_from_the_card() {
    let (var, val) = present_env();
    let fake = serve(|r| match r.path.as_str() {
        "/.well-known/agent-card.json" => {
            let mut c = v1_card(&r.base);
            c["securitySchemes"] = json!({"k": {"apiKeySecurityScheme": {"location": "header", "name": "X-Card-Key"}}});
            Reply::Json(200, c)
        }
        _ => rpc_ok(r, v1_task("t1", "TASK_STATE_WORKING")),
    })
    .await;
    let w = fake.worker_with(|c| c.api_key_env = Some(var.into()));
    w.get_task("t1", soon()).await.unwrap();
    assert_eq!(
        fake.count(|r| r.header("x-card-key") == Some(val.clone())),
        1
    );
}

/// The server accepts only `valid` as bearer token; tests rotate it to simulate expiry.
fn guarded(valid: Arc<Mutex<String>>) -> impl Fn(&Req) -> Reply + Send + Sync + 'static {
    move |r| {
        let want = format!("Bearer {}", valid.lock().unwrap());
        if r.header("authorization") == Some(want) {
            rpc_ok(r, v1_task("t1", "TASK_STATE_WORKING"))
        } else {
            Reply::Json(401, json!({"error": "unauthorized"}))
        }
    }
}

#[tokio::test]
async fn token_cmd_cached_until_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let valid = Arc::new(Mutex::new("tok-1".to_string()));
    let fake = v1_server(guarded(valid.clone())).await;
    let cmd = format!(
        "echo x >> '{0}'; printf 'tok-%s\\n' $(wc -l < '{0}' | tr -d ' ')",
        runs.display()
    );
    let w = fake.worker_with(|c| c.token_cmd = Some(cmd));
    let n_runs = || std::fs::read_to_string(&runs).unwrap().lines().count();
    w.get_task("t1", soon()).await.unwrap();
    w.get_task("t1", soon()).await.unwrap();
    assert_eq!(n_runs(), 1);
    *valid.lock().unwrap() = "tok-2".into();
    w.get_task("t1", soon()).await.unwrap();
    assert_eq!(n_runs(), 2);

    let w = fake.worker_with(|c| c.token_cmd = Some("echo nope >&2; exit 3".into()));
    let e = w.get_task("t1", soon()).await.unwrap_err();
    assert!(
        matches!(&e, A2aError::Credentials(m) if m.contains("failed (exit 3): nope")),
        "{e}"
    );
}

fn b64(s: &str) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in s.as_bytes().chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(T[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The poller's token story: one token serves many polls; when the worker starts refusing it
/// (expiry), the cached token is cleared and exactly one new one is fetched, and the poll succeeds.
#[tokio::test]
async fn oauth_token_from_the_card_cached_and_refreshed_once() {
    let (var, secret) = present_env();
    let valid = Arc::new(Mutex::new("o-1".to_string()));
    let issued = Arc::new(Mutex::new(0u32));
    let rpc = guarded(valid.clone());
    let basic = format!("Basic {}", b64(&format!("cid:{secret}")));
    let iss = issued.clone();
    let fake = serve(move |r| match r.path.as_str() {
        "/.well-known/agent-card.json" => {
            let mut c = v1_card(&r.base);
            c["securitySchemes"] = json!({"o": {"oauth2SecurityScheme": {"flows": {
                "clientCredentials": {"tokenUrl": format!("{}/token", r.base), "scopes": {}}}}}});
            Reply::Json(200, c)
        }
        "/token" => {
            assert_eq!(r.header("authorization"), Some(basic.clone()));
            let mut n = iss.lock().unwrap();
            *n += 1;
            Reply::Json(
                200,
                json!({"access_token": format!("o-{n}"), "token_type": "Bearer", "expires_in": 3600}),
            )
        }
        _ => rpc(r),
    })
    .await;
    let w = fake.worker_with(|c| {
        c.oauth = Some(OAuthConfig {
            client_id: "cid".into(),
            client_secret_env: var.into(),
            token_url: None,
            scope: Some("a2a".into()),
        })
    });
    assert_eq!(
        w.card(soon()).await.unwrap().auth,
        [format!("oauth2 client credentials {}/token", fake.base)]
    );
    for _ in 0..3 {
        w.get_task("t1", soon()).await.unwrap();
    }
    assert_eq!(*issued.lock().unwrap(), 1);
    let tok_req = fake
        .requests()
        .into_iter()
        .find(|r| r.path == "/token")
        .unwrap();
    assert_eq!(
        tok_req.header("content-type").as_deref(),
        Some("application/x-www-form-urlencoded")
    );

    *valid.lock().unwrap() = "o-2".into();
    w.get_task("t1", soon()).await.unwrap();
    w.get_task("t1", soon()).await.unwrap();
    assert_eq!(*issued.lock().unwrap(), 2);
    assert_eq!(w.tokens.fetches().await, 2);

    // Two polls meeting the expiry at once still fetch one token between them.
    *valid.lock().unwrap() = "o-3".into();
    let (a, b) = tokio::join!(w.get_task("t1", soon()), w.get_task("t1", soon()));
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    assert_eq!(*issued.lock().unwrap(), 3);

    // A freshly fetched token that is refused is not retried: one fetch, then Auth.
    *valid.lock().unwrap() = "never".into();
    assert_eq!(
        w.get_task("t1", soon()).await,
        Err(A2aError::Auth {
            status: 401,
            by: Some("the oauth token of client \"cid\"".into())
        })
    );
    assert_eq!(*issued.lock().unwrap(), 4);
    assert_eq!(
        w.get_task("t1", soon()).await,
        Err(A2aError::Auth {
            status: 401,
            by: Some("the oauth token of client \"cid\"".into())
        })
    );
    assert_eq!(*issued.lock().unwrap(), 5, "the refused token was cleared");
}

#[test]
fn card_auth_summary_and_v03_token_url() {
    let card = json!({
        "name": "x", "url": "http://h:1/rpc",
        "securitySchemes": {
            "b": {"type": "http", "scheme": "bearer"},
            "k": {"type": "apiKey", "in": "header", "name": "X-Key"},
            "o": {"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "/oauth/token", "scopes": {}}}},
            "m": {"type": "mutualTLS"},
        }
    });
    let c = Card::parse(card, "http://h:1/.well-known/agent-card.json", None).unwrap();
    assert_eq!(c.token_url().as_deref(), Some("http://h:1/oauth/token"));
    assert_eq!(c.api_key_header().as_deref(), Some("X-Key"));
    let s = c.summary(&c.primary);
    assert_eq!(
        s.auth,
        [
            "bearer",
            "apiKey header X-Key",
            "oauth2 client credentials http://h:1/oauth/token",
            "mutualTLS"
        ]
    );
    assert_eq!(s.protocol, "0.3 JSONRPC http://h:1/rpc");
    assert!(c.fallback.is_none());

    let e = Card::parse(json!({"name": "x"}), "http://h:1/c.json", None)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "agent card at http://h:1/c.json names no JSON-RPC or HTTP+JSON endpoint"
    );
}

#[test]
fn token_lifetime_keeps_a_margin() {
    use super::auth::usable_for;
    assert_eq!(usable_for(3600.0), Some(Duration::from_secs(3570)));
    assert_eq!(usable_for(10.0), Some(Duration::from_secs(5)));
    assert_eq!(usable_for(0.0), None);
    assert_eq!(usable_for(f64::NAN), None);
    assert_eq!(usable_for(-5.0), None);
}

/// A v1 REST card in front of a v0.3 REST server: the v1 route 404s without an A2A error body,
/// so the client retries under `/v1` with the proto-JSON body and stays there.
#[tokio::test]
async fn rest_route_missing_falls_back_to_v03_rest() {
    let fake = serve(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => Reply::Json(
            200,
            json!({"name": "R", "supportedInterfaces": [
                {"url": format!("{}/api", r.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]}),
        ),
        ("POST", "/api/v1/message:send") => {
            Reply::Json(200, json!({"task": v1_task("t1", "TASK_STATE_SUBMITTED")}))
        }
        ("GET", "/api/v1/tasks/t1") => Reply::Json(200, v1_task("t1", "TASK_STATE_CANCELLED")),
        _ => Reply::Json(404, json!({"detail": "Not Found"})),
    })
    .await;
    let w = fake.worker();
    assert_eq!(
        w.plain("x", None, None, soon()).await.unwrap().state,
        TaskState::Submitted
    );
    assert_eq!(
        w.get_task("t1", soon()).await.unwrap().state,
        TaskState::Canceled
    );
    assert_eq!(w.get_task("t2", soon()).await, Err(A2aError::TaskNotFound));
    assert_eq!(fake.count(|r| r.path == "/api/message:send"), 1);
    assert_eq!(fake.count(|r| r.path.starts_with("/api/tasks")), 0);
    let send = fake
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/v1/message:send")
        .unwrap();
    assert!(send.header("a2a-version").is_none());
    assert_eq!(send.body["request"]["content"], json!([{"text": "x"}]));
    assert_eq!(send.body["request"]["role"], "ROLE_USER");
    assert_eq!(
        send.body["configuration"],
        json!({"blocking": false, "historyLength": 0})
    );
}

/// The extensions the user named go with every request to the worker's endpoint, under the
/// dialect's header (`A2A-Extensions`, v0.3 `X-A2A-Extensions`), and the chosen interface's tenant
/// in every v1 request, streamed or not; a worker that requires an extension it was not offered
/// (JSON-RPC -32008, REST `EXTENSION_SUPPORT_REQUIRED`) is told apart from any other error.
#[tokio::test]
async fn extensions_and_tenant_go_with_every_request() {
    let tenanted = |base: &str| {
        let mut c = v1_card(base);
        c["supportedInterfaces"][0]["tenant"] = json!("ten");
        c["capabilities"] = json!({"streaming": true, "extensions": [
            {"uri": "https://ext.example/trace/v1", "required": true},
            {"uri": "urn:ext:b"},
            {"uri": "urn:\u{1b}[2Jx"},
            {"description": "no uri"},
        ]});
        c
    };
    let fake = serve(move |r| match (r.path.as_str(), r.rpc_method()) {
        ("/.well-known/agent-card.json", _) => Reply::Json(200, tenanted(&r.base)),
        (_, "SendStreamingMessage") => Reply::Raw(
            200,
            "text/event-stream",
            format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "id": r.body["id"],
                       "result": {"task": v1_task("t1", "TASK_STATE_COMPLETED")}})
            )
            .into_bytes(),
        ),
        (_, "CancelTask") => rpc_err(r, -32008, "needs https://ext.example/trace/v1"),
        _ => rpc_ok(r, json!({"task": v1_task("t1", "TASK_STATE_WORKING")})),
    })
    .await;
    let exts = vec![
        "https://ext.example/trace/v1".to_string(),
        "urn:ext:b".to_string(),
    ];
    let w = fake.worker_with(|c| c.extensions = exts.clone());
    // The card's own, as `worker show` lists them: the worker's words, cleaned.
    let offered = w.card(soon()).await.unwrap().extensions;
    assert_eq!(
        offered[..2],
        ["https://ext.example/trace/v1 (required)", "urn:ext:b"]
    );
    assert_eq!(offered.len(), 3, "{offered:?}");
    assert!(!offered[2].contains('\u{1b}'), "{offered:?}");
    w.plain("x", None, None, soon()).await.unwrap();
    w.get_task("t1", soon()).await.unwrap();
    match w.streamed("x", None, None, soon()).await.unwrap() {
        Started::Stream(_) => {}
        Started::Plain(v) => panic!("not streamed: {v:?}"),
    }
    assert_eq!(
        w.cancel("t1", soon()).await,
        Err(A2aError::ExtensionRequired {
            said: "needs https://ext.example/trace/v1".into(),
            required: Vec::new(),
        })
    );
    let rpcs: Vec<Req> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path == "/a2a")
        .collect();
    assert_eq!(rpcs.len(), 4, "{rpcs:?}");
    for r in &rpcs {
        assert_eq!(
            r.header("a2a-extensions").as_deref(),
            Some("https://ext.example/trace/v1, urn:ext:b"),
            "{}",
            r.rpc_method()
        );
        assert_eq!(r.body["params"]["tenant"], "ten", "{}", r.rpc_method());
    }
    // Without extensions named, no header; a v0.3 worker gets its own header name.
    fake.worker().get_task("t1", soon()).await.unwrap();
    let last = fake.requests().pop().unwrap();
    assert_eq!(last.header("a2a-extensions"), None);
    let old = serve(|r| match r.path.as_str() {
        "/.well-known/agent.json" => Reply::Json(200, v03_card(&r.base)),
        "/rpc" => rpc_ok(
            r,
            json!({"kind": "task", "id": "t1", "status": {"state": "working"}}),
        ),
        _ => not_found(),
    })
    .await;
    old.worker_with(|c| c.extensions = vec!["urn:ext:b".into()])
        .get_task("t1", soon())
        .await
        .unwrap();
    let last = old.requests().pop().unwrap();
    assert_eq!(
        last.header("x-a2a-extensions").as_deref(),
        Some("urn:ext:b")
    );
    assert_eq!(last.header("a2a-extensions"), None);
}

/// A card that offers an extended card (v1 `capabilities.extendedAgentCard`, v0.3
/// `supportsAuthenticatedExtendedCard`) has it read at its endpoint with the worker's
/// credentials; without them it is refused; a card that offers none is not asked.
#[tokio::test]
async fn the_extended_card_is_read_with_credentials() {
    let (var, val) = present_env();
    let want = format!("Bearer {val}");
    let fake = serve(move |r| match (r.path.as_str(), r.rpc_method()) {
        ("/.well-known/agent-card.json", _) => {
            let mut c = v1_card(&r.base);
            c["capabilities"] = json!({"extendedAgentCard": true});
            Reply::Json(200, c)
        }
        (_, "GetExtendedAgentCard") if r.header("authorization") == Some(want.clone()) => {
            let mut c = v1_card(&r.base);
            c["skills"].as_array_mut().unwrap().push(
                json!({"id": "s2", "name": "Members", "description": "for members", "tags": []}),
            );
            rpc_ok(r, c)
        }
        (_, "GetExtendedAgentCard") => Reply::Json(401, json!({})),
        _ => not_found(),
    })
    .await;
    let w = fake.worker_with(|c| c.bearer_env = Some(var.into()));
    let x = w.extended_card(soon()).await.unwrap().expect("offered");
    let names: Vec<&str> = x.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["Echo", "Members"]);
    assert_eq!(
        fake.worker().extended_card(soon()).await,
        Err(A2aError::Auth {
            status: 401,
            by: None
        })
    );

    let old = serve(|r| match r.path.as_str() {
        "/.well-known/agent.json" => {
            let mut c = v03_card(&r.base);
            c["supportsAuthenticatedExtendedCard"] = json!(true);
            Reply::Json(200, c)
        }
        "/rpc" if r.rpc_method() == "agent/getAuthenticatedExtendedCard" => {
            let mut c = v03_card(&r.base);
            c["name"] = json!("Old, extended");
            rpc_ok(r, c)
        }
        _ => not_found(),
    })
    .await;
    let x = old
        .worker()
        .extended_card(soon())
        .await
        .unwrap()
        .expect("offered");
    assert_eq!(x.name, "Old, extended");

    let plain = v1_server(|r| rpc_err(r, -32601, "nope")).await;
    assert_eq!(plain.worker().extended_card(soon()).await, Ok(None));
    assert_eq!(plain.count(|r| r.rpc_method() == "GetExtendedAgentCard"), 0);
}

/// A guarded card is fetched again with the worker's credentials.
#[tokio::test]
async fn guarded_card_gets_credentials() {
    let (var, val) = present_env();
    let want = format!("Bearer {val}");
    let fake = serve(move |r| {
        if r.header("authorization") != Some(want.clone()) {
            return Reply::Json(401, json!({}));
        }
        match r.path.as_str() {
            "/.well-known/agent-card.json" => Reply::Json(200, v1_card(&r.base)),
            _ => rpc_ok(r, v1_task("t1", "TASK_STATE_WORKING")),
        }
    })
    .await;
    let w = fake.worker_with(|c| c.bearer_env = Some(var.into()));
    assert_eq!(
        w.get_task("t1", soon()).await.unwrap().state,
        TaskState::Working
    );
    assert_eq!(
        fake.worker().card(soon()).await,
        Err(A2aError::Auth {
            status: 401,
            by: None
        })
    );
}

/// A bare HTTP/1.1 v1 worker that closes the connection under the first request of `victim`
/// (a JSON-RPC method) without answering: what a pooled connection looks like when the worker's
/// keep-alive timer closes it just as the request goes out (uvicorn's 5 s equals the poll
/// interval; CI lost a GetTask so). Returns the base URL and the JSON-RPC methods it received.
async fn dropping_server(victim: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let (card_base, log) = (base.clone(), seen.clone());
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            let (card_base, log) = (card_base.clone(), log.clone());
            tokio::spawn(async move {
                let mut conn = BufReader::new(sock);
                loop {
                    let (mut head, mut line) = (String::new(), String::new());
                    while conn.read_line(&mut line).await.unwrap_or(0) > 2 {
                        head.push_str(&line);
                        line.clear();
                    }
                    if head.is_empty() {
                        return;
                    }
                    let len = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap_or(0))
                        })
                        .unwrap_or(0usize);
                    let mut body = vec![0; len];
                    if conn.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let answer = if head.starts_with("GET ") {
                        v1_card(&card_base)
                    } else {
                        let rpc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let method = rpc["method"].as_str().unwrap_or("").to_string();
                        let first = {
                            let mut log = log.lock().unwrap();
                            log.push(method.clone());
                            log.iter().filter(|m| **m == method).count() == 1
                        };
                        if method == victim && first {
                            return; // closes the connection, nothing answered
                        }
                        let task = json!({"task": v1_task("t1", "TASK_STATE_WORKING")});
                        json!({"jsonrpc": "2.0", "id": rpc["id"], "result": task})
                    };
                    let text = answer.to_string();
                    let reply = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if conn.get_mut().write_all(reply.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (base, seen)
}

fn worker_at(base: &str) -> Worker {
    let cfg = WorkerConfig {
        url: base.to_string(),
        ..Default::default()
    };
    Worker::new("fake", cfg, http_client())
}

/// A read whose connection is closed under it goes out once more, on a new connection.
#[tokio::test]
async fn get_task_is_sent_again_when_the_connection_drops() {
    let (base, seen) = dropping_server("GetTask").await;
    let w = worker_at(&base);
    let view = w
        .get_task("t1", soon())
        .await
        .expect("answered on the second try");
    assert_eq!(view.state, TaskState::Working);
    assert_eq!(*seen.lock().unwrap(), ["GetTask", "GetTask"]);
    // A cancel is a read in this sense: a second one only meets "already ended".
    let (base, seen) = dropping_server("CancelTask").await;
    worker_at(&base)
        .cancel("t1", soon())
        .await
        .expect("answered on the second try");
    assert_eq!(*seen.lock().unwrap(), ["CancelTask", "CancelTask"]);
}

/// A SendMessage is never sent twice: the worker may have started the task already.
#[tokio::test]
async fn send_is_not_sent_again_when_the_connection_drops() {
    let (base, seen) = dropping_server("SendMessage").await;
    let e = worker_at(&base)
        .plain("hi", None, None, soon())
        .await
        .unwrap_err();
    assert!(matches!(e, A2aError::Unreachable(_)), "{e:?}");
    assert_eq!(*seen.lock().unwrap(), ["SendMessage"]);
}

/// Hostile workers: any JSON a worker answers (hostile strings in every field a task can have)
/// is read without a panic, and whatever is accepted carries only ids that are safe to show.
mod answers {
    use super::super::wire::checked;
    use super::super::wire::{Op, parse_send_result, parse_task_result};
    use a2a_mod_core::bounds::plain_id;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("t-1".to_string()),
            Just("\u{1b}]52;c;eA==\u{7}".to_string()),
            Just("\"></worker-output>".to_string()),
            Just("TASK_STATE_COMPLETED".to_string()),
            Just("input-required".to_string()),
            any::<String>(),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "id",
                            "contextId",
                            "status",
                            "state",
                            "message",
                            "parts",
                            "text",
                            "artifacts",
                            "kind",
                            "task",
                            "taskId",
                            "messageId",
                            "history",
                            "role",
                            "file",
                            "data",
                            "raw",
                            "url",
                            "name",
                        ]),
                        inner
                    ),
                    0..5
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    fn task_like() -> impl Strategy<Value = Value> {
        (text(), text(), text(), text(), json_value()).prop_map(|(id, ctx, state, t, extra)| {
            json!({
                "id": id, "contextId": ctx, "kind": "task",
                "status": {"state": state, "message": {"parts": [{"text": t}]}},
                "artifacts": [{"name": t, "parts": [{"text": t}, extra]}],
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

        #[test]
        fn any_answer_is_read_safely(v in prop_oneof![json_value(), task_like()]) {
            for parsed in [parse_task_result(&v), parse_send_result(&v)] {
                let Ok(view) = parsed else { continue };
                for op in [Op::Get { id: "t-1", history: 0 }, Op::Send { text: "x", parts: &[], task_id: None, context_id: None, message_id: "m" }] {
                    if let Ok(ok) = checked(&op, view.clone()) {
                        prop_assert!(plain_id(&ok.task_id));
                        prop_assert!(ok.context_id.as_deref().is_none_or(plain_id));
                    }
                }
            }
        }
    }
}

/// A worker that offers only HTTP+JSON streams too: `message:stream` and
/// `tasks/{id}:subscribe` (v0.3 under `/v1`), its events bare (no JSON-RPC envelope), chunks
/// appended in order; a stream route it lacks (404) makes plain calls from then on.
#[tokio::test]
async fn an_http_json_worker_streams_sends_and_subscriptions() {
    fn sse(events: &[Value]) -> Reply {
        let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        Reply::Raw(200, "text/event-stream", body.into_bytes())
    }
    let chunk = |text: &str, append: bool| {
        json!({"artifactUpdate": {"taskId": "t1", "contextId": "c1", "append": append,
            "artifact": {"artifactId": "a", "parts": [{"text": text}]}}})
    };
    let done = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED"}}});
    let (c1, c2, d1) = (chunk("Hel", false), chunk("lo", true), done.clone());
    let fake = serve(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => Reply::Json(200, json!({
            "name": "Rest", "capabilities": {"streaming": true}, "supportedInterfaces": [
                {"url": format!("{}/api", r.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]
        })),
        ("POST", "/api/message:stream") => sse(&[
            json!({"task": v1_task("t1", "TASK_STATE_SUBMITTED")}),
            c1.clone(),
            c2.clone(),
            d1.clone(),
        ]),
        ("POST", "/api/tasks/t1:subscribe") => sse(&[
            json!({"task": v1_task("t1", "TASK_STATE_WORKING")}),
            json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
                "status": {"state": "TASK_STATE_FAILED"}}}),
        ]),
        ("POST", "/api/tasks/gone:subscribe") => Reply::Raw(404, "application/a2a+json",
            json!({"error": {"code": 404, "status": "NOT_FOUND", "message": "no task gone",
                "details": [{"reason": "TASK_NOT_FOUND"}]}}).to_string().into_bytes()),
        _ => not_found(),
    })
    .await;
    let w = fake.worker();
    let Started::Stream(mut s) = w.streamed("x", None, None, soon()).await.unwrap() else {
        panic!("not streamed")
    };
    let mut last = None;
    while let Some(v) = s.next().await {
        last = Some(v.unwrap());
    }
    let last = last.unwrap();
    assert_eq!(
        (last.state, last.text.as_deref()),
        (TaskState::Completed, Some("Hello"))
    );
    let mut sub = w
        .subscribe("t1", soon())
        .await
        .unwrap()
        .expect("a subscription");
    let mut states = Vec::new();
    while let Some(v) = sub.next().await {
        states.push(v.unwrap().state);
    }
    assert_eq!(states.last(), Some(&TaskState::Failed));
    // A task the worker does not know is the plain call's to report; streaming stays on.
    assert!(matches!(
        w.follow("gone", soon()).await,
        Ok(super::Followed::Declined(_))
    ));
    assert!(w.claims_streaming());
    let reqs = fake.requests();
    let stream = reqs
        .iter()
        .find(|r| r.path == "/api/message:stream")
        .unwrap();
    assert_eq!(stream.body["message"]["parts"][0]["text"], "x");
    assert!(
        stream.body["configuration"]
            .get("returnImmediately")
            .is_none(),
        "{:?}",
        stream.body
    );
    assert_eq!(
        stream.header("content-type").as_deref(),
        Some("application/a2a+json")
    );
    assert_eq!(
        stream.header("accept").as_deref(),
        Some("text/event-stream")
    );
    assert!(
        reqs.iter().all(|r| !r.path.ends_with(":send")),
        "no plain send: {reqs:?}"
    );
}

/// A REST worker without the stream route (HTTP 404, no A2A error) gets the plain send, and plain
/// calls after.
#[tokio::test]
async fn an_http_json_worker_without_the_stream_route_is_polled() {
    let fake = serve(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => Reply::Json(200, json!({
            "name": "Rest", "capabilities": {"streaming": true}, "supportedInterfaces": [
                {"url": format!("{}/api", r.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]
        })),
        ("POST", "/api/message:send") => Reply::Raw(200, "application/json",
            json!({"task": v1_task("t1", "TASK_STATE_WORKING")}).to_string().into_bytes()),
        _ => not_found(),
    })
    .await;
    let w = fake.worker();
    assert!(matches!(
        w.streamed("x", None, None, soon()).await,
        Ok(Started::Plain(_))
    ));
    assert!(!w.streams(soon()).await);
    assert_eq!(fake.count(|r| r.path == "/api/message:stream"), 1);
}

/// A stream that ends FAILED with nothing said, then an SSE `error` event with the reason (as
/// AG2 does): the reason is the failure's words. A failure that says why keeps its own words.
#[tokio::test]
async fn a_trailing_error_event_gives_a_silent_failure_its_reason() {
    let fake = serve(|r| {
        if r.path == "/.well-known/agent-card.json" {
            let mut c = v1_card(&r.base);
            c["capabilities"] = json!({"streaming": true});
            return Reply::Json(200, c);
        }
        let id = &r.body["id"];
        let ev = |result: Value| {
            format!(
                "data: {}\n\n",
                json!({"jsonrpc": "2.0", "id": id, "result": result})
            )
        };
        let said = r.body["params"]["message"]["parts"][0]["text"] == "says why";
        let mut failed = json!({"statusUpdate": {"taskId": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_FAILED"}}});
        if said {
            failed["statusUpdate"]["status"]["message"] =
                json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "quota gone"}]});
        }
        let body = ev(json!({"task": v1_task("t1", "TASK_STATE_WORKING")}))
            + &ev(failed)
            + "event: error\ndata: {\"error\": {\"message\": \"disk full\"}}\n\n";
        Reply::Raw(200, "text/event-stream", body.into_bytes())
    })
    .await;
    let w = fake.worker();
    for (msg, words) in [("silent", "disk full"), ("says why", "quota gone")] {
        let Started::Stream(mut s) = w.streamed(msg, None, None, soon()).await.unwrap() else {
            panic!("not streamed")
        };
        let mut last = None;
        while let Some(v) = s.next().await {
            last = Some(v.unwrap());
        }
        let last = last.unwrap();
        assert_eq!(last.state, TaskState::Failed);
        assert_eq!(last.text.as_deref(), Some(words), "{last:?}");
    }
}

/// One meaning, one error: a follow-up to a task that ended is -32004 over JSON-RPC and HTTP 400
/// `UNSUPPORTED_OPERATION` over HTTP+JSON, and both read as the same `A2aError` (so the same
/// hint); refused on a streaming call, the message is not sent again as a plain one.
#[tokio::test]
async fn an_ended_tasks_follow_up_is_one_error_over_both_bindings_and_not_sent_twice() {
    let terminal = "Task t1 is in terminal state: TASK_STATE_COMPLETED";
    let rpc = serve(move |r| match (r.path.as_str(), r.rpc_method()) {
        ("/.well-known/agent-card.json", _) => {
            let mut c = v1_card(&r.base);
            c["capabilities"] = json!({"streaming": true});
            Reply::Json(200, c)
        }
        _ => rpc_err(r, -32004, terminal),
    })
    .await;
    let rest = serve(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => Reply::Json(200, json!({
            "name": "Rest", "capabilities": {"streaming": true}, "supportedInterfaces": [
                {"url": format!("{}/api", r.base), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}]
        })),
        _ => Reply::Raw(400, "application/a2a+json", json!({"error": {"code": 400,
            "status": "FAILED_PRECONDITION", "message": terminal,
            "details": [{"reason": "UNSUPPORTED_OPERATION"}]}}).to_string().into_bytes()),
    })
    .await;
    let want = A2aError::Rpc {
        code: -32004,
        message: terminal.into(),
    };
    for fake in [&rpc, &rest] {
        let w = fake.worker();
        assert_eq!(
            w.plain("more", Some("t1"), None, soon()).await,
            Err(want.clone())
        );
        match w.streamed("more", Some("t1"), None, soon()).await {
            Err(e) => assert_eq!(e, want),
            Ok(_) => panic!("a refused follow-up is an error"),
        }
    }
    // The streaming follow-up went out once, never again as a plain send.
    assert_eq!(rpc.count(|r| r.rpc_method() == "SendStreamingMessage"), 1);
    assert_eq!(
        rpc.count(|r| r.rpc_method() == "SendMessage"),
        1,
        "only the plain send above"
    );
    assert_eq!(rest.count(|r| r.path.ends_with("message:stream")), 1);
    assert_eq!(
        rest.count(|r| r.path.ends_with("message:send")),
        1,
        "only the plain send above"
    );
}

/// A worker that answers -32008 without naming the extension, its card marking one required that
/// a2a-mod does not send: the error names it (and only the ones not sent, each a plain URI).
#[tokio::test]
async fn a_required_extension_is_named_from_the_card() {
    let fake = serve(|r| match (r.path.as_str(), r.rpc_method()) {
        ("/.well-known/agent-card.json", _) => {
            let mut c = v1_card(&r.base);
            c["capabilities"] = json!({"extensions": [
                {"uri": "https://ext.example/needed/v1", "required": true},
                {"uri": "https://ext.example/sent/v1", "required": true},
                {"uri": "urn:optional", "required": false},
                {"uri": "urn:bad \u{1b}[2J", "required": true},
            ]});
            Reply::Json(200, c)
        }
        _ => rpc_err(r, -32008, "Extension support required"),
    })
    .await;
    let w = fake.worker_with(|c| c.extensions = vec!["https://ext.example/sent/v1".into()]);
    assert_eq!(
        w.plain("x", None, None, soon()).await,
        Err(A2aError::ExtensionRequired {
            said: "Extension support required".into(),
            required: vec!["https://ext.example/needed/v1".into()],
        })
    );
}

/// serve's writer and the client's reader are held to each other here, in every dialect and
/// binding and without HTTP: what `a2a-mod serve` writes of a task (a send's answer, GetTask, a
/// stream's events, its card), the client reads back as the same task. The same proto shapes sit
/// on both sides; this is what says they agree.
mod serve_contract {
    use super::super::card::Card;
    use super::super::stream::{Assembly, Folded};
    use super::super::wire::{parse_send_result, parse_task_list, parse_task_result};
    use a2a_mod_core::task::TaskState;
    use a2a_mod_proto::{Dialect, Wire};
    use a2a_mod_serve::task::{Event, Msg, Task, Update};
    use a2a_mod_serve::wire as serve;

    const WIRES: [Wire; 4] = [Wire::V1_RPC, Wire::V03_RPC, Wire::V1_REST, Wire::V03_REST];

    fn task(state: TaskState) -> Task {
        let mut t = Task::new("t1", "c1", "build", 1_000);
        t.state = state;
        t.history.push(Msg {
            message_id: "m1".into(),
            agent: false,
            text: "run the tests".into(),
        });
        t
    }

    #[test]
    fn a_completed_task_reads_back_whole() {
        let mut t = task(TaskState::Completed);
        t.answer = "all 12 passed".into();
        t.changes = Some("--- a/x\n+++ b/x\n".into());
        for w in WIRES {
            let written = serve::task(w, &t, Some(0));
            for v in [
                parse_task_result(&written).unwrap(),
                parse_send_result(&serve::send_result(w, written.clone())).unwrap(),
            ] {
                assert_eq!(
                    (v.task_id.as_str(), v.context_id.as_deref()),
                    ("t1", Some("c1")),
                    "{w:?}"
                );
                assert_eq!(v.state, TaskState::Completed, "{w:?}");
                let text = v.text.unwrap();
                assert!(text.starts_with("all 12 passed"), "{w:?}: {text}");
                let names: Vec<_> = v.artifacts.iter().map(|a| a.name.clone()).collect();
                assert_eq!(names.len(), 2, "the answer and the patch, {w:?}: {names:?}");
            }
            let page = serve::Page {
                tasks: &[t.clone()],
                page_size: 50,
                total: 1,
                next_token: String::new(),
                history: None,
                include_artifacts: true,
            };
            let (listed, left_out) = parse_task_list(&serve::list(w, &page)).unwrap();
            assert_eq!((listed.len(), left_out), (1, 0), "{w:?}");
        }
    }

    #[test]
    fn a_question_and_a_failure_read_back_in_their_words() {
        let mut asked = task(TaskState::InputRequired);
        asked.status_text = Some(a2a_mod_core::status::approval_line(
            "Bash",
            "Bash: rm -rf build",
        ));
        let mut failed = task(TaskState::Failed);
        failed.status_text = Some("exited with status 3: disk full".into());
        for w in WIRES {
            let v = parse_task_result(&serve::task(w, &asked, Some(0))).unwrap();
            assert_eq!(v.state, TaskState::InputRequired, "{w:?}");
            assert_eq!(v.question, asked.status_text, "{w:?}");
            let v = parse_task_result(&serve::task(w, &failed, Some(0))).unwrap();
            assert_eq!(
                (v.state, v.text.as_deref()),
                (TaskState::Failed, Some("exited with status 3: disk full")),
                "{w:?}"
            );
        }
    }

    /// A stream's events, as serve writes them, assemble into the answer streamed.
    #[test]
    fn a_streamed_answer_assembles_to_the_text_streamed() {
        let mut t = task(TaskState::Working);
        t.answer = "one two three".into();
        let status = |state: TaskState| Event {
            update: Update::Status,
            state,
            status_text: None,
            at_ms: 2_000,
        };
        let chunk = |text: &str, append: bool| Event {
            update: Update::Chunk {
                text: text.into(),
                append,
            },
            state: TaskState::Working,
            status_text: None,
            at_ms: 2_000,
        };
        for w in WIRES {
            let mut asm = Assembly::default();
            let mut first = task(TaskState::Submitted);
            first.history.clear();
            asm.apply(&serve::send_result(w, serve::task(w, &first, Some(0))))
                .unwrap();
            for ev in [
                status(TaskState::Working),
                chunk("one ", false),
                chunk("two ", true),
                chunk("three", true),
            ] {
                asm.apply(&serve::update(w, &t.head(), &ev)).unwrap();
            }
            let mut done = t.head();
            done.state = TaskState::Completed;
            let end = serve::update(w, &done, &status(TaskState::Completed));
            assert_eq!(asm.apply(&end).unwrap(), Folded::Changed, "{w:?}");
            let v = asm.view().unwrap().unwrap();
            assert_eq!(
                (v.state, v.text.as_deref()),
                (TaskState::Completed, Some("one two three")),
                "{w:?}"
            );
            assert!(!asm.partial, "{w:?}");
        }
    }

    /// serve's card: the client picks v1 JSON-RPC, falls back to v0.3 on the same binding, and
    /// sees streaming and the bearer scheme.
    #[test]
    fn serves_card_reads_back() {
        let written = serve::card(&serve::CardInfo {
            name: "build",
            description: "the build box",
            base: "http://127.0.0.1:1/build",
            bearer: true,
        });
        let c = Card::parse(
            written,
            "http://127.0.0.1:1/build/.well-known/agent-card.json",
            None,
        )
        .unwrap();
        assert_eq!(c.primary.dialect, Dialect::V1);
        assert_eq!(c.primary.url, "http://127.0.0.1:1/build/");
        assert_eq!(c.fallback.as_ref().map(|f| f.dialect), Some(Dialect::V03));
        assert!(c.doc.capabilities.streaming);
        let s = c.summary(&c.primary);
        assert_eq!(s.auth, ["bearer"]);
        assert_eq!(s.name, "build");
        assert!(s.extensions[0].starts_with(a2a_mod_core::task::TOOL_CONFIRMATION_EXTENSION));
    }
}
