//! The status snapshot: `sessions/<id>.status`, next to `<id>.db`, what the status line reads
//! instead of SQLite (SQLite's first read of a file costs more than starting a process).
//!
//! Owns the file's format, its freshness stamp, publishing (writers) and [`load`] (the hot path).
//! The content is [`a2a_mod_core::status::Snapshot`], built by the pure `summarize`; this module
//! only moves it to and from disk.
//!
//! Who writes it: every [`super::Store`] write transaction publishes it after COMMIT, while
//! holding `<id>.status.lock` (an OS file lock taken *before* COMMIT, so publications happen in
//! commit order and an older snapshot never replaces a newer one). A temp file and a rename make
//! it atomic; there is no fsync: it is derived data, rebuilt by the next write or open.
//!
//! Freshness: the snapshot records the db's and the WAL's (inode, size, mtime) as they were right
//! after its commit. [`load`] stats both (two `stat`s, no SQLite) and calls the snapshot stale when
//! either differs: a writer that died between COMMIT and publishing, an older a2a-mod still
//! running, or anyone writing the file with another tool. The status line then falls back to
//! SQLite, so it shows the truth, only slower, until the next write publishes again. A writer
//! closing its connection may checkpoint (rewriting the db, deleting the WAL) without changing any
//! task; the store re-stamps a fresh snapshot then (see `Store`'s `Drop`). An empty WAL counts as
//! no WAL: a reader opening the store may create one, and it holds nothing.
//!
//! HOT PATH ([`load`]): one open + read of a few hundred bytes, two stats, a small JSON parse.
//! Never writes, never creates.

use a2a_mod_core::status::Snapshot;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Bumped when the format changes; a file of another version is stale (SQLite fallback).
const VERSION: u32 = 1;
/// A snapshot is a few hundred bytes; a bigger file is not ours.
const MAX_BYTES: u64 = 64 * 1024;

/// The snapshot of the store at `db`.
pub fn path_for(db: &Path) -> PathBuf {
    db.with_extension("status")
}

fn lock_path_for(db: &Path) -> PathBuf {
    db.with_extension("status.lock")
}

fn wal_path_for(db: &Path) -> PathBuf {
    suffixed(db, "-wal")
}

/// `db` with `suffix` appended to its name: SQLite's `-wal` and `-shm`.
fn suffixed(db: &Path, suffix: &str) -> PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// The files next to a store that hold its content (its WAL, its shared memory, the snapshot):
/// what the store's writer tightens on open. The publish lock is tightened when it is opened.
pub(super) fn companions(db: &Path) -> [PathBuf; 3] {
    [wal_path_for(db), suffixed(db, "-shm"), path_for(db)]
}

/// What identifies one version of a file's content: inode, size, mtime (s, ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStamp(u64, u64, i64, i64);

/// The db and its WAL as one commit left them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Stamp {
    db: Option<FileStamp>,
    wal: Option<FileStamp>,
}

fn file_stamp(p: &Path) -> Option<FileStamp> {
    let m = std::fs::metadata(p).ok()?;
    Some(FileStamp(m.ino(), m.size(), m.mtime(), m.mtime_nsec()))
}

/// The db's and WAL's stamps now. An empty or missing WAL is `None` (it holds no commits).
pub fn stamp(db: &Path) -> Stamp {
    Stamp {
        db: file_stamp(db),
        wal: file_stamp(&wal_path_for(db)).filter(|s| s.1 > 0),
    }
}

#[derive(Serialize, Deserialize)]
struct Wire {
    v: u32,
    stamp: Stamp,
    snap: Snapshot,
}

/// What [`load`] found.
#[expect(
    clippy::large_enum_variant,
    reason = "returned once per status-line run and moved once: a box would only add an allocation"
)]
#[derive(Debug, PartialEq)]
pub enum Loaded {
    /// The snapshot matches the store as it is now.
    Fresh(Snapshot),
    /// There is a snapshot, but the store changed since (or it is unreadable): ask SQLite.
    Stale,
    /// No snapshot: no store at all, or one from before snapshots (ask SQLite if `db` exists).
    Missing,
}

/// Reads the snapshot of the store at `db` (the hot path: see the module docs).
pub fn load(db: &Path) -> Loaded {
    match read_wire(db) {
        None => Loaded::Missing,
        Some(Some(w)) if w.stamp == stamp(db) => Loaded::Fresh(w.snap),
        Some(_) => Loaded::Stale,
    }
}

/// The snapshot on disk and whether it was fresh, read by a writer that holds the lock.
pub(super) fn read_locked(db: &Path) -> Option<(Stamp, Snapshot)> {
    read_wire(db).flatten().map(|w| (w.stamp, w.snap))
}

/// The snapshot file of `db`, read up to [`MAX_BYTES`]: `None` when there is none, `Some(None)`
/// when it cannot be read, does not parse or is another version's.
fn read_wire(db: &Path) -> Option<Option<Wire>> {
    let f = File::open(path_for(db)).ok()?;
    let mut bytes = Vec::with_capacity(1024);
    let read = f.take(MAX_BYTES).read_to_end(&mut bytes).is_ok();
    Some(
        read.then(|| serde_json::from_slice::<Wire>(&bytes).ok())
            .flatten()
            .filter(|w| w.v == VERSION),
    )
}

/// Writes the snapshot with `stamp` (temp file + rename). The caller holds the lock. On failure
/// the old snapshot is removed, so readers fall back to SQLite rather than show an old state.
pub(super) fn publish(db: &Path, stamp: Stamp, snap: Snapshot) -> std::io::Result<()> {
    let path = path_for(db);
    let result = (|| {
        let bytes = serde_json::to_vec(&Wire {
            v: VERSION,
            stamp,
            snap,
        })?;
        a2a_mod_os::fsx::write_atomic_unsynced(&path, &bytes).map_err(std::io::Error::other)
    })();
    if result.is_err() {
        withdraw(db);
    }
    result
}

/// Removes the snapshot, so readers ask SQLite (when it cannot be brought up to date).
pub(super) fn withdraw(db: &Path) {
    let _ = std::fs::remove_file(path_for(db));
}

/// The lock that orders publications: held from before COMMIT until the snapshot is renamed into
/// place, and around a close that may checkpoint. An OS lock, so a crashed holder releases it.
pub(super) struct PublishLock {
    file: Option<File>,
}

impl PublishLock {
    pub(super) fn open(db: &Path) -> PublishLock {
        let file = a2a_mod_os::fsx::open_private(&lock_path_for(db)).ok();
        PublishLock { file }
    }

    /// Blocks until held. Holders do a stat and a small write, so the wait is short; `false` when
    /// the lock file could not be opened or locked (then the caller withdraws the snapshot).
    pub(super) fn lock(&self) -> bool {
        self.file.as_ref().is_some_and(|f| f.lock().is_ok())
    }

    pub(super) fn unlock(&self) {
        if let Some(f) = &self.file {
            let _ = f.unlock();
        }
    }
}
