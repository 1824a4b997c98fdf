//! What the client hands back: a task as a worker told it ([`TaskView`]), an agent card as it is
//! printed ([`CardSummary`]), and a poll's answer as the schedule reads it ([`poll_outcome`]).

use crate::error::{A2aError, overload_word};
use crate::spill::Spills;
use a2a_mod_core::task::TaskState;
use serde::Serialize;

/// What a send, GetTask or CancelTask tells about a task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskView {
    pub task_id: String,
    pub context_id: Option<String>,
    pub state: TaskState,
    /// The state exactly as the worker spelled it (kept for `unknown`).
    pub wire_state: String,
    /// Result text: artifacts' text parts, then the status message; file and data parts summarised.
    pub text: Option<String>,
    /// For input-required / auth-required: what the worker asks.
    pub question: Option<String>,
    /// Every artifact, parts and all, saved by `crate::artifacts` once the task ends
    /// or waits. Not serialised: file bytes are for the results folder, not for printing.
    #[serde(skip)]
    pub artifacts: Vec<a2a_mod_core::artifact::Artifact>,
    /// The bytes of file parts too large to keep in memory (`Part::Spilled` names them).
    #[serde(skip)]
    pub spills: Spills,
}

/// The parts of an agent card that `worker show`, the `workers` tool and `doctor` print. Every
/// text in it is already one clean line (`Card::summary`), safe to print as it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CardSummary {
    pub name: String,
    pub description: String,
    pub skills: Vec<SkillSummary>,
    /// e.g. "1.0 JSONRPC http://…/a2a" or "0.3 JSONRPC http://…/"
    pub protocol: String,
    /// e.g. ["bearer", "apiKey header X-API-Key", "oauth2 client credentials https://…/token"]
    pub auth: Vec<String>,
    /// The A2A extensions the card offers (`capabilities.extensions`), e.g.
    /// ["https://…/ext/v1 (required)"].
    pub extensions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkillSummary {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The media types the skill takes (its `inputModes`, else the card's `defaultInputModes`).
    pub input_modes: Vec<String>,
    /// The media types it answers with (`outputModes`, else `defaultOutputModes`).
    pub output_modes: Vec<String>,
}

/// What one GetTask told, as the poll schedule (`core::schedule::after_poll`) reads it; shared by
/// the inline window and the background poller.
pub fn poll_outcome(r: &Result<TaskView, A2aError>) -> a2a_mod_core::schedule::PollOutcome {
    use a2a_mod_core::schedule::PollOutcome;
    match r {
        Ok(v) => PollOutcome::Seen {
            state: v.state,
            wire_state: v.wire_state.clone(),
            text: v.text.clone(),
            question: v.question.clone(),
            context_id: v.context_id.clone(),
        },
        Err(A2aError::TaskNotFound) => PollOutcome::NotFound,
        Err(A2aError::Overloaded {
            status,
            retry_after: Some(after),
        }) => {
            let after = (*after).min(a2a_mod_core::schedule::MAX_RETRY_AFTER);
            PollOutcome::Deferred {
                error: format!(
                    "the worker is {} (HTTP {status}), retrying in {} s",
                    overload_word(*status),
                    after.as_secs().max(1)
                ),
                after,
            }
        }
        Err(e) => PollOutcome::Failed {
            error: e.to_string(),
        },
    }
}
