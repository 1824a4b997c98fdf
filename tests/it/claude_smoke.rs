//! End-to-end smoke test of the harness itself: the real Claude Code CLI in tmux against the
//! scripted fake model, with a status line, a built-in tool call and an MCP tool call through a
//! tiny Python stdio server (`tests/fixtures/mcp_echo.py`, standing in for `a2a-mod mcp`).
//! It proves the loop later product tests rely on; it does not test a2a-mod itself.

use crate::fake::model_api::{FakeModelApi, Rule, Script};
use crate::peers::claude::{ClaudeOpts, ClaudeSession};
use crate::util::{skip, wait_until, which};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const MCP_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_echo.py");

/// A status line in plain sh (no jq/python needed): `SL-OK <session_id from stdin>`.
const STATUS_LINE: &str =
    r#"printf 'SL-OK %s\n' "$(sed -n 's/.*"session_id":"\([^"]*\)".*/\1/p')""#;

/// Type a prompt → scripted text reply and status line on screen → scripted Bash call, allowed by
/// `permissions.allow`, whose tool_result reaches the next request → scripted call of an MCP tool
/// (directly by its `mcp__lab__echo` name, no ToolSearch) whose result reaches the next request →
/// `kill` leaves no process behind.
#[test]
fn claude_code_round_trips_text_bash_and_mcp_through_the_fake_model() {
    if which("python3").is_none() {
        return skip("claude smoke test: `python3` (for the MCP fixture) is not on PATH");
    }
    let model = FakeModelApi::start(
        Script::new()
            .rule(Rule::on_user_text("HELLO").text("HI-FROM-FAKE-MODEL"))
            .rule(Rule::on_user_text("RUN-BASH").tool_use(
                "Bash",
                json!({"command": "echo hi", "description": "Say hi"}),
            ))
            .rule(Rule::on_tool_result_for("Bash").text("BASH-DONE"))
            .rule(
                Rule::on_user_text("RUN-MCP")
                    .tool_use("mcp__lab__echo", json!({"text": "ping-123"})),
            )
            .rule(Rule::on_tool_result_for("mcp__lab__echo").text("MCP-DONE")),
    );
    let t_start = Instant::now();
    let mcp_log_dir = tempfile::tempdir().unwrap();
    let mcp_log = mcp_log_dir.path().join("mcp.jsonl");
    let Some(mut claude) = ClaudeSession::start(
        ClaudeOpts::new(&model)
            .settings(json!({
                "statusLine": {"type": "command", "command": STATUS_LINE, "refreshInterval": 1},
                "permissions": {"allow": ["Bash(echo hi)", "mcp__lab__echo"]},
            }))
            .mcp_config(json!({"mcpServers": {"lab": {
                "command": "python3", "args": [MCP_FIXTURE],
                "env": {"MCP_ECHO_LOG": mcp_log.to_str().unwrap()},
            }}})),
    ) else {
        return;
    };
    let long = Duration::from_secs(30);

    claude.wait_ready(long);
    let t_ready = t_start.elapsed();
    let t_typed = Instant::now();
    claude.send_keys("HELLO");
    let first = model.wait_for_request("the HELLO turn", long, |r| {
        r.is_main_loop() && r.last_user_text().contains("HELLO")
    });
    let t_first_request = first.at - t_typed;
    let session = first
        .session_id()
        .expect("X-Claude-Code-Session-Id header")
        .to_owned();
    claude.wait_for_text("HI-FROM-FAKE-MODEL", long);
    claude.wait_for_text(&format!("SL-OK {session}"), long);

    claude.send_keys("RUN-BASH");
    let bash = model.wait_for_request("the Bash tool_result", long, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.tool_name.as_deref() == Some("Bash"))
    });
    let result = &bash.tool_results()[0];
    assert_eq!(
        (result.text.trim(), result.is_error),
        ("hi", false),
        "{result:?}"
    );
    claude.wait_for_text("BASH-DONE", long);

    // The MCP server connects in the background; calling its tool before it is listed would fail.
    wait_until("the MCP fixture to be listed", long, || {
        std::fs::read_to_string(&mcp_log).is_ok_and(|l| l.contains("tools/list"))
    });
    claude.send_keys("RUN-MCP");
    let mcp = model.wait_for_request("the MCP tool_result", long, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.tool_name.as_deref() == Some("mcp__lab__echo"))
    });
    let result = &mcp.tool_results()[0];
    assert_eq!(
        (result.text.as_str(), result.is_error),
        ("ECHO: ping-123", false),
        "{result:?}"
    );
    assert!(
        mcp.deferred_tools().contains(&"mcp__lab__echo".to_owned()),
        "{:?}",
        mcp.deferred_tools()
    );
    let call: Value = std::fs::read_to_string(&mcp_log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|m| m["method"] == "tools/call")
        .expect("tools/call logged by the fixture");
    assert_eq!(
        call["params"]["_meta"]["claudecode/toolUseId"].as_str(),
        Some(result.tool_use_id.as_str())
    );
    claude.wait_for_text("MCP-DONE", long);

    assert!(
        model
            .turns()
            .iter()
            .all(|r| r.session_id() == Some(session.as_str())),
        "one session id throughout"
    );
    let pid = claude.claude_pid().expect("claude is running");
    assert!(claude.processes().contains(&pid));
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    assert!(exe.to_string_lossy().contains("claude"), "{exe:?}");
    let before = claude.processes().len();
    let t_kill = Instant::now();
    claude.kill();
    assert!(claude.processes().is_empty());
    eprintln!(
        "TIMINGS: ready {t_ready:?}; typed→first request {t_first_request:?}; kill {:?} ({before} processes); whole test {:?}",
        t_kill.elapsed(),
        t_start.elapsed()
    );
}

/// A `--plugin-dir` plugin whose monitor (`tail -F` on a trigger file) prints a line: the idle
/// session wakes by itself with a `<task-notification>`, the scripted wake reply is drawn, and
/// `kill` also ends the monitor, which Claude Code runs in its own process group.
#[test]
fn plugin_monitor_line_wakes_idle_claude_and_kill_ends_the_monitor() {
    let model = FakeModelApi::start(
        Script::new()
            .rule(Rule::on_user_text("HELLO").text("HI-FROM-FAKE-MODEL"))
            .rule(Rule::on_contains("<task-notification>").text("WOKEN-BY-MONITOR")),
    );
    let plugin = tempfile::tempdir().unwrap();
    let trigger = plugin.path().join("trigger.txt");
    std::fs::write(&trigger, "").unwrap();
    std::fs::create_dir_all(plugin.path().join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(plugin.path().join("monitors")).unwrap();
    std::fs::write(
        plugin.path().join(".claude-plugin/plugin.json"),
        json!({"name": "harness-lab", "version": "0.1.0", "description": "harness test plugin"})
            .to_string(),
    )
    .unwrap();
    std::fs::write(
        plugin.path().join("monitors/monitors.json"),
        json!([{"name": "lab-events", "description": "Lab events",
                "command": format!("tail -n +1 -F {}", trigger.display())}])
        .to_string(),
    )
    .unwrap();
    let Some(mut claude) = ClaudeSession::start(ClaudeOpts::new(&model).plugin_dir(plugin.path()))
    else {
        return;
    };
    let long = Duration::from_secs(30);
    claude.wait_ready(long);
    claude.send_keys("HELLO");
    claude.wait_for_text("HI-FROM-FAKE-MODEL", long);
    wait_until("the monitor to start", long, || {
        claude.processes().iter().any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).starts_with("tail\0"))
        })
    });

    let t_line = Instant::now();
    std::fs::write(&trigger, "A2A-MON-LINE task t1 completed\n").unwrap();
    let wake = model.wait_for_request("the wake-up request", long, |r| {
        r.is_main_loop() && r.new_text().contains("A2A-MON-LINE task t1 completed")
    });
    assert_eq!(wake.answered_by, r#"on_contains("<task-notification>")"#);
    claude.wait_for_text("WOKEN-BY-MONITOR", long);
    eprintln!(
        "TIMINGS: monitor line → wake request {:?}",
        wake.at - t_line
    );

    claude.kill();
    assert!(claude.processes().is_empty());
}
