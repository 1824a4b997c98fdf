//! What the background poller costs: the real `a2a-mod poller --session S` process polling 500
//! live tasks spread over 20 fake workers (in this process, so their work is not counted), for a
//! fixed wall time, against the same poller polling a single task in the same run (its fixed
//! cost: runtime, HTTP client, SQLite). Prints CPU time (utime + stime from `/proc/<pid>/stat`),
//! CPU share of the wall time, peak RSS (`VmHWM`), and the polls the workers answered.
//! A benchmark, not a test: it asserts only that the poller kept polling.
//!
//! The streaming case runs the same load against workers whose card offers streaming,
//! with `max_streams_per_worker` high enough that the poller holds a subscription to every task
//! beside its polls: the cost of 500 open streams, against the same poller with one streamed task.
//!
//! `cargo bench --bench poller` runs the full size (30 s per case at the seed's 5 s cadence, then
//! a 0.5 s cadence as a stress case); `A2A_MOD_BENCH_SECS` changes the wall time;
//! `A2A_MOD_BENCH_VS=/path/to/other/a2a-mod` also runs each load with another build, right after
//! this one's, and prints the ratio (a before/after figure on one machine);
//! `A2A_MOD_BENCH_ROUNDS=N` pairs them N times in alternating order and prints the median ratio,
//! `A2A_MOD_BENCH_ONLY=streaming|polled` runs those cases alone. Run any other way
//! (`cargo test --all-targets` runs benches in debug), it does a short smoke run.

#![forbid(unsafe_code)]
#![expect(
    clippy::too_many_lines,
    reason = "a bench reads as the run it measures, however long"
)]
#![expect(clippy::print_stdout, reason = "a bench reports its figures on stdout")]
#![expect(
    clippy::disallowed_methods,
    reason = "its durations are its own positive settings (`from_secs_f64` cannot panic on them)"
)]

mod common;
use a2a_mod::testing::WorkerConfig;
use a2a_mod::testing::task::TaskState;
use a2a_mod::testing::{Ctx, now_ms};
use a2a_mod::testing::{FakeWorker, FakeWorkerOptions, StreamMode};
use a2a_mod::testing::{NewTask, Store, session};
use a2a_mod::testing::{Outgoing, Started, Worker};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-mod");
const SESSION: &str = "bench-poller";

struct Size {
    workers: usize,
    tasks: usize,
    interval_s: f64,
    wall: Duration,
    /// The workers stream, and the poller may hold this many subscriptions per worker.
    streams_per_worker: Option<usize>,
}

struct Measured {
    cpu: Duration,
    /// CPU over the steady part (after the first interval: start-up and the first round excluded).
    steady_cpu: Duration,
    steady_wall: Duration,
    peak_rss_kib: u64,
    polls: usize,
    live_after: usize,
    failed_polls: u64,
    /// Subscriptions opened within the window.
    subscriptions: usize,
    /// Subscriptions opened by the end, waited for apart from the figures (streaming only).
    subscribed: usize,
}

/// Starts the workers, records `tasks` live tasks in the session store (each a real `slow 3600`
/// task on its worker, their first polls spread over one interval as a running session's would
/// be), runs the poller for `wall`, and measures it.
fn measure(rt: &tokio::runtime::Runtime, size: &Size, bin: &str) -> Measured {
    let home = tempfile::tempdir().expect("temp home");
    let workers: Vec<FakeWorker> = (0..size.workers)
        .map(|_| {
            let stream = match size.streams_per_worker {
                Some(_) => StreamMode::On,
                None => StreamMode::Off,
            };
            rt.block_on(FakeWorker::start(FakeWorkerOptions {
                stream,
                ..FakeWorkerOptions::default()
            }))
            .expect("start a fake worker")
        })
        .collect();
    let mut config = String::new();
    for (i, w) in workers.iter().enumerate() {
        config.push_str(&format!("[workers.w{i}]\nurl = \"{}\"\n\n", w.url));
    }
    config.push_str(&format!(
        "[timing]\npoll_interval_s = {}\n",
        size.interval_s
    ));
    if let Some(n) = size.streams_per_worker {
        config.push_str(&format!("max_streams_per_worker = {n}\n"));
    }
    std::fs::write(home.path().join("config.toml"), config).expect("write config");

    let ctx = Ctx::at(home.path());
    let store = Store::open(&session::db_path(&ctx, SESSION)).expect("session store");
    let http = a2a_mod::testing::http_client();
    let clients: Vec<Worker> = workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let cfg = WorkerConfig {
                url: w.url.clone(),
                ..WorkerConfig::default()
            };
            Worker::new(&format!("w{i}"), cfg, http.clone())
        })
        .collect();
    let start = now_ms();
    let spread = (size.interval_s * 1000.0) as i64;
    for n in 0..size.tasks {
        let i = n % size.workers;
        let message = format!("slow 3600 bench task {n}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let sent = rt.block_on(clients[i].send(&Outgoing::text(&message), deadline));
        let Ok(Started::Plain(view)) = sent else {
            panic!("send a task: {:?}", sent.err());
        };
        assert!(view.state.is_live(), "{:?}", view.state);
        store
            .record_sent(
                &NewTask {
                    worker: &format!("w{i}"),
                    task_id: &view.task_id,
                    context_id: view.context_id.as_deref(),
                    message: &message,
                    state: TaskState::Working,
                    result: None,
                    result_chars: None,
                    question: None,
                    next_poll_ms: Some(start + spread * n as i64 / size.tasks as i64),
                    held_until_ms: None,
                    told: false,
                    native_ms: None,
                },
                start,
            )
            .expect("record a task");
    }
    let polls_before: usize = workers.iter().map(gets).sum();

    let began = Instant::now();
    let poller = Poller(
        Command::new(bin)
            .args(["poller", "--session", SESSION])
            .env("A2A_MOD_HOME", home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn a2a-mod poller"),
    );
    let pid = poller.0.id();
    let warmup = Duration::from_secs_f64(size.interval_s).min(size.wall / 2);
    std::thread::sleep(warmup);
    let cpu_warm = common::cpu_of(pid).unwrap_or_default();
    let warm_at = Instant::now();
    std::thread::sleep(size.wall.saturating_sub(began.elapsed()));
    let cpu = common::cpu_of(pid).unwrap_or_default();
    let steady_wall = warm_at.elapsed();
    let peak_rss_kib = common::peak_rss_kib(pid);
    let polls = workers.iter().map(gets).sum::<usize>() - polls_before;
    let subscriptions = workers.iter().map(subscribes).sum();
    let mut poller = poller;
    let still_running = poller.0.try_wait().ok().flatten().is_none();
    assert!(still_running, "the poller exited while tasks were live");
    // Whether the poller follows every stream is waited for apart from the window: the smoke run
    // beside the tests, niced on a loaded machine, once saw no subscription in its 1 s window.
    let mut subscribed = subscriptions;
    if size.streams_per_worker.is_some() {
        let deadline = Instant::now() + Duration::from_secs(30);
        while subscribed < size.tasks && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            subscribed = workers.iter().map(subscribes).sum();
        }
    }
    drop(poller);

    let rows = Store::open(&session::db_path(&ctx, SESSION))
        .and_then(|s| s.live_tasks())
        .expect("read the store");
    let failed_polls = rows.iter().map(|t| t.failed_polls as u64).sum();
    for w in workers {
        rt.block_on(w.stop());
    }
    Measured {
        cpu,
        steady_cpu: cpu.saturating_sub(cpu_warm),
        steady_wall,
        peak_rss_kib,
        polls,
        live_after: rows.len(),
        failed_polls,
        subscriptions,
        subscribed,
    }
}

fn subscribes(w: &FakeWorker) -> usize {
    w.events()
        .iter()
        .filter(|e| e.method == "SubscribeToTask" || e.method == "tasks/resubscribe")
        .count()
}

fn gets(w: &FakeWorker) -> usize {
    w.events()
        .iter()
        .filter(|e| e.method == "GetTask" || e.method == "tasks/get")
        .count()
}

/// Kills the poller on drop, whatever happens.
struct Poller(std::process::Child);

impl Drop for Poller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn pct(cpu: Duration, wall: Duration) -> f64 {
    100.0 * cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9)
}

fn report(name: &str, size: &Size, m: &Measured) {
    let wall = size.wall.as_secs_f64();
    println!(
        "{name:<28} {:>4} tasks / {:>2} workers @ {:>3} s: cpu {:>7.0} ms ({:>5.2}% of {wall:.0} s; steady {:>5.2}%)  peak rss {:>6} KiB  polls {:>5} ({:>6.1}/s)  live after {}  failed polls {}  subscriptions {} ({} by the end)",
        size.tasks,
        size.workers,
        size.interval_s,
        m.cpu.as_secs_f64() * 1000.0,
        pct(m.cpu, size.wall),
        pct(m.steady_cpu, m.steady_wall),
        m.peak_rss_kib,
        m.polls,
        m.polls as f64 / wall,
        m.live_after,
        m.failed_polls,
        m.subscriptions,
        m.subscribed,
    );
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let secs: f64 = std::env::var("A2A_MOD_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if full { 30.0 } else { 1.0 });
    let wall = Duration::from_secs_f64(secs.max(1.0));
    let vs = std::env::var("A2A_MOD_BENCH_VS").ok();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let (workers, tasks, cadences): (usize, usize, Vec<f64>) = if full {
        (20, 500, vec![5.0, 0.5])
    } else {
        (2, 20, vec![0.5])
    };
    println!(
        "{}",
        common::header("poller", &format!(", {wall:?} per case"), full)
    );
    let mut cases: Vec<(f64, Option<usize>)> = cadences.iter().map(|c| (*c, None)).collect();
    // Streaming at the seed's cadence: every task of every worker holds a subscription.
    cases.insert(
        1.min(cases.len()),
        (cadences[0], Some(tasks.div_ceil(workers))),
    );
    // `A2A_MOD_BENCH_ONLY=streaming` (or `polled`) runs those cases alone.
    let only = std::env::var("A2A_MOD_BENCH_ONLY").ok();
    cases.retain(|(_, streams)| match only.as_deref() {
        Some("streaming") => streams.is_some(),
        Some("polled") => streams.is_none(),
        _ => true,
    });
    // With another build, `A2A_MOD_BENCH_ROUNDS=N` pairs the two N times, each round in the
    // other order than the one before (so neither build always runs on a warmer machine), and
    // prints the median of the ratios.
    let rounds: usize = std::env::var("A2A_MOD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    for (interval_s, streams_per_worker) in cases {
        let streaming = streams_per_worker.is_some();
        let base = Size {
            workers: 1,
            tasks: 1,
            interval_s,
            wall,
            streams_per_worker,
        };
        let load = Size {
            workers,
            tasks,
            interval_s,
            wall,
            streams_per_worker,
        };
        // Baseline first, then the load, in the same run on the same machine.
        let b = measure(&rt, &base, BIN);
        let tag = if streaming { " streaming" } else { "" };
        report(&format!("baseline{tag} (1 task)"), &base, &b);
        let mut m = measure(&rt, &load, BIN);
        report(&format!("load{tag}"), &load, &m);
        if let Some(other) = vs.as_deref() {
            let mut ratios: Vec<(f64, f64)> = Vec::new();
            for round in 0..rounds {
                // Even rounds: this build first (round 0's is the run above); odd: the other.
                let o = if round % 2 == 0 {
                    if round > 0 {
                        m = measure(&rt, &load, BIN);
                        report(&format!("load{tag}"), &load, &m);
                    }
                    measure(&rt, &load, other)
                } else {
                    let o = measure(&rt, &load, other);
                    m = measure(&rt, &load, BIN);
                    report(&format!("load{tag}"), &load, &m);
                    o
                };
                report(&format!("load{tag}, other build"), &load, &o);
                let r = (
                    m.cpu.as_secs_f64() / o.cpu.as_secs_f64().max(1e-3),
                    m.steady_cpu.as_secs_f64() / o.steady_cpu.as_secs_f64().max(1e-3),
                );
                println!(
                    "  ratio this/other build: cpu {:.3}x, steady cpu {:.3}x, peak rss {:.3}x",
                    r.0,
                    r.1,
                    m.peak_rss_kib as f64 / o.peak_rss_kib.max(1) as f64,
                );
                ratios.push(r);
            }
            if rounds > 1 {
                let median = |mut v: Vec<f64>| {
                    v.sort_by(f64::total_cmp);
                    v[v.len() / 2]
                };
                println!(
                    "  median over {rounds} rounds, this/other build: cpu {:.3}x, steady cpu {:.3}x",
                    median(ratios.iter().map(|r| r.0).collect()),
                    median(ratios.iter().map(|r| r.1).collect()),
                );
            }
        }
        println!(
            "  ratio load/baseline: cpu {:.1}x, steady cpu {:.1}x, peak rss {:.2}x",
            m.cpu.as_secs_f64() / b.cpu.as_secs_f64().max(1e-3),
            m.steady_cpu.as_secs_f64() / b.steady_cpu.as_secs_f64().max(1e-3),
            m.peak_rss_kib as f64 / b.peak_rss_kib.max(1) as f64,
        );
        // The poller kept polling every task, none was dropped.
        let rounds = (secs / interval_s).floor() as usize;
        assert_eq!(m.live_after, tasks, "tasks were dropped");
        assert!(
            m.polls + tasks >= rounds.saturating_sub(1) * tasks,
            "only {} polls in {rounds} rounds of {tasks}",
            m.polls
        );
        if streaming {
            assert!(
                m.subscribed >= tasks,
                "{} subscriptions for {tasks} tasks",
                m.subscribed
            );
        }
    }
}
