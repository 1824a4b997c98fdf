//! What a reader takes from a part or a message, in any dialect's spelling: typed serde shapes,
//! lenient as real servers and clients are sloppy (a field of the wrong type reads as absent, not
//! as a broken answer), and the one domain [`Part`] both sides use: the client reading answers,
//! `serve` reading what it is sent.
//!
//! The spellings (docs/a2a.md): v1 parts are bare (`text`, `raw` + `filename` + `mediaType`,
//! `url`, `data`); v0.3 tags them (`kind`) and wraps a file (`file: {bytes | uri, name,
//! mimeType}`); v0.3's proto-JSON says `fileWithBytes`/`fileWithUri` and `content` for the parts,
//! and a2a-sdk writes some bodies with the proto's own snake_case names (`message_id`).

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use std::borrow::Cow;

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

/// A string field: its text, or nothing when the field holds anything else (and whether it
/// held something else, for a server that must refuse that).
#[derive(Debug, Default)]
struct Str<'a> {
    text: Option<Cow<'a, str>>,
    other: bool,
}

impl<'a> Str<'a> {
    fn get(&self) -> Option<&str> {
        self.text.as_deref()
    }

    fn owned(&self) -> Option<String> {
        self.text.as_deref().map(str::to_string)
    }

    fn field(&self) -> Field {
        match (&self.text, self.other) {
            (Some(t), _) => Field::Text(t.to_string()),
            (None, true) => Field::NotText,
            (None, false) => Field::Absent,
        }
    }
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

impl Field {
    /// The text, when it is one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Field::Text(t) => Some(t),
            _ => None,
        }
    }

    fn or(self, other: Field) -> Field {
        match self {
            Field::Absent => other,
            f => f,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Str<'a>, D::Error> {
        struct Any;
        /// Anything but a string: not text.
        const OTHER: Option<Option<Cow<'static, str>>> = Some(None);
        impl<'de> Visitor<'de> for Any {
            // `None`: absent or null; `Some(None)`: not a string; `Some(Some(text))`.
            type Value = Option<Option<Cow<'de, str>>>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Some(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Some(Some(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Some(Some(Cow::Owned(s))))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(OTHER)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(OTHER)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(OTHER)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(OTHER)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                d.deserialize_any(Any)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(OTHER)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(OTHER)
            }
        }
        Ok(match d.deserialize_any(Any)? {
            None => Str::default(),
            Some(text) => Str {
                other: text.is_none(),
                text,
            },
        })
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
    file: Option<WireFile<'a>>,
    #[serde(borrow)]
    raw: Str<'a>,
    #[serde(borrow, flatten)]
    top: WireFile<'a>,
}

impl Part {
    /// Reads one part; `None` for what no dialect calls a part (no text, file or data).
    pub fn read(v: &Value) -> Option<Part> {
        // An object only: serde would read a struct from an array too, field by position.
        let p = WirePart::deserialize(v.as_object().map(|_| v)?).ok()?;
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
        if let Some(f) = &p.file {
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
    parts: Option<Vec<Value>>,
    content: Option<Vec<Value>>,
}

/// Who wrote a message: its role alone, read without its parts.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireRole<'a> {
    #[serde(borrow)]
    role: Str<'a>,
}

fn agent_role(r: &str) -> bool {
    r.eq_ignore_ascii_case("agent") || r == "ROLE_AGENT"
}

/// Whether the agent wrote the message `v` (v0.3 `agent`, v1 `ROLE_AGENT`), its parts unread.
pub fn is_agent_message(v: &Value) -> bool {
    v.is_object() && WireRole::deserialize(v).is_ok_and(|m| m.role.get().is_some_and(agent_role))
}

/// What a message says: its ids, who wrote it, its parts (each as [`Part::read`] reads it, the
/// ones it cannot in `unread`).
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
        let m = WireMessage::deserialize(v.as_object().map(|_| v)?).ok()?;
        let either = |a: &Str<'_>, b: &Str<'_>| a.field().or(b.field());
        let parts = m.parts.or(m.content);
        Some(Message {
            message_id: either(&m.message_id, &m.message_id_snake),
            task_id: either(&m.task_id, &m.task_id_snake),
            context_id: either(&m.context_id, &m.context_id_snake),
            role: m.role.owned(),
            has_parts: parts.is_some(),
            parts: parts.iter().flatten().filter_map(Part::read).collect(),
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
            (json!({"metadata": {}}), None),
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
        assert_eq!(m.parts, [Part::Text("hi".into())]);
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
        assert!(is_agent_message(&json!({"role": "agent", "parts": 5})));
        assert!(!is_agent_message(&json!({"role": "ROLE_USER"})));
    }
}
