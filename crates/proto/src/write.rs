//! The shapes a server writes, spelled per [`Wire`] exactly as docs/a2a.md records real servers
//! writing them: v1 (`TASK_STATE_*`, `ROLE_*`, bare parts with `mediaType`, wrapped events), v0.3
//! JSON-RPC (`kind` tags, lowercase states and roles) and v0.3 REST's proto-JSON (`content`,
//! `TASK_STATE_CANCELLED`, `fileWithBytes`, the status message as `update`). Shared by `serve`
//! and the fake worker, so both servers answer in one spelling.

use crate::wire::{Dialect, Wire};
use a2a_mod_core::task::TaskState;
use serde_json::{Map, Value, json};

/// A task state's spelling.
pub fn state(w: Wire, s: TaskState) -> String {
    match (w.dialect, w.rest(), s) {
        (Dialect::V03, false, _) => s.as_str().to_string(),
        (Dialect::V03, true, TaskState::Canceled) => "TASK_STATE_CANCELLED".into(),
        (_, _, TaskState::Unknown) => "TASK_STATE_UNSPECIFIED".into(),
        _ => format!(
            "TASK_STATE_{}",
            s.as_str().replace('-', "_").to_ascii_uppercase()
        ),
    }
}

/// Whether the wire tags objects with `kind` (v0.3 JSON-RPC).
fn tagged(w: Wire) -> bool {
    w == Wire::V03_RPC
}

pub fn text_part(w: Wire, text: &str) -> Value {
    if tagged(w) {
        json!({"kind": "text", "text": text})
    } else {
        json!({"text": text})
    }
}

/// A data part: its JSON as the wire writes it.
pub fn data_part(w: Wire, data: &Value) -> Value {
    match (w.dialect, w.rest()) {
        (Dialect::V03, false) => json!({"kind": "data", "data": data}),
        (Dialect::V03, true) => json!({"data": {"data": data}}),
        _ => json!({"data": data, "mediaType": "application/json"}),
    }
}

/// A file part by its bytes (base64), its name and media type.
pub fn file_part(w: Wire, b64: &str, name: &str, media_type: &str) -> Value {
    match (w.dialect, w.rest()) {
        (Dialect::V03, false) => {
            json!({"kind": "file", "file": {"bytes": b64, "name": name, "mimeType": media_type}})
        }
        (Dialect::V03, true) => {
            json!({"file": {"fileWithBytes": b64, "name": name, "mimeType": media_type}})
        }
        _ => json!({"raw": b64, "filename": name, "mediaType": media_type}),
    }
}

/// A file part by URL.
pub fn url_part(w: Wire, url: &str, name: &str, media_type: &str) -> Value {
    match (w.dialect, w.rest()) {
        (Dialect::V03, false) => {
            json!({"kind": "file", "file": {"uri": url, "name": name, "mimeType": media_type}})
        }
        (Dialect::V03, true) => {
            json!({"file": {"fileWithUri": url, "name": name, "mimeType": media_type}})
        }
        _ => json!({"url": url, "filename": name, "mediaType": media_type}),
    }
}

/// Where a message keeps its parts: v0.3 proto-JSON says `content`.
pub fn parts_key(w: Wire) -> &'static str {
    if w.dialect == Dialect::V03 && w.rest() {
        "content"
    } else {
        "parts"
    }
}

/// Where a task's status keeps its message: v0.3 proto-JSON says `update`.
pub fn status_message_key(w: Wire) -> &'static str {
    if w.dialect == Dialect::V03 && w.rest() {
        "update"
    } else {
        "message"
    }
}

/// Who wrote a message.
pub fn role(w: Wire, agent: bool) -> &'static str {
    match (tagged(w), agent) {
        (true, true) => "agent",
        (true, false) => "user",
        (false, true) => "ROLE_AGENT",
        (false, false) => "ROLE_USER",
    }
}

/// What a message says of itself besides its parts.
pub struct Message<'a> {
    pub message_id: &'a str,
    pub task_id: &'a str,
    pub context_id: &'a str,
    pub agent: bool,
}

/// A message with `parts` (already written for `w`).
pub fn message(w: Wire, m: &Message<'_>, parts: Vec<Value>) -> Value {
    let mut v = Map::new();
    v.insert("messageId".into(), m.message_id.into());
    v.insert("role".into(), role(w, m.agent).into());
    v.insert(parts_key(w).into(), Value::Array(parts));
    v.insert("taskId".into(), m.task_id.into());
    v.insert("contextId".into(), m.context_id.into());
    if tagged(w) {
        v.insert("kind".into(), "message".into());
    }
    Value::Object(v)
}

/// A task (id, context, status, and whatever the caller adds) tagged as the wire wants.
pub fn task_kind(w: Wire, mut task: Value) -> Value {
    if tagged(w) {
        task["kind"] = json!("task");
    }
    task
}

/// A send's answer (and a stream's first event): v0.3 JSON-RPC returns the task bare, the
/// others wrap it (`{"task": …}`).
pub fn send_result(w: Wire, task: Value) -> Value {
    if tagged(w) {
        task
    } else {
        json!({ "task": task })
    }
}

/// A stream event's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    Status,
    Artifact,
}

/// A stream event around `body`: v1 wraps it (`{"statusUpdate": …}`), v0.3 JSON-RPC tags it
/// (`kind: "status-update"`).
pub fn event(w: Wire, kind: Event, mut body: Value) -> Value {
    let (tag, key) = match kind {
        Event::Status => ("status-update", "statusUpdate"),
        Event::Artifact => ("artifact-update", "artifactUpdate"),
    };
    if tagged(w) {
        body["kind"] = json!(tag);
        body
    } else {
        json!({ key: body })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_are_spelled_per_wire() {
        let s = TaskState::Canceled;
        assert_eq!(state(Wire::V1_RPC, s), "TASK_STATE_CANCELED");
        assert_eq!(state(Wire::V03_RPC, s), "canceled");
        assert_eq!(state(Wire::V03_REST, s), "TASK_STATE_CANCELLED");
        assert_eq!(
            state(Wire::V1_REST, TaskState::InputRequired),
            "TASK_STATE_INPUT_REQUIRED"
        );
        assert_eq!(
            state(Wire::V1_RPC, TaskState::Unknown),
            "TASK_STATE_UNSPECIFIED"
        );
    }

    #[test]
    fn parts_messages_and_events_per_wire() {
        assert_eq!(text_part(Wire::V03_RPC, "a")["kind"], "text");
        assert!(text_part(Wire::V03_REST, "a").get("kind").is_none());
        assert_eq!(
            data_part(Wire::V03_REST, &json!(1)),
            json!({"data": {"data": 1}})
        );
        assert_eq!(
            file_part(Wire::V1_RPC, "aGk=", "x", "text/plain")["raw"],
            "aGk="
        );
        let m = Message {
            message_id: "m",
            task_id: "t",
            context_id: "c",
            agent: true,
        };
        let v = message(Wire::V03_REST, &m, vec![text_part(Wire::V03_REST, "hi")]);
        assert_eq!(
            (v["role"].as_str(), v["content"][0]["text"].as_str()),
            (Some("ROLE_AGENT"), Some("hi"))
        );
        assert_eq!(message(Wire::V03_RPC, &m, vec![])["role"], "agent");
        assert_eq!(
            event(Wire::V1_RPC, Event::Status, json!({"a": 1}))["statusUpdate"]["a"],
            1
        );
        assert_eq!(
            event(Wire::V03_RPC, Event::Artifact, json!({}))["kind"],
            "artifact-update"
        );
        assert_eq!(
            send_result(Wire::V03_RPC, json!({"id": "t"})),
            json!({"id": "t"})
        );
    }
}
