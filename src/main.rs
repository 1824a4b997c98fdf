//! Entry point: parse, route, render an error as one line and map it to an exit code.
//! The status line and hooks are routed before any runtime is built (hot path, STYLE.md).

use a2a_mod::cli::{Cli, Command};
use clap::Parser;

fn main() {
    // Hot path first: `statusline` runs every second, so it skips building clap's whole command
    // tree; anything unusual (`--help`, a typo) falls through to clap below.
    if let Some(then) = a2a_mod::statusline::fast_args(std::env::args_os().skip(1)) {
        std::process::exit(a2a_mod::statusline::run(then.as_deref()));
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                a2a_mod::error::EXIT_USAGE
            } else {
                0
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    // Synchronous, before any runtime or logging is set up.
    if let Command::Statusline(args) = &cli.command {
        std::process::exit(a2a_mod::statusline::run(args.then.as_deref()));
    }
}
