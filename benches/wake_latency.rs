//! Wake latency in the real Claude Code CLI: from a delegated
//! task's end at the worker to the request Claude Code sends the model by itself carrying the wake
//! line, for a worker that streams (`fake-worker --streaming on`) and one that is only polled,
//! side by side, and for two tasks of a streaming worker that end at one instant
//! (`slow-until`, sent in one turn), which must share one wake-up.
//!
//! Each run: the scripted model (tests/it/fake/model_api.rs) calls `send` with `slow N rKx`, its
//! turn ends, and the task ends N s after the worker got it (the fake worker's time model; the
//! send's time is in its request log). N is spread over a whole 5 s poll interval, always longer
//! than the ~7.5 s inline window, so every task is a background task. The wake request must carry
//! the result as hidden context (our hooks' `role:"system"` message), or the run fails: the hooks'
//! context is ready by the time the wake line is read.
//!
//! Run: `cargo bench --bench wake_latency` (release binary, seed timing). `A2A_MOD_BENCH_ROUNDS`
//! sets the runs per worker kind (default 10), `A2A_MOD_BENCH_ONLY=streaming,together` the kinds,
//! `A2A_MOD_IT_BIN=/other/a2a-mod` the build measured (another build's figures, for a before and
//! after). The kinds run at once, each in its own tmux,
//! Claude Code and worker. Prints p50/p95 per kind and the split "first poll after the end → wake"
//! (what a2a-mod and Claude Code add after the poller saw the end). Skips with a message when
//! `claude` or `tmux` is missing. Without `--bench` (`cargo test --all-targets`) it runs nothing:
//! one run takes a minute of real time.
//!
//! Goals: streaming p50 ≤ 1 s, p95 ≤ 1.5 s; polling-only p95 ≤ 6.5 s.

#![forbid(unsafe_code)]
#![expect(
    clippy::too_many_lines,
    reason = "a bench reads as the run it measures, however long"
)]
#![expect(
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::unwrap_used,
    reason = "a bench prints its figures, and a failed set-up is a bug in the bench itself"
)]
#![allow(
    dead_code,
    unused_imports,
    reason = "it shares the integration tests' harness files, of which it uses a part"
)]

#[path = "../tests/it/fake/mod.rs"]
mod fake;
#[path = "../tests/it/peers/mod.rs"]
mod peers;
#[path = "../tests/it/util.rs"]
mod util;
#[path = "../tests/it/workers.rs"]
mod workers;

use a2a_mod::testing::now_ms;
use fake::model_api::{FakeModelApi, Recorded, Reply, Rule, Script};
use peers::claude::{ClaudeOpts, ClaudeSession, SEND, TOOLS};
use serde_json::json;
use std::time::{Duration, Instant};
use util::{TempHome, bin, ok};
use workers::{Kind, Peer, repo};

const LONG: Duration = Duration::from_secs(90);
/// Task lengths: the shortest background task, then spread over one poll interval.
const SHORTEST_S: f64 = 8.0;
const POLL_INTERVAL_S: f64 = 5.0;

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    if !measuring {
        println!(
            "note: not run by `cargo bench`: the real-Claude wake-latency runs take minutes; \
             run `cargo bench --bench wake_latency`"
        );
        return;
    }
    if let Some(missing) = peers::claude::missing_tools() {
        println!("SKIPPED: wake_latency needs the real Claude Code CLI and tmux: {missing}");
        return;
    }
    let runs: usize = std::env::var("A2A_MOD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
        .max(1);
    // The shared target dir's binary may be relinked by another checkout during the minutes
    // this runs: use a private copy of this build's.
    let keep = tempfile::tempdir().expect("temp dir");
    if std::env::var_os("A2A_MOD_IT_BIN").is_none() {
        let copy = keep.path().join("a2a-mod");
        std::fs::copy(env!("CARGO_BIN_EXE_a2a-mod"), &copy).expect("copy the binary");
        util::use_bin(copy);
    }
    println!(
        "wake latency, real Claude Code: {runs} runs per worker, tasks of {SHORTEST_S}–{} s, \
         poll interval {POLL_INTERVAL_S} s (seed timing), binary {}",
        SHORTEST_S + POLL_INTERVAL_S,
        bin().display()
    );
    let only = std::env::var("A2A_MOD_BENCH_ONLY").unwrap_or_default();
    // The Python a2a-sdk peer over each binding: the same server, JSON-RPC against HTTP+JSON
    // (`--rest-only`: a card offering only REST), so the two streams are compared like for like.
    let kinds = [
        (
            "streaming",
            Kind::Fake,
            &["--streaming", "on"][..],
            Tasks::Lone,
        ),
        ("polling-only", Kind::Fake, &[][..], Tasks::Lone),
        (
            "together",
            Kind::Fake,
            &["--streaming", "on"][..],
            Tasks::Together,
        ),
        ("py-jsonrpc", Kind::PyV1, &[][..], Tasks::Lone),
        ("py-rest", Kind::PyV1, &["--rest-only"][..], Tasks::Lone),
    ];
    let handles: Vec<_> = kinds
        .iter()
        .filter(|(name, ..)| only.is_empty() || only.split(',').any(|o| o.trim() == *name))
        .map(|(name, kind, args, tasks)| {
            let (name, kind, args, tasks) = (*name, *kind, args.to_vec(), *tasks);
            std::thread::spawn(move || (name, measure(name, kind, &args, tasks, runs)))
        })
        .collect();
    let mut results = Vec::new();
    for h in handles {
        match h.join() {
            Ok((name, Some(r))) => results.push((name, r)),
            Ok((name, None)) => println!("{name}: skipped"),
            Err(_) => panic!("a worker kind's runs failed (see the panic above)"),
        }
    }
    println!();
    println!(
        "{:<13} {:>4} {:>9} {:>9} {:>9}   {:>22}",
        "worker", "runs", "p50 ms", "p95 ms", "max ms", "after first poll p50/p95"
    );
    for (name, r) in &results {
        let total: Vec<i64> = r.iter().map(|s| s.latency).collect();
        let after: Vec<i64> = r.iter().filter_map(|s| s.after_seen).collect();
        let split = if after.is_empty() {
            "—".to_string()
        } else {
            format!("{} / {} ms", pct(&after, 50), pct(&after, 95))
        };
        println!(
            "{name:<13} {:>4} {:>9} {:>9} {:>9}   {split:>22}",
            total.len(),
            pct(&total, 50),
            pct(&total, 95),
            total.iter().max().unwrap()
        );
    }
    for (name, r) in &results {
        let line: Vec<String> = r
            .iter()
            .map(|s| format!("{:.2}s→{}ms", s.length_s, s.latency))
            .collect();
        println!("{name} runs: {}", line.join(", "));
    }
    println!(
        "goals: streaming p50 ≤ 450 ms (a lone task wakes without the batching settle), \
         p95 ≤ 1500 ms; polling-only p95 ≤ 6500 ms; together: one wake-up for both; \
         py-rest within py-jsonrpc (HTTP+JSON streams as JSON-RPC does)"
    );
}

/// What one run sends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Tasks {
    /// One task, `slow N rKx`.
    Lone,
    /// Two in one turn, `slow-until T rKx` and `rKy`, ending at the worker at one instant T.
    Together,
}

/// How far ahead of the model's turn two tasks sent together end: past both sends' inline
/// windows, which Claude Code runs one after the other (~7.5 s each, and the first task's end
/// inside the second's window would reach Claude with that call), so both end in the background.
const TOGETHER_AHEAD_MS: i64 = 20_000;

/// When each run's two tasks end (Unix ms), by run, as the scripted model chose it.
type Ends = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, i64>>>;

/// One run's figures.
struct Sample {
    length_s: f64,
    /// Task end at the worker → the wake request at the model.
    latency: i64,
    /// The first poll after the end → the wake request, when a poll saw it.
    after_seen: Option<i64>,
}

/// Nearest-rank percentile.
fn pct(v: &[i64], p: usize) -> i64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    let rank = (p * v.len()).div_ceil(100).max(1);
    v[rank - 1]
}

/// Wall-clock time a request arrived at the fake model.
fn wall_ms(r: &Recorded) -> i64 {
    now_ms() - r.at.elapsed().as_millis() as i64
}

fn is_wake(r: &Recorded) -> bool {
    r.is_main_loop() && r.new_text().contains("<task-notification>")
}

/// `rK`, the run in a task's message and so in its result (`done: rKx`, and `rKy` for the second
/// of two), as the scripted model's answer to the wake-up names it: `WOKEN-rK.`.
fn tag_in(text: &str) -> Option<String> {
    let i = text.find("done: r")? + "done: r".len();
    let digits: String = text[i..].chars().take_while(char::is_ascii_digit).collect();
    Some(format!("r{digits}."))
}

fn script(tasks: Tasks, ends: Ends) -> Script {
    Script::new()
        .rule(Rule::when("wake", is_wake).reply_with(|r| {
            Reply::text(format!(
                "WOKEN-{}",
                tag_in(&r.new_text()).unwrap_or_else(|| "untagged".into())
            ))
        }))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(Rule::on_user_text("RUN-").reply_with(move |r| {
            if !r.deferred_tools().iter().any(|t| t == SEND) {
                return Reply::text("NO-TOOLS-YET");
            }
            // `RUN-<k>-<ms>-<attempt>`: run k, a task of ms milliseconds.
            let text = r.last_user_text();
            let mut parts = text
                .split("RUN-")
                .nth(1)
                .unwrap_or_default()
                .split(['-', ' ', '\n']);
            let k = parts.next().unwrap_or("0").to_string();
            let ms: f64 = parts.next().and_then(|m| m.parse().ok()).unwrap_or(8000.0);
            if tasks == Tasks::Together {
                // Both tasks end at one instant, `ms` past the shortest after this turn.
                let at = now_ms() + TOGETHER_AHEAD_MS + ms as i64 - (SHORTEST_S * 1000.0) as i64;
                ends.lock().unwrap().insert(k.clone(), at);
                let send = |t: &str| {
                    json!({"worker": "fake", "message": format!("slow-until {at} r{k}{t}")})
                };
                return Reply::tool_use(SEND, send("x")).and_tool_use(SEND, send("y"));
            }
            Reply::tool_use(
                SEND,
                json!({"worker": "fake", "message": format!("slow {:.3} r{k}x", ms / 1000.0)}),
            )
        }))
}

/// All runs for one worker kind; `None` when the CLI cannot start.
fn measure(
    name: &str,
    kind: Kind,
    worker_args: &[&str],
    tasks: Tasks,
    runs: usize,
) -> Option<Vec<Sample>> {
    let home = TempHome::new();
    let worker = Peer::start(kind, worker_args)?;
    ok(&home, &["worker", "add", "fake", &worker.url]);
    let ends = Ends::default();
    let model = FakeModelApi::start(script(tasks, ends.clone()));
    let b = bin();
    let allowed: Vec<&str> = TOOLS.to_vec();
    let opts = ClaudeOpts::new(&model)
        .home(home)
        .plugin_dir(repo())
        .env("A2A_MOD_BIN", b.to_str().expect("utf-8 binary path"))
        .settings(json!({
            "statusLine": {"type": "command", "command": format!("{} statusline", b.display()),
                           "refreshInterval": 1},
            "permissions": {"allow": allowed},
        }));
    let claude = ClaudeSession::start(opts)?;
    claude.wait_ready(LONG);
    let mut samples = Vec::new();
    let mut attempt = 0;
    for k in 0..runs {
        let mut length_s = SHORTEST_S + POLL_INTERVAL_S * k as f64 / runs as f64;
        let ms = (length_s * 1000.0).round() as i64;
        if tasks == Tasks::Together {
            length_s += (TOGETHER_AHEAD_MS as f64) / 1000.0 - SHORTEST_S;
        }
        let tag = format!("r{k}x");
        // Type the prompt until the plugin's tools are there (the MCP server connects late).
        let start = Instant::now();
        loop {
            attempt += 1;
            let text = format!("RUN-{k}-{ms}-{attempt}");
            claude.send_keys(&text);
            let r = model.wait_for_request(&format!("the {text} turn"), LONG, |r| {
                r.is_main_loop() && r.last_user_text().contains(&text)
            });
            if r.deferred_tools().iter().any(|t| t == SEND) {
                break;
            }
            claude.wait_for_text("NO-TOOLS-YET", LONG);
            assert!(
                start.elapsed() < LONG,
                "{name}: the plugin's tools never came"
            );
            std::thread::sleep(Duration::from_millis(500));
        }
        let wake = model.wait_for_request(&format!("the {tag} wake-up"), LONG, |r| {
            is_wake(r) && r.new_text().contains(&format!("done: {tag}"))
        });
        if tasks == Tasks::Together {
            let both = format!("done: r{k}y");
            assert!(
                wake.new_text().contains(&both),
                "{name}: the two tasks that ended together woke Claude apart:\n{}",
                wake.new_text()
            );
        }
        let ctx_ready = wake
            .new_messages()
            .iter()
            .filter(|m| m["role"] == "system")
            .any(|m| m.to_string().contains("[a2a-mod notice"));
        assert!(
            ctx_ready,
            "{name}: the wake request for {tag} carries no a2a-mod hidden context"
        );
        claude.wait_for_text(&format!("WOKEN-r{k}."), LONG);
        let events = worker.events();
        let end_at = match tasks {
            Tasks::Together => ends.lock().unwrap()[&k.to_string()],
            Tasks::Lone => {
                let send_at = events
                    .iter()
                    .filter(|e| e.is_send())
                    .map(|e| e.at_ms)
                    .nth(k)
                    .expect("the worker logged the send");
                send_at + ms
            }
        };
        let latency = wall_ms(&wake) - end_at;
        let after_seen = events
            .iter()
            .filter(|e| e.is_get() && e.at_ms >= end_at)
            .map(|e| e.at_ms)
            .min()
            .map(|seen| wall_ms(&wake) - seen);
        eprintln!(
            "{name} {tag}: task {length_s:.2} s, wake {latency} ms after its end{}",
            after_seen.map_or(String::new(), |a| format!(
                " ({a} ms after the first poll that saw it)"
            ))
        );
        samples.push(Sample {
            length_s,
            latency,
            after_seen,
        });
    }
    Some(samples)
}
