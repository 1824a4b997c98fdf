//! What Claude reads about one task, wherever it reads it: a tool result (`send`, `task`,
//! `cancel`), the hidden context of a hook, the `tasks` listing. The words are the core's
//! ([`core::fence::note`](a2a_mod_core::fence::note)); this is the one place that bounds the
//! worker's text for them and says where the rest is.

use crate::overflow::{Saved, bound_result};
use a2a_mod_core::fence::{self, TaskFacts};
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_os::env::Ctx;
use a2a_mod_store::TaskRecord;

/// A stored task as the note rules read it.
pub fn facts(t: &TaskRecord) -> TaskFacts<'_> {
    TaskFacts {
        worker: &t.worker,
        task_id: &t.task_id,
        state: t.state,
        end: t.end_reason,
        text: t.result.as_deref(),
        question: t.question.as_deref(),
        last_error: t.last_error.as_deref(),
        failed_checks: t.failed_polls,
    }
}

/// A stored task's result whole: the row's, or the file it was saved in when the row holds
/// its head (`TaskRecord::result_chars`); the head if that file is gone (pruned).
pub fn whole_result(ctx: &Ctx, session: &str, t: &TaskRecord) -> Option<String> {
    if t.result_chars.is_none() {
        return t.result.clone();
    }
    let path = super::overflow::saved_path(ctx, session, &t.key(), Saved::Result);
    std::fs::read_to_string(path)
        .ok()
        .or_else(|| t.result.clone())
}

/// What a note says of worker text longer than it shows.
pub enum Whole<'a> {
    /// Saved whole under the state folder, the note saying where; when it cannot be saved,
    /// `otherwise` words what to do instead.
    Saved {
        otherwise: &'a dyn Fn(anyhow::Error) -> String,
    },
    /// Not saved: the note points to the `task` tool for the whole result (the listing's way).
    AtTheTaskTool,
}

/// [`note`] of a stored task, whose result may be the head of one saved whole.
pub fn of_record(
    ctx: &Ctx,
    session: &str,
    t: &TaskRecord,
    limit: usize,
    whole: Whole<'_>,
) -> String {
    note(ctx, session, (facts(t), t.result_chars), limit, whole)
}

/// One task's note, its result and question cut to `limit` characters each. `saved_chars`: the
/// result is the head of one saved whole, this many characters long
/// ([`for_row`](super::overflow::for_row)).
pub fn note(
    ctx: &Ctx,
    session: &str,
    (mut f, saved_chars): (TaskFacts<'_>, Option<u64>),
    limit: usize,
    whole: Whole<'_>,
) -> String {
    let (text, question) = (f.text, f.question);
    let mut extra = String::new();
    match whole {
        Whole::Saved { otherwise } => {
            let task = &TaskKey::new(f.worker, f.task_id);
            if let Some(text) = text {
                let text = (text, saved_chars);
                let (kept, more) =
                    bound_result(ctx, session, task, Saved::Result, text, limit, otherwise);
                f.text = Some(kept);
                extra.push_str(&more);
            }
            if let Some(q) = question {
                let q = (q, None);
                let (kept, more) =
                    bound_result(ctx, session, task, Saved::Question, q, limit, otherwise);
                f.question = Some(kept);
                extra.push_str(&more);
            }
        }
        Whole::AtTheTaskTool => {
            if let Some(text) = text {
                let (kept, cut) = fence::bound(text, limit);
                let cut = super::overflow::more_chars(kept, cut, saved_chars);
                f.text = Some(kept);
                if cut > 0 {
                    extra = format!(
                        "\n[{cut} more characters: the task tool with taskId \"{}\" gives the whole result]",
                        f.task_id
                    );
                }
            }
            // A question is the worker's text too: as bounded as the result.
            f.question = question.map(|q| fence::bound(q, limit).0);
        }
    }
    fence::note(&f) + &extra
}
