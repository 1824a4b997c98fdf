//! `a2a-mod watch`: the plugin's monitor. Claude Code starts one per session and turns each line
//! it prints into a wake-up (docs/claude-code.md "Plugins and monitors"): so stdout carries exactly one line per
//! batch of ended tasks and nothing else. Batches are claimed and marked in one transaction,
//! committed only once the line is written, so no task is announced twice or skipped across
//! restarts. It also keeps the session's poller alive (a `kill -9`ed poller is replaced).
//! Exits on SIGTERM/SIGINT/SIGHUP (Claude Code's way of stopping monitors), a closed stdout, or
//! when the Claude Code process (`CLAUDE_PID`) is gone.
//!
//! It learns of an ending at once: the writer that commits it sends a datagram to our socket
//! (`state::notify`), bound before each look at the store so none is missed between the look and
//! the wait. Then it waits only `SETTLE` for more endings to join the batch. The tick
//! (`notify::fallback_tick`) stays as the safety net and for the poller keeper.

use crate::env::{Ctx, now_ms};
use crate::state::{ClaimError, SessionPaths, Store, notify, pids};
use anyhow::Result;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::core::wake::{MONITOR_LOCK, SETTLE};
const ENSURE_EVERY: Duration = Duration::from_secs(2);

pub async fn run(ctx: Ctx, session_id: String) -> Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    // After the handlers: once the pid is recorded, a SIGTERM is a clean stop (tests rely on it).
    let claude_pid = pids::claude_pid_from_env();
    if let Some(pid) = claude_pid {
        pids::record(&ctx, pid, &SessionPaths::locate(&ctx, &session_id).owner);
    }
    let tick = notify::fallback_tick();
    let mut w = Watcher {
        ctx,
        session_id,
        store: None,
        alive_lock: None,
        wake: None,
        settle_since: None,
        last_ensure: Instant::now() - ENSURE_EVERY,
    };
    loop {
        // Claude Code normally stops us with SIGTERM; if it died instead (crash, `kill -9`) nobody
        // will read our lines, and a stray monitor must not keep the poller alive for nothing.
        if stdout_closed() || claude_pid.is_some_and(|p| !process_alive(p)) {
            return Ok(());
        }
        let wait = match w.step() {
            Ok(Flow::Go) => w.next_wait(tick),
            Ok(Flow::StdoutGone) => return Ok(()),
            Err(e) => {
                // A store error (locked for longer than the busy timeout, a file replaced under
                // us) must not end the monitor: without it the session is never woken again.
                // Reopen and retry on the next tick; the claim was rolled back.
                tracing::warn!("watch of session {}: {e:#}", w.session_id);
                w.store = None;
                w.settle_since = None;
                tick
            }
        };
        tokio::select! {
            _ = term.recv() => return Ok(()),
            _ = hup.recv() => return Ok(()),
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(wait) => {}
            _ = told(w.wake.as_ref().map(|(_, _, s)| s)) => {}
        }
    }
}

/// Resolves once a writer's datagram is queued (never without a socket).
async fn told(sock: Option<&tokio::net::UnixDatagram>) {
    match sock {
        Some(s) if s.readable().await.is_ok() => {}
        _ => std::future::pending().await,
    }
}

enum Flow {
    Go,
    StdoutGone,
}

struct Watcher {
    ctx: Ctx,
    session_id: String,
    store: Option<Store>,
    /// `<owner>.monitor.lock`, held while we run: it tells the asyncRewake waiter (and doctor)
    /// that a monitor will announce the next batch. Taken again after `/clear` moves the owner;
    /// a second monitor of the same session simply does not get it.
    alive_lock: Option<(String, std::fs::File)>,
    /// Our wake socket for the current owner's store, and the runtime's handle on it.
    wake: Option<(String, notify::Listener, tokio::net::UnixDatagram)>,
    settle_since: Option<Instant>,
    last_ensure: Instant,
}

impl Watcher {
    /// How long to wait for the next look: the rest of the settle while a batch forms, else a tick
    /// (a notification cuts either short).
    fn next_wait(&self, tick: Duration) -> Duration {
        match self.settle_since {
            Some(since) => SETTLE.saturating_sub(since.elapsed()).min(tick),
            None => tick,
        }
    }

    /// Binds (or rebinds, after `/clear` moved the owner or our name was removed) the wake socket,
    /// and empties it: whatever it told is about to be seen by the look that follows.
    fn arm(&mut self, paths: &SessionPaths) {
        let fresh = self
            .wake
            .as_ref()
            .is_some_and(|(o, l, _)| *o == paths.owner && l.is_reachable());
        if !fresh {
            self.wake = None;
            self.wake = notify::Listener::bind(&paths.db, notify::WATCH).and_then(|l| {
                let s = l.socket().try_clone().ok()?;
                let s = tokio::net::UnixDatagram::from_std(s).ok()?;
                Some((paths.owner.clone(), l, s))
            });
        }
        if let Some((_, _, s)) = &self.wake {
            let mut buf = [0u8; 16];
            // Through the runtime's handle, so its readiness is cleared too.
            while s.try_recv(&mut buf).is_ok() {}
        }
    }

    /// One look: follow `/clear` links, keep the poller alive, and print a batch once it settled.
    fn step(&mut self) -> Result<Flow> {
        let paths = SessionPaths::locate(&self.ctx, &self.session_id);
        let owner = paths.owner.clone();
        self.arm(&paths);
        if self.alive_lock.as_ref().is_none_or(|(o, _)| *o != owner) {
            let lock = paths.lock(MONITOR_LOCK);
            self.alive_lock = crate::fsx::try_lock(&lock)
                .ok()
                .flatten()
                .map(|f| (owner.clone(), f));
        }
        let path = paths.db;
        if self.store.as_ref().is_none_or(|s| s.path() != path) {
            self.store = None;
            if !path.exists() {
                return Ok(Flow::Go);
            }
            self.store = Some(Store::open(&path)?);
        }
        let Some(s) = self.store.as_ref() else {
            return Ok(Flow::Go);
        };
        if self.last_ensure.elapsed() >= ENSURE_EVERY {
            self.last_ensure = Instant::now();
            crate::poller::ensure_if_live(&self.ctx, &owner, s);
        }
        if !s.has_unannounced()? {
            self.settle_since = None;
            return Ok(Flow::Go);
        }
        let since = *self.settle_since.get_or_insert_with(Instant::now);
        if since.elapsed() < SETTLE {
            return Ok(Flow::Go);
        }
        self.settle_since = None;
        let claimed = s.claim_unannounced_with(now_ms(), |batch| {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", crate::wake::line(batch))?;
            out.flush()
        });
        match claimed {
            Ok(_) => Ok(Flow::Go),
            // Claude Code closed our stdout: the session is gone. The claim was rolled back, so
            // the batch waits for the next monitor of this session (after `--resume`).
            Err(ClaimError::Deliver(_)) => Ok(Flow::StdoutGone),
            Err(ClaimError::Store(e)) => Err(e),
        }
    }
}

/// Whether the reader of our stdout is gone (a socket or pipe reports HUP/ERR on poll).
fn stdout_closed() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd on the stack, zero timeout; poll only writes `revents`.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

/// Whether process `pid` exists (EPERM: it does, owned by someone else).
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 only checks for existence and permission; it sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}
