//! What the benchmarks share: the hello-world baseline the start-up figures are ratios to, the
//! median they print, the header that says what build and what size a run was, and what a
//! process has cost (`/proc`). Each bench
//! is its own crate (`mod common;`) and uses a part of this.

#![allow(
    dead_code,
    reason = "each bench is its own crate and uses a part of this"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A hello-world Rust binary built with the same release settings as ours (opt-level 3, strip,
/// panic=abort): the floor any Rust process pays to start.
pub fn compile_hello(dir: &Path) -> PathBuf {
    let src = dir.join("hello.rs");
    std::fs::write(&src, "fn main() { println!(\"hello world\"); }\n").expect("write");
    let out = dir.join("hello");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let status = Command::new(rustc)
        .args([
            "-C",
            "opt-level=3",
            "-C",
            "strip=symbols",
            "-C",
            "panic=abort",
        ])
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("rustc (needed to build the hello-world baseline)");
    assert!(status.success(), "rustc failed");
    out
}

pub fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// `a2a-mod <bench>: <build> build<what>`, and for a smoke run (`cargo test` runs each bench
/// once, small) how to get the full figures.
pub fn header(bench: &str, what: &str, full: bool) -> String {
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let smoke = if full {
        String::new()
    } else {
        format!(" (smoke run; `cargo bench --bench {bench}` for the full size)")
    };
    format!("a2a-mod {bench}: {build} build{what}{smoke}")
}

/// utime + stime of a running process (`None` once it is gone or a zombie).
pub fn cpu_of(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields after its closing paren are fixed.
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    if f.first() == Some(&"Z") {
        return None;
    }
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    // state is field 3 of stat, so utime (14) and stime (15) are at 11 and 12 here.
    Some(Duration::from_millis(
        (ticks(11) + ticks(12)) * 1000 / a2a_mod_os::testing::clock_ticks(),
    ))
}

/// A process's peak resident memory (`VmHWM`), in KiB; 0 once it is gone.
pub fn peak_rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
