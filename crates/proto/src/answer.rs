//! What a client reads of a worker's answers, in any dialect's spelling: the JSON-RPC response
//! envelope ([`Response`]), an HTTP+JSON error ([`RestError`]), a task ([`Task`]: its status,
//! artifacts and history), a send's answer ([`SendAnswer`]) and a stream's events ([`Event`]).
//! Typed and lenient as [`crate::read`] is: a field of the wrong type reads as absent; what the
//! client makes of them (the answer, the question, the files) is its own (`crates/a2a`).
//!
//! The spellings: v1 wraps a send's answer and each stream event in a one-key object (`task`,
//! `message`, `statusUpdate`, `artifactUpdate`); v0.3 tags the object itself (`kind`: `task`,
//! `message`, `status-update`, `artifact-update`); v0.3's proto-JSON names a status message
//! `update` and parts `content`.

use crate::lenient::{Flag, Id, List, Obj, Present, Str, from_object, from_owned};
use crate::read::{Message, Part};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

/// A task as a worker tells it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Task {
    /// Its id (a number reads as its text); `None` when it has none.
    pub id: Option<String>,
    pub context_id: Option<String>,
    pub status: Status,
    pub artifacts: Vec<Artifact>,
    /// The messages of its history that could be read, oldest first.
    pub history: Vec<Message>,
}

/// A task's status: its state as spelled, and its message.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Status {
    /// The state as the wire spells it (`TASK_STATE_WORKING`, `working`); `None` when absent or
    /// empty.
    pub state: Option<String>,
    /// The status message (`message`, or proto-JSON's `update`), when it is an object.
    pub message: Option<Message>,
}

/// An artifact: its id, name and parts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Artifact {
    pub id: Option<String>,
    /// The name as sent (it may be blank).
    pub name: Option<String>,
    pub parts: Vec<Part>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireTask<'a> {
    id: Id,
    context_id: Id,
    #[serde(rename = "context_id")]
    context_id_snake: Id,
    #[serde(borrow)]
    status: Obj<WireStatus<'a>>,
    artifacts: List<Obj<WireArtifact>>,
    history: List<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireStatus<'a> {
    #[serde(borrow)]
    state: Str<'a>,
    message: Option<Value>,
    update: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireArtifact {
    artifact_id: Id,
    name: Option<Value>,
    parts: List<Value>,
    content: List<Value>,
}

impl WireStatus<'_> {
    fn status(self) -> Status {
        Status {
            state: self.state.take().filter(|s| !s.is_empty()),
            // The first of the two spellings present is the message, whatever it holds.
            message: self
                .message
                .or(self.update)
                .as_ref()
                .and_then(Message::read),
        }
    }
}

impl WireArtifact {
    fn artifact(self) -> Artifact {
        let parts = if self.parts.present {
            self.parts
        } else {
            self.content
        };
        Artifact {
            id: self.artifact_id.0,
            name: match self.name {
                Some(Value::String(s)) => Some(s),
                _ => None,
            },
            parts: parts.items.iter().filter_map(Part::read).collect(),
        }
    }
}

impl Task {
    /// Reads a task; `None` for anything but an object.
    pub fn read(v: &Value) -> Option<Task> {
        let t: WireTask<'_> = from_object(v)?;
        Some(Task {
            id: t.id.0,
            context_id: t.context_id.0.or(t.context_id_snake.0),
            status: t.status.0.map(WireStatus::status).unwrap_or_default(),
            artifacts: (t.artifacts.items.into_iter())
                .filter_map(|a| a.0.map(WireArtifact::artifact))
                .collect(),
            history: t.history.items.iter().filter_map(Message::read).collect(),
        })
    }

    /// Reads a GetTask or CancelTask answer: the task, or a `{task: …}` wrapping it.
    pub fn read_answer(v: &Value) -> Option<Task> {
        match shape(v) {
            Shape::Task(t) => Task::read(t),
            _ => Task::read(v),
        }
    }
}

/// A ListTasks answer's first `page` tasks (`None` for one that is not an object), and how many
/// it holds in all.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskList {
    pub page: Vec<Option<Task>>,
    pub all: usize,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireList {
    tasks: List<Value>,
}

/// Reads a ListTasks answer (`{"tasks": [...], "nextPageToken": ...}`); `None` when it has no
/// `tasks` array.
pub fn task_list(v: &Value, page: usize) -> Option<TaskList> {
    let list = from_object::<WireList>(v)?.tasks;
    if !list.present {
        return None;
    }
    Some(TaskList {
        all: list.items.len(),
        page: list.items.iter().take(page).map(Task::read).collect(),
    })
}

/// What a send was answered with.
#[derive(Debug, Clone, PartialEq)]
pub enum SendAnswer {
    Task(Task),
    /// A direct reply: the answer is a message, and no task is kept.
    Message(Message),
    /// Neither a task nor a message.
    Neither,
}

/// The wrappers and tags of an answer or event object, read once, without what they wrap.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Wrappers<'a> {
    task: Obj<IgnoredAny>,
    message: Obj<IgnoredAny>,
    msg: Obj<IgnoredAny>,
    status_update: Obj<IgnoredAny>,
    artifact_update: Obj<IgnoredAny>,
    #[serde(borrow)]
    kind: Str<'a>,
    status: Present,
    message_id: Present,
}

/// Which shape an answer or event object is, and where its content is.
enum Shape<'v> {
    Task(&'v Value),
    Message(&'v Value),
    Status(&'v Value),
    Artifact(&'v Value),
    /// No wrapper and no known tag: an untagged object, and whether it has a `status` and a
    /// `messageId` (which tell a bare task from a bare message).
    Bare {
        status: bool,
        message_id: bool,
    },
}

fn shape(v: &Value) -> Shape<'_> {
    let Some(w) = from_object::<Wrappers<'_>>(v) else {
        return Shape::Bare {
            status: false,
            message_id: false,
        };
    };
    let inner = |k: &str| &v[k];
    if w.task.0.is_some() {
        return Shape::Task(inner("task"));
    }
    if w.message.0.is_some() {
        return Shape::Message(inner("message"));
    }
    if w.msg.0.is_some() {
        return Shape::Message(inner("msg"));
    }
    if w.status_update.0.is_some() {
        return Shape::Status(inner("statusUpdate"));
    }
    if w.artifact_update.0.is_some() {
        return Shape::Artifact(inner("artifactUpdate"));
    }
    match w.kind.get() {
        Some("task") => Shape::Task(v),
        Some("message") => Shape::Message(v),
        Some("status-update") => Shape::Status(v),
        Some("artifact-update") => Shape::Artifact(v),
        _ => Shape::Bare {
            status: w.status.0,
            message_id: w.message_id.0,
        },
    }
}

impl SendAnswer {
    /// Reads a send's answer: v1's `{task}` / `{message}`, v0.3's tagged objects, or a bare task
    /// (it has a `status`) or message (a `messageId`).
    pub fn read(v: &Value) -> SendAnswer {
        let task = |t: &Value| Task::read(t).map_or(SendAnswer::Neither, SendAnswer::Task);
        let message = |m: &Value| Message::read(m).map_or(SendAnswer::Neither, SendAnswer::Message);
        match shape(v) {
            Shape::Task(t) => task(t),
            Shape::Message(m) => message(m),
            Shape::Status(_) | Shape::Artifact(_) => SendAnswer::Neither,
            Shape::Bare { status: true, .. } => task(v),
            Shape::Bare {
                message_id: true, ..
            } => message(v),
            Shape::Bare { .. } => SendAnswer::Neither,
        }
    }
}

/// One stream event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The whole task.
    Task(Task),
    /// A message: the answer when no task came first, else one on the way.
    Message(Message),
    Status(StatusUpdate),
    Artifact(ArtifactUpdate),
    /// Anything else (an event a2a-mod does not use).
    Other,
}

/// A status update: the task's new status.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatusUpdate {
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    pub status: Status,
    /// v0.3's `final`: no more events come.
    pub last: bool,
}

/// An artifact update: an artifact, whole or a chunk of one.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ArtifactUpdate {
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    /// `None` when the update carries none (an object).
    pub artifact: Option<Artifact>,
    /// Its parts go after those of the artifact of the same id.
    pub append: bool,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireUpdate<'a> {
    task_id: Id,
    context_id: Id,
    #[serde(borrow)]
    status: Obj<WireStatus<'a>>,
    #[serde(rename = "final")]
    last: Flag,
    artifact: Obj<WireArtifact>,
    append: Flag,
}

impl Event {
    /// Reads a stream event (the `result` of a JSON-RPC one, or an HTTP+JSON one as sent).
    pub fn read(v: &Value) -> Event {
        fn update(u: &Value) -> WireUpdate<'_> {
            from_object(u).unwrap_or_default()
        }
        match shape(v) {
            Shape::Task(t) => Task::read(t).map_or(Event::Other, Event::Task),
            Shape::Message(m) => Message::read(m).map_or(Event::Other, Event::Message),
            Shape::Status(u) => {
                let u = update(u);
                Event::Status(StatusUpdate {
                    task_id: u.task_id.0,
                    context_id: u.context_id.0,
                    status: u.status.0.map(WireStatus::status).unwrap_or_default(),
                    last: u.last.0,
                })
            }
            Shape::Artifact(u) => {
                let u = update(u);
                Event::Artifact(ArtifactUpdate {
                    task_id: u.task_id.0,
                    context_id: u.context_id.0,
                    artifact: u.artifact.0.map(WireArtifact::artifact),
                    append: u.append.0,
                })
            }
            Shape::Bare { .. } => Event::Other,
        }
    }
}

/// A JSON-RPC answer, checked against the request it answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Response {
    Result(Value),
    Error { code: i64, message: String },
}

/// Why a JSON-RPC answer cannot be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAnAnswer {
    /// JSON, but not JSON-RPC.
    NotJsonRpc,
    /// For another request.
    OtherRequest,
    /// Neither a result nor an error.
    Neither,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireResponse {
    jsonrpc: Option<Value>,
    #[serde(deserialize_with = "present")]
    id: Option<Value>,
    #[serde(deserialize_with = "present")]
    result: Option<Value>,
    #[serde(deserialize_with = "present")]
    error: Option<Value>,
}

/// A field that is there, null or not (`Option`'s own reading makes null absent).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireError<'a> {
    code: Option<Value>,
    #[serde(borrow)]
    message: Str<'a>,
}

impl Response {
    /// Reads the JSON-RPC 2.0 answer to request `id` (a server that could not read the id
    /// answers an error with id null, JSON-RPC 2.0 §5); the result is moved out, not copied.
    pub fn read(v: Value, id: u64) -> Result<Response, NotAnAnswer> {
        let r: WireResponse = from_owned(v).ok_or(NotAnAnswer::NotJsonRpc)?;
        let is_rpc = r.jsonrpc.as_ref().and_then(Value::as_str) == Some("2.0")
            || r.result.is_some()
            || r.error.is_some();
        if !is_rpc {
            return Err(NotAnAnswer::NotJsonRpc);
        }
        let got = r.id.unwrap_or(Value::Null);
        let matches = got.as_u64() == Some(id) || got.as_str() == Some(id.to_string().as_str());
        if let Some(e) = r.error.filter(|e| !e.is_null()) {
            if !matches && !got.is_null() {
                return Err(NotAnAnswer::OtherRequest);
            }
            let e: WireError<'_> = from_object(&e).unwrap_or_default();
            return Ok(Response::Error {
                code: e.code.as_ref().and_then(Value::as_i64).unwrap_or(0),
                message: e.message.take().unwrap_or_default(),
            });
        }
        if !matches {
            return Err(NotAnAnswer::OtherRequest);
        }
        match r.result {
            Some(r) if !r.is_null() => Ok(Response::Result(r)),
            _ => Err(NotAnAnswer::Neither),
        }
    }
}

/// An SSE `error` event after a failure (AG2 sends the FAILED state, then `event: error` with
/// why): `{"error": {"message" | "detail"}}`, `{"message" | "detail"}`, or a bare string.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ErrorEvent {
    /// It is wrapped in `error` (an error, whatever the SSE event's name).
    pub wrapped: bool,
    /// The reason it gives.
    pub why: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireErrorEvent<'a> {
    #[serde(deserialize_with = "present")]
    error: Option<Value>,
    #[serde(borrow)]
    message: Str<'a>,
    #[serde(borrow)]
    detail: Str<'a>,
}

impl ErrorEvent {
    pub fn read(v: &Value) -> ErrorEvent {
        fn why(v: &Value) -> Option<String> {
            match v {
                Value::String(s) => Some(s.clone()),
                v => from_object::<WireErrorEvent<'_>>(v)
                    .and_then(|e| e.message.take().or_else(|| e.detail.take())),
            }
        }
        match from_object::<WireErrorEvent<'_>>(v).and_then(|e| e.error) {
            Some(inner) => ErrorEvent {
                wrapped: true,
                why: why(&inner),
            },
            None => ErrorEvent {
                wrapped: false,
                why: why(v),
            },
        }
    }
}

/// An HTTP+JSON error body, `{"error": {code, status, message, details: [{reason}]}}`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RestError {
    /// The `google.rpc` status name (`NOT_FOUND`).
    pub status: String,
    /// The A2A reason of its `ErrorInfo` detail (`TASK_NOT_FOUND`); empty when it has none.
    pub reason: String,
    pub message: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireRestError<'a> {
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(borrow)]
    message: Str<'a>,
    #[serde(borrow)]
    details: List<Obj<WireDetail<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireDetail<'a> {
    #[serde(borrow)]
    reason: Str<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RestBody<'a> {
    #[serde(borrow)]
    error: Obj<WireRestError<'a>>,
}

impl RestError {
    /// Reads an HTTP+JSON error body; `None` when the body is not one.
    pub fn read(v: &Value) -> Option<RestError> {
        let e = from_object::<RestBody<'_>>(v)?.error.0?;
        Some(RestError {
            status: e.status.owned().unwrap_or_default(),
            message: e.message.owned().unwrap_or_default(),
            reason: (e.details.items.iter())
                .find_map(|d| d.0.as_ref().and_then(|d| d.reason.owned()))
                .unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tasks_in_every_spelling() {
        let t = Task::read(
            &json!({"id": 7, "contextId": "c", "status": {"state": "working",
            "update": {"role": "agent", "parts": [{"text": "busy"}]}},
            "artifacts": [{"artifactId": "a", "name": "out", "content": [{"text": "x"}]}, "junk"],
            "history": [{"role": "user", "parts": []}, 5]}),
        )
        .unwrap();
        assert_eq!(t.id.as_deref(), Some("7"));
        assert_eq!(t.context_id.as_deref(), Some("c"));
        assert_eq!(t.status.state.as_deref(), Some("working"));
        assert_eq!(t.status.message.unwrap().parts, [Part::Text("busy".into())]);
        assert_eq!(t.artifacts.len(), 1);
        assert_eq!(t.artifacts[0].parts, [Part::Text("x".into())]);
        assert_eq!(t.history.len(), 1);
        // Sloppy: a status that is not an object, an empty state, an id of the wrong type.
        let t = Task::read(&json!({"id": [], "status": "done"})).unwrap();
        assert_eq!((t.id, t.status.state), (None, None));
        assert!(
            Task::read(&json!({"id": "t", "status": {"state": ""}}))
                .unwrap()
                .status
                .state
                .is_none()
        );
        assert!(Task::read(&json!([])).is_none());
    }

    #[test]
    fn send_answers_and_events_in_every_spelling() {
        let task = |v: Value| matches!(SendAnswer::read(&v), SendAnswer::Task(_));
        let message = |v: Value| matches!(SendAnswer::read(&v), SendAnswer::Message(_));
        assert!(task(json!({"task": {"id": "t"}})));
        assert!(task(json!({"kind": "task", "id": "t"})));
        assert!(task(json!({"id": "t", "status": {}})));
        assert!(message(json!({"message": {"messageId": "m"}})));
        assert!(message(json!({"msg": {"messageId": "m"}})));
        assert!(message(json!({"kind": "message", "messageId": "m"})));
        assert!(message(json!({"messageId": "m"})));
        assert_eq!(SendAnswer::read(&json!({"task": 5})), SendAnswer::Neither);
        assert_eq!(SendAnswer::read(&json!({"id": "t"})), SendAnswer::Neither);

        let Event::Status(u) = Event::read(&json!({"kind": "status-update", "taskId": "t",
            "status": {"state": "completed"}, "final": true}))
        else {
            panic!("a status update")
        };
        assert_eq!(
            (u.task_id.as_deref(), u.status.state.as_deref(), u.last),
            (Some("t"), Some("completed"), true)
        );
        let Event::Artifact(u) = Event::read(&json!({"artifactUpdate": {"taskId": "t",
            "append": true, "artifact": {"artifactId": "a", "parts": [{"text": "x"}]}}}))
        else {
            panic!("an artifact update")
        };
        assert!(u.append);
        assert_eq!(u.artifact.unwrap().id.as_deref(), Some("a"));
        assert_eq!(Event::read(&json!({"kind": "bogus"})), Event::Other);
        assert_eq!(Event::read(&json!("text")), Event::Other);
    }

    #[test]
    fn json_rpc_answers() {
        let r = Response::read(json!({"jsonrpc": "2.0", "id": 3, "result": {"a": 1}}), 3);
        assert_eq!(r, Ok(Response::Result(json!({"a": 1}))));
        let r = Response::read(json!({"jsonrpc": "2.0", "id": "3", "result": 1}), 3);
        assert_eq!(r, Ok(Response::Result(json!(1))));
        let r = Response::read(
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}}),
            3,
        );
        assert_eq!(
            r,
            Ok(Response::Error {
                code: -32700,
                message: "bad".into()
            })
        );
        assert_eq!(
            Response::read(json!({"jsonrpc": "2.0", "id": 4, "result": 1}), 3),
            Err(NotAnAnswer::OtherRequest)
        );
        assert_eq!(
            Response::read(json!({"jsonrpc": "2.0", "id": 3}), 3),
            Err(NotAnAnswer::Neither)
        );
        assert_eq!(
            Response::read(json!({"id": 3}), 3),
            Err(NotAnAnswer::NotJsonRpc)
        );
        assert_eq!(
            RestError::read(&json!({"error": {"status": "NOT_FOUND", "message": "gone",
                "details": [{"@type": "x"}, {"reason": "TASK_NOT_FOUND"}]}})),
            Some(RestError {
                status: "NOT_FOUND".into(),
                reason: "TASK_NOT_FOUND".into(),
                message: "gone".into()
            })
        );
        assert_eq!(RestError::read(&json!({"error": "x"})), None);
    }
}
