//! File-system helpers every writer shares: atomic writes (zoxide `util::write`), lock files, and
//! private folders and files for the state (sessions hold task messages and results, so
//! nothing under the state folder is readable by other users, whatever the umask).

use anyhow::{Context, Result};
use std::fs::{self, File, OpenOptions};
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
pub fn write_atomic(path: &Path, mut bytes: &[u8], mode: Option<u32>) -> Result<()> {
    write_atomic_with(path, &mut bytes, mode, true)
}

/// [`write_atomic`] of a private file ([`PRIVATE_FILE`]) from what `from` reads, copied as it is
/// read: a large answer is never held whole.
pub fn write_atomic_from(path: &Path, from: &mut dyn std::io::Read) -> Result<()> {
    write_atomic_with(path, from, Some(PRIVATE_FILE), true)
}

/// [`write_atomic`] without the `sync_all`, for derived data that the next write rebuilds anyway
/// (the status snapshot): readers still never see half a file, but a crash may lose the update.
/// Always [`PRIVATE_FILE`]: the only such file is state.
pub fn write_atomic_unsynced(path: &Path, mut bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, &mut bytes, Some(PRIVATE_FILE), false)
}

/// The temp file is new (`O_EXCL`) and no symlink is followed to it, so a link planted at its
/// name is never written through; the rename replaces a link at `path` itself, not its target.
/// Generic, so bytes in memory are written at once (`io::copy` of a `&[u8]`), not 8 KiB at a time.
fn write_atomic_with<R: std::io::Read + ?Sized>(
    path: &Path,
    from: &mut R,
    mode: Option<u32>,
    sync: bool,
) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let created = match mode {
        Some(m) if m & 0o077 == 0 => create_private_dir(dir),
        _ => fs::create_dir_all(dir),
    };
    created.with_context(|| format!("cannot create \"{}\"", dir.display()))?;
    let mode = mode.or_else(|| {
        fs::metadata(path)
            .ok()
            .map(|m| m.permissions().mode() & 0o7777)
    });
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Unique per write, not just per process (two threads writing one file must not share a
    // temp), and random: a temp a crash left behind under a reused pid does not block the write.
    let tmp = dir.join(format!(".{name}.{:016x}.tmp", crate::ids::random_u64()));
    let result = (|| -> Result<()> {
        let mut f = no_follow(
            OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode.unwrap_or(0o644)),
        )
        .open(&tmp)
        .with_context(|| format!("cannot write \"{}\"", tmp.display()))?;
        if let Some(m) = mode {
            f.set_permissions(fs::Permissions::from_mode(m))?;
        }
        std::io::copy(from, &mut f)
            .with_context(|| format!("cannot write \"{}\"", tmp.display()))?;
        if sync {
            f.sync_all()?;
        }
        fs::rename(&tmp, path).with_context(|| format!("cannot replace \"{}\"", path.display()))?;
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
    fs::create_dir_all(dir).with_context(|| format!("cannot create \"{}\"", dir.display()))?;
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
        .with_context(|| {
            format!(
                "cannot link \"{}\" to \"{}\"",
                path.display(),
                target.display()
            )
        })
}

/// An exclusive advisory lock held for the life of the returned file. The OS drops it when the
/// holder dies, `kill -9` included, which is what makes "exactly one poller" survive crashes.
/// Lock files live in the state folder: created 0600 (and tightened if an older one is looser).
pub fn try_lock(path: &Path) -> Result<Option<File>> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir).with_context(|| format!("cannot create \"{}\"", dir.display()))?;
    }
    let f = open_private(path)
        .with_context(|| format!("cannot open lock file \"{}\"", path.display()))?;
    match f.try_lock() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock \"{}\"", path.display()))
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

/// Opens `path` for reading without following a symlink at its end or blocking on it (a fifo
/// swapped in does not hang the reader).
pub fn open_read_nofollow(path: &Path) -> std::io::Result<File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Makes `opts` refuse a symlink at the path's end (`O_NOFOLLOW`).
pub fn no_follow(opts: &mut fs::OpenOptions) -> &mut fs::OpenOptions {
    opts.custom_flags(libc::O_NOFOLLOW)
}

/// Whether a resolved path is on a pseudo file system (procfs, sysfs, devices: files whose reads have effects or show secrets): by the file system's
/// magic number (`fs_type`, from `statfs`; `None` when it could not be read, and always elsewhere
/// than Linux, whose numbers these are), and by the mount points, for devtmpfs reports tmpfs's
/// number and a container may mount procfs elsewhere too (on macOS, only `/dev` is one).
#[allow(
    clippy::useless_conversion,
    reason = "the magic numbers are `c_long`s: i64 on glibc x86_64, not on every target"
)]
pub fn on_pseudo_fs(real: &Path, fs_type: Option<i64>) -> bool {
    #[cfg(target_os = "linux")]
    let pseudo: [i64; 15] = [
        i64::from(libc::PROC_SUPER_MAGIC),
        i64::from(libc::SYSFS_MAGIC),
        i64::from(libc::DEBUGFS_MAGIC),
        i64::from(libc::TRACEFS_MAGIC),
        i64::from(libc::SECURITYFS_MAGIC),
        i64::from(libc::SELINUX_MAGIC),
        i64::from(libc::CGROUP_SUPER_MAGIC),
        i64::from(libc::CGROUP2_SUPER_MAGIC),
        i64::from(libc::DEVPTS_SUPER_MAGIC),
        i64::from(libc::BPF_FS_MAGIC),
        i64::from(libc::NSFS_MAGIC),
        i64::from(libc::USBDEVICE_SUPER_MAGIC),
        i64::from(libc::XENFS_SUPER_MAGIC),
        // efivarfs and configfs (linux/magic.h; not in libc).
        0xde5e_81e4,
        0x6265_6570,
    ];
    #[cfg(not(target_os = "linux"))]
    let pseudo: [i64; 0] = [];
    let under = ["/proc", "/sys", "/dev"];
    fs_type.is_some_and(|t| pseudo.contains(&t)) || under.iter().any(|d| real.starts_with(d))
}

/// `f_type` as one integer type: glibc's is a `c_long`, musl's a `c_ulong` (the numbers fit both).
#[cfg(target_os = "linux")]
#[allow(
    clippy::unnecessary_fallible_conversions,
    clippy::useless_conversion,
    reason = "glibc's `f_type` is a `c_long`, musl's a `c_ulong`: a conversion only on one"
)]
fn magic_of(s: &libc::statfs) -> Option<i64> {
    i64::try_from(s.f_type).ok()
}

/// The magic number of the file system `p` is on (`statfs`), as [`on_pseudo_fs`] reads it.
#[cfg(target_os = "linux")]
pub fn fs_type(p: &Path) -> Option<i64> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).ok()?;
    let mut s = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `s` a buffer of the size statfs writes.
    let rc = unsafe { libc::statfs(c.as_ptr(), s.as_mut_ptr()) };
    // SAFETY: statfs filled `s` when it returned 0.
    (rc == 0)
        .then(|| magic_of(&unsafe { s.assume_init() }))
        .flatten()
}

/// [`fs_type`] of an open file (`fstatfs`): the file itself, not whatever its path names now.
#[cfg(target_os = "linux")]
pub fn fs_type_of(f: &std::fs::File) -> Option<i64> {
    use std::os::fd::AsRawFd as _;
    let mut s = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: the descriptor is open for the call, and `s` a buffer of the size fstatfs writes.
    let rc = unsafe { libc::fstatfs(f.as_raw_fd(), s.as_mut_ptr()) };
    // SAFETY: fstatfs filled `s` when it returned 0.
    (rc == 0)
        .then(|| magic_of(&unsafe { s.assume_init() }))
        .flatten()
}

/// Elsewhere the magic numbers are not Linux's: the mount points alone tell.
#[cfg(not(target_os = "linux"))]
pub fn fs_type(_: &Path) -> Option<i64> {
    None
}

#[cfg(not(target_os = "linux"))]
pub fn fs_type_of(_: &std::fs::File) -> Option<i64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn pseudo_file_systems_are_told_by_type_and_place() {
        let environ = std::fs::canonicalize("/proc/self/environ").unwrap();
        assert!(on_pseudo_fs(&environ, fs_type(&environ)));
        // PROC_SUPER_MAGIC is a c_long: i64 here.
        assert_eq!(fs_type(&environ), Some(0x9fa0));
        // procfs mounted elsewhere (a container) is still procfs; /dev's tmpfs is told by place.
        assert!(on_pseudo_fs(Path::new("/mnt/p/1/environ"), Some(0x9fa0)));
        assert!(on_pseudo_fs(Path::new("/dev/shm/x"), Some(0x0102_1994)));
        let here = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
        assert!(!on_pseudo_fs(&here, fs_type(&here)));
    }

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
