//! The A2A protocol in one place, for the three crates that speak it: the client
//! (`crates/a2a`), `serve` (`crates/serve`) and the fake worker (`crates/fake-worker`). What a
//! protocol change touches lives here once: the dialects and bindings ([`Wire`]), the methods
//! ([`Method`], each with its JSON-RPC name per dialect), the error codes ([`error`]: one table,
//! JSON-RPC code, `google.rpc` reason, REST status), the JSON-RPC envelope a server checks
//! ([`envelope`]), the shapes a server writes that both servers share ([`mod@write`]), and every
//! shape a side reads, typed and lenient: a request's params ([`params`]), parts and messages
//! ([`read`]), a card ([`mod@card`]), and a worker's answers ([`answer`]).
//!
//! Pure: values in, values out; no IO, no runtime (docs/a2a.md has the wire facts).

pub mod answer;
pub mod card;
pub mod envelope;
pub mod error;
mod lenient;
pub mod method;
pub mod params;
pub mod read;
pub mod write;

pub use error::RpcError;
pub use method::Method;

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
