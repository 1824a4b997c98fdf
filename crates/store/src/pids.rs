//! Claude Code process → the session that owns its store. `/clear` gives hooks a new session id
//! but keeps the MCP server and the monitor (and their tasks) under the old one; the claude pid is
//! the key that survives it (docs/claude-code.md "Sessions across /clear, --resume and /exit"). The MCP server and the monitor
//! record their session under the pid; the SessionStart hook of a `/clear` links the new id to it.

use a2a_mod_os::env::{Ctx, valid_session_id};
use std::path::PathBuf;

fn path(ctx: &Ctx, pid: u32) -> PathBuf {
    ctx.state_dir.join("pids").join(pid.to_string())
}

/// Records `session` as the store owner of Claude Code process `pid`, unless one is recorded and
/// that process still runs (a pid reused after a reboot gets the new session).
pub fn record(ctx: &Ctx, pid: u32, session: &str) {
    let p = path(ctx, pid);
    match lookup(ctx, pid) {
        // Already recorded: no rewrite (and no fsync) on every SessionStart and monitor start.
        Some(old) if old == session => return,
        Some(_) if started_after_record(&p, pid) => return,
        _ => {}
    }
    // Private like the rest of the state; an older, looser folder is tightened here.
    if let Some(dir) = p.parent() {
        a2a_mod_os::fsx::tighten(dir);
    }
    let _ =
        a2a_mod_os::fsx::write_atomic(&p, session.as_bytes(), Some(a2a_mod_os::fsx::PRIVATE_FILE));
}

/// A record older than the process is stale (pid reuse).
fn started_after_record(record: &std::path::Path, pid: u32) -> bool {
    let Ok(rec) = std::fs::metadata(record).and_then(|m| m.modified()) else {
        return false;
    };
    let Ok(proc_start) = std::fs::metadata(format!("/proc/{pid}")).and_then(|m| m.modified())
    else {
        return true;
    };
    rec >= proc_start
}

pub fn lookup(ctx: &Ctx, pid: u32) -> Option<String> {
    let s = std::fs::read_to_string(path(ctx, pid)).ok()?;
    let s = s.trim();
    valid_session_id(s).then(|| s.to_string())
}

/// `CLAUDE_PID` from the environment (monitor, hooks and status line have it).
pub fn claude_pid_from_env() -> Option<u32> {
    a2a_mod_os::env::claude_pid()
}
