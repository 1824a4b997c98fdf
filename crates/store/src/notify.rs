//! Telling the waiters a task ended, at once: the monitor
//! (`watch`), the asyncRewake waiter (`hook wake`) and the headless Stop hook (`hook stop`) each
//! bind a Unix datagram socket in the session's wake folder, `sessions/<owner>.wake/<kind><pid>`,
//! and a store writer that commits an ending sends one empty datagram to each socket there.
//!
//! Why datagrams rather than inotify/kqueue on the db or snapshot: the same code on Linux and
//! macOS; a waiter that is busy (or between "look at the store" and "wait") finds the datagram
//! queued in its socket, so no ending is lost between a check and the wait, as long as the
//! socket is bound before the first look ("arm, then check"); nobody listening costs the writer
//! one failed `open` of the folder; a dead waiter's socket answers `ECONNREFUSED` and is removed.
//! The datagram carries nothing: a waiter only learns "look at the store now", so nothing a
//! writer sends is trusted. The waiters keep their tick ([`fallback_tick`]) as the safety net: a
//! socket path too long for `sun_path`, a folder that cannot be made, an older a2a-mod writing.
//!
//! Names come from our own owner id (already a checked session id) and pid, never from worker
//! text. The folder is 0700 inside the private state folder and each socket is 0600.
//! Hot path safe: std only, no runtime, no network.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// Who waits: the socket names' prefixes.
pub const WATCH: &str = "watch";
pub const WAKER: &str = "waker";
pub const STOP: &str = "stop";

/// Test and tuning knob: the waiters' fallback tick in milliseconds (default
/// `core::wake::TICK`). The tests stretch it to many seconds so that only the notification can
/// deliver a wake in time.
pub const TICK_ENV: &str = a2a_mod_os::env::WAKE_TICK;

/// How often a waiter looks at the store with no notification: [`TICK_ENV`] or
/// `core::wake::TICK`.
pub fn fallback_tick() -> Duration {
    static TICK: OnceLock<Duration> = OnceLock::new();
    *TICK.get_or_init(|| {
        a2a_mod_os::env::wake_tick_ms()
            .map(|ms| Duration::from_millis(ms.clamp(10, 3_600_000)))
            .unwrap_or(a2a_mod_core::wake::TICK)
    })
}

/// `sessions/<owner>.wake`, next to `<owner>.db`.
pub fn wake_dir(db: &Path) -> PathBuf {
    db.with_extension("wake")
}

/// Only names we make: a known prefix and a pid.
fn is_ours(name: &str) -> bool {
    [WATCH, WAKER, STOP].iter().any(|k| {
        name.strip_prefix(k)
            .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// The writer's side: after COMMIT of a change that ends a task, one datagram to every waiter of
/// the store at `db`. Never fails and never blocks (a full socket already has a wake queued).
pub fn notify(db: &Path) {
    let dir = wake_dir(db);
    // The common case, nobody ever waited in this session: one failed open.
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let Some(sender) = sender() else { return };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !is_ours(name) {
            continue;
        }
        let path = dir.join(name);
        if let Err(err) = sender.send_to(&[], &path)
            && err.kind() == std::io::ErrorKind::ConnectionRefused
        {
            // Nobody bound to it any more (a waiter killed with -9): a stale name.
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// One unbound, non-blocking socket per process to send from.
fn sender() -> Option<&'static UnixDatagram> {
    static SENDER: OnceLock<Option<UnixDatagram>> = OnceLock::new();
    SENDER
        .get_or_init(|| {
            let s = UnixDatagram::unbound().ok()?;
            s.set_nonblocking(true).ok()?;
            Some(s)
        })
        .as_ref()
}

/// A waiter's socket. Removed on drop.
pub struct Listener {
    sock: UnixDatagram,
    path: PathBuf,
}

impl Listener {
    /// Binds `<owner>.wake/<kind><pid>` for the store at `db`; `None` (the tick alone serves)
    /// when it cannot, e.g. a path longer than a socket address holds.
    pub fn bind(db: &Path, kind: &str) -> Option<Listener> {
        let dir = wake_dir(db);
        let path = dir.join(format!("{kind}{}", std::process::id()));
        let bound = (|| -> std::io::Result<UnixDatagram> {
            // A socket of a dead process that had our pid.
            let _ = std::fs::remove_file(&path);
            let mut tries = 0;
            let sock = loop {
                a2a_mod_os::fsx::create_private_dir(&dir)?;
                a2a_mod_os::fsx::tighten(&dir);
                match UnixDatagram::bind(&path) {
                    // The last waiter's drop removed the empty folder under us: once more.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound && tries < 3 => tries += 1,
                    r => break r?,
                }
            };
            std::fs::set_permissions(
                &path,
                std::fs::Permissions::from_mode(a2a_mod_os::fsx::PRIVATE_FILE),
            )?;
            sock.set_nonblocking(true)?;
            Ok(sock)
        })();
        match bound {
            Ok(sock) => Some(Listener { sock, path }),
            Err(e) => {
                tracing::debug!(
                    "no wake socket at {} ({e}); waiting by ticks",
                    path.display()
                );
                None
            }
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether our name is still ours: a writer that found it stale at the same moment we bound
    /// (pid reuse) may have removed it. Then [`Listener::bind`] again.
    pub fn is_reachable(&self) -> bool {
        std::fs::symlink_metadata(&self.path).is_ok()
    }

    /// Reads every queued datagram; whether there was one.
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 16];
        let mut any = false;
        while self.sock.recv(&mut buf).is_ok() {
            any = true;
        }
        any
    }

    /// Waits until a datagram comes, `timeout` passes or a signal interrupts; drains the queue.
    /// Whether it was woken by a datagram.
    pub fn wait(&self, timeout: Duration) -> bool {
        a2a_mod_os::process::wait_readable(&self.sock, timeout);
        self.drain()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        // The last one out leaves no folder behind (a non-empty one stays: not an error).
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// [`Listener::wait`] when there is one, else a plain sleep (the tick alone).
pub fn wait(listener: Option<&Listener>, timeout: Duration) {
    match listener {
        Some(l) => {
            l.wait(timeout);
        }
        None => std::thread::sleep(timeout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_notification_reaches_every_waiter_and_stale_names_go() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        // Nobody listens: nothing happens, nothing is made.
        notify(&db);
        assert!(!wake_dir(&db).exists());
        let l = Listener::bind(&db, WATCH).expect("bind");
        assert_eq!(
            std::fs::metadata(wake_dir(&db))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o700
        );
        assert_eq!(
            std::fs::metadata(l.path()).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert!(!l.drain());
        // A stale socket (bound, then its process gone) and a name that is not ours.
        let stale = wake_dir(&db).join("stop999999999");
        drop(UnixDatagram::bind(&stale).unwrap());
        std::fs::write(wake_dir(&db).join("other"), "x").unwrap();
        notify(&db);
        notify(&db);
        let t = Instant::now();
        assert!(l.wait(Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_secs(5));
        assert!(!l.drain(), "both datagrams drained at once");
        assert!(!stale.exists(), "the stale name is removed");
        assert!(wake_dir(&db).join("other").exists());
        let p = l.path().to_path_buf();
        drop(l);
        assert!(!p.exists());
        std::fs::remove_file(wake_dir(&db).join("other")).unwrap();
        let l = Listener::bind(&db, STOP).expect("bind");
        drop(l);
        assert!(
            !wake_dir(&db).exists(),
            "the last one out removes the folder"
        );
    }

    /// Sent before the wait: still there when the waiter waits (no lost wake-up between a check
    /// and the wait).
    #[test]
    fn a_notification_before_the_wait_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let l = Listener::bind(&db, WAKER).expect("bind");
        notify(&db);
        let t = Instant::now();
        assert!(l.wait(Duration::from_secs(10)));
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn only_our_names() {
        assert!(is_ours("watch123") && is_ours("waker1") && is_ours("stop42"));
        assert!(!is_ours("watch") && !is_ours("watch12x") && !is_ours("../x") && !is_ours("s.db"));
    }
}
