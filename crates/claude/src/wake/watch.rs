//! `a2a-mod watch`: the plugin's monitor. Claude Code starts one per session and turns each line it
//! prints into a wake-up (docs/claude-code.md "Plugins and monitors"): so stdout carries exactly
//! one line per batch of ended tasks and nothing else. Batches are claimed and marked in one
//! transaction, committed only once the line is written, so no task is skipped across restarts,
//! and none is announced twice but by a monitor killed (`kill -9`, a crash) between printing a
//! line and committing its claim: the claim rolls back and the next monitor announces that batch
//! again. A wake-up may come twice then, never not at all; the outcomes themselves reach Claude
//! once, through their own claim (`Store::take_undelivered`). It also keeps the session's poller alive (a `kill -9`ed poller is replaced).
//! Exits on SIGTERM/SIGINT/SIGHUP (Claude Code's way of stopping monitors), a closed stdout, or
//! when the Claude Code process (`CLAUDE_PID`) is gone.
//!
//! It learns of an ending at once: the writer that commits it sends a datagram to our socket
//! ([`a2a_mod_store::notify`]), bound before each look at the store so none is missed between the
//! look and the wait. Then it waits only `SETTLE` for more endings to join the batch. The tick
//! ([`notify::fallback_tick`]) stays as the safety net and for the poller keeper. The loop is the
//! three waiters' one (`waiter.rs`), on the rule
//! [`core::batch::Rule::Monitor`](a2a_mod_core::batch::Rule::Monitor): no runtime.

use crate::wake::waiter::{self, Waiter};
use a2a_mod_core::batch::{Look, Rule};
use a2a_mod_core::wake::MONITOR_LOCK;
use a2a_mod_os::env::{Ctx, now_ms};
use a2a_mod_store::{ClaimError, SessionPaths, Store, notify, pids};
use std::io::Write;
use std::time::{Duration, Instant};

const ENSURE_EVERY: Duration = Duration::from_secs(2);

/// Watches the session until stopped; the exit code.
pub fn run(ctx: Ctx, session_id: String) -> i32 {
    // SIGTERM, SIGINT and SIGHUP (how Claude Code stops monitors and hooks) end the wait
    // cleanly, on the rule's terms, instead of killing the process mid-claim.
    a2a_mod_os::process::catch_stop_signals();
    // After the handlers: once the pid is recorded, a SIGTERM is a clean stop (tests rely on it).
    let claude_pid = pids::claude_pid_from_env();
    if let Some(pid) = claude_pid {
        pids::record(&ctx, pid, &SessionPaths::locate(&ctx, &session_id).owner);
    }
    let mut w = Watcher {
        ctx,
        session_id,
        claude_pid,
        store: None,
        alive_lock: None,
        wake: None,
        last_ensure: Instant::now() - ENSURE_EVERY,
    };
    waiter::wait(&mut w, Rule::Monitor)
}

struct Watcher {
    ctx: Ctx,
    session_id: String,
    claude_pid: Option<u32>,
    store: Option<Store>,
    /// `<owner>.monitor.lock`, held while we run: it tells the asyncRewake waiter (and doctor)
    /// that a monitor will announce the next batch. Taken again after `/clear` moves the owner;
    /// a second monitor of the same session simply does not get it.
    alive_lock: Option<(String, std::fs::File)>,
    /// Our wake socket for the current owner's store.
    wake: Option<(String, notify::Listener)>,
    last_ensure: Instant,
}

impl Watcher {
    /// Binds (or rebinds, after `/clear` moved the owner or our name was removed) the wake socket,
    /// and empties it: whatever it told is about to be seen by the look that follows.
    fn arm(&mut self, paths: &SessionPaths) {
        let fresh = self
            .wake
            .as_ref()
            .is_some_and(|(o, l)| *o == paths.owner && l.is_reachable());
        if !fresh {
            self.wake = None;
            self.wake =
                notify::Listener::bind(&paths.db, notify::WATCH).map(|l| (paths.owner.clone(), l));
        }
        if let Some((_, l)) = &self.wake {
            l.drain();
        }
    }
}

impl Waiter for Watcher {
    /// Follows `/clear` links, keeps the poller alive, and looks for an unannounced batch.
    fn look(&mut self) -> anyhow::Result<Look> {
        let paths = SessionPaths::locate(&self.ctx, &self.session_id);
        let owner = paths.owner.clone();
        self.arm(&paths);
        if self.alive_lock.as_ref().is_none_or(|(o, _)| *o != owner) {
            let lock = paths.lock(MONITOR_LOCK);
            self.alive_lock = a2a_mod_os::fsx::try_lock(&lock)
                .ok()
                .flatten()
                .map(|f| (owner.clone(), f));
        }
        let path = paths.db;
        let nothing = Look {
            live: 0,
            waited_for: 0,
            pending: false,
            monitor: true,
            signalled: false,
        };
        if self.store.as_ref().is_none_or(|s| s.path() != path) {
            self.store = None;
            if !path.exists() {
                return Ok(nothing);
            }
            self.store = Some(Store::open(&path)?);
        }
        let Some(s) = self.store.as_ref() else {
            return Ok(nothing);
        };
        if self.last_ensure.elapsed() >= ENSURE_EVERY {
            self.last_ensure = Instant::now();
            crate::poller::ensure_if_live(&self.ctx, &owner, s);
        }
        // Live tasks matter only to a batch (`core::batch`: with none, nothing can join it).
        let looked = s
            .has_unannounced()
            .and_then(|p| Ok((p, if p { s.live_count()? } else { 0 })));
        let (pending, live) = match looked {
            Ok(l) => l,
            Err(e) => {
                // Reopened at the next look: a file replaced under us is then read afresh.
                self.store = None;
                return Err(e);
            }
        };
        Ok(Look {
            pending,
            live,
            waited_for: live,
            ..nothing
        })
    }

    /// Prints the batch's line, the claim committed only once it is written.
    fn hand_over(&mut self, _give_up: bool) -> Option<i32> {
        let s = self.store.as_ref()?;
        let claimed = s.claim_unannounced_with(now_ms(), |batch| {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", crate::wake::line(batch))?;
            out.flush()
        });
        match claimed {
            Ok(_) => None,
            // Claude Code closed our stdout: the session is gone. The claim was rolled back, so
            // the batch waits for the next monitor of this session (after `--resume`).
            Err(ClaimError::Deliver(_)) => Some(crate::error::EXIT_OK),
            Err(ClaimError::Store(e)) => {
                // The claim was rolled back: reopen and try again at the next batch.
                tracing::warn!("watch of session {}: {e:#}", self.session_id);
                self.store = None;
                None
            }
        }
    }

    fn listener(&self) -> Option<&notify::Listener> {
        self.wake.as_ref().map(|(_, l)| l)
    }

    /// Claude Code normally stops us with SIGTERM; if it died instead (crash, `kill -9`) nobody
    /// will read our lines, and a stray monitor must not keep the poller alive for nothing.
    fn gone(&self) -> bool {
        a2a_mod_os::process::stdout_hung_up()
            || self
                .claude_pid
                .is_some_and(|p| !a2a_mod_os::process::is_alive(p))
    }
}
