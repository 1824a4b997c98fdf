//! A scripted fake of the Anthropic Messages API, so the real Claude Code CLI can run offline in
//! end-to-end tests (`ANTHROPIC_BASE_URL` = `FakeModelApi::url`).
//!
//! It owns: the HTTP server (its own thread and tokio runtime, so plain `#[test]` functions can use
//! it), the SSE encoding of replies, the record of every request, and the `Script` that picks a
//! reply. It accepts any request body (mid-conversation `role:"system"` messages, unknown fields)
//! and never fails a request: `POST /v1/messages[?beta=true]` gets a reply from the script
//! (streamed when the request asks for it), `/v1/messages/count_tokens` a token count, and every
//! other path an empty JSON object.
//!
//! Script semantics: rules are tried in order on each `/v1/messages` request; the first whose
//! matcher holds (and that has not used up its `once`) answers; otherwise the fallback does.
//! Side requests Claude Code makes outside the conversation (no `tools` in the body, e.g. a title
//! or topic query) are answered by the fallback only, so they can't consume a scripted rule.

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One request as the fake received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// 0-based arrival order over all paths.
    pub seq: usize,
    pub at: Instant,
    pub method: String,
    /// Path and query, e.g. `/v1/messages?beta=true`.
    pub path: String,
    /// Header names lower-cased.
    pub headers: BTreeMap<String, String>,
    /// The body as JSON; `Value::Null` when it was empty or not JSON.
    pub body: Value,
    /// Which rule answered (`Rule::name`), `"fallback"`, or `"-"` for non-message paths.
    pub answered_by: String,
}

/// One `tool_result` block of the newest user message, joined with the `tool_use` it answers.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub tool_use_id: String,
    /// Name of the tool from the matching `tool_use` in the conversation, if found.
    pub tool_name: Option<String>,
    /// All text of the result content (string content or text blocks), joined by newlines.
    pub text: String,
    pub is_error: bool,
}

impl Recorded {
    /// A conversation turn to the Messages API (not count_tokens or another path).
    pub fn is_messages(&self) -> bool {
        self.method == "POST"
            && (self.path == "/v1/messages" || self.path.starts_with("/v1/messages?"))
    }

    /// A conversation request of the main loop: it offers tools. Side queries (titles, topic
    /// detection) come without `tools`.
    pub fn is_main_loop(&self) -> bool {
        self.is_messages()
            && self
                .body
                .get("tools")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty())
    }

    /// `X-Claude-Code-Session-Id`.
    pub fn session_id(&self) -> Option<&str> {
        self.headers
            .get("x-claude-code-session-id")
            .map(String::as_str)
    }

    pub fn messages(&self) -> &[Value] {
        self.body
            .get("messages")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// MCP (and other deferred) tool names Claude Code announced so far in its "The following
    /// deferred tools are now available via ToolSearch" system messages. A scripted `tool_use` of
    /// such a tool works without a ToolSearch call first (checked with 2.1.332), but only once the
    /// name is announced: the MCP server connects in the background, so the first request after
    /// start-up may come before it.
    pub fn deferred_tools(&self) -> Vec<String> {
        const MARK: &str = "The following deferred tools are now available via ToolSearch";
        let mut out = Vec::new();
        for m in self.messages() {
            let mut texts = Vec::new();
            collect_text(m.get("content").unwrap_or(&Value::Null), false, &mut texts);
            for t in texts.iter().filter(|t| t.contains(MARK)) {
                // The names follow the explanation, one per line, after the first line break.
                out.extend(
                    t.lines()
                        .skip(1)
                        .map(str::trim)
                        .filter(|l| !l.is_empty() && !l.contains(' '))
                        .map(str::to_owned),
                );
            }
        }
        out
    }

    /// Text blocks of the last `role:"user"` message (what the user typed plus any reminders
    /// Claude Code attached to it); tool_result contents are not included.
    pub fn last_user_text(&self) -> String {
        self.messages()
            .iter()
            .rev()
            .find(|m| role(m) == "user")
            .map(|m| text_blocks(m.get("content").unwrap_or(&Value::Null)))
            .unwrap_or_default()
    }

    /// Messages after the model's last turn: what is new to the model in this request (the user
    /// prompt or tool results, wake-up notifications, `role:"system"` hook context).
    pub fn new_messages(&self) -> &[Value] {
        let msgs = self.messages();
        let start = msgs
            .iter()
            .rposition(|m| role(m) == "assistant")
            .map_or(0, |i| i + 1);
        &msgs[start..]
    }

    /// All text in `new_messages`, tool_result contents included, joined by newlines.
    pub fn new_text(&self) -> String {
        let mut out = Vec::new();
        for m in self.new_messages() {
            collect_text(m.get("content").unwrap_or(&Value::Null), true, &mut out);
        }
        out.join("\n")
    }

    /// The text in `new_messages` outside tool results: a prompt, a wake-up notification.
    pub fn new_text_without_tool_results(&self) -> String {
        let mut out = Vec::new();
        for m in self.new_messages() {
            collect_text(m.get("content").unwrap_or(&Value::Null), false, &mut out);
        }
        out.join("\n")
    }

    /// Tool results in `new_messages`.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let mut out = Vec::new();
        for m in self.new_messages() {
            let Some(blocks) = m.get("content").and_then(Value::as_array) else {
                continue;
            };
            for b in blocks.iter().filter(|b| kind(b) == "tool_result") {
                let id = str_field(b, "tool_use_id").to_owned();
                let mut text = Vec::new();
                collect_text(b.get("content").unwrap_or(&Value::Null), true, &mut text);
                out.push(ToolResult {
                    tool_name: self.tool_use_name(&id),
                    tool_use_id: id,
                    text: text.join("\n"),
                    is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
                });
            }
        }
        out
    }

    /// The name of the `tool_use` block with this id anywhere in the conversation.
    pub fn tool_use_name(&self, id: &str) -> Option<String> {
        self.messages()
            .iter()
            .filter(|m| role(m) == "assistant")
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .find(|b| kind(b) == "tool_use" && str_field(b, "id") == id)
            .map(|b| str_field(b, "name").to_owned())
    }
}

fn role(m: &Value) -> &str {
    str_field(m, "role")
}

fn kind(b: &Value) -> &str {
    str_field(b, "type")
}

fn str_field<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Text of a `content` value, text blocks only.
fn text_blocks(content: &Value) -> String {
    let mut out = Vec::new();
    collect_text(content, false, &mut out);
    out.join("\n")
}

fn collect_text(content: &Value, with_tool_results: bool, out: &mut Vec<String>) {
    match content {
        Value::String(s) => out.push(s.clone()),
        Value::Array(blocks) => {
            for b in blocks {
                match kind(b) {
                    "text" => out.push(str_field(b, "text").to_owned()),
                    "tool_result" if with_tool_results => {
                        collect_text(b.get("content").unwrap_or(&Value::Null), true, out)
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
}

/// One content block of a scripted reply.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    ToolUse { name: String, input: Value },
}

/// What the fake model answers: content blocks in order.
#[derive(Debug, Clone, Default)]
pub struct Reply {
    pub blocks: Vec<Block>,
    /// Streamed as a model types: each text block in this many deltas, this far apart.
    pub pace: Option<(usize, Duration)>,
    /// An API error instead of a message: the HTTP status and the error's message.
    pub error: Option<(u16, String)>,
}

impl Reply {
    pub fn text(t: impl Into<String>) -> Reply {
        Reply::default().and_text(t)
    }

    pub fn tool_use(name: impl Into<String>, input: Value) -> Reply {
        Reply::default().and_tool_use(name, input)
    }

    /// Each text block streamed in `chunks` deltas, `gap` apart (a token stream that takes time).
    pub fn paced(mut self, chunks: usize, gap: Duration) -> Reply {
        self.pace = Some((chunks.max(1), gap));
        self
    }

    /// The API refuses the request with `status` (a 4xx is not retried by Claude Code).
    pub fn api_error(status: u16, message: impl Into<String>) -> Reply {
        Reply {
            error: Some((status, message.into())),
            ..Reply::default()
        }
    }

    pub fn and_text(mut self, t: impl Into<String>) -> Reply {
        self.blocks.push(Block::Text(t.into()));
        self
    }

    pub fn and_tool_use(mut self, name: impl Into<String>, input: Value) -> Reply {
        self.blocks.push(Block::ToolUse {
            name: name.into(),
            input,
        });
        self
    }

    fn stop_reason(&self) -> &'static str {
        if self
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolUse { .. }))
        {
            "tool_use"
        } else {
            "end_turn"
        }
    }
}

type Matcher = Box<dyn Fn(&Recorded) -> bool + Send + Sync>;
type Responder = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// "When a request looks like this, answer that." Build with an `on_*` constructor, then add the
/// reply with `text` / `tool_use` (chainable: both blocks go into one assistant message).
pub struct Rule {
    name: String,
    matcher: Matcher,
    reply: Reply,
    responder: Option<Responder>,
    once: bool,
    fired: usize,
}

impl Rule {
    /// The last user message's text blocks contain `needle` (what the user typed this turn).
    pub fn on_user_text(needle: &str) -> Rule {
        let n = needle.to_owned();
        Rule::when(&format!("on_user_text({needle:?})"), move |r| {
            r.tool_results().is_empty() && r.last_user_text().contains(&n)
        })
    }

    /// The request carries a tool_result for a tool_use of tool `name`.
    pub fn on_tool_result_for(name: &str) -> Rule {
        let n = name.to_owned();
        Rule::when(&format!("on_tool_result_for({name:?})"), move |r| {
            r.tool_results()
                .iter()
                .any(|t| t.tool_name.as_deref() == Some(n.as_str()))
        })
    }

    /// Anything new since the model last spoke (user text, tool results, system messages such as
    /// a `<task-notification>` or hook context) contains `needle`.
    pub fn on_contains(needle: &str) -> Rule {
        let n = needle.to_owned();
        Rule::when(&format!("on_contains({needle:?})"), move |r| {
            r.new_text().contains(&n)
        })
    }

    /// A custom matcher; `name` shows up in `Recorded::answered_by`.
    pub fn when(name: &str, pred: impl Fn(&Recorded) -> bool + Send + Sync + 'static) -> Rule {
        Rule {
            name: name.to_owned(),
            matcher: Box::new(pred),
            reply: Reply::default(),
            responder: None,
            once: false,
            fired: 0,
        }
    }

    pub fn text(mut self, t: impl Into<String>) -> Rule {
        self.reply = self.reply.and_text(t);
        self
    }

    pub fn tool_use(mut self, name: impl Into<String>, input: Value) -> Rule {
        self.reply = self.reply.and_tool_use(name, input);
        self
    }

    /// Builds the reply from the request, e.g. to echo a tool result back.
    pub fn reply_with(mut self, f: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> Rule {
        self.responder = Some(Box::new(f));
        self
    }

    /// Answers at most one request, then is skipped.
    pub fn once(mut self) -> Rule {
        self.once = true;
        self
    }
}

/// The ordered rules plus the fallback reply.
pub struct Script {
    rules: Vec<Rule>,
    fallback: Reply,
}

impl Default for Script {
    fn default() -> Script {
        Script::new()
    }
}

impl Script {
    pub const DEFAULT_FALLBACK: &str = "OK from the fake model.";

    pub fn new() -> Script {
        Script {
            rules: Vec::new(),
            fallback: Reply::text(Script::DEFAULT_FALLBACK),
        }
    }

    pub fn rule(mut self, r: Rule) -> Script {
        self.rules.push(r);
        self
    }

    pub fn fallback(mut self, reply: Reply) -> Script {
        self.fallback = reply;
        self
    }

    pub fn fallback_text(self, t: &str) -> Script {
        self.fallback(Reply::text(t))
    }

    fn answer(&mut self, req: &Recorded) -> (String, Reply) {
        if req.is_main_loop() {
            for rule in &mut self.rules {
                if rule.once && rule.fired > 0 {
                    continue;
                }
                if (rule.matcher)(req) {
                    rule.fired += 1;
                    let reply = match &rule.responder {
                        Some(f) => f(req),
                        None => rule.reply.clone(),
                    };
                    return (rule.name.clone(), reply);
                }
            }
        }
        ("fallback".to_owned(), self.fallback.clone())
    }
}

struct Shared {
    script: Mutex<Script>,
    requests: Mutex<Vec<Recorded>>,
    ids: AtomicU64,
}

/// The running fake. Stops (and drops open streams) on drop.
pub struct FakeModelApi {
    addr: SocketAddr,
    shared: Arc<Shared>,
    _server: super::Background,
}

impl FakeModelApi {
    pub fn start(script: Script) -> FakeModelApi {
        let shared = Arc::new(Shared {
            script: Mutex::new(script),
            requests: Mutex::new(Vec::new()),
            ids: AtomicU64::new(1),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let server = super::Background::start("fake-model-api", app);
        FakeModelApi {
            addr: server.addr,
            shared,
            _server: server,
        }
    }

    /// Base URL for `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }

    /// The main-loop conversation requests so far (see `Recorded::is_main_loop`).
    pub fn turns(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(Recorded::is_main_loop)
            .collect()
    }

    /// Waits for a request matching `pred` (already received or arriving before `deadline`) and
    /// returns the first such one. Panics naming `what` on timeout, listing what did arrive.
    #[track_caller]
    pub fn wait_for_request(
        &self,
        what: &str,
        deadline: Duration,
        pred: impl Fn(&Recorded) -> bool,
    ) -> Recorded {
        let start = Instant::now();
        loop {
            if let Some(r) = self.requests().into_iter().find(|r| pred(r)) {
                return r;
            }
            if start.elapsed() >= deadline {
                panic!(
                    "timed out after {deadline:?} waiting for a model request: {what}\n{}",
                    self.summary()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One line per request: seq, path, answering rule, and the start of the new text. For
    /// failure messages.
    pub fn summary(&self) -> String {
        let reqs = self.requests();
        if reqs.is_empty() {
            return "(no requests received)".to_owned();
        }
        reqs.iter()
            .map(|r| {
                let text: String = r
                    .new_text()
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(120)
                    .collect();
                format!(
                    "#{} {} {} [{}] {text}",
                    r.seq, r.method, r.path, r.answered_by
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri
        .path_and_query()
        .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned());
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let headers = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let mut rec = Recorded {
        seq: 0,
        at: Instant::now(),
        method: method.to_string(),
        path,
        headers,
        body,
        answered_by: "-".to_owned(),
    };
    let reply = if rec.is_messages() {
        let (name, reply) = shared.script.lock().unwrap().answer(&rec);
        rec.answered_by = name;
        Some(reply)
    } else {
        None
    };
    let stream = rec.body.get("stream").and_then(Value::as_bool) == Some(true);
    let model = rec
        .body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("claude-fake")
        .to_owned();
    let is_count = rec.method == "POST" && rec.path.starts_with("/v1/messages/count_tokens");
    {
        let mut reqs = shared.requests.lock().unwrap();
        rec.seq = reqs.len();
        reqs.push(rec);
    }
    let id = shared.ids.fetch_add(1, Ordering::Relaxed);
    match reply {
        Some(Reply {
            error: Some((status, message)),
            ..
        }) => (
            StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
            axum::Json(json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}})),
        )
            .into_response(),
        Some(reply) if stream => sse_response(&reply, &model, id),
        Some(reply) => {
            (StatusCode::OK, axum::Json(message_json(&reply, &model, id))).into_response()
        }
        None if is_count => axum::Json(json!({"input_tokens": 100})).into_response(),
        None => axum::Json(json!({})).into_response(),
    }
}

fn tool_use_id(msg_id: u64, i: usize) -> String {
    // Claude Code only needs ids unique within a conversation; the msg counter makes them unique
    // per fake.
    format!("toolu_fake{msg_id:06}{i:02}")
}

fn usage() -> Value {
    json!({"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

/// The non-streaming shape, for requests without `stream: true`.
fn message_json(reply: &Reply, model: &str, id: u64) -> Value {
    let content: Vec<Value> = reply
        .blocks
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::ToolUse { name, input } => {
                json!({"type": "tool_use", "id": tool_use_id(id, i), "name": name, "input": input})
            }
        })
        .collect();
    json!({
        "id": format!("msg_fake{id:06}"), "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": reply.stop_reason(), "stop_sequence": null, "usage": usage(),
    })
}

/// The SSE events of one reply, exactly in the Messages API streaming order.
fn sse_events(reply: &Reply, model: &str, id: u64) -> Vec<String> {
    fn ev(v: Value) -> String {
        format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap_or(""))
    }
    let mut out = vec![ev(json!({"type": "message_start", "message": {
        "id": format!("msg_fake{id:06}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }}))];
    out.push(ev(json!({"type": "ping"})));
    for (i, b) in reply.blocks.iter().enumerate() {
        match b {
            Block::Text(t) => {
                out.push(ev(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "text", "text": ""}})));
                for chunk in chunks(t, reply.pace.map_or(5, |p| p.0)) {
                    out.push(ev(json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "text_delta", "text": chunk}})));
                }
            }
            Block::ToolUse { name, input } => {
                out.push(ev(json!({"type": "content_block_start", "index": i,
                    "content_block": {"type": "tool_use", "id": tool_use_id(id, i), "name": name, "input": {}}})));
                for chunk in chunks(&input.to_string(), 3) {
                    out.push(ev(json!({"type": "content_block_delta", "index": i,
                        "delta": {"type": "input_json_delta", "partial_json": chunk}})));
                }
            }
        }
        out.push(ev(json!({"type": "content_block_stop", "index": i})));
    }
    out.push(ev(json!({"type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason(), "stop_sequence": null},
        "usage": {"output_tokens": 10}})));
    out.push(ev(json!({"type": "message_stop"})));
    out
}

/// Splits `s` into about `n` pieces on char boundaries, so deltas exercise the client's joining.
fn chunks(s: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(n.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn sse_response(reply: &Reply, model: &str, id: u64) -> Response {
    let events = sse_events(reply, model, id);
    let gap = reply.pace.map_or(Duration::ZERO, |p| p.1);
    let stream = futures::stream::iter(events).then(move |e| async move {
        // Paced: each delta (and the events around them) a gap after the one before.
        if !gap.is_zero() && e.starts_with("event: content_block_delta") {
            tokio::time::sleep(gap).await;
        }
        Ok::<_, std::convert::Infallible>(Bytes::from(e))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .header("request-id", format!("req_fake{id:06}"))
        .body(Body::from_stream(stream))
        .expect("sse response")
}

/// The fake itself, without Claude Code: these run everywhere, so a broken fake shows up even
/// where the CLI tests skip.
mod tests {
    use super::*;

    fn post(url: &str, body: Value) -> (String, String) {
        // reqwest is built without a default TLS provider (see Cargo.toml); the fake is plain
        // HTTP, but a client can't be built without one. Err = another test installed it first.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let resp = reqwest::Client::new()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap();
            let ctype = resp
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            (ctype, resp.text().await.unwrap())
        })
    }

    fn data_lines(sse: &str) -> Vec<Value> {
        sse.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    fn streamed_text(sse: &str) -> String {
        data_lines(sse)
            .iter()
            .filter(|e| e["delta"]["type"] == "text_delta")
            .map(|e| e["delta"]["text"].as_str().unwrap().to_owned())
            .collect()
    }

    fn turn(text: &str) -> Value {
        json!({"model": "m", "stream": true, "tools": [{"name": "Bash"}],
               "messages": [{"role": "system", "content": "mid-conversation system message"},
                            {"role": "user", "content": [{"type": "text", "text": text}]}],
               "unknown_field": {"anything": true}})
    }

    #[test]
    fn fake_model_streams_scripted_tool_use_and_records_requests() {
        let model = FakeModelApi::start(
            Script::new()
                .rule(
                    Rule::on_user_text("GO")
                        .text("Running.")
                        .tool_use("Bash", json!({"command": "echo hi"}))
                        .once(),
                )
                .rule(Rule::on_tool_result_for("Bash").text("done")),
        );
        let url = format!("{}/v1/messages?beta=true", model.url());
        let (ctype, sse) = post(&url, turn("please GO"));
        assert_eq!(ctype, "text/event-stream");
        let events = data_lines(&sse);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.first(), Some(&"message_start"));
        assert_eq!(types.last(), Some(&"message_stop"));
        let partial: String = events
            .iter()
            .filter(|e| e["delta"]["type"] == "input_json_delta")
            .map(|e| e["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(
            serde_json::from_str::<Value>(&partial).unwrap(),
            json!({"command": "echo hi"})
        );
        let stop = events
            .iter()
            .find(|e| e["type"] == "message_delta")
            .unwrap();
        assert_eq!(stop["delta"]["stop_reason"], "tool_use");
        let tool_id = events
            .iter()
            .find(|e| e["content_block"]["type"] == "tool_use")
            .unwrap()["content_block"]["id"]
            .as_str()
            .unwrap()
            .to_owned();

        // `once` is used up: the same prompt now gets the fallback.
        let (_, again) = post(&url, turn("please GO"));
        assert_eq!(streamed_text(&again), Script::DEFAULT_FALLBACK);

        let with_result = json!({"stream": true, "tools": [{"name": "Bash"}], "messages": [
            {"role": "user", "content": "please GO"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": tool_id, "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "hi"}]},
            {"role": "system", "content": [{"type": "text", "text": "PostToolUse hook additional context: X"}]},
        ]});
        let (_, sse) = post(&url, with_result);
        assert_eq!(streamed_text(&sse), "done");

        let (_, count) = post(
            &format!("{}/v1/messages/count_tokens?beta=true", model.url()),
            json!({}),
        );
        assert_eq!(
            serde_json::from_str::<Value>(&count).unwrap()["input_tokens"],
            100
        );
        let (_, other) = post(&format!("{}/api/whatever", model.url()), json!({}));
        assert_eq!(other, "{}");

        let reqs = model.requests();
        let answered: Vec<&str> = reqs.iter().map(|r| r.answered_by.as_str()).collect();
        assert_eq!(
            answered,
            [
                r#"on_user_text("GO")"#,
                "fallback",
                r#"on_tool_result_for("Bash")"#,
                "-",
                "-"
            ]
        );
        assert_eq!(reqs[0].body["unknown_field"]["anything"], true);
        let results = reqs[2].tool_results();
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].tool_name.as_deref(), Some("Bash"));
        assert_eq!(results[0].text, "hi");
        assert!(reqs[2].new_text().contains("hook additional context: X"));
        assert_eq!(model.turns().len(), 3);
        let r = model.wait_for_request("the tool result", Duration::from_secs(1), |r| {
            !r.tool_results().is_empty()
        });
        assert_eq!(r.seq, 2);
    }

    #[test]
    fn fake_model_answers_non_streaming_and_side_requests_with_the_fallback() {
        let model = FakeModelApi::start(Script::new().rule(Rule::on_contains("X").text("rule")));
        // No `tools`: a side query, which must not consume or trigger scripted rules.
        let (ctype, body) = post(
            &format!("{}/v1/messages", model.url()),
            json!({"messages": [{"role": "user", "content": "X"}]}),
        );
        assert!(ctype.starts_with("application/json"), "{ctype}");
        let msg: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(msg["content"][0]["text"], Script::DEFAULT_FALLBACK);
        assert_eq!(msg["stop_reason"], "end_turn");
    }
}
