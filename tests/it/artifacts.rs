//! What comes back: every artifact of an ended task saved under
//! `state/results/<session>/<task>/` (files 0600, folders private, names that never escape),
//! listed with its path in the tool result, the hidden context and `a2a-mod task`, within the
//! hook output cap however many there are; the per-task size cap; `tasks --prune`. Driven
//! through the binary against the embedded fake worker (streaming on) and the Python `a2a-sdk`
//! peer (v1 and v0.3), whose `artifact <kind>` scripts answer alike.

use crate::util::{
    TempHome, append_config, fast_timing, hook_context, ok, send_json, stdout, wait_until,
};
use crate::workers::{Kind, Peer};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const SESSION: &str = "art-1";
const WAIT: Duration = Duration::from_secs(30);

/// The bytes of `artifact file N` (crates/fake-worker/src/script.rs `file_bytes`, worker.py).
fn file_bytes(kib: usize) -> Vec<u8> {
    (0..kib * 1024).map(|i| (i * 31 % 251) as u8).collect()
}

fn results(home: &TempHome) -> PathBuf {
    home.a2a_home().join("state/results")
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every saved item's path exists, is a plain file 0600 directly in a private folder under this
/// session's results, and has no control character in its name; returns (path, bytes) per item.
#[track_caller]
fn saved(home: &TempHome, r: &Value) -> Vec<(PathBuf, Vec<u8>)> {
    let root = results(home).join(SESSION).canonicalize().unwrap();
    let mut out = Vec::new();
    let items = r["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifacts: {r}"));
    // A lone text artifact is the result text itself; anything more is listed in the note.
    let listed = items.len() > 1 || items.iter().any(|k| k["kind"] != "text");
    for k in items {
        let Some(p) = k["path"].as_str() else {
            continue;
        };
        let p = PathBuf::from(p);
        let real = p.canonicalize().unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(real.parent().unwrap().parent().unwrap(), root, "{p:?}");
        assert!(std::fs::symlink_metadata(&p).unwrap().is_file(), "{p:?}");
        assert_eq!(mode(&p), 0o600, "{p:?}");
        assert_eq!(mode(p.parent().unwrap()), 0o700, "{p:?}");
        assert_eq!(mode(&root), 0o700);
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(
            !name.chars().any(char::is_control) && !name.starts_with('.'),
            "{name:?}"
        );
        // What Claude reads names the file.
        if listed {
            assert!(
                r["note"].as_str().unwrap().contains(p.to_str().unwrap()),
                "{r}"
            );
        }
        out.push((p.clone(), std::fs::read(&p).unwrap()));
    }
    out
}

fn send(home: &TempHome, script: &str) -> Value {
    let r = send_json(home, "w", script, &["--session", SESSION]);
    assert_eq!(r["state"], "completed", "{script}: {r}");
    r
}

/// Each scripted kind against one worker: data, a 1 MiB file, a URL, three chunks, twins, hostile.
fn every_kind(kind: Kind, extra: &[&str]) {
    let Some(peer) = Peer::start(kind, extra) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);

    let r = send(&home, "artifact data");
    let files = saved(&home, &r);
    assert_eq!(files.len(), 1, "{r}");
    let v: Value = serde_json::from_slice(&files[0].1).unwrap();
    // The v1 SDK's data parts are protobuf Values: every number a double (3.0).
    assert_eq!(v["rows"].as_f64(), Some(3.0), "{v}");
    assert_eq!(v["ok"], true);
    assert_eq!(v["names"], json!(["a", "b", "c"]));
    assert!(files[0].1.windows(2).any(|w| w == b"\n "), "pretty-printed");
    assert_eq!(r["artifacts"][0]["kind"], "data");

    let r = send(&home, "artifact file");
    let files = saved(&home, &r);
    assert_eq!(files.len(), 1, "{r}");
    assert_eq!(files[0].1, file_bytes(1024), "the bytes the worker sent");
    assert!(files[0].0.ends_with("blob.bin"), "{r}");
    assert_eq!(r["artifacts"][0]["bytes"], 1024 * 1024);

    let r = send(&home, "artifact url");
    assert!(saved(&home, &r).is_empty(), "a URL is not fetched: {r}");
    let k = &r["artifacts"][0];
    assert_eq!(k["url"], "https://example.invalid/chart.png", "{r}");
    assert_eq!(k["mediaType"], "image/png", "{r}");
    let note = r["note"].as_str().unwrap();
    assert!(
        note.contains("https://example.invalid/chart.png (not fetched)"),
        "{note}"
    );

    let r = send(&home, "artifact chunks");
    let files = saved(&home, &r);
    let id = r["taskId"].as_str().unwrap();
    let polled = peer
        .events()
        .iter()
        .any(|e| e.is_get() && e.task_id.as_deref() == Some(id));
    eprintln!(
        "{kind:?}: the chunked artifact came by {}",
        if polled { "GetTask" } else { "the stream" }
    );
    if extra.contains(&"--streaming") {
        assert!(
            !polled,
            "the three chunks came through the stream and were assembled"
        );
    }
    let out = ok(
        &home,
        &["task", r["taskId"].as_str().unwrap(), "--session", SESSION],
    );
    assert!(out.contains(files[0].0.to_str().unwrap()), "{out}");
    let all: Vec<&(PathBuf, Vec<u8>)> = files.iter().collect();
    assert_eq!(all.len(), 1, "{r}");
    assert_eq!(
        String::from_utf8_lossy(&all[0].1).trim_end(),
        "alpha line\nbeta line\ngamma line",
        "the three chunks assembled"
    );

    let r = send(&home, "artifact twins");
    let files = saved(&home, &r);
    assert_eq!(files.len(), 2, "{r}");
    assert_ne!(files[0].0, files[1].0, "duplicate names get distinct files");
    let mut bodies: Vec<&[u8]> = files.iter().map(|f| f.1.as_slice()).collect();
    bodies.sort();
    assert_eq!(bodies, [&b"first report\n"[..], b"second report\n"]);

    let r = send(&home, "artifact hostile");
    let files = saved(&home, &r);
    assert_eq!(files.len(), 2, "{r}");
    let names: Vec<String> = files
        .iter()
        .map(|f| f.0.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["x", "ev_31mil.txt"], "{r}");
    assert!(!home.a2a_home().join("state/x").exists());
    assert!(!home.a2a_home().join("x").exists());

    // `a2a-mod task <id>` lists them too, with their paths.
    let id = r["taskId"].as_str().unwrap();
    let out = ok(&home, &["task", id, "--session", SESSION]);
    for f in &files {
        assert!(out.contains(f.0.to_str().unwrap()), "{out}");
    }
}

#[test]
fn every_kind_is_kept_fake_streaming() {
    every_kind(Kind::Fake, &["--streaming", "on"])
}

#[test]
fn every_kind_is_kept_fake_v03() {
    every_kind(Kind::FakeV03, &[])
}

#[test]
fn every_kind_is_kept_python_v1() {
    every_kind(Kind::PyV1, &[])
}

#[test]
fn every_kind_is_kept_python_v03() {
    every_kind(Kind::PyV03, &[])
}

/// Answers over the 4 MiB an answer is read whole up to: a 6 MiB (and, where `big`, a 60 MiB)
/// file part arrives whole (sha256), the text beside it too; with `[results] max_task_mib` under
/// the part, it is listed as not saved with the reason and the text still arrives. Never a failed
/// check: the task completes, inside the window or (a debug build reading 80 MB of base64 may
/// take longer) through the poller and then the `task` command.
fn large_file_parts(kind: Kind, extra: &[&str], big: bool) {
    use sha2::Digest as _;
    let Some(peer) = Peer::start(kind, extra) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let sha = |b: &[u8]| sha2::Sha256::digest(b).to_vec();
    let sizes: &[usize] = if big {
        &[6 * 1024, 60 * 1024]
    } else {
        &[6 * 1024]
    };
    for &kib in sizes {
        let r = completed(&home, &format!("artifact report {kib}"));
        assert!(
            r["text"]
                .as_str()
                .unwrap_or("")
                .contains(&format!("report: {kib} KiB attached")),
            "{kib} KiB: the text beside the file: {}",
            r["note"]
        );
        let files = saved(&home, &r);
        let blob = files
            .iter()
            .find(|(p, _)| p.ends_with("blob.bin"))
            .unwrap_or_else(|| panic!("{kib} KiB: no blob.bin saved: {}", r["artifacts"]));
        assert_eq!(blob.1.len(), kib * 1024, "{kib} KiB");
        assert_eq!(
            sha(&blob.1),
            sha(&file_bytes(kib)),
            "{kib} KiB: the bytes sent"
        );
    }
    append_config(&home.a2a_home(), "\n[results]\nmax_task_mib = 4\n");
    let r = completed(&home, "artifact report 6144");
    assert!(
        r["text"]
            .as_str()
            .unwrap_or("")
            .contains("report: 6144 KiB attached"),
        "{r}"
    );
    let blob = r["artifacts"]
        .as_array()
        .and_then(|a| a.iter().find(|k| k["kind"] == "file"))
        .cloned()
        .unwrap_or_default();
    assert!(blob.get("path").is_none(), "{r}");
    assert_eq!(blob["bytes"], 6 * 1024 * 1024, "{r}");
    let why = blob["dropped"].as_str().unwrap_or("");
    assert!(why.contains("over the 4 MiB per-task cap"), "{r}");
}

/// `send`'s result once the task completed: at once, or after the poller saw it end (then
/// `task`'s, which reads it again and names its saved files).
fn completed(home: &TempHome, script: &str) -> Value {
    let r = send_json(home, "w", script, &["--session", SESSION]);
    if r["tracked"] != true {
        assert_eq!(r["state"], "completed", "{script}: {r}");
        return r;
    }
    let id = r["taskId"].as_str().unwrap().to_string();
    wait_until("the large answer to be read", 3 * WAIT, || {
        let v: Value = serde_json::from_str(&ok(home, &["tasks", "--json", "--session", SESSION]))
            .unwrap_or_default();
        v.as_array().is_some_and(|a| {
            a.iter()
                .any(|t| t["task_id"] == id.as_str() && t["state"] == "completed")
        })
    });
    let r = send_task(home, &id);
    assert_eq!(r["state"], "completed", "{script}: {r}");
    r
}

fn send_task(home: &TempHome, id: &str) -> Value {
    let out = ok(home, &["task", id, "--json", "--session", SESSION]);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

#[test]
fn large_file_parts_arrive_fake_streaming() {
    large_file_parts(Kind::Fake, &["--streaming", "on"], true)
}

#[test]
fn large_file_parts_arrive_fake_v03() {
    large_file_parts(Kind::FakeV03, &[], false)
}

#[test]
fn large_file_parts_arrive_python_v1() {
    large_file_parts(Kind::PyV1, &[], true)
}

#[test]
fn large_file_parts_arrive_python_v03() {
    large_file_parts(Kind::PyV03, &[], false)
}

/// A single text artifact is the result text, as before artifacts were kept: no list in the note, but the
/// task command still names its file.
#[test]
fn a_plain_text_result_reads_as_before() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let r = send(&home, "hello there");
    let note = r["note"].as_str().unwrap();
    assert!(!note.contains("Artifacts ("), "{note}");
    assert_eq!(r["artifacts"][0]["kind"], "text", "{r}");
    let out = ok(
        &home,
        &["task", r["taskId"].as_str().unwrap(), "--session", SESSION],
    );
    assert!(
        out.contains(r["artifacts"][0]["path"].as_str().unwrap()),
        "{out}"
    );
}

/// Past `[results] max_task_mib` nothing more is written, and the result says what was dropped.
#[test]
fn the_per_task_cap_holds_and_says_what_is_dropped() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    append_config(&home.a2a_home(), "\n[results]\nmax_task_mib = 0.5\n");
    let r = send(&home, "artifact file");
    let k = &r["artifacts"][0];
    assert!(k.get("path").is_none(), "{r}");
    assert!(
        k["dropped"]
            .as_str()
            .unwrap()
            .contains("over the 0.50 MiB per-task cap"),
        "{r}"
    );
    let note = r["note"].as_str().unwrap();
    assert!(note.contains("blob (file, application/octet-stream, 1048576 bytes): not saved, over the 0.50 MiB per-task cap"), "{note}");
    let dir = results(&home).join(SESSION);
    let files: Vec<_> = crate::util::files_under(&dir)
        .into_iter()
        .filter(|p| !p.ends_with(".artifacts.json"))
        .collect();
    assert!(files.is_empty(), "{files:?}");
}

/// A home whose sends are handed to the poller at once (no inline poll, no stream), so each task
/// ends in the background and its outcome reaches Claude through the hooks.
fn background_home(peer: &Peer) -> TempHome {
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    fast_timing(&home, "[]", 0.2, 3);
    append_config(&home.a2a_home(), "streaming = false\n");
    home
}

fn send_tracked(home: &TempHome, script: &str) -> String {
    let r = send_json(home, "w", script, &["--session", SESSION]);
    assert_eq!(r["tracked"], true, "{r}");
    r["taskId"].as_str().unwrap().to_string()
}

/// The path a note gives for the whole of a result it cut, and how many characters it says it cut.
#[track_caller]
fn cut_result(note: &str) -> (PathBuf, u64) {
    let (before, after) = note
        .split_once(" more characters of the result not shown; the whole result is in \"")
        .unwrap_or_else(|| panic!("no cut: {note}"));
    let cut = before.rsplit('[').next().unwrap().parse().unwrap();
    (after.split('"').next().unwrap().into(), cut)
}

/// The store's row of the session's only task: its result (the head) and how long the whole is;
/// and the result `tasks --json` lists (the whole, as before rows kept heads).
fn stored_result(home: &TempHome) -> (String, Option<u64>, String) {
    let ctx = a2a_mod::testing::Ctx::at(&home.a2a_home());
    let db = a2a_mod::testing::session::db_path(&ctx, SESSION);
    let rows = a2a_mod::testing::Reader::open(&db)
        .unwrap()
        .unwrap()
        .all()
        .unwrap();
    let out = ok(home, &["tasks", "--session", SESSION, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let listed = v[0]["result"].as_str().unwrap().to_string();
    let t = &rows[0];
    (t.result.clone().unwrap(), t.result_chars, listed)
}

/// A result longer than a row keeps is saved whole once, where every note points: the tool result
/// of a task that ended inline, the hidden context of one that ended in the background. The row
/// holds only the head, so a multi-MiB answer is not written into SQLite (benches/big_results.rs
/// measures the bytes).
#[test]
fn a_long_result_is_saved_whole_once_and_the_store_keeps_its_head() {
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on"]) else {
        return;
    };
    let (bytes, script) = (200_000u64, "tokens 200000 64");
    let whole = a2a_mod::testing::token_text(bytes as usize, 64);
    let head = |home: &TempHome| {
        let (result, chars, listed) = stored_result(home);
        assert_eq!(result.chars().count(), 16_000);
        assert!(whole.starts_with(&result));
        assert_eq!(chars, Some(bytes));
        assert_eq!(listed, whole);
    };

    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let r = send(&home, script);
    let (path, cut) = cut_result(r["note"].as_str().unwrap());
    assert_eq!(cut, bytes - 16_000, "the tool result shows 16,000");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
    assert_eq!(mode(&path), 0o600);
    head(&home);

    let home = background_home(&peer);
    send_tracked(&home, script);
    let mut ctx = None;
    wait_until("the hook's context", WAIT, || {
        ctx = hook_context(&home, SESSION);
        ctx.is_some()
    });
    let (path, cut) = cut_result(ctx.as_deref().unwrap());
    assert_eq!(cut, bytes - 4_000, "the hidden context shows 4,000");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);
    head(&home);
}

/// The hidden context names every artifact of a task that ended in the background, with a path
/// that exists and holds the worker's bytes.
#[test]
fn the_hidden_context_names_every_artifact() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = background_home(&peer);
    send_tracked(&home, "artifact twins");
    let mut ctx = None;
    wait_until("the hook's context", WAIT, || {
        ctx = hook_context(&home, SESSION);
        ctx.is_some()
    });
    let ctx = ctx.unwrap();
    let paths: Vec<&str> = ctx
        .lines()
        .filter(|l| l.starts_with("- report"))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    assert_eq!(paths.len(), 2, "{ctx}");
    let mut bodies: Vec<Vec<u8>> = paths.iter().map(|p| std::fs::read(p).unwrap()).collect();
    bodies.sort();
    assert_eq!(
        bodies,
        [b"first report\n".to_vec(), b"second report\n".to_vec()]
    );
}

/// A task whose end the poller learns from its subscription (a streaming worker; the next poll is
/// a minute away) has its artifacts saved and named too: the stream's ending, like a poll's, is
/// stored only after its files are.
#[test]
fn the_hidden_context_names_the_artifacts_of_a_task_the_stream_ended() {
    let Some(peer) = Peer::start(Kind::Fake, &["--streaming", "on"]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    fast_timing(&home, "[]", 60.0, 3);
    send_tracked(&home, "artifact twins");
    let mut ctx = None;
    wait_until(
        "the hook's context, long before the first poll",
        Duration::from_secs(20),
        || {
            ctx = hook_context(&home, SESSION);
            ctx.is_some()
        },
    );
    let ctx = ctx.unwrap();
    let paths: Vec<&str> = ctx
        .lines()
        .filter(|l| l.starts_with("- report"))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    assert_eq!(paths.len(), 2, "{ctx}");
    for p in paths {
        assert!(std::path::Path::new(p).is_file(), "{p} in {ctx}");
    }
}

/// However many artifacts and tasks, the hidden context stays under the hook cap
/// (`core::bounds::HOOK_CONTEXT_CHARS`), each task's list cut with the folder that holds the rest.
#[test]
fn many_artifacts_stay_within_the_hook_cap() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = background_home(&peer);
    // More tasks than one hook hands Claude (NOTES_PER_HOOK = 12), each with more files than a
    // note can list.
    let ids: Vec<String> = (0..14)
        .map(|_| send_tracked(&home, "artifact many 60"))
        .collect();
    wait_until("every task ended", WAIT, || {
        let out = ok(&home, &["tasks", "--session", SESSION, "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .all(|t| t["state"] == "completed")
    });
    let mut seen = String::new();
    while let Some(ctx) = hook_context(&home, SESSION) {
        assert!(ctx.encode_utf16().count() <= 9_000, "{}", ctx.len());
        seen.push_str(&ctx);
    }
    // Each task's note names the folder that holds all of its files.
    let root = results(&home).join(SESSION);
    for id in &ids {
        let folder = format!("\"{}\"", root.join(id).display());
        assert!(seen.contains(&folder), "{folder} never named in {seen}");
        assert_eq!(
            crate::util::files_under(&root.join(id)).len(),
            61,
            "60 files and the list"
        );
    }
}

/// Sets the modification time of everything under `dir` (and `dir`) `back` into the past.
fn age(dir: &Path, back: Duration) {
    let t = SystemTime::now() - back;
    let mut all = crate::util::files_under(dir);
    let mut dirs = vec![dir.to_path_buf()];
    for p in &all {
        let mut d = p.parent();
        while let Some(x) = d {
            if !x.starts_with(dir) {
                break;
            }
            dirs.push(x.to_path_buf());
            d = x.parent();
        }
    }
    all.extend(dirs);
    for p in all {
        let f = std::fs::File::open(&p).unwrap();
        f.set_times(std::fs::FileTimes::new().set_modified(t))
            .unwrap();
    }
}

/// A home with the fake worker added as `w`, and a data artifact saved in `session`'s results.
fn home_with_results(session: &str) -> Option<(Peer, TempHome)> {
    let peer = Peer::start(Kind::Fake, &[])?;
    let home = TempHome::new();
    ok(&home, &["worker", "add", "w", &peer.url]);
    let r = send_json(&home, "w", "artifact data", &["--session", session]);
    assert_eq!(r["state"], "completed", "{r}");
    Some((peer, home))
}

/// `tasks --prune` removes the results of sessions idle past `keep_days`, never a live
/// session's however old its files look; `doctor` offers it first.
#[test]
fn prune_removes_old_sessions_results_never_a_live_one() {
    let Some((_peer, home)) = home_with_results("old") else {
        return;
    };
    let live = send_json(&home, "w", "artifact data", &["--session", "live"]);
    assert_eq!(live["state"], "completed");
    // The live session's monitor runs (it holds its lock for the whole session).
    let lock =
        std::fs::File::create(home.a2a_home().join("state/sessions/live.monitor.lock")).unwrap();
    lock.try_lock().unwrap();
    let recent = send_json(&home, "w", "artifact data", &["--session", "recent"]);
    assert_eq!(recent["state"], "completed");

    let month = Duration::from_secs(40 * 86_400);
    age(&home.a2a_home().join("state"), month);
    // The recent session was touched a moment ago.
    let now = SystemTime::now();
    for p in crate::util::files_under(&results(&home).join("recent")) {
        std::fs::File::open(&p)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(now))
            .unwrap();
    }
    std::fs::File::open(results(&home).join("recent"))
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(now))
        .unwrap();
    let db = home.a2a_home().join("state/sessions/recent.db");
    std::fs::File::open(&db)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_modified(now))
        .unwrap();

    let o = home.command().arg("doctor").output();
    let report = stdout(&o);
    assert!(
        report.contains("results: 1 session(s) idle over 30 days")
            && report.contains("a2a-mod tasks --prune"),
        "{report}"
    );

    let out = ok(&home, &["tasks", "--prune"]);
    assert!(
        out.contains("removed ") && out.contains("/results/old"),
        "{out}"
    );
    assert!(
        out.contains("kept ") && out.contains("session live is live"),
        "{out}"
    );
    assert!(!results(&home).join("old").exists());
    assert!(results(&home).join("live").exists());
    assert!(results(&home).join("recent").exists());
    let again = ok(&home, &["tasks", "--prune"]);
    assert!(!again.contains("removed"), "{again}");
    drop(lock);
    // Once its monitor is gone, the idle session's results go too.
    let out = ok(&home, &["tasks", "--prune"]);
    assert!(out.contains("/results/live"), "{out}");
}

/// `state/results` a symlink: `tasks --prune` deletes nothing in the folder it points to, and says
/// so in one line; a writer refuses it alike (the saved files say why they are not saved).
#[test]
fn prune_and_saving_refuse_a_symlinked_results_folder() {
    let Some((_peer, home)) = home_with_results("old") else {
        return;
    };
    // The results folder moved elsewhere, a symlink left in its place.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("results");
    std::fs::rename(results(&home), &moved).unwrap();
    std::os::unix::fs::symlink(&moved, results(&home)).unwrap();
    let files = |d: &Path| {
        let mut f = crate::util::files_under(d);
        f.sort();
        f
    };
    let before = files(&moved);
    assert!(!before.is_empty());
    age(
        &home.a2a_home().join("state"),
        Duration::from_secs(40 * 86_400),
    );
    age(&moved, Duration::from_secs(40 * 86_400));

    let line = crate::util::fails(&home, &["tasks", "--prune"]);
    assert!(
        line.contains("is a symlink") && line.contains("nothing was pruned"),
        "{line}"
    );
    assert_eq!(files(&moved), before, "prune deleted through the symlink");

    let new = send_json(&home, "w", "artifact data", &["--session", "new"]);
    assert_eq!(new["state"], "completed", "{new}");
    let kept = new["artifacts"].as_array().cloned().unwrap_or_default();
    assert!(!kept.is_empty(), "{new}");
    for k in &kept {
        assert!(k.get("path").is_none(), "saved through the symlink: {new}");
        let why = k["dropped"].as_str().unwrap_or_default();
        assert!(why.contains("is a symlink"), "{new}");
    }
    assert!(
        !moved.join("new").exists(),
        "a folder made through the symlink"
    );
}

/// Through the MCP tool over stdio, as Claude Code calls it: the structured result names each
/// artifact with its path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_send_tool_result_lists_artifacts() {
    use crate::mcp::{Mcp, structured};
    let fw = a2a_mod::testing::FakeWorker::start(Default::default())
        .await
        .unwrap();
    let home = TempHome::with_fake(Some(&fw.url), "");
    let mut m = Mcp::start(&home, &[]).await;
    let r = m
        .call(
            "send",
            json!({"worker": "fake", "message": "artifact twins"}),
        )
        .await;
    let s = structured(&r);
    assert_eq!(s["state"], "completed", "{s}");
    let arts = s["artifacts"].as_array().unwrap();
    assert_eq!(arts.len(), 2, "{s}");
    let root = home.a2a_home().join("state/results");
    for a in arts {
        let p = PathBuf::from(a["path"].as_str().unwrap());
        assert!(p.starts_with(&root) && p.exists(), "{p:?}");
        assert!(
            s["note"].as_str().unwrap().contains(p.to_str().unwrap()),
            "{s}"
        );
    }
}
