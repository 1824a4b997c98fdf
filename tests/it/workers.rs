//! Workers for integration tests, run as processes the way users run them: the embedded fake
//! worker (`a2a-mod fake-worker`) and the Python `a2a-sdk` peer (`tests/peers/worker.py`), each in
//! v1 and v0.3-only mode. Both log every request as one JSON line, so tests read one format.
//! Every worker is killed when its `Peer` drops.

use crate::util::{TempHome, bin, skip};
use serde::Deserialize;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fake,
    FakeV03,
    PyV1,
    PyV03,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    pub at_ms: i64,
    pub method: String,
    #[serde(default)]
    pub task_id: Option<String>,
    /// 0 for a request never answered (`silent`); the Python peer logs those as `null`.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub status: u16,
}

fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    Ok(Option::<u16>::deserialize(d)?.unwrap_or(0))
}

impl Event {
    pub fn is_send(&self) -> bool {
        matches!(
            self.method.as_str(),
            "SendMessage" | "message/send" | "SendStreamingMessage" | "message/stream"
        )
    }
    pub fn is_get(&self) -> bool {
        matches!(self.method.as_str(), "GetTask" | "tasks/get")
    }
}

pub struct Peer {
    pub url: String,
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where `tests/peers/setup.sh` put the Python venvs.
pub fn peers_dir() -> PathBuf {
    std::env::var_os("A2A_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/peers"))
}

impl Peer {
    /// Starts a worker of `kind`; `None` (after a SKIPPED line) when its runtime is missing.
    pub fn start(kind: Kind, extra: &[&str]) -> Option<Peer> {
        let dir = tempfile::tempdir().expect("peer dir");
        let log = dir.path().join("requests.jsonl");
        let mut cmd = match kind {
            Kind::Fake | Kind::FakeV03 => {
                let mut c = Command::new(bin());
                c.arg("fake-worker").arg("--log").arg(&log);
                if kind == Kind::FakeV03 {
                    c.arg("--v03-only");
                }
                c
            }
            Kind::PyV1 | Kind::PyV03 => {
                let venv = if kind == Kind::PyV1 {
                    "venv-v1"
                } else {
                    "venv-v03"
                };
                let python = peers_dir().join(venv).join("bin/python");
                if !python.exists() {
                    skip(&format!(
                        "Python a2a-sdk peer not set up ({} missing) — run tests/peers/setup.sh",
                        python.display()
                    ));
                    return None;
                }
                let mut c = Command::new(python);
                c.arg(repo().join("tests/peers/worker.py"))
                    .arg("--log")
                    .arg(&log)
                    .arg("--exit-on-stdin-eof");
                c
            }
        };
        cmd.args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("start worker");
        let stdout = child.stdout.take().expect("worker stdout");
        let mut first = String::new();
        BufReader::new(stdout)
            .read_line(&mut first)
            .expect("worker prints its URL");
        let url = first.trim().to_string();
        assert!(
            url.starts_with("http://127.0.0.1:"),
            "worker said {first:?}"
        );
        Some(Peer {
            url,
            child,
            log,
            _dir: dir,
        })
    }

    pub fn events(&self) -> Vec<Event> {
        read_events(&self.log)
    }

    /// Stops the worker now (lost-contact tests).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn read_events(log: &Path) -> Vec<Event> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Runs `a2a-mod <args>` in `home` as a user would, in the `cli` session unless `--session` says.
pub fn a2a(home: &TempHome, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    home.apply(&mut cmd)
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .args(args)
        .stdin(Stdio::null());
    cmd.output().expect("run a2a-mod")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a command that must succeed and returns its stdout.
#[track_caller]
pub fn ok(home: &TempHome, args: &[&str]) -> String {
    let o = a2a(home, args);
    assert!(
        o.status.success(),
        "a2a-mod {args:?} failed ({:?}): {}{}",
        o.status.code(),
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

/// Runs a command that must fail with exit 1 and one line on stderr; returns that line.
#[track_caller]
pub fn fails(home: &TempHome, args: &[&str]) -> String {
    let o = a2a(home, args);
    let err = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a2a-mod {args:?}: {}{err}",
        stdout(&o)
    );
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("a2a-mod: "), "{err:?}");
    assert!(!err.contains("panicked"), "{err}");
    err.trim_end().to_string()
}

/// `send --json` and its structured result.
#[track_caller]
pub fn send_json(home: &TempHome, alias: &str, message: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["send", alias, message, "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(home, &args)).expect("send --json prints JSON")
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
pub fn append_timing(a2a_home: &std::path::Path, keys: &str) {
    let cfg = a2a_home.join("config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap_or_default();
    text.push_str(&format!("\n[timing]\n{keys}\n"));
    std::fs::write(cfg, text).unwrap();
}

pub const SECOND: Duration = Duration::from_secs(1);

/// Like [`a2a`] with extra environment variables.
pub fn a2a_env(home: &TempHome, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    home.apply(&mut cmd)
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .envs(envs.iter().copied())
        .args(args)
        .stdin(Stdio::null());
    cmd.output().expect("run a2a-mod")
}
