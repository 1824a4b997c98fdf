//! Shared helpers for every integration test: a temp home per test, polling with a deadline, the
//! path of the built binary, and the skip message for peer tests. No test may sleep bare; it waits
//! on an observable condition through `wait_until`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// A per-test home. Child processes get `A2A_MOD_HOME=<root>/a2a` and `HOME=<root>/home`, so
/// neither a2a-mod nor anything it starts (Claude Code included) touches the real user's files.
/// The directory is removed on drop.
pub struct TempHome {
    dir: tempfile::TempDir,
}

impl TempHome {
    pub fn new() -> TempHome {
        let dir = tempfile::Builder::new()
            .prefix("a2a-mod-it-")
            .tempdir()
            .expect("create temp home");
        let home = TempHome { dir };
        std::fs::create_dir_all(home.a2a_home()).expect("create A2A_MOD_HOME");
        std::fs::create_dir_all(home.home()).expect("create HOME");
        home
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// `A2A_MOD_HOME` for child processes.
    pub fn a2a_home(&self) -> PathBuf {
        self.root().join("a2a")
    }

    /// `HOME` for child processes.
    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The environment every child process of a test gets.
    pub fn envs(&self) -> Vec<(OsString, OsString)> {
        vec![
            ("A2A_MOD_HOME".into(), self.a2a_home().into()),
            ("HOME".into(), self.home().into()),
        ]
    }

    /// Points `cmd` at this home. XDG dirs are dropped so a developer's own settings can't leak in.
    pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        cmd.env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .envs(self.envs())
    }
}

/// Polls `pred` every 50 ms until it holds; panics naming `what` once `deadline` has passed.
/// `pred` is evaluated once more at the deadline so a slow last poll can still succeed.
#[track_caller]
pub fn wait_until(what: &str, deadline: Duration, mut pred: impl FnMut() -> bool) {
    let start = Instant::now();
    loop {
        if pred() {
            return;
        }
        if start.elapsed() >= deadline {
            panic!("timed out after {deadline:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `a2a-mod` binary cargo built for this test run.
pub fn bin() -> PathBuf {
    // A copy of this build's binary may be named instead: in a target dir shared by several
    // checkouts, `target/debug/a2a-mod` is whichever checkout linked last.
    std::env::var_os("A2A_MOD_IT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_a2a-mod")))
}

/// Reports a skipped peer test. Call as `return skip("...")`. With `A2A_MOD_REQUIRE_PEERS=1`
/// (CI, where the peers are installed) a skip is a failure instead, so a broken install can't
/// turn the end-to-end tests silently green.
#[track_caller]
pub fn skip(reason: &str) {
    if std::env::var_os("A2A_MOD_REQUIRE_PEERS").is_some_and(|v| v == "1") {
        panic!("A2A_MOD_REQUIRE_PEERS=1 but the test would skip: {reason}");
    }
    eprintln!("SKIPPED: {reason}");
}

/// Finds `name` on `PATH`, as a shell would.
pub fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}
