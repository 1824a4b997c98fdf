//! The fake worker's `parts` verb: the task completes at once with one text artifact
//! that describes every part of the message it received, so tests can check that the bytes a
//! worker got are the files Claude named. One line of JSON:
//!
//! `{"contextId": "...", "parts": [{"kind": "text", "size": 5, "sha256": "…"},
//!   {"kind": "file", "name": "a.txt", "mediaType": "text/plain", "size": 3, "sha256": "…"},
//!   {"kind": "file", "name": "b", "mediaType": "…", "url": "https://…"},
//!   {"kind": "data", "data": {…}}]}`
//!
//! Sizes and hashes are of the decoded bytes (of a text part: its UTF-8). Either dialect's part
//! shapes are read (v1 `raw`/`url`/`data`/`text` + `filename`/`mediaType`; v0.3 `kind` +
//! `file{bytes|uri, name, mimeType}`). Tests/peers/worker.py's `parts` answers the same format.

use a2a_mod_proto::read::{FileContent, Message, Part};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::Digest as _;

/// The echo of `message`'s parts, in the task's context.
pub(crate) fn summary(message: &Message, context_id: &str) -> String {
    let parts: Vec<Value> = message.parts.iter().map(part).collect();
    json!({ "contextId": context_id, "parts": parts }).to_string()
}

fn part(p: &Part) -> Value {
    let mut out = Map::new();
    match p {
        Part::Text(t) => {
            out.insert("kind".into(), "text".into());
            described(&mut out, t.as_bytes());
        }
        Part::File {
            name,
            media_type,
            content,
        } => {
            out.insert("kind".into(), "file".into());
            put(&mut out, "name", name.clone());
            put(&mut out, "mediaType", media_type.clone());
            match content {
                FileContent::Bytes(b) => bytes(&mut out, b),
                FileContent::Url(u) => put(&mut out, "url", Some(u.clone())),
                FileContent::Neither => {}
            }
        }
        Part::Data(d) => {
            out.insert("kind".into(), "data".into());
            out.insert("data".into(), d.clone());
        }
        Part::Other(_) => {
            out.insert("kind".into(), "unknown".into());
        }
    }
    Value::Object(out)
}

fn put(out: &mut Map<String, Value>, k: &str, v: Option<String>) {
    if let Some(v) = v {
        out.insert(k.into(), v.into());
    }
}

fn bytes(out: &mut Map<String, Value>, b64: &str) {
    match base64::engine::general_purpose::STANDARD.decode(b64.trim()) {
        Ok(b) => described(out, &b),
        Err(e) => {
            out.insert("error".into(), format!("not base64: {e}").into());
        }
    }
}

fn described(out: &mut Map<String, Value>, b: &[u8]) {
    out.insert("size".into(), b.len().into());
    out.insert("sha256".into(), sha256_hex(b).into());
}

/// Lower-case hex SHA-256, as `sha256sum` prints it.
pub fn sha256_hex(b: &[u8]) -> String {
    sha2::Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_dialects() {
        let v1 = json!({"parts": [
            {"text": "parts"},
            {"raw": "aGkK", "filename": "a.txt", "mediaType": "text/plain"},
            {"data": [1, 2]},
        ]});
        let v03 = json!({"parts": [
            {"kind": "text", "text": "parts"},
            {"kind": "file", "file": {"bytes": "aGkK", "name": "a.txt", "mimeType": "text/plain"}},
            {"kind": "data", "data": {"value": [1, 2]}},
        ]});
        for (m, data) in [(v1, json!([1, 2])), (v03, json!({"value": [1, 2]}))] {
            let m = Message::read(&m).unwrap();
            let s: Value = serde_json::from_str(&summary(&m, "c1")).unwrap();
            assert_eq!(s["contextId"], "c1");
            assert_eq!(s["parts"][0]["kind"], "text");
            assert_eq!(s["parts"][1]["name"], "a.txt");
            assert_eq!(s["parts"][1]["mediaType"], "text/plain");
            assert_eq!(s["parts"][1]["size"], 3);
            assert_eq!(s["parts"][1]["sha256"], sha256_hex(b"hi\n"));
            assert_eq!(s["parts"][2], json!({"kind": "data", "data": data}));
        }
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
