//! The A2A wire format in both dialects and both bindings: request bodies we write (strictly, in
//! exactly the shape docs/a2a.md records, checked against `a2a-lf` in the tests) and task/message
//! answers we read (tolerantly: any dialect's part and field spellings, unknown states kept as
//! `Unknown`). Pure functions over [`serde_json::Value`]; no IO.

use super::card::{Binding, Dialect, Endpoint};
use super::parts::{self, OutPart};
use crate::error::A2aError;
use crate::view::TaskView;
use a2a_mod_core::artifact::{Artifact, Part};
use a2a_mod_core::task::TaskState;
use a2a_mod_core::text::one_line;
use a2a_mod_proto::Method;
use a2a_mod_proto::answer::{
    self, Artifact as WireArtifact, NotAnAnswer, Response, RestError, SendAnswer, Task as WireTask,
};
use a2a_mod_proto::read::{FileContent, Message, Part as WirePart};
use serde::Deserialize as _;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The three operations a worker serves us.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op<'a> {
    Send {
        text: &'a str,
        /// Files and data sent after the text (`a2a::parts`); empty for a text-only message.
        parts: &'a [OutPart],
        task_id: Option<&'a str>,
        context_id: Option<&'a str>,
        /// One per message, whatever carries it (a stream call, the plain send after a refused
        /// one, the v0.3 fallback, the retry with a fresh token): the worker sees one message.
        message_id: &'a str,
    },
    Get {
        id: &'a str,
        /// How many history messages to ask for: 0 for a poll, more where the answer may be
        /// only in the history (`Worker::get_task`).
        history: u32,
    },
    Cancel {
        id: &'a str,
    },
    /// ListTasks (v1): the worker's own tasks, in one context or all, without their history.
    List {
        context_id: Option<&'a str>,
    },
    /// The extended agent card, for a client with credentials (v1 `GetExtendedAgentCard`, v0.3
    /// `agent/getAuthenticatedExtendedCard`).
    ExtendedCard,
}

impl Op<'_> {
    /// Operations on an existing task: a "not found" answer means the task is gone.
    pub fn names_task(&self) -> bool {
        !matches!(
            self,
            Op::Send { task_id: None, .. } | Op::List { .. } | Op::ExtendedCard
        )
    }
}

/// Tasks one ListTasks asks for and reads: a page, not the worker's whole history.
pub(crate) const LIST_PAGE: usize = 50;

impl Op<'_> {
    /// The protocol's method for it.
    pub fn method(&self) -> Method {
        match self {
            Op::Send { .. } => Method::Send,
            Op::Get { .. } => Method::Get,
            Op::Cancel { .. } => Method::Cancel,
            // Not in v0.3's JSON-RPC (its REST and gRPC only); `Worker::list_tasks` never sends it.
            Op::List { .. } => Method::List,
            Op::ExtendedCard => Method::ExtendedCard,
        }
    }
}

fn message(
    dialect: Dialect,
    binding: Binding,
    text: &str,
    extra: &[OutPart],
    task_id: Option<&str>,
    context_id: Option<&str>,
    message_id: &str,
) -> Value {
    let mut m = Map::new();
    m.insert("messageId".into(), message_id.into());
    // No text part for a message of files or data alone: an empty one is a part some agents
    // refuse beside a data part (Strands resumes only from a lone data part).
    let text_part = |p: Value| {
        if text.is_empty() {
            json!([])
        } else {
            json!([p])
        }
    };
    match (dialect, binding) {
        (Dialect::V1, _) => {
            m.insert("role".into(), "ROLE_USER".into());
            m.insert("parts".into(), text_part(json!({ "text": text })));
        }
        (Dialect::V03, Binding::JsonRpc) => {
            m.insert("kind".into(), "message".into());
            m.insert("role".into(), "user".into());
            m.insert(
                "parts".into(),
                text_part(json!({ "kind": "text", "text": text })),
            );
        }
        // v0.3 REST is proto-JSON: parts in `content`, proto role names (docs/a2a.md).
        (Dialect::V03, Binding::Rest) => {
            m.insert("role".into(), "ROLE_USER".into());
            m.insert("content".into(), text_part(json!({ "text": text })));
        }
    }
    let key = if binding == Binding::Rest && dialect == Dialect::V03 {
        "content"
    } else {
        "parts"
    };
    if let Some(Value::Array(list)) = m.get_mut(key) {
        list.extend(extra.iter().map(|p| parts::to_wire(p, dialect, binding)));
    }
    if let Some(t) = task_id {
        m.insert("taskId".into(), t.into());
    }
    if let Some(c) = context_id {
        m.insert("contextId".into(), c.into());
    }
    Value::Object(m)
}

/// A SendMessage body: the message (under `request` in v0.3 REST), asked not to block.
fn send_body(
    ep: &Endpoint,
    text: &str,
    extra: &[OutPart],
    (task_id, context_id): (Option<&str>, Option<&str>),
    message_id: &str,
) -> Value {
    let key = match (ep.dialect, ep.binding) {
        (Dialect::V03, Binding::Rest) => "request",
        _ => "message",
    };
    let configuration = match ep.dialect {
        Dialect::V1 => json!({ "returnImmediately": true, "historyLength": 0 }),
        Dialect::V03 => json!({ "blocking": false, "historyLength": 0 }),
    };
    let mut body = Map::new();
    let m = message(
        ep.dialect, ep.binding, text, extra, task_id, context_id, message_id,
    );
    body.insert(key.into(), m);
    body.insert("configuration".into(), configuration);
    Value::Object(body)
}

/// JSON-RPC `params` for `op`.
pub(crate) fn jsonrpc_params(op: &Op, ep: &Endpoint) -> Value {
    let mut p = match *op {
        Op::Send {
            text,
            parts,
            task_id,
            context_id,
            message_id,
        } => send_body(ep, text, parts, (task_id, context_id), message_id),
        Op::Get { id, history } => json!({ "id": id, "historyLength": history }),
        Op::Cancel { id } => json!({ "id": id }),
        Op::List { context_id } => {
            let mut p = json!({ "pageSize": LIST_PAGE, "historyLength": 0 });
            if let Some(c) = context_id {
                p["contextId"] = c.into();
            }
            p
        }
        Op::ExtendedCard => json!({}),
    };
    if let (Dialect::V1, Some(t), Some(obj)) = (ep.dialect, &ep.tenant, p.as_object_mut()) {
        obj.insert("tenant".into(), t.clone().into());
    }
    p
}

/// REST (HTTP+JSON): method, full URL and body for `op`. v0.3 paths live under `/v1`.
pub(crate) fn rest_request(op: &Op, ep: &Endpoint) -> (reqwest::Method, String, Option<Value>) {
    let mut base = ep.url.trim_end_matches('/').to_string();
    if let Some(t) = &ep.tenant {
        base = format!("{base}/{}", encode_segment(t));
    }
    if ep.dialect == Dialect::V03 {
        base.push_str("/v1");
    }
    match *op {
        Op::Send {
            text,
            parts,
            task_id,
            context_id,
            message_id,
        } => (
            reqwest::Method::POST,
            format!("{base}/message:send"),
            Some(send_body(
                ep,
                text,
                parts,
                (task_id, context_id),
                message_id,
            )),
        ),
        Op::Get { id, history } => (
            reqwest::Method::GET,
            format!(
                "{base}/tasks/{}?historyLength={history}",
                encode_segment(id)
            ),
            None,
        ),
        Op::Cancel { id } => (
            reqwest::Method::POST,
            format!("{base}/tasks/{}:cancel", encode_segment(id)),
            Some(json!({})),
        ),
        Op::List { context_id } => {
            let context = context_id
                .map(|c| format!("&contextId={}", encode_segment(c)))
                .unwrap_or_default();
            (
                reqwest::Method::GET,
                format!("{base}/tasks?pageSize={LIST_PAGE}&historyLength=0{context}"),
                None,
            )
        }
        Op::ExtendedCard => {
            let path = match ep.dialect {
                Dialect::V1 => "extendedAgentCard",
                Dialect::V03 => "card",
            };
            (reqwest::Method::GET, format!("{base}/{path}"), None)
        }
    }
}

/// Percent-encodes a path segment, so a task id from a worker cannot change the path.
fn encode_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Every task a worker tells of, answered or streamed, before anything is kept: refused when it
/// names a task other than the one asked about, or carries an id a2a-mod cannot show safely
/// (`core::bounds::plain_id`).
pub(crate) fn checked(op: &Op<'_>, view: TaskView) -> Result<TaskView, A2aError> {
    use a2a_mod_core::bounds::plain_id;
    if !plain_id(&view.task_id) {
        return Err(A2aError::UnusableId("task id"));
    }
    if view.context_id.as_deref().is_some_and(|c| !plain_id(c)) {
        return Err(A2aError::UnusableId("context id"));
    }
    // A follow-up send may be answered by a plain message (its id is the message's), so only
    // the task reads are held to the id they asked for.
    if let Op::Get { id, .. } | Op::Cancel { id } = op
        && *id != view.task_id
    {
        return Err(A2aError::Protocol(
            "the answer is about another task than the one asked about".into(),
        ));
    }
    Ok(view)
}

/// Why an answer the worker did give cannot be read as A2A. The client shows it after the
/// worker's URL as a protocol error (`A2aError::Protocol`); it branches only on whether there is
/// one, beside the HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Malformed {
    #[error("send answer holds neither a task nor a message")]
    NeitherTaskNorMessage,
    #[error("task is not a JSON object")]
    TaskNotAnObject,
    #[error("task has no id")]
    TaskWithoutId,
    #[error("message reply has neither taskId nor messageId")]
    ReplyWithoutId,
    #[error("answer is JSON but not JSON-RPC")]
    NotJsonRpc,
    #[error("answer is for another JSON-RPC request")]
    OtherRequest,
    #[error("JSON-RPC answer has neither result nor error")]
    NeitherResultNorError,
    #[error("task list answer has no \"tasks\" array")]
    NoTaskList,
}

/// A send answer: a task, or a direct message reply, in any spelling
/// (`a2a_mod_proto::answer::SendAnswer`).
pub(crate) fn parse_send_result(v: &Value) -> Result<TaskView, Malformed> {
    match SendAnswer::read(v) {
        SendAnswer::Task(t) => task_view(&t),
        SendAnswer::Message(m) => reply_view(&m),
        SendAnswer::Neither => Err(Malformed::NeitherTaskNorMessage),
    }
}

/// A ListTasks answer (`{"tasks": [...], "nextPageToken": ...}`): its tasks in the worker's
/// order, at most [`LIST_PAGE`], each read like a GetTask answer; a task that cannot be read, or
/// whose ids cannot be shown safely, is left out and counted.
pub(crate) fn parse_task_list(v: &Value) -> Result<(Vec<TaskView>, usize), Malformed> {
    let tasks = answer::task_list(v, LIST_PAGE).ok_or(Malformed::NoTaskList)?;
    let mut kept = Vec::new();
    for t in tasks.page.iter().flatten() {
        if let Ok(Ok(view)) = task_view(t).map(|view| checked(&Op::List { context_id: None }, view))
        {
            kept.push(view);
        }
    }
    let left_out = tasks.all - kept.len();
    Ok((kept, left_out))
}

/// A task answer (GetTask, CancelTask); a `{task: …}` wrapper is accepted too.
pub(crate) fn parse_task_result(v: &Value) -> Result<TaskView, Malformed> {
    task_view(&WireTask::read_answer(v).ok_or(Malformed::TaskNotAnObject)?)
}

/// What a task tells, its history's last agent message the answer of last resort.
pub(crate) fn task_view(t: &WireTask) -> Result<TaskView, Malformed> {
    let last_agent = t.history.iter().rev().find(|m| m.is_agent());
    view(t, &t.artifacts, last_agent)
}

/// What a task tells (docs/a2a.md "What the result is"): the answer in `artifacts`, else the
/// final status message, else `last_agent` (an agent that answers in a `working` status message
/// and then completes with nothing keeps its answer only there; `Worker::get_task` asks for the
/// history, a stream keeps the messages on the way).
pub(crate) fn view(
    t: &WireTask,
    artifacts: &[WireArtifact],
    last_agent: Option<&Message>,
) -> Result<TaskView, Malformed> {
    let task_id = t.id.clone().ok_or(Malformed::TaskWithoutId)?;
    let wire_state = t.status.state.clone().unwrap_or_default();
    let state = TaskState::from_wire(&wire_state);
    let status_message = t.status.message.as_ref();
    let status_msg = status_message.map(message_text).filter(|s| !s.is_empty());

    let mut texts = Vec::new();
    let mut kept = Vec::new();
    for a in artifacts {
        kept.extend(artifact_of(a.name.as_deref(), a.id.as_deref(), &a.parts));
        let text = text_of(&a.parts);
        if !text.trim().is_empty() {
            texts.push(text);
        }
    }
    let answer = if !texts.is_empty() || !kept.is_empty() || state.is_waiting() {
        None
    } else {
        status_message
            .filter(|m| !text_of(&m.parts).trim().is_empty())
            .or(last_agent)
    };
    let text = if !texts.is_empty() {
        let mut text = texts.join("\n\n");
        // A failure's reason comes after what the run produced before it failed (a command's
        // output, then its stderr): without it the failure says nothing of why.
        if let Some(why) = status_msg.as_deref().filter(|_| state == TaskState::Failed)
            && !text.contains(why)
        {
            text = format!("{}\n\n{why}", text.trim_end());
        }
        Some(text)
    } else if status_msg.is_some() {
        status_msg.clone()
    } else {
        answer.map(message_text).filter(|s| !s.is_empty())
    };
    // The answer of a completed task is kept as its artifact would be (saved, listed): the
    // same fallback for the files as for the text. A failure's reason is not a result, but its
    // files and data are kept all the same.
    if let Some(a) = answer.and_then(|m| artifact_of(None, None, &m.parts))
        && (state == TaskState::Completed || a.parts.iter().any(|p| !matches!(p, Part::Text(_))))
    {
        kept.push(Artifact {
            name: Some("answer".into()),
            parts: a.parts,
        });
    }
    let question = if state.is_waiting() { status_msg } else { None };
    Ok(TaskView {
        task_id,
        context_id: t.context_id.clone(),
        state,
        wire_state,
        text,
        question,
        artifacts: kept,
        spills: Default::default(),
    })
}

/// Whether a task view says nothing of its answer although the task is over: the answer may
/// then be in the history, which polls do not ask for.
pub(crate) fn lacks_answer(v: &TaskView) -> bool {
    !v.state.is_live() && !v.state.is_waiting() && v.text.is_none() && v.artifacts.is_empty()
}

/// A direct reply: the answer is the message, and its id stands for the task's.
pub(crate) fn reply_view(m: &Message) -> Result<TaskView, Malformed> {
    let task_id = (m.task_id.text().filter(|t| !t.is_empty()))
        .or_else(|| m.message_id.text().filter(|t| !t.is_empty()))
        .ok_or(Malformed::ReplyWithoutId)?
        .to_string();
    let text = Some(message_text(m)).filter(|s| !s.is_empty());
    // A direct reply's files and data are kept like an artifact's; plain text is the reply.
    let artifacts = artifact_of(Some("reply"), None, &m.parts)
        .filter(|a| a.parts.iter().any(|p| !matches!(p, Part::Text(_))))
        .into_iter()
        .collect();
    Ok(TaskView {
        task_id,
        context_id: m
            .context_id
            .text()
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        state: TaskState::Completed,
        // A direct reply has no state on the wire; this is what it means.
        wire_state: TaskState::Completed.as_str().to_string(),
        text,
        question: None,
        artifacts,
        spills: Default::default(),
    })
}

/// An artifact (or message) with its parts, for the results folder: text, data, file bytes and
/// file URLs. Named by its name, else its id. `None` when it has no part we keep.
fn artifact_of(name: Option<&str>, id: Option<&str>, wire: &[WirePart]) -> Option<Artifact> {
    let name = (name.filter(|n| !n.trim().is_empty()))
        .or(id)
        .map(str::to_string);
    // Text parts side by side are one text (the text rule of `text_of`): a snapshot of a token
    // stream is then saved as the one text file its stream would give.
    let mut parts: Vec<Part> = Vec::new();
    for p in wire.iter().filter_map(part_of) {
        match (parts.last_mut(), p) {
            (Some(Part::Text(prev)), Part::Text(t)) => prev.push_str(&t),
            (_, p) => parts.push(p),
        }
    }
    (!parts.is_empty()).then_some(Artifact { name, parts })
}

/// One part as the results folder keeps it; a file part that names no file, and a part no
/// dialect knows, are not kept (the text shows the latter).
fn part_of(p: &WirePart) -> Option<Part> {
    Some(match p {
        WirePart::Text(t) => Part::Text(t.clone()),
        WirePart::Data(d) => Part::Data(d.clone()),
        WirePart::File {
            name,
            media_type,
            content,
        } => match content {
            FileContent::Bytes(b) => bytes_part(name.clone(), media_type.clone(), b.clone()),
            FileContent::Url(url) => Part::Url {
                filename: name.clone(),
                media_type: media_type.clone(),
                url: url.clone(),
            },
            FileContent::Neither => return None,
        },
        WirePart::Other(_) => return None,
    })
}

/// A file part's bytes: base64 as sent, or the spill an answer too large to read whole made of it.
fn bytes_part(filename: Option<String>, media_type: Option<String>, b64: String) -> Part {
    match super::spill::spilled(&b64) {
        Some(sp) => Part::Spilled {
            filename,
            media_type,
            bytes: sp.bytes,
            index: sp.index,
        },
        None => Part::Bytes {
            filename,
            media_type,
            base64: b64,
        },
    }
}

/// A file part's size: the spill's count, else what its base64 decodes to.
fn bytes_len(b64: &str) -> usize {
    match super::spill::spilled(b64) {
        Some(sp) => usize::try_from(sp.bytes).unwrap_or(usize::MAX),
        None => base64_len(b64),
    }
}

fn message_text(m: &Message) -> String {
    // a2a-mod serve's question says in its line what its data part structures: the line alone.
    let asks = m
        .extensions
        .iter()
        .any(|u| u == a2a_mod_core::task::TOOL_CONFIRMATION_EXTENSION);
    if asks {
        let lines: Vec<WirePart> = m.parts.iter().filter(|p| p.is_text()).cloned().collect();
        let line = text_of(&lines).trim().to_string();
        // The structured part is what says a permission is asked: a line that does not say it
        // the way every reader knows (a newer or other server's words) is said again from it.
        if a2a_mod_core::status::approval_of(&line).is_none()
            && let Some(asked) = m.parts.iter().find_map(permission_asked)
        {
            return asked;
        }
        return line;
    }
    text_of(&m.parts).trim().to_string()
}

/// The tool-confirmation extension's data part (`urn:a2a-mod:ext:tool-confirmation:v1`, as
/// serve's `ask.rs` writes it), the part of it a reader needs.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Confirmation {
    tool_call: ToolCall,
}

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolCall {
    tool_name: String,
    #[serde(default)]
    confirmation_request: Option<ConfirmationRequest>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ConfirmationRequest {
    execute_details: Option<Details>,
    generic_details: Option<Details>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct Details {
    command: Option<String>,
    description: Option<String>,
}

/// The permission a tool-confirmation data part asks, as serve's one line says it (`Claude wants
/// to run Bash: rm -rf build. Reply allow, …`): the tool and what it would run, cleaned.
fn permission_asked(part: &WirePart) -> Option<String> {
    let (WirePart::Data(v) | WirePart::Other(v)) = part else {
        return None;
    };
    let call = Confirmation::deserialize(v).ok()?.tool_call;
    let tool = call.tool_name.as_str();
    let request = call.confirmation_request.unwrap_or_default();
    let command = request.execute_details.and_then(|d| d.command);
    let description = request.generic_details.and_then(|d| d.description);
    // What the step is, as serve shows one: `Bash: rm -rf build`, or the description given.
    let step = match (command, description) {
        (Some(command), _) => format!("{tool}: {command}"),
        (None, Some(what)) => what,
        (None, None) => tool.to_string(),
    };
    Some(one_line(
        &a2a_mod_core::status::approval_line(tool, &step),
        1000,
    ))
}

/// The one text rule for the parts of an artifact or a message, the same for a snapshot and a
/// stream (docs/a2a.md "One text per artifact"): text parts run together as they are, so a
/// token stream kept as one part per chunk (a2a-sdk 1.x, Mastra) reads as the text its chunks
/// make, exactly as the streamed chunks joined; each file or data part is a one-line summary on
/// a line of its own, so nothing a worker returns is dropped silently.
pub(crate) fn text_of(parts: &[WirePart]) -> String {
    let mut out = String::new();
    let mut after_text = false;
    for p in parts {
        let piece = render_part(p);
        let is_text = p.is_text();
        if is_text && after_text {
            out.push_str(&piece);
            continue;
        }
        if !is_text && piece.trim().is_empty() {
            continue;
        }
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&piece);
        after_text = is_text;
    }
    out
}

fn render_part(p: &WirePart) -> Cow<'_, str> {
    match p {
        WirePart::Text(t) => Cow::Borrowed(t),
        WirePart::File {
            name,
            media_type,
            content,
        } => {
            let (size, uri) = match content {
                FileContent::Bytes(b) => (Some(bytes_len(b)), None),
                FileContent::Url(u) => (None, Some(u.as_str())),
                FileContent::Neither => (None, None),
            };
            Cow::Owned(file_summary(
                name.as_deref(),
                media_type.as_deref(),
                size,
                uri,
            ))
        }
        WirePart::Data(d) => Cow::Owned(format!("[data: {}]", compact(d, 200))),
        WirePart::Other(v) => Cow::Owned(format!("[part: {}]", compact(v, 200))),
    }
}

fn file_summary(
    name: Option<&str>,
    media: Option<&str>,
    size: Option<usize>,
    uri: Option<&str>,
) -> String {
    let name = one_line(name.unwrap_or("unnamed"), 120);
    let mut detail = Vec::new();
    if let Some(m) = media.filter(|m| !m.is_empty()) {
        detail.push(one_line(m, 80));
    }
    if let Some(n) = size {
        detail.push(format!("{n} bytes"));
    }
    if let Some(u) = uri {
        detail.push(one_line(u, 200));
    }
    if detail.is_empty() {
        format!("[file: {name}]")
    } else {
        format!("[file: {name} ({})]", detail.join(", "))
    }
}

/// Decoded size of base64 text, without decoding it.
fn base64_len(b64: &str) -> usize {
    let n = b64.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    let pad = b64
        .trim_end()
        .bytes()
        .rev()
        .take_while(|b| *b == b'=')
        .count();
    (n / 4 * 3 + (n % 4).saturating_sub(1)).saturating_sub(pad.min(2))
}

fn compact(v: &Value, max: usize) -> String {
    one_line(&v.to_string(), max)
}

/// A JSON-RPC answer reduced to what the client branches on.
#[derive(Debug)]
pub(crate) enum RpcAnswer {
    Result(Value),
    Error { code: i64, message: String },
}

/// Checks the JSON-RPC 2.0 envelope and that it answers request `id`; the error's message one
/// clean bounded line.
pub(crate) fn parse_jsonrpc(v: Value, id: u64) -> Result<RpcAnswer, Malformed> {
    match Response::read(v, id) {
        Ok(Response::Result(r)) => Ok(RpcAnswer::Result(r)),
        Ok(Response::Error { code, message }) => Ok(RpcAnswer::Error {
            code,
            message: one_line(&message, 200),
        }),
        Err(NotAnAnswer::NotJsonRpc) => Err(Malformed::NotJsonRpc),
        Err(NotAnAnswer::OtherRequest) => Err(Malformed::OtherRequest),
        Err(NotAnAnswer::Neither) => Err(Malformed::NeitherResultNorError),
    }
}

pub(crate) use a2a_mod_proto::error::code_of_reason;

/// A REST error body (`{"error":{code,status,message,details:[{reason}]}}`), its message one
/// clean bounded line.
pub(crate) fn parse_rest_error(v: &Value) -> Option<RestError> {
    RestError::read(v).map(|mut e| {
        e.message = one_line(&e.message, 200);
        e
    })
}

#[cfg(test)]
mod artifact_tests {
    use super::*;

    /// A run that printed some of its work and then failed: its output, then why it failed.
    #[test]
    fn a_failure_with_output_keeps_its_reason() {
        let t = json!({"id": "t", "status": {"state": "TASK_STATE_FAILED", "message": {"role": "ROLE_AGENT",
            "parts": [{"text": "exited with status 3: disk full"}]}},
            "artifacts": [{"artifactId": "a", "parts": [{"text": "working on it\n"}]}]});
        let v = parse_task_result(&t).unwrap();
        assert_eq!(
            v.text.as_deref(),
            Some("working on it\n\nexited with status 3: disk full")
        );
        // A completed task's status message is no part of its answer.
        let t = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED", "message": {"role": "ROLE_AGENT",
            "parts": [{"text": "done"}]}}, "artifacts": [{"artifactId": "a", "parts": [{"text": "answer"}]}]});
        assert_eq!(
            parse_task_result(&t).unwrap().text.as_deref(),
            Some("answer")
        );
    }

    #[test]
    fn parts_of_both_dialects_are_kept() {
        let v1 = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "artifacts": [
            {"artifactId": "a1", "name": "out", "parts": [
                {"text": "hi"},
                {"data": {"k": 1}},
                {"raw": "aGk=", "filename": "h.txt", "mediaType": "text/plain"},
                {"url": "https://x/y.png", "filename": "y.png", "mediaType": "image/png"}]}]});
        let v = parse_task_result(&v1).unwrap();
        assert_eq!(v.artifacts.len(), 1);
        assert_eq!(v.artifacts[0].name.as_deref(), Some("out"));
        assert!(matches!(&v.artifacts[0].parts[..], [
            Part::Text(_), Part::Data(_),
            Part::Bytes { base64, .. }, Part::Url { url, .. }] if base64 == "aGk=" && url == "https://x/y.png"));
        let v03 = json!({"kind": "task", "id": "t", "status": {"state": "completed"}, "artifacts": [
            {"artifactId": "a1", "parts": [
                {"kind": "data", "data": [1]},
                {"kind": "file", "file": {"name": "f", "mimeType": "a/b", "bytes": "AA=="}},
                {"kind": "file", "file": {"uri": "https://x/u"}}]}]});
        let v = parse_task_result(&v03).unwrap();
        assert_eq!(
            v.artifacts[0].name.as_deref(),
            Some("a1"),
            "the id names an unnamed one"
        );
        assert!(matches!(
            &v.artifacts[0].parts[..],
            [Part::Data(_), Part::Bytes { .. }, Part::Url { .. }]
        ));
    }

    /// One text rule for an artifact's parts. A token stream's snapshot keeps
    /// each chunk as its own part (a2a-sdk 1.x, Mastra, MAF's streaming executor); it reads as
    /// the chunks streamed and joined, not split by newlines, and is saved as one text.
    #[test]
    fn a_snapshot_of_chunks_reads_as_the_stream_does() {
        let chunks: Vec<String> = (0..5).map(|i| format!("t{i:03} ")).collect();
        let snap = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "artifacts": [
            {"artifactId": "a", "parts": chunks.iter().map(|c| json!({"text": c})).collect::<Vec<_>>()}]});
        let from_snapshot = parse_task_result(&snap).unwrap();

        let mut asm = super::super::stream::Assembly::default();
        asm.apply(&json!({"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}}))
            .unwrap();
        for (i, c) in chunks.iter().enumerate() {
            asm.apply(&json!({"artifactUpdate": {"taskId": "t", "append": i > 0,
                "artifact": {"artifactId": "a", "parts": [{"text": c}]}}}))
                .unwrap();
        }
        let done =
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let super::super::stream::Folded::Changed = asm.apply(&done).unwrap() else {
            panic!("a change")
        };
        let from_stream = asm.view().unwrap().expect("a view");
        assert_eq!(
            from_snapshot.text.as_deref(),
            Some("t000 t001 t002 t003 t004 ")
        );
        assert_eq!(from_snapshot.text, from_stream.text);
        assert_eq!(from_snapshot.artifacts, from_stream.artifacts);
        assert_eq!(
            from_snapshot.artifacts[0].parts,
            [Part::Text("t000 t001 t002 t003 t004 ".into())]
        );
        assert!(!asm.partial, "the stream saw the artifact begin");

        // A file part between texts stands on its own line; texts on each side run together.
        let mixed = json!({"id": "t", "status": {"state": "completed"}, "artifacts": [{"parts": [
            {"kind": "text", "text": "a"}, {"kind": "text", "text": "b"},
            {"kind": "file", "file": {"name": "f", "uri": "https://x/f"}},
            {"kind": "text", "text": "c"}]}]});
        assert_eq!(
            parse_task_result(&mixed).unwrap().text.as_deref(),
            Some("ab\n[file: f (https://x/f)]\nc")
        );
    }

    /// The answer of a task that ends with neither an artifact nor a status
    /// message is the last agent message: of the history in a snapshot, of the stream (a
    /// `working` status message) in a stream; saved as the task's artifact.
    #[test]
    fn an_answer_only_in_the_history_or_a_working_message_is_the_result() {
        let snap = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}, "history": [
            {"role": "ROLE_USER", "parts": [{"text": "question"}]},
            {"role": "ROLE_AGENT", "parts": [{"text": "the answer"}]}]});
        let v = parse_task_result(&snap).unwrap();
        assert_eq!(v.text.as_deref(), Some("the answer"));
        assert_eq!(v.artifacts.len(), 1);
        assert_eq!(v.artifacts[0].name.as_deref(), Some("answer"));
        assert!(!lacks_answer(&v));
        let bare = json!({"id": "t", "status": {"state": "TASK_STATE_COMPLETED"}});
        assert!(lacks_answer(&parse_task_result(&bare).unwrap()));
        // A failure's reason is its text, not a result to save.
        let failed = json!({"id": "t", "status": {"state": "failed",
            "message": {"role": "agent", "parts": [{"kind": "text", "text": "no disk"}]}}});
        let v = parse_task_result(&failed).unwrap();
        assert_eq!((v.text.as_deref(), v.artifacts.len()), (Some("no disk"), 0));

        let mut asm = super::super::stream::Assembly::default();
        for e in [
            json!({"task": {"id": "t", "status": {"state": "TASK_STATE_SUBMITTED"}}}),
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_WORKING",
                "message": {"role": "ROLE_AGENT", "parts": [{"text": "the answer"}]}}}}),
        ] {
            asm.apply(&e).unwrap();
        }
        let done =
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let super::super::stream::Folded::Changed = asm.apply(&done).unwrap() else {
            panic!("a change")
        };
        let v = asm.view().unwrap().expect("a view");
        assert_eq!(v.text.as_deref(), Some("the answer"));
    }

    /// A subscription that joins mid-stream (a2a-sdk 0.3's `tasks/resubscribe`
    /// sends no task first) gets chunks of an artifact it never saw begin: it knows its text is
    /// partial, so the poller takes the worker's snapshot for the ending.
    #[test]
    fn chunks_of_an_unseen_artifact_make_a_partial_stream() {
        let mut asm = super::super::stream::Assembly::default();
        asm.apply(
            &json!({"kind": "artifact-update", "taskId": "t", "append": true,
            "artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": "t003 "}]}}),
        )
        .unwrap();
        assert!(asm.partial);
    }

    #[test]
    fn three_streamed_chunks_are_one_artifact() {
        let mut asm = super::super::stream::Assembly::default();
        let chunk = |text: &str, append: bool, last: bool| {
            json!({"artifactUpdate": {"taskId": "t", "append": append, "lastChunk": last,
                "artifact": {"artifactId": "a", "name": "log.txt", "parts": [{"text": text}]}}})
        };
        asm.apply(&json!({"task": {"id": "t", "status": {"state": "TASK_STATE_WORKING"}}}))
            .unwrap();
        asm.apply(&chunk("one ", false, false)).unwrap();
        asm.apply(&chunk("two ", true, false)).unwrap();
        asm.apply(&chunk("three", true, true)).unwrap();
        let done =
            json!({"statusUpdate": {"taskId": "t", "status": {"state": "TASK_STATE_COMPLETED"}}});
        let super::super::stream::Folded::Changed = asm.apply(&done).unwrap() else {
            panic!("a change")
        };
        let v = asm.view().unwrap().expect("a view");
        assert_eq!(v.artifacts.len(), 1);
        assert_eq!(v.artifacts[0].parts, [Part::Text("one two three".into())]);
    }
}
