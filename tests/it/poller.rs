//! The background poller and session ownership, through real processes: the
//! built binary driven as Claude Code and users drive it (`send`, `tasks`, `task`, `watch`, `worker
//! remove`, the hidden-context hook, the MCP server over stdio), against the fake worker and the
//! Python `a2a-sdk` peer, whose request logs tell what the poller did and when.
//!
//! Every test runs in its own home and its own session ids (so scanning `/proc` for
//! `poller --session <id>` sees only its own pollers), waits on observable conditions with
//! deadlines, and checks at the end that its pollers exited by themselves. A guard kills any that
//! are left when a test fails, so no run leaves orphans behind.

use crate::util::{SECOND, TempHome, TestCommand, bin, hook_context, stderr, wait_until};
use crate::workers::{Event, Kind, Peer};
use a2a_mod::testing::{Ctx, now_ms};
use a2a_mod::testing::{Reader, session};
use a2a_mod_os::process::Signal;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

/// Deadline for a poller to notice it has nothing left and exit.
const EXIT_WAIT: Duration = Duration::from_secs(20);

/// A session id unique to this test and this run.
pub(crate) fn sid(tag: &str) -> String {
    format!("it-poller-{tag}-{}", std::process::id())
}

/// `a2a-mod` in `session` (through `CLAUDE_CODE_SESSION_ID`, as Claude Code's Bash tool would),
/// with extra environment variables.
fn command(home: &TempHome, session: &str, args: &[&str], envs: &[(&str, &str)]) -> TestCommand {
    let mut cmd = home.command();
    cmd.session(session).envs(envs.iter().copied()).args(args);
    cmd
}

fn run(home: &TempHome, session: &str, args: &[&str], envs: &[(&str, &str)]) -> Output {
    command(home, session, args, envs).output()
}

#[track_caller]
pub(crate) fn ok(home: &TempHome, session: &str, args: &[&str]) -> String {
    ok_env(home, session, args, &[])
}

#[track_caller]
fn ok_env(home: &TempHome, session: &str, args: &[&str], envs: &[(&str, &str)]) -> String {
    command(home, session, args, envs).ok()
}

/// `send --json` in `session`; the task must be left tracked (live after the inline window).
#[track_caller]
pub(crate) fn send_tracked(home: &TempHome, session: &str, alias: &str, message: &str) -> String {
    send_tracked_env(home, session, alias, message, &[])
}

#[track_caller]
fn send_tracked_env(
    home: &TempHome,
    session: &str,
    alias: &str,
    message: &str,
    envs: &[(&str, &str)],
) -> String {
    let out = ok_env(home, session, &["send", alias, message, "--json"], envs);
    let r: Value = serde_json::from_str(&out).expect("send --json prints JSON");
    assert_eq!(r["tracked"], true, "{r}");
    r["taskId"].as_str().unwrap().to_string()
}

/// The session's tasks as `tasks --json` lists them.
pub(crate) fn tasks(home: &TempHome, session: &str) -> Vec<Value> {
    let out = ok(home, session, &["tasks", "--json", "--session", session]);
    serde_json::from_str::<Value>(&out)
        .expect("tasks --json prints JSON")
        .as_array()
        .cloned()
        .unwrap_or_default()
}

pub(crate) fn task(home: &TempHome, session: &str, id: &str) -> Value {
    tasks(home, session)
        .into_iter()
        .find(|t| t["task_id"] == id)
        .unwrap_or(Value::Null)
}

fn ids(list: &[Value]) -> BTreeSet<String> {
    list.iter()
        .map(|t| t["task_id"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Appends `[timing]` keys to the config.
pub(crate) fn timing(home: &TempHome, keys: &str) {
    crate::util::append_timing(&home.a2a_home(), keys);
}

/// Live `a2a-mod poller --session <session>` processes (a zombie has no command line, so only
/// running ones count).
pub(crate) fn pollers(session: &str) -> Vec<i32> {
    let exe = bin();
    let exe = exe.as_os_str().as_encoded_bytes();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = raw.split(|b| *b == 0).collect();
            (args.len() >= 4
                && args[0] == exe
                && args[1] == b"poller"
                && args[2] == b"--session"
                && args[3] == session.as_bytes())
            .then_some(pid)
        })
        .collect()
}

pub(crate) fn poller_pid(home: &TempHome, session: &str) -> Option<i32> {
    recorded_poller_pid(&home.a2a_home(), session)
}

/// The pid the lock-holding poller recorded in the store, while the lock is held.
pub(crate) fn recorded_poller_pid(a2a_home: &std::path::Path, session: &str) -> Option<i32> {
    let ctx = Ctx::at(a2a_home);
    if !a2a_mod::testing::is_running(&ctx, session) {
        return None;
    }
    Reader::open(&session::db_path(&ctx, session))
        .ok()??
        .meta_get("poller_pid")
        .ok()??
        .parse()
        .ok()
}

/// Waits for the session's poller to exit by itself (nothing live left) and its lock to be free.
#[track_caller]
pub(crate) fn pollers_exit(home: &TempHome, session: &str) {
    wait_until(
        &format!("the poller of {session} to exit by itself"),
        EXIT_WAIT,
        || pollers(session).is_empty(),
    );
    let ctx = Ctx::at(&home.a2a_home());
    assert!(!a2a_mod::testing::is_running(&ctx, session));
}

fn kill(pid: i32, sig: Signal) {
    a2a_mod_os::process::signal(pid, sig);
}

/// Whether `pid` is stopped by a signal (state `T` in /proc/PID/stat).
fn is_stopped(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
}

/// Kills, on drop, whatever pollers of these sessions are still running: a failed test must not
/// leave orphans. A passing test has already seen them exit by themselves.
pub(crate) struct NoOrphans(pub(crate) Vec<String>);

impl Drop for NoOrphans {
    fn drop(&mut self) {
        for s in &self.0 {
            for pid in pollers(s) {
                kill(pid, Signal::Kill);
            }
        }
    }
}

/// A child process killed (and reaped) on drop.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Lines of a child's stdout, read on a thread so a test can wait for them with a deadline.
fn read_lines(out: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// How many tasks one wake-up line announces: `a2a: w task 1a2b completed` or
/// `a2a: 3 tasks finished (w ✓, w ✓, w ✓)`.
fn wake_count(line: &str) -> usize {
    assert!(line.starts_with("a2a: "), "{line}");
    line.strip_prefix("a2a: ")
        .and_then(|r| r.split_once(" tasks finished"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(1)
}

/// The worker-side GetTask requests for `id` that were answered, as arrival times.
pub(crate) fn gets_of(events: &[Event], id: &str) -> Vec<i64> {
    events
        .iter()
        .filter(|e| e.is_get() && e.task_id.as_deref() == Some(id) && e.status == 200)
        .map(|e| e.at_ms)
        .collect()
}

fn gaps(times: &[i64]) -> Vec<i64> {
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

fn is_done(home: &TempHome, session: &str, id: &str, state: &str) -> bool {
    task(home, session, id)["state"] == state
}

// ---------------------------------------------------------------------------------------------

/// The seed's 5 s cadence as the worker saw it: after a shortened inline window, the GetTasks of
/// a tracked task come 5 s apart (the median gap within ±300 ms, each within a second), until the
/// task ends.
///
/// One gap may stray: a 2-core machine running the whole suite once woke the poller 321 ms late
/// (gaps 5008, 5321, 5001 ms: the poll after the late one came 5001 ms after it, so the delay was
/// in waking the poller, not on the wire; a poll is due an interval after the last one began). A
/// late wake is the scheduler's; a cadence of the wrong length moves the median, and a poll sent
/// twice or skipped makes a gap a second or more off. The rule itself, to the millisecond, is
/// `core::schedule`'s.
fn cadence(kind: Kind) {
    let Some(peer) = Peer::start(kind, &[]) else {
        return;
    };
    let home = TempHome::new();
    let s = sid(&format!("cadence-{kind:?}"));
    let _guard = NoOrphans(vec![s.clone()]);
    ok(&home, &s, &["worker", "add", "w", &peer.url]);
    // Only the window is shortened; poll_interval_s stays the seed's 5.
    // The seed's polling contract, so streaming is off: a stream would stand in for polls.
    timing(&home, "inline_polls_s = [0.2]\nstreaming = false");
    let id = send_tracked(&home, &s, "w", "slow 11 cadence");
    wait_until("the poller to see the task complete", 30 * SECOND, || {
        is_done(&home, &s, &id, "completed")
    });
    let events = peer.events();
    let gets = gets_of(&events, &id);
    // One inline GetTask (0.2 s), then the poller's at about 5.2, 10.2 and 15.2 s.
    assert!(gets.len() >= 4, "GetTask times {gets:?}: {events:?}");
    let g = gaps(&gets);
    let mut sorted = g.clone();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2];
    assert!(
        (median - 5000).abs() <= 300 && g.iter().all(|d| (d - 5000).abs() < 1000),
        "GetTask gaps {g:?}: want a median of 5000 ±300 ms and each within a second of it: \
         {events:?}"
    );
    pollers_exit(&home, &s);
}

#[test]
fn cadence_fake() {
    cadence(Kind::Fake)
}

#[test]
fn cadence_python() {
    cadence(Kind::PyV1)
}

/// Quick polling for behaviour tests: a failed poll takes at most 0.5 s.
const QUICK: &str =
    "inline_polls_s = [0.2]\npoll_interval_s = 0.3\npoll_timeout_s = 0.5\nmax_failed_polls = 6";

/// The worker dies mid-task: exactly 6 failed polls later the task ends as lost, and the exact
/// message of docs/commands-and-tools.md reaches Claude through the hidden-context hook, once.
fn lost_contact(kind: Kind) {
    let Some(mut peer) = Peer::start(kind, &[]) else {
        return;
    };
    let home = TempHome::new();
    let s = sid(&format!("lost-{kind:?}"));
    let _guard = NoOrphans(vec![s.clone()]);
    ok(&home, &s, &["worker", "add", "w", &peer.url]);
    timing(&home, QUICK);
    let id = send_tracked(&home, &s, "w", "slow 600 never ends");
    wait_until("the poller to poll the task", 10 * SECOND, || {
        gets_of(&peer.events(), &id).len() >= 2
    });
    peer.kill();
    wait_until("the task to end as lost", 20 * SECOND, || {
        task(&home, &s, &id)["end_reason"] == "lost"
    });
    let t = task(&home, &s, &id);
    assert_eq!(t["failed_polls"], 6, "{t}");
    assert_eq!(t["tracked"], false, "{t}");
    assert!(
        matches!(t["state"].as_str(), Some("working" | "submitted")),
        "{t}"
    );
    assert!(t["last_error"].is_string(), "{t}");
    let context = hook_context(&home, &s).expect("the hook tells Claude");
    let want = format!(
        "w task {id}: lost contact with the worker after 6 failed checks. Use the task tool to try again."
    );
    assert!(context.contains(&want), "{context:?} lacks {want:?}");
    assert_eq!(hook_context(&home, &s), None, "told twice");
    pollers_exit(&home, &s);
}

#[test]
fn lost_contact_fake() {
    lost_contact(Kind::Fake)
}

#[test]
fn lost_contact_python() {
    lost_contact(Kind::PyV1)
}

#[test]
fn lost_contact_js() {
    lost_contact(Kind::Js)
}

/// OAuth tokens that die after 1 s while claiming an hour (the token URL from the worker's card):
/// the background poller's poll gets a 401, clears the token, fetches exactly one fresh one and
/// carries on; the task completes.
fn token_refresh(kind: Kind) {
    let Some(peer) = Peer::start(kind, &["--oauth-ttl", "1", "--oauth-claimed-ttl", "3600"]) else {
        return;
    };
    let home = TempHome::new();
    let s = sid(&format!("oauth-{kind:?}"));
    let _guard = NoOrphans(vec![s.clone()]);
    let secret = [("W_SECRET", "s3cret")];
    ok_env(
        &home,
        &s,
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
        &secret,
    );
    timing(
        &home,
        "inline_polls_s = [0.2]\npoll_interval_s = 0.5\npoll_timeout_s = 2\nstreaming = false",
    );
    let id = send_tracked_env(&home, &s, "w", "slow 5 across expiry", &secret);
    wait_until("the task to complete across expiries", 30 * SECOND, || {
        is_done(&home, &s, &id, "completed")
    });
    // After the send's one inline GetTask only the poller talks to the worker (the commands
    // above read the store). Sliced by request, not by the test's clock, which may read the time
    // after the poller's first token fetch.
    let all = peer.events();
    let inline = all
        .iter()
        .position(|e| e.is_get() && e.task_id.as_deref() == Some(id.as_str()))
        .expect("the inline GetTask");
    let events: Vec<Event> = all[inline + 1..].to_vec();
    let calls: Vec<String> = events
        .iter()
        .map(|e| format!("{} {}", e.method, e.status))
        .collect();
    let refusals: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, e)| e.status == 401)
        .map(|(i, _)| i)
        .collect();
    assert!(
        !refusals.is_empty(),
        "no poll hit an expired token: {calls:?}"
    );
    for &i in &refusals {
        assert!(events[i].is_get(), "{calls:?}");
        let next: Vec<&str> = calls[i + 1..].iter().take(2).map(String::as_str).collect();
        assert_eq!(
            next,
            ["token 200", &format!("{} 200", events[i].method)],
            "after the 401 at {i}: {calls:?}"
        );
    }
    // The poller's first token, then exactly one per refusal.
    let tokens = events.iter().filter(|e| e.method == "token").count();
    assert_eq!(tokens, 1 + refusals.len(), "{calls:?}");
    pollers_exit(&home, &s);
}

#[test]
fn poller_refreshes_token_after_401_fake() {
    token_refresh(Kind::Fake)
}

#[test]
fn poller_refreshes_token_after_401_python() {
    token_refresh(Kind::PyV1)
}

#[test]
fn poller_refreshes_token_after_401_js() {
    token_refresh(Kind::Js)
}

/// `kill -9` of the poller while tasks are live: whoever comes next (`watch`, `task`) starts a new
/// one, which picks every task up from the store; all complete, none is lost.
fn killed_poller_replaced(kind: Kind, restart_with_watch: bool) {
    let Some(peer) = Peer::start(kind, &[]) else {
        return;
    };
    let home = TempHome::new();
    let s = sid(&format!("kill9-{kind:?}"));
    let _guard = NoOrphans(vec![s.clone()]);
    ok(&home, &s, &["worker", "add", "w", &peer.url]);
    timing(&home, "inline_polls_s = [0.2]\npoll_interval_s = 0.3");
    let sent: Vec<String> = (0..4)
        .map(|i| send_tracked(&home, &s, "w", &format!("slow 15 job {i}")))
        .collect();
    wait_until("one poller to run", 10 * SECOND, || {
        poller_pid(&home, &s).is_some()
    });
    let first = poller_pid(&home, &s).unwrap();
    assert_eq!(pollers(&s), [first]);
    kill(first, Signal::Kill);
    wait_until("the killed poller to be gone", 10 * SECOND, || {
        !pollers(&s).contains(&first)
    });
    let killed_at = now_ms();
    // Nothing replaces it until someone calls `ensure`: the tasks wait in the store.
    assert!(tasks(&home, &s).iter().all(|t| t["ended_ms"].is_null()));
    let mut watch = None;
    if restart_with_watch {
        let child = home
            .command()
            .args(["watch", "--session", &s])
            .stderr(Stdio::inherit())
            .spawn();
        watch = Some(Reaped(child));
    } else {
        let out = ok(&home, &s, &["task", &sent[0], "--json"]);
        let r: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["tracked"], true, "{r}");
    }
    wait_until("a new poller to take over", 15 * SECOND, || {
        poller_pid(&home, &s).is_some_and(|p| p != first)
    });
    wait_until("every task to complete", 45 * SECOND, || {
        let list = tasks(&home, &s);
        list.len() == sent.len() && list.iter().all(|t| t["state"] == "completed")
    });
    let list = tasks(&home, &s);
    assert!(list.iter().all(|t| t["end_reason"] == "state"), "{list:?}");
    // The new poller polled every task (the worker saw each again after the kill).
    let events = peer.events();
    for id in &sent {
        assert!(
            events.iter().any(|e| e.is_get()
                && e.task_id.as_deref() == Some(id.as_str())
                && e.at_ms > killed_at),
            "task {id} was not polled after the kill"
        );
    }
    if let Some(mut w) = watch {
        // The monitor wakes Claude once for every ended task: its lines count them all.
        let lines = read_lines(w.0.stdout.take().unwrap());
        let mut woken = 0;
        let mut seen = Vec::new();
        while woken < sent.len() {
            let line = lines
                .recv_timeout(15 * SECOND)
                .unwrap_or_else(|_| panic!("no wake-up line for every task: {seen:?}"));
            woken += wake_count(&line);
            seen.push(line);
        }
        assert_eq!(woken, sent.len(), "{seen:?}");
        kill(w.0.id() as i32, Signal::Term);
        let _ = w.0.wait();
    }
    pollers_exit(&home, &s);
}

#[test]
fn killed_poller_replaced_by_watch_fake() {
    killed_poller_replaced(Kind::Fake, true)
}

#[test]
fn killed_poller_replaced_by_task_python() {
    killed_poller_replaced(Kind::PyV1, false)
}

/// Many `send`s at once in one session all call `ensure`: exactly one poller runs and polls, as
/// the worker sees it (no task is ever polled twice within one interval).
#[test]
fn one_poller_however_many_sends() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    let s = sid("race");
    let _guard = NoOrphans(vec![s.clone()]);
    ok(&home, &s, &["worker", "add", "w", &peer.url]);
    timing(&home, "inline_polls_s = [0.2]\npoll_interval_s = 0.5");
    let children: Vec<Reaped> = (0..6)
        .map(|i| {
            let send = ["send", "w", &format!("slow 10 race {i}"), "--json"];
            Reaped(command(&home, &s, &send, &[]).spawn())
        })
        .collect();
    let mut owners = BTreeSet::new();
    let mut sent = Vec::new();
    for mut c in children {
        // While the sends run, sample who owns the lock.
        while c.0.try_wait().unwrap().is_none() {
            owners.extend(poller_pid(&home, &s));
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut out = String::new();
        std::io::Read::read_to_string(c.0.stdout.as_mut().unwrap(), &mut out).unwrap();
        let r: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(r["tracked"], true, "{r}");
        sent.push(r["taskId"].as_str().unwrap().to_string());
    }
    wait_until("one poller process to be left", 10 * SECOND, || {
        pollers(&s).len() == 1
    });
    owners.extend(poller_pid(&home, &s));
    assert_eq!(pollers(&s), owners.iter().copied().collect::<Vec<_>>());
    wait_until("every task to complete", 45 * SECOND, || {
        let list = tasks(&home, &s);
        list.len() == 6 && list.iter().all(|t| t["state"] == "completed")
    });
    assert_eq!(owners.len(), 1, "pollers that held the lock: {owners:?}");
    let events = peer.events();
    for id in &sent {
        let g = gaps(&gets_of(&events, id));
        // Inline 0.2 s, then one poller every 0.5 s (a batch may go 50 ms early, and a busy
        // worker logs late): two pollers would poll about twice per interval.
        assert!(
            g.iter().skip(1).all(|d| *d >= 250),
            "task {id} polled too often: gaps {g:?}"
        );
    }
    pollers_exit(&home, &s);
}

/// Two sessions side by side against one worker: each store holds only its own tasks, each
/// poller polls only its own (told apart by stopping one poller at a time), and neither `tasks`
/// nor the hidden context of one ever shows the other's.
#[test]
fn two_sessions_no_cross_talk() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    let (a, b) = (sid("pair-a"), sid("pair-b"));
    let _guard = NoOrphans(vec![a.clone(), b.clone()]);
    ok(&home, &a, &["worker", "add", "w", &peer.url]);
    timing(&home, "inline_polls_s = [0.2]\npoll_interval_s = 0.3");
    let mut mine: [BTreeSet<String>; 2] = Default::default();
    for i in 0..3 {
        for (k, s) in [&a, &b].into_iter().enumerate() {
            mine[k].insert(send_tracked(&home, s, "w", &format!("slow 20 s{k} t{i}")));
        }
    }
    wait_until("both pollers to run", 10 * SECOND, || {
        poller_pid(&home, &a).is_some() && poller_pid(&home, &b).is_some()
    });
    let pids = [
        poller_pid(&home, &a).unwrap(),
        poller_pid(&home, &b).unwrap(),
    ];
    assert_ne!(pids[0], pids[1]);
    for (k, s) in [&a, &b].into_iter().enumerate() {
        assert_eq!(ids(&tasks(&home, s)), mine[k], "session {s}");
        assert_eq!(pollers(s), [pids[k]]);
        // The other session's task ids mean nothing here.
        let other = mine[1 - k].first().unwrap();
        for tool in ["task", "cancel"] {
            let o = run(&home, s, &[tool, other], &[]);
            assert_eq!(o.status.code(), Some(1), "{tool} {other} in {s}");
            assert!(stderr(&o).contains("not in this session"), "{}", stderr(&o));
        }
    }
    // Stop one poller; for a while every GetTask comes from the other, and names only its tasks.
    for k in 0..2 {
        let (stopped, running) = (pids[1 - k], &mine[k]);
        kill(stopped, Signal::Stop);
        wait_until("the poller to stop", 5 * SECOND, || is_stopped(stopped));
        // A request written just before the stop may still land at the worker a little later.
        let from = now_ms() + 300;
        let polled = || -> BTreeSet<String> {
            peer.events()
                .into_iter()
                .filter(|e| e.is_get() && e.at_ms > from)
                .filter_map(|e| e.task_id)
                .collect()
        };
        wait_until(
            "the running poller to poll all its tasks",
            10 * SECOND,
            || polled().is_superset(running),
        );
        // Read before resuming: the resumed poller sends its overdue polls at once.
        let seen = polled();
        kill(stopped, Signal::Cont);
        assert_eq!(&seen, running, "poller {k} polled another session's task");
    }
    wait_until("every task to complete", 45 * SECOND, || {
        [&a, &b].into_iter().all(|s| {
            let l = tasks(&home, s);
            l.len() == 3 && l.iter().all(|t| t["state"] == "completed")
        })
    });
    for (k, s) in [&a, &b].into_iter().enumerate() {
        assert_eq!(ids(&tasks(&home, s)), mine[k], "session {s}");
        let context = hook_context(&home, s).expect("results for Claude");
        for id in &mine[k] {
            assert!(context.contains(id.as_str()), "{context}");
        }
        for id in &mine[1 - k] {
            assert!(!context.contains(id.as_str()), "{s} told of {id}");
        }
        pollers_exit(&home, s);
    }
}

/// `worker remove` while its tasks are live, in two sessions: they end as removed, the pollers
/// stop polling them (session B's poller has nothing left and exits), the other worker's task
/// carries on, and the next hook tells Claude, in the exact words, that they are no longer
/// tracked.
#[test]
fn worker_remove_ends_live_tasks() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    let (a, b) = (sid("rm-a"), sid("rm-b"));
    let _guard = NoOrphans(vec![a.clone(), b.clone()]);
    // Two aliases of one worker: only the removed alias's tasks may stop.
    ok(&home, &a, &["worker", "add", "gone", &peer.url]);
    ok(&home, &a, &["worker", "add", "kept", &peer.url]);
    timing(&home, "inline_polls_s = [0.2]\npoll_interval_s = 0.3");
    let in_a = send_tracked(&home, &a, "gone", "slow 600 a");
    let in_b = send_tracked(&home, &b, "gone", "slow 600 b");
    let kept = send_tracked(&home, &a, "kept", "slow 5 kept");
    wait_until("both pollers to poll", 10 * SECOND, || {
        let e = peer.events();
        gets_of(&e, &in_a).len() >= 2 && gets_of(&e, &in_b).len() >= 2
    });
    let out = ok(&home, &a, &["worker", "remove", "gone"]);
    assert!(out.contains("2 live task(s) no longer tracked"), "{out}");
    let removed_at = now_ms();
    for (s, id) in [(&a, &in_a), (&b, &in_b)] {
        let t = task(&home, s, id);
        assert_eq!(
            (&t["end_reason"], &t["tracked"]),
            (&json!("removed"), &json!(false)),
            "{t}"
        );
    }
    // B has nothing left: its poller exits. A's carries on with the other worker's task.
    pollers_exit(&home, &b);
    wait_until("the kept task to complete", 30 * SECOND, || {
        is_done(&home, &a, &kept, "completed")
    });
    pollers_exit(&home, &a);
    // A poll in flight at the removal may land just after it; none is sent later.
    let events = peer.events();
    for id in [&in_a, &in_b] {
        let late: Vec<i64> = gets_of(&events, id)
            .into_iter()
            .filter(|t| *t > removed_at + 300)
            .collect();
        assert!(late.is_empty(), "{id} polled after removal at {late:?}");
    }
    let context = hook_context(&home, &a).expect("A's hidden context");
    for want in [
        format!(
            "gone task {in_a}: no longer tracked because worker \"gone\" was removed. Add the worker again and use the task tool to check it."
        ),
        a2a_mod::testing::task::removed_message("gone", &in_a),
    ] {
        assert!(context.contains(&want), "{context:?} lacks {want:?}");
    }
    assert!(context.contains(&kept), "{context}");
    let context = hook_context(&home, &b).expect("B's hidden context");
    assert!(
        context.contains(&a2a_mod::testing::task::removed_message("gone", &in_b)),
        "{context}"
    );
    assert!(!context.contains(&in_a), "{context}");
}

// --- Through the MCP server -----------------------------------------------------------------

mod over_mcp {
    use super::*;
    use crate::mcp::{Mcp, structured};

    /// The inline window as the worker saw it, for a `send` made by Claude through the MCP server:
    /// GetTask 0.5, 1.5, 3.5, 7.5 s after the send, ±150 ms.
    async fn inline_schedule(kind: Kind) {
        let Some(peer) = Peer::start(kind, &[]) else {
            return;
        };
        // The seed's inline polls, so streaming is off.
        let home = TempHome::with_fake(Some(&peer.url), "streaming = false");
        let s = sid(&format!("mcp-window-{kind:?}"));
        let _guard = NoOrphans(vec![s.clone()]);
        let mut m = Mcp::start(&home, &[("CLAUDE_CODE_SESSION_ID", s.as_str())]).await;
        let r = m
            .call("send", json!({"worker":"fake","message":"slow 30 timing"}))
            .await;
        let r = structured(&r).clone();
        assert_eq!(r["tracked"], true, "{r}");
        let id = r["taskId"].as_str().unwrap().to_string();
        let events = peer.events();
        let c = m.call("cancel", json!({"taskId": id})).await;
        assert_eq!(structured(&c)["state"], "canceled");
        let sent = events
            .iter()
            .find(|e| e.is_send() && e.task_id.as_deref() == Some(id.as_str()))
            .expect("the worker saw the send");
        let offsets: Vec<i64> = gets_of(&events, &id)
            .into_iter()
            .map(|t| t - sent.at_ms)
            .collect();
        assert_eq!(offsets.len(), 4, "GetTask offsets {offsets:?}");
        for (got, want) in offsets.iter().zip([500, 1500, 3500, 7500]) {
            assert!(
                (got - want).abs() <= 150,
                "GetTask offsets {offsets:?}, want 500/1500/3500/7500 ±150"
            );
        }
        drop(m);
        wait_until("the poller to exit", EXIT_WAIT, || pollers(&s).is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mcp_inline_schedule_python() {
        inline_schedule(Kind::PyV1).await
    }

    /// A Python worker that never answers GetTask: `send` returns inside the host's 3 s timeout
    /// with the task tracked; the poller's polls time out, and the task ends as lost.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn mcp_silent_python_released_at_budget() {
        let Some(peer) = Peer::start(Kind::PyV1, &[]) else {
            return;
        };
        let home = TempHome::with_fake(
            Some(&peer.url),
            // The interval leaves a second between the hand-over and the first background poll,
            // so the test's clock at the return tells inline polls from background ones.
            "poll_interval_s = 2\npoll_timeout_s = 1\nmax_failed_polls = 2",
        );
        let s = sid("mcp-silent");
        let _guard = NoOrphans(vec![s.clone()]);
        let mut m = Mcp::start(
            &home,
            &[
                ("MCP_TOOL_TIMEOUT", "3000"),
                ("CLAUDE_CODE_SESSION_ID", s.as_str()),
            ],
        )
        .await;
        let started = std::time::Instant::now();
        let r = m
            .call("send", json!({"worker":"fake","message":"silent"}))
            .await;
        let took = started.elapsed();
        let returned = now_ms();
        assert!(took < Duration::from_millis(3000), "took {took:?}");
        let r = structured(&r).clone();
        assert_eq!(r["tracked"], true, "{r}");
        assert!(r["note"].as_str().unwrap().contains("Do not poll"), "{r}");
        let id = r["taskId"].as_str().unwrap().to_string();
        assert!(
            peer.events()
                .iter()
                .any(|e| e.is_get() && e.task_id.as_deref() == Some(id.as_str())),
            "no GetTask inside the window"
        );
        // Every poll hangs until cut at poll_timeout_s: two such and the task is lost.
        let db = session::db_path(&Ctx::at(&home.a2a_home()), &s);
        let deadline = tokio::time::Instant::now() + 20 * SECOND;
        loop {
            let t = Reader::open(&db).unwrap().and_then(|st| {
                st.get(&a2a_mod::testing::TaskKey::new("fake", &id))
                    .unwrap()
            });
            if let Some(t) = t
                .as_ref()
                .filter(|t| t.end_reason.map(|r| r.as_str()) == Some("lost"))
            {
                assert_eq!(t.failed_polls, 2, "{t:?}");
                // Exactly two background polls, each hanging until cut: inline failures do not
                // count toward lost contact.
                let late: Vec<Event> = peer
                    .events()
                    .into_iter()
                    .filter(|e| e.is_get() && e.at_ms > returned)
                    .collect();
                assert_eq!(late.len(), 2, "{late:?}");
                assert!(late.iter().all(|e| e.status == 0), "{late:?}");
                assert!(
                    t.last_error
                        .as_deref()
                        .unwrap_or("")
                        .contains("no answer within"),
                    "{t:?}"
                );
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "never lost: {t:?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        drop(m);
        wait_until("the poller to exit", EXIT_WAIT, || pollers(&s).is_empty());
    }
}
