//! Logging: long-running entry points (poller, MCP server, monitor) append to
//! `state/a2a-mod.log` (0600); short ones log only when `A2A_MOD_LOG` is set. Stdout is never a
//! log sink: it is the protocol (MCP, hooks, status line, monitor lines). Secrets cannot reach a
//! line: they live in `Secret`, which prints `***`.

use crate::env::Ctx;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use tracing_subscriber::EnvFilter;

/// Opens the log for appending, creating it 0600 (it may name workers and task ids).
pub fn open_append(ctx: &Ctx) -> Option<std::fs::File> {
    let _ = std::fs::create_dir_all(&ctx.state_dir);
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(ctx.log_path())
        .ok()
}

/// Starts logging to the state folder's log file at `A2A_MOD_LOG` (default `info`). Failing to
/// open the log never stops the caller.
pub fn init_file(ctx: &Ctx, component: &'static str) {
    let filter = EnvFilter::try_from_env("A2A_MOD_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let Some(file) = open_append(ctx) else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_target(false)
        .compact()
        .try_init();
    tracing::debug!("{component} logging (pid {})", std::process::id());
}

/// Short-lived commands: stderr, and only when `A2A_MOD_LOG` asks.
pub fn init_stderr() {
    if let Ok(filter) = EnvFilter::try_from_env("A2A_MOD_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .try_init();
    }
}
