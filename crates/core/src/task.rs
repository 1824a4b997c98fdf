//! Task states as a2a-mod sees them, whatever the worker's protocol version.
//!
//! Pure: no IO. The A2A client maps wire spellings here; the store, the status line and the wake-up
//! read only this enum. The seed's rule (docs/how-it-works.md): a task is *live* while the worker reports
//! submitted or working; any other state, an unrecognised one included, ends tracking.

use serde::{Deserialize, Serialize};

/// The A2A extension of a2a-mod serve's questions: a data part beside the question's line that
/// says what is asked, structured (docs/serve.md "What a question carries"). Declared by serve;
/// the client shows the line and leaves the part to readers that know it.
pub const TOOL_CONFIRMATION_EXTENSION: &str = "urn:a2a-mod:ext:tool-confirmation:v1";

/// Also the `state` enum of the tools' output schema (the same spelling, whatever the protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    Submitted,
    Working,
    Completed,
    Failed,
    Canceled,
    Rejected,
    InputRequired,
    AuthRequired,
    Unknown,
}

impl TaskState {
    pub const ALL: [TaskState; 9] = [
        TaskState::Submitted,
        TaskState::Working,
        TaskState::Completed,
        TaskState::Failed,
        TaskState::Canceled,
        TaskState::Rejected,
        TaskState::InputRequired,
        TaskState::AuthRequired,
        TaskState::Unknown,
    ];

    /// Reads every spelling seen on the wire: v0.3 JSON-RPC (`input-required`), v1 and REST
    /// proto-JSON (`TASK_STATE_INPUT_REQUIRED`, `TASK_STATE_CANCELLED`). Anything else is `Unknown`,
    /// never an error: an unrecognised state ends tracking instead of failing the poll.
    pub fn from_wire(s: &str) -> TaskState {
        let s = s.trim();
        let s = s.strip_prefix("TASK_STATE_").unwrap_or(s);
        match s.to_ascii_lowercase().replace('_', "-").as_str() {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" | "cancelled" => TaskState::Canceled,
            "rejected" => TaskState::Rejected,
            "input-required" => TaskState::InputRequired,
            "auth-required" => TaskState::AuthRequired,
            _ => TaskState::Unknown,
        }
    }

    /// The spelling of docs/commands-and-tools.md, used in structured results, the store and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::Completed => "completed",
            TaskState::Failed => "failed",
            TaskState::Canceled => "canceled",
            TaskState::Rejected => "rejected",
            TaskState::InputRequired => "input-required",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }

    /// Parses our own spelling (the store's); anything else is `Unknown`.
    pub fn parse(s: &str) -> TaskState {
        TaskState::from_wire(s)
    }

    /// Live = the background poller keeps polling it.
    pub fn is_live(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }

    /// The worker waits for something from Claude or the user.
    pub fn is_waiting(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// The A2A terminal states: nothing more can happen to the task.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a task stopped being tracked, beyond the worker's own state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EndReason {
    /// The worker reported a state other than submitted/working.
    State,
    /// `max_failed_polls` polls in a row failed.
    Lost,
    /// The worker was removed from config while the task was live.
    Removed,
    /// The worker answered that it does not know the task (JSON-RPC -32001, HTTP 404): it
    /// restarted, expired the task, or never had it. Nothing more will come of polling.
    Gone,
    /// Claude answered the task's question (a follow-up with its taskId), and the worker took
    /// the answer up on a new task (it ignores `taskId`): the work goes on there, so this one
    /// no longer waits.
    Moved,
}

impl EndReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::State => "state",
            EndReason::Lost => "lost",
            EndReason::Removed => "removed",
            EndReason::Gone => "gone",
            EndReason::Moved => "moved",
        }
    }
    pub fn parse(s: &str) -> Option<EndReason> {
        match s {
            "state" => Some(EndReason::State),
            "lost" => Some(EndReason::Lost),
            "removed" => Some(EndReason::Removed),
            "gone" => Some(EndReason::Gone),
            "moved" => Some(EndReason::Moved),
            _ => None,
        }
    }
}

/// The exact lost-contact message of docs/commands-and-tools.md.
pub fn lost_contact_message(alias: &str, task_id: &str, max_failed_polls: u32) -> String {
    format!(
        "{alias} task {task_id}: lost contact with the worker after {max_failed_polls} failed checks. Use the task tool to try again."
    )
}

/// What Claude is told when the worker no longer knows a task it was polled about.
pub fn gone_message(alias: &str, task_id: &str) -> String {
    format!(
        "{alias} task {task_id}: the worker no longer knows this task (it may have restarted); it is no longer tracked. Send the work again if it is still needed."
    )
}

/// What Claude is told when a worker is removed while its task was live.
pub fn removed_message(alias: &str, task_id: &str) -> String {
    format!(
        "{alias} task {task_id}: no longer tracked because worker \"{alias}\" was removed. Add the worker again and use the task tool to check it."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_spellings() {
        for s in TaskState::ALL {
            assert_eq!(TaskState::from_wire(s.as_str()), s);
        }
        assert_eq!(
            TaskState::from_wire("TASK_STATE_INPUT_REQUIRED"),
            TaskState::InputRequired
        );
        assert_eq!(
            TaskState::from_wire("TASK_STATE_CANCELLED"),
            TaskState::Canceled
        );
        assert_eq!(
            TaskState::from_wire("TASK_STATE_CANCELED"),
            TaskState::Canceled
        );
        assert_eq!(
            TaskState::from_wire("TASK_STATE_UNSPECIFIED"),
            TaskState::Unknown
        );
        assert_eq!(TaskState::from_wire("paused"), TaskState::Unknown);
        assert_eq!(TaskState::from_wire(""), TaskState::Unknown);
    }

    #[test]
    fn only_submitted_and_working_are_live() {
        let live: Vec<_> = TaskState::ALL.iter().filter(|s| s.is_live()).collect();
        assert_eq!(live, [&TaskState::Submitted, &TaskState::Working]);
    }
}

/// What one poll (or an inline GetTask) changes about a tracked task; computed by
/// `crate::schedule`, folded into the task by `super::lifecycle`.
#[derive(Debug, Clone, PartialEq)]
pub struct PollUpdate {
    pub state: TaskState,
    pub text: Option<String>,
    /// Set when `text` is the head of a longer result, saved whole in a file before this
    /// update was handed to the store ([`crate::bounds::row_keeps`]): the whole's length.
    pub text_chars: Option<u64>,
    pub question: Option<String>,
    pub context_id: Option<String>,
    pub failed_polls: u32,
    pub last_error: Option<String>,
    /// `Some` ends tracking now.
    pub end: Option<EndReason>,
    pub next_poll_ms: Option<i64>,
    /// A hold this answer puts on the task (`lifecycle::Life::held_until_ms`): a deferral's.
    pub held_until_ms: Option<i64>,
}

/// A fresh look at a task outside the poller (the `task` tool, `cancel`): what the store records
/// of it. The A2A layer's view converts to this, so the store never depends on the A2A client.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen<'a> {
    pub task_id: &'a str,
    pub state: TaskState,
    /// Result text, when the worker gave one (a look without it keeps the stored result).
    pub text: Option<&'a str>,
    /// As [`PollUpdate::text_chars`].
    pub text_chars: Option<u64>,
    pub question: Option<&'a str>,
}
