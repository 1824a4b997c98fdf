//! Worker text longer than a task's row keeps ([`for_row`], before the row is recorded) or than
//! Claude may be shown, in a tool result (the binary's session) or the hidden context (`wake`):
//! the part kept, and the whole saved under `state/results/<session>/` for the
//! Read tool, with the note that says where (or why it could not be saved). The folder is
//! `artifacts.rs`'s, the one home of files saved from workers' answers.

use a2a_mod_core::bounds::row_keeps;
use a2a_mod_core::fence;
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_core::task::PollUpdate;
use a2a_mod_os::env::Ctx;
use anyhow::Result;

/// Which of a task's worker texts a saved file holds.
#[derive(Debug, Clone, Copy)]
pub enum Saved {
    Result,
    Question,
}

/// `text` cut to `max` chars for Claude, and what to append when it was cut: where the whole
/// is saved, or (when it cannot be) `otherwise`'s words. Nothing to append when it fits.
/// `saved_chars`: `text` is the head of a result already saved whole ([`for_row`]), this many
/// characters long.
pub fn bound_result<'a>(
    ctx: &Ctx,
    session: &str,
    task: &TaskKey,
    kind: Saved,
    (text, saved_chars): (&'a str, Option<u64>),
    max: usize,
    otherwise: impl FnOnce(anyhow::Error) -> String,
) -> (&'a str, String) {
    let (kept, cut) = fence::bound(text, max);
    let cut = more_chars(kept, cut, saved_chars);
    if cut == 0 {
        return (kept, String::new());
    }
    let what = match kind {
        Saved::Result => "result",
        Saved::Question => "question",
    };
    let saved = match saved_chars {
        None => save_full_result(ctx, session, task, kind, text),
        Some(_) => {
            let path = saved_path(ctx, session, task, kind);
            if path.is_file() {
                Ok(path)
            } else {
                Err(anyhow::anyhow!("\"{}\" is gone", path.display()))
            }
        }
    };
    let where_ = match saved {
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

/// How many characters of a text are not in `kept`: the `cut` from its head, or, when the
/// head is all a row holds of a text `saved_chars` long, the rest of that.
pub fn more_chars(kept: &str, cut: usize, saved_chars: Option<u64>) -> u64 {
    match saved_chars {
        Some(total) => total.saturating_sub(kept.chars().count() as u64),
        None => cut as u64,
    }
}

/// Where the whole of a task's too-long text is saved.
pub fn saved_path(
    ctx: &Ctx,
    session: &str,
    TaskKey { worker, task_id }: &TaskKey,
    kind: Saved,
) -> std::path::PathBuf {
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
    crate::artifacts::session_dir(ctx, session).join(match kind {
        Saved::Result => format!("{safe}.txt"),
        Saved::Question => format!("{safe}-question.txt"),
    })
}

/// Saves a task's worker text whole under `state/results/<session>/`, where the notes point:
/// the one writer of these files, for the row's bound ([`for_row`]) and a note's
/// ([`bound_result`]).
pub fn save_full_result(
    ctx: &Ctx,
    session: &str,
    key: &TaskKey,
    kind: Saved,
    text: &str,
) -> Result<std::path::PathBuf> {
    crate::artifacts::ready_session_dir(ctx, session)?;
    let path = saved_path(ctx, session, key, kind);
    let clean = fence::clean_multiline(text);
    a2a_mod_os::fsx::write_atomic(&path, clean.as_bytes(), Some(0o600))?;
    Ok(path)
}

/// What a task's row is handed of a worker's result, decided before the row is recorded: a
/// result longer than a row keeps ([`row_keeps`]) is saved whole first, and the row gets its
/// head and the whole's length; when the file cannot be written, the row gets the whole (a
/// result is never lost; a note that cuts it then says why).
pub fn for_row<'a>(
    ctx: &Ctx,
    session: &str,
    key: &TaskKey,
    text: Option<&'a str>,
) -> (Option<&'a str>, Option<u64>) {
    let Some((whole, (head, chars))) = text.and_then(|t| Some((t, row_keeps(t)?))) else {
        return (text, None);
    };
    match save_full_result(ctx, session, key, Saved::Result, whole) {
        Ok(_) => (Some(head), Some(chars)),
        Err(e) => {
            tracing::warn!("{key}: the result stays whole in the store: {e:#}");
            (text, None)
        }
    }
}

/// [`for_row`] of a poll's or a stream's update, in place.
pub fn update_for_row(ctx: &Ctx, session: &str, key: &TaskKey, u: &mut PollUpdate) {
    if let (Some(head), Some(chars)) = for_row(ctx, session, key, u.text.as_deref()) {
        let len = head.len();
        if let Some(text) = &mut u.text {
            text.truncate(len);
        }
        u.text_chars = Some(chars);
    }
}
