//! `a2a-mod mcp`: the stdio MCP server Claude Code starts at every session start (server name
//! `a2a`), with Claude's five tools. `server.rs` owns the protocol side (handshake, session, the
//! poller keeper); `tools.rs` owns the tools; `native.rs` the MCP tasks Claude Code follows itself;
//! `approve.rs` the form that asks the person about a worker's permission question.
//! Stdout is the protocol: logs go to the state log file.
//!
//! The behaviour behind `send`, `task` and `cancel` lives in
//! [`session::Session`](crate::session::Session), shared with the user commands; this module only
//! adapts it to MCP (budget, progress, cancellation, result shape).

mod approve;
mod line_cap;
mod native;
mod server;
mod tools;

pub use server::serve_stdio;
