//! a2a-mod: Claude Code hands work to remote A2A agents ("workers") and is woken when it ends.
//! The lib exists so `tests/` and `benches/` reach internals; `main.rs` only parses and runs a
//! `cmd::Run`.

pub mod a2a;
pub mod artifacts;
pub mod attach;
pub mod claude;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod core;
pub mod env;
pub mod error;
pub mod fake_worker;
pub mod fsx;
pub mod hook;
pub mod ids;
pub mod log;
pub mod mcp;
pub mod ops;
pub mod overflow;
pub mod poller;
pub mod secret;
pub mod state;
pub mod statusline;
pub mod theme;
pub mod wake;
pub mod watch;
