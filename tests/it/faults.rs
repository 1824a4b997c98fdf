//! Faults of the user's own machine, through the built binary's real processes: a wall
//! clock set back and forward while tasks run.

use crate::util::{SECOND, TempHome, TestCommand, hook_context, skip, wait_until};
use crate::workers::{Event, Kind, Peer, peers_dir};
use a2a_mod::testing::Ctx;
use serde_json::Value;
use std::path::PathBuf;
use std::time::Instant;

/// libfaketime as the peers' venv has it (tests/peers/requirements-v1.txt): preloaded into
/// a2a-mod's processes, their wall clock is the machine's moved by the offset in a file, read at
/// every call; the boot and monotonic clocks are left alone, as a real clock step leaves them.
fn faketime() -> Option<PathBuf> {
    let lib = peers_dir().join("venv-v1/lib");
    std::fs::read_dir(lib).ok()?.flatten().find_map(|python| {
        let so = python
            .path()
            .join("site-packages/libfaketime/vendor/libfaketime/src/libfaketime.so.1");
        so.is_file().then_some(so)
    })
}

/// A home whose a2a-mod processes (and the pollers they start) read a wall clock the test sets.
struct SetClock {
    home: TempHome,
    lib: PathBuf,
    offset: PathBuf,
}

impl SetClock {
    fn new(lib: PathBuf) -> SetClock {
        let home = TempHome::new();
        let offset = home.root().join("faketime-offset");
        let clock = SetClock { home, lib, offset };
        clock.set("+0s");
        clock
    }

    /// Sets the processes' wall clock to the machine's moved by `offset` (`-3600s`, `+1d`).
    fn set(&self, offset: &str) {
        std::fs::write(&self.offset, format!("{offset}\n")).unwrap();
    }

    fn command(&self, session: &str) -> TestCommand {
        let mut c = self.home.command();
        c.session(session)
            .env("LD_PRELOAD", &self.lib)
            .env("FAKETIME_TIMESTAMP_FILE", &self.offset)
            .env("FAKETIME_NO_CACHE", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
        c
    }

    fn ok(&self, session: &str, args: &[&str]) -> String {
        self.command(session).args(args).ok()
    }

    /// The task's elapsed time as the status line shows it, in seconds (`0:12`, `1:02:03`).
    fn shown_elapsed_s(&self, session: &str) -> i64 {
        let stdin = serde_json::json!({ "session_id": session }).to_string();
        let line = self
            .command(session)
            .arg("statusline")
            .env("NO_COLOR", "1")
            .stdin(stdin)
            .ok();
        let clock = line.split_whitespace().last().unwrap_or_default();
        assert!(!clock.contains('-'), "negative time: {line:?}");
        clock
            .split(':')
            .map(|p| {
                p.parse::<i64>()
                    .unwrap_or_else(|_| panic!("no time: {line:?}"))
            })
            .fold(0, |acc, p| acc * 60 + p)
    }

    fn log(&self) -> String {
        let ctx = Ctx::at(&self.home.a2a_home());
        std::fs::read_to_string(ctx.log_path()).unwrap_or_default()
    }
}

fn gets_of(events: &[Event], id: &str) -> Vec<i64> {
    events
        .iter()
        .filter(|e| e.is_get() && e.task_id.as_deref() == Some(id) && e.status == 200)
        .map(|e| e.at_ms)
        .collect()
}

/// The wall clock set back an hour, then on a day, while a task is tracked: the worker still sees
/// a GetTask every 5 s (±300 ms), none early and none an hour late; the task ends and is told; the
/// status line counts from the send on, never a negative time nor an hour or a day; the poller
/// logs each step and exits with the task done. Without the move, the polls stop for an hour at
/// the first step.
#[test]
fn a_clock_set_back_an_hour_and_on_a_day_keeps_the_rhythm() {
    let Some(lib) = faketime() else {
        return skip("libfaketime is not in the peers' venv: run tests/peers/setup.sh");
    };
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let clock = SetClock::new(lib);
    let s = format!("it-faults-clock-{}", std::process::id());
    clock.ok(&s, &["worker", "add", "w", &peer.url]);
    // The seed's polling contract: a stream would stand in for the polls this test counts.
    crate::util::append_timing(
        &clock.home.a2a_home(),
        "inline_polls_s = [0.2]\nstreaming = false",
    );
    let sent_at = Instant::now();
    let out = clock.ok(
        &s,
        &["send", "w", "slow 26 through a jumping clock", "--json"],
    );
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["tracked"], true, "{r}");
    let id = r["taskId"].as_str().unwrap().to_string();
    let gets = || gets_of(&peer.events(), &id);
    let steps = [
        ("-3600s", "set back by 3600 s"),
        ("+1d", "set forward by 90000 s"),
    ];
    for (n, (offset, logged)) in steps.into_iter().enumerate() {
        // Just after a poll, so the step falls between two.
        let seen = 2 + 2 * n;
        wait_until("the poller's next GetTask", 30 * SECOND, || {
            gets().len() >= seen
        });
        clock.set(offset);
        // Until the poller has seen the step (within a pass, half a second), the line counts on
        // the set clock: then it must count from the send again.
        wait_until(
            "the status line to count from the send",
            10 * SECOND,
            || {
                let shown = clock.shown_elapsed_s(&s);
                let real = sent_at.elapsed().as_secs() as i64;
                (real - 1..=real + 1).contains(&shown)
            },
        );
        assert!(clock.log().contains(logged), "{}", clock.log());
    }
    wait_until("the task to be seen completed", 30 * SECOND, || {
        let list = clock.ok(&s, &["tasks", "--json", "--session", &s]);
        list.contains("\"completed\"")
    });
    let told = hook_context(&clock.home, &s).unwrap_or_default();
    assert!(told.contains("done: through a jumping clock"), "{told}");
    assert_eq!(hook_context(&clock.home, &s), None, "told once");
    let got = gets();
    assert!(got.len() >= 6, "GetTask times {got:?}");
    let gaps: Vec<i64> = got.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|d| (d - 5000).abs() <= 300),
        "GetTask gaps {gaps:?}, want 5000 ±300 ms"
    );
    let ctx = Ctx::at(&clock.home.a2a_home());
    wait_until("the poller to exit by itself", 20 * SECOND, || {
        !a2a_mod::testing::is_running(&ctx, &s)
    });
}
