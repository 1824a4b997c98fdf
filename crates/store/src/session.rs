//! Which store a session id means. Claude Code's `/clear` gives hooks and the status line a new
//! session id while the MCP server and the monitor keep the old one (docs/claude-code.md,
//! Round 2), so the SessionStart hook links the new id to the store of the old: `<new>.link` holds
//! the old id. Every entry point resolves through links, so all of them meet in one store and a
//! task sent before `/clear` is still shown, polled and announced after it.
//!
//! [`SessionPaths::locate`] is how every entry point finds a session's files: it follows the links
//! once and names the owner, its store and its locks.

use a2a_mod_os::env::{Ctx, valid_session_id};
use anyhow::{Context, Result, bail};
use std::path::PathBuf;

const MAX_HOPS: usize = 8;

/// Where one session's files are: those of the session that owns its store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionPaths {
    /// The session that owns the store (after following `/clear` links).
    pub owner: String,
    /// The owner's store, `<owner>.db`.
    pub db: PathBuf,
    dir: PathBuf,
}

impl SessionPaths {
    /// The files of the store `session_id` means, following its `/clear` links ([`resolve`]).
    /// Cheap when there is no link (one failed open), the status line's common case.
    pub fn locate(ctx: &Ctx, session_id: &str) -> SessionPaths {
        SessionPaths::of_owner(ctx, &resolve(ctx, session_id))
    }

    /// The files of `owner` itself, no link followed: for ids that are known to own a store
    /// ([`list`]) or were already located.
    pub fn of_owner(ctx: &Ctx, owner: &str) -> SessionPaths {
        SessionPaths {
            owner: owner.to_string(),
            db: db_path(ctx, owner),
            dir: ctx.sessions_dir(),
        }
    }

    /// `<owner>.<what>.lock`: held while the poller, monitor, waiter or Stop hook runs.
    pub fn lock(&self, what: &str) -> PathBuf {
        self.dir.join(format!("{}.{what}.lock", self.owner))
    }
}

pub fn db_path(ctx: &Ctx, session: &str) -> PathBuf {
    ctx.sessions_dir().join(format!("{session}.db"))
}

fn link_path(ctx: &Ctx, session: &str) -> PathBuf {
    ctx.sessions_dir().join(format!("{session}.link"))
}

pub fn lock_path(ctx: &Ctx, session: &str, what: &str) -> PathBuf {
    SessionPaths::of_owner(ctx, session).lock(what)
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
    a2a_mod_os::fsx::write_atomic(
        &link_path(ctx, new),
        target.as_bytes(),
        Some(a2a_mod_os::fsx::PRIVATE_FILE),
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

    #[test]
    fn located_paths_are_the_owners() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = Ctx::at(dir.path());
        link(&ctx, "new", "old").unwrap();
        let p = SessionPaths::locate(&ctx, "new");
        assert_eq!(p, SessionPaths::of_owner(&ctx, "old"));
        assert_eq!(p.owner, "old");
        assert_eq!(p.db, db_path(&ctx, "old"));
        assert_eq!(p.lock("poller"), lock_path(&ctx, "old", "poller"));
        assert_eq!(p.lock("poller"), ctx.sessions_dir().join("old.poller.lock"));
    }
}
