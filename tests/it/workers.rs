//! Workers for integration tests, run as processes the way users run them: the embedded fake
//! worker (`a2a-mod fake-worker`) and the Python `a2a-sdk` peer (`tests/peers/worker.py`), each in
//! v1 and v0.3-only mode, and the `@a2a-js/sdk` peer (`tests/peers/js/worker.mjs`: v1 and v0.3 on
//! one endpoint, streaming on; `--v03-only` makes its card list v0.3 alone). All log every request
//! as one JSON line, so tests read one format. Every worker is killed when its `Peer` drops.

use crate::util::{TestCommand, skip};
use serde::Deserialize;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Fake,
    FakeV03,
    PyV1,
    PyV03,
    /// `tests/peers/js/worker.mjs` on `@a2a-js/sdk` (pass `--v03-only` to make a2a-mod talk v0.3).
    Js,
    /// `tests/peers/adk_worker.py`: a scripted Google ADK agent behind ADK's own A2A server.
    Adk,
    /// `tests/peers/maf_worker.py`: a scripted Microsoft Agent Framework agent behind
    /// `agent-framework-a2a`'s executor (pass `--stream` for its `stream=True`).
    Maf,
}

impl Kind {
    /// The venv `tests/peers/setup.sh` builds for a Python peer, and its script.
    fn python(self) -> Option<(&'static str, &'static str)> {
        match self {
            Kind::PyV1 => Some(("venv-v1", "worker.py")),
            Kind::PyV03 => Some(("venv-v03", "worker.py")),
            Kind::Adk => Some(("venv-adk", "adk_worker.py")),
            Kind::Maf => Some(("venv-maf", "maf_worker.py")),
            _ => None,
        }
    }
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

/// The Python peer logs an HTTP+JSON request as `VERB /rest/…` (`--rest`, `--rest-only`).
impl Event {
    pub fn is_send(&self) -> bool {
        matches!(self.method.as_str(), "SendMessage" | "message/send")
            || self.method.ends_with("/message:send")
            || self.is_stream_send()
    }
    pub fn is_stream_send(&self) -> bool {
        matches!(
            self.method.as_str(),
            "SendStreamingMessage" | "message/stream"
        ) || self.method.ends_with("/message:stream")
    }
    pub fn is_get(&self) -> bool {
        matches!(self.method.as_str(), "GetTask" | "tasks/get")
            || (self.method.starts_with("GET ") && self.method.contains("/tasks/"))
    }
    pub fn is_subscribe(&self) -> bool {
        matches!(
            self.method.as_str(),
            "SubscribeToTask" | "tasks/resubscribe"
        ) || self.method.ends_with(":subscribe")
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

/// Where `tests/peers/setup.sh` put the Python venvs and the JS packages.
pub fn peers_dir() -> PathBuf {
    std::env::var_os("A2A_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target/peers"))
}

/// The `node` that runs the JS peers (as setup.sh reads it: `A2A_PEERS_NODE`, a path or a name
/// looked up on PATH), once `@a2a-js/sdk` is set up; `None` after a SKIPPED line otherwise.
pub fn js_peers() -> Option<PathBuf> {
    let node = match std::env::var_os("A2A_PEERS_NODE") {
        Some(v) if Path::new(&v).components().count() > 1 => Some(PathBuf::from(v)),
        Some(v) => crate::util::which(&v.to_string_lossy()),
        None => crate::util::which("node"),
    };
    let Some(node) = node.filter(|n| n.exists()) else {
        skip(
            "Node.js not found (node on PATH or A2A_PEERS_NODE) — install Node.js >= 20, then run tests/peers/setup.sh",
        );
        return None;
    };
    let sdk = peers_dir().join("js/node_modules/@a2a-js/sdk");
    if !sdk.exists() {
        skip(&format!(
            "@a2a-js/sdk peer not set up ({} missing) — run tests/peers/setup.sh",
            sdk.display()
        ));
        return None;
    }
    Some(node)
}

impl Peer {
    /// Starts a worker of `kind`; `None` (after a SKIPPED line) when its runtime is missing.
    pub fn start(kind: Kind, extra: &[&str]) -> Option<Peer> {
        let dir = tempfile::tempdir().expect("peer dir");
        let log = dir.path().join("requests.jsonl");
        let mut cmd = match kind {
            Kind::Fake | Kind::FakeV03 => {
                let mut c = TestCommand::bare();
                c.arg("fake-worker").arg("--log").arg(&log);
                if kind == Kind::FakeV03 {
                    c.arg("--v03-only");
                }
                c
            }
            Kind::PyV1 | Kind::PyV03 | Kind::Adk | Kind::Maf => {
                let (venv, script) = kind.python().expect("a Python peer");
                let python = peers_dir().join(venv).join("bin/python");
                if !python.exists() {
                    skip(&format!(
                        "Python peer {script} not set up ({} missing) — run tests/peers/setup.sh",
                        python.display()
                    ));
                    return None;
                }
                let mut c = TestCommand::program(python);
                c.arg(repo().join("tests/peers").join(script))
                    .arg("--log")
                    .arg(&log)
                    .arg("--exit-on-stdin-eof");
                c
            }
            Kind::Js => {
                let node = js_peers()?;
                let modules = peers_dir().join("js");
                let mut c = TestCommand::program(node);
                c.arg(repo().join("tests/peers/js/worker.mjs"))
                    .arg("--modules")
                    .arg(&modules)
                    .arg("--log")
                    .arg(&log)
                    .arg("--exit-on-stdin-eof");
                c
            }
        };
        // Stdin stays open: the Python and JS peers exit when it closes, with the `Peer`.
        let mut child = cmd
            .args(extra)
            .stdin_pipe()
            .stderr(Stdio::inherit())
            .spawn();
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
