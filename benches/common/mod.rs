//! What the benchmarks share: the hello-world baseline the start-up figures are ratios to, the
//! median they print, and the header that says what build and what size a run was. Each bench
//! is its own crate (`mod common;`) and uses a part of this.

#![allow(dead_code)]

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
