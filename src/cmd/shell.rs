//! What the command shells share: how a command starts (its folders, where its logs go), the
//! config, a runtime for one-shot async work, and printing to stdout. Never imported by the hot
//! paths (`cmd/statusline.rs`, `cmd/hook.rs`): this file names tokio.

use a2a_mod_app::session::Outcome;
use a2a_mod_config::Config;
use a2a_mod_os::env::Ctx;
use anyhow::{Context as _, Result};
use std::io::Write;

/// What every user command does first: find its folders (without `HOME` or `A2A_MOD_HOME` it
/// fails here, before anything runs) and log to stderr.
pub fn user_command() -> Result<Ctx> {
    let ctx = Ctx::from_env()?;
    a2a_mod_app::log::init_stderr();
    Ok(ctx)
}

/// What Claude Code's long-lived entry points (`mcp`, `watch`, `poller`) do first: stdout is the
/// protocol, so logs go to the state log file only.
pub fn entry_point(component: &'static str) -> Result<Ctx> {
    let ctx = Ctx::from_env()?;
    a2a_mod_app::log::init_file(&ctx, component);
    Ok(ctx)
}

/// Loads the config for a user command.
pub fn load(ctx: &Ctx) -> Result<Config> {
    Config::load(&ctx.config_path())
}

/// The session `send`, `task` and `cancel` work in: `--session`, else Claude Code's, else `cli`.
pub fn user_session(session: Option<&str>) -> Result<a2a_mod_app::session::Session> {
    let ctx = user_command()?;
    a2a_mod_app::session::Session::open(&ctx, load(&ctx)?, &a2a_mod_os::env::cli_session(session)?)
}

/// A multi-thread-free runtime for one-shot commands.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Prints to stdout; a closed pipe (`| head`) is not an error.
pub fn out(text: &str) -> Result<()> {
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|_| {
        if text.ends_with('\n') {
            Ok(())
        } else {
            o.write_all(b"\n")
        }
    }) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

pub fn out_json(v: &impl serde::Serialize) -> Result<()> {
    out(&serde_json::to_string_pretty(v)?)
}

/// What `send`, `task` and `cancel` print: the note, or with `--json` the whole outcome.
pub fn print_outcome(o: &Outcome, json: bool) -> Result<()> {
    if json { out_json(o) } else { out(&o.note) }
}

/// Runs a child to its end, or kills it at `deadline`. Its output is drained while it runs (a full
/// pipe would otherwise stall it past the deadline). Returns the output and how long it took.
pub fn run_with_deadline(
    cmd: &mut std::process::Command,
    stdin: &[u8],
    deadline: std::time::Duration,
) -> Result<(std::process::Output, std::time::Duration)> {
    use std::io::Read;
    use std::process::Stdio;
    let start = std::time::Instant::now();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(stdin);
    }
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("no answer within {deadline:?}");
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(2)),
            Err(e) => return Err(e.into()),
        }
    };
    let elapsed = start.elapsed();
    let output = std::process::Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    };
    Ok((output, elapsed))
}

/// Returns at SIGTERM or SIGINT: how the long-running user commands (`fake-worker`, `serve`) stop.
#[cfg(unix)]
pub async fn wait_for_stop_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot watch SIGINT")?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
pub async fn wait_for_stop_signal() -> anyhow::Result<()> {
    tokio::signal::ctrl_c().await.context("cannot watch Ctrl-C")
}
