//! `a2a-mod watch`: the plugin's monitor. Claude Code starts one per session and turns each line
//! it prints into a wake-up (claude-code-facts.md E5): so stdout carries exactly one line per
//! batch of ended tasks and nothing else. Batches are claimed and marked in one transaction,
//! committed only once the line is written, so no task is announced twice or skipped across
//! restarts. It also keeps the session's poller alive (a `kill -9`ed poller is replaced).
//! Exits on SIGTERM/SIGINT/SIGHUP (Claude Code's way of stopping monitors) or a closed stdout.

use crate::env::{Ctx, now_ms};
use crate::state::{Store, pids, session};
use anyhow::Result;
use std::io::Write;
use std::time::{Duration, Instant};

const TICK: Duration = Duration::from_millis(250);
/// Tasks ending within this of each other share one line.
pub const SETTLE: Duration = Duration::from_millis(1000);
const ENSURE_EVERY: Duration = Duration::from_secs(2);

pub async fn run(ctx: Ctx, session_id: String) -> Result<()> {
    if let Some(pid) = pids::claude_pid_from_env() {
        pids::record(&ctx, pid, &session::resolve(&ctx, &session_id));
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    let mut store: Option<Store> = None;
    let mut settle_since: Option<Instant> = None;
    let mut last_ensure = Instant::now() - ENSURE_EVERY;
    loop {
        tokio::select! {
            _ = term.recv() => return Ok(()),
            _ = hup.recv() => return Ok(()),
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = tokio::time::sleep(TICK) => {}
        }
        let owner = session::resolve(&ctx, &session_id);
        let path = session::db_path(&ctx, &owner);
        if store.as_ref().is_none_or(|s| s.path() != path) {
            if !path.exists() {
                continue;
            }
            store = Some(Store::open(&path)?);
        }
        let Some(s) = store.as_ref() else { continue };
        if last_ensure.elapsed() >= ENSURE_EVERY {
            last_ensure = Instant::now();
            if !s.live_tasks()?.is_empty() {
                crate::poller::ensure(&ctx, &owner);
            }
        }
        if !s.has_unannounced()? {
            settle_since = None;
            continue;
        }
        let since = *settle_since.get_or_insert_with(Instant::now);
        if since.elapsed() < SETTLE {
            continue;
        }
        settle_since = None;
        let claimed = s.claim_unannounced_with(now_ms(), |batch| {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", crate::wake::line(batch))?;
            out.flush()
        });
        if let Err(e) = claimed {
            if crate::error::is_broken_pipe(&e) || is_io(&e) {
                // Claude Code closed our stdout: the session is gone.
                return Ok(());
            }
            return Err(e);
        }
    }
}

fn is_io(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<rusqlite::Error>()
            .is_some_and(|r| matches!(r, rusqlite::Error::ToSqlConversionFailure(_)))
    })
}
