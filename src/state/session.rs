//! Which store a session id means. Claude Code's `/clear` gives hooks and the status line a new
//! session id while the MCP server and the monitor keep the old one (claude-code-facts.md,
//! Round 2), so the SessionStart hook links the new id to the store of the old: `<new>.link` holds
//! the old id. Every entry point resolves through links, so all of them meet in one store and a
//! task sent before `/clear` is still shown, polled and announced after it.

use crate::env::{Ctx, valid_session_id};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;

const MAX_HOPS: usize = 8;

pub fn db_path(ctx: &Ctx, session: &str) -> PathBuf {
    ctx.sessions_dir().join(format!("{session}.db"))
}

fn link_path(ctx: &Ctx, session: &str) -> PathBuf {
    ctx.sessions_dir().join(format!("{session}.link"))
}

pub fn lock_path(ctx: &Ctx, session: &str, what: &str) -> PathBuf {
    ctx.sessions_dir().join(format!("{session}.{what}.lock"))
}

/// Follows `.link` files to the session that owns the store. Cheap when there is no link (one
/// failed open), which is the status line's common case.
pub fn resolve(ctx: &Ctx, session: &str) -> String {
    let mut id = session.to_string();
    for _ in 0..MAX_HOPS {
        match std::fs::read_to_string(link_path(ctx, &id)) {
            Ok(next) => {
                let next = next.trim();
                if !valid_session_id(next) || next == id {
                    break;
                }
                id = next.to_string();
            }
            Err(_) => break,
        }
    }
    id
}

/// Makes `new` an alias of `old`'s store (after `/clear`). A no-op when they already meet.
pub fn link(ctx: &Ctx, new: &str, old: &str) -> Result<()> {
    if !valid_session_id(new) || !valid_session_id(old) {
        bail!("session id is not valid");
    }
    let target = resolve(ctx, old);
    if resolve(ctx, new) == target || new == target {
        return Ok(());
    }
    crate::fsx::write_atomic(
        &link_path(ctx, new),
        target.as_bytes(),
        Some(crate::fsx::PRIVATE_FILE),
    )
    .with_context(|| format!("cannot link session {new} to {target}"))
}

/// Every session that has a store, for `tasks --all` and `doctor`.
pub fn list(ctx: &Ctx) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(ctx.sessions_dir()) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".db"))
                .map(str::to_string)
        })
        .filter(|id| valid_session_id(id))
        .collect();
    ids.sort();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_and_never_loop() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Ctx::at(dir.path());
        assert_eq!(resolve(&ctx, "a"), "a");
        link(&ctx, "b", "a").unwrap();
        link(&ctx, "c", "b").unwrap();
        assert_eq!(resolve(&ctx, "c"), "a");
        link(&ctx, "a", "c").unwrap(); // would be a loop: a already owns the store
        assert_eq!(resolve(&ctx, "a"), "a");
        std::fs::write(link_path(&ctx, "x"), "y").unwrap();
        std::fs::write(link_path(&ctx, "y"), "x").unwrap();
        let r = resolve(&ctx, "x");
        assert!(r == "x" || r == "y");
    }
}
