//! Regressions, through the built binary: one file, one test per bug.
//!
//! The rule, from now on: every bug found gets a test here that fails before its fix, named
//! after what broke (`tasks_failed_while_…`), with a doc comment that names the feature it
//! broke, what broke and how it was seen (no tracker number: it means nothing to a reader). A regression test sets
//! up exactly the state that broke, deterministically (a test seam, a FIFO, a file written by
//! hand), never a timing loop that hopes to hit it. It runs the binary through `crate::util`
//! like every other module.

use crate::poller;
use crate::util::{SECOND, TempHome, ok, wait_until};
use crate::workers::{Kind, Peer};
use a2a_mod::testing::now_ms;
use serde_json::Value;

/// The states a reader can meet while a writer creates a store, each set up exactly: an empty
/// file (the writer has created it 0600 and SQLite has not written yet), a WAL database with no
/// schema, and a migration still uncommitted. Each reads as "no tasks", never an error.
#[test]
fn a_store_being_created_reads_as_empty() {
    let home = TempHome::new();
    let sessions = home.a2a_home().join("state/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let db = sessions.join("new.db");
    let no_tasks = |why: &str| {
        let out = ok(&home, &["tasks", "--session", "new"]);
        assert_eq!(out.trim(), "no tasks", "{why}");
        let json = ok(&home, &["tasks", "--session", "new", "--json"]);
        assert_eq!(json.trim(), "[]", "{why}");
    };
    std::fs::write(&db, b"").unwrap();
    no_tasks("empty file");
    let c = rusqlite::Connection::open(&db).unwrap();
    let _: String = c
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    no_tasks("WAL, no schema");
    c.execute_batch("BEGIN IMMEDIATE; CREATE TABLE tasks (seq INTEGER); PRAGMA user_version = 1;")
        .unwrap();
    no_tasks("migration not committed");
    c.execute_batch("ROLLBACK").unwrap();
}

/// Results from real frameworks: an agent that answers in a `working` status message and then completes with
/// no message and no artifact (Microsoft Agent Framework's default) was reported `completed`
/// with no text and nothing saved: the answer was only in the history, which polls ask for
/// with `historyLength: 0`. Now the answer is the last agent message of the history (asked for
/// when an ended task says nothing), or of the stream, and it is saved like an artifact.
/// The fake worker's `quiet` verb answers exactly so; polled and streamed.
#[test]
fn an_answer_left_only_in_the_history_arrives_and_is_saved() {
    for streaming in [false, true] {
        let extra: &[&str] = if streaming {
            &["--streaming", "on"]
        } else {
            &[]
        };
        let Some(peer) = Peer::start(Kind::Fake, extra) else {
            return;
        };
        let home = TempHome::new();
        ok(&home, &["worker", "add", "w", &peer.url]);
        let r = crate::util::send_json(&home, "w", "quiet 0.8 forty-two", &["--session", "r17q"]);
        assert_eq!(r["state"], "completed", "streaming {streaming}: {r}");
        assert_eq!(r["text"], "forty-two", "streaming {streaming}: {r}");
        let saved: Vec<String> = r["artifacts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k["path"].as_str())
            .map(|p| std::fs::read_to_string(p).unwrap())
            .collect();
        assert_eq!(saved, ["forty-two"], "streaming {streaming}: {r}");
    }
}

/// Results from real frameworks: a message to a task that already ended is answered `-32004` ("task is
/// in terminal state", a2a-sdk 1.x) on the streaming send; that was read as "streaming
/// unsupported", and the worker was polled for the rest of the Claude session. And the error
/// line said "check that <url> is an A2A agent", though the agent had answered. Now it is the
/// agent's own error, and the next send in the same MCP server still streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_error_on_a_stream_call_leaves_streaming_on() {
    use crate::mcp::{Mcp, structured};
    let Some(peer) = Peer::start(Kind::PyV1, &[]) else {
        return;
    };
    let home = TempHome::with_fake(Some(&peer.url), "");
    let mut m = Mcp::start(&home, &[]).await;
    let first = m
        .call(
            "send",
            serde_json::json!({"worker": "fake", "message": "hello"}),
        )
        .await;
    let id = structured(&first)["taskId"].as_str().unwrap().to_string();
    let again = m
        .call(
            "send",
            serde_json::json!({"worker": "fake", "message": "more", "taskId": id}),
        )
        .await;
    assert_eq!(again["isError"], true, "{again}");
    let line = again["content"][0]["text"].as_str().unwrap();
    assert!(line.contains("the worker answered: \""), "{line}");
    assert!(line.contains("(error -32004)"), "{line}");
    assert!(!line.contains("is an A2A agent"), "{line}");
    let before = peer.events().len();
    let next = m
        .call(
            "send",
            serde_json::json!({"worker": "fake", "message": "hi again"}),
        )
        .await;
    assert_eq!(structured(&next)["state"], "completed", "{next}");
    let methods: Vec<String> = peer.events()[before..]
        .iter()
        .filter(|e| e.is_send())
        .map(|e| e.method.clone())
        .collect();
    assert_eq!(methods, ["SendStreamingMessage"], "still streamed");
}

/// Results from real frameworks: `send` refused an empty text even with `data`, and some agents resume an
/// interrupted task only from a message holding nothing but a data part. Now such a message goes
/// out with no text part at all (the fake worker echoes what arrived); nothing at all stays
/// refused.
#[test]
fn a_message_of_data_alone_has_no_text_part() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let out = ok(
        &home,
        &[
            "send",
            "w",
            "--data",
            r#"{"interruptResponse":{"ok":true}}"#,
            "--json",
        ],
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["state"], "completed", "{r}");
    let echo: Value = serde_json::from_str(r["text"].as_str().unwrap()).unwrap();
    let parts = echo["parts"].as_array().unwrap();
    assert_eq!(parts.len(), 1, "{echo}");
    assert_eq!(parts[0]["kind"], "data", "{echo}");
    assert_eq!(parts[0]["data"]["interruptResponse"]["ok"], true, "{echo}");
    let e = crate::util::fails(&home, &["send", "w", " "]);
    assert!(e.contains("message is empty"), "{e}");
}

/// Results from real frameworks: a follow-up (same `taskId`) to an input-required task, answered by the worker
/// on a new task id (a worker that ignores `taskId`, as FastA2A does), was delivered, but the
/// asked task stayed "waiting" for good: the status line read `? … waiting` for the rest of the
/// session. Now it waits no more, and Claude is told which task carried the answer.
#[test]
fn a_question_answered_on_a_new_task_waits_no_more() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let session = ["--session", "r17m"];
    let r = crate::util::send_json(&home, "w", "ask-elsewhere which colour?", &session);
    assert_eq!(r["state"], "input-required", "{r}");
    let asked = r["taskId"].as_str().unwrap().to_string();
    let a = crate::util::send_json(
        &home,
        "w",
        "blue",
        &["--session", "r17m", "--task-id", &asked],
    );
    assert_eq!(a["state"], "completed", "{a}");
    assert_ne!(a["taskId"], asked.as_str(), "{a}");
    assert_eq!(a["text"], "you said: blue", "{a}");
    let note = a["note"].as_str().unwrap();
    assert!(
        note.contains(&format!("task {asked} no longer waits"))
            && note.contains(a["taskId"].as_str().unwrap()),
        "{note}"
    );
    let listed = ok(&home, &["tasks", "--session", "r17m"]);
    let asked_line = listed
        .lines()
        .find(|l| l.contains(&asked))
        .unwrap_or_default();
    assert!(asked_line.contains("answered on another task"), "{listed}");
    let line = home
        .command()
        .arg("statusline")
        .stdin(r#"{"session_id":"r17m"}"#)
        .ok();
    assert!(!line.contains("waiting"), "{line:?}");
    // Asked about later (the worker still shows it input-required): where its answer went,
    // never an invitation to answer it again.
    let old = home
        .command()
        .args(["task", &asked, "--session", "r17m", "--json"])
        .json();
    let note = old["note"].as_str().unwrap();
    assert!(
        note.contains("waits for nothing") && note.contains(a["taskId"].as_str().unwrap()),
        "{old}"
    );
    assert!(
        !note.contains("needs input") && !note.contains("To answer"),
        "{old}"
    );
    assert!(
        old.get("question").is_none() && old["tracked"] == false,
        "{old}"
    );
    // Each row carries its own message: the new task's is the answer sent.
    let rows: Value =
        serde_json::from_str(&ok(&home, &["tasks", "--session", "r17m", "--json"])).unwrap();
    let message_of = |id: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|t| t["task_id"] == id)
            .map(|t| t["message"].clone())
    };
    assert_eq!(
        message_of(&asked),
        Some(Value::from("ask-elsewhere which colour?"))
    );
    assert_eq!(
        message_of(a["taskId"].as_str().unwrap()),
        Some(Value::from("blue"))
    );
}

/// Results from real frameworks: some servers cancel a task when the `message/stream` request that created it
/// disconnects, and a2a-mod closed it at the end of the inline window. The MCP server now keeps
/// reading the stream after the tool call returns (and holds the task's stream lease, so the
/// poller opens no second one): the task runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_that_made_a_task_stays_open_after_the_window() {
    use crate::mcp::{Mcp, SESSION, structured};
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on", "--cancel-on-disconnect"])
    else {
        return;
    };
    let home = TempHome::with_fake(Some(&peer.url), "");
    let mut m = Mcp::start(&home, &[]).await;
    let r = m
        .call(
            "send",
            serde_json::json!({"worker": "fake", "message": "slow 9 the end"}),
        )
        .await;
    let s = structured(&r);
    assert_eq!(s["tracked"], true, "{s}");
    let id = s["taskId"].as_str().unwrap().to_string();
    let a2a = home.a2a_home();
    let t = tokio::task::spawn_blocking(move || {
        crate::util::ended_row(&a2a, SESSION, &id, 30 * SECOND)
    })
    .await
    .unwrap();
    assert_eq!(t.state.as_str(), "completed", "{t:?}");
    assert_eq!(t.result.as_deref(), Some("done: the end"), "{t:?}");
    let subs = peer
        .events()
        .iter()
        .filter(|e| e.method == "SubscribeToTask")
        .count();
    assert_eq!(subs, 0, "the poller opened no second stream");
    drop(m);
}

/// Results from real frameworks: `a2a-mod send` from a shell closed its stream as the command
/// exited, and Mastra, which cancels a task whose creating stream disconnects, ended a task
/// `canceled` that nobody had cancelled. The command's send now runs in a child that keeps the
/// stream after the command has printed and exited (`send --keeper`): the command's output ends
/// with the window, the task runs to its end, and neither a cancel nor a second stream reaches
/// the worker. Ending the command during the window (Ctrl-C) hands the task over the same way.
#[test]
fn a_cli_send_keeps_its_stream_after_the_command_exits() {
    use crate::util::{ended_row, task_row};
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on", "--cancel-on-disconnect"])
    else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let out = home
        .command()
        .session("r31k")
        .args(["send", "w", "slow 9 the end", "--json"])
        .ok();
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["tracked"], true, "{r}");
    let id = r["taskId"].as_str().unwrap().to_string();
    let row = task_row(&home.a2a_home(), "r31k", &id).unwrap();
    assert!(
        row.ended_ms.is_none(),
        "the command's output ended with the window, not the task: {row:?}"
    );
    let t = ended_row(&home.a2a_home(), "r31k", &id, 30 * SECOND);
    assert_eq!(t.state.as_str(), "completed", "{t:?}");
    assert_eq!(t.result.as_deref(), Some("done: the end"), "{t:?}");

    // Ctrl-C in the window: the command ends at once, printing nothing; the task goes on.
    let sends = |p: &Peer| {
        p.events()
            .iter()
            .filter(|e| e.method == "SendStreamingMessage")
            .count()
    };
    let child = home
        .command()
        .session("r31c")
        .args(["send", "w", "slow 6 interrupted", "--json"])
        .spawn();
    wait_until("the worker to get the send", 20 * SECOND, || {
        sends(&peer) == 2
    });
    a2a_mod_os::process::signal(child.id() as i32, a2a_mod_os::process::Signal::Int);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), None, "ended by the signal: {o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let tracked = || -> Option<String> {
        let rows: Value =
            serde_json::from_str(&ok(&home, &["tasks", "--session", "r31c", "--json"])).ok()?;
        Some(rows.get(0)?["task_id"].as_str()?.to_string())
    };
    wait_until("the task to be tracked", 20 * SECOND, || {
        tracked().is_some()
    });
    let id = tracked().unwrap();
    let t = ended_row(&home.a2a_home(), "r31c", &id, 30 * SECOND);
    assert_eq!(t.state.as_str(), "completed", "{t:?}");
    assert_eq!(t.result.as_deref(), Some("done: interrupted"), "{t:?}");

    let others: Vec<_> = peer
        .events()
        .into_iter()
        .filter(|e| e.method == "CancelTask" || e.method == "SubscribeToTask")
        .collect();
    assert!(others.is_empty(), "no cancel, no second stream: {others:?}");
}

/// Results from real frameworks: a hook hands Claude at most a dozen results; the rest wait for the next hook,
/// but the context did not say more were coming, so Claude could take them for lost. Now the
/// first hook says how many wait and that they come next.
#[test]
fn a_hook_that_holds_results_back_says_they_come_next() {
    use a2a_mod::testing::task::TaskState;
    let home = TempHome::new();
    let s = crate::wake::store(&home);
    for i in 0..14 {
        let id = format!("t-{i:02}");
        crate::wake::live(&s, "w", &id);
        crate::wake::end(&s, "w", &id, TaskState::Completed, Some("ok"));
    }
    let input = crate::wake::prompt_input(crate::wake::SESSION);
    let first = home
        .command()
        .args(["hook", "user-prompt-submit"])
        .stdin(input.clone())
        .ok();
    assert!(
        first.contains("[2 more delegated tasks ended and have results not shown here yet: they come with the next notice like this one (or call the tasks tool now).]"),
        "{first}"
    );
    let second = home
        .command()
        .args(["hook", "user-prompt-submit"])
        .stdin(input)
        .ok();
    assert!(second.contains("t-13"), "{second}");
    assert!(!second.contains("more delegated tasks"), "{second}");
}

/// The background poller, while a poll hangs (a `silent` worker): it must sleep. The task's row
/// still looks due until the answer comes, and the poller's loop slept until "the next due poll",
/// so it spun for the whole poll timeout, waking every millisecond: 27% of a core in a debug
/// build, seen in `top` beside a hung worker (0 now).
#[test]
fn poller_idles_while_a_poll_hangs() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    let s = poller::sid("idle");
    let _guard = poller::NoOrphans(vec![s.clone()]);
    poller::ok(&home, &s, &["worker", "add", "w", &peer.url]);
    poller::timing(
        &home,
        "inline_polls_s = [0.1]\npoll_interval_s = 0.2\npoll_timeout_s = 4\nmax_failed_polls = 1",
    );
    let id = poller::send_tracked(&home, &s, "w", "silent");
    let returned = now_ms();
    wait_until("the poller's poll to hang", 10 * SECOND, || {
        peer.events()
            .iter()
            .any(|e| e.is_get() && e.task_id.as_deref() == Some(id.as_str()) && e.at_ms > returned)
    });
    let pid = poller::poller_pid(&home, &s).expect("the poller runs");
    let (t0, c0) = (std::time::Instant::now(), cpu_ticks(pid));
    // A measurement window, not a wait for something to happen.
    wait_until("a 2 s measurement window", 3 * SECOND, || {
        t0.elapsed() >= 2 * SECOND
    });
    let used_ms = (cpu_ticks(pid) - c0) * 10;
    let wall_ms = t0.elapsed().as_millis() as u64;
    assert!(
        used_ms * 10 < wall_ms,
        "the poller used {used_ms} ms of CPU in {wall_ms} ms while its poll hung"
    );
    wait_until("the task to end as lost", 10 * SECOND, || {
        poller::task(&home, &s, &id)["end_reason"] == "lost"
    });
    poller::pollers_exit(&home, &s);
}

/// CPU time (utime + stime) a process has used, in clock ticks of 10 ms.
fn cpu_ticks(pid: i32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let at = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    at(11) + at(12)
}
