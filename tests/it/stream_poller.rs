//! Streaming, in the background: the poller holds a subscription (`SubscribeToTask` /
//! `tasks/resubscribe`) to each tracked task of a streaming worker, so a task's end reaches the
//! store as the worker tells it, not at the next 5 s poll; and every fault of the stream leaves
//! polling to finish the task as before, told once. Driven through real processes: `send` from
//! the command line (the task outlives its inline window), the poller it starts, the hidden-context
//! hook that announces an ended task, and the workers' request logs, which say when each request
//! arrived (the fake worker's `slow N` task ends exactly N s after its send arrived).

use crate::util::{TempHome, TestCommand, ended_row, hook_context, ok, task_row, wait_until};
use crate::workers::{Event, Kind, Peer};
use a2a_mod::testing::Ctx;
use a2a_mod::testing::TaskRecord;
use serde_json::Value;
use std::time::Duration;

/// A session id unique to this test and this run.
fn sid(tag: &str) -> String {
    format!("it-stream-poller-{tag}-{}", std::process::id())
}

/// `send --json --no-keep` in `session` (its stream closes with the command, so the poller's
/// subscription is what follows the task); the task must be left tracked (live after the inline
/// window).
#[track_caller]
fn send_tracked(home: &TempHome, session: &str, alias: &str, message: &str) -> String {
    let mut cmd: TestCommand = home.command();
    let out = cmd
        .session(session)
        .args(["send", alias, message, "--json", "--no-keep"])
        .ok();
    let r: Value = serde_json::from_str(&out).expect("send --json prints JSON");
    assert_eq!(r["tracked"], true, "{r}");
    r["taskId"].as_str().unwrap().to_string()
}

/// The task's row in the session store, as the poller left it.
fn row(home: &TempHome, session: &str, id: &str) -> Option<TaskRecord> {
    task_row(&home.a2a_home(), session, id)
}

/// Waits for the task to end in the store and returns its row.
#[track_caller]
fn ended(home: &TempHome, session: &str, id: &str, within: Duration) -> TaskRecord {
    ended_row(&home.a2a_home(), session, id, within)
}

/// The ended task is announced once: the next prompt's context names it, the one after does not.
#[track_caller]
fn announced_once(home: &TempHome, session: &str, id: &str) {
    let first = hook_context(home, session).unwrap_or_default();
    assert!(first.contains(id), "the end is announced: {first:?}");
    let again = hook_context(home, session).unwrap_or_default();
    assert!(!again.contains(id), "announced twice: {again:?}");
}

fn subscribes(events: &[Event], id: Option<&str>) -> Vec<i64> {
    events
        .iter()
        .filter(|e| e.is_subscribe())
        .filter(|e| id.is_none() || e.task_id.as_deref() == id)
        .map(|e| e.at_ms)
        .collect()
}

fn gets(events: &[Event], id: &str) -> Vec<i64> {
    events
        .iter()
        .filter(|e| e.is_get() && e.task_id.as_deref() == Some(id))
        .map(|e| e.at_ms)
        .collect()
}

/// When the worker received the send that made task `id`.
fn sent_at(events: &[Event], id: &str) -> i64 {
    events
        .iter()
        .find(|e| e.is_send() && e.task_id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("the send of {id} in {events:?}"))
        .at_ms
}

/// How many times the session log holds `needle`.
fn log_count(home: &TempHome, needle: &str) -> usize {
    let log = Ctx::at(&home.a2a_home()).log_path();
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches(needle)
        .count()
}

/// Waits for the session's poller to exit by itself (nothing live left); kills it on a failure.
struct PollerGone<'a>(&'a TempHome, String);

impl Drop for PollerGone<'_> {
    fn drop(&mut self) {
        let ctx = Ctx::at(&self.0.a2a_home());
        if std::thread::panicking() {
            if let Some(pid) = crate::poller::recorded_poller_pid(&self.0.a2a_home(), &self.1) {
                a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
            }
            return;
        }
        wait_until("the poller to exit", Duration::from_secs(20), || {
            !a2a_mod::testing::is_running(&ctx, &self.1)
        });
    }
}

/// Polling alone answers at the next 5 s poll: an end in the store this soon after the worker's
/// end came through the subscription (the end itself is printed; CI's machine is shared).
const STREAMED_MS: i64 = 2_500;

/// A 13 s task, past the 7.5 s inline window, with the seed's timing: its end reaches the store
/// from the poller's subscription, before any GetTask after the end could have told it.
fn background_end(kind: Kind, extra: &[&str]) {
    background_end_after(kind, extra, 13.0, false)
}

/// [`background_end`] for a task of `secs`; `early`: the subscription must be open before the
/// task ends (it ends before the first background poll could have opened one).
fn background_end_after(kind: Kind, extra: &[&str], secs: f64, early: bool) {
    let Some(peer) = Peer::start(kind, extra) else {
        return;
    };
    let home = TempHome::new();
    let s = sid(&format!("{kind:?}").to_lowercase());
    let _gone = PollerGone(&home, s.clone());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let id = send_tracked(&home, &s, "w", &format!("slow {secs} background"));
    let t = ended(&home, &s, &id, Duration::from_secs(40));
    assert_eq!(t.state.as_str(), "completed", "{t:?}");
    assert_eq!(t.result.as_deref(), Some("done: background"), "{t:?}");
    let events = peer.events();
    let end = sent_at(&events, &id) + (secs * 1000.0) as i64;
    let stored = t.ended_ms.unwrap();
    let late = stored - end;
    eprintln!("{kind:?}: the end reached the store {late} ms after the worker ended the task");
    assert!(
        !subscribes(&events, Some(&id)).is_empty(),
        "the poller subscribed: {events:?}"
    );
    // Causal: no GetTask that arrived after the end can have told the store before it arrived.
    if let Some(first_get_after) = gets(&events, &id).into_iter().find(|g| *g >= end) {
        assert!(
            stored < first_get_after,
            "stored at {stored}, not before the GetTask at {first_get_after}"
        );
    }
    assert!(
        (0..STREAMED_MS).contains(&late),
        "the end reached the store {late} ms after the worker ended the task"
    );
    if early {
        let first = subscribes(&events, Some(&id))[0];
        assert!(first < end, "subscribed at {first}, after the end at {end}");
    }
    announced_once(&home, &s, &id);
}

/// A task ending 9.5 s after its send, after the 7.5 s window and before the first
/// background poll (one interval after the window's last poll, ~12.5 s): the poller subscribes
/// the moment the window hands over, so the end comes through the stream, not up to 5 s late.
#[test]
fn a_task_ending_just_after_its_window_ends_through_the_poller_stream_fake() {
    background_end_after(Kind::Fake, &["--streaming", "on"], 9.5, true)
}

#[test]
fn a_task_ending_just_after_its_window_ends_through_the_poller_stream_python() {
    background_end_after(Kind::PyV1, &[], 9.5, true)
}

/// The hold rule: a follow-up `send` answering an input-required task runs a new inline
/// window on the same row while the poller runs (kept busy by another streamed task). The answer
/// completes during that window: the CLI result shows it, the store marks it told (announced and
/// delivered), no hook announces it, and the poller never subscribed to it (held throughout).
/// Were the poller to subscribe or apply its stream's events during the window, the end it wrote
/// first would be announced as well as shown.
#[test]
fn a_follow_up_answered_during_its_window_is_told_once() {
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on"]) else {
        return;
    };
    let home = TempHome::new();
    let s = sid("follow-up");
    let _gone = PollerGone(&home, s.clone());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let keep = send_tracked(&home, &s, "w", "slow 12 keep");
    wait_until("the poller to subscribe", Duration::from_secs(20), || {
        !subscribes(&peer.events(), Some(&keep)).is_empty()
    });
    let mut asked = Vec::new();
    for colour in ["blue", "green", "red"] {
        let mut cmd: TestCommand = home.command();
        let out = cmd
            .session(&s)
            .args(["send", "w", "ask which colour?", "--json"])
            .ok();
        let r: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["state"], "input-required", "{r}");
        let id = r["taskId"].as_str().unwrap().to_string();
        let mut cmd: TestCommand = home.command();
        let out = cmd
            .session(&s)
            .args(["send", "w", colour, "--task-id", &id, "--json"])
            .ok();
        let r: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["state"], "completed", "shown in the result: {r}");
        assert!(r["text"].as_str().unwrap_or("").contains(colour), "{r}");
        asked.push(id);
    }
    let t = ended(&home, &s, &keep, Duration::from_secs(30));
    assert_eq!(t.state.as_str(), "completed", "{t:?}");
    let ctx = hook_context(&home, &s).unwrap_or_default();
    assert!(
        ctx.contains(&keep),
        "the background task is announced: {ctx:?}"
    );
    let events = peer.events();
    for id in &asked {
        assert!(
            !ctx.contains(id.as_str()),
            "{id} announced as well: {ctx:?}"
        );
        let t = row(&home, &s, id).unwrap();
        assert_eq!(t.state.as_str(), "completed", "{t:?}");
        assert!(
            t.announced_ms.is_some() && t.delivered_ms.is_some(),
            "told with the result: {t:?}"
        );
        assert!(
            subscribes(&events, Some(id)).is_empty(),
            "the poller subscribed to {id} during its window: {events:?}"
        );
    }
}

#[test]
fn a_background_task_ends_through_the_poller_stream_fake() {
    background_end(Kind::Fake, &["--streaming", "on"])
}

#[test]
fn a_background_task_ends_through_the_poller_stream_fake_v03() {
    background_end(Kind::FakeV03, &["--streaming", "on"])
}

#[test]
fn a_background_task_ends_through_the_poller_stream_python() {
    background_end(Kind::PyV1, &[])
}

/// The same over HTTP+JSON: a worker whose card offers only it is subscribed to
/// (`tasks/{id}:subscribe`), not polled.
#[test]
fn a_background_task_ends_through_the_poller_stream_python_rest_only() {
    background_end(Kind::PyV1, &["--rest-only"])
}

/// A short inline window and a 2 s cadence: the fault tests are about what polling still does.
fn quick_timing(home: &TempHome, extra: &str) {
    crate::util::append_timing(
        &home.a2a_home(),
        &format!(
            "inline_polls_s = [0.2]\npoll_interval_s = 2\npoll_timeout_s = 2\nmax_failed_polls = 6\n{extra}"
        ),
    );
}

/// A stream fault of the fake worker: the task ends completed all the same, its result intact,
/// announced once. Returns the worker's request log.
fn fault(mode: &str, task: &str, secs: u64) -> (Vec<Event>, String) {
    let Some(peer) = Peer::start(
        Kind::Fake,
        &["--streaming", mode, "--subscribe-faults-only"],
    ) else {
        return (Vec::new(), String::new());
    };
    let home = TempHome::new();
    quick_timing(&home, "");
    let s = sid(mode);
    let _gone = PollerGone(&home, s.clone());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let id = send_tracked(&home, &s, "w", &format!("slow {secs} {task}"));
    let t = ended(&home, &s, &id, Duration::from_secs(secs + 20));
    assert_eq!(
        (t.state.as_str(), t.result.as_deref()),
        ("completed", Some(format!("done: {task}").as_str())),
        "{mode}: {t:?}"
    );
    assert_eq!(t.failed_polls, 0, "{mode}: {t:?}");
    announced_once(&home, &s, &id);
    let events = peer.events();
    assert!(
        !subscribes(&events, Some(&id)).is_empty(),
        "{mode}: subscribed: {events:?}"
    );
    (events, id)
}

/// The worker closes each subscription after its first event: the poller subscribes again (with
/// backoff), and the task still ends, once.
#[test]
fn background_stream_dropped_mid_task_is_resubscribed() {
    let (events, id) = fault("drop", "dropped", 6);
    if events.is_empty() {
        return;
    }
    let subs = subscribes(&events, Some(&id));
    assert!(subs.len() >= 2, "re-subscribed: {subs:?}");
    // With backoff: 1 s, then 2 s, … apart, not in a tight loop.
    let gaps: Vec<i64> = subs.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps.iter().all(|g| *g >= 900), "{gaps:?}");
}

/// A subscription that never sends an event: polling does everything.
#[test]
fn background_stream_that_never_speaks() {
    let (events, id) = fault("mute", "silent stream", 3);
    if events.is_empty() {
        return;
    }
    assert!(!gets(&events, &id).is_empty(), "polled");
}

/// A subscription that sends garbage after the task: dropped, polling and re-subscriptions go on.
#[test]
fn background_stream_of_garbage() {
    let (events, id) = fault("garbage", "garbled", 4);
    if events.is_empty() {
        return;
    }
    assert!(!gets(&events, &id).is_empty(), "polled");
}

/// The worker is killed mid-stream and a new one (which knows nothing) starts on the same port:
/// the task ends as gone, "the worker no longer knows this task", through polling, announced once.
#[test]
fn background_worker_restarted_mid_stream_ends_the_task_as_gone() {
    let Some(mut peer) = Peer::start(Kind::Fake, &["--streaming", "on"]) else {
        return;
    };
    let port = peer.url.rsplit(':').next().unwrap().to_string();
    let home = TempHome::new();
    quick_timing(&home, "");
    let s = sid("restart");
    let _gone = PollerGone(&home, s.clone());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let id = send_tracked(&home, &s, "w", "slow 600 forgotten");
    wait_until("the poller to subscribe", Duration::from_secs(20), || {
        !subscribes(&peer.events(), Some(&id)).is_empty()
    });
    peer.kill();
    let fresh = Peer::start(Kind::Fake, &["--streaming", "on", "--port", &port]).unwrap();
    assert_eq!(fresh.url, peer.url);
    let t = ended(&home, &s, &id, Duration::from_secs(30));
    assert_eq!(t.end_reason.map(|r| r.as_str()), Some("gone"), "{t:?}");
    assert!(
        t.last_error
            .as_deref()
            .unwrap_or("")
            .contains("the worker no longer knows this task"),
        "{t:?}"
    );
    assert!(
        !gets(&fresh.events(), &id).is_empty(),
        "polling found it gone"
    );
    announced_once(&home, &s, &id);
}

/// The poller's line when a worker claims streaming but refuses its subscription.
const REFUSED: &str = "offers streaming but refused a subscription";

/// A card that claims streaming and a worker that answers the subscription with HTTP 404 or a
/// JSON-RPC "unsupported operation": remembered as not streaming (logged once, never asked again),
/// and polling does everything.
fn refuses(mode: &str) {
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", mode]) else {
        return;
    };
    let home = TempHome::new();
    quick_timing(&home, "");
    let s = sid(mode);
    let _gone = PollerGone(&home, s.clone());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let first = send_tracked(&home, &s, "w", "slow 8 first");
    wait_until("the refusal to be logged", Duration::from_secs(20), || {
        log_count(&home, REFUSED) == 1
    });
    let asked = subscribes(&peer.events(), None).len();
    assert_eq!(asked, 1, "{mode}: {:?}", peer.events());
    // A second task while the first is live (the same poller): polled only.
    let second = send_tracked(&home, &s, "w", "slow 2 second");
    for (id, what) in [(&second, "second"), (&first, "first")] {
        let t = ended(&home, &s, id, Duration::from_secs(30));
        assert_eq!(
            (t.state.as_str(), t.result.as_deref()),
            ("completed", Some(format!("done: {what}").as_str())),
            "{mode}: {t:?}"
        );
        assert!(!gets(&peer.events(), id).is_empty(), "{mode}: polled");
    }
    assert_eq!(
        subscribes(&peer.events(), None).len(),
        1,
        "{mode}: asked once"
    );
    assert_eq!(log_count(&home, REFUSED), 1, "{mode}: logged once");
    let ctx = hook_context(&home, &s).unwrap_or_default();
    assert!(ctx.contains(&first) && ctx.contains(&second), "{ctx:?}");
    assert!(hook_context(&home, &s).is_none_or(|c| !c.contains(&first)));
}

#[test]
fn background_subscription_answered_404_is_remembered() {
    refuses("http404")
}

#[test]
fn background_subscription_answered_rpc_error_is_remembered() {
    refuses("rpc-error")
}

/// `[timing] max_streams_per_worker = 1`: while the first task's stream is open no other task of
/// that worker gets one; they are polled, and every task still ends.
#[test]
fn streams_beyond_the_per_worker_cap_are_polled() {
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on"]) else {
        return;
    };
    let home = TempHome::new();
    quick_timing(&home, "max_streams_per_worker = 1");
    let s = sid("cap");
    let _gone = PollerGone(&home, s.clone());
    ok(&home, &["worker", "add", "w", &peer.url]);
    let ids: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|w| send_tracked(&home, &s, "w", &format!("slow 7 {w}")))
        .collect();
    for (id, w) in ids.iter().zip(["a", "b", "c"]) {
        let t = ended(&home, &s, id, Duration::from_secs(30));
        assert_eq!(
            (t.state.as_str(), t.result.as_deref()),
            ("completed", Some(format!("done: {w}").as_str())),
            "{t:?}"
        );
    }
    let events = peer.events();
    // The first task's stream stays open until it ends: until then, only it had one.
    let first_end = sent_at(&events, &ids[0]) + 7_000;
    let before: Vec<i64> = subscribes(&events, None)
        .into_iter()
        .filter(|at| *at < first_end)
        .collect();
    assert_eq!(before.len(), 1, "one stream under the cap: {events:?}");
    assert_eq!(subscribes(&events, Some(&ids[0])).len(), 1);
    for id in &ids[1..] {
        assert!(!gets(&events, id).is_empty(), "{id} polled");
    }
}
