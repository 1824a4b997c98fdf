//! A2A streaming: `SendStreamingMessage` / `message/stream` and `SubscribeToTask` /
//! `tasks/resubscribe` over SSE, read as a sequence of whole [`TaskView`]s, so the inline window
//! and the poller apply a streamed state exactly as they apply a GetTask answer.
//!
//! Owns: the request bodies of the two stream calls, the size guard on the byte stream (no line or
//! event longer than [`MAX_BODY`], like every other answer), the event shapes of v1
//! (`{task|message|statusUpdate|artifactUpdate}`) and v0.3 (`kind`), and the task assembled from
//! them (status updates replace the status; artifact updates with `append` extend the artifact's
//! parts in order). SSE framing is `sse-stream`'s. Both bindings stream: JSON-RPC's events are
//! JSON-RPC results, HTTP+JSON's (`message:stream`, `tasks/{id}:subscribe`) the bare event.
//!
//! A stream is never trusted to be complete: it may stall, drop or lie, and callers keep polling
//! whenever it has told nothing newer ([`core::inline`](a2a_mod_core::inline)), or beside it (the
//! poller's subscriptions, `poller/streams.rs`, through `Worker::follow`).

use super::card::{Dialect, Endpoint};
use super::http::{Budget, MAX_BODY, transport_error};
use super::wire::{self, Op, RpcAnswer};
use crate::error::A2aError;
use crate::view::TaskView;
use a2a_mod_core::schedule::{FLOOD_NOOPS, FLOOD_WINDOW, STREAM_GATHER};
use a2a_mod_core::task::TaskState;
use a2a_mod_proto::answer::{Artifact, ErrorEvent, Event, Task};
use a2a_mod_proto::error::{INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_OPERATION};
use a2a_mod_proto::read::{FileContent, Message, Part};
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use std::pin::Pin;

/// What is streamed: a new message's task, or an existing task.
#[derive(Debug, Clone, Copy)]
pub(crate) enum StreamOp<'a> {
    Send {
        text: &'a str,
        parts: &'a [super::parts::OutPart],
        task_id: Option<&'a str>,
        context_id: Option<&'a str>,
        message_id: &'a str,
    },
    Subscribe {
        id: &'a str,
    },
}

impl<'a> StreamOp<'a> {
    /// The plain operation with the same meaning (its checks and error reading are reused).
    pub fn plain(&self) -> Op<'a> {
        match *self {
            StreamOp::Send {
                text,
                parts,
                task_id,
                context_id,
                message_id,
            } => Op::Send {
                text,
                parts,
                task_id,
                context_id,
                message_id,
            },
            StreamOp::Subscribe { id } => Op::Get { id, history: 0 },
        }
    }
}

pub(crate) fn jsonrpc_method(op: &StreamOp, dialect: Dialect) -> &'static str {
    let m = match op {
        StreamOp::Send { .. } => a2a_mod_proto::Method::Stream,
        StreamOp::Subscribe { .. } => a2a_mod_proto::Method::Subscribe,
    };
    m.rpc_name(dialect)
}

/// The stream call's params: a send's as for SendMessage less the non-blocking flag (a stream
/// answers at once by nature), a subscription's just the task id.
pub(crate) fn jsonrpc_params(op: &StreamOp, ep: &Endpoint) -> Value {
    match op {
        StreamOp::Send { .. } => {
            let mut p = wire::jsonrpc_params(&op.plain(), ep);
            if let Some(c) = p.get_mut("configuration").and_then(Value::as_object_mut) {
                c.remove("returnImmediately");
                c.remove("blocking");
            }
            p
        }
        StreamOp::Subscribe { id } => {
            let mut p = json!({ "id": id });
            if let (Dialect::V1, Some(t), Some(obj)) = (ep.dialect, &ep.tenant, p.as_object_mut()) {
                obj.insert("tenant".into(), t.clone().into());
            }
            p
        }
    }
}

/// The HTTP+JSON stream call: its URL and body (`POST {base}/message:stream` with the send's body
/// less the non-blocking flag, `POST {base}/tasks/{id}:subscribe`; v0.3 under `/v1`).
pub(crate) fn rest_request(op: &StreamOp, ep: &Endpoint) -> (String, Value) {
    let (_, url, body) = wire::rest_request(&op.plain(), ep);
    match op {
        StreamOp::Send { .. } => {
            let mut body = body.unwrap_or_else(|| json!({}));
            if let Some(c) = body.get_mut("configuration").and_then(Value::as_object_mut) {
                c.remove("returnImmediately");
                c.remove("blocking");
            }
            let url = url.trim_end_matches(":send").to_string() + ":stream";
            (url, body)
        }
        // The GetTask URL less its query, plus the verb.
        StreamOp::Subscribe { .. } => {
            let path = url.split('?').next().unwrap_or_default();
            (format!("{path}:subscribe"), json!({}))
        }
    }
}

/// Counts the bytes of the current line and event as chunks go by, so a worker that streams
/// forever without a newline (or without a blank line) is cut at [`MAX_BODY`] instead of growing
/// the parser's buffer without end. Line ends are LF, CRLF or a lone CR, as in the SSE grammar.
#[derive(Debug, Default, Clone)]
pub(crate) struct Guard {
    line: usize,
    event: usize,
    after_cr: bool,
}

impl Guard {
    /// False once the current event is over the limit.
    pub fn feed(&mut self, chunk: &[u8], max: usize) -> bool {
        for &b in chunk {
            let lf_after_cr = b == b'\n' && self.after_cr;
            self.after_cr = b == b'\r';
            if lf_after_cr {
                continue;
            }
            if b == b'\r' || b == b'\n' {
                if self.line == 0 {
                    self.event = 0;
                }
                self.line = 0;
                continue;
            }
            self.line += 1;
            self.event += 1;
            if self.event > max {
                return false;
            }
        }
        true
    }
}

/// The task as the events so far describe it, in the protocol's shapes, so
/// [`wire::view`] reads it exactly as it reads a GetTask answer.
#[derive(Debug, Default)]
pub(crate) struct Assembly {
    task: Option<Task>,
    /// Bytes of artifact parts taken in, bounded like any answer.
    size: usize,
    /// The newest message the agent sent on the way (a status message a later status replaced,
    /// a message event): the stream's history, where an agent that ends with nothing left its
    /// answer (`wire::view` reads it as the last agent message).
    said: Option<Message>,
    /// This stream joined an artifact mid-way, so the text it assembles is not to be trusted
    /// alone and its ending is checked against a snapshot: chunks were appended to an artifact
    /// it never saw begin (a subscription with no task first, as a2a-sdk 0.3's
    /// `tasks/resubscribe`: the chunks before are missing), or to one it first saw in a task
    /// snapshot (a2a-sdk 1.x's `SubscribeToTask` taps the events before it reads the task, so
    /// a chunk landing between the two is in the snapshot and comes again as an event).
    pub partial: bool,
    /// The artifact joined mid-way (`partial`), and every text chunk of it this stream read
    /// after joining, in order: what [`rejoin`] holds a worker's snapshot to.
    unseen: Option<String>,
    /// The ids of the artifacts the last whole task of the stream carried.
    snapshot_ids: Vec<String>,
    pub seen_chunks: Vec<String>,
    /// The worker said no more events come (v0.3 `final`, or an ending state).
    pub done: bool,
}

/// What one event meant.
#[derive(Debug, PartialEq)]
pub(crate) enum Folded {
    /// The task changed: [`Assembly::view`] tells how it now stands.
    Changed,
    /// The answer is a message, not a task: the whole of it, and the stream's end.
    Message(TaskView),
    /// Nothing to tell (no state known yet, an event we do not use).
    Nothing,
    /// A status the task already has: nothing to tell, and the same event again will tell
    /// nothing until something else changes.
    Same,
}

impl Assembly {
    pub fn apply(&mut self, r: &Value) -> Result<Folded, String> {
        match Event::read(r) {
            Event::Task(t) => {
                self.size = t.artifacts.iter().map(carried).sum();
                self.snapshot_ids = t.artifacts.iter().filter_map(|a| a.id.clone()).collect();
                self.task = Some(t);
            }
            Event::Message(m) => {
                if self.task.is_some() {
                    // A progress message on a known task: the task's own status says more, but
                    // the message may be all there is of the answer.
                    self.said = Some(m);
                    return Ok(Folded::Nothing);
                }
                self.done = true;
                return wire::reply_view(&m)
                    .map(Folded::Message)
                    .map_err(|e| e.to_string());
            }
            Event::Status(u) => {
                let task = self.skeleton(u.task_id, u.context_id)?;
                if task.status == u.status && !u.last {
                    // A flood of the same `working` tells nothing new.
                    return Ok(Folded::Same);
                }
                let before = std::mem::replace(&mut task.status, u.status);
                if let Some(m) = before.message {
                    self.said = Some(m);
                }
                if u.last {
                    self.done = true;
                }
            }
            Event::Artifact(u) => {
                let art = u.artifact.ok_or("artifact update without an artifact")?;
                // What the parts carry, not each update's JSON around them: 4 MiB of 64-byte
                // tokens is 4 MiB, however many updates it takes.
                self.size = self.size.saturating_add(carried(&art));
                if self.size > MAX_BODY {
                    return Err("streamed artifacts larger than 4 MiB".into());
                }
                let id = art.id.clone();
                if u.append
                    && !self.partial
                    && id.as_ref().is_some_and(|i| self.snapshot_ids.contains(i))
                {
                    self.partial = true;
                    self.unseen = id.clone();
                }
                let the_joined = self.partial.then(|| id == self.unseen);
                let task = self.skeleton(u.task_id, u.context_id)?;
                // Only the chunks of an artifact joined mid-way are kept apart (for `rejoin`): an
                // append to the one joined, or to one never seen begin; a whole stream keeps none.
                let keep = u.append
                    && id.is_some()
                    && the_joined.unwrap_or_else(|| !has_artifact(task, id.as_deref()));
                let text = keep.then(|| chunk_text(&art));
                if add_artifact(task, art, u.append) == Added::AppendedToUnseen {
                    self.partial = true;
                    // The first one joined: `rejoin` holds the snapshot to one run of chunks.
                    self.unseen = self.unseen.take().or(id);
                }
                self.seen_chunks.extend(text);
            }
            Event::Other => return Ok(Folded::Nothing),
        }
        let known = self.task.as_ref().and_then(state).is_some();
        Ok(if known {
            Folded::Changed
        } else {
            Folded::Nothing
        })
    }

    /// The task as the events so far tell it; `None` before any state is known. A live task's
    /// view leaves its artifacts out: nothing shows the answer of a task still at work (its text is
    /// kept once it ends or waits), and copying the text so far at every change is what made a
    /// token stream cost the square of its length.
    pub fn view(&mut self) -> Result<Option<TaskView>, String> {
        let Some(task) = &self.task else {
            return Ok(None);
        };
        let Some(state) = state(task) else {
            return Ok(None);
        };
        let live = TaskState::from_wire(state).is_live();
        let artifacts = if live { &[][..] } else { &task.artifacts[..] };
        // Only the agent speaks in status messages; a message that names no role is its.
        let said = self
            .said
            .as_ref()
            .filter(|m| m.role.is_none() || m.is_agent());
        let view = wire::view(task, artifacts, said).map_err(|e| e.to_string())?;
        if !view.state.is_live() {
            self.done = true;
        }
        Ok(Some(view))
    }

    /// Whether the newest change ended the task (or the worker said no more comes): told at once.
    fn ended(&self) -> bool {
        self.done
            || self
                .task
                .as_ref()
                .and_then(state)
                .is_some_and(|s| !TaskState::from_wire(s).is_live())
    }

    /// The task failed and nothing it sent says why (no status message, no message on the way,
    /// no artifact): some servers give the reason only in a trailing SSE `error` event.
    fn wordless_failure(&self) -> bool {
        let Some(task) = &self.task else {
            return false;
        };
        let failed = state(task).is_some_and(|s| TaskState::from_wire(s) == TaskState::Failed);
        failed && task.status.message.is_none() && task.artifacts.is_empty() && self.said.is_none()
    }

    /// A failure's reason, from a trailing error event, as the status message.
    fn fail_words(&mut self, why: &str) {
        if let Some(task) = &mut self.task {
            task.status.message = Some(Message {
                role: Some("agent".into()),
                parts: vec![Part::Text(why.to_string())],
                has_parts: true,
                ..Message::default()
            });
        }
    }

    /// The task an update is about, made from the update's ids if no Task event came first.
    fn skeleton(
        &mut self,
        id: Option<String>,
        context_id: Option<String>,
    ) -> Result<&mut Task, String> {
        if let (Some(t), Some(id)) = (&self.task, &id)
            && t.id.as_ref() != Some(id)
        {
            return Err("an update about another task than the one streamed".into());
        }
        Ok(self.task.get_or_insert_with(|| Task {
            id,
            context_id,
            ..Task::default()
        }))
    }
}

/// The bytes an artifact's parts carry: text, file bytes (base64) or URLs, and data as JSON.
fn carried(art: &Artifact) -> usize {
    let part = |p: &Part| -> usize {
        match p {
            Part::Text(t) => t.len(),
            Part::File { content, .. } => match content {
                FileContent::Bytes(s) | FileContent::Url(s) => s.len(),
                FileContent::Neither => 0,
            },
            Part::Data(d) => d.to_string().len(),
            Part::Other(_) => 0,
        }
    };
    art.parts.iter().map(part).sum()
}

/// A task's state as the wire spells it, when it has one.
fn state(task: &Task) -> Option<&str> {
    task.status.state.as_deref()
}

/// Whether the task already has the artifact of this id.
fn has_artifact(task: &Task, id: Option<&str>) -> bool {
    task.artifacts.iter().any(|a| a.id.as_deref() == id)
}

/// The text an artifact update carries (its text parts joined).
fn chunk_text(art: &Artifact) -> String {
    art.parts
        .iter()
        .filter_map(|p| match p {
            Part::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// An artifact update: `append` adds its parts to the artifact of the same id (in the order the
/// chunks came), otherwise it replaces that artifact or is added after the others.
fn add_artifact(task: &mut Task, art: Artifact, append: bool) -> Added {
    let same = (task.artifacts.iter_mut()).find(|a| art.id.is_some() && a.id == art.id);
    match same {
        Some(old) if append => {
            let mut more = art.parts.into_iter();
            // A text chunk continues the text before it (a token stream), not a new part.
            match (old.parts.last_mut(), more.next()) {
                // In place: a chunk costs its own length, not the text's so far.
                (Some(Part::Text(so_far)), Some(Part::Text(t))) => so_far.push_str(&t),
                (_, Some(first)) => old.parts.push(first),
                (_, None) => {}
            }
            old.parts.extend(more);
        }
        Some(old) => *old = art,
        None if append => {
            task.artifacts.push(art);
            return Added::AppendedToUnseen;
        }
        None => task.artifacts.push(art),
    }
    Added::Other
}

/// The answer of a task this client read part of as a stream that joined mid-way: the worker's
/// snapshot holds the chunks before it joined, and the stream's own `seen` chunks (in order) win
/// over the snapshot's copy of them, which a2a-sdk 0.3 stores twice after a resubscribe (each
/// chunk repeated). `None` when the snapshot does not end with those chunks, once or each twice
/// (it is then taken as the worker has it).
pub fn rejoin(snapshot: &str, seen: &[String]) -> Option<String> {
    if seen.is_empty() {
        return None;
    }
    let ours: String = seen.concat();
    let doubled: String = seen.iter().flat_map(|c| [c.as_str(), c.as_str()]).collect();
    if let Some(head) = snapshot.strip_suffix(doubled.as_str()) {
        return Some(format!("{head}{ours}"));
    }
    snapshot.ends_with(&ours).then(|| snapshot.to_string())
}

/// How long a failure that said nothing waits for a trailing `error` event with its reason.
const TRAILING_ERROR: std::time::Duration = std::time::Duration::from_millis(300);

/// What [`add_artifact`] did, as the assembly's completeness needs it.
#[derive(Debug, PartialEq, Eq)]
enum Added {
    /// Chunks for an artifact never seen: the ones before them went by before this stream.
    AppendedToUnseen,
    Other,
}

type Sses = Pin<Box<dyn Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>>;

/// An open stream of one task. [`TaskStream::next`] gives the task each time an event changes
/// it; `None` once the worker said it is over or closed the stream.
pub struct TaskStream {
    events: Sses,
    asm: Assembly,
    /// The JSON-RPC id the events answer; `None` over HTTP+JSON (bare events).
    rpc_id: Option<u64>,
    url: String,
    /// The task the stream must be about, once known (a subscription's from the start).
    task_id: Option<String>,
    ended: bool,
    /// When the last change was told (`core::schedule::STREAM_GATHER` apart).
    told_at: Option<tokio::time::Instant>,
    /// A change was folded in and not told yet. A field, not a local of `next`, so a `next` cut
    /// short by a `select!` leaves it for the next call: `next` is cancel-safe.
    untold: bool,
    /// The data of the last event that folded to [`Folded::Same`], while nothing changed since:
    /// the same bytes again are skipped unparsed, so a flood of one update costs its reading.
    same: Option<String>,
    /// The events in a row that changed nothing, and when the run's window began: past
    /// [`FLOOD_NOOPS`] within [`FLOOD_WINDOW`] the stream is a flood, and ends.
    noops: (u32, tokio::time::Instant),
    /// How the stream ended (closed, or what broke it), seen while changes gathered: told after
    /// them.
    last_word: Option<Option<A2aError>>,
}

/// One item of the event stream, read.
enum Step {
    Changed,
    Nothing,
    /// A whole answer at once (a message), the stream's last.
    Told(TaskView),
    /// The stream's end: `None` when it closed, else what broke it.
    End(Option<A2aError>),
}

/// Why a stream call was not answered with a stream.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The worker does not serve streaming (a missing route or method, an unsupported
    /// operation, an answer that is not an event stream): use plain calls from now on.
    Unsupported(A2aError),
    /// Another answer that accepted nothing (401, 429, a JSON-RPC error): the plain call will meet
    /// and report it properly.
    Declined(A2aError),
}

impl TaskStream {
    /// Reads the stream's response head: an event stream, or a refusal (read whole, bounded).
    pub(crate) async fn open(
        resp: reqwest::Response,
        rpc_id: Option<u64>,
        url: &str,
        task_id: Option<&str>,
        names_task: bool,
        budget: &Budget,
    ) -> Result<TaskStream, Refusal> {
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if (200..300).contains(&status) && content_type.starts_with("text/event-stream") {
            let mut guard = Guard::default();
            let bytes = resp.bytes_stream().map(move |c| match c {
                Ok(c) if guard.feed(&c, MAX_BODY) => Ok(c),
                Ok(_) => Err(std::io::Error::other("an event larger than 4 MiB")),
                Err(e) => Err(std::io::Error::other(e)),
            });
            return Ok(TaskStream {
                events: Box::pin(sse_stream::SseByteStream::new(bytes)),
                asm: Assembly::default(),
                rpc_id,
                url: url.to_string(),
                task_id: task_id.map(str::to_string),
                ended: false,
                told_at: None,
                untold: false,
                same: None,
                noops: (0, tokio::time::Instant::now()),
                last_word: None,
            });
        }
        let unsupported = |e| Refusal::Unsupported(e);
        let declined = |e| Refusal::Declined(e);
        match status {
            401 | 403 => return Err(declined(super::auth::refusal(None, status))),
            // Over HTTP+JSON a 404 may be an A2A error about the task: its body tells.
            404 | 405 | 501 if rpc_id.is_some() => {
                return Err(unsupported(A2aError::Protocol(format!(
                    "{url} answered the stream call with HTTP {status}"
                ))));
            }
            _ => {}
        }
        let body = read_bounded(resp, budget).await.map_err(declined)?;
        let json = serde_json::from_slice::<Value>(&body).ok();
        let Some(rpc_id) = rpc_id else {
            return Err(rest_refusal(url, status, json.as_ref(), names_task));
        };
        let rpc = json.and_then(|v| wire::parse_jsonrpc(v, rpc_id).ok());
        match rpc {
            // Method not found, invalid request (an old server), unsupported operation. On a
            // call about a task (a subscription, a follow-up message) -32004 is also what an
            // ended task gets ("task is in terminal state", a2a-sdk 1.x): a task error, which
            // the plain call meets and reports, not a refusal of streaming.
            Some(RpcAnswer::Error { code, message })
                if matches!(code, METHOD_NOT_FOUND | INVALID_REQUEST)
                    || (code == UNSUPPORTED_OPERATION && !names_task) =>
            {
                Err(unsupported(A2aError::Rpc { code, message }))
            }
            Some(RpcAnswer::Error { code, message }) => {
                Err(declined(A2aError::from_rpc(code, message)))
            }
            _ if (200..300).contains(&status) => Err(unsupported(A2aError::Protocol(format!(
                "{url} answered the stream call with {content_type:?}, not an event stream"
            )))),
            _ => Err(declined(A2aError::Protocol(format!(
                "{url} answered the stream call with HTTP {status}"
            )))),
        }
    }

    /// Whether the stream joined the task mid-way and missed chunks of an artifact
    /// (`Assembly::partial`): its text is then not the whole answer.
    pub fn partial(&self) -> bool {
        self.asm.partial
    }

    /// The chunks of the artifact this stream joined mid-way, as it read them (none when it saw
    /// the whole task): [`crate::Worker::whole`] holds the worker's snapshot to them.
    pub fn seen_chunks(&self) -> &[String] {
        &self.asm.seen_chunks
    }

    /// The task after the next change; `None` when the stream is over. An `Err` also ends it
    /// (garbage, a JSON-RPC error, a broken connection). Changes that come within
    /// [`STREAM_GATHER`] of the last one told are gathered into one (the newest state, every chunk
    /// appended), so a fast stream costs a view per tenth of a second however many events it
    /// sends; an ending is told at once.
    pub async fn next(&mut self) -> Option<Result<TaskView, A2aError>> {
        if let Some(last) = self.last_word.take() {
            return last.map(Err);
        }
        while !self.ended {
            let due = self.told_at.map(|t| t + STREAM_GATHER);
            let item = match due {
                Some(due) if self.untold => {
                    if tokio::time::Instant::now() >= due {
                        break;
                    }
                    match tokio::time::timeout_at(due, self.events.next()).await {
                        Ok(item) => item,
                        Err(_) => break,
                    }
                }
                // The first change after a quiet spell is told at once.
                None if self.untold => break,
                _ => self.events.next().await,
            };
            match self.step(item) {
                Step::Nothing => {}
                Step::Changed => {
                    self.untold = true;
                    if self.asm.ended() {
                        break;
                    }
                }
                Step::Told(view) => {
                    self.ended = true;
                    self.untold = false;
                    return Some(self.checked(view));
                }
                Step::End(last) => {
                    self.ended = true;
                    if !self.untold {
                        return last.map(Err);
                    }
                    self.last_word = Some(last);
                }
            }
        }
        if !std::mem::take(&mut self.untold) {
            return None;
        }
        if self.asm.wordless_failure() && self.last_word.is_none() {
            self.trailing_error().await;
        }
        self.told_at = Some(tokio::time::Instant::now());
        let view = match self.asm.view() {
            Ok(Some(v)) => v,
            // A change is counted only once a state is known, so a view is always there.
            Ok(None) => return None,
            Err(why) => {
                self.ended = true;
                return Some(Err(self.bad(&why)));
            }
        };
        if self.asm.done {
            self.ended = true;
        }
        let told = self.checked(view);
        if told.is_err() {
            self.ended = true;
        }
        Some(told)
    }

    /// A failure that said nothing: waits briefly for an `error` event after it, whose reason
    /// becomes the failure's words (AG2 sends the FAILED state, then `event: error` with why).
    async fn trailing_error(&mut self) {
        let Ok(Some(Ok(sse))) = tokio::time::timeout(TRAILING_ERROR, self.events.next()).await
        else {
            return;
        };
        let Some(data) = sse.data.filter(|d| !d.trim().is_empty()) else {
            return;
        };
        let v: Value = serde_json::from_str(&data).unwrap_or(Value::String(data.clone()));
        let e = ErrorEvent::read(&v);
        if (sse.event.as_deref() == Some("error") || e.wrapped)
            && let Some(why) = e.why.map(|w| a2a_mod_core::text::one_line(&w, 500))
        {
            self.asm.fail_words(&why);
        }
    }

    fn bad(&self, why: &str) -> A2aError {
        A2aError::Protocol(format!("{} streamed {why}", self.url))
    }

    fn step(&mut self, item: Option<Result<sse_stream::Sse, sse_stream::Error>>) -> Step {
        let sse = match item {
            None => return Step::End(None),
            Some(Err(e)) => {
                return Step::End(Some(A2aError::Unreachable(format!(
                    "the stream from {} broke: {}",
                    self.url,
                    a2a_mod_core::text::one_line(&e.to_string(), 160)
                ))));
            }
            Some(Ok(sse)) => sse,
        };
        let Some(data) = sse.data.filter(|d| !d.trim().is_empty()) else {
            return self.nothing(); // a comment (keep-alive) or an id/retry line
        };
        if self.same.as_deref() == Some(data.as_str()) {
            return self.nothing();
        }
        let folded = self.fold(&data);
        self.same = matches!(folded, Ok(Folded::Same)).then_some(data);
        match folded {
            Ok(Folded::Nothing | Folded::Same) => self.nothing(),
            Ok(Folded::Changed) => {
                self.noops.0 = 0;
                Step::Changed
            }
            Ok(Folded::Message(view)) => Step::Told(view),
            Err(e) => Step::End(Some(e)),
        }
    }

    /// An event that changed nothing, counted: the one past [`FLOOD_NOOPS`] in a row within
    /// [`FLOOD_WINDOW`] ends the stream (a flood; polls carry the task).
    fn nothing(&mut self) -> Step {
        let now = tokio::time::Instant::now();
        let (n, since) = &mut self.noops;
        if *n == 0 || now.duration_since(*since) >= FLOOD_WINDOW {
            (*n, *since) = (0, now);
        }
        *n += 1;
        if *n > FLOOD_NOOPS {
            return Step::End(Some(A2aError::Flooded(FLOOD_NOOPS)));
        }
        Step::Nothing
    }

    fn fold(&mut self, data: &str) -> Result<Folded, A2aError> {
        let v: Value =
            serde_json::from_str(data).map_err(|_| self.bad("something that is not JSON"))?;
        let Some(rpc_id) = self.rpc_id else {
            // HTTP+JSON: the event itself, or an error in the REST error shape.
            if let Some(e) = wire::parse_rest_error(&v) {
                return Err(A2aError::Protocol(format!(
                    "{} streamed an error: {}",
                    self.url, e.message
                )));
            }
            return self.asm.apply(&v).map_err(|why| self.bad(&why));
        };
        let r = match wire::parse_jsonrpc(v, rpc_id) {
            Ok(RpcAnswer::Result(r)) => r,
            Ok(RpcAnswer::Error { code, message }) => {
                return Err(A2aError::from_rpc(code, message));
            }
            Err(why) => return Err(self.bad(&format!("a wrong answer: {why}"))),
        };
        self.asm.apply(&r).map_err(|why| self.bad(&why))
    }

    /// The view held to the task the stream is about (the first one names it, for a send).
    fn checked(&mut self, view: TaskView) -> Result<TaskView, A2aError> {
        match &self.task_id {
            Some(id) => wire::checked(&Op::Get { id, history: 0 }, view),
            None => {
                let v = wire::checked(
                    &Op::Send {
                        text: "",
                        parts: &[],
                        task_id: None,
                        context_id: None,
                        message_id: "",
                    },
                    view,
                )?;
                self.task_id = Some(v.task_id.clone());
                Ok(v)
            }
        }
    }
}

/// Why an HTTP+JSON stream call was not answered with a stream: a missing route (404 without an
/// A2A error, 405, 501) or "unsupported operation" on a new message means the worker does not
/// stream; anything else (a task error, a refused credential, a busy server) the plain call meets
/// and reports.
fn rest_refusal(url: &str, status: u16, body: Option<&Value>, names_task: bool) -> Refusal {
    let a2a = body.and_then(wire::parse_rest_error);
    let why = match &a2a {
        Some(e) => match wire::code_of_reason(&e.reason) {
            Some(code) => A2aError::from_rpc(code, e.message.clone()),
            None => A2aError::Rpc {
                code: i64::from(status),
                message: e.message.clone(),
            },
        },
        None => A2aError::Protocol(format!("{url} answered the stream call with HTTP {status}")),
    };
    let reason = a2a.as_ref().map(|e| e.reason.as_str());
    let unsupported = match status {
        405 | 501 => true,
        // A route missing, or a new message's stream unknown; a task the worker does not know
        // is the plain call's to report.
        404 => a2a.is_none() || !names_task,
        _ => !names_task && matches!(reason, Some("UNSUPPORTED_OPERATION" | "METHOD_NOT_FOUND")),
    };
    if unsupported {
        Refusal::Unsupported(why)
    } else {
        Refusal::Declined(why)
    }
}

async fn read_bounded(mut resp: reqwest::Response, budget: &Budget) -> Result<Vec<u8>, A2aError> {
    budget
        .run(async {
            let mut body = Vec::new();
            while let Some(chunk) = resp
                .chunk()
                .await
                .map_err(|e| transport_error(&e, budget))?
            {
                if body.len() + chunk.len() > MAX_BODY {
                    return Err(A2aError::Protocol("answer larger than 4 MiB".into()));
                }
                body.extend_from_slice(&chunk);
            }
            Ok(body)
        })
        .await
}

#[cfg(test)]
mod rejoin_tests {
    use super::rejoin;

    fn v(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_chunks_read_win_over_a_snapshot_that_repeats_them() {
        let seen = v(&["t014 ", "t015 ", "t016 "]);
        // a2a-sdk 0.3.26 after a resubscribe: each later chunk stored twice.
        let doubled = "t000 t013 t014 t014 t015 t015 t016 t016 ";
        assert_eq!(
            rejoin(doubled, &seen).as_deref(),
            Some("t000 t013 t014 t015 t016 ")
        );
        let right = "t000 t013 t014 t015 t016 ";
        assert_eq!(rejoin(right, &seen).as_deref(), Some(right));
        // A snapshot that does not end with what was read is the worker's own.
        assert_eq!(rejoin("something else", &seen), None);
        assert_eq!(rejoin("x", &[]), None);
    }

    /// Only a stream that joined an artifact mid-way keeps its chunks apart: those of the first
    /// artifact it joined.
    #[test]
    fn the_chunks_kept_are_those_of_the_artifact_joined() {
        use super::Assembly;
        use serde_json::json;
        let chunk = |id: &str, t: &str, append: bool| {
            json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": append,
                "artifact": {"artifactId": id, "parts": [{"text": t}]}}})
        };
        let mut whole = Assembly::default();
        whole.apply(&json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}})).unwrap();
        for (t, append) in [("a", false), ("b", true), ("c", true)] {
            whole.apply(&chunk("x", t, append)).unwrap();
        }
        assert!(!whole.partial && whole.seen_chunks.is_empty());
        let mut joined = Assembly::default();
        for (id, t) in [("x", "t5 "), ("y", "other"), ("x", "t6 ")] {
            joined.apply(&chunk(id, t, true)).unwrap();
        }
        assert!(joined.partial);
        assert_eq!(joined.seen_chunks, ["t5 ", "t6 "]);
    }

    /// a2a-sdk 1.3's `SubscribeToTask` taps the events before it reads the task: a chunk that
    /// lands in between is in the snapshot and comes again as an event (seen against
    /// agent-framework-a2a's streaming executor, about one subscription in four under load). The
    /// stream counts as joined mid-way, and the worker's own copy, which holds each chunk once,
    /// is what the ending takes.
    #[test]
    fn a_chunk_in_the_snapshot_and_again_as_an_event_is_told_once() {
        use super::{Assembly, Folded};
        use serde_json::json;
        let mut sub = Assembly::default();
        sub.apply(
            &json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"},
            "artifacts": [{"artifactId": "x", "parts": [{"text": "t000 "}, {"text": "t001 "}]}]}}),
        )
        .unwrap();
        for t in ["t001 ", "t002 "] {
            sub.apply(
                &json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": true,
                "artifact": {"artifactId": "x", "parts": [{"text": t}]}}}),
            )
            .unwrap();
        }
        let end = sub
            .apply(&json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_COMPLETED"}}}))
            .unwrap();
        assert_eq!(end, Folded::Changed);
        let assembled = sub.view().unwrap().unwrap().text.unwrap();
        assert_eq!(
            assembled, "t000 t001 t001 t002 ",
            "what the events alone say"
        );
        assert!(sub.partial, "joined mid-way");
        assert_eq!(sub.seen_chunks, ["t001 ", "t002 "]);
        let stored = "t000 t001 t002 ";
        assert_eq!(rejoin(stored, &sub.seen_chunks).as_deref(), Some(stored));

        // A stream that saw the artifact begin keeps nothing apart and needs no snapshot.
        let mut send = Assembly::default();
        send.apply(&json!({"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_SUBMITTED"}}}))
            .unwrap();
        for (t, append) in [("t000 ", false), ("t001 ", true)] {
            send.apply(
                &json!({"artifactUpdate": {"taskId": "t", "contextId": "c", "append": append,
                "artifact": {"artifactId": "x", "parts": [{"text": t}]}}}),
            )
            .unwrap();
        }
        assert!(!send.partial && send.seen_chunks.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_mod_core::task::TaskState;

    #[test]
    fn the_guard_cuts_long_lines_and_events_only() {
        let mut g = Guard::default();
        assert!(g.feed(b"data: 12345\n\n", 16));
        assert!(g.feed(b"data: 12\ndata: 3", 16));
        assert!(!g.feed(b"456789", 16), "one event over the limit");
        // Split CRLF across chunks, then a blank line: a new event starts from zero.
        let mut g = Guard::default();
        assert!(g.feed(b"data: 1234\r", 10));
        assert!(g.feed(b"\n\r\ndata: 1234", 10));
        // A lone CR ends lines too.
        let mut g = Guard::default();
        assert!(g.feed(b"data: 1234\r\rdata: 1234\r\r", 10));
        // Never a newline: cut.
        let mut g = Guard::default();
        assert!(!g.feed(&[b'x'; 11], 10));
    }

    fn views(events: &[Value]) -> (Vec<TaskView>, bool) {
        let mut a = Assembly::default();
        let mut out = Vec::new();
        for e in events {
            match a.apply(e).expect("event folds") {
                Folded::Changed => out.push(a.view().expect("a view").expect("a state")),
                Folded::Message(v) => out.push(v),
                Folded::Nothing | Folded::Same => {}
            }
        }
        (out, a.done)
    }

    #[test]
    fn v1_task_status_and_chunked_artifact() {
        let (v, done) = views(&[
            json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            json!({"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"artifactUpdate": {"taskId": "t1", "artifact": {"artifactId": "a", "parts": [{"text": "hel"}]}}}),
            json!({"artifactUpdate": {"taskId": "t1", "append": true, "artifact": {"artifactId": "a", "parts": [{"text": "lo"}]}, "lastChunk": true}}),
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ]);
        let states: Vec<_> = v.iter().map(|v| v.state).collect();
        use TaskState::*;
        assert_eq!(states, [Submitted, Working, Working, Working, Completed]);
        assert_eq!(v[4].text.as_deref(), Some("hello"));
        assert_eq!(v[4].context_id.as_deref(), Some("c1"));
        assert!(done);
    }

    #[test]
    fn v03_kinds_final_and_replaced_artifact() {
        let (v, done) = views(&[
            json!({"kind": "task", "id": "t1", "contextId": "c1", "status": {"state": "submitted"}}),
            json!({"kind": "artifact-update", "taskId": "t1", "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "draft"}]}}),
            json!({"kind": "artifact-update", "taskId": "t1", "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "final"}]}}),
            json!({"kind": "status-update", "taskId": "t1", "status": {"state": "input-required", "message": {"parts": [{"kind": "text", "text": "which?"}]}}, "final": true}),
        ]);
        let last = v.last().expect("a view");
        assert_eq!(last.state, TaskState::InputRequired);
        assert_eq!(last.question.as_deref(), Some("which?"));
        assert_eq!(last.text.as_deref(), Some("final"));
        assert!(done);
    }

    #[test]
    fn a_direct_message_is_the_answer_and_updates_without_a_task_wait_for_a_state() {
        let (v, done) = views(&[
            json!({"message": {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}),
        ]);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].state, TaskState::Completed);
        assert_eq!(v[0].text.as_deref(), Some("hi"));
        assert!(done);
        let (v, done) = views(&[
            json!({"artifactUpdate": {"taskId": "t1", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}),
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}}),
        ]);
        assert_eq!(v.len(), 1, "nothing before a state is known");
        // A live task's view leaves its answer out; the ending has it whole.
        assert_eq!(
            (v[0].state, v[0].text.as_deref()),
            (TaskState::Working, None)
        );
        assert!(!done);
        let (v, done) = views(&[
            json!({"artifactUpdate": {"taskId": "t1", "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}),
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ]);
        assert_eq!(v.len(), 2, "the same working again tells nothing");
        assert_eq!(
            (v[1].state, v[1].text.as_deref()),
            (TaskState::Completed, Some("x"))
        );
        assert!(done);
    }

    /// A stream over `results` (JSON-RPC results, id 1), each event ready at once.
    fn stream_of(results: Vec<Value>) -> TaskStream {
        let events = results.into_iter().map(|r| {
            let line = json!({"jsonrpc": "2.0", "id": 1, "result": r}).to_string();
            Ok(sse_stream::Sse::default().data(line))
        });
        TaskStream {
            events: Box::pin(futures::stream::iter(events)),
            asm: Assembly::default(),
            rpc_id: Some(1),
            url: "http://w".into(),
            task_id: None,
            ended: false,
            told_at: None,
            untold: false,
            same: None,
            noops: (0, tokio::time::Instant::now()),
            last_word: None,
        }
    }

    /// Thousands of chunks and identical updates that come at once are told as a handful of
    /// views: the first change at once, the rest gathered, the ending at once and whole.
    #[tokio::test]
    async fn a_fast_stream_is_told_in_a_few_views_and_ends_whole() {
        let mut events = vec![
            json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}),
        ];
        for i in 0..5000 {
            events.push(json!({"artifactUpdate": {"taskId": "t1", "append": i > 0,
                "artifact": {"artifactId": "a", "parts": [{"text": format!("{i:04} ")}]}}}));
            events.push(json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}}));
        }
        events.push(
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        let mut s = stream_of(events);
        let mut views = Vec::new();
        let began = std::time::Instant::now();
        while let Some(v) = s.next().await {
            views.push(v.expect("a view"));
        }
        // The first at once, one per tenth of a second gathered, the ending: never one per event.
        let tenths = began.elapsed().as_millis() as usize / 100;
        assert!(
            views.len() <= tenths + 3,
            "{} views in {tenths} tenths",
            views.len()
        );
        assert_eq!(views[0].state, TaskState::Working);
        let last = views.last().unwrap();
        assert_eq!(last.state, TaskState::Completed);
        let whole: String = (0..5000).map(|i| format!("{i:04} ")).collect();
        assert_eq!(last.text.as_deref(), Some(whole.as_str()));
    }

    /// Updates that change nothing, more than a thousand in a row within a second, end the
    /// stream as a flood (after the change gathered before them); the same repeats between
    /// changes, as a status with each token, never do.
    #[tokio::test]
    async fn a_flood_of_updates_that_change_nothing_ends_the_stream() {
        let working =
            || json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING"}}});
        let mut events =
            vec![json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}})];
        events.extend((0..=FLOOD_NOOPS).map(|_| working()));
        events.push(
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        let mut s = stream_of(events);
        assert_eq!(s.next().await.unwrap().unwrap().state, TaskState::Working);
        match s.next().await {
            Some(Err(A2aError::Flooded(n))) => assert_eq!(n, FLOOD_NOOPS),
            other => panic!("not a flood: {other:?}"),
        }
        assert!(s.next().await.is_none());

        // The same count of repeats, one after each chunk: a token stream, read whole.
        let mut events =
            vec![json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}})];
        for i in 0..=FLOOD_NOOPS {
            events.push(json!({"artifactUpdate": {"taskId": "t1", "append": i > 0,
                "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}));
            events.push(working());
        }
        events.push(
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        );
        let mut s = stream_of(events);
        let mut last = None;
        while let Some(v) = s.next().await {
            last = Some(v.expect("no flood"));
        }
        let last = last.unwrap();
        assert_eq!(last.state, TaskState::Completed);
        assert_eq!(last.text.map(|t| t.len()), Some(FLOOD_NOOPS as usize + 1));
    }

    /// A stream that breaks while changes gather tells them first, then how it broke.
    #[tokio::test]
    async fn changes_gathered_before_a_break_are_told_before_it() {
        let mut s = stream_of(vec![
            json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}}),
            json!({"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_WORKING", "message": {"role": "ROLE_AGENT", "parts": [{"text": "half"}]}}}}),
            json!({"statusUpdate": {"taskId": "t2", "status": {"state": "TASK_STATE_COMPLETED"}}}),
        ]);
        let first = s.next().await.unwrap().unwrap();
        assert_eq!(first.state, TaskState::Working);
        let gathered = s.next().await.unwrap().unwrap();
        assert_eq!(gathered.state, TaskState::Working);
        assert!(
            s.next().await.unwrap().is_err(),
            "the break, after the change"
        );
        assert!(s.next().await.is_none());
    }

    #[test]
    fn another_tasks_update_and_oversized_artifacts_are_refused() {
        let mut a = Assembly::default();
        a.apply(&json!({"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}}))
            .unwrap();
        let other =
            json!({"statusUpdate": {"taskId": "t2", "status": {"state": "TASK_STATE_COMPLETED"}}});
        assert!(a.apply(&other).is_err());
        let chunk = "x".repeat(1024 * 1024);
        let ev = json!({"artifactUpdate": {"taskId": "t1", "append": true, "artifact": {"artifactId": "a", "parts": [{"text": chunk}]}}});
        // What the parts carry counts, not the updates' JSON: four 1 MiB chunks are 4 MiB.
        let r: Vec<_> = (0..6).map(|_| a.apply(&ev).is_ok()).collect();
        assert_eq!(r, [true, true, true, true, false, false]);
    }

    #[test]
    fn stream_params() {
        let ep = Endpoint {
            dialect: Dialect::V1,
            binding: super::super::card::Binding::JsonRpc,
            url: "http://w/".into(),
            tenant: None,
        };
        let send = StreamOp::Send {
            text: "hi",
            parts: &[],
            task_id: None,
            context_id: None,
            message_id: "m1",
        };
        let p = jsonrpc_params(&send, &ep);
        assert_eq!(p["configuration"], json!({"historyLength": 0}));
        assert_eq!(jsonrpc_method(&send, Dialect::V03), "message/stream");
        let sub = StreamOp::Subscribe { id: "t1" };
        assert_eq!(jsonrpc_params(&sub, &ep), json!({"id": "t1"}));
        assert_eq!(jsonrpc_method(&sub, Dialect::V1), "SubscribeToTask");
    }
}

/// The client's streams against the embedded fake worker, every mode and both dialects.
#[cfg(test)]
mod fake_tests {
    use crate::{A2aError, Started, TaskStream, TaskView, Worker, http_client};
    use a2a_mod_config::WorkerConfig;
    use a2a_mod_core::task::TaskState;
    use a2a_mod_fake_worker::{FakeWorker, FakeWorkerOptions, StreamMode};
    use std::time::Duration;
    use tokio::time::Instant;

    async fn fake(stream: StreamMode, v03_only: bool) -> (FakeWorker, Worker) {
        let w = FakeWorker::start(FakeWorkerOptions {
            stream,
            v03_only,
            ..Default::default()
        })
        .await
        .expect("fake worker");
        let cfg = WorkerConfig {
            url: w.url.clone(),
            ..Default::default()
        };
        let worker = Worker::new("fake", cfg, http_client());
        (w, worker)
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    async fn started(worker: &Worker, text: &str) -> Started {
        worker
            .send(
                &crate::Outgoing {
                    stream: true,
                    ..crate::Outgoing::text(text)
                },
                soon(),
            )
            .await
            .expect("send")
    }

    async fn all(mut s: TaskStream) -> Vec<Result<TaskView, A2aError>> {
        let mut out = Vec::new();
        while let Some(v) = tokio::time::timeout(Duration::from_secs(10), s.next())
            .await
            .expect("the stream goes on")
        {
            out.push(v);
        }
        out
    }

    fn states(vs: &[Result<TaskView, A2aError>]) -> Vec<TaskState> {
        vs.iter()
            .map(|v| v.as_ref().expect("a view").state)
            .collect()
    }

    #[tokio::test]
    async fn a_slow_task_streams_to_its_end_in_both_dialects() {
        use TaskState::*;
        for v03 in [false, true] {
            let (_w, worker) = fake(StreamMode::On, v03).await;
            assert!(worker.streams(soon()).await);
            let Started::Stream(s) = started(&worker, "slow 0.3 the thing").await else {
                panic!("a streaming worker streams");
            };
            let vs = all(*s).await;
            // Each artifact chunk is one more view of the working task.
            let st = states(&vs);
            assert_eq!(st.first(), Some(&Submitted), "{st:?}");
            assert_eq!(st.last(), Some(&Completed), "{st:?}");
            assert!(st.contains(&Working), "{st:?}");
            let last = vs.last().unwrap().as_ref().unwrap();
            assert_eq!(last.text.as_deref(), Some("done: the thing"), "v03 {v03}");
        }
    }

    #[tokio::test]
    async fn an_echo_and_a_question_end_the_stream() {
        let (_w, worker) = fake(StreamMode::On, false).await;
        let Started::Stream(s) = started(&worker, "hello there").await else {
            panic!("streamed");
        };
        let vs = all(*s).await;
        let last = vs.last().unwrap().as_ref().unwrap();
        assert_eq!(
            (last.state, last.text.as_deref()),
            (TaskState::Completed, Some("hello there"))
        );
        let Started::Stream(s) = started(&worker, "ask which one?").await else {
            panic!("streamed");
        };
        let vs = all(*s).await;
        let last = vs.last().unwrap().as_ref().unwrap();
        assert_eq!(
            (last.state, last.question.as_deref()),
            (TaskState::InputRequired, Some("which one?"))
        );
    }

    #[tokio::test]
    async fn a_subscription_starts_with_the_whole_task_and_an_ended_task_is_refused() {
        let (_w, worker) = fake(StreamMode::On, false).await;
        let Started::Stream(mut s) = started(&worker, "slow 0.4 sub").await else {
            panic!("streamed");
        };
        let id = s.next().await.unwrap().unwrap().task_id;
        let sub = worker
            .subscribe(&id, soon())
            .await
            .unwrap()
            .expect("a stream");
        let vs = all(sub).await;
        assert_eq!(states(&vs)[0], TaskState::Working);
        assert_eq!(states(&vs).last(), Some(&TaskState::Completed));
        // Ended: the subscription is refused, and the worker still counts as streaming.
        assert!(worker.subscribe(&id, soon()).await.unwrap().is_none());
        assert!(worker.streams(soon()).await);
    }

    #[tokio::test]
    async fn a_worker_that_refuses_streaming_is_sent_plainly_and_remembered() {
        for mode in [StreamMode::Http404, StreamMode::RpcError] {
            let (w, worker) = fake(mode, false).await;
            assert!(worker.streams(soon()).await);
            let Started::Plain(v) = started(&worker, "hi").await else {
                panic!("{mode:?}: no stream");
            };
            assert_eq!(v.state, TaskState::Submitted);
            assert!(!worker.streams(soon()).await, "{mode:?}");
            let methods: Vec<_> = w.events().into_iter().map(|e| e.method).collect();
            assert_eq!(
                methods,
                ["card", "SendStreamingMessage", "SendMessage"],
                "{mode:?}"
            );
        }
    }

    #[tokio::test]
    async fn dropped_garbage_and_mute_streams() {
        let (_w, worker) = fake(StreamMode::Drop, false).await;
        let Started::Stream(s) = started(&worker, "slow 5 x").await else {
            panic!("streamed");
        };
        assert_eq!(states(&all(*s).await), [TaskState::Submitted]);

        let (_w, worker) = fake(StreamMode::Garbage, false).await;
        let Started::Stream(s) = started(&worker, "slow 5 x").await else {
            panic!("streamed");
        };
        let vs = all(*s).await;
        assert_eq!(vs.len(), 2);
        assert!(
            matches!(&vs[1], Err(A2aError::Protocol(m)) if m.contains("not JSON")),
            "{vs:?}"
        );

        let (_w, worker) = fake(StreamMode::Mute, false).await;
        let Started::Stream(mut s) = started(&worker, "hi").await else {
            panic!("streamed");
        };
        assert!(
            tokio::time::timeout(Duration::from_millis(300), s.next())
                .await
                .is_err()
        );
    }
}
