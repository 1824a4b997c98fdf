//! The JSON-RPC and A2A error codes as one table (docs/a2a.md "Error codes"): each code's
//! `google.rpc.ErrorInfo` reason (how HTTP+JSON names it) and its REST status, the mapping the
//! official SDKs use, read the same by the client and written the same by every server here.

use serde_json::{Value, json};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const TASK_NOT_FOUND: i64 = -32001;
pub const TASK_NOT_CANCELABLE: i64 = -32002;
pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
pub const UNSUPPORTED_OPERATION: i64 = -32004;
pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
pub const INVALID_AGENT_RESPONSE: i64 = -32006;
pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i64 = -32007;
pub const EXTENSION_SUPPORT_REQUIRED: i64 = -32008;
pub const VERSION_NOT_SUPPORTED: i64 = -32009;

/// The table: code, `ErrorInfo.reason`, REST status, `google.rpc` status name.
const TABLE: [(i64, &str, u16, &str); 14] = [
    (PARSE_ERROR, "PARSE_ERROR", 400, "INVALID_ARGUMENT"),
    (INVALID_REQUEST, "INVALID_REQUEST", 400, "INVALID_ARGUMENT"),
    (METHOD_NOT_FOUND, "METHOD_NOT_FOUND", 404, "NOT_FOUND"),
    (INVALID_PARAMS, "INVALID_PARAMS", 400, "INVALID_ARGUMENT"),
    (INTERNAL_ERROR, "INTERNAL_ERROR", 500, "INTERNAL"),
    (TASK_NOT_FOUND, "TASK_NOT_FOUND", 404, "NOT_FOUND"),
    (
        TASK_NOT_CANCELABLE,
        "TASK_NOT_CANCELABLE",
        409,
        "FAILED_PRECONDITION",
    ),
    (
        PUSH_NOTIFICATION_NOT_SUPPORTED,
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
        400,
        "UNIMPLEMENTED",
    ),
    (
        UNSUPPORTED_OPERATION,
        "UNSUPPORTED_OPERATION",
        400,
        "FAILED_PRECONDITION",
    ),
    (
        CONTENT_TYPE_NOT_SUPPORTED,
        "CONTENT_TYPE_NOT_SUPPORTED",
        415,
        "INVALID_ARGUMENT",
    ),
    (
        INVALID_AGENT_RESPONSE,
        "INVALID_AGENT_RESPONSE",
        502,
        "INTERNAL",
    ),
    (
        EXTENDED_AGENT_CARD_NOT_CONFIGURED,
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
        400,
        "FAILED_PRECONDITION",
    ),
    (
        EXTENSION_SUPPORT_REQUIRED,
        "EXTENSION_SUPPORT_REQUIRED",
        400,
        "FAILED_PRECONDITION",
    ),
    (
        VERSION_NOT_SUPPORTED,
        "VERSION_NOT_SUPPORTED",
        400,
        "FAILED_PRECONDITION",
    ),
];

fn row(code: i64) -> Option<&'static (i64, &'static str, u16, &'static str)> {
    TABLE.iter().find(|r| r.0 == code)
}

/// The `ErrorInfo.reason` of a code; `None` for a code outside the table.
pub fn reason_of(code: i64) -> Option<&'static str> {
    row(code).map(|r| r.1)
}

/// The code HTTP+JSON's `ErrorInfo.reason` names, so an error means one thing, and gets one
/// hint, over both bindings.
pub fn code_of_reason(reason: &str) -> Option<i64> {
    TABLE.iter().find(|r| r.1 == reason).map(|r| r.0)
}

/// Whether a code is one of A2A's own (not JSON-RPC's): v1 JSON-RPC servers add an `ErrorInfo`
/// to these.
pub fn is_a2a(code: i64) -> bool {
    (-32099..=-32000).contains(&code)
}

/// An error a server answers: its code and words; [`RpcError::rpc`] and [`RpcError::rest`] write
/// it for each binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// The REST status and `google.rpc` status name (the v1.0 spec's table, §5.4; a code outside the
    /// table is a bad argument).
    pub fn http(&self) -> (u16, &'static str) {
        row(self.code).map_or((400, "INVALID_ARGUMENT"), |r| (r.2, r.3))
    }

    fn error_info(&self) -> Value {
        json!([{
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": reason_of(self.code).unwrap_or("INVALID_PARAMS"),
            "domain": "a2a-protocol.org",
        }])
    }

    /// The JSON-RPC error answer, plain (v0.3, and the JSON-RPC codes).
    pub fn rpc(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": self.code, "message": self.message}})
    }

    /// The JSON-RPC error answer as a v1 server writes it: an A2A code carries its `ErrorInfo`
    /// in `data`, as the Python SDK's does.
    pub fn rpc_v1(&self, id: &Value) -> Value {
        let mut v = self.rpc(id);
        if is_a2a(self.code) {
            v["error"]["data"] = self.error_info();
        }
        v
    }

    /// The REST error body (`google.rpc.Status` with an `ErrorInfo`).
    pub fn rest(&self) -> Value {
        let (status, name) = self.http();
        json!({"error": {"code": status, "status": name, "message": self.message,
            "details": self.error_info()}})
    }
}

/// A JSON-RPC success answer.
pub fn rpc_result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_table_reads_both_ways() {
        for (code, reason, ..) in TABLE {
            assert_eq!(code_of_reason(reason), Some(code));
            assert_eq!(reason_of(code), Some(reason));
        }
        assert_eq!(code_of_reason("NOPE"), None);
    }

    #[test]
    fn errors_map_to_rest_statuses() {
        let e = RpcError::new(TASK_NOT_FOUND, "Task not found: x");
        assert_eq!(e.rest()["error"]["code"], 404);
        assert_eq!(e.rest()["error"]["details"][0]["reason"], "TASK_NOT_FOUND");
        // The v1.0 spec's table (§5.4).
        for (code, status) in [
            (TASK_NOT_FOUND, 404),
            (TASK_NOT_CANCELABLE, 409),
            (PUSH_NOTIFICATION_NOT_SUPPORTED, 400),
            (UNSUPPORTED_OPERATION, 400),
            (CONTENT_TYPE_NOT_SUPPORTED, 415),
            (INVALID_AGENT_RESPONSE, 502),
            (EXTENDED_AGENT_CARD_NOT_CONFIGURED, 400),
            (EXTENSION_SUPPORT_REQUIRED, 400),
            (VERSION_NOT_SUPPORTED, 400),
        ] {
            assert_eq!(RpcError::new(code, "").http().0, status, "{code}");
        }
        assert_eq!(e.rpc(&json!(7))["error"]["code"], -32001);
        assert!(e.rpc(&json!(7))["error"].get("data").is_none());
        assert_eq!(
            e.rpc_v1(&json!(7))["error"]["data"][0]["reason"],
            "TASK_NOT_FOUND"
        );
        assert!(
            RpcError::new(INVALID_PARAMS, "").rpc_v1(&json!(1))["error"]
                .get("data")
                .is_none()
        );
    }
}
