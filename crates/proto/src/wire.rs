//! The dialects (A2A v1.0, v0.3) and bindings (JSON-RPC, HTTP+JSON) every side spells its JSON
//! by, and the protocol version a request asks a server for.

use crate::error::{self, RpcError};

/// The protocol version of a request or an answer: A2A v1.0, or v0.3.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    V1,
    V03,
}

/// How a request comes: JSON-RPC, or HTTP+JSON (REST).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Binding {
    JsonRpc,
    Rest,
}

/// A dialect over a binding: what decides every spelling of an answer (v0.3's REST is
/// proto-JSON: `content` for parts, `TASK_STATE_CANCELLED`, the status message as `update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Wire {
    pub dialect: Dialect,
    pub binding: Binding,
}

impl Wire {
    pub const V1_RPC: Wire = Wire {
        dialect: Dialect::V1,
        binding: Binding::JsonRpc,
    };
    pub const V03_RPC: Wire = Wire {
        dialect: Dialect::V03,
        binding: Binding::JsonRpc,
    };
    pub const V1_REST: Wire = Wire {
        dialect: Dialect::V1,
        binding: Binding::Rest,
    };
    pub const V03_REST: Wire = Wire {
        dialect: Dialect::V03,
        binding: Binding::Rest,
    };

    pub fn rest(self) -> bool {
        self.binding == Binding::Rest
    }
}

/// The protocol version a request asks for (its `A2A-Version` header, else the query parameter
/// of that name), as a server answers it: none named (absent or empty) is no preference, a 1.x
/// or 0.3.x version is that dialect, anything else is refused with `VersionNotSupported`
/// (-32009; HTTP 400 over HTTP+JSON).
pub fn asked_version(v: Option<&str>) -> Result<Option<Dialect>, RpcError> {
    let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    let minor_of = |major: &str| {
        v.strip_prefix(major)
            .filter(|r| r.is_empty() || r.starts_with('.'))
    };
    if minor_of("1").is_some() {
        return Ok(Some(Dialect::V1));
    }
    if minor_of("0.3").is_some() {
        return Ok(Some(Dialect::V03));
    }
    let shown: String = v.chars().filter(|c| !c.is_control()).take(20).collect();
    Err(RpcError::new(
        error::VERSION_NOT_SUPPORTED,
        format!(
            "Version not supported: A2A {shown:?} — this server speaks 1.0 and 0.3; send A2A-Version: 1.0"
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_asked() {
        for (v, want) in [
            (None, Ok(None)),
            (Some(""), Ok(None)),
            (Some(" 1.0 "), Ok(Some(Dialect::V1))),
            (Some("1"), Ok(Some(Dialect::V1))),
            (Some("1.2"), Ok(Some(Dialect::V1))),
            (Some("0.3"), Ok(Some(Dialect::V03))),
            (Some("0.3.0"), Ok(Some(Dialect::V03))),
        ] {
            assert_eq!(asked_version(v), want, "{v:?}");
        }
        for v in ["99.0", "10", "0.2", "0.30", "2.0", "1x"] {
            let e = asked_version(Some(v)).unwrap_err();
            assert_eq!(e.code, error::VERSION_NOT_SUPPORTED, "{v}");
            assert!(e.message.contains(v), "{}", e.message);
        }
    }
}
