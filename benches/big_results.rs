//! Big and fast results: what a token stream, a flood of updates and a large file part cost the
//! a2a-mod process that reads them, against the embedded fake worker on loopback (in this
//! process, so its own work is not counted). Each case runs the real binary as a child and reads
//! its whole life's usage from `wait4`: wall time, CPU (utime + stime) and the bytes it wrote to
//! storage (`ru_oublock`, the kernel's per-process count of 512-byte blocks, WAL and checkpoints
//! included); its peak RSS is its `VmHWM`, read every 2 ms while it runs. A `send` hands its
//! work to its keeper (`send --keeper`), which reads the stream on after the command has printed:
//! the keeper's CPU (sampled every 2 ms until it exits) is added to the send's, and the wall time
//! runs to the later of the two ends.
//!
//! - **token stream, inline**: `a2a-mod send w "tokens 4194304 64"`: 4 MiB of text in 64-byte
//!   appended chunks, streamed by the send as fast as loopback carries them; the send's own
//!   stream reads it inside the window. Whole: the saved result equals the text.
//! - **token stream, background**: the same text 2 s after the task began, read by
//!   `a2a-mod poller` through its subscription. Whole: the stored result equals the text.
//! - **flood, inline / background**: identical `working` updates, 150k a second (`flood N S
//!   150000`), for S seconds; the rate is the worker's count of updates sent. Then the same as
//!   fast as the stream carries them (`flood N S`), the reader's own ceiling.
//! - **file part**: `artifact file 61440`, a 60 MiB file part (80 MB of base64), inline.
//!
//! `cargo bench --bench big_results` runs the full sizes (`A2A_MOD_BENCH_ONLY=flood` one kind of
//! case: `tokens`, `flood`, `file`); `A2A_MOD_BENCH_VS=/path/to/other/a2a-mod`
//! also runs each case with another build right after this one's (a before/after figure on one
//! machine). Run any other way (`cargo test --all-targets` runs benches in debug), it does a
//! short smoke run of small sizes. A benchmark, not a test: it asserts only that the runs ran.

#![forbid(unsafe_code)]
#![expect(clippy::print_stdout, reason = "a bench reports its figures on stdout")]

mod common;
use a2a_mod::testing::task::TaskState;
use a2a_mod::testing::{Ctx, FakeWorker, FakeWorkerOptions, StreamMode, now_ms, token_text};
use a2a_mod::testing::{NewTask, Outgoing, Started, Store, Worker, WorkerConfig, session};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-mod");
const CHUNK: usize = 64;

/// One process's life, from `wait4`.
struct Usage {
    wall: Duration,
    cpu: Duration,
    peak_rss_kib: u64,
    written: u64,
}

/// Sizes of one run.
struct Sizes {
    token_bytes: usize,
    flood_updates: usize,
    flood_secs: f64,
    /// Updates a second of the paced flood.
    flood_rate: u64,
    file_kib: usize,
}

/// Runs `cmd` to its end and reads its usage. Stdout goes to `out` (a pipe could fill and stall
/// the child while nobody reads it).
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by `wait4`, which reads its usage as `Child::wait` cannot"
)]
fn measured(mut cmd: Command, out: &Path) -> Usage {
    let began = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out).expect("stdout file"))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn a2a-mod");
    let pid = child.id();
    // Peak RSS from the child's own `VmHWM`, read until it exits: `ru_maxrss` would carry this
    // process's peak, which a child inherits through fork and keeps through exec.
    let peak = std::thread::spawn(move || {
        let mut peak = 0;
        while let Some(kib) = vm_hwm_kib(pid) {
            peak = peak.max(kib);
            std::thread::sleep(Duration::from_millis(2));
        }
        peak
    });
    // Our own child, not yet reaped (std's `Child` is never waited on here).
    let used = a2a_mod_os::testing::wait_usage(pid).expect("wait4");
    Usage {
        wall: began.elapsed(),
        cpu: used.cpu,
        peak_rss_kib: peak.join().unwrap_or(0),
        written: used.written,
    }
}

/// `VmHWM` of a live process; `None` once it has exited (a zombie has no memory to show).
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
}

fn report(case: &str, build: &str, u: &Usage, per_byte: Option<usize>, outcome: &str) {
    let written = match per_byte {
        Some(b) => format!("written {:>6.2} B per byte", u.written as f64 / b as f64),
        None => format!("written {:>6} KiB", u.written / 1024),
    };
    println!(
        "{case:<30} {build:<6} wall {:>6.2} s  cpu {:>6.2} s ({:>5.1}% of a core)  peak rss {:>6.1} MiB  {written}  {outcome}",
        u.wall.as_secs_f64(),
        u.cpu.as_secs_f64(),
        100.0 * u.cpu.as_secs_f64() / u.wall.as_secs_f64().max(1e-9),
        u.peak_rss_kib as f64 / 1024.0,
    );
}

/// A home whose config names the worker `w`, polling every `interval_s`.
fn home_for(worker: &FakeWorker, interval_s: f64) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("temp home");
    let config = format!(
        "[workers.w]\nurl = \"{}\"\n\n[timing]\npoll_interval_s = {interval_s}\n",
        worker.url
    );
    std::fs::write(home.path().join("config.toml"), config).expect("write config");
    home
}

fn fake_worker(rt: &tokio::runtime::Runtime) -> FakeWorker {
    rt.block_on(FakeWorker::start(FakeWorkerOptions {
        stream: StreamMode::On,
        ..FakeWorkerOptions::default()
    }))
    .expect("start the fake worker")
}

/// `a2a-mod send w MESSAGE --json` in a session of its own, measured; its stdout's JSON.
fn send(bin: &str, home: &Path, session: &str, message: &str) -> (Usage, serde_json::Value) {
    let out = home.join("send.json");
    let mut cmd = Command::new(bin);
    cmd.args(["send", "w", message, "--json", "--session", session])
        .env("A2A_MOD_HOME", home);
    // The command hands the send to its keeper (`send --keeper`), which does the work and reads
    // the stream on after the command has printed: its CPU counts, until it exits.
    let began = Instant::now();
    let sent = Arc::new(AtomicBool::new(false));
    let keeper = {
        let (sent, needle) = (sent.clone(), format!("--keeper\0w\0--session={session}\0"));
        std::thread::spawn(move || keeper_usage(&needle, &sent))
    };
    let mut u = measured(cmd, &out);
    sent.store(true, Ordering::SeqCst);
    if let Ok(Some((cpu, ended))) = keeper.join() {
        u.cpu += cpu;
        u.wall = u.wall.max(ended.duration_since(began));
    }
    let json = std::fs::read_to_string(&out)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null);
    stop_pollers(home, session);
    (u, json)
}

/// The CPU of the process whose command line holds `needle`, sampled every 2 ms until it exits,
/// and when it did; `None` if none showed up by a second after `sent` (a build without a keeper).
fn keeper_usage(needle: &str, sent: &AtomicBool) -> Option<(Duration, Instant)> {
    let mut since_sent = None;
    let pid = loop {
        if let Some(pid) = pid_matching(needle) {
            break pid;
        }
        if sent.load(Ordering::SeqCst)
            && since_sent.get_or_insert_with(Instant::now).elapsed() > Duration::from_secs(1)
        {
            return None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let mut cpu = Duration::ZERO;
    while let Some(c) = common::cpu_of(pid as u32) {
        cpu = c;
        std::thread::sleep(Duration::from_millis(2));
    }
    Some((cpu, Instant::now()))
}

fn pid_matching(needle: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|p| {
        let pid = p.file_name().to_string_lossy().parse::<i32>().ok()?;
        let cmdline = std::fs::read(p.path().join("cmdline")).ok()?;
        String::from_utf8_lossy(&cmdline)
            .contains(needle)
            .then_some(pid)
    })
}

/// A send that did not end inside its window left a poller behind: stopped, so no process
/// outlives the case (a build that cannot read the answer would go on polling it).
fn stop_pollers(home: &Path, session: &str) {
    let lock = a2a_mod::testing::lock_path(&Ctx::at(home), session);
    for _ in 0..50 {
        if !a2a_mod::testing::is_locked(&lock) {
            return;
        }
        kill_matching(&format!("--session\0{session}\0"));
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill_matching(needle: &str) {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            // A process of ours, found by its command line.
            a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
        }
    }
}

/// The largest `.txt` under the session's results: the whole result, saved when it was too
/// long for the tool result.
fn saved_text(home: &Path, session: &str) -> Option<String> {
    let dir = home.join("state/results").join(session);
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "txt"))
        .max_by_key(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .and_then(|e| std::fs::read_to_string(e.path()).ok())
}

fn whole(got: Option<&str>, want: &str) -> String {
    match got {
        Some(t) if t.trim_end() == want.trim_end() => "whole: yes".into(),
        Some(t) => format!("whole: NO ({} of {} bytes)", t.len(), want.len()),
        None => "whole: NO (no result)".into(),
    }
}

fn token_inline(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    let w = fake_worker(rt);
    let home = home_for(&w, 5.0);
    let session = format!("bench-tokens-inline-{}", std::process::id());
    let (u, r) = send(
        bin,
        home.path(),
        &session,
        &format!("tokens {} {CHUNK}", s.token_bytes),
    );
    let want = token_text(s.token_bytes, CHUNK);
    let got = saved_text(home.path(), &session).or_else(|| r["text"].as_str().map(str::to_string));
    let outcome = format!("state {}  {}", r["state"], whole(got.as_deref(), &want));
    report(
        "token stream, inline (send)",
        build,
        &u,
        Some(s.token_bytes),
        &outcome,
    );
    rt.block_on(w.stop());
}

/// Records one live task of `w` (sent by this process) in a session, and runs the poller on it
/// to the end: it exits once no task is live.
fn poller_on(
    bin: &str,
    rt: &tokio::runtime::Runtime,
    w: &FakeWorker,
    home: &Path,
    message: &str,
) -> (Usage, Option<String>, TaskState) {
    let session = format!("bench-poller-{}", std::process::id());
    let ctx = Ctx::at(home);
    let store = Store::open(&session::db_path(&ctx, &session)).expect("session store");
    let cfg = WorkerConfig {
        url: w.url.clone(),
        ..WorkerConfig::default()
    };
    let client = Worker::new("w", cfg, a2a_mod::testing::http_client());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let sent = rt.block_on(client.send(&Outgoing::text(message), deadline));
    let Ok(Started::Plain(view)) = sent else {
        panic!("send a task: {:?}", sent.err());
    };
    let now = now_ms();
    store
        .record_sent(
            &NewTask {
                worker: "w",
                task_id: &view.task_id,
                context_id: view.context_id.as_deref(),
                message,
                state: TaskState::Working,
                result: None,
                result_chars: None,
                question: None,
                next_poll_ms: Some(now),
                held_until_ms: None,
                told: false,
                native_ms: None,
            },
            now,
        )
        .expect("record the task");
    let mut cmd = Command::new(bin);
    cmd.args(["poller", "--session", &session])
        .env("A2A_MOD_HOME", home);
    let u = measured(cmd, &home.join("poller.out"));
    let row = store.find(&view.task_id).ok().flatten();
    let state = row.as_ref().map_or(TaskState::Unknown, |t| t.state);
    let result = row.and_then(|t| a2a_mod::testing::whole_result(&ctx, &session, &t));
    (u, result, state)
}

fn token_background(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    let w = fake_worker(rt);
    // Polls once a second: a build that cannot read the answer loses contact in seconds.
    let home = home_for(&w, 1.0);
    let message = format!("tokens {} {CHUNK} 2", s.token_bytes);
    let (u, result, state) = poller_on(bin, rt, &w, home.path(), &message);
    let want = token_text(s.token_bytes, CHUNK);
    let outcome = format!("state {state}  {}", whole(result.as_deref(), &want));
    report(
        "token stream, background (poller)",
        build,
        &u,
        Some(s.token_bytes),
        &outcome,
    );
    rt.block_on(w.stop());
}

fn flood_rate(w: &FakeWorker, s: &Sizes) -> String {
    format!(
        "{:.0}k updates/s",
        w.flooded() as f64 / s.flood_secs / 1000.0
    )
}

fn flood_message(s: &Sizes, paced: bool) -> String {
    let rate = if paced {
        format!(" {}", s.flood_rate)
    } else {
        String::new()
    };
    format!("flood {} {}{rate}", s.flood_updates, s.flood_secs)
}

fn flood_inline(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str, paced: bool) {
    let w = fake_worker(rt);
    let home = home_for(&w, 5.0);
    let session = format!("bench-flood-inline-{}", std::process::id());
    let (u, r) = send(bin, home.path(), &session, &flood_message(s, paced));
    let outcome = format!("state {}  {}", r["state"], flood_rate(&w, s));
    let case = if paced {
        "flood, inline (send)"
    } else {
        "flood at most, inline (send)"
    };
    report(case, build, &u, None, &outcome);
    rt.block_on(w.stop());
}

fn flood_background(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str, paced: bool) {
    let w = fake_worker(rt);
    let home = home_for(&w, 5.0);
    let (u, _, state) = poller_on(bin, rt, &w, home.path(), &flood_message(s, paced));
    let outcome = format!("state {state}  {}", flood_rate(&w, s));
    let case = if paced {
        "flood, background (poller)"
    } else {
        "flood at most, background (poller)"
    };
    report(case, build, &u, None, &outcome);
    rt.block_on(w.stop());
}

fn flood_paced_inline(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    flood_inline(bin, rt, s, build, true)
}

fn flood_paced_background(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    flood_background(bin, rt, s, build, true)
}

fn flood_most_inline(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    flood_inline(bin, rt, s, build, false)
}

fn flood_most_background(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    flood_background(bin, rt, s, build, false)
}

fn file_part(bin: &str, rt: &tokio::runtime::Runtime, s: &Sizes, build: &str) {
    let w = fake_worker(rt);
    let home = home_for(&w, 5.0);
    let session = format!("bench-file-{}", std::process::id());
    let (u, r) = send(
        bin,
        home.path(),
        &session,
        &format!("artifact file {}", s.file_kib),
    );
    let saved = r["artifacts"]
        .as_array()
        .and_then(|a| a.iter().find(|k| k["kind"] == "file"))
        .map_or("no file part".to_string(), |k| {
            if k["path"].is_string() {
                format!("saved {} bytes", k["bytes"])
            } else {
                format!("not saved: {}", k["dropped"])
            }
        });
    let outcome = format!("state {}  {saved}", r["state"]);
    report("file part, inline (send)", build, &u, None, &outcome);
    rt.block_on(w.stop());
}

type Case = fn(&str, &tokio::runtime::Runtime, &Sizes, &str);

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let vs = std::env::var("A2A_MOD_BENCH_VS").ok();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let sizes = if full {
        Sizes {
            token_bytes: 4 << 20,
            flood_updates: 10_000_000,
            flood_secs: 4.0,
            flood_rate: 150_000,
            file_kib: 60 << 10,
        }
    } else {
        Sizes {
            token_bytes: 64 << 10,
            flood_updates: 20_000,
            flood_secs: 0.5,
            flood_rate: 20_000,
            file_kib: 64,
        }
    };
    println!("{}", common::header("big_results", "", full));
    let cases: [(&str, Case); 7] = [
        ("tokens", token_inline),
        ("tokens", token_background),
        ("flood", flood_paced_inline),
        ("flood", flood_paced_background),
        ("flood", flood_most_inline),
        ("flood", flood_most_background),
        ("file", file_part),
    ];
    // `A2A_MOD_BENCH_ONLY=flood` (or `tokens`, `file`, comma-separated) runs those cases alone.
    let only = std::env::var("A2A_MOD_BENCH_ONLY").ok();
    let chosen = |name: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|w| w == name))
    };
    for (_, case) in cases.into_iter().filter(|(name, _)| chosen(name)) {
        case(BIN, &rt, &sizes, "this");
        if let Some(other) = vs.as_deref() {
            case(other, &rt, &sizes, "other");
        }
    }
}
