//! `a2a-mod statusline`: every row of the seed's table and every edge case, by running the real
//! binary with Claude Code stdin fixtures (tests/fixtures/statusline/) against a store seeded
//! through the store API, with the clock fixed by `A2A_MOD_NOW_MS`. Also hostile worker text,
//! themes, bad stdin and `--then`, and the status snapshot the line reads instead of SQLite
//! (that every write publishes it, that stale and missing ones fall back to the store).

use crate::util::{TempHome, TestCommand};
use a2a_mod::testing::Ctx;
use a2a_mod::testing::snapshot::{self, Loaded};
use a2a_mod::testing::status;
use a2a_mod::testing::task::{EndReason, PollUpdate, TaskState};
use a2a_mod::testing::{Event, NewTask, Reader, Store, TaskKey, session};
use std::path::Path;
use std::time::{Duration, Instant};

/// A whole ten seconds, so the spinner shows its first frame, ⠋.
const NOW: i64 = 1_700_000_000_000;
const SID: &str = "b42c70ee-5d1e-4c3b-9a47-1f0e2d3c4b5a";

fn fixture(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/statusline")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

struct Out {
    stdout: String,
    code: Option<i32>,
}

impl Out {
    /// The line with colour stripped (the seed's table is about the text).
    fn text(&self) -> String {
        strip_sgr(&self.stdout)
    }
}

/// This module's store, config and `statusline` command, in a test's home.
impl TempHome {
    fn ctx(&self) -> Ctx {
        Ctx::at(&self.a2a_home())
    }

    fn store(&self) -> Store {
        self.store_of(SID)
    }

    fn store_of(&self, sid: &str) -> Store {
        Store::open(&session::db_path(&self.ctx(), sid)).unwrap()
    }

    fn config(&self, text: &str) {
        std::fs::write(self.a2a_home().join("config.toml"), text).unwrap();
    }

    fn cmd(&self, now: i64, env: &[(&str, &str)], args: &[&str]) -> TestCommand {
        let mut c = self.command();
        c.arg("statusline").args(args);
        // The test may itself run inside Claude Code or a themed terminal: none of that leaks in.
        for k in [
            "NO_COLOR",
            "REDUCE_MOTION",
            "A2A_MOD_REDUCE_MOTION",
            "A2A_MOD_ASCII",
            "A2A_MOD_LOG",
            "A2A_MOD_THEN_TIMEOUT_MS",
        ] {
            c.env_remove(k);
        }
        c.env("A2A_MOD_NOW_MS", now.to_string())
            .env("TERM", "xterm-256color")
            .envs(env.iter().copied());
        c
    }

    fn run_with(&self, stdin: &[u8], now: i64, env: &[(&str, &str)], args: &[&str]) -> Out {
        let out = self.cmd(now, env, args).stdin(stdin).output();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "stderr: {stderr}");
        Out {
            stdout: String::from_utf8(out.stdout).unwrap(),
            code: out.status.code(),
        }
    }

    /// Runs with the idle payload of docs/claude-code.md "Status line" and the default config.
    fn run(&self, now: i64) -> Out {
        self.run_with(&fixture("idle.json"), now, &[], &[])
    }

    fn line(&self, now: i64) -> String {
        let out = self.run(now);
        assert_eq!(out.code, Some(0));
        out.text()
    }
}

/// Removes SGR sequences (`ESC [ ... m`), the only ones the status line may print.
fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\x1b' {
            assert_eq!(it.next(), Some('['), "non-SGR escape in {s:?}");
            for c in it.by_ref() {
                if c == 'm' {
                    break;
                }
                assert!(c.is_ascii_digit() || c == ';', "non-SGR escape in {s:?}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn sent<'a>(worker: &'a str, id: &'a str, message: &'a str, state: TaskState) -> NewTask<'a> {
    NewTask {
        worker,
        task_id: id,
        context_id: Some("ctx"),
        message,
        state,
        result: None,
        result_chars: None,
        question: None,
        next_poll_ms: Some(0),
        held_until_ms: None,
        told: false,
        native_ms: None,
    }
}

fn ask<'a>(worker: &'a str, id: &'a str, question: &'a str) -> NewTask<'a> {
    NewTask {
        question: Some(question),
        ..sent(worker, id, "ask", TaskState::InputRequired)
    }
}

fn end(state: TaskState, reason: EndReason) -> PollUpdate {
    PollUpdate {
        state,
        text: Some("result".into()),
        text_chars: None,
        question: None,
        context_id: None,
        failed_polls: 0,
        last_error: None,
        end: Some(reason),
        next_poll_ms: None,
        held_until_ms: None,
    }
}

/// Seeds one task that ran `took_s` seconds and ended `ago_s` seconds before NOW.
fn seed_ended(s: &Store, id: &str, state: TaskState, reason: EndReason, took_s: i64, ago_s: i64) {
    let ended = NOW - ago_s * 1000;
    s.record_sent(
        &sent("fake", id, "slow 20 build", TaskState::Working),
        ended - took_s * 1000,
    )
    .unwrap();
    assert!(
        s.apply_poll(
            &a2a_mod::testing::TaskKey::new("fake", id),
            &end(state, reason),
            false,
            ended
        )
        .unwrap()
    );
}

// ---- The seed's table ----

#[test]
fn one_running() {
    let h = TempHome::new();
    h.store()
        .record_sent(
            &sent("fake", "t1", "slow 20 build", TaskState::Working),
            NOW - 12_000,
        )
        .unwrap();
    let out = h.run(NOW);
    assert_eq!(out.code, Some(0));
    assert_eq!(out.stdout.matches('\n').count(), 1);
    assert_eq!(out.text(), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
    assert!(out.stdout.contains('\x1b'), "default theme is coloured");
    // Submitted counts as running too; past an hour the time is h:mm:ss.
    let h = TempHome::new();
    h.store()
        .record_sent(
            &sent("fake", "t1", "build", TaskState::Submitted),
            NOW - 3_723_000,
        )
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake build 1:02:03\n");
}

#[test]
fn several_running() {
    let h = TempHome::new();
    let s = h.store();
    s.record_sent(&sent("fake", "t1", "a", TaskState::Working), NOW - 5_000)
        .unwrap();
    s.record_sent(&sent("adk", "t2", "b", TaskState::Working), NOW - 4_000)
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ 2 running\n");
    s.record_sent(&ask("fake", "t3", "Which colour?"), NOW - 3_000)
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ 2 running · 1 waiting\n");
}

#[test]
fn one_waiting() {
    let h = TempHome::new();
    h.store()
        .record_sent(&ask("fake", "t1", "Which colour?"), NOW - 60_000)
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ? fake waiting: Which colour?\n");
    // A waiting task stays until answered, past the done window.
    assert_eq!(
        h.line(NOW + 3_600_000),
        "a2a-mod: ? fake waiting: Which colour?\n"
    );
}

/// A permission a worker's run asks (serve's line) is its own row, apart from a question.
#[test]
fn one_approval_waiting() {
    let h = TempHome::new();
    h.store()
        .record_sent(
            &ask(
                "build",
                "t1",
                "Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny (with a reason)",
            ),
            NOW - 60_000,
        )
        .unwrap();
    assert_eq!(
        h.line(NOW),
        "a2a-mod: ! build needs your ok: Bash rm -rf build\n"
    );
}

#[test]
fn several_waiting_none_running() {
    let h = TempHome::new();
    let s = h.store();
    s.record_sent(&ask("fake", "t1", "Which colour?"), NOW - 9_000)
        .unwrap();
    s.record_sent(&ask("adk", "t2", "Which size?"), NOW - 8_000)
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ? 2 waiting\n");
}

#[test]
fn just_ended_shows_for_five_seconds() {
    for (state, want) in [
        (TaskState::Completed, "a2a-mod: ✓ fake done 0:20\n"),
        (TaskState::Failed, "a2a-mod: ✕ fake failed 0:20\n"),
        (TaskState::Canceled, "a2a-mod: ⊘ fake canceled 0:20\n"),
        (TaskState::Rejected, "a2a-mod: ✕ fake rejected 0:20\n"),
        (TaskState::Unknown, "a2a-mod: ? fake ended 0:20\n"),
    ] {
        let h = TempHome::new();
        seed_ended(&h.store(), "t1", state, EndReason::State, 20, 0);
        assert_eq!(h.line(NOW), want, "{state}");
        assert_eq!(h.line(NOW + 5_000), want, "{state} at 5 s");
        assert_eq!(h.line(NOW + 5_001), "", "{state} after 5 s");
    }
}

#[test]
fn done_window_follows_config() {
    let h = TempHome::new();
    h.config("[timing]\ndone_display_s = 1.5\n");
    seed_ended(
        &h.store(),
        "t1",
        TaskState::Completed,
        EndReason::State,
        20,
        0,
    );
    assert_eq!(h.line(NOW + 1_500), "a2a-mod: ✓ fake done 0:20\n");
    assert_eq!(h.line(NOW + 1_501), "");
}

#[test]
fn auth_required_lost_and_removed() {
    let h = TempHome::new();
    h.store()
        .record_sent(&sent("fake", "t1", "auth", TaskState::AuthRequired), NOW)
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ? fake needs auth\n");

    let h = TempHome::new();
    seed_ended(&h.store(), "t1", TaskState::Working, EndReason::Lost, 65, 2);
    assert_eq!(h.line(NOW), "a2a-mod: ✕ fake lost contact 1:05\n");

    let h = TempHome::new();
    let s = h.store();
    s.record_sent(
        &sent("fake", "t1", "build", TaskState::Working),
        NOW - 30_000,
    )
    .unwrap();
    assert_eq!(s.end_removed("fake", NOW - 1_000).unwrap(), 1);
    assert_eq!(h.line(NOW), "a2a-mod: ⊘ fake no longer tracked\n");
}

#[test]
fn spinner_moves_each_second_or_stands_still() {
    let h = TempHome::new();
    h.store()
        .record_sent(&sent("fake", "t1", "build", TaskState::Working), NOW)
        .unwrap();
    let frames: String = (0..10)
        .map(|i| h.line(NOW + i * 1000).chars().nth(9).unwrap())
        .collect();
    assert_eq!(frames, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏");
    // Same second, same frame: no state, only the clock.
    assert_eq!(h.line(NOW + 1_999), h.line(NOW + 1_000));
    let still = "a2a-mod: ● fake build 0:02\n";
    for env in [
        [("REDUCE_MOTION", "1")],
        [("A2A_MOD_REDUCE_MOTION", "true")],
    ] {
        let out = h.run_with(&fixture("idle.json"), NOW + 2_000, &env, &[]);
        assert_eq!(out.text(), still);
    }
    let out = h.run_with(
        &fixture("idle.json"),
        NOW + 2_000,
        &[("REDUCE_MOTION", "0")],
        &[],
    );
    assert_eq!(out.text(), "a2a-mod: ⠹ fake build 0:02\n");
    h.config("[statusline]\nanimations = false\n");
    assert_eq!(h.line(NOW + 2_000), still);
}

// ---- Edge cases the table leaves open ----

#[test]
fn one_running_and_one_waiting() {
    let h = TempHome::new();
    let s = h.store();
    s.record_sent(
        &sent("fake", "t1", "slow 20 build", TaskState::Working),
        NOW - 12_000,
    )
    .unwrap();
    s.record_sent(&ask("adk", "t2", "Which colour?"), NOW - 5_000)
        .unwrap();
    assert_eq!(
        h.line(NOW),
        "a2a-mod: ⠋ fake slow 20 build 0:12 · 1 waiting\n"
    );
}

#[test]
fn ended_while_one_waits() {
    let h = TempHome::new();
    let s = h.store();
    s.record_sent(&ask("adk", "t2", "Which colour?"), NOW - 50_000)
        .unwrap();
    seed_ended(&s, "t1", TaskState::Completed, EndReason::State, 20, 1);
    assert_eq!(h.line(NOW), "a2a-mod: ✓ fake done 0:20 · 1 waiting\n");
    assert_eq!(
        h.line(NOW + 10_000),
        "a2a-mod: ? adk waiting: Which colour?\n"
    );
}

#[test]
fn running_hides_a_fresh_outcome() {
    let h = TempHome::new();
    let s = h.store();
    s.record_sent(&sent("adk", "t2", "build", TaskState::Working), NOW - 3_000)
        .unwrap();
    seed_ended(&s, "t1", TaskState::Failed, EndReason::State, 20, 1);
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ adk build 0:03\n");
}

#[test]
fn a_waiting_task_answered_runs_again() {
    let h = TempHome::new();
    let s = h.store();
    let mut t = ask("fake", "t1", "Which colour?");
    t.message = "paint the shed";
    s.record_sent(&t, NOW - 30_000).unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ? fake waiting: Which colour?\n");
    // The follow-up send (same task id) makes it live again; the time counts from the first send.
    s.record_sent(&sent("fake", "t1", "blue", TaskState::Working), NOW)
        .unwrap();
    assert_eq!(h.line(NOW + 2_000), "a2a-mod: ⠹ fake paint the shed 0:32\n");
    // Answered and finished inside the inline window: the outcome, as for any end.
    s.record_sent(
        &sent("fake", "t1", "blue", TaskState::Completed),
        NOW + 3_000,
    )
    .unwrap();
    assert_eq!(h.line(NOW + 4_000), "a2a-mod: ✓ fake done 0:33\n");
}

#[test]
fn newlines_and_tabs_become_one_line() {
    let h = TempHome::new();
    let s = h.store();
    s.record_sent(
        &sent("fake", "t1", "fix\nthe\r\n\tbuild\n", TaskState::Working),
        NOW - 1_000,
    )
    .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake fix the build 0:01\n");
    let h = TempHome::new();
    h.store()
        .record_sent(&ask("fake", "t1", "Which\ncolour?\n\n(red or blue)"), NOW)
        .unwrap();
    assert_eq!(
        h.line(NOW),
        "a2a-mod: ? fake waiting: Which colour? (red or blue)\n"
    );
}

/// After `/clear` the status line sees a new session id (docs/claude-code.md "Sessions across /clear, --resume and /exit"); the
/// SessionStart hook links it to the old store, and the line must follow the link.
#[test]
fn follows_the_clear_link() {
    let h = TempHome::new();
    h.store()
        .record_sent(
            &sent("fake", "t1", "slow 20 build", TaskState::Working),
            NOW - 12_000,
        )
        .unwrap();
    session::link(&h.ctx(), "d890abd3-1c2b-4e5f-8a9b-0c1d2e3f4a5b", SID).unwrap();
    let out = h.run_with(&fixture("after_clear.json"), NOW, &[], &[]);
    assert_eq!(out.text(), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
}

// ---- Stdin: real payloads, nulls, garbage ----

#[test]
fn real_payloads_and_nulls_render() {
    let h = TempHome::new();
    h.store()
        .record_sent(
            &sent("fake", "t1", "slow 20 build", TaskState::Working),
            NOW - 12_000,
        )
        .unwrap();
    for f in ["idle.json", "after_prompt.json", "nulls.json"] {
        let out = h.run_with(&fixture(f), NOW, &[], &[]);
        assert_eq!(out.code, Some(0), "{f}");
        assert_eq!(out.text(), "a2a-mod: ⠋ fake slow 20 build 0:12\n", "{f}");
    }
    // No session id on stdin: Claude Code's env names it too.
    for f in ["session_null.json", "no_session.json"] {
        let out = h.run_with(&fixture(f), NOW, &[("CLAUDE_CODE_SESSION_ID", SID)], &[]);
        assert_eq!(out.text(), "a2a-mod: ⠋ fake slow 20 build 0:12\n", "{f}");
    }
}

#[test]
fn bad_stdin_prints_nothing_and_exits_0() {
    let h = TempHome::new();
    h.store()
        .record_sent(
            &sent("fake", "t1", "slow 20 build", TaskState::Working),
            NOW,
        )
        .unwrap();
    for stdin in [
        fixture("garbage.bin"),
        fixture("session_null.json"),
        fixture("no_session.json"),
        fixture("traversal.json"),
        b"".to_vec(),
        b"null".to_vec(),
        b"{\"session_id\": 12}".to_vec(),
        vec![b'{'; 100_000],
    ] {
        let out = h.run_with(&stdin, NOW, &[], &[]);
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""), "{stdin:?}");
    }
}

#[test]
fn no_store_is_an_early_silent_exit_that_creates_nothing() {
    let h = TempHome::new();
    let out = h.run(NOW);
    assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""));
    assert_eq!(std::fs::read_dir(h.a2a_home()).unwrap().count(), 0);
    // A broken config is never read on that path, and does not matter on the other.
    h.config("[[[ broken");
    assert_eq!(h.run(NOW).stdout, "");
    h.store()
        .record_sent(&sent("fake", "t1", "build", TaskState::Working), NOW)
        .unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake build 0:00\n");
}

#[test]
fn closed_stdout_exits_0() {
    let h = TempHome::new();
    h.store()
        .record_sent(&sent("fake", "t1", "build", TaskState::Working), NOW)
        .unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = h
        .cmd(NOW, &[], &[])
        .stdin(fixture("idle.json"))
        .stdout(writer)
        .output();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---- Hostile worker text ----

fn seed_raw(h: &TempHome, message: &[u8], question: Option<&[u8]>) {
    let state = if question.is_some() {
        TaskState::InputRequired
    } else {
        TaskState::Working
    };
    h.store()
        .record_sent(&sent("fake", "t1", "placeholder", state), NOW - 1_000)
        .unwrap();
    // Straight into the file, bytes and all, as a tampered or buggy writer could leave them.
    let conn = rusqlite::Connection::open(session::db_path(&h.ctx(), SID)).unwrap();
    conn.execute(
        "UPDATE tasks SET message = CAST(?1 AS TEXT), question = CAST(?2 AS TEXT)",
        rusqlite::params![message, question],
    )
    .unwrap();
}

fn assert_clean(s: &str) {
    let visible = strip_sgr(s);
    for c in visible.chars() {
        assert!(
            c == '\n'
                || !(c.is_control()
                    || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')),
            "{c:?} in {s:?}"
        );
    }
}

#[test]
fn hostile_text_never_reaches_the_terminal() {
    let cases: &[(&[u8], &str)] = &[
        (
            b"\x1b[2J\x1b[31mred\x1b[0m build",
            "a2a-mod: ⠋ fake red build 0:01\n",
        ),
        (
            b"\x1b]8;;https://evil.example\x07click\x1b]8;;\x07 me",
            "a2a-mod: ⠋ fake click me 0:01\n",
        ),
        (b"\x1b]0;pwned title\x1b\\ok", "a2a-mod: ⠋ fake ok 0:01\n"),
        (
            b"bell\x07\x07 and \x08back",
            "a2a-mod: ⠋ fake bell and back 0:01\n",
        ),
        (
            "c1 \u{9b}31m csi \u{9d}0;t\u{9c}end".as_bytes(),
            "a2a-mod: ⠋ fake c1 csi end 0:01\n",
        ),
        (
            "\u{202e}txt.exe\u{202c} \u{2067}rtl\u{2069}".as_bytes(),
            "a2a-mod: ⠋ fake txt.exe rtl 0:01\n",
        ),
        (
            b"bad \xff\xfe utf8 \xc3",
            "a2a-mod: ⠋ fake bad \u{fffd}\u{fffd} utf8 \u{fffd} 0:01\n",
        ),
    ];
    for (message, want) in cases {
        let h = TempHome::new();
        seed_raw(&h, message, None);
        let out = h.run(NOW);
        assert_clean(&out.stdout);
        assert_eq!(&out.text(), want, "{message:?}");
    }
}

#[test]
fn hostile_questions_too() {
    let h = TempHome::new();
    seed_raw(
        &h,
        b"ask",
        Some("\x1b]52;c;ZXZpbA==\x07Which \u{202e}colour\u{202c}?\x1b[5m".as_bytes()),
    );
    let out = h.run(NOW);
    assert_clean(&out.stdout);
    assert_eq!(out.text(), "a2a-mod: ? fake waiting: Which colour?\n");
}

#[test]
fn ten_kilobyte_lines_are_cut() {
    let h = TempHome::new();
    let long = "word ".repeat(2048);
    seed_raw(&h, long.as_bytes(), None);
    let out = h.run(NOW);
    assert_eq!(
        out.text(),
        format!("a2a-mod: ⠋ fake {}w… 0:01\n", "word ".repeat(6))
    );
    let h = TempHome::new();
    seed_raw(&h, b"ask", Some("?".repeat(10_240).as_bytes()));
    assert_eq!(
        h.run(NOW).text(),
        format!("a2a-mod: ? fake waiting: {}…\n", "?".repeat(47))
    );
}

#[test]
fn cut_at_32_columns_through_a_wide_character() {
    let h = TempHome::new();
    // 'a' + 20 double-width characters = 41 columns; the 16th would straddle column 32.
    let text = format!("a{}", "界".repeat(20));
    seed_raw(&h, text.as_bytes(), None);
    assert_eq!(
        h.run(NOW).text(),
        format!("a2a-mod: ⠋ fake a{}… 0:01\n", "界".repeat(15))
    );
    let h = TempHome::new();
    let text = "🎉".repeat(20);
    seed_raw(&h, text.as_bytes(), None);
    assert_eq!(
        h.run(NOW).text(),
        format!("a2a-mod: ⠋ fake {}… 0:01\n", "🎉".repeat(15))
    );
}

// ---- Themes ----

fn seed_one_running(h: &TempHome) {
    h.store()
        .record_sent(
            &sent("fake", "t1", "slow 20 build", TaskState::Working),
            NOW - 12_000,
        )
        .unwrap();
}

#[test]
fn no_color_and_plain_print_no_escapes() {
    let h = TempHome::new();
    seed_one_running(&h);
    let out = h.run_with(&fixture("idle.json"), NOW, &[("NO_COLOR", "1")], &[]);
    assert_eq!(out.stdout, "a2a-mod: ⠋ fake slow 20 build 0:12\n");
    h.config("[statusline]\ntheme = \"powerline\"\n");
    let out = h.run_with(&fixture("idle.json"), NOW, &[("NO_COLOR", "1")], &[]);
    assert_eq!(out.stdout, "a2a-mod: ⠋ fake slow 20 build 0:12\n");
    h.config("[statusline]\ntheme = \"plain\"\n");
    assert_eq!(h.run(NOW).stdout, "a2a-mod: ⠋ fake slow 20 build 0:12\n");
}

#[test]
fn powerline_and_ascii() {
    let h = TempHome::new();
    seed_one_running(&h);
    h.config("[statusline]\ntheme = \"powerline\"\n");
    let text = h.line(NOW);
    assert_eq!(
        text,
        " a2a-mod: \u{e0b0} ⠋ fake slow 20 build 0:12 \u{e0b0}\n"
    );
    let out = h.run_with(&fixture("idle.json"), NOW, &[("A2A_MOD_ASCII", "1")], &[]);
    assert_eq!(out.text(), " a2a-mod:  | fake slow 20 build 0:12 \n");
    h.config("[statusline]\ntheme = \"ascii\"\n");
    assert_eq!(h.line(NOW), "a2a-mod: | fake slow 20 build 0:12\n");
    h.config("");
    let out = h.run_with(
        &fixture("idle.json"),
        NOW + 1_000,
        &[("TERM", "linux")],
        &[],
    );
    assert_eq!(out.text(), "a2a-mod: / fake slow 20 build 0:13\n");
    let h = TempHome::new();
    seed_ended(
        &h.store(),
        "t1",
        TaskState::Completed,
        EndReason::State,
        20,
        0,
    );
    let out = h.run_with(&fixture("idle.json"), NOW, &[("A2A_MOD_ASCII", "1")], &[]);
    assert_eq!(out.text(), "a2a-mod: + fake done 0:20\n");
    assert!(out.text().is_ascii());
}

#[test]
fn a_bad_theme_falls_back_to_default_with_one_warning() {
    let h = TempHome::new();
    seed_one_running(&h);
    let default = h.run(NOW).stdout;
    std::fs::create_dir(h.a2a_home().join("themes")).unwrap();
    std::fs::write(
        h.a2a_home().join("themes/mine.toml"),
        "[style]\nlabel = { fg = \"mauve\" }\n",
    )
    .unwrap();
    for theme in ["nonesuch", "mine", "../../etc/passwd"] {
        h.config(&format!("[statusline]\ntheme = {theme:?}\n"));
        assert_eq!(h.run(NOW).stdout, default, "{theme}");
        let log = h.a2a_home().join("state/a2a-mod.log");
        let _ = std::fs::remove_file(&log);
        let out = h.run_with(&fixture("idle.json"), NOW, &[("A2A_MOD_LOG", "warn")], &[]);
        assert_eq!(out.stdout, default);
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("WARN") && text.contains("default"), "{text}");
    }
    // Logging off: nothing is written.
    let _ = std::fs::remove_file(h.a2a_home().join("state/a2a-mod.log"));
    h.run(NOW);
    assert!(!h.a2a_home().join("state/a2a-mod.log").exists());
    // A good user theme is used.
    std::fs::write(
        h.a2a_home().join("themes/mine.toml"),
        "[style]\nworker = { fg = \"cyan\" }\n",
    )
    .unwrap();
    h.config("[statusline]\ntheme = \"mine\"\n");
    assert!(h.run(NOW).stdout.contains("\x1b[36mfake\x1b[0m"));
}

#[test]
fn config_with_other_tables_or_bad_values_still_renders() {
    let h = TempHome::new();
    seed_one_running(&h);
    h.config(
        "[workers.fake]\nurl = \"http://127.0.0.1:9\"\nbearer_env = \"T\"\n[timing]\npoll_interval_s = 1\n[statusline]\nanimations = \"maybe\"\nfuture_key = 1\n[someday]\nx = 1\n",
    );
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
    h.config("this is not toml = = =");
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
}

// ---- --then: living with another status line ----

#[test]
fn then_prints_theirs_first_with_the_same_stdin() {
    let h = TempHome::new();
    seed_one_running(&h);
    let dir = h.a2a_home().display().to_string();
    let cmd = format!("cat > '{dir}/seen.json'; printf '\\033[32mtheirs\\033[0m'");
    let out = h.run_with(
        &fixture("idle.json"),
        NOW,
        &[("A2A_MOD_THEN_TIMEOUT_MS", "20000")],
        &["--then", &cmd],
    );
    assert_eq!(
        out.stdout,
        format!("\x1b[32mtheirs\x1b[0m\n{}", h.run(NOW).stdout)
    );
    assert_eq!(
        std::fs::read(format!("{dir}/seen.json")).unwrap(),
        fixture("idle.json")
    );
    // Multi-line output passes through; with nothing of ours, only theirs.
    let h2 = TempHome::new();
    let out = h2.run_with(
        &fixture("idle.json"),
        NOW,
        &[("A2A_MOD_THEN_TIMEOUT_MS", "20000")],
        &["--then", "printf 'one\\ntwo\\n'"],
    );
    assert_eq!(out.stdout, "one\ntwo\n");
}

#[test]
fn then_failing_never_hides_ours() {
    let h = TempHome::new();
    seed_one_running(&h);
    for cmd in [
        "exit 3",
        "echo oops >&2; exit 1",
        "/nonexistent/binary",
        "kill -9 $$",
    ] {
        let out = h.run_with(
            &fixture("idle.json"),
            NOW,
            &[("A2A_MOD_THEN_TIMEOUT_MS", "20000")],
            &["--then", cmd],
        );
        assert_eq!(out.code, Some(0), "{cmd}");
        assert_eq!(out.text(), "a2a-mod: ⠋ fake slow 20 build 0:12\n", "{cmd}");
    }
}

#[test]
fn then_too_slow_is_cut_off() {
    let h = TempHome::new();
    seed_one_running(&h);
    let marker = h.a2a_home().join("late");
    // Prints one line at once, then hangs; the late part and its children are killed.
    let cmd = format!(
        "printf 'early\\n'; printf 'partial'; sleep 30; touch '{}'",
        marker.display()
    );
    let ours = "a2a-mod: ⠋ fake slow 20 build 0:12\n";
    // Default deadline (300 ms) well under Claude Code's one-second interval. Whether `sh` got to
    // print in time depends on the machine's load, so only our line is checked here.
    let t = Instant::now();
    let out = h.run_with(&fixture("idle.json"), NOW, &[], &["--then", &cmd]);
    let took = t.elapsed();
    assert_eq!(out.code, Some(0));
    assert!(out.text().ends_with(ours), "{:?}", out.text());
    assert!(!out.text().contains("partial"), "{:?}", out.text());
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(took >= Duration::from_millis(290), "{took:?}");
    // With a deadline long enough for any machine: the whole lines printed before it are kept.
    let t = Instant::now();
    let env = [("A2A_MOD_THEN_TIMEOUT_MS", "2000")];
    let out = h.run_with(&fixture("idle.json"), NOW, &env, &["--then", &cmd]);
    assert!(
        t.elapsed() >= Duration::from_millis(1990),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(out.text(), format!("early\n{ours}"));
    assert!(!marker.exists());
}

#[test]
fn then_reading_no_stdin_is_fine() {
    let h = TempHome::new();
    seed_one_running(&h);
    // A command that never reads stdin must not block on a full pipe.
    let big: Vec<u8> = [fixture("idle.json"), vec![b' '; 500_000]].concat();
    let out = h.run_with(
        &big,
        NOW,
        &[("A2A_MOD_THEN_TIMEOUT_MS", "20000")],
        &["--then", "echo x"],
    );
    assert_eq!(out.text(), "x\na2a-mod: ⠋ fake slow 20 build 0:12\n");
}

// ---- The status snapshot: what the line reads instead of SQLite ----

fn db(h: &TempHome) -> std::path::PathBuf {
    session::db_path(&h.ctx(), SID)
}

/// The snapshot on disk, which must be fresh and equal to what the whole store summarizes to.
fn assert_snapshot_follows(h: &TempHome) -> a2a_mod::testing::status::Snapshot {
    let snap = match snapshot::load(&db(h)) {
        Loaded::Fresh(s) => s,
        other => panic!("snapshot not fresh after a write: {other:?}"),
    };
    let all = Reader::open(&db(h)).unwrap().unwrap().all().unwrap();
    let rows: Vec<_> = all
        .iter()
        .map(a2a_mod::testing::TaskRecord::status_row)
        .collect();
    assert_eq!(snap, status::summarize(&rows));
    snap
}

/// Rewrites the snapshot's content in place, keeping its stamp (the store is untouched, so it
/// stays fresh): what the line then shows came from the snapshot, not from SQLite.
fn doctor_snapshot(h: &TempHome, from: &str, to: &str) {
    let p = snapshot::path_for(&db(h));
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&p, text.replace(from, to)).unwrap();
}

/// Every kind of write re-publishes, with a writer that stays open (as the poller and the MCP
/// server do) and with writers that open, write and close (hooks, user commands).
#[test]
fn the_snapshot_follows_every_kind_of_write() {
    let h = TempHome::new();
    let s = h.store();
    // Send recorded.
    s.record_sent(
        &sent("fake", "t1", "slow 20 build", TaskState::Working),
        NOW - 12_000,
    )
    .unwrap();
    assert_eq!(assert_snapshot_follows(&h).running, 1);
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
    // Poll update that changes nothing shown, and a put-off poll.
    let working = PollUpdate {
        end: None,
        next_poll_ms: Some(NOW + 5_000),
        held_until_ms: None,
        ..end(TaskState::Working, EndReason::State)
    };
    assert!(
        s.apply_poll(
            &a2a_mod::testing::TaskKey::new("fake", "t1"),
            &working,
            false,
            NOW - 1
        )
        .unwrap()
    );
    let put_off = Event::HandedOver {
        next_poll_ms: NOW + 9_000,
        held_until_ms: None,
        lease_until_ms: None,
    };
    s.transition(&TaskKey::new("fake", "t1"), put_off, NOW)
        .unwrap();
    assert_snapshot_follows(&h);
    // A second send from a writer that opens and closes.
    h.store()
        .record_sent(&ask("adk", "t2", "Which colour?"), NOW - 5_000)
        .unwrap();
    assert_snapshot_follows(&h);
    assert_eq!(
        h.line(NOW),
        "a2a-mod: ⠋ fake slow 20 build 0:12 · 1 waiting\n"
    );
    // Task ended by a poll.
    assert!(
        s.apply_poll(
            &a2a_mod::testing::TaskKey::new("fake", "t1"),
            &end(TaskState::Completed, EndReason::State),
            false,
            NOW
        )
        .unwrap()
    );
    assert_snapshot_follows(&h);
    assert_eq!(h.line(NOW), "a2a-mod: ✓ fake done 0:12 · 1 waiting\n");
    // Claimed and announced, delivered, told: the line does not change, the snapshot stays fresh.
    assert_eq!(s.claim_unannounced(NOW + 1).unwrap().len(), 2);
    assert_eq!(s.take_undelivered(NOW + 2).unwrap().len(), 2);
    s.mark_told([&TaskKey::new("fake", "t1")], NOW + 3).unwrap();
    s.meta_set("k", "v").unwrap();
    assert_snapshot_follows(&h);
    assert_eq!(
        h.line(NOW + 4_000),
        "a2a-mod: ✓ fake done 0:12 · 1 waiting\n"
    );
    // Seen by the task tool: the waiting task answered and working again.
    let seen = a2a_mod::testing::task::Seen {
        task_id: "t2",
        state: TaskState::Working,
        text: None,
        text_chars: None,
        question: None,
    };
    s.record_seen("adk", seen, NOW + 5_000, NOW + 5_000)
        .unwrap();
    assert_snapshot_follows(&h);
    assert_eq!(h.line(NOW + 6_000), "a2a-mod: ⠦ adk ask 0:11\n");
    // Worker removed.
    assert_eq!(h.store().end_removed("adk", NOW + 7_000).unwrap(), 1);
    assert_snapshot_follows(&h);
    assert_eq!(h.line(NOW + 8_000), "a2a-mod: ⊘ adk no longer tracked\n");
    // Every writer closed: the snapshot is still fresh (stores do not checkpoint on close).
    drop(s);
    assert_snapshot_follows(&h);
    assert_eq!(h.line(NOW + 12_000), "a2a-mod: ⊘ adk no longer tracked\n");
    assert_eq!(h.line(NOW + 12_001), "");
}

/// The line reads the snapshot alone while it is fresh (no SQLite), and leaves it the moment the
/// store changes behind its back.
#[test]
fn a_fresh_snapshot_is_all_the_line_reads_and_a_stale_one_is_ignored() {
    let h = TempHome::new();
    seed_one_running(&h);
    doctor_snapshot(&h, "\"fake\"", "\"snap\"");
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ snap slow 20 build 0:12\n");
    // A commit nobody published: a writer killed between COMMIT and publishing, an older a2a-mod,
    // or another tool. The stamp no longer matches, so the line asks SQLite.
    let conn = rusqlite::Connection::open(db(&h)).unwrap();
    conn.execute("UPDATE tasks SET message = 'edited'", [])
        .unwrap();
    assert_eq!(snapshot::load(&db(&h)), Loaded::Stale);
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake edited 0:12\n");
    drop(conn);
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake edited 0:12\n");
    // The next writer to open the store brings the snapshot up to date.
    drop(h.store());
    assert_snapshot_follows(&h);
    doctor_snapshot(&h, "\"edited\"", "\"from the snapshot\"");
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake from the snapshot 0:12\n");
    // A snapshot that does not parse is stale too, never an empty line.
    std::fs::write(snapshot::path_for(&db(&h)), "{ not json").unwrap();
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake edited 0:12\n");
}

/// Stores written before snapshots existed have none: the line falls back to SQLite, and the
/// first writer to open the store publishes one.
#[test]
fn a_store_from_before_snapshots_still_shows() {
    let h = TempHome::new();
    seed_one_running(&h);
    std::fs::remove_file(snapshot::path_for(&db(&h))).unwrap();
    assert_eq!(snapshot::load(&db(&h)), Loaded::Missing);
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
    // The status line never writes: still no snapshot.
    assert_eq!(snapshot::load(&db(&h)), Loaded::Missing);
    drop(h.store());
    assert_snapshot_follows(&h);
    assert_eq!(h.line(NOW), "a2a-mod: ⠋ fake slow 20 build 0:12\n");
}

/// After `/clear` the line resolves the link and reads the old session's snapshot.
#[test]
fn the_clear_link_leads_to_the_old_sessions_snapshot() {
    let h = TempHome::new();
    seed_one_running(&h);
    let new = "d890abd3-1c2b-4e5f-8a9b-0c1d2e3f4a5b";
    session::link(&h.ctx(), new, SID).unwrap();
    doctor_snapshot(&h, "\"fake\"", "\"snap\"");
    let out = h.run_with(&fixture("after_clear.json"), NOW, &[], &[]);
    assert_eq!(out.text(), "a2a-mod: ⠋ snap slow 20 build 0:12\n");
    assert!(!snapshot::path_for(&session::db_path(&h.ctx(), new)).exists());
}

/// One snapshot, written once, draws the right line every second: the spinner, the clock and the
/// done window come from `now`.
#[test]
fn a_snapshot_written_once_is_right_every_second() {
    let h = TempHome::new();
    seed_ended(
        &h.store(),
        "t1",
        TaskState::Completed,
        EndReason::State,
        20,
        0,
    );
    let written = std::fs::read(snapshot::path_for(&db(&h))).unwrap();
    for dt in [0, 1_000, 5_000] {
        assert_eq!(h.line(NOW + dt), "a2a-mod: ✓ fake done 0:20\n");
    }
    assert_eq!(h.line(NOW + 5_001), "");
    assert_eq!(std::fs::read(snapshot::path_for(&db(&h))).unwrap(), written);
}
