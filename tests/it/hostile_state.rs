//! Hostile workers and careless ones, the state's side, through the built binary:
//! every file under the state folder private whatever the umask (and a looser one tightened by the
//! next writer, never by a reader); an MCP request line too long to read answered with an error
//! instead of silence; a corrupt session store named with its fix by `tasks`, while the status
//! line and the hooks stay silent.

use crate::mcp::Mcp;
use crate::util::*;
use crate::workers::{Kind, Peer};
use serde_json::{Value, json};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

/// `a2a-mod <args>` in `home` under `umask 022`, the common default that made state readable by
/// every user; what it starts (the poller) inherits the umask.
#[track_caller]
fn ok_umask(home: &TempHome, args: &[&str]) -> String {
    home.command().umask(0o022).args(args).ok()
}

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(0)
}

/// Every file and folder under `dir` with its mode (entries that vanish mid-walk, like a temp
/// file being renamed, are skipped).
fn walk(dir: &Path, out: &mut Vec<(PathBuf, bool, u32)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        out.push((p.clone(), m.is_dir(), m.permissions().mode() & 0o777));
        if m.is_dir() {
            walk(&p, out);
        }
    }
}

/// The loose entries under the state folder (itself included), as "path mode" lines.
fn loose(state: &Path) -> Vec<String> {
    let mut all = vec![(state.to_path_buf(), true, mode(state))];
    walk(state, &mut all);
    all.into_iter()
        .filter(|(_, dir, m)| *m != if *dir { 0o700 } else { 0o600 })
        .map(|(p, _, m)| format!("{} {m:o}", p.display()))
        .collect()
}

/// After a real send to the fake worker, with the poller running and done, nothing under the state
/// folder is readable by anyone but its owner: the state folder and sessions folder 0700; the
/// store, its `-wal` and `-shm`, the status snapshot and its lock, the poller's lock and the log
/// 0600. A looser store or folder left by an older a2a-mod is tightened by the next writer; a
/// reader (`tasks`, and so the status line's read-only open) never changes a mode.
#[test]
fn state_files_are_private_whatever_the_umask() {
    let Some(peer) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    fast_timing(&home, "[0.2]", 0.2, 6);
    ok_umask(&home, &["worker", "add", "w", &peer.url]);
    let sent: Value = serde_json::from_str(&ok_umask(
        &home,
        &["send", "w", "slow 1 private work", "--json"],
    ))
    .unwrap();
    assert_eq!(sent["tracked"], true, "{sent}");
    let state = home.a2a_home().join("state");
    let sessions = state.join("sessions");
    wait_until("the poller to complete the task", 20 * SECOND, || {
        ok_umask(&home, &["tasks", "--json"]).contains("\"completed\"")
    });
    for f in [
        "cli.db",
        "cli.db-wal",
        "cli.db-shm",
        "cli.status",
        "cli.poller.lock",
    ] {
        assert!(sessions.join(f).exists(), "{f} missing");
    }
    assert!(state.join("a2a-mod.log").exists());
    assert_eq!(loose(&state), Vec::<String>::new());

    // Files from before (0644/0755): a read-only command leaves them, the next writer tightens.
    let db = sessions.join("cli.db");
    for (p, m) in [
        (&state, 0o755),
        (&sessions, 0o755),
        (&db, 0o644),
        (&sessions.join("cli.status"), 0o644),
        (&sessions.join("cli.status.lock"), 0o644),
    ] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
    }
    ok_umask(&home, &["tasks"]);
    assert_eq!(mode(&db), 0o644, "a reader changed a mode");
    ok_umask(&home, &["send", "w", "hello again", "--json"]);
    assert_eq!(loose(&state), Vec::<String>::new());
}

/// A request line over the 16 MiB limit of one message is answered at once with a JSON-RPC error
/// carrying its id (found after the params, where Claude Code's SDK writes it), the reason is in
/// the log, and the connection stays up for the next call. rmcp alone drops such a line with no
/// reply, and Claude Code then waits for its tool timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_too_long_mcp_request_gets_an_error_reply() {
    let home = TempHome::new();
    let mut mcp = Mcp::start(&home, &[]).await;

    let big = "x".repeat(16 * 1024 * 1024 + 1000);
    let line = format!(
        r#"{{"method":"tools/call","params":{{"name":"send","arguments":{{"worker":"w","message":"{big}"}}}},"jsonrpc":"2.0","id":7}}"#
    );
    mcp.write_line(line.as_bytes()).await;
    let r = mcp.response_within(&json!(7), 60 * SECOND).await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("a2a-mod: request too long: 16.0 MiB, over the 16.0 MiB limit"),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");

    let r = mcp.request("tools/list", json!({})).await;
    assert!(r["result"]["tools"].is_array(), "{r}");

    let log = home.a2a_home().join("state/a2a-mod.log");
    let reason = format!(
        "mcp: request 7 is {} bytes, over the 16777216-byte limit",
        line.len()
    );
    wait_until("the reason in the log", 10 * SECOND, || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(&reason)
    });
}

fn run_with_stdin(home: &TempHome, args: &[&str], input: &[u8]) -> Output {
    home.command().args(args).stdin(input).output()
}

/// A session store that is not a database: `tasks` says which file and what to do, in one line;
/// the status line and the hooks, which must never disturb Claude Code, print nothing and exit 0.
#[test]
fn a_corrupt_session_store_names_the_file_and_the_fix() {
    let home = TempHome::new();
    let sessions = home.a2a_home().join("state/sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let db = sessions.join("X.db");
    std::fs::write(&db, b"this is not an SQLite database\n".repeat(200)).unwrap();

    let line = fails(&home, &["tasks", "--session", "X"]);
    assert_eq!(
        line,
        format!(
            "a2a-mod: session store \"{}\" is corrupt: file is not a database — move it aside; \
             tasks in it are lost",
            db.display()
        )
    );

    let stdin = json!({"session_id":"X","hook_event_name":"UserPromptSubmit","prompt":"hi",
        "cwd":"/tmp","transcript_path":"/tmp/x.jsonl"})
    .to_string();
    for args in [
        &["statusline"][..],
        &["hook", "user-prompt-submit"],
        &["hook", "post-tool-use"],
        &["hook", "session-start"],
    ] {
        let o = run_with_stdin(&home, args, stdin.as_bytes());
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
        assert_eq!(stderr(&o), "", "{args:?}");
    }
}
