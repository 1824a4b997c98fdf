//! `a2a-mod doctor`: all ✓ and exit 0 after a real install with a reachable worker; a
//! deliberately broken install (status line removed, a worker down, a worker refusing our token,
//! no `claude` on PATH) gives the right ✕ lines, each with its fix, and exit 1.

use crate::install::{Cli, run, run_ok, settings_path};
use crate::peers::claude::missing_tools;
use crate::util::{TempHome, TestCommand, ok, skip};
use crate::workers::{Kind, Peer};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::Stdio;

fn doctor(home: &TempHome, cli: Cli) -> (i32, String, String) {
    let o = run(home, cli, None, &["doctor"]);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn doctor_passes_after_a_real_install() {
    if let Some(why) = missing_tools() {
        return skip(&format!("doctor with the real Claude Code: {why}"));
    }
    let Some(worker) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "fake", &worker.url]);
    run_ok(&home, Cli::Real, &["install"]);
    let (code, out, err) = doctor(&home, Cli::Real);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!out.contains('✕'), "{out}");
    for want in [
        "✓ Claude Code ",
        "✓ plugin a2a-mod@a2a-mod enabled (user settings)",
        "✓ plugin hooks (session-start, user-prompt-submit, post-tool-use) and monitor (watch) present",
        "✓ plugin wake-ups: asyncRewake waiter (hook wake) and headless Stop hook (hook stop) present",
        "✓ plugin runs a2a-mod ",
        "✓ status line wired (user settings, refreshInterval 1); one render took ",
        "✓ permissions: mcp__plugin_a2a-mod_a2a allowed",
        "✓ worker \"fake\": ",
        "card reachable, auth working",
        "✓ state folder writable",
        "All checks passed.",
    ] {
        assert!(out.contains(want), "{want:?} not in:\n{out}");
    }
}

/// A worker that requires `Authorization: Bearer right`, run as its own process.
struct AuthWorker {
    child: std::process::Child,
    url: String,
}

impl Drop for AuthWorker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn auth_worker() -> AuthWorker {
    let mut child = TestCommand::bare()
        .args(["fake-worker", "--bearer-env", "DOCTOR_WORKER_TOKEN"])
        .env("DOCTOR_WORKER_TOKEN", "right")
        .stderr(Stdio::inherit())
        .spawn();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    AuthWorker {
        child,
        url: line.trim().to_owned(),
    }
}

#[test]
fn doctor_reports_a_broken_install_with_fixes_and_exit_1() {
    let home = TempHome::new();
    run_ok(&home, Cli::Absent, &["install"]);
    // Break it: the status line is gone...
    let path = settings_path(&home);
    let mut s: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    s.as_object_mut().unwrap().shift_remove("statusLine");
    std::fs::write(&path, serde_json::to_string_pretty(&s).unwrap()).unwrap();
    // ...one worker is down (a port nothing listens on any more)...
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = format!("http://127.0.0.1:{port}");
    ok(&home, &["worker", "add", "down", &down, "--no-check"]);
    // ...and one refuses the token we send (the env var names a wrong one in config).
    let auth = auth_worker();
    ok(
        &home,
        &[
            "worker",
            "add",
            "locked",
            &auth.url,
            "--bearer-env",
            "HOME",
            "--no-check",
        ],
    );

    let (code, out, err) = doctor(&home, Cli::Absent);
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("a2a-mod: doctor: "), "{err}");
    let line = |start: &str| {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{out}"))
            .to_owned()
    };
    assert_eq!(
        line("✕ status line"),
        "✕ status line: not set in any settings file — run `a2a-mod install`"
    );
    let w = line("✕ worker \"down\"");
    assert!(w.contains("card not reachable"), "{w}");
    assert!(
        w.ends_with(&format!("— check that it is running at {down}")),
        "{w}"
    );
    let w = line("✕ worker \"locked\"");
    assert!(w.contains("refused our credentials (HTTP 401)"), "{w}");
    assert!(
        w.contains("— fix the credentials of worker \"locked\""),
        "{w}"
    );
    assert!(line("✕ Claude Code").contains("npm install -g @anthropic-ai/claude-code"));
    // What still works is reported as such.
    line("✓ plugin a2a-mod@a2a-mod enabled");
    line("✓ permissions: ");
    line("✓ state folder writable");
    assert!(out.contains("check(s) failed."), "{out}");
}

/// Per live session, doctor names the path that will wake Claude: the monitor, the asyncRewake
/// waiter, a headless run's Stop hook, or none (✕, with how to get the result anyway).
#[test]
fn doctor_names_the_wake_path_of_each_live_session() {
    use a2a_mod::testing::Ctx;
    use a2a_mod::testing::task::TaskState;
    use a2a_mod::testing::{NewTask, Store, session};
    let home = TempHome::new();
    let ctx = Ctx::at(&home.a2a_home());
    let sid = "5e551011-aaaa-bbbb-cccc-00000000d0c7";
    let s = Store::open(&session::db_path(&ctx, sid)).unwrap();
    s.record_sent(
        &NewTask {
            worker: "fake",
            task_id: "abcd1234",
            context_id: None,
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
    .unwrap();
    // Holding the poller lock keeps doctor's own view simple (and starts no real poller).
    let _poller = a2a_mod::testing::try_lock(&a2a_mod::testing::lock_path(&ctx, sid))
        .unwrap()
        .unwrap();
    let lock = |what: &str| {
        a2a_mod::testing::try_lock(&session::lock_path(&ctx, sid, what))
            .unwrap()
            .unwrap()
    };
    let line = |home: &TempHome| {
        let (_, out, _) = doctor(home, Cli::Absent);
        out.lines()
            .find(|l| l.contains("wake path"))
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        line(&home),
        format!(
            "✕ no wake path for session {sid}: neither the monitor nor the waiter runs — its results reach Claude at the session's next prompt, or fetch one with `a2a-mod task abcd1234 --session {sid}`"
        )
    );
    let waiter = lock("waker");
    assert_eq!(
        line(&home),
        format!(
            "✓ wake path for session {sid}: fallback (the asyncRewake waiter; no monitor runs)"
        )
    );
    let monitor = lock("monitor");
    assert_eq!(
        line(&home),
        format!("✓ wake path for session {sid}: monitor (a2a-mod watch)")
    );
    drop((waiter, monitor));
    std::fs::write(ctx.sessions_dir().join(format!("{sid}.mode")), "headless\n").unwrap();
    assert!(line(&home).starts_with(&format!(
        "✕ wake path for session {sid} (headless): no run is waiting for its 1 live task(s)"
    )));
    let _stop = lock("stop");
    assert_eq!(
        line(&home),
        format!("✓ wake path for session {sid}: headless wait (the run's Stop hook holds it open)")
    );
}

/// `[serve]` in the config: doctor names each agent's folder, the tokens' variables and the
/// address, each problem with its fix.
#[test]
fn doctor_checks_the_serve_config() {
    let home = TempHome::new();
    let dir = home.root().join("app");
    std::fs::create_dir(&dir).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    crate::util::append_config(
        &home.a2a_home(),
        &format!(
            "[serve]\nlisten = \"127.0.0.1:{port}\"\ntoken_envs = [\"SERVE_SET\", \"SERVE_UNSET\"]\n[serve.agents.build]\ndir = {:?}\npermission_mode = \"acceptEdits\"\n[serve.agents.gone]\ndir = \"/nonexistent/a2a-mod-serve\"\n[serve.agents.script]\ndir = {:?}\nexec = [\"/bin/sh\", \"triage.sh\"]\n[serve.agents.nocli]\ndir = {:?}\nexec = [\"a2a-mod-no-such-cli\", \"-p\"]\n",
            dir.display().to_string(),
            dir.display().to_string(),
            dir.display().to_string()
        ),
    );
    let o = home
        .command()
        .arg("doctor")
        .env("SERVE_SET", "x")
        .env_remove("SERVE_UNSET")
        .output();
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        format!("✓ serve: agent build: {} (permission mode acceptEdits)", dir.display()),
        "✕ serve: agent gone: \"/nonexistent/a2a-mod-serve\" is not a folder — create it, or fix serve.agents.gone.dir".to_string(),
        format!("✓ serve: agent script: {} (runs /bin/sh triage.sh)", dir.display()),
        "✕ serve: agent nocli: a2a-mod-no-such-cli is not on PATH — install it, or name it by its path in serve.agents.nocli.exec".to_string(),
        "✓ serve: token variable SERVE_SET is set".to_string(),
        "✕ serve: token variable SERVE_UNSET is not set — export it before `a2a-mod serve`, or drop it from serve.token_envs".to_string(),
        format!("✓ serve: 127.0.0.1:{port} is free to listen on"),
    ] {
        assert!(out.contains(&want), "{want:?} not in:\n{out}");
    }
    assert_eq!(o.status.code(), Some(1));
}
