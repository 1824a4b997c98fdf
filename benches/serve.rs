//! What `a2a-mod serve` costs over running Claude Code directly, and its memory.
//!
//! - Overhead: the same scripted answer (a token stream from the fake Messages API) run as
//!   `claude -p … --output-format stream-json --include-partial-messages` directly, and as a task
//!   of `a2a-mod serve` read over SSE (SendStreamingMessage): time to the first streamed token and
//!   to the end, each p50/p95, and the ratio of the medians (goal ≤ 1.05×). The two are
//!   interleaved, so the machine's load falls on both alike.
//! - Memory: serve's RSS (VmRSS, the server alone, not its runs) idle, and with one run and 20
//!   tasks queued behind it (goal < 32 MiB); its peak (VmHWM) with 200 late readers of a task's
//!   4 MiB answer that never read (goal < 128 MiB: they share the answer, `stream.rs`), against
//!   its peak before they came.
//!
//! A benchmark, not a test: it prints figures and asserts nothing about them. `cargo bench --bench
//! serve` runs 10 rounds (`A2A_MOD_BENCH_ROUNDS`); under `cargo test` it runs one round, so CI
//! runs every step once. Skips with a message without the real Claude Code CLI.

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

use a2a_mod_serve::claude::Claude;
use a2a_mod_serve::engine::{Agent, Job, Session};
use fake::model_api::{FakeModelApi, Reply, Rule, Script};
use futures::StreamExt as _;
use peers::claude::{ClaudeEnv, ClaudeOpts};
use serde_json::json;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use util::{append_config, bin, which};

/// The answer: 40 chunks 25 ms apart, about a second of tokens.
const CHUNKS: usize = 40;
const GAP: Duration = Duration::from_millis(25);

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    if let Some(missing) = peers::claude::missing_tools() {
        println!("SKIPPED: the serve bench needs the real Claude Code CLI: {missing}");
        return;
    }
    let rounds: usize = if measuring {
        std::env::var("A2A_MOD_BENCH_ROUNDS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10)
            .max(1)
    } else {
        1
    };
    let answer: String = (0..200).map(|i| format!("w{i:03} ")).collect();
    let a = answer.clone();
    let script =
        Script::new()
            .rule(
                Rule::on_user_text("bench")
                    .reply_with(move |_| Reply::text(a.clone()).paced(CHUNKS, GAP)),
            )
            .rule(Rule::on_user_text("queued").reply_with(|_| {
                Reply::text("q".repeat(100)).paced(100, Duration::from_millis(500))
            }))
            .fallback_text("FALLBACK");
    let model = FakeModelApi::start(script);
    let env = ClaudeEnv::new(ClaudeOpts::new(&model)).expect("checked above");
    append_config(&env.home.a2a_home(), "\n[serve]\nmax_concurrent = 1\n");
    let serve = Serve::start(&env);
    let rss_idle = rss_kib(serve.child.id());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    // One of each first, unmeasured: the first run of a fresh home writes Claude Code's files.
    direct(&env, "bench warm-up");
    rt.block_on(served(&http, &serve.url, "bench warm-up"));
    let (mut d_first, mut d_end, mut s_first, mut s_end) = (vec![], vec![], vec![], vec![]);
    for r in 0..rounds {
        // Alternate which goes first, so neither always runs on a cooler machine.
        let mut one = |which: bool| {
            if which {
                let (f, e) = direct(&env, &format!("bench {r}"));
                d_first.push(f);
                d_end.push(e);
            } else {
                let (f, e) = rt.block_on(served(&http, &serve.url, &format!("bench {r}")));
                s_first.push(f);
                s_end.push(e);
            }
        };
        one(r % 2 == 0);
        one(r % 2 == 1);
    }
    println!(
        "a2a-mod serve against claude -p directly: a {CHUNKS}-chunk answer, {rounds} rounds each"
    );
    let ratio_first = row("first token, direct", d_first.clone());
    let s1 = row("first token, serve (SSE)", s_first);
    let ratio_end = row("end, direct", d_end.clone());
    let s2 = row("end, serve (SSE)", s_end);
    println!(
        "ratio of medians (serve / direct): first token {:.3}x, end {:.3}x   (goal <= 1.05x)",
        s1 / ratio_first,
        s2 / ratio_end
    );

    // 21 tasks: one runs (max_concurrent = 1), 20 wait.
    let ids: Vec<String> = (0..21)
        .map(|i| {
            rt.block_on(async {
                let body = json!({"jsonrpc": "2.0", "id": i, "method": "SendMessage", "params": {
                    "message": {"messageId": format!("q{i}"), "role": "ROLE_USER", "parts": [{"text": format!("queued {i}")}]},
                    "configuration": {"returnImmediately": true}}});
                let v: serde_json::Value = http
                    .post(format!("{}/", serve.url))
                    .header("A2A-Version", "1.0")
                    .json(&body)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                v["result"]["task"]["id"].as_str().unwrap().to_string()
            })
        })
        .collect();
    let rss_queued = rss_kib(serve.child.id());
    println!(
        "serve RSS: idle {:.1} MiB, with 1 run and {} queued {:.1} MiB   (goal < 32 MiB)",
        rss_idle as f64 / 1024.0,
        ids.len() - 1,
        rss_queued as f64 / 1024.0
    );
    drop(serve);
    late_readers(&model);
}

/// serve's peak RSS with 200 late readers of a 4 MiB answer that read only their first bytes.
fn late_readers(model: &FakeModelApi) {
    use std::io::Read as _;
    let env = ClaudeEnv::new(ClaudeOpts::new(model)).expect("checked above");
    let line = "x".repeat(1019);
    let big: String = (0..4096).map(|i| format!("{i:04}{line}\n")).collect();
    std::fs::write(env.cwd.join("big.txt"), &big).unwrap();
    std::fs::write(
        env.cwd.join("agent.sh"),
        "read -r verb\ncat big.txt\n: > printed\nwhile [ ! -e go ]; do sleep 0.05; done\necho END\n",
    )
    .unwrap();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve]\nmax_streams_per_task = 256\n[serve.agents.sh]\ndir = {:?}\nexec = [\"/bin/sh\", \"agent.sh\"]\n",
            env.cwd.display().to_string()
        ),
    );
    let serve = Serve::spawn(&env, &[]);
    let (addr, path) = serve
        .url
        .trim_start_matches("http://")
        .split_once('/')
        .map(|(a, p)| (a.to_string(), format!("/{p}/")))
        .unwrap();
    let call = |body: serde_json::Value| -> serde_json::Value {
        let body = body.to_string();
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        serde_json::from_str(out.split_once("\r\n\r\n").unwrap().1).unwrap()
    };
    let sent = call(
        json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "big", "role": "user", "parts": [{"kind": "text", "text": "big"}]},
        "configuration": {"blocking": false}}}),
    );
    let id = sent["result"]["id"].as_str().unwrap().to_string();
    let get = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": id, "historyLength": 0}});
    let answer_len = |v: &serde_json::Value| {
        v["result"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .map_or(0, str::len)
    };
    let start = Instant::now();
    while !(env.cwd.join("printed").exists() && answer_len(&call(get.clone())) == big.len()) {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the answer never arrived"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = serve.child.id();
    let before = peak_kib(pid);
    let sub = json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": id}})
        .to_string();
    let readers: Vec<std::net::TcpStream> = (0..200)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            write!(
                s,
                "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{sub}",
                sub.len()
            )
            .unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 256];
            while !String::from_utf8_lossy(&seen).contains("data:") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "a stream closed early");
                seen.extend_from_slice(&buf[..n]);
            }
            s
        })
        .collect();
    std::fs::write(env.cwd.join("go"), "").unwrap();
    while call(get.clone())["result"]["status"]["state"] != "completed" {
        std::thread::sleep(Duration::from_millis(50));
    }
    let after = peak_kib(pid);
    println!(
        "serve peak RSS with 200 late readers of a 4 MiB answer that never read: {:.1} MiB, {:.2}x its peak before they came ({:.1} MiB)   (goal < 128 MiB)",
        after as f64 / 1024.0,
        after as f64 / before.max(1) as f64,
        before as f64 / 1024.0
    );
    drop(readers);
}

/// `VmHWM` (peak resident set) of a process, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// Median and p95 in ms; returns the median.
fn row(name: &str, mut v: Vec<Duration>) -> f64 {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p95 = v[((v.len() * 95).div_ceil(100)).saturating_sub(1)];
    let median = ms(v[v.len() / 2]);
    println!(
        "  {name:<26} p50 {median:>8.1} ms   p95 {:>8.1} ms",
        ms(p95)
    );
    median
}

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// `claude -p` as serve runs it, the prompt on stdin: (first text delta, result line).
fn direct(env: &ClaudeEnv, prompt: &str) -> (Duration, Duration) {
    // Exactly the command serve makes for a task (its first in a context).
    let job = Job {
        task_id: "bench".into(),
        context_id: "bench".into(),
        owner: "local".into(),
        agent: std::sync::Arc::new(Agent {
            name: "bench".into(),
            description: String::new(),
            dir: env.cwd.clone(),
            config: Default::default(),
        }),
        text: prompt.into(),
        session: Session::New(a2a_mod::testing::uuid_v4()),
        allowed: Default::default(),
    };
    let mut cmd = Command::new(which("claude").unwrap());
    cmd.args(Claude::args(&job))
        .current_dir(&env.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    env.apply(&mut cmd);
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take();
    let line = json!({"type": "user", "message": {"role": "user", "content": prompt}});
    writeln!(stdin.as_mut().unwrap(), "{line}").unwrap();
    let mut first = None;
    let mut end = None;
    for l in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        if first.is_none() && l.contains("\"text_delta\"") {
            first = Some(t.elapsed());
        }
        if l.contains("\"type\":\"result\"") {
            end = Some(t.elapsed());
            stdin = None;
        }
    }
    drop(stdin);
    let _ = child.wait();
    (first.unwrap(), end.unwrap())
}

/// The same as a served task over SSE: (first artifact chunk, the final status).
async fn served(http: &reqwest::Client, url: &str, prompt: &str) -> (Duration, Duration) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": a2a_mod::testing::uuid_v4(), "role": "ROLE_USER", "parts": [{"text": prompt}]}}});
    let t = Instant::now();
    let resp = http
        .post(format!("{url}/"))
        .header("A2A-Version", "1.0")
        .json(&body)
        .send()
        .await
        .unwrap();
    let mut stream = resp.bytes_stream();
    let mut buf = String::new();
    let mut first = None;
    while let Some(chunk) = stream.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        if first.is_none() && buf.contains("artifactUpdate") {
            first = Some(t.elapsed());
        }
        if buf.contains("TASK_STATE_COMPLETED") {
            return (first.unwrap(), t.elapsed());
        }
    }
    panic!("the stream ended before the task did:\n{buf}");
}

struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    fn start(env: &ClaudeEnv) -> Serve {
        Serve::spawn(env, &["--dir".as_ref(), env.cwd.as_os_str()])
    }

    /// `a2a-mod serve <args>` in `env`'s home.
    fn spawn(env: &ClaudeEnv, args: &[&std::ffi::OsStr]) -> Serve {
        let mut cmd = Command::new(bin());
        cmd.arg("serve")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        env.apply(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = lines.next().unwrap().unwrap();
        // Keep reading (and dropping) so the pipe never fills.
        std::thread::spawn(move || for _ in lines {});
        Serve { child, url }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
