//! Logging: long-running entry points (poller, MCP server, monitor) append to
//! `state/a2a-mod.log` (0600, in a 0700 state folder); short ones log only when `A2A_MOD_LOG` is set. Stdout is never a
//! log sink: it is the protocol (MCP, hooks, status line, monitor lines). Secrets cannot reach a
//! line: they live in `Secret`, which prints `***`.

use crate::env::Ctx;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use tracing_subscriber::EnvFilter;

/// Opens the log for appending, creating it 0600 (it may name workers and task ids) in a 0700
/// state folder. No tightening here: the status line appends through this (when logging is on),
/// and the hot path chmods nothing; [`init_file`] tightens.
pub fn open_append(ctx: &Ctx) -> Option<std::fs::File> {
    let _ = crate::fsx::create_private_dir(&ctx.state_dir);
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(crate::fsx::PRIVATE_FILE)
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
    // The long-running entry points start here, once: a state folder or log left looser by an
    // older a2a-mod (or made by hand) is made private.
    crate::fsx::tighten(&ctx.state_dir);
    crate::fsx::tighten_open(&file);
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
