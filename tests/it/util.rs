//! The one harness every integration test runs the binary through: a temp home per test ([`TempHome`]), one builder for a run of `a2a-mod` in it
//! ([`TestCommand`]: args, env, stdin bytes, cwd; then `output`, `ok`, `fails`, `json` or `spawn`),
//! the short forms most tests use (`ok`, `fails`, `a2a`, `send_json`), the config's `[timing]`
//! for fast tests, polling with a deadline, and the skip message for peer tests.
//!
//! Module-specific helpers (the worker starter in `workers.rs`, the MCP client in `mcp.rs`, the
//! status-line fixture loader in `statusline.rs`) are built on these and live with their tests.
//! No test may sleep bare; it waits on an observable condition through `wait_until`.

use serde_json::Value;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const SECOND: Duration = Duration::from_secs(1);

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

    /// A home with the fake worker at `worker_url` (when given) added as `fake`, and `timing`
    /// appended to `[timing]`: what the MCP, file and poller tests start from.
    pub fn with_fake(worker_url: Option<&str>, timing: &str) -> TempHome {
        let home = TempHome::new();
        if let Some(url) = worker_url {
            ok(&home, &["worker", "add", "fake", url]);
        }
        if !timing.is_empty() {
            append_timing(&home.a2a_home(), timing);
        }
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

    /// `a2a-mod` run in this home as a user runs it: no session from the environment (the tests
    /// may themselves run inside Claude Code), empty stdin. Add a session with
    /// [`TestCommand::session`].
    pub fn command(&self) -> TestCommand {
        let mut c = TestCommand::bare();
        self.apply(&mut c.cmd).env_remove("CLAUDE_CODE_SESSION_ID");
        c
    }
}

/// What the child reads.
enum Input {
    /// Nothing: stdin is `/dev/null`.
    Empty,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
    /// A pipe the test writes to itself (a server spoken to while it runs).
    Pipe,
}

/// One run of a program, the built binary unless said otherwise, set up as a builder and then
/// run one way: [`output`](Self::output) (anything goes), [`ok`](Self::ok) (must succeed),
/// [`fails`](Self::fails) (must fail the way every a2a-mod error does), [`json`](Self::json),
/// or [`spawn`](Self::spawn) for a process the test talks to while it runs.
pub struct TestCommand {
    cmd: Command,
    stdin: Input,
    stdout: Option<Stdio>,
    stderr: Option<Stdio>,
    /// The program and its arguments, for failure messages.
    shown: Vec<String>,
}

impl TestCommand {
    /// The built binary with no home: for what keeps no state (`fake-worker`), or a test that
    /// sets `A2A_MOD_HOME` itself.
    pub fn bare() -> TestCommand {
        TestCommand::program(bin())
    }

    /// Another program run the same way (the plugin launcher, `sh`).
    pub fn program(program: impl AsRef<OsStr>) -> TestCommand {
        let program = program.as_ref();
        let name = Path::new(program)
            .file_name()
            .unwrap_or(program)
            .to_string_lossy()
            .into_owned();
        TestCommand {
            cmd: Command::new(program),
            stdin: Input::Empty,
            stdout: None,
            stderr: None,
            shown: vec![name],
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut TestCommand {
        self.shown.push(arg.as_ref().to_string_lossy().into_owned());
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, A>(&mut self, args: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = A>,
        A: AsRef<OsStr>,
    {
        for a in args {
            self.arg(a);
        }
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, val: impl AsRef<OsStr>) -> &mut TestCommand {
        self.cmd.env(key, val);
        self
    }

    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.cmd.envs(vars);
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut TestCommand {
        self.cmd.env_remove(key);
        self
    }

    /// Runs in `session`, through `CLAUDE_CODE_SESSION_ID` as Claude Code's children do.
    pub fn session(&mut self, id: &str) -> &mut TestCommand {
        self.env("CLAUDE_CODE_SESSION_ID", id)
    }

    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut TestCommand {
        self.cmd.current_dir(dir);
        self
    }

    /// What the child reads on stdin; it is closed after, as Claude Code closes a hook's stdin.
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut TestCommand {
        self.stdin = Input::Bytes(bytes.into());
        self
    }

    /// Leaves the child's stdin a pipe for the test to write (take it from the spawned child).
    pub fn stdin_pipe(&mut self) -> &mut TestCommand {
        self.stdin = Input::Pipe;
        self
    }

    /// Where the child's stdout goes when spawned or run (default: captured).
    pub fn stdout(&mut self, to: impl Into<Stdio>) -> &mut TestCommand {
        self.stdout = Some(to.into());
        self
    }

    /// Where the child's stderr goes (default: captured). A long-lived child nobody reads
    /// stderr from should have it inherited, so a full pipe never blocks it.
    pub fn stderr(&mut self, to: impl Into<Stdio>) -> &mut TestCommand {
        self.stderr = Some(to.into());
        self
    }

    /// Runs the child with this file-mode creation mask, as a shell's `umask` would.
    pub fn umask(&mut self, mask: u32) -> &mut TestCommand {
        a2a_mod_os::testing::umask_in_child(&mut self.cmd, mask);
        self
    }

    /// The set-up `std` command (stdin, stdout and stderr as configured), for a test that runs
    /// it another way (tokio's `Command::from`). Stdin bytes are not written: a test that takes
    /// the command uses [`stdin_pipe`](Self::stdin_pipe) and speaks to stdin itself.
    pub fn into_command(mut self) -> Command {
        self.plumb();
        self.cmd
    }

    fn plumb(&mut self) {
        let stdin = match self.stdin {
            Input::Empty => Stdio::null(),
            Input::Bytes(_) | Input::Pipe => Stdio::piped(),
        };
        self.cmd
            .stdin(stdin)
            .stdout(self.stdout.take().unwrap_or_else(Stdio::piped))
            .stderr(self.stderr.take().unwrap_or_else(Stdio::piped));
    }

    /// Starts the child, writes the stdin bytes (from a thread, so a child that writes before it
    /// reads cannot deadlock with the test) and closes its stdin.
    #[track_caller]
    pub fn spawn(&mut self) -> Child {
        self.plumb();
        let mut child = self
            .cmd
            .spawn()
            .unwrap_or_else(|e| panic!("start {self}: {e}"));
        if let Input::Bytes(bytes) = &self.stdin {
            let bytes = bytes.clone();
            let mut w = child.stdin.take().expect("piped stdin");
            std::thread::spawn(move || {
                // A child that exits without reading all of its stdin is its own business; the
                // test judges what it printed.
                if let Err(e) = w.write_all(&bytes)
                    && e.kind() != std::io::ErrorKind::BrokenPipe
                {
                    panic!("write the child's stdin: {e}");
                }
            });
        }
        child
    }

    /// Runs to the end; whatever the exit, returns what it printed.
    #[track_caller]
    pub fn output(&mut self) -> Output {
        let child = self.spawn();
        child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("wait for {self}: {e}"))
    }

    /// Runs a command that must succeed and returns its stdout.
    #[track_caller]
    pub fn ok(&mut self) -> String {
        let o = self.output();
        assert!(
            o.status.success(),
            "{self} failed ({:?}): {}{}",
            o.status.code(),
            stdout(&o),
            stderr(&o)
        );
        stdout(&o)
    }

    /// Runs a command that must fail as every a2a-mod error does: exit 1 and one
    /// `a2a-mod: ` line on stderr, never a panic. Returns that line.
    #[track_caller]
    pub fn fails(&mut self) -> String {
        let o = self.output();
        one_line_error(&o, &*self)
    }

    /// Runs a command that must succeed and print one JSON document.
    #[track_caller]
    pub fn json(&mut self) -> Value {
        let out = self.ok();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{self} printed no JSON ({e}): {out}"))
    }
}

impl fmt::Display for TestCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`", self.shown.join(" "))
    }
}

/// Checks that the run `what` failed as every a2a-mod error does (exit 1, one `a2a-mod: ` line
/// on stderr, no panic) and returns that line.
#[track_caller]
pub fn one_line_error(o: &Output, what: &dyn fmt::Display) -> String {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(1), "{what}: {}{err}", stdout(o));
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("a2a-mod: "), "{err:?}");
    assert!(!err.contains("panicked"), "{err}");
    err.trim_end().to_string()
}

/// Runs `a2a-mod <args>` in `home` as a user would, in the `cli` session unless `--session` says.
pub fn a2a(home: &TempHome, args: &[&str]) -> Output {
    home.command().args(args).output()
}

/// Like [`a2a`] with extra environment variables.
pub fn a2a_env(home: &TempHome, args: &[&str], envs: &[(&str, &str)]) -> Output {
    home.command()
        .envs(envs.iter().copied())
        .args(args)
        .output()
}

/// `a2a-mod <args>` in `home` that must succeed; its stdout.
#[track_caller]
pub fn ok(home: &TempHome, args: &[&str]) -> String {
    home.command().args(args).ok()
}

/// `a2a-mod <args>` in `home` that must fail with exit 1 and one line on stderr; that line.
#[track_caller]
pub fn fails(home: &TempHome, args: &[&str]) -> String {
    home.command().args(args).fails()
}

/// `send --json` and its structured result.
#[track_caller]
pub fn send_json(home: &TempHome, alias: &str, message: &str, extra: &[&str]) -> Value {
    let mut args = vec!["send", alias, message, "--json"];
    args.extend_from_slice(extra);
    home.command().args(args).json()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Writes `[timing]` for tests about behaviour rather than the seed's timing.
pub fn fast_timing(home: &TempHome, inline: &str, interval: f64, max_failed: u32) {
    append_timing(
        &home.a2a_home(),
        &format!(
            "inline_polls_s = {inline}\npoll_interval_s = {interval}\npoll_timeout_s = 2\nmax_failed_polls = {max_failed}"
        ),
    );
}

/// Appends a `[timing]` table with `keys` to the config in `a2a_home`.
pub fn append_timing(a2a_home: &Path, keys: &str) {
    append_config(a2a_home, &format!("\n[timing]\n{keys}\n"));
}

/// Appends `text` (TOML) to the config in `a2a_home`, creating it if need be.
pub fn append_config(a2a_home: &Path, text: &str) {
    let cfg = a2a_home.join("config.toml");
    let mut all = std::fs::read_to_string(&cfg).unwrap_or_default();
    all.push_str(text);
    std::fs::write(cfg, all).unwrap();
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

static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// The `a2a-mod` binary cargo built for this test run.
pub fn bin() -> PathBuf {
    // A copy of this build's binary may be named instead: in a target dir shared by several
    // checkouts, `target/debug/a2a-mod` is whichever checkout linked last.
    BIN.get_or_init(|| {
        std::env::var_os("A2A_MOD_IT_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_a2a-mod")))
    })
    .clone()
}

/// Makes [`bin`] this copy of the binary from here on (before anything asked for it).
#[allow(dead_code, reason = "the wake-latency bench's, not the tests'")]
pub fn use_bin(copy: PathBuf) {
    assert!(BIN.set(copy).is_ok(), "use_bin after bin()");
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

/// What the UserPromptSubmit hook hands Claude as hidden context right now, if anything (each
/// ended task's outcome, claimed once): the hook must succeed, print one JSON line within Claude
/// Code's 10,000-character hook cap, or print nothing.
#[track_caller]
pub fn hook_context(home: &TempHome, session: &str) -> Option<String> {
    let input = serde_json::json!({"session_id": session, "hook_event_name": "UserPromptSubmit",
                       "prompt": "next", "cwd": "/tmp", "transcript_path": null});
    let o = home
        .command()
        .args(["hook", "user-prompt-submit"])
        .stdin(input.to_string())
        .output();
    assert!(o.status.success(), "hook failed: {}", stderr(&o));
    let out = stdout(&o);
    if out.trim().is_empty() {
        return None;
    }
    assert!(
        out.chars().count() <= 10_000,
        "over Claude Code's hook cap: {}",
        out.len()
    );
    let v: serde_json::Value =
        serde_json::from_str(out.trim()).expect("the hook prints one JSON line");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_string)
}

/// A task's row in a session's store (read-only, as the poller and the tools left it), from a
/// temp home's `A2A_MOD_HOME`; a path, so a blocking thread beside an async test can use it.
pub fn task_row(a2a_home: &Path, session: &str, id: &str) -> Option<a2a_mod::testing::TaskRecord> {
    session_reader(a2a_home, session)?.find(id).ok()?
}

/// A session's store, read-only, from a temp home's `A2A_MOD_HOME`; none without a store.
fn session_reader(a2a_home: &Path, session: &str) -> Option<a2a_mod::testing::Reader> {
    let ctx = a2a_mod::testing::Ctx::at(a2a_home);
    a2a_mod::testing::Reader::open(&a2a_mod::testing::session::db_path(&ctx, session)).ok()?
}

/// Every task row of a session's store (read-only), oldest first; none without a store.
pub fn task_rows(a2a_home: &Path, session: &str) -> Vec<a2a_mod::testing::TaskRecord> {
    session_reader(a2a_home, session)
        .and_then(|r| r.all().ok())
        .unwrap_or_default()
}

/// Waits for the task to end in the store, and returns its row.
#[track_caller]
pub fn ended_row(
    a2a_home: &Path,
    session: &str,
    id: &str,
    within: Duration,
) -> a2a_mod::testing::TaskRecord {
    wait_until(&format!("task {id} to end in the store"), within, || {
        task_row(a2a_home, session, id).is_some_and(|t| t.ended_ms.is_some())
    });
    task_row(a2a_home, session, id).expect("the ended task's row")
}

/// An axum app on 127.0.0.1:0, on its own thread and runtime (the tests are plain `#[test]`s);
/// it stops when this drops. `app` is given the server's URL (a card names its own endpoint).
pub struct Served {
    pub url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    pub fn start(app: impl FnOnce(&str) -> axum::Router) -> Served {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let app = app(&url);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                tokio::select! {
                    r = axum::serve(listener, app) => r.expect("serve"),
                    _ = stopped => {}
                }
            });
        });
        Served {
            url,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Every file under `dir`, at any depth (none when it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}
