//! Waking Claude, the IO side: claims ended tasks from the store (exactly once, in one
//! transaction) and turns them into the wake line (`core::wake::wake_line`) and the hidden context
//! (`core::wake::context`). Shared by the monitor (`watch`), the hooks and the demo.

use crate::core::fence;
use crate::core::fence::TaskFacts;
use crate::core::wake;
use crate::env::Ctx;
use crate::state::TaskRecord;
use anyhow::Result;

/// Longest worker text per task in the hidden context; the whole of a longer one is saved to a
/// file and the context says where.
pub const MAX_CONTEXT_CHARS: usize = 4_000;

pub fn facts(t: &TaskRecord) -> TaskFacts<'_> {
    TaskFacts {
        worker: &t.worker,
        task_id: &t.task_id,
        state: t.state,
        end: t.end_reason(),
        text: t.result.as_deref(),
        question: t.question.as_deref(),
        last_error: t.last_error.as_deref(),
    }
}

/// The line for a batch of tasks that ended.
pub fn line(batch: &[TaskRecord]) -> String {
    let items: Vec<TaskFacts<'_>> = batch.iter().map(facts).collect();
    wake::wake_line(&items)
}

/// The hidden context for tasks Claude has not been given yet; long results bounded, the whole
/// saved under the state folder.
pub fn context(ctx: &Ctx, session: &str, batch: &[TaskRecord], max_failed_polls: u32) -> String {
    let notes: Vec<String> = batch
        .iter()
        .map(|t| {
            let mut e = facts(t);
            let mut extra = String::new();
            if let Some(text) = t.result.as_deref() {
                let task = (t.worker.as_str(), t.task_id.as_str());
                let (kept, more) =
                    bound_result(ctx, session, task, text, MAX_CONTEXT_CHARS, |_| {
                        format!(
                            "call the task tool with taskId \"{}\" for the whole result",
                            t.task_id
                        )
                    });
                e.text = Some(kept);
                extra = more;
            }
            fence::note(&e, max_failed_polls) + &extra
        })
        .collect();
    wake::context(&notes)
}

/// `text` cut to `max` chars for Claude, and what to append when it was cut: where the whole
/// is saved, or (when it cannot be) `otherwise`'s words. Nothing to append when it fits.
pub fn bound_result<'a>(
    ctx: &Ctx,
    session: &str,
    (worker, task_id): (&str, &str),
    text: &'a str,
    max: usize,
    otherwise: impl FnOnce(anyhow::Error) -> String,
) -> (&'a str, String) {
    let (kept, cut) = fence::bound(text, max);
    if cut == 0 {
        return (kept, String::new());
    }
    let where_ = match save_full_result(ctx, session, worker, task_id, text) {
        Ok(p) => format!(
            "the whole result is in \"{}\" (read it with the Read tool)",
            p.display()
        ),
        Err(e) => otherwise(e),
    };
    (
        kept,
        format!("\n[{cut} more characters not shown; {where_}]"),
    )
}

/// Saves a whole result that was too long to show, under `state/results/<session>/`.
pub fn save_full_result(
    ctx: &Ctx,
    session: &str,
    worker: &str,
    task_id: &str,
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
        .join(format!("{safe}.txt"));
    crate::fsx::write_atomic(&path, fence::clean_multiline(text).as_bytes(), Some(0o600))?;
    Ok(path)
}
