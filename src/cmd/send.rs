//! `a2a-mod send`: the `send` tool from the command line, on the same code path as Claude's
//! ([`session::Session`](a2a_mod_app::session::Session)), so a user can reproduce exactly what Claude
//! saw. `--file`, `--data` and `--context-id` are the tool's `files`, `data` and `contextId`.
//!
//! The send runs in a child of the command (`send --keeper`, in a process group of its own), the
//! way the MCP server runs Claude's: a task still at work after the inline window keeps the
//! stream its send opened, read to the task's end by the child after the command has printed and
//! exited. Closing it with the command would cancel the task on servers that cancel a task whose
//! creating stream disconnects (Mastra), and lose the chunks before the poller's subscription.
//! The command waits only for the window: the child prints the outcome on the command's own
//! stdout and stderr, tells the exit code over a socket (the child's stdin), then lets go of all
//! three. The command ending early (Ctrl-C) closes that socket, which ends the window the way a
//! cancelled tool call does: the task is handed to the background, nothing is printed.
//! `--no-keep` sends from the command itself, its stream closed with it.

use super::Run;
use super::shell::{print_outcome, runtime, user_session};
use crate::cli::SendArgs;
use a2a_mod_app::session::{Budget, DEFAULT_BUDGET, SendInput, SendRequest, Session};
use anyhow::{Context as _, Result, anyhow};
use std::io::{BufRead as _, Write as _};
use std::os::fd::AsFd as _;
use std::os::unix::net::UnixStream;
use std::sync::Arc;

impl Run for SendArgs {
    fn run(self) -> Result<i32> {
        // Parsed before anything else runs: a typo in the JSON sends nothing.
        let data = match self.data.as_deref() {
            Some(text) => Some(serde_json::from_str(text).map_err(|e| {
                anyhow!(
                    "--data is not JSON ({e}) — pass one JSON value, e.g. --data '{{\"k\": 1}}'"
                )
            })?),
            None => None,
        };
        if self.keeper {
            return keep(self, data);
        }
        if self.no_keep {
            return send_here(self, data);
        }
        match spawn_keeper(&self) {
            Ok(code) => Ok(code),
            // No child to run it (the binary is gone, no process left): the send runs here, and
            // its stream closes with the command.
            Err(Spawn::Failed(e)) => {
                tracing::warn!("cannot start the send's keeper, sending from here: {e:#}");
                send_here(self, data)
            }
            Err(Spawn::Died) => Err(anyhow!(
                "the send stopped before it finished — see `a2a-mod tasks` for what the worker got"
            )),
        }
    }
}

/// Why [`spawn_keeper`] has no exit code.
enum Spawn {
    Failed(anyhow::Error),
    /// It started, and ended without telling one.
    Died,
}

/// Starts `send --keeper` with the same arguments and waits for the exit code it tells.
fn spawn_keeper(a: &SendArgs) -> Result<i32, Spawn> {
    use std::os::unix::process::CommandExt as _;
    let (ours, theirs) = UnixStream::pair().map_err(|e| Spawn::Failed(e.into()))?;
    {
        let exe = std::env::current_exe().map_err(|e| Spawn::Failed(e.into()))?;
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["send", "--keeper", &a.alias]);
        // `--flag=value`: a value that starts with `-` stays a value.
        let flag = |name: &str, v: &str| format!("--{name}={v}");
        if let Some(t) = &a.task_id {
            cmd.arg(flag("task-id", t));
        }
        if let Some(c) = &a.context_id {
            cmd.arg(flag("context-id", c));
        }
        for f in &a.files {
            cmd.arg(flag("file", f));
        }
        if let Some(d) = &a.data {
            cmd.arg(flag("data", d));
        }
        if let Some(s) = &a.session.session {
            cmd.arg(flag("session", s));
        }
        if a.json {
            cmd.arg("--json");
        }
        cmd.arg("--").args(&a.message);
        cmd.stdin(std::os::fd::OwnedFd::from(theirs))
            // Its own process group: Ctrl-C stops the command, not the stream it holds.
            .process_group(0)
            .spawn()
            .map_err(|e| Spawn::Failed(e.into()))?;
        // `cmd` (and with it this process's copy of the child's end) is dropped here, so a
        // child that dies is an end of file below.
    }
    let mut line = String::new();
    match std::io::BufReader::new(ours).read_line(&mut line) {
        Ok(n) if n > 0 => line.trim().parse().map_err(|_| Spawn::Died),
        _ => Err(Spawn::Died),
    }
}

/// The send in this process, its stream closed with it (`--no-keep`, and the keeper's fallback).
fn send_here(a: SendArgs, data: Option<serde_json::Value>) -> Result<i32> {
    let (s, message, input) = open(&a, data)?;
    let mut req = SendRequest::new(&a.alias, &message, Budget::new(DEFAULT_BUDGET));
    req.input = input;
    let (o, _) = runtime()?.block_on(s.send(req))?;
    print_outcome(&o, a.json)?;
    Ok(a2a_mod_claude::error::EXIT_OK)
}

fn open(a: &SendArgs, data: Option<serde_json::Value>) -> Result<(Session, String, SendInput)> {
    let s = user_session(a.session.session.as_deref())?;
    let input = SendInput {
        task_id: a.task_id.clone(),
        context_id: a.context_id.clone(),
        files: a.files.clone(),
        data,
    };
    Ok((s, a.message.join(" "), input))
}

/// `send --keeper`: the send and its window; the outcome printed and its exit code told to the
/// command over stdin; then, detached from the command's output, the stream read to its end.
fn keep(a: SendArgs, data: Option<serde_json::Value>) -> Result<i32> {
    let command = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(UnixStream::from)
        .context("the keeper's stdin is not the command's socket")?;
    let mut tell = command.try_clone()?;
    command.set_nonblocking(true)?;
    let rt = runtime()?;
    let gone = std::sync::atomic::AtomicBool::new(false);
    let sent = rt.block_on(async {
        let (s, message, input) = open(&a, data)?;
        let s = Arc::new(s);
        let mut command = tokio::net::UnixStream::from_std(command)?;
        // The command sends nothing: the read ends when it does (an end of file, an error).
        let left = async {
            let mut buf = [0u8; 64];
            loop {
                match tokio::io::AsyncReadExt::read(&mut command, &mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
            }
            gone.store(true, std::sync::atomic::Ordering::Relaxed);
        };
        let mut req = SendRequest::new(&a.alias, &message, Budget::new(DEFAULT_BUDGET));
        req.input = input;
        req.stop = Box::pin(left);
        req.keep_stream = true;
        let r = s.send(req).await;
        anyhow::Ok((s, r))
    });
    // Whether the command went while the window was open: then nobody reads what it would print.
    let gone = gone.into_inner();
    let (session, handed) = match sent {
        Ok((s, Ok((o, handed)))) => {
            let code = if gone {
                a2a_mod_claude::error::EXIT_OK
            } else {
                match print_outcome(&o, a.json) {
                    Ok(()) => a2a_mod_claude::error::EXIT_OK,
                    Err(e) => report(&e),
                }
            };
            told(&mut tell, code, gone);
            (Some(s), handed)
        }
        Ok((_, Err(e))) | Err(e) => {
            let code = if gone {
                a2a_mod_claude::error::EXIT_FAILURE
            } else {
                report(&e)
            };
            told(&mut tell, code, gone);
            (None, None)
        }
    };
    drop(tell);
    let (Some(session), Some(h)) = (session, handed) else {
        return Ok(a2a_mod_claude::error::EXIT_OK);
    };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // Let go of stdin, stdout and stderr: whatever reads the command's output (a pipe, `$(…)`)
    // is done when the command is, not when the task is.
    a2a_mod_os::process::detach_stdio();
    rt.block_on(session.follow_on(h));
    Ok(a2a_mod_claude::error::EXIT_OK)
}

/// An error as `main` renders it, and its exit code.
#[expect(
    clippy::print_stderr,
    reason = "the detached send renders its error as main does"
)]
fn report(e: &anyhow::Error) -> i32 {
    if a2a_mod_claude::error::is_broken_pipe(e) {
        return a2a_mod_claude::error::EXIT_OK;
    }
    eprintln!("{}", a2a_mod_claude::error::render(e));
    a2a_mod_claude::error::EXIT_FAILURE
}

/// Tells the command its exit code (unless it is gone).
fn told(tell: &mut UnixStream, code: i32, gone: bool) {
    if !gone {
        let _ = tell.write_all(format!("{code}\n").as_bytes());
    }
}
