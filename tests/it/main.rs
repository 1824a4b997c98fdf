//! The single integration-test binary (ripgrep's shape): every module drives the built `a2a-mod`
//! the way Claude Code, users and workers do.

#![forbid(unsafe_code)]
#![expect(
    clippy::print_stderr,
    reason = "test output (a skipped peer, a timing) is for whoever runs the tests"
)]
#![expect(
    clippy::unwrap_used,
    reason = "a test's helpers may unwrap: a failure there is the test failing"
)]
#![expect(
    clippy::too_many_lines,
    reason = "a test reads as the scenario it plays, however long"
)]

mod arch;
mod artifacts;
mod aws;
mod claude_context;
mod claude_headless;
mod claude_smoke;
mod claude_wake;
mod cli;
mod demo;
mod doctor;
mod fake;
mod fake_worker;
mod faults;
mod files_in;
mod frameworks;
mod google;
mod hostile;
mod hostile_creds;
mod hostile_state;
mod install;
mod mcp;
mod npm;
mod peers;
mod poller;
mod regression;
mod serve;
mod serve_conform;
mod serve_peers;
mod serve_push;
mod serve_safe;
mod serve_tck;
mod signed_cards;
mod statusline;
mod stream;
mod stream_poller;
mod util;
mod wake;
mod wake_fast;
mod workers;
