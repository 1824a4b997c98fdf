//! Files in: the file parts of a task's message are written to the task's inbox inside the agent's
//! dir, `.a2a-inbox/<task id>/<n>-<label>`, under names serve chooses (the sender's file name only
//! as a cleaned label, [`wire::label`](crate::wire::label)), private to the user, and named to the
//! run at the end of its prompt. Nothing is written through a symlink: an inbox folder that is one
//! is refused.

use crate::wire::InFile;
use std::path::Path;

/// The inbox folder in an agent's dir.
pub const INBOX: &str = ".a2a-inbox";

/// Writes `files` to the task's inbox; returns what the prompt adds (empty for no files).
pub fn save(dir: &Path, task_id: &str, files: &[InFile]) -> anyhow::Result<String> {
    if files.is_empty() {
        return Ok(String::new());
    }
    let inbox = dir.join(INBOX);
    for d in [&inbox, &inbox.join(task_id)] {
        if std::fs::symlink_metadata(d).is_ok_and(|m| !m.is_dir()) {
            anyhow::bail!("\"{}\" is not a folder", d.display());
        }
    }
    let here = inbox.join(task_id);
    a2a_mod_os::fsx::create_private_dir(&here)?;
    let mut note = String::from(
        "\n\nFiles sent with this message, saved in this folder (their senders' names cleaned):",
    );
    for (i, f) in files.iter().enumerate() {
        let name = format!("{}-{}", i + 1, f.label);
        a2a_mod_os::fsx::write_atomic(
            &here.join(&name),
            &f.bytes,
            Some(a2a_mod_os::fsx::PRIVATE_FILE),
        )?;
        let kind = f.media_type.as_deref().unwrap_or("no media type");
        note.push_str(&format!(
            "\n- {INBOX}/{task_id}/{name} ({kind}, {} bytes)",
            f.bytes.len()
        ));
    }
    Ok(note)
}
