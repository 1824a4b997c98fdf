//! What a server reads of a request's params (a JSON-RPC request's `params`, an HTTP+JSON body
//! or query), every method's in one shape, typed and lenient as [`crate::read`] is: a field of
//! the wrong type reads as absent, or (the ids) as [`Field::NotText`] for a server that must
//! refuse it. And the strict check of a message's dialect that the SDKs make.

use crate::Dialect;
use crate::lenient::{Flag, List, Obj, Present, Str, from_object};
use crate::read::Field;
use serde::Deserialize;
use serde_json::Value;

/// A request's params, as read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Params<'a> {
    /// The message sent (`message`, or v0.3 HTTP+JSON's `request`), as sent.
    pub message: Option<&'a Value>,
    /// The task (`id`).
    pub id: Field,
    pub context_id: Field,
    /// How much history to answer with: `configuration.historyLength` (a send), else
    /// `historyLength`; `None` (unset, negative, not a number) is all of it.
    pub history_length: Option<usize>,
    /// v1's `configuration.returnImmediately`.
    pub return_immediately: bool,
    /// v0.3's `configuration.blocking`, when set.
    pub blocking: Option<bool>,
    /// ListTasks' `pageSize`, when a whole number.
    pub page_size: Option<u64>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct WireParams<'a> {
    message: Present,
    request: Present,
    #[serde(borrow)]
    id: Str<'a>,
    #[serde(borrow)]
    context_id: Str<'a>,
    history_length: Option<Value>,
    configuration: Obj<Configuration>,
    page_size: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Configuration {
    return_immediately: Flag,
    blocking: Option<Value>,
    history_length: Option<Value>,
}

/// A history length as asked: unset, negative or not a whole number is all of it.
fn history(v: Option<&Value>) -> Option<usize> {
    v.and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}

impl<'a> Params<'a> {
    /// Reads params (an object; anything else reads as none given).
    pub fn read(v: &'a Value) -> Params<'a> {
        let Some(p) = from_object::<WireParams<'_>>(v) else {
            return Params::default();
        };
        let config = p.configuration.0.unwrap_or_default();
        let message = match (p.message.0, p.request.0) {
            (true, _) => Some(&v["message"]),
            (false, true) => Some(&v["request"]),
            (false, false) => None,
        };
        Params {
            message,
            id: crate::read::field(&p.id),
            context_id: crate::read::field(&p.context_id),
            history_length: history(config.history_length.as_ref().or(p.history_length.as_ref())),
            return_immediately: config.return_immediately.0,
            blocking: config.blocking.as_ref().and_then(Value::as_bool),
            page_size: p.page_size.as_ref().and_then(Value::as_u64),
        }
    }

    /// Whether the send asks not to wait for the task, in either version's words (unset is
    /// blocking in both: the SDKs' default).
    pub fn non_blocking(&self) -> bool {
        self.return_immediately || self.blocking == Some(false)
    }

    /// [`Params::non_blocking`] in `d`'s words only.
    pub fn non_blocking_in(&self, d: Dialect) -> bool {
        match d {
            Dialect::V1 => self.return_immediately,
            Dialect::V03 => self.blocking == Some(false),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Shape<'a> {
    #[serde(borrow)]
    message_id: Str<'a>,
    #[serde(borrow)]
    role: Str<'a>,
    #[serde(borrow)]
    kind: Str<'a>,
    #[serde(borrow)]
    parts: List<Obj<PartKind<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PartKind<'a> {
    #[serde(borrow)]
    kind: Str<'a>,
}

/// Where a message breaks `d`'s shape, as the SDKs refuse it (`-32602`): a v0.3 shape sent to a
/// v1 method or the reverse (the role's spelling, `kind` on the message and its parts), no
/// message id, no parts. The words follow `Invalid params: `.
pub fn dialect_fault(d: Dialect, m: &Value) -> Option<String> {
    let Some(s) = from_object::<Shape<'_>>(m) else {
        return Some("params.message must be an object".into());
    };
    if s.message_id.get().is_none_or(str::is_empty) {
        return Some("message.messageId is required".into());
    }
    let role = s.role.get().unwrap_or_default();
    let want_role = match d {
        Dialect::V1 => "ROLE_USER",
        Dialect::V03 => "user",
    };
    if role != want_role {
        return Some(format!(
            "message.role must be \"{want_role}\", got \"{role}\""
        ));
    }
    if d == Dialect::V03 && (s.kind.other || s.kind.get().is_some_and(|k| k != "message")) {
        return Some("message.kind must be \"message\"".into());
    }
    if s.parts.items.is_empty() {
        return Some("message.parts must be a non-empty array".into());
    }
    for p in &s.parts.items {
        let kind = p.0.as_ref().is_some_and(|p| p.kind.get().is_some());
        match (d, kind) {
            (Dialect::V1, true) => return Some("v1 parts have no \"kind\" field".into()),
            (Dialect::V03, false) => return Some("v0.3 parts need a \"kind\" field".into()),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn params_of_every_method() {
        let v = json!({"message": {"messageId": "m"}, "configuration": {"returnImmediately": true,
            "historyLength": 2}});
        let p = Params::read(&v);
        assert_eq!(p.message, Some(&json!({"messageId": "m"})));
        assert!(p.non_blocking() && p.non_blocking_in(Dialect::V1));
        assert!(!p.non_blocking_in(Dialect::V03));
        assert_eq!(p.history_length, Some(2));
        let v = json!({"request": {"messageId": "m"}, "configuration": {"blocking": false}});
        let p = Params::read(&v);
        assert!(p.message.is_some() && p.non_blocking_in(Dialect::V03));
        let v = json!({"id": 5, "contextId": "c", "historyLength": -1, "pageSize": 20});
        let p = Params::read(&v);
        assert_eq!(p.id, Field::NotText);
        assert_eq!(p.context_id, Field::Text("c".into()));
        assert_eq!((p.history_length, p.page_size), (None, Some(20)));
        assert_eq!(Params::read(&json!([1])), Params::default());
    }

    #[test]
    fn a_message_in_the_other_dialects_shape_is_refused() {
        let v1 = json!({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        let v03 = json!({"kind": "message", "messageId": "m", "role": "user",
            "parts": [{"kind": "text", "text": "hi"}]});
        assert_eq!(dialect_fault(Dialect::V1, &v1), None);
        assert_eq!(dialect_fault(Dialect::V03, &v03), None);
        assert!(dialect_fault(Dialect::V1, &v03).unwrap().contains("role"));
        assert!(dialect_fault(Dialect::V03, &v1).unwrap().contains("role"));
        let mut tagged = v1.clone();
        tagged["parts"] = json!([{"kind": "text", "text": "hi"}]);
        assert!(
            dialect_fault(Dialect::V1, &tagged)
                .unwrap()
                .contains("no \"kind\"")
        );
        let mut bare = v03.clone();
        bare["parts"] = json!([{"text": "hi"}]);
        assert!(dialect_fault(Dialect::V03, &bare).unwrap().contains("need"));
        bare["kind"] = json!("task");
        assert!(
            dialect_fault(Dialect::V03, &bare)
                .unwrap()
                .contains("message.kind")
        );
        assert!(
            dialect_fault(Dialect::V1, &json!({"messageId": "", "role": "ROLE_USER"}))
                .unwrap()
                .contains("messageId")
        );
        assert!(
            dialect_fault(
                Dialect::V1,
                &json!({"messageId": "m", "role": "ROLE_USER",
            "parts": []})
            )
            .unwrap()
            .contains("non-empty")
        );
        assert!(dialect_fault(Dialect::V1, &json!(3)).is_some());
    }
}
