//! The wake path follows: the monitor, the asyncRewake waiter and the headless Stop
//! hook learn of an ended task from the writer (`a2a_mod_store::notify`), not from their next tick.
//!
//! Causal: every process here runs with the fallback tick stretched to a minute
//! (`A2A_MOD_WAKE_TICK_MS`), so a wake that arrives within a few seconds can only have come from
//! the notification. Each test waits until the waiter's socket is bound (it is armed) before the
//! task ends, as the poller would end it: through the store, from another process (this one).

use crate::util::{TempHome, wait_until};
use crate::wake::{
    HEADLESS, LONG, SESSION, Watch, count, ctx, end, fake_poller, live, prompt_input, spawn_hook,
    store,
};
use a2a_mod::testing::task::TaskState;
use a2a_mod::testing::{notify, session};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The fallback tick of every process under test: far longer than any wait below.
const SLOW_TICK: (&str, &str) = (notify::TICK_ENV, "60000");
/// Well under [`SLOW_TICK`]: what "at once" has to beat, with room for a loaded machine.
const SOON: Duration = Duration::from_secs(5);

/// The socket `pid` binds as `kind` in SESSION's wake folder.
fn socket(home: &TempHome, kind: &str, pid: u32) -> PathBuf {
    notify::wake_dir(&session::db_path(&ctx(home), SESSION)).join(format!("{kind}{pid}"))
}

/// A monitor whose tick is a minute still prints each batch at once; tasks ending ~100 ms apart
/// share a line, tasks ending ~2 s apart get a line each, and nothing is announced twice. What
/// would break: a writer that does not notify (the line waits for the tick), a notification
/// lost between the monitor's look and its wait, or a settle longer than batching needs.
#[test]
fn a_monitor_prints_at_once_without_its_tick() {
    let home = TempHome::new();
    let _poller = fake_poller(&home);
    let s = store(&home);
    for id in ["aaaa0001", "bbbb0002", "cccc0003", "dddd0004", "eeee0005"] {
        live(&s, "fake", id);
    }
    let w = Watch::start_with(&home, &[SLOW_TICK]);
    let sock = socket(&home, notify::WATCH, w.child.id());
    wait_until("the monitor to bind its wake socket", LONG, || {
        sock.exists()
    });

    let t = Instant::now();
    end(&s, "fake", "aaaa0001", TaskState::Completed, Some("one"));
    assert_eq!(w.next_line(SOON), "a2a: fake task aaaa… completed");
    assert!(t.elapsed() < SOON, "{:?}", t.elapsed());

    // ~100 ms apart: one line for both.
    end(&s, "fake", "bbbb0002", TaskState::Completed, Some("two"));
    // Input for the batching rule, not a wait: the second task ends a moment after the first.
    std::thread::sleep(Duration::from_millis(100));
    end(&s, "fake", "cccc0003", TaskState::Failed, Some("three"));
    assert_eq!(w.next_line(SOON), "a2a: 2 tasks finished (fake ✓, fake ✕)");

    // ~2 s apart: a line each, the first before the second task ends.
    let first = Instant::now();
    end(&s, "fake", "dddd0004", TaskState::Completed, Some("four"));
    assert_eq!(w.next_line(SOON), "a2a: fake task dddd… completed");
    // Input for the batching rule, not a wait: the next task ends 2 s after the last.
    std::thread::sleep(Duration::from_secs(2).saturating_sub(first.elapsed()));
    end(
        &s,
        "fake",
        "eeee0005",
        TaskState::InputRequired,
        Some("Which?"),
    );
    assert_eq!(w.next_line(SOON), "a2a: fake task eeee… input-required");

    wait_until("the last claim to commit", LONG, || {
        !s.has_unannounced().unwrap()
    });
    assert!(w.drain().is_empty(), "announced twice");
}

/// The asyncRewake waiter with no monitor wakes Claude (exit 2) at once when the task ends, and
/// with a live monitor leaves the batch to it and ends at once too (the monitor's claim tells it
/// there is nothing left to wait for).
#[test]
fn the_async_rewake_waiter_wakes_at_once_without_its_tick() {
    let home = TempHome::new();
    let _poller = fake_poller(&home);
    let s = store(&home);
    let attended = [("CLAUDE_CODE_SESSION_ATTENDED", "1"), SLOW_TICK];

    live(&s, "fake", "abcd1234");
    let waiter = spawn_hook(&home, "wake", &attended);
    let sock = socket(&home, notify::WAKER, waiter.id());
    wait_until("the waiter to bind its wake socket", LONG, || sock.exists());
    let t = Instant::now();
    end(&s, "fake", "abcd1234", TaskState::Completed, Some("built"));
    let out = waiter.wait_with_output().unwrap();
    assert!(t.elapsed() < SOON, "{:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("a2a: fake task abcd… completed\n\n[a2a-mod notice"),
        "{err}"
    );
    assert!(!sock.exists(), "the waiter removes its socket");

    // With a live monitor: the monitor's line, and the waiter ends silently, both at once.
    let w = Watch::start_with(&home, &[SLOW_TICK]);
    let msock = socket(&home, notify::WATCH, w.child.id());
    wait_until("the monitor to bind its wake socket", LONG, || {
        msock.exists()
    });
    live(&s, "fake", "ffff9999");
    let waiter = spawn_hook(&home, "wake", &attended);
    let sock = socket(&home, notify::WAKER, waiter.id());
    wait_until("the waiter to bind its wake socket", LONG, || sock.exists());
    let t = Instant::now();
    end(&s, "fake", "ffff9999", TaskState::Completed, Some("again"));
    assert_eq!(w.next_line(SOON), "a2a: fake task ffff… completed");
    let out = waiter.wait_with_output().unwrap();
    assert!(t.elapsed() < SOON, "{:?}", t.elapsed());
    assert_eq!(
        (out.status.code(), out.stderr.len()),
        (Some(0), 0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(w.drain().is_empty());
}

/// Headless: the Stop hook answers at once when the task ends, with the line and the result.
#[test]
fn the_stop_hook_answers_at_once_without_its_tick() {
    let home = TempHome::new();
    let _poller = fake_poller(&home);
    let s = store(&home);
    live(&s, "fake", "abcd1234");
    let envs = [HEADLESS[0], HEADLESS[1], SLOW_TICK];
    let stop = spawn_hook(&home, "stop", &envs);
    let sock = socket(&home, notify::STOP, stop.id());
    wait_until("the Stop hook to bind its wake socket", LONG, || {
        sock.exists()
    });
    let t = Instant::now();
    end(&s, "fake", "abcd1234", TaskState::Completed, Some("built"));
    let out = stop.wait_with_output().unwrap();
    assert!(t.elapsed() < SOON, "{:?}", t.elapsed());
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["decision"], "block");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("a2a: fake task abcd… completed\n\n[a2a-mod notice"),
        "{reason}"
    );
    assert_eq!(count(reason.lines().next().unwrap()), 1);
    assert!(!s.has_undelivered().unwrap());
    // The hook after it has nothing to add.
    let (code, out) = {
        let o = home
            .command()
            .args(["hook", "user-prompt-submit"])
            .stdin(prompt_input(SESSION))
            .output();
        (o.status.code(), o.stdout)
    };
    assert_eq!((code, out.len()), (Some(0), 0));
}
