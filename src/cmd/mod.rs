//! Every entry point, one file each: Claude Code's (`mcp`, `statusline`, `hook`, `watch`, `poller`)
//! and the user's (`worker`, `send`, `task`, `cancel`, `approve`, `tasks`, `install`, `doctor`, `demo`,
//! `fake-worker`, `serve`). Each file is the thin IO shell of its command: it implements [`Run`]
//! for the command's clap type (`src/cli.rs`) and calls the logic where it lives
//! ([`a2a_mod_app::session`], [`a2a_mod_app::mcp`], [`a2a_mod_claude::hook`], [`a2a_mod_claude::wake`], [`a2a_mod_app::poller`],
//! [`a2a_mod_claude::statusline`], [`a2a_mod_claude::settings`], [`a2a_mod_core`]). What the shells share is in
//! [`shell`].
//!
//! HOT PATH: `cmd/statusline.rs` and `cmd/hook.rs` import [`Run`] from here, so this file names
//! nothing but the trait and the dispatch (`tests/it/arch.rs` checks the three files).

mod approve;
mod cancel;
mod demo;
mod doctor;
mod fake_worker;
mod hook;
mod install;
mod mcp;
mod poller;
mod send;
mod serve;
mod setup;
mod shell;
pub mod statusline;
mod task;
mod tasks;
mod watch;
mod worker;

use crate::cli::Command;
use anyhow::Result;

/// One command, run to its end.
pub trait Run {
    /// `Ok` carries the exit code (`error.rs`; a hook's 2 wakes Claude); an error is rendered by
    /// `main` as one line, exit 1.
    fn run(self) -> Result<i32>;
}

impl Run for Command {
    fn run(self) -> Result<i32> {
        match self {
            // The hot paths: no runtime, no logging set-up, never a loud failure.
            Command::Statusline(c) => c.run(),
            Command::Hook(c) => c.run(),
            Command::Watch(c) => c.run(),
            Command::Poller(c) => c.run(),
            Command::Mcp(c) => c.run(),
            Command::Worker(c) => c.run(),
            Command::Send(c) => c.run(),
            Command::Task(c) => c.run(),
            Command::Cancel(c) => c.run(),
            Command::Approve(c) => c.run(),
            Command::Tasks(c) => c.run(),
            Command::FakeWorker(c) => c.run(),
            Command::Serve(c) => c.run(),
            Command::Demo(c) => c.run(),
            Command::Install(c) => c.run(),
            Command::Doctor(c) => c.run(),
        }
    }
}
