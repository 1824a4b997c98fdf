//! The fake worker driven over real HTTP with raw JSON-RPC (no dependence on our own client), and
//! its v1 output checked against the official `a2a-lf` types. Waits are polls on observable state
//! with a deadline, never a bare sleep.

use super::*;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

// a2a-lf names its library `a2a`.
use ::a2a as a2a_lf;

fn http() -> reqwest::Client {
    // reqwest is built without a default rustls provider; plain HTTP never uses it, but the
    // builder wants one installed. Err = another test installed it first.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

async fn start(opts: FakeWorkerOptions) -> FakeWorker {
    FakeWorker::start(opts).await.expect("fake worker starts")
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum V {
    One,
    O3,
}

/// One JSON-RPC call; v1 carries `A2A-Version: 1.0` like a correct client.
async fn call_raw(
    w: &FakeWorker,
    v: V,
    method: &str,
    params: Value,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = http().post(format!("{}/", w.url)).json(&json!({
        "jsonrpc": "2.0", "id": 7, "method": method, "params": params,
    }));
    if v == V::One {
        req = req.header("A2A-Version", "1.0");
    }
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("request answered");
    let status = resp.status();
    let body = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

async fn call(w: &FakeWorker, v: V, method: &str, params: Value) -> Value {
    let (status, body) = call_raw(w, v, method, params, None).await;
    assert_eq!(status, 200, "{body}");
    if v == V::One {
        let _: a2a_lf::JsonRpcResponse = serde_json::from_value(body.clone())
            .unwrap_or_else(|e| panic!("v1 envelope parses as a2a-lf: {e}: {body}"));
    }
    assert_eq!(body["jsonrpc"], "2.0");
    assert_eq!(body["id"], 7);
    body
}

fn message(v: V, text: &str, task_id: Option<&str>) -> Value {
    let mut m = match v {
        V::One => {
            json!({"messageId": a2a_mod_os::ids::uuid_v4(), "role": "ROLE_USER", "parts": [{"text": text}]})
        }
        V::O3 => {
            json!({"kind": "message", "messageId": a2a_mod_os::ids::uuid_v4(), "role": "user",
                        "parts": [{"kind": "text", "text": text}]})
        }
    };
    if let Some(t) = task_id {
        m["taskId"] = json!(t);
    }
    m
}

fn send_params(v: V, text: &str, task_id: Option<&str>, non_blocking: bool) -> Value {
    let config = match v {
        V::One => json!({"returnImmediately": non_blocking, "historyLength": 0}),
        V::O3 => json!({"blocking": !non_blocking, "historyLength": 0}),
    };
    json!({"message": message(v, text, task_id), "configuration": config})
}

fn send_method(v: V) -> &'static str {
    if v == V::One {
        "SendMessage"
    } else {
        "message/send"
    }
}
fn get_method(v: V) -> &'static str {
    if v == V::One { "GetTask" } else { "tasks/get" }
}
fn cancel_method(v: V) -> &'static str {
    if v == V::One {
        "CancelTask"
    } else {
        "tasks/cancel"
    }
}

/// The task from a send result (v1 wraps it in `task`), checked against the official v1 types.
fn task_of_send(v: V, body: &Value) -> Value {
    let result = &body["result"];
    match v {
        V::One => {
            let parsed: a2a_lf::SendMessageResponse =
                serde_json::from_value(result.clone()).expect("v1 send result parses");
            assert!(matches!(parsed, a2a_lf::SendMessageResponse::Task(_)));
            result["task"].clone()
        }
        V::O3 => {
            assert_eq!(result["kind"], "task", "{result}");
            result.clone()
        }
    }
}

fn check_task(v: V, task: &Value) {
    match v {
        V::One => {
            let _: a2a_lf::Task = serde_json::from_value(task.clone())
                .unwrap_or_else(|e| panic!("v1 task parses as a2a_lf::Task: {e}: {task}"));
            assert!(task.get("kind").is_none());
        }
        V::O3 => assert_eq!(task["kind"], "task"),
    }
}

/// The state in docs/commands-and-tools.md's spelling, whatever the dialect.
fn state(task: &Value) -> String {
    a2a_mod_core::task::TaskState::from_wire(task["status"]["state"].as_str().unwrap_or(""))
        .as_str()
        .to_string()
}

fn artifact_text(task: &Value) -> String {
    task["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn status_text(task: &Value) -> String {
    task["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn send(w: &FakeWorker, v: V, text: &str) -> Value {
    let body = call(w, v, send_method(v), send_params(v, text, None, true)).await;
    let task = task_of_send(v, &body);
    check_task(v, &task);
    task
}

async fn get(w: &FakeWorker, v: V, id: &str) -> Value {
    let body = call(w, v, get_method(v), json!({"id": id, "historyLength": 0})).await;
    let task = body["result"].clone();
    check_task(v, &task);
    task
}

/// Polls GetTask until the task reaches `want`; returns every state seen on the way.
async fn poll_until(w: &FakeWorker, v: V, id: &str, want: &str) -> (Value, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = Vec::new();
    loop {
        let task = get(w, v, id).await;
        seen.push(state(&task));
        if state(&task) == want {
            return (task, seen);
        }
        assert!(
            Instant::now() < deadline,
            "task {id} never became {want}: {seen:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn error_code(body: &Value) -> i64 {
    body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected a JSON-RPC error: {body}"))
}

async fn fetch_card(w: &FakeWorker, path: &str) -> Value {
    let resp = http().get(format!("{}{path}", w.url)).send().await.unwrap();
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

#[tokio::test]
async fn hybrid_card_is_v1_and_v03() {
    let w = start(FakeWorkerOptions::default()).await;
    let card = fetch_card(&w, "/.well-known/agent-card.json").await;
    assert_eq!(card, fetch_card(&w, "/.well-known/agent.json").await);
    let rpc = format!("{}/", w.url);
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ])
    );
    assert_eq!(card["url"], rpc);
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["protocolVersion"], "1.0");
    assert_eq!(card["name"], "fake");
    assert!(card.get("securitySchemes").is_none());
    let parsed: a2a_lf::AgentCard = serde_json::from_value(card).expect("parses as a2a-lf");
    let skills: Vec<_> = parsed.skills.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        skills,
        ["echo", "slow", "ask", "fail", "reject", "auth", "silent"]
    );
    assert_eq!(parsed.supported_interfaces[0].protocol_version, "1.0");
}

#[tokio::test]
async fn v03_only_card_has_no_v1_interfaces() {
    let w = start(FakeWorkerOptions {
        v03_only: true,
        ..Default::default()
    })
    .await;
    let card = fetch_card(&w, "/.well-known/agent-card.json").await;
    assert!(card.get("supportedInterfaces").is_none(), "{card}");
    assert_eq!(card["url"], format!("{}/", w.url));
    assert_eq!(card["protocolVersion"], "0.3.0");
    assert_eq!(card["preferredTransport"], "JSONRPC");
    assert_eq!(card["skills"].as_array().map(Vec::len), Some(7));
}

#[tokio::test]
async fn card_declares_bearer_and_oauth_in_both_styles() {
    let w = start(FakeWorkerOptions {
        bearer_token: Some("tok".into()),
        oauth_ttl: Some(Duration::from_secs(60)),
        ..Default::default()
    })
    .await;
    let token_url = format!("{}/oauth/token", w.url);
    let card = fetch_card(&w, "/.well-known/agent-card.json").await;
    // v0.3 readers
    assert_eq!(card["securitySchemes"]["bearer"]["type"], "http");
    assert_eq!(card["securitySchemes"]["oauth"]["type"], "oauth2");
    assert_eq!(
        card["securitySchemes"]["oauth"]["flows"]["clientCredentials"]["tokenUrl"],
        token_url
    );
    assert_eq!(card["security"], json!([{"bearer": []}, {"oauth": []}]));
    // v1 readers
    let parsed: a2a_lf::AgentCard = serde_json::from_value(card).expect("parses as a2a-lf");
    let schemes = parsed.security_schemes.expect("schemes");
    match &schemes["oauth"] {
        a2a_lf::SecurityScheme::OAuth2(o) => match &o.flows {
            a2a_lf::OAuthFlows::ClientCredentials(cc) => assert_eq!(cc.token_url, token_url),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &schemes["bearer"],
        a2a_lf::SecurityScheme::HttpAuth(h) if h.scheme == "Bearer"
    ));
    assert_eq!(parsed.security_requirements.map(|r| r.len()), Some(2));

    let v03 = start(FakeWorkerOptions {
        v03_only: true,
        bearer_token: Some("tok".into()),
        ..Default::default()
    })
    .await;
    let card = fetch_card(&v03, "/.well-known/agent-card.json").await;
    assert_eq!(
        card["securitySchemes"],
        json!({"bearer": {"type": "http", "scheme": "Bearer"}})
    );
}

#[tokio::test]
async fn echo_in_both_dialects() {
    let w = start(FakeWorkerOptions::default()).await;
    for v in [V::One, V::O3] {
        let task = send(&w, v, "hello there").await;
        assert_eq!(
            state(&task),
            "submitted",
            "{v:?}: non-blocking answers the first state"
        );
        assert!(task.get("history").is_none(), "historyLength 0");
        let id = task["id"].as_str().unwrap();
        let done = get(&w, v, id).await;
        assert_eq!(state(&done), "completed");
        assert_eq!(artifact_text(&done), "hello there");
        assert_eq!(done["contextId"], task["contextId"]);
        if v == V::O3 {
            assert_eq!(done["artifacts"][0]["parts"][0]["kind"], "text");
            assert_eq!(done["status"]["state"], "completed");
        } else {
            assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED");
        }
        // Without historyLength the whole history comes back.
        let full = call(&w, v, get_method(v), json!({"id": id})).await["result"].clone();
        check_task(v, &full);
        assert_eq!(full["history"][0]["parts"][0]["text"], "hello there");
        // A blocking send answers the current state at once.
        let body = call(&w, v, send_method(v), send_params(v, "again", None, false)).await;
        let task = task_of_send(v, &body);
        assert_eq!(state(&task), "completed");
    }
}

#[tokio::test]
async fn slow_works_then_completes_on_time() {
    let w = start(FakeWorkerOptions::default()).await;
    for v in [V::One, V::O3] {
        let task = send(&w, v, "slow 0.3 build the docs").await;
        let id = task["id"].as_str().unwrap().to_string();
        let (done, seen) = poll_until(&w, v, &id, "completed").await;
        assert_eq!(artifact_text(&done), "done: build the docs");
        // Every poll before the deadline saw working, every one after completed: the state is a
        // function of the time since the send, read from the worker's own arrival times.
        let events = w.events();
        let sent = events
            .iter()
            .find(|e| e.method == send_method(v) && e.task_id.as_deref() == Some(&id))
            .unwrap()
            .since_start_ms;
        let polls: Vec<u64> = events
            .iter()
            .filter(|e| e.method == get_method(v) && e.task_id.as_deref() == Some(&id))
            .map(|e| e.since_start_ms - sent)
            .collect();
        assert_eq!(polls.len(), seen.len());
        for (after, st) in polls.iter().zip(&seen) {
            let want = if *after >= 300 {
                "completed"
            } else {
                "working"
            };
            assert_eq!(st, want, "{v:?} poll {after} ms after the send");
        }
    }
}

#[tokio::test]
async fn ask_round_trip() {
    let w = start(FakeWorkerOptions::default()).await;
    for v in [V::One, V::O3] {
        let task = send(&w, v, "ask which branch?").await;
        let id = task["id"].as_str().unwrap();
        let waiting = get(&w, v, id).await;
        assert_eq!(state(&waiting), "input-required");
        assert_eq!(status_text(&waiting), "which branch?");
        let role = &waiting["status"]["message"]["role"];
        assert_eq!(role, if v == V::One { "ROLE_AGENT" } else { "agent" });

        let body = call(
            &w,
            v,
            send_method(v),
            send_params(v, "main", Some(id), true),
        )
        .await;
        let answered = task_of_send(v, &body);
        check_task(v, &answered);
        assert_eq!(state(&answered), "completed");
        assert_eq!(artifact_text(&answered), "you said: main");
        assert_eq!(answered["id"], id);

        let full = call(&w, v, get_method(v), json!({"id": id})).await["result"].clone();
        check_task(v, &full);
        let texts: Vec<_> = full["history"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["parts"][0]["text"].as_str().unwrap())
            .collect();
        assert_eq!(texts, ["ask which branch?", "which branch?", "main"]);

        // The task is over: another follow-up is refused.
        let again = call(&w, v, send_method(v), send_params(v, "x", Some(id), true)).await;
        assert_eq!(error_code(&again), -32602);
    }
}

#[tokio::test]
async fn fail_reject_auth() {
    let w = start(FakeWorkerOptions::default()).await;
    for v in [V::One, V::O3] {
        for (text, want, why) in [
            ("fail disk full", "failed", "disk full"),
            ("reject", "rejected", "rejected"),
            ("auth", "auth-required", ""),
        ] {
            let task = send(&w, v, text).await;
            let now = get(&w, v, task["id"].as_str().unwrap()).await;
            assert_eq!(state(&now), want, "{v:?} {text}");
            if !why.is_empty() {
                assert_eq!(status_text(&now), why);
            }
        }
        // auth-required resumes on a follow-up, like input-required.
        let task = send(&w, v, "auth").await;
        let id = task["id"].as_str().unwrap();
        let body = call(
            &w,
            v,
            send_method(v),
            send_params(v, "done", Some(id), true),
        )
        .await;
        assert_eq!(state(&task_of_send(v, &body)), "completed");
    }
}

#[tokio::test]
async fn cancel_live_and_terminal() {
    let w = start(FakeWorkerOptions::default()).await;
    for v in [V::One, V::O3] {
        let task = send(&w, v, "slow 30 long job").await;
        let id = task["id"].as_str().unwrap();
        let body = call(&w, v, cancel_method(v), json!({"id": id})).await;
        let canceled = body["result"].clone();
        check_task(v, &canceled);
        assert_eq!(state(&canceled), "canceled");
        assert_eq!(state(&get(&w, v, id).await), "canceled");
        let again = call(&w, v, cancel_method(v), json!({"id": id})).await;
        assert_eq!(error_code(&again), -32002);

        let echo = send(&w, v, "quick").await;
        let body = call(&w, v, cancel_method(v), json!({"id": echo["id"]})).await;
        assert_eq!(error_code(&body), -32002);
    }
}

#[tokio::test]
async fn unknown_task_is_task_not_found() {
    let w = start(FakeWorkerOptions::default()).await;
    for v in [V::One, V::O3] {
        for method in [get_method(v), cancel_method(v)] {
            let body = call(&w, v, method, json!({"id": "nope"})).await;
            assert_eq!(error_code(&body), -32001, "{method}");
        }
        let body = call(
            &w,
            v,
            send_method(v),
            send_params(v, "hi", Some("nope"), true),
        )
        .await;
        assert_eq!(error_code(&body), -32001);
    }
    let body = call(&w, V::One, "GetTask", json!({"id": "nope"})).await;
    assert_eq!(body["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
    let body = call(&w, V::O3, "tasks/get", json!({"id": "nope"})).await;
    assert!(body["error"].get("data").is_none());
}

#[tokio::test]
async fn version_header_rules() {
    let w = start(FakeWorkerOptions::default()).await;
    // v1 method without the header: refused like the Python SDK.
    let body = call(&w, V::O3, "GetTask", json!({"id": "x"})).await;
    assert_eq!(error_code(&body), -32009);
    // The query parameter is accepted in place of the header.
    let resp = http()
        .post(format!("{}/?A2A-Version=1.0", w.url))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(&resp.json::<Value>().await.unwrap()), -32001);
    // A v0.3 method sent as 1.0 on a dual server.
    let body = call(&w, V::One, "tasks/get", json!({"id": "x"})).await;
    assert_eq!(error_code(&body), -32603);
}

#[tokio::test]
async fn v03_only_rejects_v1_methods() {
    let w = start(FakeWorkerOptions {
        v03_only: true,
        ..Default::default()
    })
    .await;
    for method in ["SendMessage", "GetTask", "CancelTask"] {
        let body = call(&w, V::One, method, send_params(V::One, "hi", None, true)).await;
        assert_eq!(error_code(&body), -32601, "{method}");
    }
    // A real 0.3 server ignores the version header.
    let body = call(
        &w,
        V::One,
        "message/send",
        send_params(V::O3, "hi", None, true),
    )
    .await;
    assert_eq!(state(&task_of_send(V::O3, &body)), "submitted");
    let task = send(&w, V::O3, "hello").await;
    assert_eq!(
        state(&get(&w, V::O3, task["id"].as_str().unwrap()).await),
        "completed"
    );
}

#[tokio::test]
async fn malformed_requests() {
    let w = start(FakeWorkerOptions::default()).await;
    let raw = |body: &'static str| {
        let url = format!("{}/", w.url);
        async move {
            let resp = http()
                .post(url)
                .header("A2A-Version", "1.0")
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            error_code(&resp.json::<Value>().await.unwrap())
        }
    };
    assert_eq!(raw("{not json").await, -32700);
    assert_eq!(raw("[]").await, -32600);
    assert_eq!(raw(r#"{"jsonrpc":"2.0","id":1}"#).await, -32600);
    assert_eq!(
        raw(r#"{"jsonrpc":"1.0","id":1,"method":"GetTask"}"#).await,
        -32600
    );
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":{},"method":"GetTask"}"#).await,
        -32600
    );
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":1,"method":"Nope"}"#).await,
        -32601
    );
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{}}"#).await,
        -32602
    );
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":[1]}"#).await,
        -32602
    );
    assert_eq!(
        raw(r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{}}"#).await,
        -32602
    );
    // v0.3 shapes sent to a v1 method, and the reverse.
    let body = call(
        &w,
        V::One,
        "SendMessage",
        send_params(V::O3, "hi", None, true),
    )
    .await;
    assert_eq!(error_code(&body), -32602);
    let body = call(
        &w,
        V::O3,
        "message/send",
        send_params(V::One, "hi", None, true),
    )
    .await;
    assert_eq!(error_code(&body), -32602);
    // Still serving.
    send(&w, V::One, "ok").await;
}

#[tokio::test]
async fn bearer_token_is_required_for_rpc_only() {
    let w = start(FakeWorkerOptions {
        bearer_token: Some("s3cret".into()),
        ..Default::default()
    })
    .await;
    fetch_card(&w, "/.well-known/agent-card.json").await;
    let params = send_params(V::One, "hi", None, true);
    let (status, _) = call_raw(&w, V::One, "SendMessage", params.clone(), None).await;
    assert_eq!(status, 401);
    let (status, _) = call_raw(&w, V::One, "SendMessage", params.clone(), Some("wrong")).await;
    assert_eq!(status, 401);
    let (status, body) = call_raw(&w, V::One, "SendMessage", params, Some("s3cret")).await;
    assert_eq!(status, 200);
    assert_eq!(state(&task_of_send(V::One, &body)), "submitted");
    let seen: Vec<_> = w
        .events()
        .iter()
        .map(|e| (e.method.clone(), e.auth.clone().unwrap(), e.status))
        .collect();
    assert_eq!(
        seen,
        [
            ("card".into(), "none".into(), 200),
            ("SendMessage".into(), "none".into(), 401),
            ("SendMessage".into(), "bearer".into(), 401),
            ("SendMessage".into(), "bearer".into(), 200),
        ]
    );
}

async fn fetch_token(w: &FakeWorker) -> (String, u64) {
    let resp = http()
        .post(format!("{}/oauth/token", w.url))
        .basic_auth("client", Some("secret"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("grant_type=client_credentials")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["token_type"], "Bearer");
    (
        body["access_token"].as_str().unwrap().to_string(),
        body["expires_in"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn oauth_tokens_expire() {
    let w = start(FakeWorkerOptions {
        oauth_ttl: Some(Duration::from_millis(400)),
        ..Default::default()
    })
    .await;
    let get_x = json!({"id": "x"});
    let (status, _) = call_raw(&w, V::One, "GetTask", get_x.clone(), None).await;
    assert_eq!(status, 401);

    let issued = Instant::now();
    let (token, expires_in) = fetch_token(&w).await;
    assert_eq!(expires_in, 1, "rounded up to whole seconds");
    let (status, body) = call_raw(&w, V::One, "GetTask", get_x.clone(), Some(&token)).await;
    if issued.elapsed() < Duration::from_millis(400) {
        assert_eq!(status, 200);
        assert_eq!(error_code(&body), -32001);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (status, _) = call_raw(&w, V::One, "GetTask", get_x.clone(), Some(&token)).await;
        if status == 401 {
            break;
        }
        assert!(Instant::now() < deadline, "the token never expired");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(issued.elapsed() >= Duration::from_millis(400));
    let (fresh, _) = fetch_token(&w).await;
    assert_ne!(fresh, token);
    let (status, _) = call_raw(&w, V::One, "GetTask", get_x, Some(&fresh)).await;
    assert_eq!(status, 200);

    // Refusals: no client authentication, wrong grant type.
    let resp = http()
        .post(format!("{}/oauth/token", w.url))
        .body("grant_type=client_credentials")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let resp = http()
        .post(format!("{}/oauth/token", w.url))
        .body("grant_type=password&client_id=a&client_secret=b")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    let tokens: Vec<_> = w
        .events()
        .into_iter()
        .filter(|e| e.method == "token")
        .collect();
    assert_eq!(tokens.iter().filter(|e| e.status == 200).count(), 2);
    assert_eq!(tokens.len(), 4);
}

/// A `silent` task's GetTask must hang (so a client's timeout fires), and dropping the worker must
/// still release it: otherwise a test that drops its worker would leak a task waiting forever.
#[tokio::test]
async fn silent_hangs_until_the_worker_stops() {
    let w = start(FakeWorkerOptions::default()).await;
    let task = send(&w, V::One, "silent").await;
    let id = task["id"].as_str().unwrap().to_string();
    assert_eq!(state(&task), "submitted");

    let timed_out = http()
        .post(format!("{}/", w.url))
        .header("A2A-Version", "1.0")
        .timeout(Duration::from_millis(300))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}))
        .send()
        .await;
    assert!(timed_out.expect_err("must hang").is_timeout());

    let url = w.url.clone();
    let hanging = tokio::spawn({
        let id = id.clone();
        let url = url.clone();
        async move {
            http()
                .post(format!("{url}/"))
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": id}}))
                .send()
                .await
        }
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    while !w
        .events()
        .iter()
        .any(|e| e.method == "tasks/cancel" && e.status == 0)
    {
        assert!(Instant::now() < deadline, "the cancel never arrived");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!hanging.is_finished());
    drop(w);

    let released = tokio::time::timeout(Duration::from_secs(5), hanging)
        .await
        .expect("the hung request ends when the worker is dropped")
        .unwrap();
    if let Ok(resp) = released {
        assert_eq!(resp.status(), 503);
    }
    let refused = http()
        .get(format!("{url}/.well-known/agent-card.json"))
        .timeout(Duration::from_secs(2))
        .send()
        .await;
    assert!(refused.is_err(), "the port is closed");
}

#[tokio::test]
async fn stop_closes_the_port() {
    let w = start(FakeWorkerOptions::default()).await;
    let url = w.url.clone();
    send(&w, V::One, "silent").await;
    fetch_card(&w, "/.well-known/agent-card.json").await;
    tokio::time::timeout(Duration::from_secs(5), w.stop())
        .await
        .expect("stop returns");
    let refused = http()
        .get(format!("{url}/.well-known/agent-card.json"))
        .send()
        .await;
    assert!(refused.is_err());
}

#[tokio::test]
async fn events_are_logged_as_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let w = start(FakeWorkerOptions {
        log: Some(log.clone()),
        ..Default::default()
    })
    .await;
    fetch_card(&w, "/.well-known/agent-card.json").await;
    let task = send(&w, V::One, "slow 0.2 x").await;
    let id = task["id"].as_str().unwrap().to_string();
    poll_until(&w, V::One, &id, "completed").await;
    call(&w, V::O3, "tasks/get", json!({"id": "missing"})).await;

    let events = w.events();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<RequestEvent> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, events);
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    for key in [
        "at_ms",
        "since_start_ms",
        "method",
        "task_id",
        "auth",
        "status",
    ] {
        assert!(first.get(key).is_some(), "{key} in {first}");
    }
    assert!(first.get("rpc_error").is_none());

    assert_eq!(events[0].method, "card");
    assert_eq!(events[1].method, "SendMessage");
    assert_eq!(events[1].task_id.as_deref(), Some(id.as_str()));
    let gets: Vec<_> = events
        .iter()
        .filter(|e| e.method == "GetTask")
        .map(|e| e.at_ms - events[1].at_ms)
        .collect();
    assert!(!gets.is_empty());
    assert!(gets.windows(2).all(|p| p[0] <= p[1]), "{gets:?}");
    let last = events.last().unwrap();
    assert_eq!(
        (
            last.method.as_str(),
            last.task_id.as_deref(),
            last.rpc_error
        ),
        ("tasks/get", Some("missing"), Some(-32001))
    );
    for e in &events {
        assert!(e.at_ms >= events[0].at_ms);
        assert_eq!(e.auth.as_deref(), Some("none"));
    }
}
