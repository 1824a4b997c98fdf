//! User commands, one file each (zoxide `src/cmd/`). Each returns `Result`; `main` renders errors
//! as one line and maps them to exit codes.

pub mod demo;
pub mod doctor;
pub mod install;
pub mod tasks;
pub mod worker;

use crate::config::Config;
use crate::env::Ctx;
use anyhow::Result;
use std::io::Write;

/// Loads the config for a user command.
pub fn load(ctx: &Ctx) -> Result<Config> {
    Config::load(&ctx.config_path())
}

/// A multi-thread-free runtime for one-shot commands.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Prints to stdout; a closed pipe (`| head`) is not an error.
#[allow(clippy::print_stdout)]
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
