//! Claude Code's side of a2a-mod: what Claude Code runs synchronously and often (the status line
//! every second, the hooks at every prompt and tool call: the hot paths), the wake-up, and what
//! Claude Code sends us and reads from us (ARCHITECTURE.md). Claude Code waits for each, so none
//! builds a runtime or opens a socket: this crate's manifest names no async runtime, HTTP client
//! or MCP server, and the compiler holds that.
//!
//! [`statusline`] the line; [`hook`] the hooks; [`wake`] the wake-up's words, the one waiting loop
//! and the monitor (what Claude reads of a task, and the files kept for it, are `a2a-mod-results`);
//! [`poller`] starting a session's poller (its loop is the binary's); Claude Code's wire types,
//! tolerant readers only ([`hook_input`], [`statusline_input`]); the settings entries `install`
//! owns ([`settings`]) and the embedded plugin files ([`plugin`]), pure; [`error`] exit codes;
//! [`log`] the log file.

#![forbid(unsafe_code)]

pub mod error;
pub mod hook;
pub mod hook_input;
pub mod log;
pub mod plugin;
pub mod poller;
pub mod settings;
pub mod statusline;
pub mod statusline_input;
pub mod wake;
