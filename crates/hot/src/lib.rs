//! The hot paths: what Claude Code runs synchronously and often, the status line every second and
//! the hooks at every prompt and tool call, and what they share with the rest of the binary
//! (ARCHITECTURE.md). Claude Code waits for each, so none builds a runtime or opens a socket:
//! this crate's manifest names no async runtime, HTTP client or MCP server, and the compiler holds
//! that.
//!
//! [`statusline`] the line; [`hook`] the hooks; [`wake`] the wake-up's words, the one waiting
//! loop and the monitor (what Claude reads of a task, and the files kept for it, are
//! `a2a-mod-results`'); [`poller`] starting a session's poller (its loop is the binary's); [`claude`] Claude Code's
//! wire types and settings; [`error`] exit codes; [`log`] the log file.

pub mod claude;
pub mod error;
pub mod hook;
pub mod log;
pub mod poller;
pub mod statusline;
pub mod wake;
