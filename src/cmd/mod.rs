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
