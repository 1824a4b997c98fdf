//! `a2a-mod install`: settings.json before/after over a temp HOME, with and without the `claude`
//! CLI on PATH: every entry added to an empty file; the user's status line, hooks and permissions
//! kept; a second run changes nothing; `--uninstall` gives the original back; invalid JSON and
//! `--dry-run` leave the file untouched. The last test starts the real Claude Code in the
//! installed HOME (no `--plugin-dir`) and sees our tools, status line and monitor at work.

use crate::fake::model_api::{FakeModelApi, Rule, Script};
use crate::peers::claude::{ClaudeOpts, ClaudeSession, missing_tools};
use crate::util::{TempHome, TestCommand, bin, fast_timing, ok, skip, wait_until, which};
use crate::workers::{Kind, Peer};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// How `PATH` is set for the child.
#[derive(Clone, Copy, PartialEq)]
pub enum Cli {
    /// `claude` is not on PATH (only `sh` and `dirname`, which the launcher needs).
    Absent,
    /// The real `claude` first on PATH.
    Real,
}

/// A PATH without `claude`: a folder of links to the few tools a2a-mod and its launcher run.
pub fn path_without_claude(home: &TempHome) -> PathBuf {
    let dir = home.root().join("bin-no-claude");
    if !dir.exists() {
        std::fs::create_dir_all(&dir).unwrap();
        for tool in ["sh", "dirname", "printf", "sed"] {
            if let Some(p) = which(tool) {
                std::os::unix::fs::symlink(p, dir.join(tool)).unwrap();
            }
        }
    }
    dir
}

/// `a2a-mod` in `home`, in the temp root, with PATH per `cli`.
pub fn command(home: &TempHome, cli: Cli) -> TestCommand {
    let path = match cli {
        Cli::Absent => path_without_claude(home).into_os_string(),
        Cli::Real => {
            let claude = which("claude").expect("claude on PATH");
            let mut dirs = vec![claude.parent().unwrap().to_path_buf()];
            dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
            std::env::join_paths(dirs).unwrap()
        }
    };
    let mut cmd = home.command();
    cmd.env("PATH", path)
        .env("DISABLE_AUTOUPDATER", "1")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("A2A_MOD_BIN")
        .current_dir(home.root());
    cmd
}

/// Runs `a2a-mod <args>` in `home`, in `cwd` (default: the temp root), with PATH per `cli`.
pub fn run(home: &TempHome, cli: Cli, cwd: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = command(home, cli);
    if let Some(cwd) = cwd {
        cmd.current_dir(cwd);
    }
    cmd.args(args).output()
}

#[track_caller]
pub fn run_ok(home: &TempHome, cli: Cli, args: &[&str]) -> String {
    command(home, cli).args(args).ok()
}

pub fn settings_path(home: &TempHome) -> PathBuf {
    home.home().join(".claude/settings.json")
}

fn write_settings(home: &TempHome, text: &str) {
    let p = settings_path(home);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn read_settings(home: &TempHome) -> Value {
    serde_json::from_slice(&std::fs::read(settings_path(home)).unwrap()).unwrap()
}

/// Compact text keeps key order, so equal strings mean the same keys in the same order.
fn ordered(v: &Value) -> String {
    serde_json::to_string(v).unwrap()
}

fn exe() -> String {
    bin().canonicalize().unwrap().to_str().unwrap().to_owned()
}

/// The user's own settings: a status line, a hook, permissions and unrelated keys.
pub fn users_own() -> Value {
    json!({
        "model": "opus",
        "statusLine": {"type": "command", "command": "printf 'USER-SL\\n'", "padding": 1, "refreshInterval": 5},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo stop"}]}]},
        "permissions": {"allow": ["Bash(ls)"], "deny": ["Bash(rm:*)"]},
        "env": {"FOO": "bar"},
    })
}

#[test]
fn install_into_an_empty_settings_file_adds_every_entry() {
    let home = TempHome::new();
    write_settings(&home, "{}\n");
    let out = run_ok(&home, Cli::Absent, &["install"]);
    for entry in [
        "added      plugin files",
        "added      plugin marketplace",
        "added      plugin enabled: a2a-mod@a2a-mod",
        "added      status line",
        "added      permissions: mcp__plugin_a2a-mod_a2a",
        "added      binary (env A2A_MOD_BIN)",
        "(`claude`) is not on PATH",
    ] {
        assert!(out.contains(entry), "{entry:?} not in:\n{out}");
    }
    let plugin_dir = home.a2a_home().join("plugin");
    let s = read_settings(&home);
    assert_eq!(
        s,
        json!({
            "extraKnownMarketplaces": {"a2a-mod": {"source": {"source": "directory", "path": plugin_dir.to_str().unwrap()}}},
            "enabledPlugins": {"a2a-mod@a2a-mod": true},
            "statusLine": {"type": "command", "command": format!("{} statusline", exe()), "refreshInterval": 1},
            "permissions": {"allow": ["mcp__plugin_a2a-mod_a2a"]},
            "env": {"A2A_MOD_BIN": exe()},
        })
    );
    for f in [
        ".claude-plugin/plugin.json",
        ".claude-plugin/marketplace.json",
        ".mcp.json",
        "hooks/hooks.json",
        "monitors/monitors.json",
    ] {
        assert!(plugin_dir.join(f).is_file(), "{f}");
    }
    // The launcher runs the binary install recorded.
    let v = TestCommand::program(plugin_dir.join("bin/a2a-mod-launch"))
        .arg("--version")
        .env("A2A_MOD_BIN", exe())
        .output();
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("a2a-mod "));
    // The backup holds the file as it was.
    let bak = home.home().join(".claude/settings.json.a2a-mod.bak");
    assert_eq!(std::fs::read_to_string(bak).unwrap(), "{}\n");
}

/// The user's entries survive install, a second install is a no-op that says so per entry, and
/// uninstall gives back the original, key order included.
#[test]
fn install_keeps_the_users_entries_twice_changes_nothing_and_uninstall_restores_them() {
    install_cycle(Cli::Absent);
}

#[test]
fn install_cycle_through_the_real_claude_cli() {
    if let Some(why) = missing_tools() {
        return skip(&format!("install through `claude plugin`: {why}"));
    }
    install_cycle(Cli::Real);
}

fn install_cycle(cli: Cli) {
    let home = TempHome::new();
    let original = users_own();
    write_settings(&home, &serde_json::to_string_pretty(&original).unwrap());

    let out = run_ok(&home, cli, &["install"]);
    assert!(out.contains("updated    status line"), "{out}");
    if cli == Cli::Real {
        assert!(
            out.contains("ran: claude plugin install a2a-mod@a2a-mod --scope user"),
            "{out}"
        );
        let list = claude_plugin_list(&home);
        let ours = list
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == "a2a-mod@a2a-mod")
            .unwrap_or_else(|| panic!("a2a-mod not in `claude plugin list`: {list}"));
        assert_eq!(ours["enabled"], json!(true), "{ours}");
    }
    let s = read_settings(&home);
    assert_eq!(s["model"], original["model"]);
    assert_eq!(s["hooks"], original["hooks"]);
    assert_eq!(s["permissions"]["deny"], original["permissions"]["deny"]);
    assert_eq!(
        s["permissions"]["allow"],
        json!(["Bash(ls)", "mcp__plugin_a2a-mod_a2a"])
    );
    assert_eq!(s["env"], json!({"FOO": "bar", "A2A_MOD_BIN": exe()}));
    assert_eq!(
        s["statusLine"],
        json!({"type": "command",
               "command": format!("{} statusline --then 'printf '\\''USER-SL\\n'\\'''", exe()),
               "padding": 1, "refreshInterval": 1})
    );
    // Our status line runs the user's first.
    let sl = TestCommand::program("sh")
        .arg("-c")
        .arg(s["statusLine"]["command"].as_str().unwrap())
        .envs(home.envs())
        .output();
    assert_eq!(String::from_utf8_lossy(&sl.stdout), "USER-SL\n");
    // The user's keys keep their places.
    let keys: Vec<&String> = s.as_object().unwrap().keys().collect();
    assert_eq!(
        &keys[..5],
        ["model", "statusLine", "hooks", "permissions", "env"]
    );

    let installed = std::fs::read(settings_path(&home)).unwrap();
    let again = run_ok(&home, cli, &["install"]);
    assert_eq!(
        again.matches("  unchanged  ").count(),
        6,
        "every entry unchanged:\n{again}"
    );
    assert!(again.contains("Nothing to change"), "{again}");
    assert!(!again.contains("ran: claude"), "{again}");
    assert_eq!(std::fs::read(settings_path(&home)).unwrap(), installed);

    let out = run_ok(&home, cli, &["install", "--uninstall"]);
    assert!(
        out.contains("removed    status line: restored: printf 'USER-SL\\n'"),
        "{out}"
    );
    assert_eq!(ordered(&read_settings(&home)), ordered(&original));
    if cli == Cli::Real {
        let list = claude_plugin_list(&home);
        assert!(
            !list.to_string().contains("a2a-mod@a2a-mod"),
            "still listed: {list}"
        );
    }
    let again = run_ok(&home, cli, &["install", "--uninstall"]);
    assert!(again.contains("Nothing to remove"), "{again}");
}

/// The real `claude` CLI in `home`, as a user runs it in a shell.
pub fn claude_cli(home: &TempHome) -> TestCommand {
    let mut cmd = TestCommand::program(which("claude").unwrap());
    cmd.env("HOME", home.home())
        .env("DISABLE_AUTOUPDATER", "1")
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("A2A_MOD_BIN")
        .current_dir(home.root());
    cmd
}

fn claude_plugin_list(home: &TempHome) -> Value {
    claude_cli(home).args(["plugin", "list", "--json"]).json()
}

#[test]
fn invalid_json_is_refused_and_left_untouched() {
    let home = TempHome::new();
    let bad = "{ \"model\": \"opus\", }\n";
    write_settings(&home, bad);
    let o = run(&home, Cli::Absent, None, &["install"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("a2a-mod: "), "{err}");
    assert!(err.contains("is not valid JSON"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert_eq!(std::fs::read_to_string(settings_path(&home)).unwrap(), bad);
    assert!(
        !home
            .home()
            .join(".claude/settings.json.a2a-mod.bak")
            .exists()
    );
    assert!(!home.a2a_home().join("plugin").exists());
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing() {
    let home = TempHome::new();
    let text = serde_json::to_string_pretty(&users_own()).unwrap();
    write_settings(&home, &text);
    let out = run_ok(&home, Cli::Absent, &["install", "--dry-run"]);
    assert!(out.contains("would be added plugin enabled"), "{out}");
    assert!(out.contains("Dry run, nothing written"), "{out}");
    assert!(out.contains("+     \"a2a-mod@a2a-mod\": true"), "{out}");
    assert!(
        out.contains("-     \"command\": \"printf 'USER-SL\\\\n'\","),
        "{out}"
    );
    assert_eq!(std::fs::read_to_string(settings_path(&home)).unwrap(), text);
    assert!(!home.a2a_home().join("plugin").exists());
    assert!(
        !home
            .home()
            .join(".claude/settings.json.a2a-mod.bak")
            .exists()
    );
    // Without a settings file, dry run does not create one.
    let empty = TempHome::new();
    run_ok(&empty, Cli::Absent, &["install", "--dry-run"]);
    assert!(!settings_path(&empty).exists());
}

#[test]
fn project_scope_writes_the_projects_settings_only() {
    let home = TempHome::new();
    let project = home.root().join("proj");
    std::fs::create_dir_all(&project).unwrap();
    let o = run(
        &home,
        Cli::Absent,
        Some(&project),
        &["install", "--scope", "project"],
    );
    assert!(o.status.success(), "{o:?}");
    let s: Value =
        serde_json::from_slice(&std::fs::read(project.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(s["enabledPlugins"]["a2a-mod@a2a-mod"], json!(true));
    assert!(!settings_path(&home).exists());
}

/// The newcomer's path with the real Claude Code: `a2a-mod install` into an empty HOME, then a
/// plain `claude` (no `--plugin-dir`, no `--settings`) has our MCP tools (called without a
/// permission prompt), runs our status line (which runs the user's first), and starts our
/// monitor, whose line wakes the idle session when a tracked task ends.
#[test]
fn real_claude_code_uses_what_install_wrote() {
    if let Some(why) = missing_tools() {
        return skip(&format!("install with the real Claude Code: {why}"));
    }
    let Some(worker) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = TempHome::new();
    ok(&home, &["worker", "add", "fake", &worker.url]);
    fast_timing(&home, "[0.5]", 1.0, 6);
    write_settings(
        &home,
        &json!({"statusLine": {"type": "command", "command": "printf 'USER-SL\\n'"}}).to_string(),
    );
    run_ok(&home, Cli::Real, &["install"]);
    let list = claude_plugin_list(&home);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == "a2a-mod@a2a-mod" && p["enabled"] == true),
        "{list}"
    );

    const SEND: &str = "mcp__plugin_a2a-mod_a2a__send";
    let model = FakeModelApi::start(
        Script::new()
            .rule(Rule::on_user_text("HELLO").text("HI-FROM-FAKE-MODEL"))
            .rule(Rule::on_user_text("SEND-SLOW").tool_use(
                SEND,
                json!({"worker": "fake", "message": "slow 3 build the index"}),
            ))
            .rule(Rule::on_tool_result_for(SEND).text("SENT-AND-TRACKED"))
            .rule(Rule::on_contains("<task-notification>").text("WOKEN-BY-A2A")),
    );
    let Some(mut claude) = ClaudeSession::start(ClaudeOpts::new(&model).home(home)) else {
        return;
    };
    let long = Duration::from_secs(40);
    claude.wait_ready(long);
    let cmdline = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default()
    };
    let running = |what: &str| claude.processes().iter().any(|p| cmdline(p).contains(what));
    wait_until("the plugin's MCP server and monitor to start", long, || {
        running("a2a-mod mcp") && running("a2a-mod watch")
    });
    // The user's status line, run by ours through --then.
    claude.wait_for_text("USER-SL", long);

    // The MCP server connects in the background; ask until a request lists our tools.
    let mut listed = false;
    for i in 0..5 {
        let prompt = format!("HELLO {i}");
        claude.send_keys(&prompt);
        let r = model.wait_for_request("a HELLO turn", long, |r| {
            r.is_main_loop() && r.last_user_text().contains(&prompt)
        });
        claude.wait_for_text("HI-FROM-FAKE-MODEL", long);
        if r.deferred_tools().iter().any(|t| t == SEND) {
            listed = true;
            break;
        }
    }
    assert!(listed, "our tools never reached the model");

    claude.send_keys("SEND-SLOW");
    let result = model.wait_for_request("the send tool_result", long, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.tool_name.as_deref() == Some(SEND))
    });
    let tr = result
        .tool_results()
        .into_iter()
        .find(|t| t.tool_name.as_deref() == Some(SEND))
        .unwrap();
    assert!(!tr.is_error, "{tr:?}");
    claude.wait_for_text("SENT-AND-TRACKED", long);
    // Our own status line (running, then done for 5 s), and the wake-up when the task ends.
    claude.wait_for_text("a2a-mod: ", long);
    let wake = model.wait_for_request("the monitor's wake-up", long, |r| {
        r.is_main_loop() && r.new_text().contains("a2a: fake task")
    });
    assert!(wake.new_text().contains("completed"), "{}", wake.new_text());
    claude.wait_for_text("WOKEN-BY-A2A", long);
    claude.kill();
}

/// Without `claude` on PATH at install time, the settings keys alone make a session load the
/// plugin: its MCP server and its monitor start (`claude plugin list` does not list it, as its
/// install records were never written; sessions do not need them).
#[test]
fn settings_keys_alone_load_the_plugin_in_a_real_session() {
    if let Some(why) = missing_tools() {
        return skip(&format!("install without the CLI, real session: {why}"));
    }
    let home = TempHome::new();
    run_ok(&home, Cli::Absent, &["install"]);
    let model = FakeModelApi::start(Script::new().fallback_text("OK"));
    let Some(mut claude) = ClaudeSession::start(ClaudeOpts::new(&model).home(home)) else {
        return;
    };
    let long = Duration::from_secs(40);
    claude.wait_ready(long);
    let cmdline = |pid: &u32| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default()
    };
    wait_until("the plugin's MCP server and monitor to start", long, || {
        let all: Vec<String> = claude.processes().iter().map(cmdline).collect();
        all.iter().any(|c| c.contains("a2a-mod mcp"))
            && all.iter().any(|c| c.contains("a2a-mod watch"))
    });
    claude.kill();
}
