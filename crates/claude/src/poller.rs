//! Starting a session's poller, and knowing whether one runs: the synchronous half of the
//! poller, re-exported by the binary's `poller` module, whose loop (`crates/app/src/poller/mod.rs`) runs
//! in the process this starts. Hooks, the monitor, the MCP server and `send` call [`ensure`];
//! the hooks run on every prompt, and this crate has no runtime to build.

use a2a_mod_os::env::Ctx;
use a2a_mod_store::{Reader, SessionPaths};
use anyhow::Result;
use std::time::Duration;

/// How long a starting poller keeps trying for the lock before it takes another poller for its
/// holder (see `fsx::try_lock_within`).
pub const LOCK_PATIENCE: Duration = Duration::from_millis(50);

/// `<owner>.poller.lock`, for a session id that owns its store.
pub fn lock_path(ctx: &Ctx, session_id: &str) -> std::path::PathBuf {
    SessionPaths::of_owner(ctx, session_id).lock("poller")
}

/// Whether a poller runs for this session now.
pub fn is_running(ctx: &Ctx, session_id: &str) -> bool {
    a2a_mod_os::fsx::is_locked(&lock_path(ctx, session_id))
}

/// Starts the session's poller unless one runs. Never fails the caller: a task left without a
/// poller is still tracked in the store and picked up by the next `ensure` (the monitor and the MCP
/// server call it periodically).
pub fn ensure(ctx: &Ctx, session_id: &str) {
    if is_running(ctx, session_id) {
        return;
    }
    if let Err(e) = spawn(ctx, session_id) {
        tracing::warn!("cannot start the poller of session {session_id}: {e:#}");
    }
}

/// [`ensure`], only when the session has a live task: what every keeper (the MCP server, the
/// monitor, the hooks, the rewake waiter) checks before starting one.
pub fn ensure_if_live(ctx: &Ctx, session_id: &str, store: &Reader) {
    match store.live_count() {
        Ok(0) => {}
        Ok(_) => ensure(ctx, session_id),
        Err(e) => tracing::warn!("cannot read the tasks of session {session_id}: {e:#}"),
    }
}

fn spawn(ctx: &Ctx, session_id: &str) -> Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    // The child finds the same folders: through A2A_MOD_HOME when this ctx is a home layout
    // (the env may not say so, e.g. in-process tests), else through the inherited XDG env.
    if ctx.state_dir == ctx.config_dir.join("state") {
        cmd.env("A2A_MOD_HOME", &ctx.config_dir);
    }
    let child = cmd
        .arg("poller")
        .arg("--session")
        .arg(session_id)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: Claude Code stops a monitor by signalling the monitor's group,
        // and the poller must outlive that to finish tracking what is in flight.
        .process_group(0)
        .spawn()?;
    // Reap it when it exits, so a long-lived parent (the MCP server, the monitor) collects no
    // zombies over a session.
    std::thread::spawn(move || {
        let mut child = child;
        let _ = child.wait();
    });
    Ok(())
}
