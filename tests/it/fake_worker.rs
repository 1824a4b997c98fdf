//! `a2a-mod fake-worker` as a process: the URL is the first stdout line, the card is served, the
//! request log is written, SIGTERM exits 0, and bad flags fail with one line on stderr.

use crate::util::TestCommand;
use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Kills the child on drop so a failed assertion leaves no server behind.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn first_line(child: &mut Child) -> String {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the URL line within 20 s")
        .trim()
        .to_string()
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "did not exit within {within:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn serves_until_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let child = TestCommand::bare()
        .args(["fake-worker", "--log"])
        .arg(&log)
        .spawn();
    let mut running = Running(child);
    let url = first_line(&mut running.0);
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let _ = rustls::crypto::ring::default_provider().install_default();
    let card: serde_json::Value = reqwest::get(format!("{url}/.well-known/agent-card.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "fake");
    assert_eq!(card["url"], format!("{url}/"));
    let line = std::fs::read_to_string(&log).unwrap();
    assert!(line.contains(r#""method":"card""#), "{line}");

    let pid = i32::try_from(running.0.id()).unwrap();
    assert!(a2a_mod_os::process::signal(
        pid,
        a2a_mod_os::process::Signal::Term
    ));
    let status = wait_exit(&mut running.0, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
}

#[test]
fn unset_bearer_env_is_a_one_line_error() {
    let out = TestCommand::bare()
        .args([
            "fake-worker",
            "--bearer-env",
            "A2A_MOD_TEST_SURELY_UNSET_VAR",
        ])
        .env_remove("A2A_MOD_TEST_SURELY_UNSET_VAR")
        .output();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("a2a-mod: fake-worker: environment variable \"A2A_MOD_TEST_SURELY_UNSET_VAR\" is not set"),
        "{err}"
    );
}

#[test]
fn busy_port_is_a_one_line_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = TestCommand::bare()
        .args(["fake-worker", "--port", &port])
        .output();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
}
