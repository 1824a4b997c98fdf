//! The single integration-test binary (ripgrep's shape): every module drives the built `a2a-mod`
//! the way Claude Code, users and workers do.

mod arch;
mod claude_headless;
mod claude_smoke;
mod claude_wake;
mod cli;
mod demo;
mod doctor;
mod fake;
mod fake_worker;
mod install;
mod mcp;
mod peers;
mod poller;
mod statusline;
mod util;
mod wake;
mod workers;
