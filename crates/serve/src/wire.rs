//! The A2A JSON `serve` reads and writes, in the four forms clients speak (docs/a2a.md): v1 and
//! v0.3 JSON-RPC, v1 HTTP+JSON, and the v0.3 HTTP+JSON proto-JSON (`content` for parts,
//! `TASK_STATE_CANCELLED`, the status message as `update`). Pure: values in, values out.
//!
//! Lenient in what it reads (either dialect's message shape under any method, roles in either
//! spelling), exact in what it writes.

use crate::task::{Event, Msg, Task, Update};
use a2a_mod_core::task::TaskState;
use a2a_mod_proto::write;
use serde_json::{Value, json};

pub use a2a_mod_proto::error::RpcError as A2aError;
pub use a2a_mod_proto::error::{
    CONTENT_TYPE_NOT_SUPPORTED, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND,
    PARSE_ERROR, TASK_NOT_CANCELABLE, TASK_NOT_FOUND, UNSUPPORTED_OPERATION, rpc_result,
};
pub use a2a_mod_proto::{Binding, Dialect, Wire};

/// What a client's message carries that a run reads.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Incoming {
    pub message_id: String,
    pub text: String,
    pub task_id: Option<String>,
    pub context_id: Option<String>,
    /// The message's file parts, decoded (the run finds them in its inbox, `engine::inbox`).
    pub files: Vec<InFile>,
    /// A webhook the send registers for its task (`configuration`'s push notification config),
    /// checked; its task id is filled in once the task has one.
    pub push: Option<a2a_mod_store::served::PushConfig>,
}

/// A file a client sent: its bytes, and what it says of them, cleaned. Its name is a label only:
/// the file is saved under a name serve chooses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InFile {
    /// The sender's file name, reduced to `[A-Za-z0-9._-]`, without a leading dot or dash, at
    /// most [`MAX_LABEL`] characters; `file` when nothing is left.
    pub label: String,
    /// The media type, when it is one (`type/subtype` of token characters).
    pub media_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// The most a file of a message may hold, decoded.
pub const MAX_FILE_BYTES: usize = 10 << 20;
/// The most the files of one message may hold together, decoded.
pub const MAX_FILES_BYTES: usize = 32 << 20;
/// The most files one message may carry.
pub const MAX_FILES: usize = 32;
/// The longest label kept of a sender's file name.
pub const MAX_LABEL: usize = 80;

/// The longest id a client may name (task, context, message): ids are keys, never paths.
const MAX_ID: usize = 128;

/// An id a client names (a task, a context, a message): a key only, never a path, and echoed in
/// answers and errors, so it must be a bounded plain id (no spaces, controls, quotes).
pub fn checked_id(f: &a2a_mod_proto::read::Field, what: &str) -> Result<Option<String>, A2aError> {
    use a2a_mod_proto::read::Field;
    match f {
        Field::Absent => Ok(None),
        Field::Text(s) if s.is_empty() => Ok(None),
        Field::Text(s) if s.len() <= MAX_ID && a2a_mod_core::bounds::plain_id(s) => {
            Ok(Some(s.clone()))
        }
        _ => Err(A2aError::new(
            INVALID_PARAMS,
            format!("Invalid params: {what} must be a string of at most {MAX_ID} plain characters"),
        )),
    }
}

/// The message of a send, in any dialect's shape (`a2a_mod_proto::read`: `parts` or proto-JSON
/// `content`, v1 or v0.3 parts, proto field names). Text parts are joined by new lines, data
/// parts given as JSON, file parts with their bytes decoded and bounded ([`MAX_FILE_BYTES`],
/// [`MAX_FILES_BYTES`], [`MAX_FILES`]); a file by URL is refused (serve fetches nothing a client
/// names). v0.3's proto-JSON wraps a data part's value once more (`{"data": {"data": …}}`),
/// which `w` says.
pub fn read_message(w: Wire, m: &Value) -> Result<Incoming, A2aError> {
    use a2a_mod_proto::read::{Message, Part};
    let bad = |why: &str| A2aError::new(INVALID_PARAMS, format!("Invalid params: {why}"));
    let msg = Message::read(m).ok_or_else(|| bad("message must be an object"))?;
    let message_id = checked_id(&msg.message_id, "message.messageId")?
        .ok_or_else(|| bad("message.messageId is required"))?;
    if msg.role.is_some() && !msg.is_user() {
        return Err(bad(
            "message.role must be the user's (\"ROLE_USER\" or \"user\")",
        ));
    }
    if !msg.has_parts {
        return Err(bad("message.parts must be an array"));
    }
    let mut texts: Vec<String> = Vec::new();
    let mut files: Vec<InFile> = Vec::new();
    let mut files_bytes = 0usize;
    for p in msg.parts {
        match p {
            Part::Text(t) => texts.push(t),
            Part::Data(d) => {
                let d = match d {
                    Value::Object(mut o) if w == Wire::V03_REST && o.len() == 1 => {
                        o.remove("data").unwrap_or(Value::Object(o))
                    }
                    d => d,
                };
                texts.push(format!("Data sent with the message (JSON):\n{d}"));
            }
            Part::File {
                name,
                media_type,
                content,
            } => {
                let n = files.len() + 1;
                if n > MAX_FILES {
                    return Err(bad(&format!(
                        "a message carries at most {MAX_FILES} files — send the rest in another"
                    )));
                }
                let f = file_part(name.as_deref(), media_type.as_deref(), content)
                    .map_err(|why| bad(&format!("file part {n}: {why}")))?;
                if f.bytes.len() > MAX_FILE_BYTES {
                    return Err(bad(&format!(
                        "file part {n} holds {} bytes, over the {} MiB a file may hold — send it smaller, or split it",
                        f.bytes.len(),
                        MAX_FILE_BYTES >> 20
                    )));
                }
                files_bytes += f.bytes.len();
                if files_bytes > MAX_FILES_BYTES {
                    return Err(bad(&format!(
                        "the files hold over the {} MiB one message may carry — send them in several",
                        MAX_FILES_BYTES >> 20
                    )));
                }
                files.push(f);
            }
            // A part no dialect knows carries nothing a run could use.
            Part::Other(_) => {}
        }
    }
    let text = texts.join("\n");
    if text.trim().is_empty() && files.is_empty() {
        return Err(bad("the message has no text"));
    }
    Ok(Incoming {
        message_id,
        text,
        task_id: checked_id(&msg.task_id, "message.taskId")?,
        context_id: checked_id(&msg.context_id, "message.contextId")?,
        files,
        push: None,
    })
}

/// A file part's bytes decoded, its name a label; `Err` says what is wrong with it.
fn file_part(
    name: Option<&str>,
    media_type: Option<&str>,
    content: a2a_mod_proto::read::FileContent,
) -> Result<InFile, String> {
    use a2a_mod_proto::read::FileContent;
    let b64 = match content {
        FileContent::Bytes(b) => b,
        FileContent::Url(_) => return Err("a file by URL is not fetched — send its bytes".into()),
        FileContent::Neither => {
            return Err(
                "it has no bytes — send them base64 in `raw` (v1) or `file.bytes` (v0.3)".into(),
            );
        }
    };
    use base64::Engine as _;
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    // Decoding holds at most 3/4 of the base64 as bytes; the body bound limits the base64.
    let bytes = engine
        .decode(b64.trim())
        .map_err(|_| "its bytes are not base64".to_string())?;
    Ok(InFile {
        label: label(name),
        media_type: media_type.filter(|m| is_media_type(m)).map(str::to_string),
        bytes,
    })
}

/// A sender's file name as a label: its last path part, each character outside
/// `[A-Za-z0-9._-]` an `_`, no leading dot or dash, at most [`MAX_LABEL`] characters.
pub fn label(name: Option<&str>) -> String {
    let last = name
        .unwrap_or_default()
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default();
    let cleaned: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned: String = cleaned
        .trim_start_matches(['.', '-'])
        .chars()
        .take(MAX_LABEL)
        .collect();
    if cleaned.is_empty() {
        "file".into()
    } else {
        cleaned
    }
}

/// `type/subtype` of RFC 7230 token characters, bounded.
fn is_media_type(m: &str) -> bool {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    m.len() <= 127 && m.split_once('/').is_some_and(|(a, b)| token(a) && token(b))
}

fn message(w: Wire, t: &Task, m: &Msg) -> Value {
    let about = write::Message {
        message_id: &m.message_id,
        task_id: &t.id,
        context_id: &t.context_id,
        agent: m.agent,
    };
    write::message(w, &about, vec![write::text_part(w, &m.text)])
}

/// A task's status as it was at `at_ms`.
fn status(w: Wire, t: &Task, state: TaskState, text: Option<&str>, at_ms: i64) -> Value {
    let mut s = json!({
        "state": write::state(w, state),
        "timestamp": a2a_mod_core::clock::rfc3339(at_ms),
    });
    if let Some(text) = text {
        let m = Msg {
            message_id: format!("{}-status-{at_ms}", t.id),
            agent: true,
            text: text.to_string(),
        };
        let mut msg = message(w, t, &m);
        // The question structured beside its line, in the extension the card declares.
        if let (TaskState::InputRequired, Some(data)) = (state, &t.ask) {
            if let Some(p) = msg[write::parts_key(w)].as_array_mut() {
                p.push(write::data_part(w, data));
            }
            msg["extensions"] = json!([crate::ask::EXTENSION]);
        }
        s[write::status_message_key(w)] = msg;
    }
    s
}

fn artifact(w: Wire, t: &Task, text: &str) -> Value {
    json!({
        "artifactId": t.artifact_id(),
        "name": "answer",
        "parts": [write::text_part(w, text)],
    })
}

/// The run's changes as an artifact: one file part, `changes.patch`.
fn changes_artifact(w: Wire, t: &Task, patch: &str) -> Value {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(patch);
    let name = "changes.patch";
    let part = write::file_part(w, &b64, name, "text/x-diff");
    json!({"artifactId": format!("{}-changes", t.id), "name": name, "parts": [part]})
}

/// A task as GetTask shows it: the last `history` messages (`None`: all of them).
pub fn task(w: Wire, t: &Task, history: Option<usize>) -> Value {
    let st = status(w, t, t.state, t.status_text.as_deref(), t.updated_ms);
    let mut v = json!({"id": t.id, "contextId": t.context_id, "status": st});
    let artifacts: Vec<Value> = (!t.answer.is_empty())
        .then(|| artifact(w, t, &t.answer))
        .into_iter()
        .chain(t.changes.as_deref().map(|p| changes_artifact(w, t, p)))
        .collect();
    if !artifacts.is_empty() {
        v["artifacts"] = Value::Array(artifacts);
    }
    let keep = history.unwrap_or(usize::MAX).min(t.history.len());
    if keep > 0 {
        v["history"] = t.history[t.history.len() - keep..]
            .iter()
            .map(|m| message(w, t, m))
            .collect();
    }
    if !t.metadata.is_empty() {
        v["metadata"] = Value::Object(t.metadata.clone());
    }
    write::task_kind(w, v)
}

pub use write::send_result;

/// A change of a task as a stream event: `ev` as it was when it happened, `t` the task now.
pub fn update(w: Wire, t: &Task, ev: &Event) -> Value {
    let (kind, body) = match &ev.update {
        Update::Status => {
            let st = status(w, t, ev.state, ev.status_text.as_deref(), ev.at_ms);
            let mut b = json!({"taskId": t.id, "contextId": t.context_id, "status": st});
            let last = !ev.state.is_live();
            if w.dialect == Dialect::V03 {
                b["final"] = json!(last);
            }
            if last && !t.metadata.is_empty() {
                b["metadata"] = Value::Object(t.metadata.clone());
            }
            (write::Event::Status, b)
        }
        Update::Chunk { text, append } => (
            write::Event::Artifact,
            json!({
                "taskId": t.id, "contextId": t.context_id,
                "artifact": artifact(w, t, text),
                "append": append, "lastChunk": false,
            }),
        ),
        Update::Changes => (
            write::Event::Artifact,
            json!({
                "taskId": t.id, "contextId": t.context_id,
                "artifact": changes_artifact(w, t, t.changes.as_deref().unwrap_or_default()),
                "append": false, "lastChunk": true,
            }),
        ),
    };
    write::event(w, kind, body)
}

/// A page of ListTasks, as asked.
pub struct Page<'a> {
    pub tasks: &'a [Task],
    pub page_size: usize,
    /// How many tasks match in all.
    pub total: usize,
    /// Empty on the last page.
    pub next_token: String,
    /// Each task's history, at most this many messages (none when not asked).
    pub history: Option<usize>,
    /// Without them the field is left out, not empty (the spec's rule).
    pub include_artifacts: bool,
}

/// ListTasks' answer.
pub fn list(w: Wire, p: &Page<'_>) -> Value {
    let tasks: Vec<Value> = (p.tasks.iter())
        .map(|t| {
            let mut v = task(w, t, Some(p.history.unwrap_or(0)));
            if !p.include_artifacts
                && let Some(o) = v.as_object_mut()
            {
                o.remove("artifacts");
            }
            v
        })
        .collect();
    json!({
        "tasks": tasks, "nextPageToken": p.next_token, "pageSize": p.page_size,
        "totalSize": p.total,
    })
}

/// What the card says about one agent (`AgentCard`, v1 fields and the v0.3 ones a 0.3 client
/// reads, in one document as the Python SDK serves it).
pub struct CardInfo<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// The agent's base URL: JSON-RPC is POSTed here, REST paths hang under it.
    pub base: &'a str,
    pub bearer: bool,
}

pub fn card(c: &CardInfo<'_>) -> Value {
    let rpc = format!("{}/", c.base);
    let mut card = json!({
        "name": c.name,
        "description": c.description,
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": [
            {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": c.base, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": c.base, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": true, "pushNotifications": true, "extensions": [{
            "uri": crate::ask::EXTENSION,
            "description": "A question a run asks (input-required) carries a data part beside its line: a permission as toolCall (the tool, its input, the command, the answers, the suggested rule), Claude's own question as question (with its options). Answer with text as the line says.",
            "required": false,
        }]},
        "defaultInputModes": ["text/plain", "application/json", "application/octet-stream"],
        "defaultOutputModes": ["text/plain"],
        "skills": [{
            "id": "claude-code",
            "name": "Claude Code",
            "description": c.description,
            "tags": ["claude-code", "coding"],
            "examples": ["Run the tests and fix what fails"],
        }],
        // The v0.3 fields (a 0.3 client reads these).
        "url": rpc,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "additionalInterfaces": [
            {"url": rpc, "transport": "JSONRPC"},
            {"url": c.base, "transport": "HTTP+JSON"},
        ],
    });
    if c.bearer {
        // Both spellings in one entry, so a v1 and a v0.3 parser each find theirs.
        card["securitySchemes"] = json!({"bearer": {
            "httpAuthSecurityScheme": {"scheme": "Bearer"},
            "type": "http", "scheme": "bearer",
        }});
        card["securityRequirements"] = json!([{"schemes": {"bearer": {"list": []}}}]);
        card["security"] = json!([{"bearer": []}]);
    }
    card
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> Task {
        let mut t = Task::new("t1", "c1", "build", 1_000);
        t.history.push(Msg {
            message_id: "m1".into(),
            agent: false,
            text: "hi".into(),
        });
        t
    }

    #[test]
    fn messages_are_read_in_every_shape() {
        let v1 = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "a"}, {"data": {"k": 1}}]});
        let r = read_message(Wire::V1_RPC, &v1).unwrap();
        assert_eq!(r.text, "a\nData sent with the message (JSON):\n{\"k\":1}");
        let v03 = json!({"kind": "message", "messageId": "m", "role": "user", "contextId": "c",
            "parts": [{"kind": "text", "text": "b"}]});
        assert_eq!(
            read_message(Wire::V1_RPC, &v03)
                .unwrap()
                .context_id
                .as_deref(),
            Some("c")
        );
        let rest03 = json!({"messageId": "m", "role": "ROLE_USER", "content": [{"text": "c"}, {"data": {"data": 1}}]});
        // v0.3's proto-JSON wraps a data part's value once more; v1's data is the value itself.
        assert_eq!(
            read_message(Wire::V03_REST, &rest03).unwrap().text,
            "c\nData sent with the message (JSON):\n1"
        );
        assert_eq!(
            read_message(Wire::V1_RPC, &rest03).unwrap().text,
            "c\nData sent with the message (JSON):\n{\"data\":1}"
        );
        let proto = json!({"message_id": "m", "role": "ROLE_USER", "context_id": "k", "content": [{"text": "d"}]});
        assert_eq!(
            read_message(Wire::V1_RPC, &proto)
                .unwrap()
                .context_id
                .as_deref(),
            Some("k")
        );
        for (bad, code) in [
            (
                json!({"role": "user", "parts": [{"text": "x"}]}),
                INVALID_PARAMS,
            ),
            (
                json!({"messageId": "m", "role": "agent", "parts": [{"text": "x"}]}),
                INVALID_PARAMS,
            ),
            (json!({"messageId": "m", "parts": []}), INVALID_PARAMS),
            (
                json!({"messageId": "m", "parts": [{"text": "x"}], "taskId": "two words\u{1b}"}),
                INVALID_PARAMS,
            ),
            (
                json!({"messageId": "m", "parts": [{"url": "http://169.254.169.254/x"}]}),
                INVALID_PARAMS,
            ),
            (
                json!({"messageId": "m", "parts": [{"raw": "not base64!"}]}),
                INVALID_PARAMS,
            ),
            (json!("text"), INVALID_PARAMS),
        ] {
            assert_eq!(
                read_message(Wire::V1_RPC, &bad).unwrap_err().code,
                code,
                "{bad}"
            );
        }
    }

    /// File parts of every dialect are read, their names kept only as cleaned labels.
    #[test]
    fn file_parts_are_decoded_and_their_names_cleaned() {
        let m = json!({"messageId": "m", "parts": [
            {"raw": "aGk=", "filename": "../../etc/passwd", "mediaType": "text/plain"},
            {"kind": "file", "file": {"bytes": "aGk", "name": ".bashrc\n\u{1b}[2J", "mimeType": "bad type"}},
            {"file": {"fileWithBytes": "", "name": ".."}}]});
        let i = read_message(Wire::V1_RPC, &m).unwrap();
        let got: Vec<(&str, Option<&str>, &[u8])> = i
            .files
            .iter()
            .map(|f| (f.label.as_str(), f.media_type.as_deref(), &f.bytes[..]))
            .collect();
        assert_eq!(
            got,
            [
                ("passwd", Some("text/plain"), &b"hi"[..]),
                ("bashrc___2J", None, &b"hi"[..]),
                ("file", None, &b""[..]),
            ]
        );
        assert_eq!(label(Some(&"x".repeat(300))).len(), MAX_LABEL);
        let big =
            json!({"messageId": "m", "parts": [{"raw": "A".repeat((MAX_FILE_BYTES + 3) / 3 * 4)}]});
        let e = read_message(Wire::V1_RPC, &big).unwrap_err();
        assert!(e.message.contains("over the 10 MiB"), "{}", e.message);
    }

    #[test]
    fn states_are_spelled_per_wire() {
        let mut t = t();
        t.state = TaskState::Canceled;
        let rest03 = Wire::V03_REST;
        assert_eq!(
            task(Wire::V1_RPC, &t, None)["status"]["state"],
            "TASK_STATE_CANCELED"
        );
        assert_eq!(task(Wire::V03_RPC, &t, None)["status"]["state"], "canceled");
        assert_eq!(
            task(rest03, &t, None)["status"]["state"],
            "TASK_STATE_CANCELLED"
        );
        assert_eq!(task(Wire::V03_RPC, &t, None)["kind"], "task");
        assert_eq!(
            task(rest03, &t, None)["history"][0]["content"][0]["text"],
            "hi"
        );
        assert!(task(Wire::V1_RPC, &t, Some(0)).get("history").is_none());
    }
}
