//! How a task stands and, once it ended, how it ended, as every surface names it: the wake line's
//! word and symbol, the status line's word, style and clock, the `tasks` list's status. One table
//! ([`of`]), so the monitor, the status line, the tools and the store can never disagree. Pure.

use super::task::{EndReason, TaskState};
use super::theme::Role;

/// Where a task stands: what the `tasks` list counts and the status line sorts by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// The poller owns it (submitted or working).
    Running,
    /// It ended waiting for Claude or the user (input-required, auth-required).
    Waiting,
    /// Any other end: a terminal state, an unknown one, lost contact, removed, gone.
    Ended,
}

/// Everything a surface says about one task's standing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    pub standing: Standing,
    /// The wake line's and `a2a-mod tasks`' word: `completed`, `lost contact`, `gone`, …
    pub word: &'static str,
    /// The wake line's symbol (docs/commands-and-tools.md): ✓ completed, ✕ failed/rejected/lost, ⊘ canceled,
    /// ? input-required/auth-required/unknown.
    pub symbol: &'static str,
    /// The `tasks` tool's status: `running`, `waiting for input`, `ended`, `lost contact`, …
    pub status: &'static str,
    /// The status line's word for an ended task (`done`, `failed`, …), its style, and whether
    /// the task's duration follows it.
    pub line_word: &'static str,
    pub role: Role,
    pub timed: bool,
}

/// The table. `live`: the poller still owns the task (its row has no end time).
pub fn of(state: TaskState, end: Option<EndReason>, live: bool) -> Ending {
    let standing = match end {
        _ if live => Standing::Running,
        Some(EndReason::Lost | EndReason::Removed | EndReason::Gone | EndReason::Moved) => {
            Standing::Ended
        }
        _ if state.is_waiting() => Standing::Waiting,
        _ => Standing::Ended,
    };
    let status = match standing {
        Standing::Running => "running",
        Standing::Waiting => "waiting for input",
        Standing::Ended => "ended",
    };
    let e = |word, symbol, status, line_word, role, timed| Ending {
        standing,
        word,
        symbol,
        status,
        line_word,
        role,
        timed,
    };
    match end {
        Some(EndReason::Lost) if !live => e(
            "lost contact",
            "✕",
            "lost contact",
            "lost contact",
            Role::Failed,
            true,
        ),
        Some(EndReason::Removed) if !live => e(
            "no longer tracked",
            "⊘",
            "no longer tracked",
            "no longer tracked",
            Role::Canceled,
            false,
        ),
        Some(EndReason::Gone) if !live => e("gone", "✕", "gone", "gone", Role::Failed, true),
        Some(EndReason::Moved) if !live => e(
            "answered on another task",
            "✓",
            "answered on another task",
            "answered",
            Role::Done,
            false,
        ),
        _ => {
            let (symbol, line_word, role) = match state {
                TaskState::Completed => ("✓", "done", Role::Done),
                TaskState::Failed => ("✕", "failed", Role::Failed),
                TaskState::Rejected => ("✕", "rejected", Role::Failed),
                TaskState::Canceled => ("⊘", "canceled", Role::Canceled),
                _ => ("?", "ended", Role::Waiting),
            };
            e(state.as_str(), symbol, status, line_word, role, true)
        }
    }
}

/// The waiting states as an SQL list (`'input-required', 'auth-required'`), for queries that
/// must agree with [`Standing::Waiting`] (with [`ENDED_BY_STATE_SQL`]: a waiting task whose
/// answer moved to another task waits no more).
pub fn waiting_states_sql() -> String {
    TaskState::ALL
        .iter()
        .filter(|s| s.is_waiting())
        .map(|s| format!("'{}'", s.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The SQL condition of a task that ended by its state (not lost, removed, gone or moved): only
/// such a task can be [`Standing::Waiting`].
pub const ENDED_BY_STATE_SQL: &str = "(end_reason IS NULL OR end_reason = 'state')";

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole table, as the seed and docs/commands-and-tools.md name each case.
    #[test]
    fn every_ending_named_once() {
        use EndReason::*;
        use TaskState::*;
        let cases = [
            (Working, None, true, Standing::Running, "working", "running"),
            (
                Completed,
                Some(State),
                false,
                Standing::Ended,
                "completed",
                "ended",
            ),
            (
                Failed,
                Some(State),
                false,
                Standing::Ended,
                "failed",
                "ended",
            ),
            (
                InputRequired,
                Some(State),
                false,
                Standing::Waiting,
                "input-required",
                "waiting for input",
            ),
            (
                Working,
                Some(Lost),
                false,
                Standing::Ended,
                "lost contact",
                "lost contact",
            ),
            (
                Working,
                Some(Removed),
                false,
                Standing::Ended,
                "no longer tracked",
                "no longer tracked",
            ),
            (Unknown, Some(Gone), false, Standing::Ended, "gone", "gone"),
            (
                InputRequired,
                Some(Moved),
                false,
                Standing::Ended,
                "answered on another task",
                "answered on another task",
            ),
        ];
        for (state, end, live, standing, word, status) in cases {
            let e = of(state, end, live);
            assert_eq!(
                (e.standing, e.word, e.status),
                (standing, word, status),
                "{state} {end:?}"
            );
        }
        let sym = |s, e| of(s, e, false).symbol;
        assert_eq!(sym(Completed, None), "✓");
        assert_eq!(sym(Rejected, None), "✕");
        assert_eq!(sym(Canceled, None), "⊘");
        assert_eq!(sym(AuthRequired, None), "?");
        assert_eq!(sym(Unknown, None), "?");
        assert_eq!(sym(Working, Some(Lost)), "✕");
        assert_eq!(sym(Working, Some(Removed)), "⊘");
        assert_eq!(waiting_states_sql(), "'input-required', 'auth-required'");
    }
}
