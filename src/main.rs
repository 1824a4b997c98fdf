//! Entry point: parse, `run`, render an error as one line and map it to an exit code. Every command
//! is a file of `src/cmd/` implementing [`cmd::Run`](crate::cmd::Run). The status line is routed
//! before clap's full parse, and it and the hooks before any runtime is built (the hot-path rules
//! in ARCHITECTURE.md).

#![forbid(unsafe_code)]

use a2a_mod::cli::Cli;
use a2a_mod::cmd::Run;
use a2a_mod::error;
use clap::Parser;
use std::process::ExitCode;

// Every entry point returns its exit code here, and main returns it: the process ends with
// destructors run and stdout flushed (clippy.toml forbids `process::exit` everywhere).
fn main() -> ExitCode {
    // Hot path first: `statusline` runs every second, so it skips building clap's whole command
    // tree; anything unusual (`--help`, a typo) falls through to clap below.
    if let Some(then) = a2a_mod_claude::statusline::fast_args(std::env::args_os().skip(1)) {
        return code(a2a_mod_claude::statusline::run(then.as_deref()));
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let status = if e.use_stderr() {
                error::EXIT_USAGE
            } else {
                error::EXIT_OK
            };
            let _ = e.print();
            return code(status);
        }
    };
    code(exit_code(cli.command.run()))
}

/// An exit status as the process ends with it (0 to 255; anything else is a failure).
fn code(status: i32) -> ExitCode {
    u8::try_from(status).map_or(ExitCode::FAILURE, ExitCode::from)
}

fn exit_code(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) if error::is_broken_pipe(&e) => error::EXIT_OK,
        Err(e) => {
            // The one-line error of every user command, rendered once (CONTRIBUTING.md, "Errors").
            #[expect(
                clippy::print_stderr,
                reason = "the one place a user command's error is printed"
            )]
            {
                eprintln!("{}", error::render(&e));
            }
            error::EXIT_FAILURE
        }
    }
}
