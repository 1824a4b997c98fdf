//! What a server reads of a request's params (a JSON-RPC request's `params`, an HTTP+JSON body
//! or query), every method's in one shape, typed and lenient as [`crate::read`] is: a field of
//! the wrong type reads as absent, or (the ids) as [`Field::NotText`] for a server that must
//! refuse it. And the strict check of a message's dialect that the SDKs make.

use crate::error::{INVALID_PARAMS, RpcError};
use crate::lenient::{Flag, List, Obj, Present, Str, from_object};
use crate::read::Field;
use crate::wire::Dialect;
use a2a_mod_core::task::TaskState;
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
    /// A send's webhook (`configuration.taskPushNotificationConfig`, v0.3's
    /// `pushNotificationConfig`).
    pub push: Option<crate::push::Config>,
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
    // The proto's own snake_case names, which proto-JSON readers must accept too (kept apart,
    // not as aliases: a request with both spellings would be a duplicate field to serde).
    #[serde(borrow, rename = "context_id")]
    context_id_snake: Str<'a>,
    #[serde(rename = "history_length")]
    history_length_snake: Option<Value>,
    #[serde(rename = "page_size")]
    page_size_snake: Option<Value>,
    // ListTasks' own.
    #[serde(borrow)]
    page_token: Str<'a>,
    #[serde(borrow, rename = "page_token")]
    page_token_snake: Str<'a>,
    #[serde(borrow)]
    status: Str<'a>,
    #[serde(borrow)]
    status_timestamp_after: Str<'a>,
    #[serde(borrow, rename = "status_timestamp_after")]
    status_timestamp_after_snake: Str<'a>,
    include_artifacts: Option<Value>,
    #[serde(rename = "include_artifacts")]
    include_artifacts_snake: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Configuration {
    return_immediately: Flag,
    blocking: Option<Value>,
    history_length: Option<Value>,
    #[serde(rename = "return_immediately")]
    return_immediately_snake: Flag,
    #[serde(rename = "history_length")]
    history_length_snake: Option<Value>,
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
        let field = crate::read::field;
        let history_length = [
            &config.history_length,
            &config.history_length_snake,
            &p.history_length,
            &p.history_length_snake,
        ]
        .into_iter()
        .find_map(Option::as_ref);
        let page_size = p.page_size.as_ref().or(p.page_size_snake.as_ref());
        Params {
            message,
            id: field(&p.id),
            context_id: field(&p.context_id).or(field(&p.context_id_snake)),
            history_length: history(history_length),
            return_immediately: config.return_immediately.0 || config.return_immediately_snake.0,
            blocking: config.blocking.as_ref().and_then(Value::as_bool),
            page_size: page_size.and_then(Value::as_u64),
            push: v
                .get("configuration")
                .and_then(crate::push::Config::read)
                .filter(|c| c.url.is_some() || c.id != Field::Absent),
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

/// ListTasks' query, held to the bounds the spec gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListQuery {
    /// As sent (a server refuses one that is not an id).
    pub context_id: Field,
    /// Only tasks in this state.
    pub state: Option<TaskState>,
    /// 1 to 100; 50 when not given.
    pub page_size: usize,
    /// Where the page starts: a `nextPageToken` the server gave.
    pub page_token: Option<String>,
    /// Each task's history, at most this many messages; `None` is none asked (a list carries none).
    pub history_length: Option<usize>,
    /// Only tasks whose status changed at or after this instant (RFC 3339, as sent).
    pub updated_after: Option<String>,
    /// With each task's artifacts (without them by default: the field is left out).
    pub include_artifacts: bool,
}

impl ListQuery {
    /// Reads and checks ListTasks' params; a value out of its bounds is `-32602`, with what
    /// would be taken.
    pub fn read(v: &Value) -> Result<ListQuery, RpcError> {
        let bad = |why: &str| {
            Err(RpcError::new(
                INVALID_PARAMS,
                format!("Invalid params: {why}"),
            ))
        };
        let Some(p) = from_object::<WireParams<'_>>(v) else {
            return Ok(ListQuery {
                page_size: 50,
                ..ListQuery::default()
            });
        };
        let whole = |v: Option<&Value>| v.map(|v| v.as_i64().ok_or(()));
        let page_size = match whole(p.page_size.as_ref().or(p.page_size_snake.as_ref())) {
            None => 50,
            Some(Ok(n @ 1..=100)) => usize::try_from(n).unwrap_or(50),
            Some(_) => return bad("pageSize must be a whole number from 1 to 100"),
        };
        let history_length = match whole(
            p.history_length
                .as_ref()
                .or(p.history_length_snake.as_ref()),
        ) {
            None => None,
            Some(Ok(n)) if n >= 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            Some(_) => return bad("historyLength must be a whole number, 0 or more"),
        };
        let include = p
            .include_artifacts
            .as_ref()
            .or(p.include_artifacts_snake.as_ref());
        let include_artifacts = match include {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return bad("includeArtifacts must be true or false"),
        };
        let state = match p.status.get().filter(|s| !s.is_empty()) {
            None => None,
            Some(s) => match TaskState::from_wire(s) {
                TaskState::Unknown => {
                    return bad("status must be a task state (TASK_STATE_WORKING…)");
                }
                st => Some(st),
            },
        };
        let text =
            |a: &Str<'_>, b: &Str<'_>| a.owned().or_else(|| b.owned()).filter(|s| !s.is_empty());
        let context_id =
            crate::read::field(&p.context_id).or(crate::read::field(&p.context_id_snake));
        Ok(ListQuery {
            context_id,
            state,
            page_size,
            page_token: text(&p.page_token, &p.page_token_snake),
            history_length,
            updated_after: text(&p.status_timestamp_after, &p.status_timestamp_after_snake),
            include_artifacts,
        })
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
        // The proto's own snake_case names read the same.
        let v = json!({"context_id": "c", "history_length": 3, "page_size": 20,
            "configuration": {"return_immediately": true}});
        let p = Params::read(&v);
        assert_eq!(p.context_id, Field::Text("c".into()));
        assert_eq!((p.history_length, p.page_size), (Some(3), Some(20)));
        assert!(p.return_immediately);
        let both = json!({"contextId": "a", "context_id": "b"});
        assert_eq!(Params::read(&both).context_id, Field::Text("a".into()));
        assert_eq!(Params::read(&json!([1])), Params::default());
    }

    #[test]
    fn list_tasks_is_held_to_its_bounds() {
        let q = ListQuery::read(&json!({})).unwrap();
        assert_eq!(
            (q.page_size, q.include_artifacts, q.history_length),
            (50, false, None)
        );
        let q = ListQuery::read(
            &json!({"context_id": "c", "page_size": 2, "status": "TASK_STATE_WORKING",
            "pageToken": "t", "historyLength": 0, "statusTimestampAfter": "2026-01-01T00:00:00Z",
            "include_artifacts": true}),
        )
        .unwrap();
        assert_eq!(
            q,
            ListQuery {
                context_id: Field::Text("c".into()),
                state: Some(TaskState::Working),
                page_size: 2,
                page_token: Some("t".into()),
                history_length: Some(0),
                updated_after: Some("2026-01-01T00:00:00Z".into()),
                include_artifacts: true,
            }
        );
        for bad in [
            json!({"pageSize": 0}),
            json!({"pageSize": 101}),
            json!({"pageSize": -1}),
            json!({"pageSize": "ten"}),
            json!({"pageSize": 2.5}),
            json!({"historyLength": -1}),
            json!({"includeArtifacts": "yes"}),
            json!({"status": "TASK_STATE_NAPPING"}),
        ] {
            let e = ListQuery::read(&bad).unwrap_err();
            assert_eq!(e.code, INVALID_PARAMS, "{bad}");
        }
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
