//! The foundation through the user's commands: every script verb against the embedded
//! fake worker, the Python `a2a-sdk` peer and the `@a2a-js/sdk` peer, in v1 and v0.3-only mode; the inline window's GetTask
//! times as the worker saw them; OAuth expiry; one-line errors for bad input.

use crate::util::*;
use crate::workers::{Event, Kind, Peer};
use serde_json::Value;

fn task_state(home: &TempHome, id: &str) -> Option<String> {
    let v: Value = serde_json::from_str(&ok(home, &["tasks", "--json"])).ok()?;
    v.as_array()?
        .iter()
        .find(|t| t["task_id"] == id)
        .and_then(|t| t["state"].as_str().map(str::to_string))
}

/// Every verb of the script, through `send`, `task`, `cancel` and `tasks`, against one worker.
fn verbs(kind: Kind) {
    verbs_with(kind, &[])
}

fn verbs_with(kind: Kind, extra: &[&str]) {
    let Some(peer) = Peer::start(kind, extra) else {
        return;
    };
    let home = TempHome::new();
    // A 2 s inline window and a 0.5 s cadence: behaviour, not the seed's timing, is under test.
    fast_timing(&home, "[0.2, 0.3, 0.5, 1.0]", 0.5, 6);
    let added = ok(&home, &["worker", "add", "w", &peer.url]);
    assert!(added.contains("added worker \"w\""), "{added}");

    // Echo: completed inside the window, the text back at once.
    let r = send_json(&home, "w", "hello there", &[]);
    assert_eq!(r["state"], "completed", "{r}");
    assert_eq!(r["tracked"], false);
    assert!(r["text"].as_str().unwrap().contains("hello there"), "{r}");
    assert_eq!(r["worker"], "w");
    // `--json` is the tool's structured result, note included (docs/commands-and-tools.md).
    assert!(r["note"].as_str().unwrap().contains("completed"), "{r}");

    // A slow task that ends inside the window.
    let r = send_json(&home, "w", "slow 0.5 build", &[]);
    assert_eq!(r["state"], "completed", "{r}");
    assert!(r["text"].as_str().unwrap().contains("build"), "{r}");

    // A slow task that outlives the window: tracked, then completed by the background poller.
    let r = send_json(&home, "w", "slow 3 outside", &[]);
    assert!(
        matches!(r["state"].as_str(), Some("submitted" | "working")),
        "{r}"
    );
    assert_eq!(r["tracked"], true);
    let slow_id = r["taskId"].as_str().unwrap().to_string();
    wait_until(
        "the poller to see the slow task complete",
        20 * SECOND,
        || task_state(&home, &slow_id).as_deref() == Some("completed"),
    );
    let r: Value = serde_json::from_str(&ok(&home, &["task", &slow_id, "--json"])).unwrap();
    assert_eq!(r["state"], "completed");
    assert!(r["text"].as_str().unwrap().contains("outside"), "{r}");

    // Input required, answered on the same task id.
    let r = send_json(&home, "w", "ask Which colour?", &[]);
    assert_eq!(r["state"], "input-required", "{r}");
    assert_eq!(r["question"], "Which colour?");
    let ask_id = r["taskId"].as_str().unwrap().to_string();
    let human = ok(&home, &["task", &ask_id]);
    assert!(human.contains(&format!("taskId \"{ask_id}\"")), "{human}");
    let r = send_json(&home, "w", "blue", &["--task-id", &ask_id]);
    assert_eq!(r["taskId"], ask_id.as_str());
    if r["state"] != "completed" {
        wait_until("the answered task to complete", 20 * SECOND, || {
            task_state(&home, &ask_id).as_deref() == Some("completed")
        });
    }
    let r: Value = serde_json::from_str(&ok(&home, &["task", &ask_id, "--json"])).unwrap();
    assert!(r["text"].as_str().unwrap().contains("blue"), "{r}");

    // Fail, reject, auth-required.
    let r = send_json(&home, "w", "fail disk full", &[]);
    assert_eq!(r["state"], "failed", "{r}");
    let human = ok(&home, &["task", r["taskId"].as_str().unwrap()]);
    assert!(
        human.contains("failed") && human.contains("disk full"),
        "{human}"
    );
    assert_eq!(send_json(&home, "w", "reject", &[])["state"], "rejected");
    assert_eq!(send_json(&home, "w", "auth", &[])["state"], "auth-required");

    // Cancel a live task.
    let r = send_json(&home, "w", "slow 60 long", &[]);
    assert_eq!(r["tracked"], true, "{r}");
    let id = r["taskId"].as_str().unwrap().to_string();
    let c: Value = serde_json::from_str(&ok(&home, &["cancel", &id, "--json"])).unwrap();
    assert_eq!(c["state"], "canceled", "{c}");
    assert_eq!(c["tracked"], false);

    // An unknown task id: one line, exit 1.
    let e = fails(&home, &["task", "no-such-task"]);
    assert!(e.contains("no-such-task") && e.contains("tasks"), "{e}");

    // Everything is on record.
    let listed: Value = serde_json::from_str(&ok(&home, &["tasks", "--json"])).unwrap();
    // Nine sends, eight tasks: the answer continued the ask task.
    assert_eq!(listed.as_array().unwrap().len(), 8, "{listed}");
    assert!(peer.events().iter().any(|e| e.is_get()));
}

#[test]
fn verbs_fake_v1() {
    verbs(Kind::Fake)
}
#[test]
fn verbs_fake_v03() {
    verbs(Kind::FakeV03)
}
#[test]
fn verbs_python_v1() {
    verbs(Kind::PyV1)
}
#[test]
fn verbs_python_v03() {
    verbs(Kind::PyV03)
}
/// `@a2a-js/sdk`, streaming on: a2a-mod talks v1 to its hybrid card.
#[test]
fn verbs_js_v1() {
    verbs(Kind::Js)
}
/// `@a2a-js/sdk` with a v0.3-only card: `message/stream`, `tasks/get`, `tasks/cancel`.
#[test]
fn verbs_js_v03() {
    verbs_with(Kind::Js, &["--v03-only"])
}

/// The seed's inline window as the worker saw it: GetTask 0.5, 1.5, 3.5 and 7.5 s after the send
/// (±150 ms), then the hand-over.
fn inline_schedule(kind: Kind) {
    let Some(peer) = Peer::start(kind, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    // The seed's polling contract, so streaming is off: a stream stands in for polls.
    append_timing(&home.a2a_home(), "streaming = false");
    let r = send_json(&home, "w", "slow 30 timing", &[]);
    assert_eq!(r["tracked"], true, "{r}");
    let id = r["taskId"].as_str().unwrap().to_string();
    // A worker may log a request only once it has answered it: wait for the fourth GetTask.
    let gets_of = |events: &[Event]| {
        events
            .iter()
            .filter(|e| e.is_get() && e.task_id.as_deref() == Some(id.as_str()))
            .count()
    };
    wait_until("the worker to log the inline GetTasks", 10 * SECOND, || {
        gets_of(&peer.events()) >= 4
    });
    let events = peer.events();
    ok(&home, &["cancel", &id]);
    let sent = events
        .iter()
        .find(|e| e.is_send() && e.task_id.as_deref() == Some(id.as_str()))
        .expect("the worker saw the send");
    let gets: Vec<i64> = events
        .iter()
        .filter(|e| e.is_get() && e.task_id.as_deref() == Some(id.as_str()))
        .map(|e| e.at_ms - sent.at_ms)
        .collect();
    assert_eq!(gets.len(), 4, "GetTask offsets {gets:?}");
    for (got, want) in gets.iter().zip([500, 1500, 3500, 7500]) {
        assert!(
            (got - want).abs() <= 150,
            "GetTask offsets {gets:?}, want 500/1500/3500/7500 ±150"
        );
    }
}

#[test]
fn inline_schedule_fake() {
    inline_schedule(Kind::Fake)
}
#[test]
fn inline_schedule_python() {
    inline_schedule(Kind::PyV1)
}

/// A worker issuing 2-second OAuth tokens (while claiming an hour, so the client cannot refresh
/// ahead of time): a task polled across the expiry carries on, and after the 401 exactly one
/// fresh token is fetched.
#[test]
fn oauth_token_expiry() {
    let Some(peer) = Peer::start(
        Kind::Fake,
        &["--oauth-ttl", "2", "--oauth-claimed-ttl", "3600"],
    ) else {
        return;
    };
    let home = TempHome::new();
    fast_timing(&home, "[0.2]", 0.5, 6);
    let add = a2a_env(
        &home,
        &[
            "worker",
            "add",
            "w",
            &peer.url,
            "--oauth-client-id",
            "id",
            "--oauth-secret-env",
            "W_SECRET",
        ],
        &[("W_SECRET", "s3cret")],
    );
    assert!(add.status.success(), "{}", stderr(&add));
    let o = a2a_env(
        &home,
        &["send", "w", "slow 5 across", "--json"],
        &[("W_SECRET", "s3cret")],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let id = r["taskId"].as_str().unwrap().to_string();
    wait_until(
        "the task to complete across token expiry",
        30 * SECOND,
        || task_state(&home, &id).as_deref() == Some("completed"),
    );
    let events = peer.events();
    let first_401 = events
        .iter()
        .position(|e| e.status == 401)
        .expect("a poll hit the expired token");
    let after: Vec<&str> = events[first_401 + 1..]
        .iter()
        .take_while(|e| !(e.is_get() && e.status == 200))
        .map(|e| e.method.as_str())
        .collect();
    assert_eq!(
        after,
        ["token"],
        "after the 401: {after:?} (all: {events:?})"
    );
    // The secret never lands in the session store or the log.
    for f in crate::util::files_under(&home.a2a_home()) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cret"),
            "secret found in {}",
            f.display()
        );
    }
}

#[test]
fn unknown_worker_and_empty_message() {
    let home = TempHome::new();
    let e = fails(&home, &["send", "nope", "hello"]);
    assert!(e.contains("\"nope\"") && e.contains("worker list"), "{e}");
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    ok(&home, &["worker", "add", "w", &peer.url]);
    let e = fails(&home, &["send", "w", "  "]);
    assert!(e.contains("empty"), "{e}");
}

#[test]
fn malformed_config_is_one_line_naming_the_file() {
    let home = TempHome::new();
    let cfg = home.a2a_home().join("config.toml");
    std::fs::write(
        &cfg,
        "[workers.w]\nurl = \"http://127.0.0.1:1\"\ncolour = \"red\"\n",
    )
    .unwrap();
    let e = fails(&home, &["worker", "list"]);
    assert!(e.contains("colour") && e.contains("config.toml"), "{e}");
    std::fs::write(&cfg, "[workers.w\nurl = ").unwrap();
    let e = fails(&home, &["send", "w", "hi"]);
    assert!(e.contains("config.toml"), "{e}");
    // A broken file is never rewritten by `worker add`.
    let before = std::fs::read(&cfg).unwrap();
    fails(
        &home,
        &["worker", "add", "x", "http://127.0.0.1:1", "--no-check"],
    );
    assert_eq!(std::fs::read(&cfg).unwrap(), before);
}

/// `--extension` is checked, kept in the config and shown, and a hand-edited bad one is a line
/// naming the key (`crates/a2a/src/tests.rs` checks the headers every request then carries).
#[test]
fn worker_extensions_are_checked_kept_and_shown() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    let add = |extra: &[&str]| {
        let mut args = vec!["worker", "add", "w", peer.url.as_str()];
        args.extend_from_slice(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let bad = add(&["--extension", "not a uri"]);
    let e = fails(&home, &bad.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        e.contains("--extension") && e.contains("not an extension URI"),
        "{e}"
    );
    let good = add(&[
        "--extension",
        "https://ext.example/v1",
        "--extension",
        "urn:x:y",
    ]);
    ok(&home, &good.iter().map(String::as_str).collect::<Vec<_>>());
    let cfg = home.a2a_home().join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    assert!(
        text.contains(r#"extensions = ["https://ext.example/v1", "urn:x:y"]"#),
        "{text}"
    );
    let shown = ok(&home, &["worker", "show", "w"]);
    assert!(
        shown.contains("extensions asked for: https://ext.example/v1, urn:x:y"),
        "{shown}"
    );
    let v: Value = serde_json::from_str(&ok(&home, &["worker", "show", "w", "--json"])).unwrap();
    assert_eq!(v["extensions"][1], "urn:x:y");
    std::fs::write(&cfg, text.replace("urn:x:y", "a,b")).unwrap();
    let e = fails(&home, &["worker", "list"]);
    assert!(
        e.contains("workers.w.extensions") && e.contains("config.toml"),
        "{e}"
    );
}

/// `tasks --remote`: the worker's own ListTasks, newest first, in one context or all, as JSON and
/// as lines; a v0.3 worker, which has no ListTasks, gets one line saying so.
fn remote_tasks(kind: Kind) {
    let Some(peer) = Peer::start(kind, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let mut ids = Vec::new();
    for (script, ctx) in [
        ("echo one", None),
        ("echo two", Some("ctx-b")),
        ("echo three", Some("ctx-b")),
    ] {
        let mut args = vec!["--session", "remote"];
        if let Some(c) = ctx {
            args.extend(["--context-id", c]);
        }
        let r = send_json(&home, "w", script, &args);
        ids.push(r["taskId"].as_str().unwrap().to_string());
    }
    let listed = |extra: &[&str]| -> Vec<String> {
        let mut args = vec!["tasks", "--remote", "w", "--json"];
        args.extend_from_slice(extra);
        let v: Value = serde_json::from_str(&ok(&home, &args)).unwrap();
        let tasks = v["tasks"].as_array().unwrap_or_else(|| panic!("{v}"));
        tasks
            .iter()
            .map(|t| t["task_id"].as_str().unwrap().to_string())
            .collect()
    };
    let newest_first: Vec<String> = ids.iter().rev().cloned().collect();
    assert_eq!(listed(&[]), newest_first);
    assert_eq!(listed(&["--context-id", "ctx-b"]), newest_first[..2]);
    let lines = ok(&home, &["tasks", "--remote", "w"]);
    assert_eq!(lines.lines().count(), 3, "{lines}");
    assert!(
        lines
            .lines()
            .next()
            .unwrap()
            .starts_with(&format!("{}  completed  context ctx-b", ids[2])),
        "{lines}"
    );
}

#[test]
fn remote_tasks_fake() {
    remote_tasks(Kind::Fake)
}

#[test]
fn remote_tasks_python() {
    remote_tasks(Kind::PyV1)
}

#[test]
fn remote_tasks_js() {
    remote_tasks(Kind::Js)
}

#[test]
fn remote_tasks_of_a_v03_worker_is_one_line() {
    let Some(peer) = Peer::start(Kind::FakeV03, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let out = ok(&home, &["tasks", "--remote", "w"]);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.contains("speaks A2A 0.3, which has no ListTasks"),
        "{out}"
    );
}

/// Bad workers: no card, garbage, HTML, an oversized body. One line, exit 1, never a panic.
#[test]
fn misbehaving_workers_get_one_line_errors() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let home = TempHome::new();
    let no_card = rt.block_on(misbehaving(Misbehave::NoCard));
    let e = fails(&home, &["worker", "add", "x", &no_card]);
    assert!(e.contains("card"), "{e}");
    let e = fails(&home, &["worker", "add", "x", "http://127.0.0.1:9"]);
    assert!(e.contains("\"x\""), "{e}");
    for (what, m) in [
        ("garbage", Misbehave::Garbage),
        ("html", Misbehave::Html),
        ("huge", Misbehave::Huge),
    ] {
        let url = rt.block_on(misbehaving(m));
        ok(&home, &["worker", "add", what, &url]);
        let e = fails(&home, &["send", what, "hello"]);
        assert!(e.contains(&format!("\"{what}\"")), "{what}: {e}");
        assert!(e.len() < 400, "{what}: error too long: {e}");
    }
}

#[derive(Clone, Copy)]
enum Misbehave {
    NoCard,
    Garbage,
    Html,
    Huge,
}

/// A server with a valid v0.3 card whose JSON-RPC endpoint misbehaves; stops with the runtime.
async fn misbehaving(m: Misbehave) -> String {
    use axum::{Router, routing::get, routing::post};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let card = serde_json::json!({
        "name": "bad", "description": "misbehaves", "url": format!("{url}/rpc"),
        "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0", "version": "1",
        "capabilities": {}, "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": []
    });
    let body: &'static str = match m {
        Misbehave::NoCard | Misbehave::Garbage => "not json {{{",
        Misbehave::Html => "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
        Misbehave::Huge => "",
    };
    let rpc = post(move || async move {
        match m {
            Misbehave::Huge => format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"{}\"}}",
                "x".repeat(5 << 20)
            ),
            _ => body.to_string(),
        }
    });
    let app = match m {
        Misbehave::NoCard => Router::new(),
        _ => Router::new().route(
            "/.well-known/agent-card.json",
            get(move || {
                let card = card.clone();
                async move { axum::Json(card) }
            }),
        ),
    }
    .route("/rpc", rpc);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Short-lived writers (every command, hook and tool call opens, writes and closes the store)
/// and readers at the same time never see `database is locked` (many readers, writers
/// per session). Closing the last connection used to checkpoint under an exclusive lock.
#[test]
fn concurrent_commands_never_see_database_is_locked() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = std::sync::Arc::new(TempHome::new());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let mut handles = Vec::new();
    for i in 0..3 {
        let home = home.clone();
        handles.push(std::thread::spawn(move || {
            for j in 0..8 {
                ok(&home, &["send", "w", &format!("hello {i} {j}"), "--json"]);
            }
        }));
    }
    for _ in 0..2 {
        let home = home.clone();
        handles.push(std::thread::spawn(move || {
            for _ in 0..40 {
                ok(&home, &["tasks", "--json"]);
            }
        }));
    }
    for h in handles {
        h.join().expect("no command failed");
    }
    let listed: Value = serde_json::from_str(&ok(&home, &["tasks", "--json"])).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 24);
}
