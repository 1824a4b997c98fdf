//! What a2a-mod does between Claude Code and the workers, under the binary's thin shells
//! (`src/cmd/`): [`session`], a session's sends, tasks and cancels, one implementation behind
//! Claude's tools, the user's commands and the demo; [`poller`], the per-session background
//! poller's loop; [`mcp`], the stdio MCP server with Claude's five tools; [`log`], where each
//! process logs. The hot paths (status line, hooks) are the claude crate's and never reach this
//! one: it is where the async runtime, the A2A client and the MCP server are.

#![forbid(unsafe_code)]

pub mod log;
pub mod mcp;
pub mod poller;
pub mod session;
