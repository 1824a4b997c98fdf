//! Waking Claude, the IO side: claims ended tasks from the store (exactly once, in one
//! transaction) and turns them into the wake line (`core::wake::wake_line`) and the hidden context
//! (`core::wake::context`). Shared by the monitor (`watch`), the hooks and the demo.

use crate::core::fence;
use crate::core::fence::TaskFacts;
use crate::core::{bounds, wake};
use crate::env::Ctx;
use crate::state::TaskRecord;
use anyhow::Result;

/// Longest worker text per task in the hidden context; the whole of a longer one is saved to a
/// file and the context says where.
pub const MAX_CONTEXT_CHARS: usize = bounds::CONTEXT_TEXT_CHARS;

pub fn facts(t: &TaskRecord) -> TaskFacts<'_> {
    TaskFacts {
        worker: &t.worker,
        task_id: &t.task_id,
        state: t.state,
        end: t.end_reason(),
        text: t.result.as_deref(),
        question: t.question.as_deref(),
        last_error: t.last_error.as_deref(),
        failed_checks: t.failed_polls,
    }
}

/// The line for a batch of tasks that ended.
pub fn line(batch: &[TaskRecord]) -> String {
    let items: Vec<TaskFacts<'_>> = batch.iter().map(facts).collect();
    wake::wake_line(&items)
}

/// The hidden context for tasks Claude has not been given yet, within Claude Code's hook output
/// cap however many ended ([`bounds::HOOK_CONTEXT_CHARS`]): each task gets an equal share, its
/// result and question cut to fit (the whole saved under the state folder, the note says where),
/// and notes that still do not fit are counted at the end, pointing to the tasks tool.
pub fn context(ctx: &Ctx, session: &str, batch: &[TaskRecord]) -> String {
    if batch.is_empty() {
        return String::new();
    }
    let share = wake::note_share(batch.len());
    let notes: Vec<String> = batch
        .iter()
        .map(|t| {
            // Worker text in JSON may take up to two units a character (escapes, astral
            // characters): start from half the share, and shrink once more if still too long.
            let mut allow = MAX_CONTEXT_CHARS.min(share / 2);
            loop {
                let n = note_within(ctx, session, t, allow);
                let len = wake::json_len(&n);
                if len <= share || allow == 0 {
                    return n;
                }
                allow = (allow * share / len).min(allow - 1);
            }
        })
        .collect();
    wake::context(&notes)
}

/// One task's note with its worker text (result and question) cut to `allow` characters each.
fn note_within(ctx: &Ctx, session: &str, t: &TaskRecord, allow: usize) -> String {
    let mut e = facts(t);
    let mut extra = String::new();
    let task = (t.worker.as_str(), t.task_id.as_str());
    let whole = || {
        format!(
            "call the task tool with taskId \"{}\" for the whole of it",
            fence::shown(&t.task_id)
        )
    };
    if let Some(text) = t.result.as_deref() {
        let (kept, more) =
            bound_result(ctx, session, task, Saved::Result, text, allow, |_| whole());
        e.text = Some(kept);
        extra.push_str(&more);
    }
    if let Some(q) = t.question.as_deref() {
        let (kept, more) = bound_result(ctx, session, task, Saved::Question, q, allow, |_| whole());
        e.question = Some(kept);
        extra.push_str(&more);
    }
    fence::note(&e) + &extra
}

/// Which of a task's worker texts a saved file holds.
#[derive(Debug, Clone, Copy)]
pub enum Saved {
    Result,
    Question,
}

/// `text` cut to `max` chars for Claude, and what to append when it was cut: where the whole
/// is saved, or (when it cannot be) `otherwise`'s words. Nothing to append when it fits.
pub fn bound_result<'a>(
    ctx: &Ctx,
    session: &str,
    (worker, task_id): (&str, &str),
    kind: Saved,
    text: &'a str,
    max: usize,
    otherwise: impl FnOnce(anyhow::Error) -> String,
) -> (&'a str, String) {
    let (kept, cut) = fence::bound(text, max);
    if cut == 0 {
        return (kept, String::new());
    }
    let what = match kind {
        Saved::Result => "result",
        Saved::Question => "question",
    };
    let where_ = match save_full_result(ctx, session, worker, task_id, kind, text) {
        Ok(p) => format!(
            "the whole {what} is in \"{}\" (read it with the Read tool)",
            p.display()
        ),
        Err(e) => otherwise(e),
    };
    (
        kept,
        format!("\n[{cut} more characters of the {what} not shown; {where_}]"),
    )
}

/// Saves a whole result that was too long to show, under `state/results/<session>/`.
pub fn save_full_result(
    ctx: &Ctx,
    session: &str,
    worker: &str,
    task_id: &str,
    kind: Saved,
    text: &str,
) -> Result<std::path::PathBuf> {
    let safe: String = format!("{worker}-{task_id}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    let path = ctx
        .state_dir
        .join("results")
        .join(session)
        .join(match kind {
            Saved::Result => format!("{safe}.txt"),
            Saved::Question => format!("{safe}-question.txt"),
        });
    crate::fsx::write_atomic(&path, fence::clean_multiline(text).as_bytes(), Some(0o600))?;
    Ok(path)
}
