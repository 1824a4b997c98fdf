//! What the plugin's hooks cost when they have nothing to say, which is nearly every
//! run: they start on every tool call and every turn end of every session. Each installed hook is
//! run as a whole process with Claude Code's stdin, as the ratio to a hello-world Rust binary
//! compiled and spawned in the same run; once as `install` wires it (the binary by its path) and,
//! for comparison, through `bin/a2a-mod-launch` (what a `--plugin-dir` checkout runs).
//! Two sessions: one that never used a2a (no store) and one with an ended, delivered task.
//!
//! Run: `cargo bench --bench hooks` (release profile). Goal: ≤ 2× hello-world for
//! every hook, Stop included. `A2A_MOD_BENCH_ROUNDS` sets the spawns per case (default 300).
//! `A2A_MOD_BENCH_VS=/path/to/other/a2a-mod` pairs that build with a copy of this one on the used
//! session's hooks (the budget: this build within 3% of the last landed one).
//! Cases are interleaved round by round; medians. Without `--bench` (`cargo test --all-targets`)
//! it does a few rounds only and says so.

#![forbid(unsafe_code)]
#![expect(
    clippy::too_many_lines,
    reason = "a bench reads as the run it measures, however long"
)]
#![expect(
    clippy::print_stdout,
    clippy::unwrap_used,
    reason = "a bench prints its figures, and a failed set-up is a bug in the bench itself"
)]

mod common;
use a2a_mod::testing::Ctx;
use a2a_mod::testing::task::{EndReason, PollUpdate, TaskState};
use a2a_mod::testing::{NewTask, Store, session};
use common::{compile_hello, median};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SID: &str = "b42c70ee-5d1e-4c3b-9a47-1f0e2d3c4b5a";

struct Case {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    home: PathBuf,
    stdin: Vec<u8>,
    samples: Vec<Duration>,
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let rounds: usize = std::env::var("A2A_MOD_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if measuring { 300 } else { 3 });
    if !measuring {
        println!(
            "note: not run by `cargo bench`: {rounds} rounds, a smoke test; figures mean nothing"
        );
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let hello = compile_hello(tmp.path());
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_a2a-mod"));
    let launcher = Path::new(env!("CARGO_MANIFEST_DIR")).join("bin/a2a-mod-launch");
    let fresh = tmp.path().join("no store");
    let used = tmp.path().join("used");
    seed(&used);

    let mut cases = vec![Case {
        name: "hello world".into(),
        program: hello,
        args: vec![],
        home: fresh.clone(),
        stdin: Vec::new(),
        samples: vec![],
    }];
    let hooks = [
        (
            "session-start",
            input("SessionStart", &[("source", "startup")]),
        ),
        (
            "user-prompt-submit",
            input("UserPromptSubmit", &[("prompt", "run the release checks")]),
        ),
        ("post-tool-use", post_tool_use()),
        ("wake", post_tool_use()),
        ("stop", input("Stop", &[])),
    ];
    for (home_label, home) in [("no store", &fresh), ("used", &used)] {
        for (hook, stdin) in &hooks {
            cases.push(Case {
                name: format!("{hook} ({home_label})"),
                program: bin.clone(),
                args: vec!["hook".into(), (*hook).into()],
                home: home.clone(),
                stdin: stdin.clone(),
                samples: vec![],
            });
        }
    }
    // Another build against a copy of this one (each file run by its own cases alone, so neither
    // is favoured by the page cache), on the used session.
    if let Some(vs) = std::env::var_os("A2A_MOD_BENCH_VS") {
        let copy = tmp.path().join("copied-a2a-mod");
        std::fs::copy(&bin, &copy).unwrap();
        for (which, program) in [("copy", copy), ("vs", PathBuf::from(vs))] {
            for (hook, stdin) in &hooks {
                cases.push(Case {
                    name: format!("{hook} (used, {which})"),
                    program: program.clone(),
                    args: vec!["hook".into(), (*hook).into()],
                    home: used.clone(),
                    stdin: stdin.clone(),
                    samples: vec![],
                });
            }
        }
    }
    cases.push(Case {
        name: "post-tool-use via launcher".into(),
        program: launcher,
        args: vec!["hook".into(), "post-tool-use".into()],
        home: used.clone(),
        stdin: post_tool_use(),
        samples: vec![],
    });

    // Every program read back from disk before it is timed: a file just written (the copy, the
    // other build) otherwise starts from its writer's pages, up to a tenth slower
    // (benches/statusline.rs).
    for c in &cases {
        a2a_mod_os::testing::evict_from_cache(&c.program);
    }
    // Sanity: nothing to say means no output at all, and exit 0.
    for c in &cases[1..] {
        let (_, out, code) = spawn(c, &bin);
        assert!(
            out.is_empty() && code == 0,
            "{} printed {out:?}, exit {code}",
            c.name
        );
    }
    for _ in 0..if measuring { 20 } else { 1 } {
        for c in &cases {
            spawn(c, &bin);
        }
    }
    for round in 0..rounds {
        let k = cases.len();
        for i in 0..k {
            let c = &mut cases[(i + round) % k];
            let (t, _, _) = spawn(c, &bin);
            c.samples.push(t);
        }
    }
    let base = median(&mut cases[0].samples.clone());
    println!("whole process, attended session, nothing to say, {rounds} spawns each");
    println!(
        "  {:<32}  {:>9}  {:>9}  {:>6}",
        "", "wall med", "wall p90", "ratio"
    );
    let mut worst: f64 = 0.0;
    let mut pairs: Vec<(String, Duration)> = Vec::new();
    for c in &mut cases {
        let med = median(&mut c.samples);
        if c.name.ends_with(", copy)") || c.name.ends_with(", vs)") {
            pairs.push((c.name.clone(), med));
        }
        let p90 = c.samples[c.samples.len() * 9 / 10];
        let ratio = med.as_secs_f64() / base.as_secs_f64();
        if c.args.first().is_some_and(|a| a == "hook")
            && !c.name.contains("launcher")
            && !c.name.ends_with(", vs)")
        {
            worst = worst.max(ratio);
        }
        println!(
            "  {:<32}  {:>7.0} µs  {:>7.0} µs  {:>5.2}×",
            c.name,
            med.as_secs_f64() * 1e6,
            p90.as_secs_f64() * 1e6,
            ratio
        );
    }
    println!("worst installed hook: {worst:.2}× a bare spawn (goal ≤ 2×)");
    let (copies, others) = pairs.split_at(pairs.len() / 2);
    let ratios: Vec<String> = copies
        .iter()
        .zip(others)
        .map(|((name, this), (_, that))| {
            let hook = name.split(' ').next().unwrap_or("");
            format!("{hook} {:.3}×", this.as_secs_f64() / that.as_secs_f64())
        })
        .collect();
    if !ratios.is_empty() {
        println!(
            "this build / the other (used session, wall med): {}   (budget: within 1.03×)",
            ratios.join(", ")
        );
    }
}

/// Claude Code's hook stdin for `event` (docs/claude-code.md "Hooks and hidden context"), plus `extra` string keys.
fn input(event: &str, extra: &[(&str, &str)]) -> Vec<u8> {
    let mut v = serde_json::json!({
        "session_id": SID, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp",
        "prompt_id": "5ef12bfc-0000-0000-0000-000000000000", "permission_mode": "auto",
        "effort": {"level": "medium"}, "hook_event_name": event,
    });
    if event == "Stop" {
        v["stop_hook_active"] = false.into();
        v["last_assistant_message"] = "Done.".into();
        v["background_tasks"] = serde_json::json!([]);
        v["session_crons"] = serde_json::json!([]);
    }
    for (k, val) in extra {
        v[*k] = (*val).into();
    }
    v.to_string().into_bytes()
}

/// A PostToolUse payload with a few KiB of tool output, as after a `Read`.
fn post_tool_use() -> Vec<u8> {
    let mut v: serde_json::Value = serde_json::from_slice(&input("PostToolUse", &[])).unwrap();
    v["tool_name"] = "Read".into();
    v["tool_input"] = serde_json::json!({"file_path": "/tmp/x.rs"});
    v["tool_response"] =
        serde_json::json!([{"type": "text", "text": "fn main() {}\n".repeat(300)}]);
    v["tool_use_id"] = "toolu_6f43ac9bc8474d5f99e9".into();
    v["duration_ms"] = 12.into();
    v.to_string().into_bytes()
}

/// A session that used a2a: one task, ended, announced and delivered.
fn seed(home: &Path) {
    let store = Store::open(&session::db_path(&Ctx::at(home), SID)).expect("store");
    store
        .record_sent(
            &NewTask {
                worker: "fake",
                task_id: "task-1",
                context_id: Some("ctx"),
                message: "slow 20 build",
                state: TaskState::Working,
                result: None,
                result_chars: None,
                question: None,
                next_poll_ms: Some(i64::MAX / 2),
                held_until_ms: None,
                told: false,
                native_ms: None,
            },
            1_000,
        )
        .expect("seed");
    let u = PollUpdate {
        state: TaskState::Completed,
        text: Some("done".into()),
        text_chars: None,
        question: None,
        context_id: None,
        failed_polls: 0,
        last_error: None,
        end: Some(EndReason::State),
        next_poll_ms: None,
        held_until_ms: None,
    };
    store
        .apply_poll(
            &a2a_mod::testing::TaskKey::new("fake", "task-1"),
            &u,
            false,
            2_000,
        )
        .expect("end");
    store.claim_unannounced(3_000).expect("announce");
    store.take_undelivered(3_000).expect("deliver");
}

/// One run with the environment of an attended interactive session's hook: wall time, stdout,
/// exit code.
fn spawn(c: &Case, bin: &Path) -> (Duration, String, i32) {
    let t = Instant::now();
    let mut child = Command::new(&c.program)
        .args(&c.args)
        .env("A2A_MOD_HOME", &c.home)
        .env("A2A_MOD_BIN", bin)
        .env("CLAUDE_CODE_SESSION_ID", SID)
        .env("CLAUDE_CODE_SESSION_ATTENDED", "1")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli")
        .env("CLAUDE_PID", std::process::id().to_string())
        .env_remove("A2A_MOD_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&c.stdin);
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    let code = child.wait().map_or(-1, |s| s.code().unwrap_or(-1));
    (t.elapsed(), out, code)
}
