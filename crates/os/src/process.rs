//! Processes, signals and descriptors: every call a2a-mod makes to the kernel about them, here so
//! that no other crate holds an `unsafe` block (each has `#![forbid(unsafe_code)]`). Each call's
//! failure is quiet where the caller could do nothing else: a group already gone, a descriptor
//! already closed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The signals a2a-mod sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Term,
    Kill,
    Int,
    Stop,
    Cont,
}

impl Signal {
    fn raw(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
            Signal::Int => libc::SIGINT,
            Signal::Stop => libc::SIGSTOP,
            Signal::Cont => libc::SIGCONT,
        }
    }
}

/// Sends `sig` to process `pid`; whether it was delivered.
pub fn signal(pid: impl TryInto<libc::pid_t>, sig: Signal) -> bool {
    let Ok(pid) = pid.try_into() else {
        return false;
    };
    // SAFETY: kill(2) takes plain integers and touches no memory of ours.
    unsafe { libc::kill(pid, sig.raw()) == 0 }
}

/// Sends `sig` to the process group led by `leader` (a child spawned with `process_group(0)`,
/// so the group is that command's alone); whether it was delivered.
pub fn signal_group(leader: u32, sig: Signal) -> bool {
    let Ok(pid) = libc::pid_t::try_from(leader) else {
        return false;
    };
    // SAFETY: as in `signal`; a negative pid names the process group.
    unsafe { libc::kill(-pid, sig.raw()) == 0 }
}

/// Whether process `pid` exists (EPERM: it does, owned by someone else).
pub fn is_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    // SAFETY: signal 0 only checks for existence and permission; it sends nothing.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Asks the kernel to send the command's process SIGTERM when this one dies (Linux; elsewhere
/// nothing), so a child is not left running for nobody.
pub fn die_with_parent(cmd: &mut std::process::Command) {
    #[cfg(not(target_os = "linux"))]
    let _ = cmd;
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt as _;
        // SAFETY: prctl(2) with PR_SET_PDEATHSIG is async-signal-safe and touches no memory of
        // the parent; it only asks the kernel to signal this child when its parent dies.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
                Ok(())
            });
        }
    }
}

/// Points this process's stdin, stdout and stderr at `/dev/null`, so whatever reads its output (a
/// pipe, `$(…)`) is done now, not when the process ends.
pub fn detach_stdio() {
    use std::os::fd::AsRawFd as _;
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    for fd in 0..=2 {
        // SAFETY: dup2(2) onto this process's own standard descriptors, from a file it holds;
        // the caller uses them no more.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
}

static STOP_ASKED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
}

/// From here on SIGTERM, SIGINT and SIGHUP only set a flag ([`stop_asked`]) instead of ending the
/// process: a loop that checks it stops on its own terms.
pub fn catch_stop_signals() {
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::signal(sig, on_stop_signal as *const () as libc::sighandler_t);
        }
    }
}

/// Whether a stop signal came since [`catch_stop_signals`].
pub fn stop_asked() -> bool {
    STOP_ASKED.load(Ordering::SeqCst)
}

/// Whether the reader of this process's stdout is gone (a socket or pipe reports HUP or ERR).
pub fn stdout_hung_up() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd on the stack, zero timeout; poll only writes `revents`.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLHUP | libc::POLLERR) != 0
}

/// Waits until `fd` is readable, `timeout` passes or a signal interrupts, whichever is first.
pub fn wait_readable(fd: &impl std::os::fd::AsRawFd, timeout: Duration) {
    let mut fd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd on the stack; poll only writes `revents`.
    unsafe { libc::poll(&mut fd, 1, ms) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_alive_until_its_group_is_killed() {
        use std::os::unix::process::CommandExt as _;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        assert!(is_alive(child.id()));
        assert!(signal_group(child.id(), Signal::Kill));
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!is_alive(child.id()), "reaped: no such process any more");
    }
}
