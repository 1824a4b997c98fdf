//! How fast `a2a-mod mcp` answers Claude Code's handshake, which it does at every session start:
//! time from spawn to the `initialize` reply (after the `server/discover` probe, as Claude Code
//! sends it), against spawning `a2a-mod --version` in the same run as the baseline process cost.
//! A benchmark, not a test: it prints figures and asserts nothing. `cargo bench --bench mcp_start`.
//! `A2A_MOD_BENCH_RUNS` sets the runs (default 30); `A2A_MOD_BENCH_VS=/path/to/other/a2a-mod`
//! also times another build, interleaved with this one, for a before/after ratio on one machine.

#![forbid(unsafe_code)]
#![expect(clippy::print_stdout, reason = "a bench reports its figures on stdout")]

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_a2a-mod");

const PROBE: &str = r#"{"jsonrpc":"2.0","id":"server-discover-probe-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"claude-code","version":"2.1.332"},"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"elicitation":{"form":{},"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#;
const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"claude-code","version":"2.1.332"}}}"#;

fn baseline(bin: &str, home: &std::path::Path) -> Duration {
    let t = Instant::now();
    let out = Command::new(bin)
        .arg("--version")
        .env("A2A_MOD_HOME", home)
        .stdout(Stdio::null())
        .status()
        .expect("spawn a2a-mod --version");
    assert!(out.success());
    t.elapsed()
}

fn mcp_initialize(bin: &str, home: &std::path::Path) -> Duration {
    let t = Instant::now();
    let mut child = Command::new(bin)
        .arg("mcp")
        .env("A2A_MOD_HOME", home)
        .env("CLAUDE_CODE_SESSION_ID", "bench-session")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn a2a-mod mcp");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // Claude Code writes the probe, then `initialize` once the probe is refused; writing both at
    // once measures the server, not the pipe round trip.
    writeln!(stdin, "{PROBE}\n{INIT}").expect("write handshake");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
    let took = loop {
        let line = lines
            .next()
            .expect("server closed stdout")
            .expect("read stdout");
        if line.contains(r#""id":0"#) && line.contains("protocolVersion") {
            break t.elapsed();
        }
    };
    drop(stdin);
    let _ = child.wait();
    took
}

fn summary(name: &str, mut v: Vec<Duration>) -> Duration {
    v.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let median = v[v.len() / 2];
    println!(
        "{name:<34} median {:>7.2} ms   p90 {:>7.2} ms   min {:>7.2} ms   ({} runs)",
        ms(median),
        ms(v[v.len() * 9 / 10]),
        ms(v[0]),
        v.len()
    );
    median
}

fn main() {
    let runs: usize = std::env::var("A2A_MOD_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let vs = std::env::var("A2A_MOD_BENCH_VS").ok();
    let home = tempfile::tempdir().expect("temp dir");
    // Against another build, this one is a copy too, and both are read back from disk before
    // they are timed: the cargo-built file may sit in pages its linker left, and a start from
    // those costs up to a tenth more than one from pages read back (benches/statusline.rs).
    let this = match vs {
        Some(_) => {
            let copy = home.path().join("this-a2a-mod");
            std::fs::copy(BIN, &copy).expect("copy the binary");
            copy.display().to_string()
        }
        None => BIN.to_string(),
    };
    let bins: Vec<&str> = std::iter::once(this.as_str())
        .chain(vs.as_deref())
        .collect();
    for bin in &bins {
        a2a_mod_os::testing::evict_from_cache(std::path::Path::new(bin));
    }
    let mut times: Vec<(Vec<Duration>, Vec<Duration>)> = vec![Default::default(); bins.len()];
    // Warm the page cache so the first runs do not measure the disk.
    for bin in &bins {
        baseline(bin, home.path());
        mcp_initialize(bin, home.path());
    }
    // Interleaved, so every case sees the same machine load.
    for _ in 0..runs {
        for (bin, (base, mcp)) in bins.iter().zip(times.iter_mut()) {
            base.push(baseline(bin, home.path()));
            mcp.push(mcp_initialize(bin, home.path()));
        }
    }
    let mut medians = Vec::new();
    for (bin, (base, mcp)) in bins.iter().zip(times) {
        println!("binary: {bin}");
        let b = summary("baseline: a2a-mod --version", base);
        let m = summary("mcp: spawn → initialize reply", mcp);
        println!(
            "mcp start-up over baseline: +{:.2} ms ({:.2}×)",
            (m.as_secs_f64() - b.as_secs_f64()) * 1000.0,
            m.as_secs_f64() / b.as_secs_f64()
        );
        medians.push((b, m));
    }
    if let [(b1, m1), (b2, m2)] = medians[..] {
        println!(
            "this build / the other: --version {:.3}×, mcp initialize {:.3}×   (budget: within 1.03×)",
            b1.as_secs_f64() / b2.as_secs_f64(),
            m1.as_secs_f64() / m2.as_secs_f64()
        );
    }
}
