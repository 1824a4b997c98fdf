//! Faults of the user's own machine, through the built binary's real processes: a wall
//! clock set back and forward while tasks run; an upgrade that finds stores of every earlier
//! schema step with tasks in them; `kill -9` of the poller, the MCP server or the monitor at
//! thirty points; a state folder whose disk fills or that turns read-only. Many sessions at
//! once are `benches/sessions.rs`.

use crate::poller::{gets_of, tasks};
use crate::util::{SECOND, TempHome, TestCommand, hook_context, ok, send_json, skip, wait_until};
use crate::workers::{Kind, Peer, peers_dir};
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

/// The wall clock set back an hour, then on a day, while a task is tracked: the worker still sees
/// a GetTask every interval (1 s here, ±300 ms), none early and none an hour late; the task ends and is told; the
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
        "inline_polls_s = [0.2]\npoll_interval_s = 1\nstreaming = false",
    );
    let sent_at = Instant::now();
    let out = clock.ok(
        &s,
        &["send", "w", "slow 9 through a jumping clock", "--json"],
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
        // Just after a poll, so the step falls between two; two seconds in at least, so a line
        // clamped to 0:00 cannot pass for one counting from the send.
        let seen = 3 + 3 * n;
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
        wait_until("the poller to log the step", 5 * SECOND, || {
            clock.log().contains(logged)
        });
    }
    wait_until("the task to be seen completed", 30 * SECOND, || {
        let list = clock.ok(&s, &["tasks", "--json", "--session", &s]);
        list.contains("\"completed\"")
    });
    let told = hook_context(&clock.home, &s).unwrap_or_default();
    assert!(told.contains("done: through a jumping clock"), "{told}");
    assert_eq!(hook_context(&clock.home, &s), None, "told once");
    let got = gets();
    assert!(got.len() >= 7, "GetTask times {got:?}");
    let gaps: Vec<i64> = got.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        gaps.iter().all(|d| (d - 1000).abs() <= 300),
        "GetTask gaps {gaps:?}, want 1000 ±300 ms"
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
                tasks(&home, s)
                    .iter()
                    .any(|t| t["task_id"] == **live && t["state"] == "completed")
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

/// `a2a-mod mcp` as Claude Code runs it, driven line by line, so it can be killed at any moment
/// with what it answered before kept.
struct McpProc {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
    next_id: u64,
}

impl McpProc {
    /// Spawned, past Claude Code's handshake.
    fn start(home: &TempHome, session: &str) -> McpProc {
        let mut child = home
            .command()
            .session(session)
            .env_remove("CLAUDE_PID")
            .arg("mcp")
            .stdin_pipe()
            .spawn();
        let stdin = child.stdin.take();
        let out = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut m = McpProc {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        m.write(
            &serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"claude-code","version":"2.1.332"}}}),
        );
        loop {
            let l = m.lines.recv_timeout(30 * SECOND).expect("initialize reply");
            if l.contains(r#""id":0"#) {
                break;
            }
        }
        m.write(&serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        m
    }

    fn write(&mut self, v: &Value) {
        use std::io::Write;
        let w = self.stdin.as_mut().expect("stdin");
        writeln!(w, "{v}").expect("write to the MCP server");
    }

    /// A `send` tool call, not waited for.
    fn send(&mut self, message: &str) {
        let id = self.next_id;
        self.next_id += 1;
        self.write(
            &serde_json::json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
            "name":"send","arguments":{"worker":"w","message":message},
            "_meta":{"claudecode/toolUseId":format!("toolu_{id}"),"progressToken":id}}}),
        );
    }

    /// The tool results it has answered so far (their text, as Claude reads it).
    fn results(&self) -> Vec<String> {
        tool_results(self.lines.try_iter())
    }

    /// `kill -9`; the results it answered before (none is lost in the pipe).
    fn kill9(mut self) -> Vec<String> {
        let _ = self.child.kill();
        let _ = self.child.wait();
        tool_results(std::iter::from_fn(|| {
            self.lines.recv_timeout(5 * SECOND).ok()
        }))
    }
}

/// The text of each tool result among an MCP server's stdout lines.
fn tool_results(lines: impl Iterator<Item = String>) -> Vec<String> {
    lines
        .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
        .filter(|v| v.get("id").is_some() && v.get("method").is_none())
        .map(|v| v["result"]["content"].to_string())
        .collect()
}

impl Drop for McpProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Victim {
    Poller,
    Mcp,
    Monitor,
}

/// One kill point: a session sends four tasks through the MCP server (one ends inside its
/// window, three in the background a little apart, streamed and polled), with its monitor
/// running; `after` the sends, `victim` is `kill -9`ed, and what Claude Code would restart is
/// restarted (a new MCP server, a new monitor; a poller is restarted by the running monitor).
/// Then every task the store holds ends; each ending reaches Claude exactly once, in a tool
/// result or in the next prompt's hidden context; the monitors announce each background ending
/// once; the status line renders. Whether the victim had a process to kill.
fn kill_point(home: &TempHome, k: usize, victim: Victim, after: std::time::Duration) -> bool {
    use crate::wake::{Watch, count};
    let s = format!("it-faults-kill{k:02}-{}", std::process::id());
    let word = |t: char| format!("k{k:02}{t}");
    let mut watch = Watch::start_in(home, &s, &[]);
    let mut mcp = McpProc::start(home, &s);
    for (t, secs) in [('a', 0.2), ('b', 0.9), ('c', 1.6), ('d', 2.4)] {
        mcp.send(&format!("slow {secs} {}", word(t)));
    }
    // The kill point itself: a time after the sends, not a wait for something.
    std::thread::sleep(after);
    let mut results = Vec::new();
    let mut announced = Vec::new();
    // A monitor killed between printing a line and committing its claim leaves that batch
    // unannounced in the store, and the next monitor announces it again: a wake-up may come
    // twice after a crash, never not at all (its outcome still reaches Claude once, checked
    // below). How many were printed but not marked is read from the store while no monitor runs.
    let mut replayed = 0;
    let killed = match victim {
        Victim::Poller => {
            let pids = crate::poller::pollers(&s);
            for pid in &pids {
                a2a_mod_os::process::signal(*pid, a2a_mod_os::process::Signal::Kill);
            }
            !pids.is_empty()
        }
        Victim::Mcp => {
            results.extend(mcp.kill9());
            mcp = McpProc::start(home, &s);
            true
        }
        Victim::Monitor => {
            let drained = watch.kill9_and_drain();
            let printed: usize = drained.iter().map(|l| count(l)).sum();
            // Marked by a monitor: announced, not yet given to Claude (a task told in its
            // send's result is both).
            let marked = crate::util::task_rows(&home.a2a_home(), &s)
                .iter()
                .filter(|t| t.announced_ms.is_some() && t.delivered_ms.is_none())
                .count();
            assert!(
                marked <= printed,
                "{k}: {marked} marked, {printed} printed: {drained:?}"
            );
            replayed = printed - marked;
            announced.extend(drained);
            watch = Watch::start_in(home, &s, &[]);
            true
        }
    };
    let rows = || tasks(home, &s);
    let why = || format!("kill point {k}: {victim:?} at {after:?}");
    // Every send answered (but those of a server killed before it answered: their tasks may or
    // may not have been recorded), then every task recorded has ended.
    if victim != Victim::Mcp {
        wait_until(
            &format!("{}: every send answered", why()),
            30 * SECOND,
            || {
                results.extend(mcp.results());
                results.len() == 4
            },
        );
    }
    wait_until(
        &format!("{}: every task to end", why()),
        30 * SECOND,
        || rows().iter().all(|t| !t["ended_ms"].is_null()),
    );
    results.extend(mcp.results());
    let tasks = rows();
    let told_inline = |w: &str| results.iter().filter(|r| r.contains(w)).count();
    let background = tasks
        .iter()
        .filter(|t| {
            let w = t["message"].as_str().unwrap().rsplit(' ').next().unwrap();
            told_inline(&format!("done: {w}")) == 0
        })
        .count();
    let mut woken: usize = announced.iter().map(|l| count(l)).sum();
    while woken < background + replayed {
        let Some(line) = watch.line_within(15 * SECOND) else {
            panic!(
                "{}: {woken} of {background} background endings announced: {announced:?}; \
                 tool results {results:?}; tasks {tasks:#?}",
                why()
            );
        };
        woken += count(&line);
        announced.push(line);
    }
    let told = hook_context(home, &s).unwrap_or_default();
    for t in &tasks {
        let w = t["message"].as_str().unwrap().rsplit(' ').next().unwrap();
        let done = format!("done: {w}");
        assert_eq!(
            told_inline(&done) + told.matches(&done).count(),
            1,
            "{}: the ending of {w} reached Claude other than once: tool results {results:?}, \
             hidden context {told:?}",
            why()
        );
    }
    assert_eq!(hook_context(home, &s), None, "{}", why());
    announced.extend(watch.kill9_and_drain());
    let woken: usize = announced.iter().map(|l| count(l)).sum();
    assert_eq!(
        woken,
        background + replayed,
        "{}: {replayed} replayed after the kill: {announced:?}",
        why()
    );
    let line = status_line(home, &s);
    assert!(
        line.is_empty() || line.starts_with("a2a-mod: "),
        "{}: {line:?}",
        why()
    );
    drop(mcp);
    wait_until(
        &format!("{}: the poller to exit", why()),
        20 * SECOND,
        || crate::poller::pollers(&s).is_empty(),
    );
    killed
}

/// `kill -9` at thirty points spread over a session's first seconds (the sends, their records
/// and inline windows, the polls and stream events that end three background tasks, the
/// monitor's claims and announcements), ten each of the poller, the MCP server and the
/// monitor: afterwards no task is left live, each ending reaches Claude exactly once (in a tool
/// result or the next prompt's hidden context), each background ending is announced once, and
/// the status line renders ([`kill_point`]). Three homes run their points side by side.
#[test]
fn a_kill_at_any_point_loses_no_task_and_tells_each_ending_once() {
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on"]) else {
        return;
    };
    let tried: Vec<(Victim, std::time::Duration, bool)> = std::thread::scope(|scope| {
        let runs: Vec<_> = [Victim::Poller, Victim::Mcp, Victim::Monitor]
            .into_iter()
            .enumerate()
            .map(|(v, victim)| {
                let url = peer.url.clone();
                scope.spawn(move || {
                    let home = TempHome::new();
                    ok(&home, &["worker", "add", "w", &url]);
                    crate::util::append_timing(
                        &home.a2a_home(),
                        "inline_polls_s = [0.1, 0.3]\npoll_interval_s = 0.5",
                    );
                    (0..10)
                        .map(|i| {
                            let after = std::time::Duration::from_millis(50 + 270 * i as u64);
                            let killed = kill_point(&home, v * 10 + i, victim, after);
                            (victim, after, killed)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        runs.into_iter().flat_map(|r| r.join().unwrap()).collect()
    });
    let killed = tried.iter().filter(|t| t.2).count();
    eprintln!(
        "kill points tried: {} ({killed} with a process to kill)",
        tried.len()
    );
    // A poller killed at the first points may not have started yet; most must have been hit.
    assert!(killed >= 25, "{tried:?}");
}

/// A small tmpfs mounted over a home's state folder (as root; unmounted on drop), so a test can
/// fill it or make it read-only under a2a-mod's running processes.
struct SmallDisk {
    dir: PathBuf,
}

impl SmallDisk {
    fn mount(home: &TempHome, size: &str) -> Option<SmallDisk> {
        let dir = home.a2a_home().join("state");
        std::fs::create_dir_all(&dir).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(&dir)
            .output()
            .ok()?;
        out.status.success().then_some(SmallDisk { dir })
    }

    /// Writes a file until the disk is full.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.dir.join("filler")).unwrap();
        let chunk = vec![b'x'; 64 * 1024];
        while f.write_all(&chunk).and_then(|()| f.flush()).is_ok() {}
    }

    fn free(&self) {
        std::fs::remove_file(self.dir.join("filler")).unwrap();
    }

    /// Remounts it read-only (`true`) or writable again.
    fn read_only(&self, ro: bool) {
        let how = if ro { "remount,ro" } else { "remount,rw" };
        let ok = std::process::Command::new("mount")
            .args(["-o", how])
            .arg(&self.dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount -o {how}");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// The state folder stops taking writes while two tasks run, one with a 3 MB result: the disk
/// fills, or (the second run) the folder turns read-only. Meanwhile the status line renders and
/// says why nothing moves, and so does the prompt hook's context to Claude; a send tells Claude in one line what could not be saved and where its
/// task stands (the worker asked to cancel it); the tasks stay tracked, nothing is told early,
/// and a full disk keeps its poller. Once the disk has room (the folder is writable again) all
/// carries on: both tasks end, each result is told once (the long one saved whole), and each
/// ending is announced once.
fn the_state_folder_stops_taking_writes(read_only: bool) {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    let Some(disk) = SmallDisk::mount(&home, "8m") else {
        return skip("cannot mount a tmpfs here (the fault tests of a full disk need root)");
    };
    let s = format!("it-faults-disk-{read_only}-{}", std::process::id());
    let run = |args: &[&str]| home.command().session(&s).args(args).output();
    let ok = |args: &[&str]| home.command().session(&s).args(args).ok();
    ok(&["worker", "add", "w", &peer.url]);
    crate::util::append_timing(
        &home.a2a_home(),
        "inline_polls_s = [0.2]\npoll_interval_s = 0.5\nstreaming = false",
    );
    let mut ids = Vec::new();
    let sent_ms = a2a_mod::testing::now_ms();
    for message in ["tokens 3000000 65536 2", "slow 2 small"] {
        let r: Value = serde_json::from_str(&ok(&["send", "w", message, "--json"])).unwrap();
        assert_eq!(r["tracked"], true, "{r}");
        ids.push(r["taskId"].as_str().unwrap().to_string());
    }
    // A filesystem with a file open for writing cannot be remounted read-only, so here the
    // session is closed first (its poller killed), and its monitor comes back on the read-only
    // folder and tries to start a poller every 2 s, in vain until the folder is writable.
    let mut watch = None;
    let why = if read_only {
        for pid in crate::poller::pollers(&s) {
            a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
        }
        wait_until("the poller to be gone", 10 * SECOND, || {
            crate::poller::pollers(&s).is_empty()
        });
        disk.read_only(true);
        watch = Some(crate::wake::Watch::start_in(&home, &s, &[]));
        "it is read-only"
    } else {
        disk.fill();
        "the disk is full"
    };
    // A send now: on a full disk the worker takes the task and the store cannot, so the worker
    // is asked to cancel it; a read-only store cannot be opened for the send at all, and the
    // worker is asked nothing.
    let sends = || peer.events().iter().filter(|e| e.is_send()).count();
    let before = sends();
    let out = run(&["send", "w", "slow 30 not saved", "--json"]);
    let err = crate::util::one_line_error(&out, &"send on a state folder that takes no writes");
    assert!(err.contains("cannot save to") && err.contains(why), "{err}");
    if read_only {
        assert_eq!(sends(), before, "{err}");
    } else {
        assert!(
            err.contains("could not be saved") && err.contains("cancel"),
            "{err}"
        );
    }
    // The worker ends both at 2 s; the poller is told so at its polls after that (twice each),
    // can record none of it, and stays.
    let polled_ended = |id: &str| {
        peer.events()
            .iter()
            .filter(|e| e.is_get() && e.status == 200 && e.task_id.as_deref() == Some(id))
            .filter(|e| e.at_ms > sent_ms + 2_500)
            .count()
    };
    if read_only {
        // Nothing can poll: the tasks end on the worker unseen (at 2 s, and some time after).
        wait_until("the tasks to end on the worker", 10 * SECOND, || {
            a2a_mod::testing::now_ms() > sent_ms + 3_000
        });
        assert!(
            crate::poller::pollers(&s).is_empty(),
            "no poller on a read-only store"
        );
    } else {
        wait_until("the poller to see both ended", 30 * SECOND, || {
            ids.iter().all(|id| polled_ended(id) >= 2)
        });
        assert!(!crate::poller::pollers(&s).is_empty(), "the poller stays");
    }
    let line = status_line(&home, &s);
    let shown = if read_only {
        "state folder read-only"
    } else {
        "disk full"
    };
    assert!(
        line.starts_with("a2a-mod: ") && line.contains(&format!("cannot save: {shown}")),
        "{line:?}"
    );
    let live = tasks(&home, &s);
    assert!(live.iter().all(|t| t["state"] == "working"), "{live:?}");
    // Claude is told too, at the prompt: why, where, the fix; no outcome before it is saved.
    let told = hook_context(&home, &s).unwrap_or_default();
    assert!(
        told.contains("cannot save to")
            && told.contains(why)
            && told.contains("The 2 delegated tasks still running are kept"),
        "{told}"
    );
    assert!(
        !told.contains("completed"),
        "nothing is told before it is saved: {told}"
    );
    if read_only {
        disk.read_only(false);
    } else {
        disk.free();
    }
    wait_until("both tasks to be seen completed", 30 * SECOND, || {
        tasks(&home, &s)
            .iter()
            .filter(|t| t["state"] == "completed")
            .count()
            == 2
    });
    let told = hook_context(&home, &s).unwrap_or_default();
    assert!(told.contains("done: small"), "{told}");
    for id in &ids {
        assert_eq!(
            told.matches(&format!("task {id} completed")).count(),
            1,
            "{told}"
        );
    }
    assert_eq!(hook_context(&home, &s), None, "told once");
    let saved = crate::util::files_under(&disk.dir.join("results").join(&s).join(&ids[0]));
    assert!(
        saved
            .iter()
            .any(|f| std::fs::metadata(f).is_ok_and(|m| m.len() == 3_000_000)),
        "the long result saved whole: {saved:?}"
    );
    let line = status_line(&home, &s);
    assert!(!line.contains("cannot save"), "{line:?}");
    if let Some(mut w) = watch {
        // The monitor announced each ending once, however often it failed to start a poller.
        let mut lines = Vec::new();
        let mut woken = 0;
        while woken < ids.len() {
            let l = w.next_line(15 * SECOND);
            woken += crate::wake::count(&l);
            lines.push(l);
        }
        lines.extend(w.kill9_and_drain());
        let woken: usize = lines.iter().map(|l| crate::wake::count(l)).sum();
        assert_eq!(woken, ids.len(), "{lines:?}");
    }
    wait_until("the poller to exit", 20 * SECOND, || {
        crate::poller::pollers(&s).is_empty()
    });
}

#[test]
fn a_full_disk_holds_everything_and_it_resumes_when_space_returns() {
    the_state_folder_stops_taking_writes(false)
}

#[test]
fn a_read_only_state_folder_holds_everything_and_it_resumes_when_writable() {
    the_state_folder_stops_taking_writes(true)
}
