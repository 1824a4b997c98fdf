//! Many Claude sessions on one machine: each session's `a2a-mod mcp` server (Claude Code's
//! handshake, then 10 `send` tool calls at once) and its monitor (`a2a-mod watch`), the pollers
//! the servers start, all against one fake worker in this process (so its work is not counted),
//! with every task ending on its own a few seconds on. Prints, per kind of process, the CPU time
//! (utime + stime from `/proc/<pid>/stat`, pollers sampled every 50 ms until they exit) and the
//! peak RSS (`VmHWM`), against one session doing the same in the same run (the ratio is what a
//! session costs among 30 against alone). It also checks what must hold however many sessions
//! run: every send answered and tracked, each monitor announcing exactly its own session's tasks,
//! each session's next prompt carrying exactly its own results, and every poller gone once its
//! session's tasks are done; it panics otherwise.
//!
//! `cargo bench --bench sessions` runs 30 sessions × 10 tasks of 10 s; run any other way
//! (`cargo test --all-targets` runs benches in debug), a smoke run of 2 × 3 tasks of 1 s.
//! `A2A_MOD_BENCH_SESSIONS` and `A2A_MOD_BENCH_TASKS` change the size.

#![forbid(unsafe_code)]
#![expect(
    clippy::too_many_lines,
    reason = "a bench reads as the run it measures, however long"
)]
#![expect(clippy::print_stdout, reason = "a bench reports its figures on stdout")]

mod common;
use a2a_mod::testing::{FakeWorker, FakeWorkerOptions};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-mod");
const PROBE: &str =
    r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{}}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"claude-code","version":"2.1.332"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}"#;
/// How long anything may take before the run is called broken.
const PATIENCE: Duration = Duration::from_secs(90);

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Mcp,
    Monitor,
    Poller,
}

const KINDS: [Kind; 3] = [Kind::Mcp, Kind::Monitor, Kind::Poller];

/// CPU and peak memory of each process seen, by pid.
#[derive(Default)]
struct Seen {
    procs: HashMap<u32, (Kind, Duration, u64)>,
}

impl Seen {
    fn sample(&mut self, pid: u32, kind: Kind) {
        let Some(cpu) = common::cpu_of(pid) else {
            return;
        };
        let rss = common::peak_rss_kib(pid);
        let e = self.procs.entry(pid).or_insert((kind, cpu, rss));
        e.1 = e.1.max(cpu);
        e.2 = e.2.max(rss);
    }

    /// Processes, CPU in all, the largest peak RSS and the sum of the peaks, of one kind.
    fn of(&self, kind: Kind) -> (usize, Duration, u64, u64) {
        let mine: Vec<_> = self.procs.values().filter(|p| p.0 == kind).collect();
        (
            mine.len(),
            mine.iter().map(|p| p.1).sum(),
            mine.iter().map(|p| p.2).max().unwrap_or(0),
            mine.iter().map(|p| p.2).sum(),
        )
    }
}

/// The running `a2a-mod poller --session <prefix>…` processes, with their session.
fn pollers(prefix: &str) -> Vec<(u32, String)> {
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let raw = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            let at = args.iter().position(|a| a == "poller")?;
            (args.get(at + 1)? == "--session")
                .then(|| args.get(at + 2).cloned())
                .flatten()
                .filter(|s| s.starts_with(prefix))
                .map(|s| (pid, s))
        })
        .collect()
}

/// A process's stdout, line by line, on a channel.
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

struct Session {
    id: String,
    mcp: Child,
    mcp_in: Option<ChildStdin>,
    mcp_out: mpsc::Receiver<String>,
    monitor: Child,
    monitor_out: mpsc::Receiver<String>,
}

fn command(home: &std::path::Path, session: &str, arg: &str) -> Command {
    let mut c = Command::new(BIN);
    c.arg(arg)
        .env("A2A_MOD_HOME", home)
        .env("CLAUDE_CODE_SESSION_ID", session)
        .env_remove("CLAUDE_PID")
        .env_remove("A2A_MOD_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

/// The message of task `t` of session `s`, which the worker's result repeats.
fn word(s: usize, t: usize) -> String {
    format!("s{s:02}-t{t:02}")
}

/// How many tasks a monitor line announces: `a2a: w task 1a2b… completed` or
/// `a2a: 3 tasks finished (…)`.
fn announced(line: &str) -> usize {
    line.strip_prefix("a2a: ")
        .and_then(|r| r.split_once(" tasks finished"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or(usize::from(line.starts_with("a2a: ")))
}

struct Figures {
    seen: Seen,
    /// From the last send's answer to the last poller gone.
    sent_to_gone: Duration,
}

fn run(worker: &str, sessions: usize, tasks: usize, task_s: f64) -> Figures {
    let home = tempfile::tempdir().expect("temp home");
    std::fs::write(
        home.path().join("config.toml"),
        format!("[workers.w]\nurl = \"{worker}\"\n\n[timing]\ninline_polls_s = [0.2]\n"),
    )
    .expect("write config");
    let prefix = format!("bench-many-{}-{sessions}-", std::process::id());
    let mut all: Vec<Session> = (0..sessions)
        .map(|i| {
            let id = format!("{prefix}{i:02}");
            let mut mcp = command(home.path(), &id, "mcp").spawn().expect("spawn mcp");
            let mcp_out = lines_of(&mut mcp);
            let mut monitor = command(home.path(), &id, "watch")
                .spawn()
                .expect("spawn watch");
            let monitor_out = lines_of(&mut monitor);
            let mcp_in = mcp.stdin.take();
            Session {
                id,
                mcp,
                mcp_in,
                mcp_out,
                monitor,
                monitor_out,
            }
        })
        .collect();
    let mut seen = Seen::default();
    // Claude Code's handshake, then every send at once, session after session.
    for (i, s) in all.iter_mut().enumerate() {
        let w = s.mcp_in.as_mut().expect("stdin");
        writeln!(w, "{PROBE}\n{INIT}").expect("write handshake");
        let up = Instant::now();
        loop {
            let line = s
                .mcp_out
                .recv_timeout(PATIENCE.saturating_sub(up.elapsed()))
                .expect("the MCP server's initialize reply");
            if line.contains(r#""id":0"#) {
                break;
            }
        }
        writeln!(w, "{INITIALIZED}").expect("write initialized");
        for t in 0..tasks {
            let call = json!({"jsonrpc":"2.0","id":t + 1,"method":"tools/call","params":{
                "name":"send","arguments":{"worker":"w","message":format!("slow {task_s} {}", word(i, t))},
                "_meta":{"claudecode/toolUseId":format!("toolu_{i}_{t}"),"progressToken":t + 1}}});
            writeln!(w, "{call}").expect("write tools/call");
        }
    }
    let sample = |seen: &mut Seen, all: &[Session]| {
        for s in all {
            seen.sample(s.mcp.id(), Kind::Mcp);
            seen.sample(s.monitor.id(), Kind::Monitor);
        }
        for (pid, _) in pollers(&prefix) {
            seen.sample(pid, Kind::Poller);
        }
    };
    // Every send answered, tracked (still running after its short window).
    let start = Instant::now();
    for s in &all {
        let mut answers = 0;
        while answers < tasks {
            sample(&mut seen, &all);
            let Ok(line) = s.mcp_out.recv_timeout(Duration::from_millis(50)) else {
                assert!(start.elapsed() < PATIENCE, "{}: sends unanswered", s.id);
                continue;
            };
            let v: Value = serde_json::from_str(&line).expect("JSON from the MCP server");
            if v.get("id").is_some() && v.get("method").is_none() {
                let r = &v["result"]["structuredContent"];
                assert_eq!(r["tracked"], true, "{}: {v}", s.id);
                answers += 1;
            }
        }
    }
    let sent = Instant::now();
    // Each monitor announces its own session's tasks, no more, no fewer.
    let mut counts = vec![0; sessions];
    while counts.iter().any(|c| *c < tasks) {
        assert!(
            sent.elapsed() < PATIENCE,
            "announced per session: {counts:?}"
        );
        sample(&mut seen, &all);
        for (i, s) in all.iter().enumerate() {
            while let Ok(l) = s.monitor_out.try_recv() {
                counts[i] += announced(&l);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every poller gone once its session's tasks are done.
    while !pollers(&prefix).is_empty() {
        assert!(
            sent.elapsed() < PATIENCE,
            "pollers left: {:?}",
            pollers(&prefix)
        );
        sample(&mut seen, &all);
        std::thread::sleep(Duration::from_millis(50));
    }
    let sent_to_gone = sent.elapsed();
    sample(&mut seen, &all);
    assert!(
        counts.iter().all(|c| *c == tasks),
        "announced per session: {counts:?}"
    );
    // Each session's next prompt carries its own results and no other session's.
    for (i, s) in all.iter().enumerate() {
        let prompt =
            json!({"session_id": s.id, "hook_event_name": "UserPromptSubmit", "prompt": "next"});
        let mut hook = command(home.path(), &s.id, "hook");
        hook.arg("user-prompt-submit");
        let mut child = hook.spawn().expect("spawn hook");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(prompt.to_string().as_bytes())
            .expect("write hook input");
        let out = child.wait_with_output().expect("hook output");
        let told = String::from_utf8_lossy(&out.stdout);
        for t in 0..tasks {
            assert!(told.contains(&word(i, t)), "{}: {told}", s.id);
        }
        for other in (0..sessions).filter(|o| *o != i) {
            assert!(!told.contains(&format!("s{other:02}-")), "{}: {told}", s.id);
        }
        for l in s.monitor_out.try_iter() {
            counts[i] += announced(&l);
        }
        assert_eq!(counts[i], tasks, "{}: announced again", s.id);
    }
    for s in &mut all {
        drop(s.mcp_in.take());
        let _ = s.monitor.kill();
        let _ = s.mcp.wait();
        let _ = s.monitor.wait();
    }
    Figures { seen, sent_to_gone }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let number = |key: &str, full_size: usize, smoke: usize| -> usize {
        std::env::var(key)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if full { full_size } else { smoke })
    };
    let sessions = number("A2A_MOD_BENCH_SESSIONS", 30, 2).max(1);
    let tasks = number("A2A_MOD_BENCH_TASKS", 10, 3).max(1);
    let task_s = if full { 10.0 } else { 1.0 };
    println!(
        "{}",
        common::header(
            "sessions",
            &format!(", {sessions} sessions × {tasks} tasks of {task_s} s against 1 session"),
            full
        )
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let worker = rt
        .block_on(FakeWorker::start(FakeWorkerOptions::default()))
        .expect("start the fake worker");
    let one = run(&worker.url, 1, tasks, task_s);
    let many = run(&worker.url, sessions, tasks, task_s);
    println!(
        "  {:<8} {:>5} {:>12} {:>14} {:>11} {:>13} {:>12}",
        "kind", "procs", "CPU ms", "CPU ms/session", "vs alone", "peak RSS KiB", "sum RSS MiB"
    );
    for kind in KINDS {
        let (n1, cpu1, _, _) = one.seen.of(kind);
        let (n, cpu, peak, sum) = many.seen.of(kind);
        let per = cpu.as_secs_f64() * 1000.0 / sessions as f64;
        let alone = cpu1.as_secs_f64() * 1000.0 / n1.max(1) as f64;
        println!(
            "  {:<8} {n:>5} {:>12.0} {per:>14.1} {:>10.2}× {peak:>13} {:>12.1}",
            format!("{kind:?}"),
            cpu.as_secs_f64() * 1000.0,
            if alone > 0.0 { per / alone } else { f64::NAN },
            sum as f64 / 1024.0
        );
    }
    let total: Duration = KINDS.iter().map(|k| many.seen.of(*k).1).sum();
    println!(
        "  all: {:.0} ms of CPU for {} tasks ({:.1} ms a task); the last poller gone {:.1} s after the last send's answer (1 session: {:.1} s)",
        total.as_secs_f64() * 1000.0,
        sessions * tasks,
        total.as_secs_f64() * 1000.0 / (sessions * tasks) as f64,
        many.sent_to_gone.as_secs_f64(),
        one.sent_to_gone.as_secs_f64()
    );
}
