//! File-system helpers every writer shares: atomic writes (zoxide `util::write`), lock files, and
//! private folders and files for the state (sessions hold task messages and results, so
//! nothing under the state folder is readable by other users, whatever the umask).

use anyhow::{Context, Result};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of every file under the state folder (and of the config, the log, results).
pub const PRIVATE_FILE: u32 = 0o600;
/// The mode of the state folder and the folders in it.
pub const PRIVATE_DIR: u32 = 0o700;

/// Creates `dir` and any missing parents 0700. Existing folders keep their mode (see [`tighten`]).
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR)
        .create(dir)
}

/// Takes group and other permissions off an existing file or folder made by an older a2a-mod or
/// under a loose umask (one `stat`; a `chmod` only when it is loose). A missing path is fine.
pub fn tighten(path: &Path) {
    if let Ok(m) = fs::symlink_metadata(path) {
        tighten_to(path, &m);
    }
}

/// [`tighten`] for a file already open: `fstat`/`fchmod` on its descriptor.
pub fn tighten_open(f: &File) {
    if let Ok(m) = f.metadata()
        && m.permissions().mode() & 0o077 != 0
    {
        let _ = f.set_permissions(fs::Permissions::from_mode(m.permissions().mode() & 0o700));
    }
}

fn tighten_to(path: &Path, m: &fs::Metadata) {
    // A symlink's own mode means nothing, and following it could chmod a file that is not ours.
    if m.file_type().is_symlink() || m.permissions().mode() & 0o077 == 0 {
        return;
    }
    let _ = fs::set_permissions(
        path,
        fs::Permissions::from_mode(m.permissions().mode() & 0o700),
    );
}

/// Writes `bytes` to `path` so a reader sees either the old file or the new one, never half:
/// a temp file in the same folder, `sync_all`, rename. `mode` sets the permissions (0600 for files
/// that name secrets' sources); otherwise an existing file keeps its own. A missing folder for a
/// private file (no group or other bits in `mode`) is created private too.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    write_atomic_with(path, bytes, mode, true)
}

/// [`write_atomic`] without the `sync_all`, for derived data that the next write rebuilds anyway
/// (the status snapshot): readers still never see half a file, but a crash may lose the update.
/// Always [`PRIVATE_FILE`]: the only such file is state.
pub fn write_atomic_unsynced(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, bytes, Some(PRIVATE_FILE), false)
}

fn write_atomic_with(path: &Path, bytes: &[u8], mode: Option<u32>, sync: bool) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let created = match mode {
        Some(m) if m & 0o077 == 0 => create_private_dir(dir),
        _ => fs::create_dir_all(dir),
    };
    created.with_context(|| format!("cannot create {}", dir.display()))?;
    let mode = mode.or_else(|| {
        fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    });
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per write, not just per process: two threads writing one file must not share a temp.
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.{}.{seq}.tmp", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode.unwrap_or(0o644))
            .open(&tmp)
            .with_context(|| format!("cannot write {}", tmp.display()))?;
        if let Some(m) = mode {
            f.set_permissions(fs::Permissions::from_mode(m))?;
        }
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Makes `path` a symbolic link to `target`, replacing what was there at once (a link beside it,
/// renamed over it): a reader follows either the old link or the new one.
pub fn link_atomic(path: &Path, target: &Path) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.{}.link", std::process::id()));
    let _ = fs::remove_file(&tmp);
    std::os::unix::fs::symlink(target, &tmp)
        .and_then(|()| fs::rename(&tmp, path))
        .inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
        .with_context(|| format!("cannot link {} to {}", path.display(), target.display()))
}

/// An exclusive advisory lock held for the life of the returned file. The OS drops it when the
/// holder dies, `kill -9` included, which is what makes "exactly one poller" survive crashes.
/// Lock files live in the state folder: created 0600 (and tightened if an older one is looser).
pub fn try_lock(path: &Path) -> Result<Option<File>> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let f =
        open_private(path).with_context(|| format!("cannot open lock file {}", path.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// Opens (creating 0600 if missing) a file of the state for reading and writing, without
/// truncating it, and tightens it if it is looser.
pub fn open_private(path: &Path) -> std::io::Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(PRIVATE_FILE)
        .open(path)?;
    tighten_open(&f);
    Ok(f)
}

/// [`try_lock`], tried for up to `patience`: [`is_locked`] takes a free lock for a moment to test
/// it, so a process starting just then would otherwise take the prober for a holder and give up.
pub fn try_lock_within(path: &Path, patience: std::time::Duration) -> Result<Option<File>> {
    let start = std::time::Instant::now();
    loop {
        match try_lock(path)? {
            Some(f) => return Ok(Some(f)),
            None if start.elapsed() >= patience => return Ok(None),
            None => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
}

/// Whether some process holds the lock at `path` (without keeping it). It takes a free lock for a
/// moment; contenders use `try_lock_within` so the probe never turns one away.
pub fn is_locked(path: &Path) -> bool {
    let Ok(f) = OpenOptions::new().read(true).write(true).open(path) else {
        return false;
    };
    matches!(f.try_lock(), Err(std::fs::TryLockError::WouldBlock))
}

/// Why a folder cannot take a write now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unwritable {
    /// Its filesystem has no room left.
    Full,
    /// Its filesystem is mounted read-only, or the folder is not writable by us.
    ReadOnly,
}

impl Unwritable {
    /// Why, as the errors and Claude's note say it ("the disk is full").
    pub fn what(self) -> &'static str {
        match self {
            Unwritable::Full => "the disk is full",
            Unwritable::ReadOnly => "it is read-only",
        }
    }

    /// What the user does about it.
    pub fn fix(self) -> &'static str {
        match self {
            Unwritable::Full => "free some space there",
            Unwritable::ReadOnly => "make it writable",
        }
    }
}

/// Whether `dir` can take a write now, as the filesystem says (`statvfs`, `access`): two system
/// calls, cheap enough for the status line each second. `None` when it can, or cannot be asked.
pub fn unwritable(dir: &Path) -> Option<Unwritable> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a NUL-terminated path; `st` is a plain struct statvfs fills in.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    // SAFETY: as above; access(2) only reads the path.
    if st.f_flag & libc::ST_RDONLY != 0 || unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return Some(Unwritable::ReadOnly);
    }
    (st.f_bavail == 0).then_some(Unwritable::Full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_keeps_mode_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        write_atomic(&p, b"one", Some(0o600)).unwrap();
        write_atomic(&p, b"two", None).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.lock");
        let held = try_lock(&p).unwrap().expect("first lock");
        assert!(try_lock(&p).unwrap().is_none());
        assert!(is_locked(&p));
        drop(held);
        assert!(!is_locked(&p));
        assert!(try_lock(&p).unwrap().is_some());
    }
}
