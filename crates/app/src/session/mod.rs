//! send / task / cancel / tasks: one implementation behind Claude's tools, the user's commands and
//! the demo, so all three behave exactly alike (docs/commands-and-tools.md: "`send`, `task`,
//! `cancel` behave exactly like the tools").
//!
//! IO shell around [`core::schedule`](a2a_mod_core::schedule) and
//! [`core::fence`](a2a_mod_core::fence): talks to workers through
//! [`a2a::Worker`](a2a_mod_a2a::Worker), records every task in the session store, and starts the
//! session's poller when a task is left live.

pub mod attach;
mod errors;
mod outcome;
mod send;
mod task;

pub use errors::worker_error;
pub use outcome::Outcome;
pub use send::{SendInput, SendRequest};
pub use task::{Listing, task_list};

use a2a_mod_a2a::Worker;
use a2a_mod_config::Config;
use a2a_mod_core::schedule;
use a2a_mod_os::env::Ctx;
use a2a_mod_store::{SessionPaths, Store};
use anyhow::{Result, anyhow};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Longest worker text put into a tool result; the rest is saved to a file Claude can read.
pub const MAX_RESULT_CHARS: usize = a2a_mod_core::bounds::TOOL_TEXT_CHARS;
/// Our own cap on a tool call's budget when the host names none (Claude Code's default is hours).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(60);
pub use a2a_mod_core::inline::BUDGET_RESERVE;

/// A tool call's time budget, from the moment the call began.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub start: Instant,
    pub total: Duration,
}

impl Budget {
    pub fn new(total: Duration) -> Budget {
        Budget {
            start: Instant::now(),
            total,
        }
    }

    /// The budget Claude Code gives an MCP tool call: `MCP_TOOL_TIMEOUT` (ms) or the per-server
    /// timeout we ship in `.mcp.json` (passed as `A2A_MOD_TOOL_TIMEOUT_MS`), capped by ours.
    pub fn from_env() -> Budget {
        let host = a2a_mod_os::env::tool_timeouts_ms()
            .into_iter()
            .flatten()
            .min()
            .map(Duration::from_millis);
        Budget::new(host.map_or(DEFAULT_BUDGET, |h| h.min(DEFAULT_BUDGET)))
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Deadline for one request: the budget less the reserve, or `per_request`, whichever is first.
    pub fn request_deadline(&self, per_request: Duration) -> Instant {
        Instant::now()
            + schedule::request_window(self.elapsed(), self.total, BUDGET_RESERVE, per_request)
    }
}

/// One session's view: config, store, workers. Cheap to share across concurrent tool calls.
pub struct Session {
    pub ctx: Ctx,
    pub config: Config,
    /// The session that owns the store (after following `/clear` links).
    pub id: String,
    store: Mutex<Store>,
    workers: Mutex<a2a_mod_a2a::Workers>,
}

impl Session {
    pub fn open(ctx: &Ctx, config: Config, session_id: &str) -> Result<Session> {
        Session::open_at(ctx, config, SessionPaths::locate(ctx, session_id))
    }

    /// [`Session::open`] for a session already located (links followed once, by the caller).
    pub fn open_at(ctx: &Ctx, config: Config, paths: SessionPaths) -> Result<Session> {
        let store = Store::open(&paths.db)?;
        Ok(Session {
            ctx: ctx.clone(),
            config,
            id: paths.owner,
            store: Mutex::new(store),
            workers: Mutex::new(a2a_mod_a2a::Workers::default()),
        })
    }

    /// Runs `f` on the store. The lock is held only for one short SQLite call.
    pub fn store<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let guard = self
            .store
            .lock()
            .map_err(|_| anyhow!("session store lock poisoned"))?;
        f(&guard)
    }

    pub fn worker(&self, alias: &str) -> Result<Arc<Worker>> {
        let cfg = self.config.worker(alias)?;
        Ok(self
            .workers
            .lock()
            .map_err(|_| anyhow!("worker cache lock poisoned"))?
            .get(alias, cfg, self.config.timing.streaming))
    }

    fn poll_timeout(&self) -> Duration {
        self.config.timing.poll_timeout()
    }
}
