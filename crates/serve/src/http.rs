//! The HTTP side of `serve`: one handler that puts every request through the browser guard
//! (`guard.rs`) first, then routes by path (each agent under `/<name>`, the first also at the
//! root), checks the bearer token, bounds the body, and speaks JSON-RPC (v1 and v0.3 method
//! names alike), HTTP+JSON (v1 paths, and v0.3's under `/v1`) and SSE (`stream.rs`).
//!
//! Never panics on a request: every malformed input is an A2A error. Tokens are compared as
//! SHA-256 digests in constant time and never logged; only the card and `/healthz` are served
//! without one. Each refusal is one line in the log and one JSON error to the client.

use crate::conn::Reached;
use crate::engine::{Agent, Engine, SERVER_BUSY};
use crate::guard::Guard;
use crate::stream::{Reader, Streams};
use crate::wire::{self, A2aError, Dialect, Wire};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use std::sync::Arc;
use std::time::Duration;

/// A bearer token clients may present: the variable it came from (the owner of what its
/// holder starts) and its digest.
pub struct Token {
    pub name: String,
    digest: [u8; 32],
}

impl Token {
    pub fn new(name: &str, secret: &str) -> Token {
        Token {
            name: name.to_string(),
            digest: Sha256::digest(secret.as_bytes()).into(),
        }
    }
}

/// Everything a request needs.
pub struct Server {
    pub engine: Arc<Engine>,
    pub agents: Vec<Arc<Agent>>,
    pub tokens: Vec<Token>,
    /// `http://host:port`, as the cards name it.
    pub origin: String,
    pub max_body: usize,
    /// A body that sends nothing for this long is given up on.
    pub body_stall: Duration,
    pub guard: Guard,
    pub streams: Arc<Streams>,
}

/// Who a request comes from: the token's variable, or `local` when serve takes no token.
const LOCAL: &str = "local";

impl Server {
    /// The owner a request's token names; `None` is a refusal.
    fn owner(&self, headers: &HeaderMap) -> Option<String> {
        if self.tokens.is_empty() {
            return Some(LOCAL.to_string());
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())?;
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        // Every token is compared, each byte of each: no early exit tells which part matched.
        let mut found = None;
        for t in &self.tokens {
            let diff = t
                .digest
                .iter()
                .zip(digest.iter())
                .fold(0u8, |acc, (a, b)| acc | (a ^ b));
            if diff == 0 && found.is_none() {
                found = Some(t.name.clone());
            }
        }
        found
    }

    /// The card of `agent` as the client asked for it: its URLs on the origin the client used
    /// (a reverse proxy's `X-Forwarded-Host`/`-Proto`, else `Host`), so a card fetched through
    /// a proxy or by the machine's name names endpoints that client can reach. A forged header
    /// only misleads the client that sent it.
    pub fn card(&self, agent: &Agent, at_root: bool, headers: &HeaderMap) -> Value {
        let origin = request_origin(headers).unwrap_or_else(|| self.origin.clone());
        let base = if at_root {
            origin
        } else {
            format!("{origin}/{}", agent.name)
        };
        wire::card(&wire::CardInfo {
            name: &agent.name,
            description: &agent.description,
            base: &base,
            bearer: !self.tokens.is_empty(),
        })
    }
}

/// `scheme://host[:port]` from the request's headers, when they name a plain host.
fn request_origin(headers: &HeaderMap) -> Option<String> {
    let get = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let host = get("x-forwarded-host").or_else(|| get("host"))?;
    let plain = host.len() <= 255
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    let scheme = match get("x-forwarded-proto") {
        Some("https") => "https",
        _ => "http",
    };
    plain.then(|| format!("{scheme}://{host}"))
}

pub fn router(server: Arc<Server>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(server)
}

/// Names no agent may have: the first segments of the routes served at the root.
pub const RESERVED: [&str; 6] = [
    ".well-known",
    "v1",
    "tasks",
    "message:send",
    "message:stream",
    "healthz",
];

async fn handle(
    axum::extract::State(sv): axum::extract::State<Arc<Server>>,
    reached: Option<axum::Extension<Reached>>,
    method: Method,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let local = reached.as_ref().map(|r| r.local);
    let peer = reached.as_ref().map(|r| r.peer.to_string());
    if let Err(r) = sv.guard.check(&method, &headers, local) {
        tracing::warn!(
            "refused a request from {}: {} ({} {})",
            peer.as_deref().unwrap_or("?"),
            r.rule,
            method,
            a2a_mod_core::text::one_line(uri.path(), 80)
        );
        return status_error(r.status, &r.message);
    }
    let path = uri.path();
    if method == Method::GET && path == "/healthz" {
        // Liveness for systemd, a proxy or a container probe: nothing about tasks or agents.
        return axum::Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}))
            .into_response();
    }
    let (agent, at_root, rest) = match path.strip_prefix('/').and_then(|p| {
        let (first, rest) = p.split_once('/').unwrap_or((p, ""));
        sv.agents
            .iter()
            .find(|a| a.name == first)
            .map(|a| (a, rest))
    }) {
        Some((a, rest)) => (a.clone(), false, format!("/{rest}")),
        None => match sv.agents.first() {
            Some(a) => (a.clone(), true, path.to_string()),
            None => return status_error(StatusCode::NOT_FOUND, "no agent is served here"),
        },
    };
    let rest = rest.trim_end_matches('/');
    if method == Method::GET
        && matches!(
            rest,
            "/.well-known/agent-card.json" | "/.well-known/agent.json"
        )
    {
        return axum::Json(sv.card(&agent, at_root, &headers)).into_response();
    }
    let Some(owner) = sv.owner(&headers) else {
        tracing::warn!(
            "refused a request from {}: missing or invalid bearer token",
            peer.as_deref().unwrap_or("?")
        );
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            axum::Json(json!({"error": {"code": 401, "status": "UNAUTHENTICATED",
                "message": "missing or invalid bearer token — send Authorization: Bearer <token>"}})),
        )
            .into_response();
    };
    let body = match read_body(body, sv.max_body, sv.body_stall).await {
        Ok(b) => b,
        Err((status, why)) => {
            tracing::warn!(
                "refused a request from {}: {why}",
                peer.as_deref().unwrap_or("?")
            );
            let e = A2aError::new(wire::INVALID_REQUEST, format!("Invalid Request: {why}"));
            let mut r = (status, axum::Json(e.rest())).into_response();
            r.headers_mut().insert(
                header::CONNECTION,
                header::HeaderValue::from_static("close"),
            );
            return r;
        }
    };
    let req = Req {
        sv: &sv,
        agent: &agent,
        owner: &owner,
    };
    if rest.is_empty() && method == Method::POST {
        return req.rpc(&body).await;
    }
    let (dialect, route) = match rest.strip_prefix("/v1") {
        Some(r) if r.starts_with('/') => (Dialect::V03, r),
        _ => (Dialect::V1, rest),
    };
    let w = Wire {
        dialect,
        rest: true,
    };
    req.rest(w, &method, route, uri.query().unwrap_or(""), &body)
        .await
}

/// The body whole: at most `max` bytes, none of its waits longer than `stall`.
async fn read_body(body: Body, max: usize, stall: Duration) -> Result<Bytes, (StatusCode, String)> {
    let mut chunks = body.into_data_stream();
    let mut whole = Vec::new();
    loop {
        let chunk = match tokio::time::timeout(stall, chunks.next()).await {
            Err(_) => {
                return Err((
                    StatusCode::REQUEST_TIMEOUT,
                    format!("the body stalled for {} s", stall.as_secs_f64()),
                ));
            }
            Ok(None) => return Ok(Bytes::from(whole)),
            Ok(Some(Err(_))) => {
                return Err((StatusCode::BAD_REQUEST, "the body was cut off".into()));
            }
            Ok(Some(Ok(c))) => c,
        };
        if whole.len() + chunk.len() > max {
            return Err((
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("the body is over {max} bytes"),
            ));
        }
        whole.extend_from_slice(&chunk);
    }
}

fn status_error(status: StatusCode, why: &str) -> Response {
    let (code, name) = (status.as_u16(), status.canonical_reason().unwrap_or(""));
    (
        status,
        axum::Json(json!({"error": {"code": code, "status": name, "message": why}})),
    )
        .into_response()
}

struct Req<'a> {
    sv: &'a Server,
    agent: &'a Arc<Agent>,
    owner: &'a str,
}

/// What an operation answers: a value, an event stream, or an A2A error.
enum Answer {
    Value(Value),
    Stream(Reader),
    Error(A2aError),
}

impl From<Result<Value, A2aError>> for Answer {
    fn from(r: Result<Value, A2aError>) -> Answer {
        r.map_or_else(Answer::Error, Answer::Value)
    }
}

/// One operation of either binding, its parameters as JSON-RPC names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Send,
    Stream,
    Get,
    Cancel,
    Subscribe,
    List,
}

fn op_of(method: &str) -> Option<(Op, Dialect)> {
    Some(match method {
        "SendMessage" => (Op::Send, Dialect::V1),
        "SendStreamingMessage" => (Op::Stream, Dialect::V1),
        "GetTask" => (Op::Get, Dialect::V1),
        "CancelTask" => (Op::Cancel, Dialect::V1),
        "SubscribeToTask" => (Op::Subscribe, Dialect::V1),
        "ListTasks" => (Op::List, Dialect::V1),
        "message/send" => (Op::Send, Dialect::V03),
        "message/stream" => (Op::Stream, Dialect::V03),
        "tasks/get" => (Op::Get, Dialect::V03),
        "tasks/cancel" => (Op::Cancel, Dialect::V03),
        "tasks/resubscribe" => (Op::Subscribe, Dialect::V03),
        "tasks/list" => (Op::List, Dialect::V03),
        _ => return None,
    })
}

impl Req<'_> {
    /// Logs a refusal by a bound, naming the token's variable (never the token).
    fn refused(&self, e: A2aError) -> A2aError {
        tracing::warn!("refused a stream for {}: {}", self.owner, e.message);
        e
    }

    async fn rpc(&self, body: &Bytes) -> Response {
        let null = Value::Null;
        let reply = |id: &Value, e: A2aError| axum::Json(e.rpc(id)).into_response();
        let Ok(req) = serde_json::from_slice::<Value>(body) else {
            return reply(
                &null,
                A2aError::new(wire::PARSE_ERROR, "Parse error: the body is not JSON"),
            );
        };
        let Some(obj) = req.as_object() else {
            return reply(
                &null,
                A2aError::new(
                    wire::INVALID_REQUEST,
                    "Invalid Request: expected one JSON-RPC object (batches are not supported)",
                ),
            );
        };
        let id = match obj.get("id") {
            Some(v @ (Value::String(_) | Value::Number(_))) => v.clone(),
            None | Some(Value::Null) => Value::Null,
            Some(_) => {
                return reply(
                    &null,
                    A2aError::new(
                        wire::INVALID_REQUEST,
                        "Invalid Request: id must be a string or a number",
                    ),
                );
            }
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return reply(
                &id,
                A2aError::new(
                    wire::INVALID_REQUEST,
                    "Invalid Request: jsonrpc must be \"2.0\"",
                ),
            );
        }
        let method = obj
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some((op, dialect)) = op_of(method) else {
            let shown = a2a_mod_core::text::one_line(method, 64);
            return reply(
                &id,
                A2aError::new(wire::METHOD_NOT_FOUND, format!("Method not found: {shown}")),
            );
        };
        let empty = json!({});
        let params = match obj.get("params") {
            None => &empty,
            Some(p @ Value::Object(_)) => p,
            Some(_) => {
                return reply(
                    &id,
                    A2aError::new(
                        wire::INVALID_PARAMS,
                        "Invalid params: params must be an object",
                    ),
                );
            }
        };
        let w = Wire {
            dialect,
            rest: false,
        };
        match self.op(w, op, params).await {
            Answer::Value(v) => axum::Json(wire::rpc_result(&id, v)).into_response(),
            Answer::Error(e) => reply(&id, e),
            Answer::Stream(reader) => crate::stream::response(reader, w, Some(id)),
        }
    }

    async fn rest(
        &self,
        w: Wire,
        method: &Method,
        route: &str,
        query: &str,
        body: &Bytes,
    ) -> Response {
        let json_body = || -> Result<Value, A2aError> {
            if body.is_empty() {
                return Ok(json!({}));
            }
            serde_json::from_slice::<Value>(body)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| {
                    A2aError::new(
                        wire::PARSE_ERROR,
                        "Parse error: the body is not a JSON object",
                    )
                })
        };
        let q = |k: &str| {
            query.split('&').find_map(|kv| {
                let (key, v) = kv.split_once('=')?;
                (key == k).then(|| v.to_string())
            })
        };
        let task_route = route.strip_prefix("/tasks/").filter(|r| !r.contains('/'));
        let (op, params) = match (method.as_str(), route, task_route) {
            ("POST", "/message:send", _) | ("POST", "/message:stream", _) => {
                let mut p = match json_body() {
                    Ok(p) => p,
                    Err(e) => return rest_error(&e),
                };
                // v0.3 REST names the message `request`.
                if let Some(m) = p.get("request").cloned()
                    && p.get("message").is_none()
                {
                    p["message"] = m;
                }
                let op = if route == "/message:send" {
                    Op::Send
                } else {
                    Op::Stream
                };
                (op, p)
            }
            ("GET", "/tasks", _) => {
                let mut p = json!({});
                if let Some(c) = q("contextId") {
                    p["contextId"] = c.into();
                }
                if let Some(n) = q("pageSize").and_then(|n| n.parse::<u64>().ok()) {
                    p["pageSize"] = n.into();
                }
                (Op::List, p)
            }
            (m, _, Some(t)) => {
                let (id, verb) = t.split_once(':').map_or((t, None), |(i, v)| (i, Some(v)));
                let mut p = json!({"id": id});
                match (m, verb) {
                    ("GET", None) => {
                        if let Some(n) = q("historyLength").and_then(|n| n.parse::<u64>().ok()) {
                            p["historyLength"] = n.into();
                        }
                        (Op::Get, p)
                    }
                    ("POST", Some("cancel")) => (Op::Cancel, p),
                    ("POST" | "GET", Some("subscribe")) => (Op::Subscribe, p),
                    _ => return no_route(),
                }
            }
            _ => return no_route(),
        };
        match self.op(w, op, &params).await {
            Answer::Value(v) => axum::Json(v).into_response(),
            Answer::Error(e) => rest_error(&e),
            Answer::Stream(reader) => crate::stream::response(reader, w, None),
        }
    }

    /// One operation, whichever binding it came by.
    /// SubscribeToTask of a task its owner may see: a reader of its events while it runs.
    fn subscribe(&self, t: &crate::task::Task) -> Answer {
        match self.sv.engine.live(&t.id).filter(|_| t.state.is_live()) {
            Some(live) => match self
                .sv
                .streams
                .reserve()
                .and_then(|ticket| ticket.reader(&live, false))
            {
                Ok(reader) => Answer::Stream(reader),
                Err(e) => Answer::Error(self.refused(e)),
            },
            None => Answer::Error(A2aError::new(
                wire::UNSUPPORTED_OPERATION,
                format!(
                    "Unsupported operation: task {} is {}; there is nothing more to stream — GetTask has it",
                    t.id, t.state
                ),
            )),
        }
    }

    async fn op(&self, w: Wire, op: Op, params: &Value) -> Answer {
        let engine = &self.sv.engine;
        let agent = &self.agent.name;
        let id = || {
            wire::checked_id(params.get("id"), "params.id")?.ok_or_else(|| {
                A2aError::new(
                    wire::INVALID_PARAMS,
                    "Invalid params: params.id (the task id) is required",
                )
            })
        };
        match op {
            Op::Send | Op::Stream => {
                let msg = match params.get("message").map(wire::read_message) {
                    Some(Ok(m)) => m,
                    Some(Err(e)) => return Answer::Error(e),
                    None => {
                        return Answer::Error(A2aError::new(
                            wire::INVALID_PARAMS,
                            "Invalid params: params.message is required",
                        ));
                    }
                };
                // A stream's place is taken first: no task is made for a stream that cannot open.
                let ticket = if op == Op::Stream {
                    match self.sv.streams.reserve() {
                        Ok(t) => Some(t),
                        Err(e) => return Answer::Error(self.refused(e)),
                    }
                } else {
                    None
                };
                let live = match engine.send(self.owner, self.agent, msg) {
                    Ok(l) => l,
                    Err(e) => return Answer::Error(e),
                };
                if let Some(ticket) = ticket {
                    return ticket
                        .reader(&live, true)
                        .map_or_else(Answer::Error, Answer::Stream);
                }
                let config = params.get("configuration");
                let flag = |k: &str| config.and_then(|c| c.get(k)).and_then(Value::as_bool);
                // Blocking is the default in both versions (the SDKs treat unset as blocking).
                let blocking =
                    flag("returnImmediately") != Some(true) && flag("blocking") != Some(false);
                let t = if blocking {
                    Engine::answered(&live).await
                } else {
                    live.snapshot()
                };
                let hl = history_length(config.and_then(|c| c.get("historyLength")));
                Answer::Value(wire::send_result(w, wire::task(w, &t, hl)))
            }
            Op::Get => {
                let hl = history_length(params.get("historyLength"));
                id().and_then(|id| engine.get(self.owner, agent, &id))
                    .map(|t| wire::task(w, &t, hl))
                    .into()
            }
            Op::Cancel => match id() {
                Ok(id) => engine
                    .cancel(self.owner, agent, &id)
                    .await
                    .map(|t| wire::task(w, &t, Some(0)))
                    .into(),
                Err(e) => Answer::Error(e),
            },
            Op::Subscribe => match id().and_then(|id| engine.get(self.owner, agent, &id)) {
                Ok(t) => self.subscribe(&t),
                Err(e) => Answer::Error(e),
            },
            Op::List => {
                let page = params
                    .get("pageSize")
                    .and_then(Value::as_u64)
                    .map_or(50, |n| n.clamp(1, 100) as usize);
                wire::checked_id(params.get("contextId"), "params.contextId")
                    .and_then(|context| engine.list(self.owner, agent, context.as_deref(), page))
                    .map(|ts| wire::list(w, &ts, page))
                    .into()
            }
        }
    }
}

/// A history length as asked: unset (or negative) is all of it.
fn history_length(v: Option<&Value>) -> Option<usize> {
    v.and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

fn rest_error(e: &A2aError) -> Response {
    let status = if e.code == SERVER_BUSY {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::from_u16(e.http().0).unwrap_or(StatusCode::BAD_REQUEST)
    };
    (status, axum::Json(e.rest())).into_response()
}

fn no_route() -> Response {
    rest_error(&A2aError::new(
        wire::METHOD_NOT_FOUND,
        "no such A2A route — see the agent card for the endpoints",
    ))
}
