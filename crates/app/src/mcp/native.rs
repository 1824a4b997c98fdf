//! Claude Code's own MCP tasks (`[claude] native_tasks`, docs/claude-code.md "Native MCP tasks"):
//! a `send` that outlives its inline window is answered with an MCP task, which Claude Code shows
//! in its task panel and polls with `tasks/get`, waking Claude itself when it ends. Every answer
//! comes from the session's store, which the poller keeps up to date as ever; nothing here asks
//! the worker, but for `tasks/cancel`.
//!
//! The MCP task's id is `a2a-<seq>-<made>`: the task's row in the store and when the MCP task was
//! made (`Life::native_ms`), so a follow-up send on the same A2A task, which makes a new MCP task,
//! never answers for the old one. Its end is announced by Claude Code alone (the store marks it
//! announced as it ends, [`core::lifecycle`](a2a_mod_core::lifecycle)); the hidden context still
//! carries the worker's output once, through the hooks, like any other result.

use a2a_mod_core::clock::rfc3339;
use a2a_mod_core::fence;
use a2a_mod_core::task::TaskState;
use a2a_mod_store::TaskRecord;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, ElicitRequest,
    ElicitRequestParams, InputRequest, JsonObject, MetaObject, Task, TaskPayload, TaskStatus,
};

/// How often Claude Code polls an MCP task of ours. Each poll is one SQLite read in this process,
/// and Claude Code wakes Claude 0.2–0.4 s after the poll that sees the end, so a short interval
/// keeps the wake close to the end.
const POLL_INTERVAL_MS: u64 = 500;

/// How long Claude Code may keep asking: a day, far past any tracked task's life in a session.
const TTL_MS: u64 = 24 * 3600 * 1000;

/// The MCP task id for a task made native at `made_ms`.
pub(super) fn task_id(seq: i64, made_ms: i64) -> String {
    format!("a2a-{seq}-{made_ms}")
}

/// The store row and the time of making an MCP task id names; `None` for one we never made.
pub(super) fn parse(id: &str) -> Option<(i64, i64)> {
    let (seq, made) = id.strip_prefix("a2a-")?.split_once('-')?;
    Some((seq.parse().ok()?, made.parse().ok()?))
}

/// Whether `t` is the task the MCP task `made_ms` was made for, and still follows it.
pub(super) fn is_for(t: &TaskRecord, made_ms: i64) -> bool {
    t.native_ms == Some(made_ms)
}

/// The answer to the `send` call: the MCP task, with the send's own note for the model.
pub(super) fn created(t: &TaskRecord, made_ms: i64, note: &str) -> CreateTaskResult {
    let mut meta = MetaObject::new();
    // Shown to the model beside Claude Code's placeholder: the taskId and what to do meanwhile.
    meta.insert(
        "com.anthropic/agent-task".into(),
        serde_json::json!({ "modelImmediateResponse": note }),
    );
    CreateTaskResult::new(base(t, made_ms, TaskStatus::Working)).with_meta(meta)
}

/// What a waiting task's MCP task asks the person (`approve.rs`).
pub(super) enum Asking {
    /// The form, shown to the person; answered with `tasks/update`.
    Form(Box<ElicitRequestParams>),
    /// The person closed the form: the MCP task ends with these words for Claude.
    Dismissed(String),
}

/// The key of a waiting task's form in `inputRequests`: one per question, so an answer to an
/// earlier one is never read as this one's.
pub(super) fn form_key(t: &TaskRecord) -> String {
    format!("approve-{}", t.updated_ms)
}

/// The answer to `tasks/get`, from the row as the poller left it.
pub(super) fn detailed(t: &TaskRecord, made_ms: i64, asking: Option<Asking>) -> DetailedTask {
    if t.is_live() {
        return DetailedTask::new(base(t, made_ms, TaskStatus::Working), TaskPayload::Working);
    }
    let payload = match (t.state, asking) {
        (_, Some(Asking::Form(form))) => TaskPayload::InputRequired {
            input_requests: [(
                form_key(t),
                InputRequest::Elicitation(ElicitRequest::new(*form)),
            )]
            .into(),
        },
        (_, Some(Asking::Dismissed(text))) => TaskPayload::Completed {
            result: text_result(text),
        },
        (state, None) => match state {
            // Stopped in Claude Code's task panel (or by the cancel tool): as Claude Code asked.
            TaskState::Canceled => TaskPayload::Cancelled,
            _ => TaskPayload::Completed { result: result(t) },
        },
    };
    let status = payload.status();
    DetailedTask::new(base(t, made_ms, status), payload)
}

fn base(t: &TaskRecord, made_ms: i64, status: TaskStatus) -> Task {
    let message = format!(
        "{} {}",
        fence::shown(&t.worker),
        a2a_mod_core::text::one_line(&t.state.to_string(), 40)
    );
    Task::new(
        task_id(t.seq, made_ms),
        status,
        rfc3339(made_ms),
        rfc3339(t.updated_ms),
    )
    .with_status_message(message)
    .with_ttl_ms(TTL_MS)
    .with_poll_interval_ms(POLL_INTERVAL_MS)
}

/// What Claude reads in Claude Code's notification: the wake line a waiter would print; for a
/// task that waits for an answer, also the question and how to answer it (never Claude Code's
/// own input request, which would go to the user's screen). The worker's output comes once, as
/// the hidden context.
fn result(t: &TaskRecord) -> JsonObject {
    let mut text = a2a_mod_claude::wake::line(std::slice::from_ref(t));
    if t.state.is_waiting() {
        text.push('\n');
        text.push_str(&fence::note(&a2a_mod_results::note::facts(t)));
    }
    text_result(text)
}

fn text_result(text: String) -> JsonObject {
    let r = CallToolResult::success(vec![ContentBlock::text(text)]);
    match serde_json::to_value(r) {
        Ok(serde_json::Value::Object(o)) => o,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_name_the_row_and_the_making() {
        assert_eq!(
            parse(&task_id(7, 1_700_000_000_123)),
            Some((7, 1_700_000_000_123))
        );
        for other in ["", "a2a-", "a2a-7", "a2a-x-1", "b2b-7-1", "a2a-7-1-2"] {
            assert_eq!(parse(other), None, "{other}");
        }
    }
}
