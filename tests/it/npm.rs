//! Installed the way Claude Code users install things.
//! - npm: the tarballs `scripts/package-npm` writes for this platform, `npm install -g`'d into a
//!   fresh prefix with no network (the tarballs only) on a fresh HOME. The launcher runs the native
//!   binary; `a2a-mod install` writes that binary's own path (never the Node launcher) into Claude
//!   Code's settings; `doctor` is all ✓; the demo runs; `--uninstall` leaves the settings as they
//!   were.
//! - The plugin from a marketplace (a clone of the repository's plugin files), in the real Claude
//!   Code: without a binary the session shows the one-line install and nothing fails; with one,
//!   the tools, the hooks, the monitor and (after `a2a-mod install`) the status line.
//! - The release workflow that builds the packages validates against GitHub's workflow schema.

use crate::fake::model_api::{FakeModelApi, Rule, Script};
use crate::install::{Cli, claude_cli, run_ok, users_own};
use crate::peers::claude::{ClaudeOpts, ClaudeSession, missing_tools};
use crate::util::{TempHome, TestCommand, bin, skip, wait_until, which};
use crate::workers::{Kind, Peer, peers_dir, repo};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// An npm prefix with a2a-mod installed from this build's tarballs, offline.
pub struct NpmInstall {
    pub dir: tempfile::TempDir,
}

impl NpmInstall {
    /// Packs this build and installs it; `None` (with a line saying why) without node and npm.
    pub fn new() -> Option<NpmInstall> {
        if which("npm").is_none() || which("node").is_none() {
            skip("the npm install: node and npm are not on PATH");
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("a2a-mod-npm-")
            .tempdir()
            .unwrap();
        let out = dir.path().join("tarballs");
        let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
        let packed = TestCommand::program(repo.join("scripts/package-npm"))
            .arg(&out)
            .env("A2A_MOD_BIN", bin())
            .ok();
        let tarballs: Vec<&str> = packed.lines().collect();
        assert_eq!(tarballs.len(), 2, "{packed}");
        // No network: npm may read only the tarballs (--offline, a cache of its own, and a
        // registry nobody listens on, on loopback).
        TestCommand::program("npm")
            .args(["install", "-g", "--offline", "--no-audit", "--no-fund"])
            .arg("--prefix")
            .arg(dir.path().join("prefix"))
            .arg("--cache")
            .arg(dir.path().join("cache"))
            .args(&tarballs)
            .env("npm_config_registry", "http://127.0.0.1:1/")
            .env("HOME", dir.path())
            .ok();
        Some(NpmInstall { dir })
    }

    /// The `a2a-mod` command npm put on PATH (the Node launcher).
    pub fn command_path(&self) -> PathBuf {
        self.dir.path().join("prefix/bin/a2a-mod")
    }

    /// The native binary npm installed (the platform package's).
    pub fn native(&self) -> PathBuf {
        let target = format!("{}-{}", node_platform(), node_arch());
        self.dir.path().join(format!(
            "prefix/lib/node_modules/a2a-mod-{target}/bin/a2a-mod"
        ))
    }

    /// `a2a-mod <args>` through npm's command, as a user on a fresh machine runs it: only HOME
    /// set (no A2A_MOD_HOME), npm's bin folder and the real `claude` first on PATH.
    pub fn run(&self, home: &Path, args: &[&str]) -> TestCommand {
        let mut dirs = vec![self.dir.path().join("prefix/bin")];
        dirs.extend(which("claude").and_then(|c| c.parent().map(Path::to_path_buf)));
        dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
        let mut cmd = TestCommand::program(self.command_path());
        cmd.args(args)
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .env("HOME", home)
            .env("DISABLE_AUTOUPDATER", "1")
            .env_remove("A2A_MOD_HOME")
            .env_remove("A2A_MOD_BIN")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("XDG_DATA_HOME")
            .current_dir(home);
        cmd
    }
}

fn node_platform() -> &'static str {
    match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        os => os,
    }
}

fn node_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        arch => arch,
    }
}

fn settings(home: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(home.join(".claude/settings.json")).unwrap()).unwrap()
}

#[test]
fn npm_install_g_then_install_points_claude_code_at_the_native_binary() {
    if let Some(why) = missing_tools() {
        return skip(&format!("the npm install with the real Claude Code: {why}"));
    }
    let Some(npm) = NpmInstall::new() else {
        return;
    };
    let Some(worker) = Peer::start(Kind::Fake, &[]) else {
        return;
    };
    let home = tempfile::Builder::new()
        .prefix("a2a-mod-npm-home-")
        .tempdir()
        .unwrap();
    let home = home.path();
    let native = npm.native().canonicalize().unwrap();
    assert!(native.is_file(), "{}", native.display());

    let version = npm.run(home, &["--version"]).ok();
    assert_eq!(
        version.trim(),
        format!("a2a-mod {}", env!("CARGO_PKG_VERSION"))
    );
    // The user's own settings, kept through install and given back by uninstall.
    let own = users_own();
    let file = home.join(".claude/settings.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let before = serde_json::to_string_pretty(&own).unwrap();
    std::fs::write(&file, &before).unwrap();

    npm.run(home, &["worker", "add", "fake", &worker.url]).ok();
    npm.run(home, &["install"]).ok();
    let s = settings(home);
    let native = native.to_str().unwrap();
    let line = s["statusLine"]["command"].as_str().unwrap();
    assert!(
        line.starts_with(&format!("{native} statusline")),
        "the status line runs the native binary, not Node: {line}"
    );
    assert_eq!(s["env"]["A2A_MOD_BIN"], native, "{s}");
    let text = s.to_string();
    assert!(
        !text.contains("a2a-mod.js") && !text.contains("node_modules/a2a-mod/"),
        "nothing in the settings names the launcher: {text}"
    );

    let doctor = npm.run(home, &["doctor"]).ok();
    assert!(!doctor.contains('✕'), "{doctor}");
    assert!(doctor.contains("All checks passed."), "{doctor}");
    assert!(doctor.contains("✓ plugin runs a2a-mod "), "{doctor}");

    // The demo, through npm's command, to its end.
    let mut demo = npm.run(home, &["demo"]).spawn();
    let start = Instant::now();
    let status = loop {
        if let Some(s) = demo.try_wait().unwrap() {
            break s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the demo did not end within 120 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "the demo failed: {status}");

    npm.run(home, &["install", "--uninstall"]).ok();
    let after: Value = settings(home);
    assert_eq!(after, own, "uninstall gives the settings back");
}

/// `.github/workflows/release.yml` is a workflow GitHub takes: it validates against the schema
/// check-jsonschema vendors (`tests/peers/setup.sh` installs it, pinned, in venv-tools).
#[test]
fn the_release_workflow_validates_against_githubs_schema() {
    let check = peers_dir().join("venv-tools/bin/check-jsonschema");
    if !check.exists() {
        return skip(&format!(
            "the release workflow's schema check: {} missing — run tests/peers/setup.sh",
            check.display()
        ));
    }
    let workflow = repo().join(".github/workflows/release.yml");
    let out = TestCommand::program(&check)
        .args(["--builtin-schema", "vendor.github-workflows"])
        .arg(&workflow)
        .ok();
    assert!(out.contains("ok -- validation done"), "{out}");
    // The check fails on a workflow GitHub would refuse (so the test above can fail).
    let broken = tempfile::NamedTempFile::new().unwrap();
    let text = std::fs::read_to_string(&workflow).unwrap();
    std::fs::write(broken.path(), text.replace("runs-on:", "runs_on:")).unwrap();
    let refused = TestCommand::program(&check)
        .args(["--builtin-schema", "vendor.github-workflows"])
        .arg(broken.path())
        .output();
    assert!(
        !refused.status.success(),
        "a broken workflow passed the check"
    );
}

/// The plugin files of the repository (what a clone of it holds for Claude Code), in `dir`, as
/// a git repository.
fn plugin_clone(dir: &Path) {
    for f in [
        ".claude-plugin/plugin.json",
        ".claude-plugin/marketplace.json",
        ".mcp.json",
        "hooks/hooks.json",
        "monitors/monitors.json",
        "bin/a2a-mod-launch",
    ] {
        let to = dir.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(repo().join(f), &to).unwrap();
    }
    for args in [
        &["init", "-q"][..],
        &["add", "."],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "plugin",
        ],
    ] {
        TestCommand::program("git").args(args).current_dir(dir).ok();
    }
}

fn cmdline(pid: &u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .unwrap_or_default()
}

/// `/plugin marketplace add` of a clone and `/plugin install`: with no a2a-mod anywhere, the
/// session shows the one-line install (the SessionStart hook's message) and nothing fails (no
/// failed hook or MCP server); after `a2a-mod install` (which keeps the user's marketplace and
/// adds the status line) the next session has the status line, the hooks' MCP server and monitor,
/// and the five tools.
#[test]
fn the_plugin_from_a_marketplace_clone_says_how_to_install_then_works() {
    if let Some(why) = missing_tools() {
        return skip(&format!("the plugin from a marketplace: {why}"));
    }
    let home = TempHome::new();
    let clone = home.root().join("a2a-mod-clone");
    plugin_clone(&clone);
    let clone_s = clone.to_str().unwrap();
    claude_cli(&home)
        .args(["plugin", "marketplace", "add", clone_s])
        .ok();
    claude_cli(&home)
        .args(["plugin", "install", "a2a-mod@a2a-mod"])
        .ok();
    let settings_file = home.home().join(".claude/settings.json");
    let read =
        || -> Value { serde_json::from_slice(&std::fs::read(&settings_file).unwrap()).unwrap() };
    std::fs::write(
        &settings_file,
        serde_json::to_string_pretty(&{
            let mut s = read();
            s["statusLine"] =
                serde_json::json!({"type": "command", "command": "printf 'USER-SL\\n'"});
            s
        })
        .unwrap(),
    )
    .unwrap();

    let model = FakeModelApi::start(
        Script::new()
            .rule(Rule::on_user_text("HELLO").text("HI-FROM-FAKE-MODEL"))
            .fallback_text("OK"),
    );
    let long = Duration::from_secs(40);
    // No binary: not on PATH, not recorded, no checkout around the plugin's cached copy.
    let Some(claude) = ClaudeSession::start(ClaudeOpts::new(&model).home(home)) else {
        return;
    };
    claude.wait_ready(long);
    let shown = claude.wait_for_text("npm i -g a2a-mod && a2a-mod install", long);
    assert!(shown.contains("a2a-mod is not installed"), "{shown}");
    // The MCP server connected (with no tools): its instructions reach the model. It connects
    // in the background; ask until a request has them.
    let mut connected = false;
    for i in 0..5 {
        let prompt = format!("HELLO {i}");
        claude.send_keys(&prompt);
        let r = model.wait_for_request("a HELLO turn", long, |r| {
            r.is_main_loop() && r.last_user_text().contains(&prompt)
        });
        claude.wait_for_text("HI-FROM-FAKE-MODEL", long);
        if r.body
            .to_string()
            .contains("a2a-mod is not installed: npm i -g a2a-mod")
        {
            let ours = r.deferred_tools();
            assert!(
                !ours.iter().any(|t| t.starts_with("mcp__plugin_a2a-mod")),
                "{ours:?}"
            );
            connected = true;
            break;
        }
    }
    assert!(connected, "the plugin's MCP server never connected");
    let pane = claude.pane_history();
    // A failed MCP server or hook says so on the screen ("1 MCP server failed", "hook error").
    for bad in ["failed", "hook error"] {
        assert!(!pane.contains(bad), "{bad:?} on the screen:\n{pane}");
    }
    let home = claude.into_home();

    // The binary installed: `a2a-mod install` keeps the marketplace the user added.
    let report = run_ok(&home, Cli::Real, &["install"]);
    assert!(report.contains("kept: yours, directory"), "{report}");
    let s = read();
    assert_eq!(
        s["extraKnownMarketplaces"]["a2a-mod"]["source"]["path"], clone_s,
        "{s}"
    );
    let Some(mut claude) = ClaudeSession::start(ClaudeOpts::new(&model).home(home)) else {
        return;
    };
    claude.wait_ready(long);
    // Our status line runs (the user's through --then), the plugin's MCP server and monitor too.
    claude.wait_for_text("USER-SL", long);
    wait_until("the plugin's MCP server and monitor to start", long, || {
        let all: Vec<String> = claude.processes().iter().map(cmdline).collect();
        all.iter().any(|c| c.contains("a2a-mod mcp"))
            && all.iter().any(|c| c.contains("a2a-mod watch"))
    });
    let mut listed = false;
    for i in 5..10 {
        let prompt = format!("HELLO {i}");
        claude.send_keys(&prompt);
        let r = model.wait_for_request("a HELLO turn", long, |r| {
            r.is_main_loop() && r.last_user_text().contains(&prompt)
        });
        let tools = r.deferred_tools();
        let five = ["send", "task", "cancel", "tasks", "workers"]
            .iter()
            .all(|n| tools.contains(&format!("mcp__plugin_a2a-mod_a2a__{n}")));
        if five {
            listed = true;
            break;
        }
    }
    assert!(listed, "the plugin's five tools never reached the model");
    claude.kill();
}
