//! `a2a-mod mcp` over the real binary's stdio, spoken to as Claude Code does (raw JSON-RPC: the
//! `server/discover` probe first, then `initialize`), against the embedded fake worker in process.
//! Covers the handshake, `tools/list`, each tool's happy path and bad inputs, the inline window,
//! progress, the budget against a `silent` worker, and a cancelled `send`.

use crate::util::{TempHome, append_config, ok};
use a2a_mod::testing::{FakeWorker, FakeWorkerOptions};
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::time::Instant;

pub(crate) const SESSION: &str = "b42c70ee-1f2a-4c1e-9b7e-0a1b2c3d4e5f";
/// Deadline for any one answer the test waits for (generous: debug build, 2 shared cores).
const WAIT: Duration = Duration::from_secs(30);

/// The probe Claude Code 2.1.332 sends first (docs/claude-code.md "MCP server").
fn discover_probe() -> Value {
    json!({"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{
        "io.modelcontextprotocol/protocolVersion":"2026-07-28",
        "io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.332"},
        "io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{},"url":{}},
            "extensions":{"io.modelcontextprotocol/tasks":{}}}}}})
}

/// The server process and what it has said so far.
pub(crate) struct Mcp {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Notifications (and any other message) read while waiting for a response.
    seen: Vec<Value>,
    next_id: i64,
}

impl Mcp {
    async fn spawn(home: &TempHome, env: &[(&str, &str)]) -> Mcp {
        let mut cmd = home.command();
        cmd.arg("mcp")
            .session(SESSION)
            .env_remove("MCP_TOOL_TIMEOUT")
            .env_remove("A2A_MOD_TOOL_TIMEOUT_MS")
            .envs(env.iter().copied())
            .stdin_pipe()
            .stderr(Stdio::inherit());
        // Spoken to asynchronously: tokio runs the command the harness set up.
        let mut cmd = Command::from(cmd.into_command());
        cmd.kill_on_drop(true);
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Mcp {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            next_id: 1,
        }
    }

    /// Spawns and does Claude Code's handshake: probe, `-32601`, `initialize`, `initialized`.
    pub(crate) async fn start(home: &TempHome, env: &[(&str, &str)]) -> Mcp {
        let mut m = Mcp::spawn(home, env).await;
        m.write(&discover_probe()).await;
        let probe = m.response(&json!("server-discover-probe-1")).await;
        assert_eq!(probe["error"]["code"], -32601, "{probe}");
        let init = m
            .request(
                "initialize",
                json!({"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},
                       "clientInfo":{"name":"claude-code","version":"2.1.332"}}),
            )
            .await;
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        m.notify("notifications/initialized", json!({})).await;
        m
    }

    async fn write(&mut self, v: &Value) {
        self.write_line(&serde_json::to_vec(v).unwrap()).await;
    }

    /// One line as is, however it is made (a test of what the server does with bad input).
    pub(crate) async fn write_line(&mut self, line: &[u8]) {
        self.stdin.write_all(line).await.unwrap();
        self.stdin.write_all(b"\n").await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.write(&json!({"jsonrpc":"2.0","method":method,"params":params}))
            .await;
    }

    /// Sends a request and returns its id.
    async fn send_request(&mut self, method: &str, params: Value) -> Value {
        let id = json!(self.next_id);
        self.next_id += 1;
        self.write(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        id
    }

    pub(crate) async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        self.response(&id).await
    }

    /// Reads until the response to `id`, keeping everything else in `seen`.
    pub(crate) async fn response(&mut self, id: &Value) -> Value {
        self.response_within(id, WAIT).await
    }

    /// [`Mcp::response`] with its own deadline (an answer that takes longer by its nature).
    pub(crate) async fn response_within(&mut self, id: &Value, wait: Duration) -> Value {
        let deadline = Instant::now() + wait;
        loop {
            let msg = self.next_message(deadline).await;
            if msg.get("id") == Some(id) && msg.get("method").is_none() {
                return msg;
            }
            self.seen.push(msg);
        }
    }

    async fn next_message(&mut self, deadline: Instant) -> Value {
        let line = tokio::time::timeout_at(deadline, self.lines.next_line())
            .await
            .expect("no message from the MCP server before the deadline")
            .unwrap()
            .expect("the MCP server closed stdout");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"))
    }

    /// `tools/call` with Claude Code's `_meta`; returns the `result` object.
    pub(crate) async fn call(&mut self, tool: &str, args: Value) -> Value {
        let id = self.call_start(tool, args, self.next_id).await;
        let r = self.response(&id).await;
        r.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{tool}: not a result: {r}"))
    }

    async fn call_start(&mut self, tool: &str, args: Value, token: i64) -> Value {
        self.send_request(
            "tools/call",
            json!({"name":tool,"arguments":args,
                   "_meta":{"claudecode/toolUseId":format!("toolu_{token}"),"progressToken":token}}),
        )
        .await
    }

    fn progress(&self, token: i64) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|m| {
                m["method"] == "notifications/progress" && m["params"]["progressToken"] == token
            })
            .map(|m| m["params"].clone())
            .collect()
    }
}

impl Drop for Mcp {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

pub(crate) fn structured(r: &Value) -> &Value {
    assert_eq!(r["isError"], false, "{r}");
    &r["structuredContent"]
}

/// The one line of an `isError` result.
fn error_line(r: &Value) -> String {
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.get("structuredContent").is_none(), "{r}");
    let text = r["content"][0]["text"].as_str().unwrap().to_string();
    assert!(!text.contains('\n'), "{text}");
    assert!(text.starts_with("a2a-mod: "), "{text}");
    text
}

/// Polls have to end fast once the test's fake worker is gone, so a poller the server started
/// does not outlive the test by long.
const QUICK_POLLER: &str = "poll_interval_s = 0.2\npoll_timeout_s = 1\nmax_failed_polls = 2";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_handshake_and_tools_list() {
    let home = TempHome::with_fake(None, "");
    let mut m = Mcp::start(&home, &[]).await;
    let list = m.request("tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["cancel", "send", "task", "tasks", "workers"]);
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap();

    let send = tool("send");
    assert_eq!(
        send["inputSchema"]["required"],
        json!(["worker", "message"])
    );
    assert!(send["inputSchema"]["properties"]["taskId"].is_object());
    let d = send["description"].as_str().unwrap();
    assert!(
        d.contains("do NOT poll") && d.contains("same worker and taskId"),
        "{d}"
    );
    for n in ["send", "task", "cancel"] {
        let out = &tool(n)["outputSchema"];
        for k in ["worker", "taskId", "contextId", "state", "tracked"] {
            assert!(out["properties"][k].is_object(), "{n} output lacks {k}");
        }
        assert_eq!(tool(n)["inputSchema"]["type"], "object");
    }
    for n in ["task", "tasks", "workers"] {
        let a = &tool(n)["annotations"];
        assert_eq!(a["readOnlyHint"], true, "{n}");
        assert_eq!(a["idempotentHint"], true, "{n}");
    }
    assert_eq!(tool("cancel")["annotations"]["destructiveHint"], true);
    assert_eq!(tool("send")["annotations"]["readOnlyHint"], false);

    // No worker yet: listed as none, with what to do.
    let r = m.call("workers", json!({})).await;
    assert_eq!(structured(&r)["workers"], json!([]));
    assert!(
        structured(&r)["note"]
            .as_str()
            .unwrap()
            .contains("worker add")
    );
    // A session that never sent anything gets no store.
    let r = m.call("tasks", json!({})).await;
    assert_eq!(structured(&r)["tasks"], json!([]));
    assert!(
        !home
            .a2a_home()
            .join("state/sessions")
            .join(format!("{SESSION}.db"))
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_happy_paths() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let home = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    let mut m = Mcp::start(&home, &[]).await;

    let r = m.call("workers", json!({})).await;
    let w = &structured(&r)["workers"][0];
    assert_eq!(w["alias"], "fake");
    assert!(w.get("error").is_none(), "{w}");
    assert!(!w["description"].as_str().unwrap().is_empty(), "{w}");

    // Ends at once: the result is the tool result.
    let r = m
        .call("send", json!({"worker":"fake","message":"hello there"}))
        .await;
    let s = structured(&r);
    assert_eq!(s["state"], "completed", "{s}");
    assert_eq!(s["tracked"], false);
    assert!(s["text"].as_str().unwrap().contains("hello there"), "{s}");
    assert!(
        s["note"].as_str().unwrap().contains("<worker-output"),
        "{s}"
    );
    assert_eq!(r["content"][0]["text"], s["note"]);
    let done_id = s["taskId"].as_str().unwrap().to_string();

    // Ends inside the window: progress is sent on the call's token while it waits.
    let token = m.next_id;
    let r = m
        .call("send", json!({"worker":"fake","message":"slow 1 build it"}))
        .await;
    let s = structured(&r);
    assert_eq!(s["state"], "completed", "{s}");
    assert_eq!(s["tracked"], false);
    let progress = m.progress(token);
    assert!(!progress.is_empty(), "no progress on token {token}");
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
    assert!(progress[0]["message"].as_str().unwrap().contains("fake"));

    // input-required comes back with the question; send with the same taskId answers it.
    let r = m
        .call(
            "send",
            json!({"worker":"fake","message":"ask Which colour?"}),
        )
        .await;
    let s = structured(&r).clone();
    assert_eq!(s["state"], "input-required", "{s}");
    assert!(
        s["question"].as_str().unwrap().contains("Which colour?"),
        "{s}"
    );
    assert!(s["note"].as_str().unwrap().contains("taskId"), "{s}");
    let ask_id = s["taskId"].as_str().unwrap();
    let r = m
        .call(
            "send",
            json!({"worker":"fake","message":"blue","taskId":ask_id}),
        )
        .await;
    let s = structured(&r);
    assert_eq!(s["state"], "completed", "{s}");
    assert_eq!(s["taskId"], ask_id);
    assert!(s["text"].as_str().unwrap().contains("blue"), "{s}");

    // task: GetTask now.
    let r = m.call("task", json!({"taskId": done_id})).await;
    assert_eq!(structured(&r)["state"], "completed");

    // tasks: this session's tasks, compact.
    let r = m.call("tasks", json!({})).await;
    let s = structured(&r);
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&done_id.as_str()) && ids.contains(&ask_id),
        "{s}"
    );
    assert!(s["summary"].as_str().unwrap().contains("ended"), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_hand_over_then_cancel() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let timing = format!("inline_polls_s = [0.2, 0.2]\n{QUICK_POLLER}");
    let home = TempHome::with_fake(Some(&fw.url), &timing);
    let mut m = Mcp::start(&home, &[]).await;

    let r = m
        .call(
            "send",
            json!({"worker":"fake","message":"slow 60 long job"}),
        )
        .await;
    let s = structured(&r).clone();
    assert_eq!(s["tracked"], true, "{s}");
    assert!(
        ["submitted", "working"].contains(&s["state"].as_str().unwrap()),
        "{s}"
    );
    let note = s["note"].as_str().unwrap();
    assert!(
        note.contains("Do not poll") && note.contains("a message will come"),
        "{note}"
    );
    let id = s["taskId"].as_str().unwrap();

    let r = m.call("tasks", json!({})).await;
    let t = &structured(&r)["tasks"][0];
    assert_eq!(t["taskId"], id);
    assert_eq!(t["status"], "running");
    assert_eq!(t["message"], "slow 60 long job");

    let r = m.call("cancel", json!({"taskId": id})).await;
    let s = structured(&r);
    assert_eq!(s["state"], "canceled", "{s}");
    assert_eq!(s["tracked"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_bad_inputs_are_one_line_tool_errors() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let home = TempHome::with_fake(Some(&fw.url), "");
    let mut m = Mcp::start(&home, &[]).await;

    let r = m
        .call("send", json!({"worker":"nope","message":"hi"}))
        .await;
    assert!(error_line(&r).contains("worker \"nope\" not found"), "{r}");
    let r = m
        .call("send", json!({"worker":"fake","message":"   "}))
        .await;
    assert!(error_line(&r).contains("message is empty"), "{r}");
    let r = m
        .call(
            "send",
            json!({"worker":"fake","message":"hi","taskId":"no-such-task"}),
        )
        .await;
    assert!(error_line(&r).contains("not in this session"), "{r}");
    for tool in ["task", "cancel"] {
        let r = m.call(tool, json!({"taskId":"no-such-task"})).await;
        assert!(
            error_line(&r).contains("not in this session"),
            "{tool}: {r}"
        );
        let r = m.call(tool, json!({"taskId":""})).await;
        assert!(error_line(&r).contains("taskId is empty"), "{tool}: {r}");
    }
    // An unreachable worker is listed with its error, not a failed call.
    let cfg = home.a2a_home().join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        format!("{text}\n[workers.down]\nurl = \"http://127.0.0.1:9\"\n"),
    )
    .unwrap();
    let r = m.call("workers", json!({})).await;
    let ws = structured(&r)["workers"].as_array().unwrap().clone();
    let down = ws.iter().find(|w| w["alias"] == "down").unwrap();
    assert!(
        down["error"].as_str().unwrap().starts_with("a2a-mod: "),
        "{down}"
    );
    assert!(
        ws.iter()
            .any(|w| w["alias"] == "fake" && w.get("error").is_none())
    );
}

/// A worker that never answers GetTask must not hold Claude's turn past the host's timeout: the
/// window stops early and the request in flight is cut at the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_silent_worker_released_at_budget() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let home = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    let mut m = Mcp::start(&home, &[("MCP_TOOL_TIMEOUT", "3000")]).await;
    let started = Instant::now();
    let r = m
        .call("send", json!({"worker":"fake","message":"silent"}))
        .await;
    let took = started.elapsed();
    assert!(took < Duration::from_millis(3000), "took {took:?}");
    let s = structured(&r);
    assert_eq!(s["tracked"], true, "{s}");
    assert!(s["note"].as_str().unwrap().contains("Do not poll"), "{s}");
    // The worker was asked at least once inside the window.
    assert!(
        fw.events()
            .iter()
            .any(|e| e.method == "GetTask" || e.method == "tasks/get")
    );
    drop(fw);
}

/// Claude Code cancels a call on Escape or at its timeout (`notifications/cancelled`): the server
/// stops waiting at once, sends no response, and the task stays tracked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_cancelled_send_keeps_task_tracked() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let home = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    let mut m = Mcp::start(&home, &[]).await;
    let token = m.next_id;
    let id = m
        .call_start(
            "send",
            json!({"worker":"fake","message":"slow 60 cancelled job"}),
            token,
        )
        .await;
    // Wait until the inline window runs (progress from its first GetTask), then cancel as Claude
    // Code does.
    let deadline = Instant::now() + WAIT;
    let in_window = |p: &Value| {
        p["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("waiting for")
    };
    while !m.progress(token).iter().any(in_window) {
        let msg = m.next_message(deadline).await;
        assert_ne!(
            msg.get("id"),
            Some(&id),
            "send answered before it could be cancelled: {msg}"
        );
        m.seen.push(msg);
    }
    m.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "AbortError: user-cancel"}),
    )
    .await;
    // The next call is answered at once, and no response ever comes for the cancelled one.
    let started = Instant::now();
    let r = m.call("tasks", json!({})).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let t = &structured(&r)["tasks"][0];
    assert_eq!(t["status"], "running", "{t}");
    assert_eq!(t["message"], "slow 60 cancelled job");
    assert!(
        !m.seen
            .iter()
            .any(|msg| msg.get("id") == Some(&id) && msg.get("method").is_none())
    );
    let db = home
        .a2a_home()
        .join("state/sessions")
        .join(format!("{SESSION}.db"));
    assert!(db.exists());
}

/// A cancel that arrives while the message is still being sent: the worker may already have the
/// task, so it is still recorded and tracked (nobody would announce it otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_cancel_during_send_still_tracks_the_task() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let home = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    let mut m = Mcp::start(&home, &[]).await;
    let token = m.next_id;
    let id = m
        .call_start(
            "send",
            json!({"worker":"fake","message":"slow 60 early cancel"}),
            token,
        )
        .await;
    m.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "AbortError: user-cancel"}),
    )
    .await;
    let deadline = Instant::now() + WAIT;
    loop {
        let r = m.call("tasks", json!({})).await;
        let t = &structured(&r)["tasks"][0];
        if t["status"] == "running" {
            assert_eq!(t["message"], "slow 60 early cancel");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the task was never recorded: {r}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The server restarts the session's poller when it dies (`kill -9`) while tasks are live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_replaces_a_killed_poller() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    // A slow cadence keeps the poller busy without ending the task.
    let home = TempHome::with_fake(Some(&fw.url), "inline_polls_s = [0.1]\npoll_interval_s = 1");
    let mut m = Mcp::start(&home, &[]).await;
    let r = m
        .call(
            "send",
            json!({"worker":"fake","message":"slow 120 keep going"}),
        )
        .await;
    assert_eq!(structured(&r)["tracked"], true);
    let poller_pid = || crate::poller::recorded_poller_pid(&home.a2a_home(), SESSION);
    let deadline = Instant::now() + WAIT;
    let first = loop {
        if let Some(pid) = poller_pid() {
            break pid;
        }
        assert!(Instant::now() < deadline, "no poller started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(a2a_mod_os::process::signal(
        first,
        a2a_mod_os::process::Signal::Kill
    ));
    let deadline = Instant::now() + WAIT;
    let second = loop {
        if let Some(pid) = poller_pid().filter(|p| *p != first) {
            break pid;
        }
        assert!(
            Instant::now() < deadline,
            "the killed poller was not replaced"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Leave nothing running once the test ends.
    a2a_mod_os::process::signal(second, a2a_mod_os::process::Signal::Kill);
    drop(m);
}

/// A worker's permission question (serve's line) is never answered by Claude alone unless the
/// user chose that (`[asks] approvals`): by default, in an attended session, Claude's reply is
/// not sent and Claude is told to let the person answer (`a2a-mod approve`); with nobody there
/// (`claude -p`, the Agent SDKs) it is denied with the reason; `approvals = "claude"` sends
/// Claude's reply; a worker's own `approvals = "deny"` always denies. A plain question is
/// Claude's to answer as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workers_permission_question_is_a_persons_to_answer() {
    let fw = FakeWorker::start(FakeWorkerOptions::default())
        .await
        .unwrap();
    let asks = "ask Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny (with a reason)";
    // Claude asks the worker, then answers "allow" itself; what the worker got is its answer.
    async fn answer(m: &mut Mcp, asks: &str) -> (String, Value) {
        let r = m
            .call("send", json!({"worker": "fake", "message": asks}))
            .await;
        let s = structured(&r).clone();
        assert_eq!(s["state"], "input-required", "{s}");
        let id = s["taskId"].as_str().unwrap().to_string();
        let r = m
            .call(
                "send",
                json!({"worker": "fake", "message": "allow", "taskId": id}),
            )
            .await;
        (id, r)
    }

    let home = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    let mut m = Mcp::start(&home, &[]).await;
    let (id, r) = answer(&mut m, asks).await;
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Nothing was sent:"), "{text}");
    assert!(
        text.contains(&format!("a2a-mod approve {id} allow")),
        "{text}"
    );
    assert!(text.contains("Bash rm -rf build"), "{text}");
    let t = m.call("task", json!({"taskId": id})).await;
    assert_eq!(
        structured(&t)["state"],
        "input-required",
        "the worker got nothing"
    );
    // A plain question stays Claude's.
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "ask Which colour?"}),
        )
        .await;
    let q = structured(&r)["taskId"].as_str().unwrap().to_string();
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "blue", "taskId": q}),
        )
        .await;
    assert_eq!(structured(&r)["state"], "completed");
    drop(m);

    // Nobody there: denied, with the reason the worker's Claude reads.
    let headless = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    let mut m = Mcp::start(&headless, &[("CLAUDE_CODE_ENTRYPOINT", "sdk-cli")]).await;
    let (_, r) = answer(&mut m, asks).await;
    let s = structured(&r);
    assert_eq!(s["state"], "completed", "{s}");
    assert!(
        s["text"]
            .as_str()
            .unwrap()
            .contains("deny: no one was there to approve it"),
        "{s}"
    );
    drop(m);

    // The user let Claude answer.
    let claude = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    append_config(&claude.a2a_home(), "\n[asks]\napprovals = \"claude\"\n");
    let mut m = Mcp::start(&claude, &[]).await;
    let (_, r) = answer(&mut m, asks).await;
    let s = structured(&r);
    assert_eq!(s["state"], "completed", "{s}");
    assert!(s["text"].as_str().unwrap().contains("allow"), "{s}");
    assert!(!s["text"].as_str().unwrap().contains("deny"), "{s}");
    drop(m);

    // One worker always denied, whatever [asks] says.
    let deny = TempHome::with_fake(Some(&fw.url), QUICK_POLLER);
    append_config(&deny.a2a_home(), "\n[asks]\napprovals = \"claude\"\n");
    ok(
        &deny,
        &["worker", "add", "fake", &fw.url, "--approvals", "deny"],
    );
    let mut m = Mcp::start(&deny, &[]).await;
    let (_, r) = answer(&mut m, asks).await;
    let s = structured(&r);
    assert!(
        s["text"]
            .as_str()
            .unwrap()
            .contains("asks.approvals = \"deny\""),
        "{s}"
    );
}
