//! Installed the way Claude Code users install things.
//! - npm: the tarballs `scripts/package-npm` writes for this platform, served by a registry of the
//!   tests' own on loopback (nothing else reachable), `npm install -g a2a-mod`'d into a fresh
//!   prefix on a fresh HOME. The launcher runs the native binary; `a2a-mod install` writes that
//!   binary's own path (never the Node launcher) into Claude Code's settings; `doctor` is all ✓;
//!   the demo runs; `--uninstall` leaves the settings as they were.
//! - The plugin from a marketplace (a clone of the repository's, which names the npm package), in
//!   the real Claude Code: `/plugin install` brings the binary in the same step, and the session
//!   has the tools, the hooks, the monitor and (after `! a2a-mod install`) the status line; without
//!   a binary for the platform the session shows the one-line install and nothing fails.
//! - The release workflow that builds the packages validates against GitHub's workflow schema.

use crate::fake::model_api::{FakeModelApi, Rule, Script};
use crate::fake::npm_registry::NpmRegistry;
use crate::install::{Cli, claude_cli, path_without_claude, run_ok, users_own};
use crate::peers::claude::{ClaudeOpts, ClaudeSession, missing_tools};
use crate::util::{TempHome, TestCommand, bin, skip, wait_until, which};
use crate::workers::{Kind, Peer, peers_dir, repo};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The npm tarballs `scripts/package-npm` writes for this build and platform, in `out`: the
/// `a2a-mod` package (the Node launcher, and the plugin) and the platform's binary package.
pub struct Packed {
    pub main: PathBuf,
    pub platform: PathBuf,
}

impl Packed {
    /// `None` (with a line saying why) without node and npm.
    pub fn new(out: &Path) -> Option<Packed> {
        if which("npm").is_none() || which("node").is_none() {
            skip("the npm packages: node and npm are not on PATH");
            return None;
        }
        let packed = TestCommand::program(repo().join("scripts/package-npm"))
            .arg(out)
            .env("A2A_MOD_BIN", bin())
            .ok();
        let [main, platform] = &packed.lines().map(PathBuf::from).collect::<Vec<_>>()[..] else {
            panic!("package-npm wrote other than two tarballs: {packed}");
        };
        Some(Packed {
            main: main.clone(),
            platform: platform.clone(),
        })
    }
}

/// An npm prefix with a2a-mod installed from this build's tarballs, as `npm i -g a2a-mod` installs
/// it: from a registry (ours, on loopback, serving only those tarballs), the platform's binary
/// coming with the launcher as the optional dependency its npm-shrinkwrap.json pins.
pub struct NpmInstall {
    pub dir: tempfile::TempDir,
}

impl NpmInstall {
    /// Packs this build and installs it; `None` (with a line saying why) without node and npm.
    pub fn new() -> Option<NpmInstall> {
        let dir = tempfile::Builder::new()
            .prefix("a2a-mod-npm-")
            .tempdir()
            .unwrap();
        let packed = Packed::new(&dir.path().join("tarballs"))?;
        let registry = NpmRegistry::start(&[&packed.main, &packed.platform]);
        registry.write_npmrc(dir.path(), &dir.path().join("cache"));
        TestCommand::program("npm")
            .args(["install", "-g", "a2a-mod"])
            .arg("--prefix")
            .arg(dir.path().join("prefix"))
            .env("HOME", dir.path())
            .ok();
        let tarball = format!(
            "/{0}/-/{0}-{1}.tgz",
            platform_package(),
            env!("CARGO_PKG_VERSION")
        );
        assert!(
            registry.asked().contains(&tarball),
            "{:?}",
            registry.asked()
        );
        Some(NpmInstall { dir })
    }

    /// The `a2a-mod` command npm put on PATH (the Node launcher).
    pub fn command_path(&self) -> PathBuf {
        self.dir.path().join("prefix/bin/a2a-mod")
    }

    /// The native binary npm installed (the platform package's, inside the launcher's).
    pub fn native(&self) -> PathBuf {
        self.dir.path().join(format!(
            "prefix/lib/node_modules/a2a-mod/node_modules/{}/bin/a2a-mod",
            platform_package()
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

/// This platform's binary package, as npm names it: `a2a-mod-<process.platform>-<process.arch>`.
fn platform_package() -> String {
    format!("a2a-mod-{}-{}", node_platform(), node_arch())
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
        !text.contains("node_modules/a2a-mod/bin"),
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

/// The repository's marketplace (what a clone of it holds for Claude Code), in `dir`, as a git
/// repository.
fn marketplace_clone(dir: &Path) {
    let file = ".claude-plugin/marketplace.json";
    std::fs::create_dir_all(dir.join(".claude-plugin")).unwrap();
    std::fs::copy(repo().join(file), dir.join(file)).unwrap();
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
            "marketplace",
        ],
    ] {
        TestCommand::program("git").args(args).current_dir(dir).ok();
    }
}

/// The plugin installed from a marketplace as a user does it, and what a session with it needs.
struct Installed {
    home: TempHome,
    /// The clone of the repository's marketplace the user added.
    clone: PathBuf,
    /// The fake Messages API: "HELLO …" is answered "HI-FROM-FAKE-MODEL".
    model: FakeModelApi,
    _registry: NpmRegistry,
    _tarballs: tempfile::TempDir,
}

/// This build's packages on a registry of the tests' own (with this platform's binary package
/// or without it, as for a platform nobody built); a fresh HOME whose npm runs go there; a clone
/// of the repository's marketplace added and the plugin installed from it: `/plugin marketplace
/// add <clone>`, then `/plugin install a2a-mod@a2a-mod`, with which Claude Code fetches the npm
/// package and runs `npm ci` on its npm-shrinkwrap.json. The user has a status line of their own
/// (`users_status_line`). `None` (with a line saying why) without Claude Code, tmux, node or npm.
fn plugin_installed_from_marketplace(with_binary: bool) -> Option<Installed> {
    if let Some(why) = missing_tools() {
        skip(&format!("the plugin from a marketplace: {why}"));
        return None;
    }
    let tarballs = tempfile::tempdir().unwrap();
    let packed = Packed::new(tarballs.path())?;
    let registry = if with_binary {
        NpmRegistry::start(&[&packed.main, &packed.platform])
    } else {
        NpmRegistry::start(&[&packed.main])
    };
    let home = TempHome::new();
    registry.write_npmrc(&home.home(), &home.root().join("npm-cache"));
    let clone = home.root().join("a2a-mod-clone");
    marketplace_clone(&clone);
    claude_cli(&home)
        .arg("plugin")
        .arg("marketplace")
        .arg("add")
        .arg(&clone)
        .ok();
    claude_cli(&home)
        .args(["plugin", "install", "a2a-mod@a2a-mod"])
        .ok();
    users_status_line(&home);
    let model = FakeModelApi::start(
        Script::new()
            .rule(Rule::on_user_text("HELLO").text("HI-FROM-FAKE-MODEL"))
            .fallback_text("OK"),
    );
    Some(Installed {
        home,
        clone,
        model,
        _registry: registry,
        _tarballs: tarballs,
    })
}

/// Where Claude Code keeps the installed plugin.
fn cached_plugin(home: &TempHome) -> PathBuf {
    home.home().join(format!(
        ".claude/plugins/cache/a2a-mod/a2a-mod/{}",
        env!("CARGO_PKG_VERSION")
    ))
}

/// Sets the user's own status line in `home`'s settings: it prints the name of the process that
/// ran it, so the screen tells whether Claude Code runs it directly or a2a-mod's line does (with
/// `--then`).
fn users_status_line(home: &TempHome) {
    let file = home.home().join(".claude/settings.json");
    let mut s: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    s["statusLine"] = serde_json::json!({
        "type": "command",
        "command": "printf 'USER-SL from %s\\n' \"$(cat /proc/$PPID/comm)\"",
    });
    std::fs::write(&file, serde_json::to_string_pretty(&s).unwrap()).unwrap();
}

/// Whether one of `pids` runs `a2a-mod <sub>`, and with which program.
fn running(pids: &[u32], sub: &str) -> Option<PathBuf> {
    pids.iter().find_map(|pid| {
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let mut args = argv.split(|b| *b == 0);
        let prog = args.next()?;
        (String::from_utf8_lossy(prog).ends_with("a2a-mod") && args.next()? == sub.as_bytes())
            .then(|| std::fs::read_link(format!("/proc/{pid}/exe")).ok())?
    })
}

/// The single step: `/plugin install` from the repository's marketplace brings the binary too
/// (the npm package's platform dependency, which Claude Code installs into the plugin), with no
/// a2a-mod anywhere else. The session has the five tools and runs the plugin's MCP server and
/// monitor from that binary; `! a2a-mod install` typed into it (the plugin's `bin/` is on Claude
/// Code's shell PATH) adds the status line, which then runs the user's line through `--then`.
#[test]
fn the_plugin_from_the_marketplace_brings_its_binary_in_one_step() {
    let Some(Installed { home, model, .. }) = plugin_installed_from_marketplace(true) else {
        return;
    };
    let native =
        cached_plugin(&home).join(format!("node_modules/{}/bin/a2a-mod", platform_package()));
    assert!(native.is_file(), "{}", native.display());
    let long = Duration::from_secs(40);
    let Some(mut claude) = ClaudeSession::start(ClaudeOpts::new(&model).home(home)) else {
        return;
    };
    claude.wait_ready(long);
    claude.wait_for_text("USER-SL from ", long);
    let native = native.canonicalize().unwrap();
    wait_until("the plugin's MCP server and monitor to start", long, || {
        let pids = claude.processes();
        running(&pids, "mcp").is_some() && running(&pids, "watch").is_some()
    });
    let pids = claude.processes();
    for sub in ["mcp", "watch"] {
        assert_eq!(running(&pids, sub).as_ref(), Some(&native), "{sub}");
    }
    assert_five_tools(&claude, &model, long);

    // The status line: `a2a-mod install` from the session's shell.
    claude.type_text("!");
    claude.send_keys("a2a-mod install");
    claude.wait_for_text("USER-SL from a2a-mod", long);
    // The settings name our link to the plugin's binary, not its folder in the cache, which the
    // next plugin update replaces.
    let s = settings(&claude.home().home());
    let line = s["statusLine"]["command"].as_str().unwrap();
    let link = claude.home().a2a_home().join("bin/a2a-mod");
    assert!(
        line.starts_with(&format!("{} statusline --then ", link.display())),
        "{line}"
    );
    assert_eq!(link.canonicalize().unwrap(), native);
    let doctor = TestCommand::program(&link)
        .arg("doctor")
        .envs(claude.home().envs())
        .ok();
    for good in ["✓ plugin runs a2a-mod", "✓ status line"] {
        assert!(doctor.contains(good), "{good:?} not in:\n{doctor}");
    }
    let pane = claude.pane_history();
    for bad in ["failed", "hook error"] {
        assert!(!pane.contains(bad), "{bad:?} on the screen:\n{pane}");
    }
    claude.kill();
}

/// Asks until a request to the model lists the plugin's five tools (the MCP server connects in
/// the background); panics if none does.
fn assert_five_tools(claude: &ClaudeSession, model: &FakeModelApi, long: Duration) {
    for i in 0..5 {
        let prompt = format!("HELLO {i}");
        claude.send_keys(&prompt);
        let r = model.wait_for_request("a HELLO turn", long, |r| {
            r.is_main_loop() && r.last_user_text().contains(&prompt)
        });
        claude.wait_for_text("HI-FROM-FAKE-MODEL", long);
        let tools = r.deferred_tools();
        let five = ["send", "task", "cancel", "tasks", "workers"]
            .iter()
            .all(|n| tools.contains(&format!("mcp__plugin_a2a-mod_a2a__{n}")));
        if five {
            return;
        }
    }
    panic!("the plugin's five tools never reached the model");
}

/// Without a binary for this platform (the registry has none, as for a platform nobody built):
/// the plugin installs all the same, the session shows the one-line install (the SessionStart
/// hook's message) and nothing fails (no failed hook or MCP server); after `a2a-mod install`
/// (which keeps the user's marketplace and adds the status line) the next session has the status
/// line, the hooks' MCP server and monitor, and the five tools.
#[test]
fn the_plugin_without_its_binary_says_how_to_install_then_works() {
    let Some(Installed {
        home, clone, model, ..
    }) = plugin_installed_from_marketplace(false)
    else {
        return;
    };
    assert!(cached_plugin(&home).join("package.json").is_file());
    assert!(
        !cached_plugin(&home)
            .join("node_modules")
            .join(platform_package())
            .exists()
    );
    let long = Duration::from_secs(40);
    // No binary: not in the plugin, not on PATH, not recorded.
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
    let s = settings(&home.home());
    assert_eq!(
        s["extraKnownMarketplaces"]["a2a-mod"]["source"]["path"],
        clone.to_str().unwrap(),
        "{s}"
    );
    let Some(mut claude) = ClaudeSession::start(ClaudeOpts::new(&model).home(home)) else {
        return;
    };
    claude.wait_ready(long);
    // Our status line runs (the user's through --then), the plugin's MCP server and monitor too.
    claude.wait_for_text("USER-SL from a2a-mod", long);
    let exe = bin().canonicalize().unwrap();
    wait_until("the plugin's MCP server and monitor to start", long, || {
        let pids = claude.processes();
        running(&pids, "mcp").as_ref() == Some(&exe)
            && running(&pids, "watch").as_ref() == Some(&exe)
    });
    assert_five_tools(&claude, &model, long);
    claude.kill();
}

/// A plugin update: Claude Code installs the new version in a folder of its own and later removes
/// the old one. `install` run by the plugin's binary names our link in the settings; the next
/// session start (the new version's hook, run by the new binary) moves the link on, so the status
/// line still runs once the old folder is gone. A binary outside the cache leaves the link alone.
#[test]
fn a_plugin_update_moves_the_link_the_settings_name() {
    let home = TempHome::new();
    let version = |v: &str| {
        home.home().join(format!(
            ".claude/plugins/cache/a2a-mod/a2a-mod/{v}/node_modules/{}/bin/a2a-mod",
            platform_package()
        ))
    };
    let (old, new) = (version("0.0.1"), version("0.0.2"));
    for p in [&old, &new] {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        // A hard link runs as its own path (what /proc/self/exe names), as a copy would.
        std::fs::hard_link(bin(), p)
            .or_else(|_| std::fs::copy(bin(), p).map(drop))
            .unwrap();
    }
    let run = |exe: &Path, args: &[&str]| {
        let mut cmd = TestCommand::program(exe);
        cmd.envs(home.envs())
            .env("PATH", path_without_claude(&home))
            .env_remove("A2A_MOD_BIN")
            .args(args);
        cmd
    };
    let report = run(&old, &["install"]).ok();
    let link = home.a2a_home().join("bin/a2a-mod");
    assert!(report.contains("a link to"), "{report}");
    let s = settings(&home.home());
    let line = s["statusLine"]["command"].as_str().unwrap();
    assert_eq!(line, format!("{} statusline", link.display()));
    assert_eq!(s["env"]["A2A_MOD_BIN"], link.to_str().unwrap());
    assert_eq!(std::fs::read_link(&link).unwrap(), old);

    let session_start = |exe: &Path| {
        run(exe, &["hook", "session-start"])
            .stdin(
                serde_json::json!({
                    "session_id": "0a7c4c52-5f2e-4c1e-9d43-1f3b2a6c8e01",
                    "hook_event_name": "SessionStart",
                    "source": "startup",
                })
                .to_string(),
            )
            .ok();
    };
    session_start(&new);
    assert_eq!(std::fs::read_link(&link).unwrap(), new);
    std::fs::remove_dir_all(old.ancestors().nth(4).unwrap()).unwrap();
    let rendered = TestCommand::program("sh")
        .args(["-c", line])
        .envs(home.envs())
        .stdin(r#"{"session_id": "0a7c4c52-5f2e-4c1e-9d43-1f3b2a6c8e01"}"#)
        .output();
    assert!(rendered.status.success(), "{rendered:?}");
    // The hook of a binary outside the cache (npm's, a checkout's) does not take the link.
    session_start(&bin());
    assert_eq!(std::fs::read_link(&link).unwrap(), new);
}
