//! The A2A protocol in one place, for the three crates that speak it: the client
//! (`crates/a2a`), `serve` (`crates/serve`) and the fake worker (`crates/fake-worker`). What a
//! protocol change touches lives here once: the dialects and bindings ([`Wire`], in `wire.rs` with the version a request asks for), the methods
//! ([`Method`], each with its JSON-RPC name per dialect), the error codes ([`error`]: one table,
//! JSON-RPC code, `google.rpc` reason, REST status), the JSON-RPC envelope a server checks
//! ([`envelope`]), the shapes a server writes that both servers share ([`mod@write`]), and every
//! shape a side reads, typed and lenient: a request's params ([`params`]), parts and messages
//! ([`read`]), a card ([`mod@card`]), and a worker's answers ([`answer`]).
//!
//! Pure: values in, values out; no IO, no runtime (docs/a2a.md has the wire facts).

#![forbid(unsafe_code)]

pub mod answer;
pub mod card;
pub mod envelope;
pub mod error;
mod lenient;
pub mod method;
pub mod params;
pub mod push;
pub mod read;
mod wire;
pub mod write;

pub use error::RpcError;
pub use method::Method;
pub use wire::{Binding, Dialect, Wire, asked_version};
