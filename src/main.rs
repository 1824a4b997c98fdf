//! Entry point: parse, route, render an error as one line and map it to an exit code.
//! The status line and hooks are routed before any runtime is built (hot path, STYLE.md).

use a2a_mod::cli::{Cli, Command};
use clap::Parser;

fn main() {
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
    // Hot path: synchronous, before any runtime or logging is set up.
    if let Command::Statusline(args) = &cli.command {
        std::process::exit(a2a_mod::statusline::run(args.then.as_deref()));
    }
}
