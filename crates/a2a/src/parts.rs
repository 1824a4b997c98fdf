//! The parts we send beside the message text: files by bytes and one JSON data part,
//! each written in the shape of the endpoint's dialect and binding (docs/a2a.md "Versions"):
//!
//! | | file | data |
//! |---|---|---|
//! | v1 (both bindings) | `{"raw": b64, "mediaType", "filename"}` | `{"data": <any JSON>}` |
//! | v0.3 JSON-RPC | `{"kind":"file","file":{"bytes": b64,"mimeType","name"}}` | `{"kind":"data","data":{…}}` |
//! | v0.3 REST (proto-JSON) | `{"file":{"fileWithBytes": b64,"mimeType","name"}}` | `{"data":{"data":{…}}}` |
//!
//! v0.3 data parts hold a JSON object only (its schema and the Python SDK's pydantic model), so any
//! other value goes to a v0.3 worker as `{"value": <it>}` (docs/commands-and-tools.md says so).
//! Pure; the files were read and checked by `crates/app/src/session/attach.rs`.

use super::card::{Binding, Dialect};
use base64::Engine as _;
use serde_json::{Value, json};

/// One part to send after the message's text part.
#[derive(Debug, Clone, PartialEq)]
pub enum OutPart {
    /// A file's bytes, its name (the last path component) and its media type.
    File {
        name: String,
        media_type: String,
        bytes: Vec<u8>,
    },
    /// A JSON value.
    Data(Value),
}

/// `part` as the endpoint's dialect and binding spell it.
pub(crate) fn to_wire(part: &OutPart, dialect: Dialect, binding: Binding) -> Value {
    match part {
        OutPart::File {
            name,
            media_type,
            bytes,
        } => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
            match (dialect, binding) {
                (Dialect::V1, _) => {
                    json!({ "raw": b64, "mediaType": media_type, "filename": name })
                }
                (Dialect::V03, Binding::JsonRpc) => json!({
                    "kind": "file",
                    "file": { "bytes": b64, "mimeType": media_type, "name": name },
                }),
                (Dialect::V03, Binding::Rest) => json!({
                    "file": { "fileWithBytes": b64, "mimeType": media_type, "name": name },
                }),
            }
        }
        OutPart::Data(v) => match (dialect, binding) {
            (Dialect::V1, _) => json!({ "data": v }),
            (Dialect::V03, Binding::JsonRpc) => json!({ "kind": "data", "data": v03_object(v) }),
            (Dialect::V03, Binding::Rest) => json!({ "data": { "data": v03_object(v) } }),
        },
    }
}

/// A v0.3 data part's value: an object as it is, anything else wrapped as `{"value": …}`.
fn v03_object(v: &Value) -> Value {
    if v.is_object() {
        v.clone()
    } else {
        json!({ "value": v })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> OutPart {
        OutPart::File {
            name: "a.txt".into(),
            media_type: "text/plain".into(),
            bytes: b"hi\n".to_vec(),
        }
    }

    #[test]
    fn files_in_each_shape() {
        assert_eq!(
            to_wire(&file(), Dialect::V1, Binding::JsonRpc),
            json!({"raw": "aGkK", "mediaType": "text/plain", "filename": "a.txt"})
        );
        assert_eq!(
            to_wire(&file(), Dialect::V03, Binding::JsonRpc),
            json!({"kind": "file", "file": {"bytes": "aGkK", "mimeType": "text/plain", "name": "a.txt"}})
        );
        assert_eq!(
            to_wire(&file(), Dialect::V03, Binding::Rest),
            json!({"file": {"fileWithBytes": "aGkK", "mimeType": "text/plain", "name": "a.txt"}})
        );
    }

    /// The whole v1 SendMessage params with a file and a data part parse as the official v1 types
    /// (`a2a-lf`), so a v1 server reads exactly what we meant.
    #[test]
    fn v1_message_with_parts_is_what_a2a_lf_reads() {
        use super::super::card::Endpoint;
        use super::super::wire::{Op, jsonrpc_params};
        let ep = Endpoint {
            dialect: Dialect::V1,
            binding: Binding::JsonRpc,
            url: "http://w/".into(),
            tenant: None,
        };
        let parts = [file(), OutPart::Data(json!({"k": "v"}))];
        let op = Op::Send {
            text: "look",
            parts: &parts,
            task_id: None,
            context_id: Some("c1"),
            message_id: "m1",
        };
        let p = jsonrpc_params(&op, &ep);
        let m: ::a2a::Message =
            serde_json::from_value(p["message"].clone()).expect("a2a-lf reads the message");
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(back["contextId"], "c1");
        assert_eq!(back["parts"][0]["text"], "look");
        assert_eq!(back["parts"][1]["raw"], "aGkK");
        assert_eq!(back["parts"][1]["filename"], "a.txt");
        assert_eq!(back["parts"][1]["mediaType"], "text/plain");
        assert_eq!(back["parts"][2]["data"], json!({"k": "v"}));
    }

    #[test]
    fn data_in_each_shape() {
        let obj = OutPart::Data(json!({"k": [1, 2]}));
        assert_eq!(
            to_wire(&obj, Dialect::V1, Binding::Rest),
            json!({"data": {"k": [1, 2]}})
        );
        assert_eq!(
            to_wire(&obj, Dialect::V03, Binding::JsonRpc),
            json!({"kind": "data", "data": {"k": [1, 2]}})
        );
        let list = OutPart::Data(json!([1, 2]));
        assert_eq!(
            to_wire(&list, Dialect::V1, Binding::JsonRpc),
            json!({"data": [1, 2]})
        );
        assert_eq!(
            to_wire(&list, Dialect::V03, Binding::JsonRpc),
            json!({"kind": "data", "data": {"value": [1, 2]}})
        );
        assert_eq!(
            to_wire(&list, Dialect::V03, Binding::Rest),
            json!({"data": {"data": {"value": [1, 2]}}})
        );
    }
}
