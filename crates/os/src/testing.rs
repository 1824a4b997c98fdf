//! What the tests and benchmarks ask of the kernel beyond what a2a-mod itself does, here so that
//! they hold no `unsafe` either. Built only with the `testing` feature, which only the root's
//! dev-dependency turns on.

use std::os::fd::AsRawFd as _;
#[cfg(target_os = "linux")]
use std::os::fd::{FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::time::Duration;

fn c_path(p: &Path) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(p.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

fn check(rc: libc::c_int) -> std::io::Result<libc::c_int> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Runs the command's process with this file-mode creation mask, as a shell's `umask` would.
pub fn umask_in_child(cmd: &mut std::process::Command, mask: u32) {
    use std::os::unix::process::CommandExt as _;
    let mask = libc::mode_t::try_from(mask).unwrap_or(0o077);
    // SAFETY: umask(2) is async-signal-safe and touches only the child's own process state.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(mask);
            Ok(())
        });
    }
}

/// Makes a named pipe at `p`, private to the user.
pub fn mkfifo(p: &Path) -> std::io::Result<()> {
    let c = c_path(p)?;
    // SAFETY: a NUL-terminated path; mkfifo(2) only reads it.
    check(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }).map(drop)
}

/// Counts opens of one file by any process (inotify's `IN_OPEN`).
#[cfg(target_os = "linux")]
pub struct OpenWatch {
    fd: OwnedFd,
}

#[cfg(target_os = "linux")]
impl OpenWatch {
    pub fn new(p: &Path) -> std::io::Result<OpenWatch> {
        let c = c_path(p)?;
        // SAFETY: inotify_init1(2) takes flags only and returns a new descriptor, ours from here.
        let fd = check(unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) })?;
        // SAFETY: `fd` is the descriptor just opened, owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: an open inotify descriptor and a NUL-terminated path.
        check(unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c.as_ptr(), libc::IN_OPEN) })?;
        Ok(OpenWatch { fd })
    }

    /// Opens since the last call.
    pub fn take(&self) -> usize {
        // struct inotify_event: wd, mask, cookie, len (4 bytes each), then `len` bytes of name.
        const HEAD: usize = 16;
        let mut n = 0;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reads at most `buf.len()` bytes into the buffer we own.
            let got =
                unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            let Ok(got) = usize::try_from(got) else {
                return n;
            };
            if got == 0 {
                return n;
            }
            let mut at = 0;
            while let Some(len) = buf.get(at + 12..at + HEAD) {
                if at + HEAD > got {
                    break;
                }
                let len = u32::from_ne_bytes(len.try_into().unwrap_or([0; 4])) as usize;
                n += 1;
                at += HEAD + len;
            }
        }
    }
}

/// What a child used, as the kernel counted it when it was reaped.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// User plus system time.
    pub cpu: Duration,
    /// Bytes it wrote to storage (blocks of 512 bytes).
    pub written: u64,
}

/// Waits for child `pid` (not yet reaped: std's `Child` never waited on) and reads its usage.
pub fn wait_usage(pid: u32) -> std::io::Result<Usage> {
    let pid = libc::pid_t::try_from(pid)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of that plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: our own child; wait4(2) writes only `status` and `ru`.
    check(unsafe { libc::wait4(pid, &mut status, 0, &mut ru) })?;
    let secs = |t: libc::timeval| {
        Duration::new(
            u64::try_from(t.tv_sec).unwrap_or(0),
            u32::try_from(t.tv_usec).unwrap_or(0) * 1000,
        )
    };
    Ok(Usage {
        cpu: secs(ru.ru_utime) + secs(ru.ru_stime),
        written: u64::try_from(ru.ru_oublock).unwrap_or(0) * 512,
    })
}

#[cfg(target_os = "linux")]
/// Drops the pages of the file at `path` from the page cache (written out first), so its next
/// read comes from the disk, as after a boot. Quietly nothing when it cannot be opened.
pub fn evict_from_cache(path: &Path) {
    let Ok(f) = std::fs::File::open(path) else {
        return;
    };
    let _ = f.sync_all();
    // SAFETY: the descriptor is open for the call; the advice changes no memory of ours.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
}

/// Clock ticks per second, the unit of `/proc/PID/stat`'s times.
pub fn clock_ticks() -> u64 {
    // SAFETY: sysconf(3) has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    u64::try_from(t).ok().filter(|t| *t > 0).unwrap_or(100)
}
