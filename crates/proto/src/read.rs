//! What a reader takes from a part or a message, in any dialect's spelling: typed serde shapes,
//! lenient as real servers and clients are sloppy (a field of the wrong type reads as absent, not
//! as a broken answer), and the one domain [`Part`] both sides use: the client reading answers,
//! `serve` reading what it is sent.
//!
//! The spellings (docs/a2a.md): v1 parts are bare (`text`, `raw` + `filename` + `mediaType`,
//! `url`, `data`); v0.3 tags them (`kind`) and wraps a file (`file: {bytes | uri, name,
//! mimeType}`); v0.3's proto-JSON says `fileWithBytes`/`fileWithUri` and `content` for the parts,
//! and a2a-sdk writes some bodies with the proto's own snake_case names (`message_id`).

use crate::lenient::{List, Obj, Str, from_object};
use serde::Deserialize;
use serde_json::Value;

/// One part, whatever spelled it.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Text(String),
    Data(Value),
    File {
        name: Option<String>,
        media_type: Option<String>,
        content: FileContent,
    },
    /// An object no dialect calls a part (no text, file or data), kept as sent: a reader shows
    /// it rather than drop it silently, a server skips it.
    Other(Value),
}

/// Where a file part's bytes are.
#[derive(Debug, Clone, PartialEq)]
pub enum FileContent {
    /// Base64, as sent.
    Bytes(String),
    /// A reference, never fetched by a2a-mod.
    Url(String),
    /// Neither: a file part that says nothing of its file (a server refuses it, a reader skips it).
    Neither,
}

/// A field meant to hold a string (an id).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Field {
    /// Absent, or null.
    #[default]
    Absent,
    Text(String),
    /// A number, an object, anything but a string.
    NotText,
}

/// What a string field held.
pub(crate) fn field(s: &Str<'_>) -> Field {
    match (s.get(), s.other) {
        (Some(t), _) => Field::Text(t.to_string()),
        (None, true) => Field::NotText,
        (None, false) => Field::Absent,
    }
}

impl Field {
    /// The text, when it is one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Field::Text(t) => Some(t),
            _ => None,
        }
    }

    /// This, else `other` when this is absent.
    pub fn or(self, other: Field) -> Field {
        match self {
            Field::Absent => other,
            f => f,
        }
    }
}

/// v0.3's file object (`file: {…}`), every spelling.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireFile<'a> {
    #[serde(borrow)]
    bytes: Str<'a>,
    #[serde(borrow)]
    file_with_bytes: Str<'a>,
    #[serde(borrow, rename = "file_with_bytes")]
    file_with_bytes_snake: Str<'a>,
    #[serde(borrow)]
    uri: Str<'a>,
    #[serde(borrow)]
    url: Str<'a>,
    #[serde(borrow)]
    file_with_uri: Str<'a>,
    #[serde(borrow, rename = "file_with_uri")]
    file_with_uri_snake: Str<'a>,
    #[serde(borrow)]
    name: Str<'a>,
    #[serde(borrow)]
    filename: Str<'a>,
    #[serde(borrow)]
    mime_type: Str<'a>,
    #[serde(borrow)]
    media_type: Str<'a>,
    #[serde(borrow, rename = "mime_type")]
    mime_type_snake: Str<'a>,
    #[serde(borrow, rename = "media_type")]
    media_type_snake: Str<'a>,
}

impl WireFile<'_> {
    fn bytes(&self) -> Option<String> {
        [
            &self.bytes,
            &self.file_with_bytes,
            &self.file_with_bytes_snake,
        ]
        .into_iter()
        .find_map(Str::owned)
    }

    fn url(&self) -> Option<String> {
        [
            &self.uri,
            &self.url,
            &self.file_with_uri,
            &self.file_with_uri_snake,
        ]
        .into_iter()
        .find_map(Str::owned)
    }

    fn name(&self) -> Option<String> {
        self.name.owned().or_else(|| self.filename.owned())
    }

    fn media_type(&self) -> Option<String> {
        [
            &self.media_type,
            &self.mime_type,
            &self.mime_type_snake,
            &self.media_type_snake,
        ]
        .into_iter()
        .find_map(Str::owned)
    }
}

/// A part as either dialect writes it: v1's fields are the file object's at the top level.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WirePart<'a> {
    #[serde(borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    text: Str<'a>,
    data: Option<Value>,
    #[serde(borrow)]
    file: Obj<WireFile<'a>>,
    #[serde(borrow)]
    raw: Str<'a>,
    #[serde(borrow, flatten)]
    top: WireFile<'a>,
}

impl Part {
    /// Reads one part; `None` for anything but an object with something in it.
    pub fn read(v: &Value) -> Option<Part> {
        let p: WirePart<'_> = from_object(v)?;
        match p.part() {
            Some(part) => Some(part),
            None if v.as_object().is_some_and(|o| !o.is_empty()) => Some(Part::Other(v.clone())),
            None => None,
        }
    }

    /// Whether it is text.
    pub fn is_text(&self) -> bool {
        matches!(self, Part::Text(_))
    }
}

impl WirePart<'_> {
    /// The part it spells; `None` when it spells none (no text, file or data).
    fn part(self) -> Option<Part> {
        let p = self;
        let kind = p.kind.get();
        if let Some(t) = p.text.get()
            && matches!(kind, None | Some("text"))
        {
            return Some(Part::Text(t.to_string()));
        }
        let file = |f: &WireFile<'_>, bytes: Option<String>| Part::File {
            name: f.name(),
            media_type: f.media_type(),
            content: match (bytes, f.url()) {
                (Some(b), _) => FileContent::Bytes(b),
                (None, Some(u)) => FileContent::Url(u),
                (None, None) => FileContent::Neither,
            },
        };
        if let Some(f) = &p.file.0 {
            return Some(file(f, f.bytes()));
        }
        match file(&p.top, p.raw.owned()) {
            Part::File {
                content: FileContent::Neither,
                ..
            } if kind != Some("file") => p.data.map(Part::Data),
            part => Some(part),
        }
    }
}

/// A message as either dialect writes it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireMessage<'a> {
    #[serde(borrow, rename = "messageId")]
    message_id: Str<'a>,
    #[serde(borrow, rename = "message_id")]
    message_id_snake: Str<'a>,
    #[serde(borrow, rename = "taskId")]
    task_id: Str<'a>,
    #[serde(borrow, rename = "task_id")]
    task_id_snake: Str<'a>,
    #[serde(borrow, rename = "contextId")]
    context_id: Str<'a>,
    #[serde(borrow, rename = "context_id")]
    context_id_snake: Str<'a>,
    #[serde(borrow)]
    role: Str<'a>,
    parts: List<Value>,
    content: List<Value>,
    extensions: List<Str<'a>>,
}

fn agent_role(r: &str) -> bool {
    r.eq_ignore_ascii_case("agent") || r == "ROLE_AGENT"
}

/// What a message says: its ids, who wrote it, its parts (each as [`Part::read`] reads it).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    pub message_id: Field,
    pub task_id: Field,
    pub context_id: Field,
    /// The role as spelled (`user`/`agent`, `ROLE_USER`/`ROLE_AGENT`).
    pub role: Option<String>,
    pub parts: Vec<Part>,
    /// Whether it has a list of parts at all (`parts`, or proto-JSON's `content`).
    pub has_parts: bool,
    /// The extensions it says it uses (their URIs).
    pub extensions: Vec<String>,
}

impl Message {
    /// Whether the agent wrote it (v0.3 `agent`, v1 `ROLE_AGENT`).
    pub fn is_agent(&self) -> bool {
        self.role.as_deref().is_some_and(agent_role)
    }

    /// Whether the user wrote it (v0.3 `user`, v1 `ROLE_USER`).
    pub fn is_user(&self) -> bool {
        matches!(self.role.as_deref(), Some("user" | "ROLE_USER"))
    }

    /// Reads a message; `None` for anything but an object.
    pub fn read(v: &Value) -> Option<Message> {
        let m: WireMessage<'_> = from_object(v)?;
        let either = |a: &Str<'_>, b: &Str<'_>| field(a).or(field(b));
        let parts = if m.parts.present { m.parts } else { m.content };
        Some(Message {
            message_id: either(&m.message_id, &m.message_id_snake),
            task_id: either(&m.task_id, &m.task_id_snake),
            context_id: either(&m.context_id, &m.context_id_snake),
            role: m.role.owned(),
            has_parts: parts.present,
            parts: parts.items.iter().filter_map(Part::read).collect(),
            extensions: m
                .extensions
                .items
                .into_iter()
                .filter_map(Str::take)
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_dialect_reads_as_one_part() {
        let file = |name: &str, media: &str, b: &str| Part::File {
            name: Some(name.into()),
            media_type: Some(media.into()),
            content: FileContent::Bytes(b.into()),
        };
        for (v, want) in [
            (json!({"text": "a"}), Some(Part::Text("a".into()))),
            (
                json!({"kind": "text", "text": "a"}),
                Some(Part::Text("a".into())),
            ),
            (
                json!({"raw": "aGk=", "filename": "x", "mediaType": "text/plain"}),
                Some(file("x", "text/plain", "aGk=")),
            ),
            (
                json!({"kind": "file", "file": {"bytes": "aGk=", "name": "x", "mimeType": "text/plain"}}),
                Some(file("x", "text/plain", "aGk=")),
            ),
            (
                json!({"file": {"fileWithBytes": "aGk=", "name": "x", "mimeType": "text/plain"}}),
                Some(file("x", "text/plain", "aGk=")),
            ),
            (
                json!({"file": {"file_with_bytes": "aGk=", "name": "x", "mime_type": "text/plain"}}),
                Some(file("x", "text/plain", "aGk=")),
            ),
            (
                json!({"url": "https://x/y", "filename": "y"}),
                Some(Part::File {
                    name: Some("y".into()),
                    media_type: None,
                    content: FileContent::Url("https://x/y".into()),
                }),
            ),
            (
                json!({"kind": "file", "file": {"uri": "https://x/y"}}),
                Some(Part::File {
                    name: None,
                    media_type: None,
                    content: FileContent::Url("https://x/y".into()),
                }),
            ),
            (
                json!({"data": {"k": 1}, "mediaType": "application/json"}),
                Some(Part::Data(json!({"k": 1}))),
            ),
            (
                json!({"kind": "data", "data": [1]}),
                Some(Part::Data(json!([1]))),
            ),
            // Sloppy: a field of the wrong type reads as absent.
            (
                json!({"text": 5, "data": "d"}),
                Some(Part::Data(json!("d"))),
            ),
            (
                json!({"kind": "data", "text": "x", "data": 1}),
                Some(Part::Data(json!(1))),
            ),
            (
                json!({"metadata": {}}),
                Some(Part::Other(json!({"metadata": {}}))),
            ),
            (json!({}), None),
            (
                json!({"kind": "file", "file": "x", "text": "t"}),
                Some(Part::File {
                    name: None,
                    media_type: None,
                    content: FileContent::Neither,
                }),
            ),
            (
                json!({"kind": "file", "file": {"name": "x"}}),
                Some(Part::File {
                    name: Some("x".into()),
                    media_type: None,
                    content: FileContent::Neither,
                }),
            ),
            (json!("text"), None),
        ] {
            assert_eq!(Part::read(&v), want, "{v}");
        }
    }

    #[test]
    fn messages_in_every_spelling() {
        let m = Message::read(
            &json!({"message_id": "m", "role": "ROLE_AGENT", "context_id": "c",
            "content": [{"text": "hi"}, {"bogus": 1}]}),
        )
        .unwrap();
        assert_eq!(
            (m.message_id.text(), m.context_id.text(), m.is_agent()),
            (Some("m"), Some("c"), true)
        );
        assert_eq!(
            m.parts,
            [Part::Text("hi".into()), Part::Other(json!({"bogus": 1}))]
        );
        let m = Message::read(
            &json!({"kind": "message", "messageId": "m", "role": "user", "parts": []}),
        )
        .unwrap();
        assert_eq!((m.is_user(), m.has_parts), (true, true));
        assert_eq!(
            Message::read(&json!({"messageId": 7})).unwrap().message_id,
            Field::NotText
        );
        assert!(Message::read(&json!([1])).is_none());
        assert!(
            Message::read(&json!({"role": "agent", "parts": 5}))
                .unwrap()
                .is_agent()
        );
        assert!(
            !Message::read(&json!({"role": "ROLE_USER"}))
                .unwrap()
                .is_agent()
        );
    }
}
