//! Exit codes and one-line error rendering (CONTRIBUTING.md, "Errors" and "Exit codes").
//!
//! User commands: 0 success, 1 failure (one line on stderr saying what to do), 2 bad usage
//! (docs/commands-and-tools.md). Claude Code hooks: 0 = success (stdout JSON read), 2 = blocking / asyncRewake
//! wake (stderr is the payload); our own failures in a hook or the status line exit 0 quietly.

pub const EXIT_OK: i32 = 0;
pub const EXIT_FAILURE: i32 = 1;
pub const EXIT_USAGE: i32 = 2;
/// A hook that exits 2 blocks, or with `asyncRewake` wakes Claude with its stderr.
pub const HOOK_EXIT_WAKE: i32 = 2;

/// `a2a-mod: <what failed>: <cause> — <what to do>`, on one line, whatever the chain holds.
pub fn render(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    let one: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if one.starts_with("a2a-mod:") {
        one
    } else {
        format!("a2a-mod: {one}")
    }
}

/// True when the error chain is a broken pipe: a closed stdout is not a failure (ripgrep).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
