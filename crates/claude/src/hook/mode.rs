//! Whether a person attends the session: an interactive terminal (woken by the monitor or the
//! asyncRewake waiter) or a headless / Agent SDK run (`claude -p`, stream-json), where neither
//! runs and only the Stop hook can hand Claude a finished task (docs/claude-code.md "Headless
//! and SDK mode"). Hooks read it from their own environment; the MCP server does not get
//! `CLAUDE_CODE_SESSION_ATTENDED`, so it reads what the SessionStart hook recorded.

use a2a_mod_os::env::Ctx;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Someone is at the terminal: never hold a turn end.
    Attended,
    /// `claude -p`, stream-json, the Agent SDK: the Stop hook waits for live tasks.
    Headless,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Attended => "attended",
            Mode::Headless => "headless",
        }
    }

    fn parse(s: &str) -> Option<Mode> {
        match s.trim() {
            "attended" => Some(Mode::Attended),
            "headless" => Some(Mode::Headless),
            _ => None,
        }
    }
}

/// The mode from a hook's environment: `CLAUDE_CODE_SESSION_ATTENDED` (set by the session itself:
/// `1` interactive, `0` headless), else `CLAUDE_CODE_ENTRYPOINT` (`cli` interactive, `sdk-*`
/// headless; it is inherited, so it is only the second word). Anything else counts as attended,
/// because waiting on a person's turn end is the worse mistake.
pub fn from_env() -> Mode {
    let (attended, entrypoint) = a2a_mod_os::env::session_mode_vars();
    from_vars(attended.as_deref(), entrypoint.as_deref())
}

pub fn from_vars(attended: Option<&str>, entrypoint: Option<&str>) -> Mode {
    match attended.map(str::trim) {
        Some("1") | Some("true") => return Mode::Attended,
        Some("0") | Some("false") => return Mode::Headless,
        _ => {}
    }
    match entrypoint {
        Some(e) if e.starts_with("sdk") => Mode::Headless,
        _ => Mode::Attended,
    }
}

fn path(ctx: &Ctx, session: &str) -> PathBuf {
    ctx.sessions_dir().join(format!("{session}.mode"))
}

/// Written by the SessionStart hook for the session's store owner (and the new id after `/clear`).
pub fn record(ctx: &Ctx, session: &str, mode: Mode) {
    let p = path(ctx, session);
    if std::fs::read_to_string(&p)
        .ok()
        .as_deref()
        .and_then(Mode::parse)
        == Some(mode)
    {
        return;
    }
    let _ = a2a_mod_os::fsx::write_atomic_unsynced(&p, format!("{}\n", mode.as_str()).as_bytes());
}

/// What the SessionStart hook recorded for `session` (the MCP server's way to know), if anything.
pub fn recorded(ctx: &Ctx, session: &str) -> Option<Mode> {
    std::fs::read_to_string(path(ctx, session))
        .ok()
        .as_deref()
        .and_then(Mode::parse)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attended_first_then_entrypoint() {
        assert_eq!(from_vars(Some("1"), Some("sdk-cli")), Mode::Attended);
        assert_eq!(from_vars(Some("0"), Some("cli")), Mode::Headless);
        assert_eq!(from_vars(None, Some("sdk-cli")), Mode::Headless);
        assert_eq!(from_vars(None, Some("sdk-ts")), Mode::Headless);
        assert_eq!(from_vars(None, Some("sdk-py")), Mode::Headless);
        assert_eq!(from_vars(None, Some("cli")), Mode::Attended);
        assert_eq!(from_vars(None, None), Mode::Attended);
        assert_eq!(from_vars(Some(""), None), Mode::Attended);
    }
}
