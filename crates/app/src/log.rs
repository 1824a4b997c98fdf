//! Logging: long-running entry points (poller, MCP server, monitor) append to
//! `state/a2a-mod.log` (0600, in a 0700 state folder); short ones log only when `A2A_MOD_LOG` is set. Stdout is never a
//! log sink: it is the protocol (MCP, hooks, status line, monitor lines). Secrets cannot reach a
//! line: they live in `Secret`, which prints `***`.

use a2a_mod_claude::log::open_append;
use a2a_mod_os::env::Ctx;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// Starts logging to the state folder's log file at `A2A_MOD_LOG` (default `info`). Failing to
/// open the log never stops the caller.
pub fn init_file(ctx: &Ctx, component: &'static str) {
    let filter = filter().unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO));
    let Some(file) = open_append(ctx) else {
        return;
    };
    // The long-running entry points start here, once: a state folder or log left looser by an
    // older a2a-mod (or made by hand) is made private.
    a2a_mod_os::fsx::tighten(&ctx.state_dir);
    a2a_mod_os::fsx::tighten_open(&file);
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_target(false)
        .compact()
        .finish()
        .with(filter)
        .try_init();
    tracing::debug!("{component} logging (pid {})", std::process::id());
}

/// Short-lived commands: stderr, and only when `A2A_MOD_LOG` asks.
pub fn init_stderr() {
    if let Some(filter) = filter() {
        to_stderr(filter);
    }
}

/// `a2a-mod serve`: stderr always (an operator's terminal, or journald under systemd), at
/// `A2A_MOD_LOG`, by default a line per accepted task, ending and refusal (`info` for a2a-mod's
/// own crates, `warn` for the libraries under them).
pub fn init_serve() {
    to_stderr(filter().unwrap_or_else(|| {
        Targets::new()
            .with_default(tracing::Level::WARN)
            .with_target("a2a_mod", tracing::Level::INFO)
            .with_target("a2a_mod_serve", tracing::Level::INFO)
    }));
}

fn to_stderr(filter: Targets) {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .finish()
        .with(filter)
        .try_init();
}

/// `A2A_MOD_LOG` as `level` or `target=level,…` (tracing's `Targets` syntax). Not `EnvFilter`:
/// its regex engine (regex-automata, and the Unicode tables a dev-dependency's features switch
/// on) made every start of the binary, the status line's included, measurably slower
/// (docs/design.md "Start-up cost").
fn filter() -> Option<Targets> {
    parse_filter(&a2a_mod_os::env::log_filter()?)
}

/// A filter that does not parse is ignored, as before: logging never stops a command. The AWS
/// signer's own debug and trace events carry the access key id and the signed headers (a
/// session token among them), so it is held at `info` whatever the filter asks: no secret in a
/// log (tests/it/aws.rs reads the trace log for them).
fn parse_filter(spec: &str) -> Option<Targets> {
    let t: Targets = spec.parse().ok()?;
    Some(t.with_target("aws_sigv4", tracing::Level::INFO))
}

#[cfg(test)]
mod tests {
    use super::parse_filter;
    use tracing::Level;

    #[test]
    fn log_filters_keep_the_common_syntax() {
        let debug = parse_filter("debug").expect("a level");
        assert!(debug.would_enable("a2a_mod::poller", &Level::DEBUG));
        assert!(!debug.would_enable("a2a_mod::poller", &Level::TRACE));
        let pairs = parse_filter("warn,a2a_mod=trace").expect("pairs");
        assert!(pairs.would_enable("a2a_mod::a2a", &Level::TRACE));
        assert!(!pairs.would_enable("hyper::proto", &Level::INFO));
        assert!(parse_filter("a2a_mod=loud").is_none());
    }
}
