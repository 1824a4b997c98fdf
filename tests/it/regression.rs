//! Regressions, through the built binary (ripgrep's `tests/regression.rs`).
//!
//! The rule, from now on: every bug found gets a test here that fails before its fix, named
//! after what broke, `r<issue>_<what broke>` (`r9_tasks_failed_while_…`), with a doc comment
//! that links the issue (its URL once the tracker is public; until then "Issue <n>, item <m>",
//! as the project numbers them) and says what broke and how it was seen. A regression test sets
//! up exactly the state that broke, deterministically (a test seam, a FIFO, a file written by
//! hand), never a timing loop that hopes to hit it. It runs the binary through `crate::util`
//! like every other module.

use crate::util::{SECOND, TempHome, ok, wait_until};
use crate::workers::{Kind, Peer};
use serde_json::Value;
use std::os::unix::fs::OpenOptionsExt;
use std::process::Command;

/// Issue 9, item 10: `a2a-mod tasks`, run while the first write of a session created its store,
/// failed with "unable to open database file": its read-only open found no file, a writer then
/// created it, and the existence check that followed found one, so the failed open was taken for
/// a real error (seen on a loaded machine in `cli::concurrent_commands_never_see_database_is_locked`).
///
/// Deterministic, not a timing loop: the reader is held at exactly that point (the test seam
/// `A2A_MOD_TEST_PAUSE_AFTER_FAILED_OPEN` makes it block reading a FIFO after a failed open), a
/// real writer creates the store, and only then is the reader let go. It must list the new task.
#[test]
fn r9_tasks_failed_while_the_first_write_created_the_store() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let fifo = home.root().join("pause.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());

    let reader = home
        .command()
        .env("A2A_MOD_TEST_PAUSE_AFTER_FAILED_OPEN", &fifo)
        .args(["tasks", "--session", "race", "--json"])
        .spawn();

    // The reader is paused once the FIFO has a reader: a non-blocking open for writing succeeds
    // only then (ENXIO before).
    const O_NONBLOCK: i32 = 0o4000;
    let mut release = None;
    wait_until("the reader to fail its open and pause", 20 * SECOND, || {
        release = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(&fifo)
            .ok();
        release.is_some()
    });
    let db = home.a2a_home().join("state/sessions/race.db");
    assert!(!db.exists());

    // The first write of the session creates the store, while the reader sits between its
    // failed open and its existence check.
    let sent = ok(
        &home,
        &["send", "w", "hello", "--session", "race", "--json"],
    );
    assert!(db.exists(), "{sent}");
    drop(release);

    let out = reader.wait_with_output().expect("tasks output");
    assert!(
        out.status.success(),
        "tasks failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).expect("tasks --json prints JSON");
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
}

/// The states a reader can meet while a writer creates a store, each set up exactly: an empty
/// file (the writer has created it 0600 and SQLite has not written yet), a WAL database with no
/// schema, and a migration still uncommitted. Each reads as "no tasks", never an error.
#[test]
fn r9_a_store_being_created_reads_as_empty() {
    let home = TempHome::new();
    let sessions = home.a2a_home().join("state/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let db = sessions.join("new.db");
    let no_tasks = |why: &str| {
        let out = ok(&home, &["tasks", "--session", "new"]);
        assert_eq!(out.trim(), "no tasks", "{why}");
        let json = ok(&home, &["tasks", "--session", "new", "--json"]);
        assert_eq!(json.trim(), "[]", "{why}");
    };
    std::fs::write(&db, b"").unwrap();
    no_tasks("empty file");
    let c = rusqlite::Connection::open(&db).unwrap();
    let _: String = c
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    no_tasks("WAL, no schema");
    c.execute_batch("BEGIN IMMEDIATE; CREATE TABLE tasks (seq INTEGER); PRAGMA user_version = 1;")
        .unwrap();
    no_tasks("migration not committed");
    c.execute_batch("ROLLBACK").unwrap();
}
