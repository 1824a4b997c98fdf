//! Entry point: parse, route, render an error as one line and map it to an exit code.
//! The status line and hooks are routed before any runtime is built (hot path, STYLE.md).

// The process ends here and only here (clippy.toml forbids `process::exit` elsewhere): every
// entry point returns its exit code to `main`.
#![allow(clippy::disallowed_methods)]

use a2a_mod::cli::{Cli, Command};
use a2a_mod::{cmd, env::Ctx, error};
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
                error::EXIT_USAGE
            } else {
                error::EXIT_OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = match run(cli) {
        Ok(()) => error::EXIT_OK,
        Err(e) if error::is_broken_pipe(&e) => error::EXIT_OK,
        Err(e) => {
            // The one-line error of every user command, rendered once (STYLE.md 1).
            #[allow(clippy::print_stderr)]
            {
                eprintln!("{}", error::render(&e));
            }
            error::EXIT_FAILURE
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> anyhow::Result<()> {
    // Hooks run on every prompt and tool call: no runtime, no logging set-up, never a loud failure.
    if let Command::Hook(h) = &cli.command {
        std::process::exit(a2a_mod::hook::run(h.event));
    }
    if let Command::Statusline(args) = &cli.command {
        std::process::exit(a2a_mod::statusline::run(args.then.as_deref()));
    }
    let ctx = Ctx::from_env()?;
    match cli.command {
        Command::Watch(a) => {
            a2a_mod::log::init_file(&ctx, "watch");
            let session = match a.session.session {
                Some(s) => s,
                None => a2a_mod::env::cli_session(None)?,
            };
            cmd::runtime()?.block_on(a2a_mod::watch::run(ctx, session))
        }
        Command::Poller(a) => {
            a2a_mod::log::init_file(&ctx, "poller");
            cmd::runtime()?.block_on(a2a_mod::poller::run(ctx, a.session))
        }
        Command::Mcp => {
            // Stdout is the protocol: logs go to the state log file only.
            a2a_mod::log::init_file(&ctx, "mcp");
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?
                .block_on(a2a_mod::mcp::serve_stdio(ctx))
        }
        command => {
            a2a_mod::log::init_stderr();
            match command {
                Command::Worker(w) => cmd::worker::run(&ctx, w),
                Command::Send(a) => cmd::tasks::send(&ctx, a),
                Command::Task(a) => cmd::tasks::task(&ctx, a),
                Command::Cancel(a) => cmd::tasks::cancel(&ctx, a),
                Command::Tasks(a) => cmd::tasks::tasks(&ctx, a),
                Command::FakeWorker(a) => a2a_mod::fake_worker::run_command(&a),
                Command::Demo => cmd::demo::run(),
                Command::Install(a) => cmd::install::run(&ctx, &a),
                Command::Doctor => cmd::doctor::run(&ctx),
                // Routed before the runtime is built (hot paths above).
                Command::Statusline(_)
                | Command::Hook(_)
                | Command::Mcp
                | Command::Watch(_)
                | Command::Poller(_) => Ok(()),
            }
        }
    }
}
