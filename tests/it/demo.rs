//! `a2a-mod demo`, the README's main job: runs non-interactively, exits 0 by itself within 60 s,
//! and shows the pieces it promises (status line, wake line, hidden context).

use crate::util::TempHome;
use std::io::Read;
use std::time::{Duration, Instant};

#[test]
fn demo_runs_to_the_end_on_its_own() {
    let home = TempHome::new();
    let mut child = home.command().arg("demo").spawn();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("demo still running after 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "demo failed: {out}\n{err}");
    for want in [
        "a2a-mod: ? fake waiting: Which colour should the chart be?",
        "a2a-mod: ✓ fake done",
        "a2a: fake task ",
        "[a2a-mod notice",
        "done: build the index",
        "you said: blue",
    ] {
        assert!(out.contains(want), "demo output lacks {want:?}:\n{out}");
    }
    // Not a terminal: plain text, no escape sequences.
    assert!(!out.contains('\u{1b}'), "{out}");
    // The demo keeps to its own temporary home.
    assert!(!home.a2a_home().join("config.toml").exists());
}
