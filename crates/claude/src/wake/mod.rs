//! Waking Claude, the IO side: turns the ended tasks its callers claimed from the store (exactly
//! once, in one transaction) into the wake line
//! ([`core::wake::wake_line`](a2a_mod_core::wake::wake_line)) and the hidden context
//! ([`core::wake::context`](a2a_mod_core::wake::context)). Shared by the monitor (`watch`), the
//! hooks and the demo. Worker text too long for the context is cut and saved by `overflow.rs`, as
//! in tool results; the artifacts saved when the task ended (`artifacts.rs`) are listed with their
//! paths.

pub mod waiter;
pub mod watch;

use a2a_mod_core::fence;
use a2a_mod_core::fence::TaskFacts;
use a2a_mod_core::{bounds, wake};
use a2a_mod_os::env::Ctx;
use a2a_mod_results::note;
use a2a_mod_store::TaskRecord;

/// Longest worker text per task in the hidden context; the whole of a longer one is saved to a
/// file and the context says where.
pub const MAX_CONTEXT_CHARS: usize = bounds::CONTEXT_TEXT_CHARS;

/// The line for a batch of tasks that ended.
pub fn line(batch: &[TaskRecord]) -> String {
    let items: Vec<TaskFacts<'_>> = batch.iter().map(note::facts).collect();
    wake::wake_line(&items)
}

/// The hidden context for tasks Claude has not been given yet, within Claude Code's hook output
/// cap however many ended ([`bounds::HOOK_CONTEXT_CHARS`]): each task gets an equal share, its
/// result and question cut to fit (the whole saved under the state folder, the note says where),
/// and notes that still do not fit are counted at the end, pointing to the tasks tool.
/// `held_back`: how many more ended tasks wait for a later hook (`core::wake::context`).
pub fn context(ctx: &Ctx, session: &str, batch: &[TaskRecord], held_back: usize) -> String {
    if batch.is_empty() {
        return String::new();
    }
    let share = wake::note_share(batch.len());
    let notes: Vec<String> = batch
        .iter()
        .map(|t| {
            // What the worker made: a short list with paths, its own part of the share, so many
            // artifacts never push the note (or the context) past the cap.
            let kept = a2a_mod_results::artifacts::load(ctx, session, &t.worker, &t.task_id);
            let listed = a2a_mod_results::artifacts::summary(
                ctx,
                session,
                &t.key(),
                &kept,
                bounds::CONTEXT_ARTIFACT_CHARS.min(share / 2),
            );
            let rest = share.saturating_sub(wake::json_len(&listed));
            // Worker text in JSON may take up to two units a character (escapes, astral
            // characters): start from half the share, and shrink once more if still too long.
            let mut allow = MAX_CONTEXT_CHARS.min(rest / 2);
            loop {
                let n = note_within(ctx, session, t, allow) + &listed;
                let len = wake::json_len(&n);
                if len <= share || allow == 0 {
                    return n;
                }
                allow = (allow * share / len).min(allow - 1);
            }
        })
        .collect();
    wake::context(&notes, held_back)
}

/// One task's note with its worker text (result and question) cut to `allow` characters each.
fn note_within(ctx: &Ctx, session: &str, t: &TaskRecord, allow: usize) -> String {
    let whole = |_| {
        format!(
            "call the task tool with taskId \"{}\" for the whole of it",
            fence::shown(&t.task_id)
        )
    };
    let whole = note::Whole::Saved { otherwise: &whole };
    note::of_record(ctx, session, t, allow, whole)
}
