//! The session store: one SQLite file per Claude Code session, `state/sessions/<id>.db`, WAL.
//!
//! Writers (the poller, the MCP server, hooks, the monitor, user commands) all write through
//! `BEGIN IMMEDIATE` transactions with a generous busy timeout, so a concurrent writer waits instead
//! of failing with `database is locked`; readers (the status line, every second) use
//! [`Reader::open`]: `query_only`, a short busy timeout and no checkpoint on close, so the hot
//! path never writes. No secrets are ever stored here. Every write also publishes a small status
//! snapshot (`<id>.status`, [`snapshot`]) that the status line reads instead of SQLite.

#![forbid(unsafe_code)]

pub mod notify;
pub mod pids;
mod schema;
pub mod served;
pub mod session;
pub mod snapshot;
mod store;

pub use schema::MIGRATIONS;
pub use session::SessionPaths;
pub use store::{ClaimError, Reader, Store, TaskRecord, clock_now};
