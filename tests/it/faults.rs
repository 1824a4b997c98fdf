//! Faults of the user's own machine, through the built binary's real processes: a wall
//! clock set back and forward while tasks run; an upgrade that finds stores of every earlier
//! schema step with tasks in them.

use crate::util::{SECOND, TempHome, TestCommand, hook_context, ok, send_json, skip, wait_until};
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

/// A store as the a2a-mod of schema step `step` left it (its migrations, nothing later), with a
/// task live on the worker, due now, and one that ended with `answer` and was neither announced
/// nor delivered; written with step 1's columns, which every later step keeps.
fn old_store(db: &std::path::Path, step: usize, live_id: &str, answer: &str) {
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    let c = rusqlite::Connection::open(db).unwrap();
    let _: String = c
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .unwrap();
    for m in &a2a_mod::testing::MIGRATIONS[..step] {
        c.execute_batch(m).unwrap();
    }
    c.pragma_update(None, "user_version", step as i64).unwrap();
    let now = a2a_mod::testing::now_ms();
    c.execute(
        "INSERT INTO tasks (worker, task_id, message, state, started_ms, updated_ms, tracked,
            next_poll_ms) VALUES ('w', ?1, 'live before the upgrade', 'working', ?2, ?2, 1, ?2)",
        rusqlite::params![live_id, now],
    )
    .unwrap();
    c.execute(
        "INSERT INTO tasks (worker, task_id, message, state, started_ms, updated_ms, ended_ms,
            end_reason, tracked, result)
            VALUES ('w', 'ended-before', 'ended before the upgrade', 'completed', ?1, ?1, ?1,
            'state', 0, ?2)",
        rusqlite::params![now - 1000, answer],
    )
    .unwrap();
}

/// An upgrade finds stores of every earlier schema step, each with a task still live on the
/// worker and one that ended before the upgrade but was never told: Claude Code resumed, its
/// SessionStart hook tells Claude the old ending and starts today's poller, which migrates the
/// store once to the last step and follows the live task to its end; the next prompt tells the
/// new ending, each told once; the status line renders the store as found and as migrated.
#[test]
fn stores_of_every_earlier_step_are_migrated_and_their_tasks_followed_and_told_once() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    crate::util::fast_timing(&home, "[0.2]", 0.5, 6);
    // The live tasks are made on the worker from another home, as the older a2a-mod made them.
    let maker = TempHome::new();
    ok(&maker, &["worker", "add", "w", &peer.url]);
    crate::util::fast_timing(&maker, "[0.2]", 0.5, 6);
    let ctx = Ctx::at(&home.a2a_home());
    let last = a2a_mod::testing::MIGRATIONS.len();
    let mut sessions = Vec::new();
    for step in 1..last {
        let r = send_json(&maker, "w", &format!("slow 6 live at step {step}"), &[]);
        let live = r["taskId"].as_str().unwrap().to_string();
        let s = format!("it-faults-step{step}-{}", std::process::id());
        let db = a2a_mod::testing::session::db_path(&ctx, &s);
        old_store(&db, step, &live, &format!("the answer kept at step {step}"));
        let line = status_line(&home, &s);
        assert!(
            line.is_empty() || line.starts_with("a2a-mod: "),
            "step {step}: {line:?}"
        );
        let resume = serde_json::json!({
            "session_id": s, "hook_event_name": "SessionStart", "source": "resume"
        });
        let told = home
            .command()
            .args(["hook", "session-start"])
            .env("CLAUDE_PID", std::process::id().to_string())
            .stdin(resume.to_string())
            .ok();
        assert!(
            told.contains(&format!("the answer kept at step {step}")),
            "step {step}: {told}"
        );
        sessions.push((step, s, live, db));
    }
    for (step, s, live, db) in &sessions {
        wait_until(
            &format!("step {step}'s live task to end"),
            30 * SECOND,
            || {
                let list = ok(&home, &["tasks", "--json", "--session", s]);
                serde_json::from_str::<Value>(&list)
                    .unwrap()
                    .as_array()
                    .is_some_and(|l| {
                        l.iter()
                            .any(|t| t["task_id"] == **live && t["state"] == "completed")
                    })
            },
        );
        let told = hook_context(&home, s).unwrap_or_default();
        assert!(
            told.contains(&format!("done: live at step {step}")),
            "step {step}: {told}"
        );
        assert!(!told.contains("the answer kept"), "told twice: {told}");
        assert_eq!(hook_context(&home, s), None, "step {step}: told once");
        let c = rusqlite::Connection::open(db).unwrap();
        let version: i64 = c
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, last, "step {step}");
        let line = status_line(&home, s);
        assert!(
            line.is_empty() || line.starts_with("a2a-mod: "),
            "step {step}: {line:?}"
        );
    }
}

/// The status line of `session` as Claude Code runs it, without colour (empty: nothing to show).
fn status_line(home: &TempHome, session: &str) -> String {
    let stdin = serde_json::json!({ "session_id": session }).to_string();
    home.command()
        .arg("statusline")
        .env("NO_COLOR", "1")
        .stdin(stdin)
        .ok()
}
