//! The HTTP side of `serve`: a route table (each agent under `/<name>`, the first also at the
//! root) behind one layer, the browser guard (`guard.rs`), that every request passes first;
//! extractors for the bearer token ([`Owner`]) and the bounded body ([`Bounded`]); JSON-RPC (v1
//! and v0.3 method names alike, `a2a_mod_proto`'s envelope), HTTP+JSON (v1 paths, and v0.3's
//! under `/v1`, queries percent-decoded) and SSE (`stream.rs`).
//!
//! Never panics on a request: every malformed input is an A2A error. Tokens are compared as
//! SHA-256 digests in constant time and never logged; only the card and `/healthz` are served
//! without one. Each refusal is one line in the log and one JSON error to the client.

use crate::conn::Reached;
use crate::engine::{Agent, Engine, SERVER_BUSY};
use crate::guard::Guard;
use crate::stream::{Reader, Streams};
use crate::wire::{self, A2aError, Binding, Dialect, Wire};
use a2a_mod_proto::Method as Op;
use a2a_mod_proto::params::{ListQuery, Params};
use a2a_mod_store::served::ListFilter;
use axum::body::{Body, Bytes};
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
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
    /// Where webhooks may point.
    pub push: crate::push::Policy,
    pub agents: Vec<Arc<Agent>>,
    pub tokens: Vec<Token>,
    /// `http://host:port`, as the cards name it.
    pub origin: String,
    /// When it started, as an HTTP date: the cards' `Last-Modified` (a card changes only with a
    /// restart, which reads the config again).
    pub started: String,
    pub max_body: usize,
    /// A body that sends nothing for this long is given up on.
    pub body_stall: Duration,
    pub guard: Guard,
    pub streams: Arc<Streams>,
}

/// Who a request comes from: the token's variable, or `local` when serve takes no token.
const LOCAL: &str = "local";

impl Server {
    /// Whether JSON-RPC is POSTed to `path`: the root, or an agent's URL.
    fn is_rpc_path(&self, path: &str) -> bool {
        let name = path.trim_matches('/');
        name.is_empty() || self.agents.iter().any(|a| a.name == name)
    }

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

/// Names no agent may have: the first segments of the routes served at the root.
pub const RESERVED: [&str; 6] = [
    ".well-known",
    "v1",
    "tasks",
    "message:send",
    "message:stream",
    "healthz",
];

/// What a route of one agent's needs: the server, the agent, and whether it is served at the
/// root (the first agent also is), which its card's URLs say.
#[derive(Clone)]
struct At {
    sv: Arc<Server>,
    agent: Arc<Agent>,
    at_root: bool,
}

/// The route table: each agent's routes under `/<name>`, the first agent's also at the root,
/// `/healthz` at the root; the browser guard in front of all of them (one layer, the card and
/// `/healthz` included); anything else an A2A "no such route".
pub fn router(server: Arc<Server>) -> axum::Router {
    let mut app = axum::Router::new().route("/healthz", get(healthz));
    for (i, agent) in server.agents.iter().enumerate() {
        let at = |at_root| At {
            sv: server.clone(),
            agent: agent.clone(),
            at_root,
        };
        app = app.merge(agent_routes(&format!("/{}", agent.name), at(false)));
        if i == 0 {
            app = app.merge(agent_routes("", at(true)));
        }
    }
    app.fallback(no_route)
        .method_not_allowed_fallback(no_route)
        .layer(axum::middleware::from_fn_with_state(server, guarded))
}

/// One agent's routes under `prefix` (`""` at the root). JSON-RPC is POSTed to the agent's base
/// URL with or without its slash (the card names it with); HTTP+JSON v1 paths hang under it,
/// v0.3's under `/v1`.
fn agent_routes(prefix: &str, at: At) -> axum::Router {
    let path = |p: &str| format!("{prefix}{p}");
    let mut r = axum::Router::new()
        .route(&path("/.well-known/agent-card.json"), get(card))
        .route(&path("/.well-known/agent.json"), get(card))
        .route(&path("/"), post(rpc));
    if !prefix.is_empty() {
        r = r.route(prefix, post(rpc));
    }
    for (v, d) in [("", Dialect::V1), ("/v1", Dialect::V03)] {
        let w = Wire {
            dialect: d,
            binding: Binding::Rest,
        };
        r = r
            .route(
                &path(&format!("{v}/message:send")),
                post(move |at, owner, v, body| send_rest(at, owner, v, body, w, Op::Send)),
            )
            .route(
                &path(&format!("{v}/message:stream")),
                post(move |at, owner, v, body| send_rest(at, owner, v, body, w, Op::Stream)),
            )
            .route(
                &path(&format!("{v}/tasks")),
                get(move |at, owner, v, q| list_rest(at, owner, v, q, w)),
            )
            .route(
                &path(&format!("{v}/tasks/{{task}}")),
                get(move |at, owner, v, task, q| task_rest(at, owner, v, task, q, w, false))
                    .post(move |at, owner, v, task, q| task_rest(at, owner, v, task, q, w, true)),
            )
            .route(
                &path(&format!("{v}/tasks/{{task}}/pushNotificationConfigs")),
                get(move |at, owner, v, ids| push_rest(at, owner, v, ids, w, Op::ListPushConfigs))
                    .post(move |at, owner, v, ids, body| {
                        push_create_rest(at, owner, v, ids, w, body)
                    }),
            )
            .route(
                &path(&format!(
                    "{v}/tasks/{{task}}/pushNotificationConfigs/{{config}}"
                )),
                get(move |at, owner, v, ids| push_rest(at, owner, v, ids, w, Op::GetPushConfig))
                    .delete(move |at, owner, v, ids| {
                        push_rest(at, owner, v, ids, w, Op::DeletePushConfig)
                    }),
            );
    }
    r.with_state(at)
}

/// The browser guard (`guard.rs`), first on every request: one log line and one JSON error for
/// each refusal.
async fn guarded(
    axum::extract::State(sv): axum::extract::State<Arc<Server>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let reached = req.extensions().get::<Reached>().copied();
    if let Err(r) = sv
        .guard
        .check(req.method(), req.headers(), reached.map(|r| r.local))
    {
        tracing::warn!(
            "refused a request from {}: {} ({} {})",
            peer_of(reached),
            r.rule,
            req.method(),
            a2a_mod_core::text::one_line(req.uri().path(), 80)
        );
        if r.status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            // The A2A error of its binding: a JSON-RPC one where JSON-RPC is POSTed.
            let e = A2aError::new(a2a_mod_proto::error::CONTENT_TYPE_NOT_SUPPORTED, r.message);
            return if sv.is_rpc_path(req.uri().path()) {
                (r.status, axum::Json(e.rpc_v1(&Value::Null))).into_response()
            } else {
                rest_error(&e)
            };
        }
        return status_error(r.status, &r.message);
    }
    next.run(req).await
}

fn peer_of(reached: Option<Reached>) -> String {
    reached.map_or_else(|| "?".to_string(), |r| r.peer.to_string())
}

/// Liveness for systemd, a proxy or a container probe: nothing about tasks or agents.
async fn healthz() -> Response {
    axum::Json(json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")})).into_response()
}

/// The card, cacheable: `Cache-Control` with a max-age, an `ETag` of its bytes (a request that
/// names it gets 304) and `Last-Modified`, the server's start.
async fn card(State(at): State<At>, headers: HeaderMap) -> Response {
    let body = at.sv.card(&at.agent, at.at_root, &headers).to_string();
    let digest: [u8; 32] = Sha256::digest(body.as_bytes()).into();
    let tag: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let etag = format!("\"{tag}\"");
    let cached = (headers.get(header::IF_NONE_MATCH))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut r = if cached {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = r.headers_mut();
    let value = |s: &str| header::HeaderValue::from_str(s).ok();
    for (name, v) in [
        (header::CACHE_CONTROL, value("public, max-age=300")),
        (header::ETAG, value(&etag)),
        (header::LAST_MODIFIED, value(&at.sv.started)),
    ] {
        if let Some(v) = v {
            h.insert(name, v);
        }
    }
    r
}

/// Who a request comes from, by its bearer token (`Server::owner`); a request without a valid
/// one is refused with 401 and a line in the log (never the token).
struct Owner(String);

impl axum::extract::FromRequestParts<At> for Owner {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        at: &At,
    ) -> Result<Owner, Response> {
        if let Some(owner) = at.sv.owner(&parts.headers) {
            return Ok(Owner(owner));
        }
        tracing::warn!(
            "refused a request from {}: missing or invalid bearer token",
            peer_of(parts.extensions.get::<Reached>().copied())
        );
        Err((
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            axum::Json(json!({"error": {"code": 401, "status": "UNAUTHENTICATED",
                "message": "missing or invalid bearer token — send Authorization: Bearer <token>"}})),
        )
            .into_response())
    }
}

/// The request's body, whole and bounded (`max_body`, `body_stall`): a body over the bound or
/// stalled is refused and its connection closed.
struct Bounded(Bytes);

impl axum::extract::FromRequest<At> for Bounded {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, at: &At) -> Result<Bounded, Response> {
        let peer = peer_of(req.extensions().get::<Reached>().copied());
        match read_body(req.into_body(), at.sv.max_body, at.sv.body_stall).await {
            Ok(b) => Ok(Bounded(b)),
            Err((status, why)) => {
                tracing::warn!("refused a request from {peer}: {why}");
                let e = A2aError::new(wire::INVALID_REQUEST, format!("Invalid Request: {why}"));
                let mut r = (status, axum::Json(e.rest())).into_response();
                r.headers_mut().insert(
                    header::CONNECTION,
                    header::HeaderValue::from_static("close"),
                );
                Err(r)
            }
        }
    }
}

impl At {
    fn req<'a>(&'a self, owner: &'a Owner) -> Req<'a> {
        Req {
            sv: &self.sv,
            agent: &self.agent,
            owner: &owner.0,
        }
    }
}

async fn rpc(
    State(at): State<At>,
    owner: Owner,
    headers: HeaderMap,
    uri: axum::http::Uri,
    Bounded(body): Bounded,
) -> Response {
    let asked = a2a_mod_proto::asked_version(version_of(&headers, &uri).as_deref());
    at.req(&owner).rpc(&body, asked).await
}

/// `A2A-Version` from the header, else the query parameter of that name.
fn version_of(headers: &HeaderMap, uri: &axum::http::Uri) -> Option<String> {
    if let Some(v) = headers.get("a2a-version") {
        return Some(String::from_utf8_lossy(v.as_bytes()).into_owned());
    }
    #[derive(serde::Deserialize)]
    struct Q {
        #[serde(rename = "A2A-Version")]
        version: Option<String>,
    }
    Query::<Q>::try_from_uri(uri).ok().and_then(|q| q.0.version)
}

/// The version an HTTP+JSON request asks for, checked first: one serve does not speak is
/// refused with `VersionNotSupported` (HTTP 400) before anything else is read.
struct Asked;

impl axum::extract::FromRequestParts<At> for Asked {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &At,
    ) -> Result<Asked, Response> {
        match a2a_mod_proto::asked_version(version_of(&parts.headers, &parts.uri).as_deref()) {
            Ok(_) => Ok(Asked),
            Err(e) => Err(rest_error(&e)),
        }
    }
}

/// `POST …/message:send` and `…/message:stream`.
async fn send_rest(
    State(at): State<At>,
    owner: Owner,
    _: Asked,
    Bounded(body): Bounded,
    w: Wire,
    op: Op,
) -> Response {
    // v0.3 REST names the message `request` (`Params` reads either).
    let p = match json_object(&body) {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    at.req(&owner).rest(w, op, &p).await
}

/// The query parameters of `GET …/tasks` and `GET …/tasks/{id}`, percent-decoded: ListTasks'
/// passed on as JSON-RPC would carry them (and checked there), GetTask's history length read
/// as a number or left unset.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskQuery {
    context_id: Option<String>,
    page_size: Option<String>,
    history_length: Option<String>,
    status: Option<String>,
    page_token: Option<String>,
    status_timestamp_after: Option<String>,
    include_artifacts: Option<String>,
}

fn query(q: Result<Query<TaskQuery>, QueryRejection>) -> TaskQuery {
    q.map(|Query(q)| q).unwrap_or_default()
}

fn number(v: Option<&String>) -> Option<u64> {
    v.and_then(|n| n.parse::<u64>().ok())
}

async fn list_rest(
    State(at): State<At>,
    owner: Owner,
    _: Asked,
    q: Result<Query<TaskQuery>, QueryRejection>,
    w: Wire,
) -> Response {
    let q = query(q);
    // As JSON-RPC would carry them: a number or a flag as such, anything else as the text it is
    // (which ListTasks then refuses, saying what it takes).
    let typed = |s: String| match (s.parse::<i64>(), s.as_str()) {
        (Ok(n), _) => Value::from(n),
        (_, "true") => Value::Bool(true),
        (_, "false") => Value::Bool(false),
        _ => Value::String(s),
    };
    let mut p = serde_json::Map::new();
    for (k, v) in [
        ("contextId", q.context_id.map(Value::String)),
        ("status", q.status.map(Value::String)),
        ("pageToken", q.page_token.map(Value::String)),
        (
            "statusTimestampAfter",
            q.status_timestamp_after.map(Value::String),
        ),
        ("pageSize", q.page_size.map(typed)),
        ("historyLength", q.history_length.map(typed)),
        ("includeArtifacts", q.include_artifacts.map(typed)),
    ] {
        if let Some(v) = v {
            p.insert(k.into(), v);
        }
    }
    at.req(&owner).rest(w, Op::List, &Value::Object(p)).await
}

/// `…/tasks/{id}/pushNotificationConfigs[/{configId}]`: a task's push notification configs,
/// the ids from the path in the words of `w`'s dialect (`push::Target`).
async fn push_rest(
    State(at): State<At>,
    owner: Owner,
    _: Asked,
    Path(ids): Path<Vec<(String, String)>>,
    w: Wire,
    op: Op,
) -> Response {
    at.req(&owner)
        .rest(w, op, &Value::Object(push_ids(w, ids, None)))
        .await
}

/// `POST …/tasks/{id}/pushNotificationConfigs`: the body is the config, the task the path's.
async fn push_create_rest(
    State(at): State<At>,
    owner: Owner,
    _: Asked,
    Path(ids): Path<Vec<(String, String)>>,
    w: Wire,
    Bounded(body): Bounded,
) -> Response {
    let config = match json_object(&body) {
        Ok(Value::Object(o)) => o,
        Ok(_) => serde_json::Map::new(),
        Err(e) => return rest_error(&e),
    };
    let p = Value::Object(push_ids(w, ids, Some(config)));
    at.req(&owner).rest(w, Op::CreatePushConfig, &p).await
}

/// The params of a push config request over HTTP+JSON: the body (a create's config, else
/// nothing) with the ids of the path, named as `w`'s dialect names them: a create's task is
/// `taskId` in both, a get's, list's or delete's is v0.3's `id` (`push::Target`).
fn push_ids(
    w: Wire,
    ids: Vec<(String, String)>,
    body: Option<serde_json::Map<String, Value>>,
) -> serde_json::Map<String, Value> {
    let (task, config) = match (&body, w.dialect) {
        (Some(_), _) | (None, Dialect::V1) => ("taskId", "id"),
        (None, Dialect::V03) => ("id", "pushNotificationConfigId"),
    };
    let mut p = body.unwrap_or_default();
    for (k, v) in ids {
        let key = if k == "task" { task } else { config };
        p.insert(key.into(), Value::String(v));
    }
    p
}

/// `GET …/tasks/{id}`, `POST …/tasks/{id}:cancel`, `GET|POST …/tasks/{id}:subscribe`.
async fn task_rest(
    State(at): State<At>,
    owner: Owner,
    _: Asked,
    Path(task): Path<String>,
    q: Result<Query<TaskQuery>, QueryRejection>,
    w: Wire,
    posted: bool,
) -> Response {
    let (id, verb) = task
        .split_once(':')
        .map_or((task.as_str(), None), |(i, v)| (i, Some(v)));
    let mut p = json!({"id": id});
    let op = match (posted, verb) {
        (false, None) => {
            if let Some(n) = number(query(q).history_length.as_ref()) {
                p["historyLength"] = n.into();
            }
            Op::Get
        }
        (true, Some("cancel")) => Op::Cancel,
        (_, Some("subscribe")) => Op::Subscribe,
        _ => return no_route().await,
    };
    at.req(&owner).rest(w, op, &p).await
}

/// A REST body: a JSON object (an empty body reads as `{}`).
fn json_object(body: &Bytes) -> Result<Value, A2aError> {
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

impl Req<'_> {
    /// Logs a refusal by a bound, naming the token's variable (never the token).
    fn refused(&self, e: A2aError) -> A2aError {
        tracing::warn!("refused a stream for {}: {}", self.owner, e.message);
        e
    }

    async fn rpc(&self, body: &Bytes, asked: Result<Option<Dialect>, A2aError>) -> Response {
        // A v1 error carries its ErrorInfo in `data` (a v0.3 method's is plain, as 0.3 wrote it).
        let reply = |id: &Value, e: A2aError| axum::Json(e.rpc_v1(id)).into_response();
        let Ok(body) = serde_json::from_slice::<Value>(body) else {
            return reply(
                &Value::Null,
                A2aError::new(wire::PARSE_ERROR, "Parse error: the body is not JSON"),
            );
        };
        let req = match a2a_mod_proto::envelope::request(&body) {
            Ok(r) => r,
            Err((id, e)) => return reply(&id, e),
        };
        let id = req.id;
        if let Err(e) = asked {
            return reply(&id, e);
        }
        let Some((op, dialect)) = Op::from_rpc(req.method).filter(|(m, _)| served(*m)) else {
            let shown = a2a_mod_core::text::one_line(req.method, 64);
            return reply(
                &id,
                A2aError::new(wire::METHOD_NOT_FOUND, format!("Method not found: {shown}")),
            );
        };
        let empty = json!({});
        let params = req.params.unwrap_or(&empty);
        let w = Wire {
            dialect,
            binding: Binding::JsonRpc,
        };
        match self.op(w, op, params).await {
            Answer::Value(v) => axum::Json(wire::rpc_result(&id, v)).into_response(),
            Answer::Error(e) if dialect == Dialect::V03 => axum::Json(e.rpc(&id)).into_response(),
            Answer::Error(e) => reply(&id, e),
            Answer::Stream(reader) => crate::stream::response(reader, w, Some(id)),
        }
    }

    /// An operation that came over HTTP+JSON.
    async fn rest(&self, w: Wire, op: Op, params: &Value) -> Response {
        match self.op(w, op, params).await {
            Answer::Value(v) => axum::Json(v).into_response(),
            Answer::Error(e) => rest_error(&e),
            Answer::Stream(reader) => crate::stream::response(reader, w, None),
        }
    }

    /// One operation, whichever binding it came by.
    /// SubscribeToTask of a task its owner may see: a reader of its events while it runs.
    fn subscribe(&self, t: &crate::task::Task) -> Answer {
        // Any task a run may still change: one waiting for an answer too (its stream goes on
        // through the answer to the end).
        match (self.sv.engine.live(&t.id)).filter(|_| crate::task::running(t.state)) {
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
        let raw = params;
        let params = Params::read(params);
        let id = || {
            wire::checked_id(&params.id, "params.id")?.ok_or_else(|| {
                A2aError::new(
                    wire::INVALID_PARAMS,
                    "Invalid params: params.id (the task id) is required",
                )
            })
        };
        match op {
            Op::Send | Op::Stream => {
                let read = params.message.map(|m| {
                    let mut m = wire::read_message(w, m)?;
                    if let Some(c) = params.push.clone() {
                        let now = a2a_mod_os::env::now_ms();
                        m.push = Some(crate::push::config_of(w, c, "", &self.sv.push, now)?);
                    }
                    Ok(m)
                });
                let msg = match read {
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
                // Blocking is the default in both versions (the SDKs treat unset as blocking).
                let t = if params.non_blocking() {
                    live.snapshot()
                } else {
                    Engine::answered(&live).await
                };
                let hl = params.history_length;
                Answer::Value(wire::send_result(w, wire::task(w, &t, hl)))
            }
            Op::Get => {
                let hl = params.history_length;
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
            Op::ExtendedCard => Answer::Error(A2aError::new(
                wire::METHOD_NOT_FOUND,
                "Method not found: serve has no extended agent card",
            )),
            Op::CreatePushConfig => self.create_push(w, raw).into(),
            Op::GetPushConfig | Op::ListPushConfigs | Op::DeletePushConfig => {
                self.push_config(w, op, raw).into()
            }
            Op::List => self.list(w, raw).into(),
        }
    }

    /// CreateTaskPushNotificationConfig: a webhook for one of this token's tasks.
    fn create_push(&self, w: Wire, params: &Value) -> Result<Value, A2aError> {
        let bad = |why: &str| A2aError::new(wire::INVALID_PARAMS, format!("Invalid params: {why}"));
        let c = a2a_mod_proto::push::Config::read(params)
            .ok_or_else(|| bad("params must be a push notification config (taskId, url…)"))?;
        let task = wire::checked_id(&c.task_id, "params.taskId")?
            .ok_or_else(|| bad("params.taskId (the task) is required"))?;
        let now = a2a_mod_os::env::now_ms();
        let c = crate::push::config_of(w, c, &task, &self.sv.push, now)?;
        let c = (self.sv.engine).set_push(self.owner, &self.agent.name, c)?;
        Ok(crate::push::answer(w, &c))
    }

    /// Get, list or delete of a task's webhooks.
    fn push_config(&self, w: Wire, op: Op, params: &Value) -> Result<Value, A2aError> {
        let t = a2a_mod_proto::push::Target::read(w.dialect, params);
        let task = wire::checked_id(&t.task_id, "the task id")?.ok_or_else(|| {
            A2aError::new(
                wire::INVALID_PARAMS,
                "Invalid params: the task id is required",
            )
        })?;
        // A config named after its task when no id is given, as the SDKs name one made so.
        let id = wire::checked_id(&t.id, "the config id")?.unwrap_or_else(|| task.clone());
        let engine = &self.sv.engine;
        let agent = &self.agent.name;
        match op {
            Op::DeletePushConfig => {
                engine.delete_push(self.owner, agent, &task, &id)?;
                Ok(match w.binding {
                    Binding::JsonRpc => Value::Null,
                    Binding::Rest => json!({}),
                })
            }
            Op::ListPushConfigs => {
                let all = engine.pushes(self.owner, agent, &task)?;
                let views: Vec<_> = all.iter().map(crate::push::view).collect();
                Ok(a2a_mod_proto::push::list(w, &views))
            }
            _ => (engine.pushes(self.owner, agent, &task)?)
                .iter()
                .find(|c| c.id == id)
                .map(|c| crate::push::answer(w, c))
                .ok_or_else(|| {
                    A2aError::new(
                        wire::TASK_NOT_FOUND,
                        format!("Push notification config not found: {id} of task {task}"),
                    )
                }),
        }
    }

    /// ListTasks: a page of this token's tasks at the agent, the most recently changed first.
    fn list(&self, w: Wire, params: &Value) -> Result<Value, A2aError> {
        let q = ListQuery::read(params)?;
        let bad = |why: &str| A2aError::new(wire::INVALID_PARAMS, format!("Invalid params: {why}"));
        let context = wire::checked_id(&q.context_id, "params.contextId")?;
        let updated_after_ms = match &q.updated_after {
            None => None,
            Some(t) => Some(unix_ms(t).ok_or_else(|| {
                bad("statusTimestampAfter must be an RFC 3339 time (2026-01-31T09:00:00Z)")
            })?),
        };
        let after = match &q.page_token {
            None => None,
            Some(t) => Some(page_cursor(t).ok_or_else(|| {
                bad("pageToken is not one this server gave — leave it out for the first page")
            })?),
        };
        let state = q.state.map(|s| s.as_str());
        let f = ListFilter {
            context_id: context.as_deref(),
            state,
            updated_after_ms,
            after: after.as_ref().map(|(ms, id)| (*ms, id.as_str())),
        };
        let page = (self.sv.engine).list(self.owner, &self.agent.name, &f, q.page_size)?;
        Ok(wire::list(
            w,
            &wire::Page {
                tasks: &page.tasks,
                page_size: q.page_size,
                total: page.total,
                next_token: (page.next)
                    .map(|(ms, id)| page_token(ms, &id))
                    .unwrap_or_default(),
                history: q.history_length,
                include_artifacts: q.include_artifacts,
            },
        ))
    }
}

/// RFC 3339 as Unix milliseconds.
fn unix_ms(t: &str) -> Option<i64> {
    let at = time::OffsetDateTime::parse(t.trim(), &time::format_description::well_known::Rfc3339)
        .ok()?;
    i64::try_from(at.unix_timestamp_nanos() / 1_000_000).ok()
}

/// A next page's token: where it starts (the last task's `updated_ms` and id), opaque to the
/// client; [`page_cursor`] reads it back.
fn page_token(ms: i64, id: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{ms}:{id}"))
}

fn page_cursor(token: &str) -> Option<(i64, String)> {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim())
        .ok()?;
    let (ms, id) = std::str::from_utf8(&raw).ok()?.split_once(':')?;
    let ms = ms.parse().ok()?;
    a2a_mod_core::bounds::plain_id(id).then(|| (ms, id.to_string()))
}

/// The methods serve answers (an extended card it has not).
fn served(m: Op) -> bool {
    m != Op::ExtendedCard
}

fn rest_error(e: &A2aError) -> Response {
    let status = if e.code == SERVER_BUSY {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::from_u16(e.http().0).unwrap_or(StatusCode::BAD_REQUEST)
    };
    (status, axum::Json(e.rest())).into_response()
}

async fn no_route() -> Response {
    rest_error(&A2aError::new(
        wire::METHOD_NOT_FOUND,
        "no such A2A route — see the agent card for the endpoints",
    ))
}
