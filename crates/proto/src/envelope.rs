//! The JSON-RPC 2.0 request envelope as every server here checks it: one object (no batches),
//! `jsonrpc: "2.0"`, an id that is a string, a number or null, a method, params an object.

use super::error::{INVALID_PARAMS, INVALID_REQUEST, RpcError};
use serde_json::Value;

/// A request that passed the envelope check.
#[derive(Debug, Clone, PartialEq)]
pub struct Request<'a> {
    /// Echoed in the answer (null when absent).
    pub id: Value,
    pub method: &'a str,
    /// `None` when the request has none.
    pub params: Option<&'a Value>,
}

/// The request, or the error answer's id and the error.
pub fn request(body: &Value) -> Result<Request<'_>, (Value, RpcError)> {
    let refuse = |id: &Value, code, why: &str| Err((id.clone(), RpcError::new(code, why)));
    let Some(obj) = body.as_object() else {
        return refuse(
            &Value::Null,
            INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC object (batches are not supported)",
        );
    };
    let id = match obj.get("id") {
        None => Value::Null,
        Some(v @ (Value::Null | Value::String(_) | Value::Number(_))) => v.clone(),
        Some(_) => {
            return refuse(
                &Value::Null,
                INVALID_REQUEST,
                "Invalid Request: id must be a string, a number or null",
            );
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return refuse(
            &id,
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
        );
    }
    let Some(method) = obj.get("method").and_then(Value::as_str) else {
        return refuse(
            &id,
            INVALID_REQUEST,
            "Invalid Request: method must be a string",
        );
    };
    let params = match obj.get("params") {
        None => None,
        Some(p @ Value::Object(_)) => Some(p),
        Some(_) => {
            return refuse(
                &id,
                INVALID_PARAMS,
                "Invalid params: params must be an object",
            );
        }
    };
    Ok(Request { id, method, params })
}

/// What a request names, read whether or not it passes the envelope check (a log names the
/// method of a refused request too).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Named<'a> {
    /// The method, when it is a string.
    pub method: Option<String>,
    /// The params, when they are an object.
    pub params: Option<&'a Value>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct WireNamed<'a> {
    #[serde(borrow)]
    method: crate::lenient::Str<'a>,
    params: crate::lenient::Obj<serde::de::IgnoredAny>,
}

/// [`Named`] of a body (nothing, for anything but an object).
pub fn named(body: &Value) -> Named<'_> {
    let Some(n) = crate::lenient::from_object::<WireNamed<'_>>(body) else {
        return Named::default();
    };
    Named {
        method: n.method.take(),
        params: n.params.0.map(|_| &body["params"]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_request_still_names_its_method() {
        let v = json!({"method": "GetTask", "params": {"id": "t"}, "jsonrpc": "1.0"});
        let n = named(&v);
        assert_eq!(n.method.as_deref(), Some("GetTask"));
        assert_eq!(n.params, Some(&json!({"id": "t"})));
        assert_eq!(named(&json!({"method": 3, "params": []})), Named::default());
    }

    #[test]
    fn the_envelope_and_its_refusals() {
        let ok = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "t"}});
        let r = request(&ok).unwrap();
        assert_eq!((r.id, r.method), (json!(3), "GetTask"));
        assert!(
            request(&json!({"jsonrpc": "2.0", "method": "m"}))
                .unwrap()
                .params
                .is_none()
        );
        for (bad, id, code) in [
            (json!([1]), json!(null), INVALID_REQUEST),
            (
                json!({"jsonrpc": "2.0", "id": {}, "method": "m"}),
                json!(null),
                INVALID_REQUEST,
            ),
            (
                json!({"jsonrpc": "1.0", "id": "a", "method": "m"}),
                json!("a"),
                INVALID_REQUEST,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1}),
                json!(1),
                INVALID_REQUEST,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "m", "params": [1]}),
                json!(1),
                INVALID_PARAMS,
            ),
        ] {
            let (got_id, e) = request(&bad).unwrap_err();
            assert_eq!((got_id, e.code), (id, code), "{bad}");
        }
    }
}
