//! The A2A client: a thin one of our own on reqwest + serde_json (docs/a2a.md: the official Rust
//! client cannot reach v0.3 agents, hides the HTTP status, has no per-request timeout or OAuth).
//!
//! Contract used by the rest of a2a-mod (the session, the poller, the MCP server, doctor):
//! [`Worker`] with `card`/`send`/`get_task`/`cancel`, each cut off at a caller-given deadline,
//! returning [`TaskView`] or a classified [`A2aError`].

#![forbid(unsafe_code)]

mod auth;
mod aws;
mod card;
mod client;
mod error;
mod google;
mod http;
mod parts;
mod signature;
mod spill;
mod stream;
#[cfg(test)]
mod tests;
mod view;
mod wire;

pub use aws::AWS_DEFAULT_SERVICE;
pub use client::{Followed, Listed, Outgoing, Started, Worker, Workers, http_client};
pub use google::google_token_kind;
pub use parts::OutPart;
pub use signature::{CardKey, Verdict, load_card_keys};
pub use spill::Spills;
pub use stream::TaskStream;

pub use error::A2aError;
pub use view::{CardSummary, SkillSummary, TaskView, poll_outcome};
