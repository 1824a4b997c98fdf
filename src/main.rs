//! Entry point: parse, `run`, render an error as one line and map it to an exit code. Every command
//! is a file of `src/cmd/` implementing [`cmd::Run`](crate::cmd::Run). The status line is routed
//! before clap's full parse, and it and the hooks before any runtime is built (the hot-path rules
//! in ARCHITECTURE.md).

// The process ends here and only here (clippy.toml forbids `process::exit` elsewhere): every
// entry point returns its exit code to `main`.
#![allow(clippy::disallowed_methods)]

use a2a_mod::cli::Cli;
use a2a_mod::cmd::Run;
use a2a_mod::error;
use clap::Parser;

fn main() {
    // Hot path first: `statusline` runs every second, so it skips building clap's whole command
    // tree; anything unusual (`--help`, a typo) falls through to clap below.
    if let Some(then) = a2a_mod_hot::statusline::fast_args(std::env::args_os().skip(1)) {
        std::process::exit(a2a_mod_hot::statusline::run(then.as_deref()));
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                error::EXIT_USAGE
            } else {
                error::EXIT_OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    std::process::exit(exit_code(cli.command.run()));
}

fn exit_code(result: anyhow::Result<i32>) -> i32 {
    match result {
        Ok(code) => code,
        Err(e) if error::is_broken_pipe(&e) => error::EXIT_OK,
        Err(e) => {
            // The one-line error of every user command, rendered once (CONTRIBUTING.md, "Errors").
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{}", error::render(&e));
            }
            error::EXIT_FAILURE
        }
    }
}
