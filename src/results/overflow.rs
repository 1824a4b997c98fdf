//! Worker text longer than Claude may be shown, in a tool result (`ops`) or the hidden context
//! (`wake`): the part kept, and the whole saved under `state/results/<session>/` for the Read
//! tool, with the note that says where (or why it could not be saved). The folder is
//! `artifacts.rs`'s, the one home of files saved from workers' answers.

use a2a_mod_core::fence;
use a2a_mod_sys::env::Ctx;
use anyhow::Result;

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
    let path = crate::results::artifacts::ready_session_dir(ctx, session)?.join(match kind {
        Saved::Result => format!("{safe}.txt"),
        Saved::Question => format!("{safe}-question.txt"),
    });
    a2a_mod_sys::fsx::write_atomic(&path, fence::clean_multiline(text).as_bytes(), Some(0o600))?;
    Ok(path)
}
