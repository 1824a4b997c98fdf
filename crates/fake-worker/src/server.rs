//! The fake worker's HTTP side: routes, auth, the JSON-RPC dispatcher and the request log.
//!
//! Never panics on a request: every malformed input becomes a JSON-RPC error or an HTTP status.
//! Locks are std mutexes held only for synchronous work, never across an await.

use super::script::{HistoryEntry, Script, Snapshot, TaskRecord};
use super::wire::{self, CardAuth, Dialect};
use crate::options::{FakeWorkerOptions, RequestEvent, StreamMode};
use a2a_mod_os::secret::Secret;
use a2a_mod_proto::Method;
use a2a_mod_proto::params::Params;
use a2a_mod_proto::read::{Message, Part};
use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub(crate) struct Shared {
    v03_only: bool,
    bearer: Option<Secret>,
    oauth_ttl: Option<Duration>,
    oauth_claimed_ttl: Option<u64>,
    card: Value,
    started: Instant,
    start_unix_ms: i64,
    tasks: Mutex<HashMap<String, TaskRecord>>,
    events: Mutex<Vec<RequestEvent>>,
    log: Mutex<Option<std::fs::File>>,
    /// OAuth access token → when it expires (`None`: a ttl too large for `Instant` never expires).
    tokens: Mutex<HashMap<String, Option<Instant>>>,
    shutdown: watch::Receiver<bool>,
    stream: StreamMode,
    subscribe_faults_only: bool,
    cancel_on_disconnect: bool,
    /// Bumped on every change a clock does not make (a follow-up, a cancel), so open streams
    /// look again.
    changes: watch::Sender<u64>,
    /// `flood` updates sent, on every stream.
    flooded: std::sync::atomic::AtomicUsize,
}

impl Shared {
    pub(crate) fn flooded(&self) -> usize {
        self.flooded.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How a stream call behaves: the mode, or `On` for a send when faults are for subscriptions.
    fn stream_mode(&self, subscribe: bool) -> StreamMode {
        if self.subscribe_faults_only && !subscribe && self.stream != StreamMode::Off {
            StreamMode::On
        } else {
            self.stream
        }
    }
}

/// A poisoned lock only means another request panicked mid-update; the data is still usable for a
/// fake, and refusing every later request would hide the first failure.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// When a request arrived: unix ms for the log, ms since start for the task model.
#[derive(Clone, Copy)]
struct Arrival {
    unix_ms: i64,
    since_ms: u64,
}

impl Shared {
    pub(crate) fn new(
        base_url: &str,
        opts: &FakeWorkerOptions,
        log: Option<std::fs::File>,
        shutdown: watch::Receiver<bool>,
    ) -> Shared {
        // Python a2a-sdk serves JSON-RPC at the root by default; the card points there.
        let rpc_url = format!("{base_url}/");
        let token_url = format!("{base_url}/oauth/token");
        let auth = CardAuth {
            bearer: opts.bearer_token.is_some(),
            oauth: opts.oauth_ttl.is_some(),
        };
        let mut card = if opts.v03_only {
            wire::v03_card(&rpc_url, &token_url, auth)
        } else {
            wire::hybrid_card(&rpc_url, &token_url, auth)
        };
        card["capabilities"]["streaming"] = json!(opts.stream != StreamMode::Off);
        Shared {
            v03_only: opts.v03_only,
            bearer: opts.bearer_token.clone().map(Secret::new),
            oauth_ttl: opts.oauth_ttl,
            oauth_claimed_ttl: opts.oauth_claimed_ttl,
            card,
            started: Instant::now(),
            start_unix_ms: a2a_mod_os::env::now_ms(),
            tasks: Mutex::new(HashMap::new()),
            events: Mutex::new(Vec::new()),
            log: Mutex::new(log),
            tokens: Mutex::new(HashMap::new()),
            shutdown,
            stream: opts.stream,
            subscribe_faults_only: opts.subscribe_faults_only,
            cancel_on_disconnect: opts.cancel_on_disconnect,
            changes: watch::channel(0).0,
            flooded: Default::default(),
        }
    }

    pub(crate) fn events(&self) -> Vec<RequestEvent> {
        lock(&self.events).clone()
    }

    fn arrival(&self) -> Arrival {
        Arrival {
            unix_ms: a2a_mod_os::env::now_ms(),
            since_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }
    }

    fn record(
        &self,
        at: Arrival,
        method: &str,
        task_id: Option<String>,
        auth: &str,
        status: u16,
        rpc_error: Option<i64>,
    ) {
        let ev = RequestEvent {
            at_ms: at.unix_ms,
            since_start_ms: at.since_ms,
            method: method.to_string(),
            task_id,
            auth: Some(auth.to_string()),
            status,
            rpc_error,
        };
        if let Some(file) = lock(&self.log).as_mut()
            && let Ok(mut line) = serde_json::to_string(&ev)
        {
            line.push('\n');
            // The log is a test aid: a failed write must not fail the request.
            let _ = file.write_all(line.as_bytes()).and_then(|()| file.flush());
        }
        lock(&self.events).push(ev);
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        if self.bearer.is_none() && self.oauth_ttl.is_none() {
            return true;
        }
        let Some(token) = bearer_of(headers) else {
            return false;
        };
        if self.bearer.as_ref().is_some_and(|b| b.expose() == token) {
            return true;
        }
        if self.oauth_ttl.is_some() {
            let now = Instant::now();
            let mut tokens = lock(&self.tokens);
            tokens.retain(|_, expires| expires.is_none_or(|at| at > now));
            return tokens.contains_key(token);
        }
        false
    }
}

pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let mut app = Router::new()
        .route("/", post(rpc))
        .route("/.well-known/agent-card.json", get(card))
        .route("/.well-known/agent.json", get(card));
    if shared.oauth_ttl.is_some() {
        app = app.route("/oauth/token", post(token));
    }
    // axum's default 2 MB body cap would refuse a send with a few files (`send` caps a send at
    // 25 MiB by default, ~34 MiB as base64 JSON).
    app.layer(axum::extract::DefaultBodyLimit::max(64 << 20))
        .with_state(shared)
}

fn bearer_of(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn auth_kind(headers: &HeaderMap) -> &'static str {
    match headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
    {
        None if headers.contains_key(header::AUTHORIZATION) => "other",
        None => "none",
        Some((s, _)) if s.eq_ignore_ascii_case("bearer") => "bearer",
        Some((s, _)) if s.eq_ignore_ascii_case("basic") => "basic",
        Some(_) => "other",
    }
}

fn unauthorized(body: Value) -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        axum::Json(body),
    )
        .into_response()
}

async fn card(State(sh): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let at = sh.arrival();
    sh.record(at, "card", None, auth_kind(&headers), 200, None);
    axum::Json(sh.card.clone()).into_response()
}

/// `POST /oauth/token`: RFC 6749 client credentials, any client accepted (see the module doc).
async fn token(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let at = sh.arrival();
    let auth = auth_kind(&headers);
    let form = parse_form(&body);
    let field = |k: &str| {
        form.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    let (status, reply) = if auth != "basic" && field("client_id").is_none() {
        (StatusCode::UNAUTHORIZED, json!({"error": "invalid_client"}))
    } else if field("grant_type") != Some("client_credentials") {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": "unsupported_grant_type"}),
        )
    } else {
        // Always set here: the route exists only when oauth_ttl is (see `router`).
        let ttl = sh.oauth_ttl.unwrap_or_default();
        let token = format!(
            "fake-{:016x}{:016x}",
            a2a_mod_os::ids::random_u64(),
            a2a_mod_os::ids::random_u64()
        );
        lock(&sh.tokens).insert(token.clone(), Instant::now().checked_add(ttl));
        let expires_in = sh.oauth_claimed_ttl.unwrap_or(
            ttl.as_secs()
                .saturating_add(u64::from(ttl.subsec_nanos() > 0)),
        );
        (
            StatusCode::OK,
            json!({"access_token": token, "token_type": "Bearer", "expires_in": expires_in.max(1)}),
        )
    };
    sh.record(at, "token", None, auth, status.as_u16(), None);
    let mut resp = (status, axum::Json(reply)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Basic"),
        );
    }
    resp
}

/// `application/x-www-form-urlencoded` pairs, percent-decoded; malformed escapes stay literal.
fn parse_form(body: &[u8]) -> Vec<(String, String)> {
    fn decode(s: &str) -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < bytes.len() => {
                    match std::str::from_utf8(&bytes[i + 1..i + 3])
                        .ok()
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                    {
                        Some(b) => {
                            out.push(b);
                            i += 2;
                        }
                        None => out.push(b'%'),
                    }
                }
                b => out.push(b),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    String::from_utf8_lossy(body)
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(kv), String::new()),
        })
        .collect()
}

/// What the dispatcher decided.
enum Outcome {
    Reply {
        body: Value,
        task_id: Option<String>,
        rpc_error: Option<i64>,
    },
    /// A `silent` task: hold the request open until the worker stops.
    Hang { task_id: String },
    /// A stream call: answer the task's events over SSE.
    Stream {
        d: Dialect,
        id: Value,
        task_id: String,
        subscribe: bool,
    },
    /// An HTTP status with no JSON-RPC body (a worker whose stream route is missing).
    Status(StatusCode),
}

fn error(id: &Value, d: Option<Dialect>, code: i64, message: &str) -> Outcome {
    Outcome::Reply {
        body: wire::rpc_error(id, d, code, message),
        task_id: None,
        rpc_error: Some(code),
    }
}

impl Outcome {
    /// Names the task in the log entry of a refused request.
    fn about(mut self, task: &str) -> Outcome {
        if let Outcome::Reply { task_id, .. } = &mut self {
            *task_id = Some(task.to_string());
        }
        self
    }
}

/// The task a request names, for the log even when it is refused.
fn task_hint(params: Option<&Value>) -> Option<String> {
    let p = Params::read(params?);
    let in_message =
        || Message::read(p.message?).and_then(|m| m.task_id.text().map(str::to_string));
    p.id.text().map(str::to_string).or_else(in_message)
}

async fn rpc(State(sh): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let at = sh.arrival();
    let auth = auth_kind(&headers);
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let named = parsed.as_ref().map(a2a_mod_proto::envelope::named);
    let method =
        (named.as_ref().and_then(|n| n.method.clone())).unwrap_or_else(|| "invalid".to_string());
    if !sh.authorized(&headers) {
        let hint = task_hint(named.and_then(|n| n.params));
        sh.record(at, &method, hint, auth, 401, None);
        return unauthorized(
            json!({"error": "unauthorized", "message": "missing or invalid bearer token"}),
        );
    }
    match dispatch(&sh, at, &uri, &headers, parsed) {
        Outcome::Reply {
            body,
            task_id,
            rpc_error,
        } => {
            sh.record(at, &method, task_id, auth, 200, rpc_error);
            axum::Json(body).into_response()
        }
        Outcome::Hang { task_id } => {
            sh.record(at, &method, Some(task_id), auth, 0, None);
            let mut stop = sh.shutdown.clone();
            // Err = the worker is gone, which also ends the hang.
            let _ = stop.wait_for(|s| *s).await;
            (StatusCode::SERVICE_UNAVAILABLE, "fake worker stopped").into_response()
        }
        Outcome::Stream {
            d,
            id,
            task_id,
            subscribe,
        } => {
            sh.record(at, &method, Some(task_id.clone()), auth, 200, None);
            let events = stream_events(&sh, d, id, task_id, subscribe);
            axum::response::sse::Sse::new(events).into_response()
        }
        Outcome::Status(status) => {
            sh.record(at, &method, None, auth, status.as_u16(), None);
            (status, "no such route").into_response()
        }
    }
}

/// Where an open stream is.
struct Streaming {
    sh: Arc<Shared>,
    d: Dialect,
    id: Value,
    task_id: String,
    subscribe: bool,
    /// The (state, artifacts as JSON) last told; `None` before the first event.
    told: Option<(a2a_mod_core::task::TaskState, Option<String>)>,
    changes: watch::Receiver<u64>,
    done: bool,
    /// `flood` updates sent so far, and when the first went.
    flooded: usize,
    flood_began: Option<tokio::time::Instant>,
}

/// `flood` updates sent per step (the stream is read as fast as the client takes them).
const FLOOD_BATCH: usize = 1024;

type SseEvent = Result<axum::response::sse::Event, std::convert::Infallible>;

/// The task's events as the worker's clock and follow-ups make them: the whole task first (a
/// send's in `submitted`, like the SDKs), then artifact and status updates as it changes, closed
/// once it ends or waits for input. `StreamMode`'s faults bend this.
fn stream_events(
    sh: &Arc<Shared>,
    d: Dialect,
    id: Value,
    task_id: String,
    subscribe: bool,
) -> impl futures::Stream<Item = SseEvent> + Send + 'static {
    use futures::StreamExt as _;
    let st = Streaming {
        sh: sh.clone(),
        d,
        id,
        task_id,
        subscribe,
        told: None,
        changes: sh.changes.subscribe(),
        done: false,
        flooded: 0,
        flood_began: None,
    };
    futures::stream::unfold(st, |mut st| async move {
        if st.done {
            return None;
        }
        let events = st.step().await;
        Some((events, st))
    })
    .flat_map(futures::stream::iter)
}

/// `cancel_on_disconnect` (Mastra's way): the stream of the send that made a task is gone
/// (the client closed it, or went away) while the task is live, and the task is canceled.
impl Drop for Streaming {
    fn drop(&mut self) {
        if self.subscribe || !self.sh.cancel_on_disconnect {
            return;
        }
        let now = self.sh.arrival().since_ms;
        let mut tasks = lock(&self.sh.tasks);
        if let Some(rec) = tasks.get_mut(&self.task_id)
            && rec.snapshot(now).state.is_live()
            && rec.cancel(now).is_ok()
        {
            self.sh.changes.send_modify(|n| *n += 1);
        }
    }
}

impl Streaming {
    fn data(v: &Value) -> SseEvent {
        Ok(axum::response::sse::Event::default().data(v.to_string()))
    }

    /// The next batch of a flood's no-op updates (`flood`: how many in all, at what rate a second),
    /// paced: the batch waits for its time.
    async fn flood_batch(&mut self, task: &Value, flood: (usize, Option<u64>)) -> Vec<SseEvent> {
        let began = *self
            .flood_began
            .get_or_insert_with(tokio::time::Instant::now);
        if let Some(rate) = flood.1 {
            let due = Duration::from_micros(self.flooded as u64 * 1_000_000 / rate);
            tokio::time::sleep_until(began + due).await;
        }
        let u = wire::rpc_result(&self.id, wire::status_update(self.d, task, false));
        let line = u.to_string();
        let n = FLOOD_BATCH.min(flood.0 - self.flooded);
        self.flooded += n;
        (self.sh.flooded).fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        (0..n)
            .map(|_| Ok(axum::response::sse::Event::default().data(line.clone())))
            .collect()
    }

    /// The next events to send (empty when the stream ends without another).
    async fn step(&mut self) -> Vec<SseEvent> {
        let mode = self.sh.stream_mode(self.subscribe);
        if mode == StreamMode::Mute {
            let mut stop = self.sh.shutdown.clone();
            let _ = stop.wait_for(|s| *s).await;
            self.done = true;
            return Vec::new();
        }
        loop {
            self.changes.borrow_and_update();
            let now = self.sh.arrival().since_ms;
            let (snap, wake_at, task, chunks, flood) = {
                let tasks = lock(&self.sh.tasks);
                let Some(rec) = tasks.get(&self.task_id) else {
                    self.done = true;
                    return Vec::new();
                };
                let snap = if self.told.is_none() && !self.subscribe {
                    rec.submitted()
                } else {
                    rec.snapshot(now)
                };
                let wake_at = rec.wakes_at(now).filter(|_| snap.state.is_live());
                let task = wire::task(self.d, rec, &snap, Some(0), self.sh.start_unix_ms);
                (snap, wake_at, task, rec.chunks(), rec.flood())
            };
            let arts = task.get("artifacts").map(Value::to_string);
            let now_told = (snap.state, arts.clone());
            let mut out = Vec::new();
            match &self.told {
                None => {
                    out.push(Self::data(&wire::rpc_result(
                        &self.id,
                        wire::send_result(self.d, task),
                    )));
                    match mode {
                        StreamMode::Drop => self.done = true,
                        StreamMode::Garbage => {
                            out.push(Ok(
                                axum::response::sse::Event::default().data("this is not JSON {")
                            ));
                            self.done = true;
                        }
                        _ => {}
                    }
                }
                Some(before) if *before != now_told => {
                    if arts.is_some() && before.1 != arts {
                        for u in wire::artifact_updates(self.d, &task, chunks) {
                            out.push(Self::data(&wire::rpc_result(&self.id, u)));
                        }
                    }
                    let last = !snap.state.is_live();
                    let u = wire::status_update(self.d, &task, last);
                    out.push(Self::data(&wire::rpc_result(&self.id, u)));
                }
                Some(_) if self.flooded < flood.0 && snap.state.is_live() => {
                    // Not a change: the state told stays what it was.
                    return self.flood_batch(&task, flood).await;
                }
                Some(_) => {}
            }
            if !out.is_empty() {
                if !snap.state.is_live() {
                    self.done = true;
                }
                self.told = Some(now_told);
                return out;
            }
            let mut stop = self.sh.shutdown.clone();
            let sleep = wake_at.map(|at| Duration::from_millis(at.saturating_sub(now)));
            tokio::select! {
                _ = async {
                    match sleep {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = self.changes.changed() => {}
                _ = stop.wait_for(|s| *s) => {
                    self.done = true;
                    return Vec::new();
                }
            }
        }
    }
}

/// `A2A-Version` from the header, else the `A2A-Version` query parameter (docs/a2a.md).
fn requested_version<'a>(uri: &'a Uri, headers: &'a HeaderMap) -> Option<&'a str> {
    if let Some(v) = headers.get("a2a-version").and_then(|v| v.to_str().ok()) {
        return Some(v.trim());
    }
    uri.query()?
        .split('&')
        .find_map(|kv| kv.strip_prefix("A2A-Version="))
}

fn is_v1(version: Option<&str>) -> bool {
    version.is_some_and(|v| v == "1" || v.starts_with("1."))
}

fn dispatch(
    sh: &Shared,
    at: Arrival,
    uri: &Uri,
    headers: &HeaderMap,
    parsed: Option<Value>,
) -> Outcome {
    let Some(req) = parsed else {
        return error(
            &Value::Null,
            None,
            wire::PARSE_ERROR,
            "Parse error: the body is not JSON",
        );
    };
    let (id, method, params) = match a2a_mod_proto::envelope::request(&req) {
        Ok(r) => (r.id, r.method, r.params),
        Err((id, e)) => return error(&id, None, e.code, &e.message),
    };
    let empty = Value::Object(Map::new());
    let params = params.unwrap_or(&empty);
    let (op, d) = match dialect(sh, method, &id, requested_version(uri, headers)) {
        Ok(d) => d,
        Err(refused) => return refused,
    };
    match op {
        Method::Stream => match send(sh, at, d, &id, params) {
            Outcome::Reply {
                task_id: Some(task_id),
                rpc_error: None,
                ..
            } => Outcome::Stream {
                d,
                id,
                task_id,
                subscribe: false,
            },
            refused => refused,
        },
        Method::Subscribe => subscribe(sh, at, d, id, params),
        Method::Send => send(sh, at, d, &id, params),
        Method::Get => get_or_cancel(sh, at, d, &id, params, false),
        Method::List => list(sh, at, d, &id, params),
        Method::Cancel => get_or_cancel(sh, at, d, &id, params, true),
        // `dialect` refuses what this worker does not serve.
        _ => error(&id, Some(d), wire::METHOD_NOT_FOUND, "Method not found"),
    }
}

/// The dialect of `method` as this worker serves it, or the refusal: a method it does not serve,
/// a version header that does not match, streaming it refuses.
fn dialect(
    sh: &Shared,
    method: &str,
    id: &Value,
    version: Option<&str>,
) -> Result<(Method, Dialect), Outcome> {
    let streaming = sh.stream != StreamMode::Off;
    let known = Method::from_rpc(method).filter(|&(m, d)| match (m, d) {
        (Method::Send | Method::Get | Method::Cancel | Method::List, Dialect::V1) => !sh.v03_only,
        (Method::Stream | Method::Subscribe, Dialect::V1) => !sh.v03_only && streaming,
        (Method::Stream | Method::Subscribe, Dialect::V03) => streaming,
        (Method::Send | Method::Get | Method::Cancel, Dialect::V03) => true,
        _ => false,
    });
    let Some((op, d)) = known else {
        return Err(error(
            id,
            None,
            wire::METHOD_NOT_FOUND,
            &format!("Method not found: {method}"),
        ));
    };
    if d == Dialect::V1 && !is_v1(version) {
        // The Python v1 handler treats a missing header as 0.3 and refuses v1 methods.
        let v = version.unwrap_or("0.3");
        return Err(error(
            id,
            Some(d),
            wire::VERSION_NOT_SUPPORTED,
            &format!("A2A version '{v}' is not supported for {method}"),
        ));
    }
    if d == Dialect::V03 && !sh.v03_only && is_v1(version) {
        let v = version.unwrap_or_default();
        return Err(error(
            id,
            Some(d),
            wire::INTERNAL_ERROR,
            &format!("version '{v}' is not supported by this handler"),
        ));
    }
    if op.streams() {
        let subscribe = op == Method::Subscribe;
        match sh.stream_mode(subscribe) {
            StreamMode::Http404 => return Err(Outcome::Status(StatusCode::NOT_FOUND)),
            StreamMode::RpcError => {
                return Err(error(
                    id,
                    Some(d),
                    wire::UNSUPPORTED_OPERATION,
                    "Unsupported operation: streaming is not served",
                ));
            }
            _ => {}
        }
    }
    Ok((op, d))
}

/// The message's text and id, checked against the dialect's shape as the SDKs check it
/// (`a2a_mod_proto::params::dialect_fault`): a client sending v0.3 shapes to a v1 method (or the
/// reverse) gets `-32602`.
fn read_message(d: Dialect, m: &Value) -> Result<(Message, String, String), String> {
    if let Some(fault) = a2a_mod_proto::params::dialect_fault(d, m) {
        return Err(fault);
    }
    let msg = Message::read(m).ok_or("params.message must be an object")?;
    let message_id = msg.message_id.text().unwrap_or_default().to_string();
    let texts: Vec<&str> = (msg.parts.iter())
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let text = texts.join("\n");
    Ok((msg, message_id, text))
}

fn send(sh: &Shared, at: Arrival, d: Dialect, id: &Value, params: &Value) -> Outcome {
    let params = Params::read(params);
    let read = match params.message {
        Some(m) => read_message(d, m),
        None => Err("params.message is required".to_string()),
    };
    let (msg, message_id, text) = match read {
        Ok(r) => r,
        Err(why) => {
            let why = format!("Invalid params: {why}");
            return error(id, Some(d), wire::INVALID_PARAMS, &why);
        }
    };
    let non_blocking = params.non_blocking_in(d);
    let hl = params.history_length;
    let entry = HistoryEntry {
        message_id,
        from_agent: false,
        text,
    };
    let mut tasks = lock(&sh.tasks);
    let asked_elsewhere = (msg.task_id.text())
        .and_then(|t| tasks.get(t))
        .filter(|rec| matches!(rec.script, Script::AskElsewhere(_)))
        .map(|rec| rec.context_id.clone());
    let (rec, snap) = match msg.task_id.text() {
        // A worker that ignores the taskId: the answer starts a new task in the same context.
        Some(_) if asked_elsewhere.is_some() => {
            let task_id = a2a_mod_os::ids::uuid_v4();
            let rec = TaskRecord {
                id: task_id.clone(),
                context_id: asked_elsewhere.unwrap_or_default(),
                script: Script::Echo(format!("you said: {}", entry.text)),
                first: entry,
                created_ms: at.since_ms,
                answer: None,
                canceled_ms: None,
            };
            record_new(&mut tasks, rec, non_blocking, at.since_ms)
        }
        Some(task_id) => {
            let Some(rec) = tasks.get_mut(task_id) else {
                return error(
                    id,
                    Some(d),
                    wire::TASK_NOT_FOUND,
                    &format!("Task not found: {task_id}"),
                )
                .about(task_id);
            };
            let followed = rec.follow_up(at.since_ms, entry);
            sh.changes.send_modify(|n| *n += 1);
            if let Err(state) = followed {
                return error(
                    id,
                    Some(d),
                    wire::INVALID_PARAMS,
                    &format!(
                        "Invalid params: task {task_id} is {state} and takes no follow-up message"
                    ),
                )
                .about(task_id);
            }
            let snap = rec.snapshot(at.since_ms);
            (&*rec, snap)
        }
        None => {
            let task_id = a2a_mod_os::ids::uuid_v4();
            let context_id = (msg.context_id.text())
                .map(str::to_string)
                .unwrap_or_else(a2a_mod_os::ids::uuid_v4);
            let script = script_of(sh, at, &msg, &entry.text, &context_id);
            let rec = TaskRecord {
                id: task_id.clone(),
                context_id,
                script,
                first: entry,
                created_ms: at.since_ms,
                answer: None,
                canceled_ms: None,
            };
            record_new(&mut tasks, rec, non_blocking, at.since_ms)
        }
    };
    let task = wire::task(d, rec, &snap, hl, sh.start_unix_ms);
    Outcome::Reply {
        body: wire::rpc_result(id, wire::send_result(d, task)),
        task_id: Some(rec.id.clone()),
        rpc_error: None,
    }
}

/// What a new task's first message asks the worker to do.
fn script_of(sh: &Shared, at: Arrival, msg: &Message, text: &str, context_id: &str) -> Script {
    let mut script = Script::parse(text);
    if let Script::SlowUntil { unix_ms, words } = script {
        let now_unix = sh.start_unix_ms.saturating_add(at.since_ms as i64);
        let ms = u64::try_from(unix_ms.saturating_sub(now_unix)).unwrap_or(0);
        script = Script::Slow { ms, words };
    }
    // A message of files or data alone is answered with what it held.
    if text.is_empty() && !msg.parts.is_empty() {
        script = Script::Parts(String::new());
    }
    if let Script::Parts(echo) = &mut script {
        *echo = super::echo::summary(msg, context_id);
    }
    script
}

/// A new task kept, and how it looks to the send: just submitted to one that does not wait.
fn record_new(
    tasks: &mut HashMap<String, TaskRecord>,
    rec: TaskRecord,
    non_blocking: bool,
    now_ms: u64,
) -> (&TaskRecord, Snapshot) {
    let rec = tasks.entry(rec.id.clone()).or_insert(rec);
    let snap = if non_blocking {
        rec.submitted()
    } else {
        rec.snapshot(now_ms)
    };
    (&*rec, snap)
}

/// A subscription: to a live task only (subscribing to an ended one is an error, as in the SDKs).
fn subscribe(sh: &Shared, at: Arrival, d: Dialect, id: Value, params: &Value) -> Outcome {
    let params = Params::read(params);
    let Some(task_id) = params.id.text() else {
        return error(
            &id,
            Some(d),
            wire::INVALID_PARAMS,
            "Invalid params: params.id (the task id) is required",
        );
    };
    let tasks = lock(&sh.tasks);
    let Some(rec) = tasks.get(task_id) else {
        return error(
            &id,
            Some(d),
            wire::TASK_NOT_FOUND,
            &format!("Task not found: {task_id}"),
        )
        .about(task_id);
    };
    let state = rec.snapshot(at.since_ms).state;
    if !state.is_live() {
        let why = format!("Unsupported operation: task {task_id} is {state}");
        return error(&id, Some(d), wire::UNSUPPORTED_OPERATION, &why).about(task_id);
    }
    Outcome::Stream {
        d,
        id,
        task_id: task_id.to_string(),
        subscribe: true,
    }
}

/// ListTasks: the tasks of `contextId` (or all), newest first, at most `pageSize` (default 50), as
/// GetTask shows them without history; one page, so `nextPageToken` is empty.
fn list(sh: &Shared, at: Arrival, d: Dialect, id: &Value, params: &Value) -> Outcome {
    let params = Params::read(params);
    let context = params.context_id.text();
    let page = params.page_size.map_or(50, |n| n.clamp(1, 100) as usize);
    let tasks = lock(&sh.tasks);
    let mut mine: Vec<&TaskRecord> = tasks
        .values()
        .filter(|r| context.is_none_or(|c| r.context_id == c))
        .collect();
    mine.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then(b.id.cmp(&a.id)));
    let total = mine.len();
    let listed: Vec<Value> = mine
        .into_iter()
        .take(page)
        .map(|r| wire::task(d, r, &r.snapshot(at.since_ms), Some(0), sh.start_unix_ms))
        .collect();
    let result = serde_json::json!({
        "tasks": listed, "nextPageToken": "", "pageSize": page, "totalSize": total,
    });
    Outcome::Reply {
        body: wire::rpc_result(id, result),
        task_id: None,
        rpc_error: None,
    }
}

fn get_or_cancel(
    sh: &Shared,
    at: Arrival,
    d: Dialect,
    id: &Value,
    params: &Value,
    cancel: bool,
) -> Outcome {
    let params = Params::read(params);
    let Some(task_id) = params.id.text() else {
        return error(
            id,
            Some(d),
            wire::INVALID_PARAMS,
            "Invalid params: params.id (the task id) is required",
        );
    };
    let mut tasks = lock(&sh.tasks);
    let Some(rec) = tasks.get_mut(task_id) else {
        return error(
            id,
            Some(d),
            wire::TASK_NOT_FOUND,
            &format!("Task not found: {task_id}"),
        )
        .about(task_id);
    };
    if rec.script == Script::Silent {
        return Outcome::Hang {
            task_id: task_id.to_string(),
        };
    }
    let canceled = if cancel {
        rec.cancel(at.since_ms)
    } else {
        Ok(())
    };
    if cancel {
        sh.changes.send_modify(|n| *n += 1);
    }
    if let Err(state) = canceled {
        let why = format!("Task cannot be canceled: it is already {state}");
        return error(id, Some(d), wire::TASK_NOT_CANCELABLE, &why).about(task_id);
    }
    let hl = params.history_length;
    let snap = rec.snapshot(at.since_ms);
    Outcome::Reply {
        body: wire::rpc_result(id, wire::task(d, rec, &snap, hl, sh.start_unix_ms)),
        task_id: Some(task_id.to_string()),
        rpc_error: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_decoding() {
        let f = parse_form(b"grant_type=client_credentials&scope=a+b%2Fc&bad=%zz&x");
        assert_eq!(
            f,
            [
                ("grant_type".into(), "client_credentials".into()),
                ("scope".into(), "a b/c".into()),
                ("bad".into(), "%zz".into()),
                ("x".into(), String::new()),
            ]
        );
        assert_eq!(parse_form(b"a=%4"), [("a".into(), "%4".into())]);
    }
}
