//! `a2a-mod doctor`: one line per check, `✓` or `✕`, each `✕` with its fix; exit 1 when any check
//! fails. It reads what `install` wrote (by the same markers,
//! [`claude::settings`](a2a_mod_claude::settings)), runs the plugin's launcher and the status line
//! as Claude Code would (timing one render), asks each worker for its card and makes one harmless
//! authenticated call, and checks the state folder and the pollers of sessions with live tasks. It
//! changes nothing.

use super::Run;
use super::setup::{read_settings, settings_path, which};
use super::shell::{load, out, run_with_deadline, runtime, user_command};
use crate::cli::{DoctorArgs, Scope};
use a2a_mod_a2a::{A2aError, Worker};
use a2a_mod_claude::settings::{self, BIN_ENV, MARKETPLACE, PLUGIN_ID};
use a2a_mod_os::env::Ctx;
use a2a_mod_store::{Reader, SessionPaths, session};
use anyhow::{Result, bail};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The Claude Code release a2a-mod is tested with (docs/claude-code.md). Plugin monitors and
/// `refreshInterval` are recent; older releases may lack them.
pub const TESTED_CLAUDE: &str = "2.1.332";
/// Per worker: the card, then one GetTask.
const WORKER_DEADLINE: Duration = Duration::from_secs(5);
/// Claude Code drops a status line that takes longer than its one-second interval.
const STATUSLINE_SLOW: Duration = Duration::from_millis(500);

struct Check {
    ok: bool,
    text: String,
}

fn pass(text: impl Into<String>) -> Check {
    Check {
        ok: true,
        text: text.into(),
    }
}

fn fail(what: impl Into<String>, fix: &str) -> Check {
    Check {
        ok: false,
        text: format!("{} — {fix}", what.into()),
    }
}

impl Run for DoctorArgs {
    fn run(self) -> Result<i32> {
        let ctx = user_command()?;
        doctor(&ctx)?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

fn doctor(ctx: &Ctx) -> Result<()> {
    let mut checks = vec![pass(format!(
        "a2a-mod {} ({})",
        env!("CARGO_PKG_VERSION"),
        std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    ))];
    checks.push(check_claude());
    checks.extend(check_install());
    checks.extend(check_workers(ctx));
    checks.extend(check_serve(ctx));
    checks.push(check_state_dir(ctx));
    checks.push(check_results(ctx));
    checks.extend(check_pollers(ctx));

    let failed = checks.iter().filter(|c| !c.ok).count();
    let mut text: Vec<String> = checks
        .iter()
        .map(|c| format!("{} {}", if c.ok { "✓" } else { "✕" }, c.text))
        .collect();
    if failed > 0 {
        text.push(format!("{failed} check(s) failed."));
    } else {
        text.push("All checks passed.".into());
    }
    out(&text.join("\n"))?;
    if failed > 0 {
        // The lines above are the report; the error line only sets the exit status.
        bail!(
            "doctor: {failed} check(s) failed — apply the fixes above, then run `a2a-mod doctor` again"
        );
    }
    Ok(())
}

/// Runs a command with a deadline: `(stdout, elapsed)` on exit 0.
fn run_timed(cmd: &mut Command, stdin: &[u8], deadline: Duration) -> Result<(String, Duration)> {
    let (o, elapsed) = run_with_deadline(cmd, stdin, deadline)?;
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    if o.status.success() {
        Ok((stdout, elapsed))
    } else {
        let err = String::from_utf8_lossy(&o.stderr);
        bail!("{}", err.lines().next().unwrap_or("failed").trim())
    }
}

/// `a.b.c` compared numerically; unparsable parts count as 0.
fn version_at_least(have: &str, want: &str) -> bool {
    let parse = |v: &str| -> Vec<u64> {
        v.split('.')
            .map(|p| {
                p.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
                    .parse()
                    .unwrap_or(0)
            })
            .collect()
    };
    parse(have) >= parse(want)
}

fn check_claude() -> Check {
    const FIX: &str = "install or update it: npm install -g @anthropic-ai/claude-code";
    let Some(claude) = which("claude") else {
        return fail("Claude Code: `claude` is not on PATH", FIX);
    };
    let mut cmd = Command::new(&claude);
    cmd.arg("--version");
    match run_timed(&mut cmd, b"", Duration::from_secs(15)) {
        Err(e) => fail(format!("Claude Code: `claude --version` failed: {e}"), FIX),
        Ok((text, _)) => {
            let v = text.split_whitespace().next().unwrap_or("").to_string();
            if version_at_least(&v, TESTED_CLAUDE) {
                pass(format!("Claude Code {v} ({})", claude.display()))
            } else {
                fail(
                    format!(
                        "Claude Code {v} is older than {TESTED_CLAUDE}, the release a2a-mod is tested with (plugin monitors and the status line's refreshInterval need a recent one)"
                    ),
                    FIX,
                )
            }
        }
    }
}

/// `[serve]`, when config.toml has it: each agent's folder, the tokens' variables, the address,
/// and the Claude Code its runs use.
fn check_serve(ctx: &Ctx) -> Vec<Check> {
    let Ok(cfg) = load(ctx) else {
        return Vec::new();
    };
    let serve = &cfg.serve;
    if *serve == a2a_mod_config::ServeConfig::default() {
        return Vec::new();
    }
    let mut checks = Vec::new();
    if let Some(bin) = a2a_mod_os::env::claude_bin() {
        let mut cmd = Command::new(&bin);
        cmd.arg("--version");
        checks.push(match run_timed(&mut cmd, b"", Duration::from_secs(15)) {
            Ok((v, _)) => pass(format!(
                "serve: runs use {} (A2A_MOD_CLAUDE_BIN), {}",
                bin.display(),
                v.trim()
            )),
            Err(e) => fail(
                format!(
                    "serve: A2A_MOD_CLAUDE_BIN=\"{}\" does not run: {e}",
                    bin.display()
                ),
                "point it at a Claude Code binary, or unset it to use `claude` on PATH",
            ),
        });
    }
    for (name, a) in &serve.agents {
        let dir = a.dir_path();
        let mode = a.permission_mode.as_deref().unwrap_or("default");
        let runs = match &a.exec {
            Some(cmd) => format!("runs {}", cmd.join(" ")),
            None => format!("permission mode {mode}"),
        };
        if let Some(program) = a.exec.as_ref().and_then(|c| c.first())
            && !program.contains('/')
            && super::setup::which(program).is_none()
        {
            checks.push(fail(
                format!("serve: agent {name}: {program} is not on PATH"),
                &format!("install it, or name it by its path in serve.agents.{name}.exec"),
            ));
        }
        checks.push(match &dir {
            Some(d) if !d.is_dir() => fail(
                format!("serve: agent {name}: \"{}\" is not a folder", d.display()),
                &format!("create it, or fix serve.agents.{name}.dir"),
            ),
            Some(d) => pass(format!("serve: agent {name}: {} ({runs})", d.display())),
            None => pass(format!(
                "serve: agent {name}: the folder serve starts in ({runs})"
            )),
        });
    }
    let mut tokens = 0;
    for var in &serve.token_envs {
        if a2a_mod_os::env::secret(var).is_some() {
            tokens += 1;
            checks.push(pass(format!("serve: token variable {var} is set")));
        } else {
            checks.push(fail(
                format!("serve: token variable {var} is not set"),
                "export it before `a2a-mod serve`, or drop it from serve.token_envs",
            ));
        }
    }
    if let Some(listen) = &serve.listen {
        checks.push(match listen.parse::<std::net::SocketAddr>() {
            Err(_) => fail(
                format!("serve: listen {listen:?} is not ADDR:PORT"),
                "write e.g. listen = \"127.0.0.1:8462\"",
            ),
            Ok(a) if !a.ip().is_loopback() && tokens == 0 => fail(
                format!("serve: listen {a} is off loopback with no token"),
                "set serve.token_envs (and export the variable), or listen on 127.0.0.1",
            ),
            Ok(a) => match std::net::TcpListener::bind(a) {
                Ok(_) => pass(format!("serve: {a} is free to listen on")),
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => pass(format!(
                    "serve: {a} is in use (by a running a2a-mod serve, or another program)"
                )),
                Err(e) => fail(
                    format!("serve: cannot listen on {a}: {e}"),
                    "pick another serve.listen",
                ),
            },
        });
    }
    checks
}

/// The user and project settings, project first (it wins in Claude Code).
fn load_settings(checks: &mut Vec<Check>) -> Vec<(&'static str, PathBuf, Value)> {
    let mut found = Vec::new();
    for scope in [Scope::Project, Scope::User] {
        let name = super::setup::scope_name(scope);
        let Ok(path) = settings_path(scope) else {
            continue;
        };
        match read_settings(&path) {
            Ok(Some(v)) => found.push((name, path, v)),
            Ok(None) => {}
            Err(e) => checks.push(fail(
                format!("settings: {e:#}"),
                "Claude Code ignores a broken settings file",
            )),
        }
    }
    found
}

fn check_install() -> Vec<Check> {
    let mut checks = Vec::new();
    let files = load_settings(&mut checks);
    let install = "run `a2a-mod install`";
    let first = |f: &dyn Fn(&Value) -> Option<Value>| {
        files
            .iter()
            .find_map(|(s, p, v)| f(v).map(|x| (*s, p.clone(), x)))
    };

    // Plugin enabled, in the scope that decides.
    let enabled = first(&|v| v.get("enabledPlugins")?.get(PLUGIN_ID).cloned());
    match &enabled {
        Some((scope, _, Value::Bool(true))) => checks.push(pass(format!(
            "plugin {PLUGIN_ID} enabled ({scope} settings)"
        ))),
        Some((scope, p, _)) => checks.push(fail(
            format!(
                "plugin {PLUGIN_ID} is disabled in \"{}\" ({scope})",
                p.display()
            ),
            "run `a2a-mod install` or `claude plugin enable a2a-mod@a2a-mod`",
        )),
        None => checks.push(fail(format!("plugin {PLUGIN_ID} is not enabled"), install)),
    }

    // The plugin folder, its hooks and monitor, and the binary its launcher runs.
    let market = first(&|v| {
        v.get("extraKnownMarketplaces")?
            .get(MARKETPLACE)?
            .get("source")?
            .get("path")
            .cloned()
    });
    let bin_env = first(&|v| v.get("env")?.get(BIN_ENV).cloned())
        .and_then(|(_, _, v)| v.as_str().map(str::to_string));
    match plugin_folder(market.as_ref().and_then(|(_, _, v)| v.as_str())) {
        None => checks.push(fail(
            "plugin marketplace \"a2a-mod\" is not registered",
            install,
        )),
        Some(dir) => {
            checks.push(check_plugin_files(&dir));
            checks.push(check_wake_hooks(&dir));
            checks.push(check_launcher(&dir, bin_env.as_deref()));
        }
    }

    // The status line.
    let status = first(&|v| v.get("statusLine").cloned());
    checks.push(match status {
        None => fail("status line: not set in any settings file", install),
        Some((scope, _, sl)) => check_statusline(scope, &sl),
    });

    // Permissions: a rule for our server in any scope is enough.
    let allowed = files.iter().find_map(|(scope, _, v)| {
        v.get("permissions")?
            .get("allow")?
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .find(|r| settings::is_our_rule(r))
            .map(|r| (*scope, r.to_string()))
    });
    checks.push(match allowed {
        Some((scope, rule)) => pass(format!("permissions: {rule} allowed ({scope} settings)")),
        None => fail(
            format!(
                "permissions: {} is not in permissions.allow, so Claude Code may ask before every a2a tool call",
                settings::PERMISSION_RULE
            ),
            install,
        ),
    });
    checks
}

/// The plugin folder to check: the marketplace folder `install` registered, which holds the
/// plugin; or, for a marketplace of the user's own that only names the plugin (the repository's,
/// whose entry is the npm package), the folder Claude Code installed it in, from its
/// `plugins/installed_plugins.json`.
fn plugin_folder(market: Option<&str>) -> Option<PathBuf> {
    if let Some(dir) = market.map(Path::new)
        && dir.join(".claude-plugin/plugin.json").is_file()
    {
        return Some(dir.to_path_buf());
    }
    let file = super::setup::claude_config_dir()
        .ok()?
        .join("plugins/installed_plugins.json");
    let v: Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    let path = v["plugins"][PLUGIN_ID].as_array()?.first()?["installPath"].as_str()?;
    Some(PathBuf::from(path))
}

fn check_plugin_files(dir: &Path) -> Check {
    let fix = "run `a2a-mod install` to rewrite the plugin files";
    let read = |rel: &str| std::fs::read_to_string(dir.join(rel)).unwrap_or_default();
    if !dir.join(".claude-plugin/plugin.json").is_file() {
        return fail(
            format!(
                "plugin folder \"{}\" has no .claude-plugin/plugin.json",
                dir.display()
            ),
            fix,
        );
    }
    let hooks = read("hooks/hooks.json");
    let missing: Vec<&str> = a2a_mod_claude::plugin::HOOK_ARGS
        .iter()
        .copied()
        .filter(|h| !hooks.contains(&format!("hook {h}")))
        .collect();
    if !missing.is_empty() {
        return fail(format!("plugin hooks missing: {}", missing.join(", ")), fix);
    }
    let monitors: Value = serde_json::from_str(&read("monitors/monitors.json")).unwrap_or_default();
    let has_watch = monitors.as_array().is_some_and(|a| {
        a.iter().any(|m| {
            m.get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| c.split_whitespace().any(|w| w == "watch"))
        })
    });
    if !has_watch {
        return fail("plugin monitor `a2a-mod watch` missing", fix);
    }
    pass(format!(
        "plugin hooks ({}) and monitor (watch) present in {}",
        a2a_mod_claude::plugin::HOOK_ARGS.join(", "),
        dir.display()
    ))
}

/// The wake-ups besides the monitor: the asyncRewake waiter (`hook wake`, when the monitor is not
/// running) and the Stop hook (`hook stop`, headless and SDK runs); and that the binary the
/// installed files name still exists.
fn check_wake_hooks(dir: &Path) -> Check {
    let fix = "run `a2a-mod install` to rewrite the plugin files";
    let hooks = std::fs::read_to_string(dir.join("hooks/hooks.json")).unwrap_or_default();
    let missing: Vec<&str> = a2a_mod_claude::plugin::WAKE_HOOK_ARGS
        .iter()
        .copied()
        .filter(|h| !hooks.contains(&format!("hook {h}")))
        .collect();
    if !missing.is_empty() {
        return fail(
            format!("plugin wake-up hooks missing: {}", missing.join(", ")),
            fix,
        );
    }
    let v: Value = serde_json::from_str(&hooks).unwrap_or_default();
    let stop = v["hooks"]["Stop"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap_or_default();
    if let Some(cmd) = stop.strip_suffix(" hook stop")
        && !cmd.contains(a2a_mod_claude::plugin::LAUNCHER)
    {
        let path = cmd.trim_matches('\'');
        if !Path::new(path).is_file() {
            return fail(
                format!("the plugin's hooks run {path}, which no longer exists"),
                "run `a2a-mod install` again with the binary Claude Code should use",
            );
        }
    }
    pass(
        "plugin wake-ups: asyncRewake waiter (hook wake) and headless Stop hook (hook stop) present",
    )
}

fn check_launcher(dir: &Path, bin_env: Option<&str>) -> Check {
    let launcher = dir.join("bin/a2a-mod-launch");
    let mut cmd = Command::new(&launcher);
    cmd.arg("--version");
    match bin_env {
        Some(b) => cmd.env(BIN_ENV, b),
        None => cmd.env_remove(BIN_ENV),
    };
    let ours = format!("a2a-mod {}", env!("CARGO_PKG_VERSION"));
    match run_timed(&mut cmd, b"", Duration::from_secs(10)) {
        Err(e) => fail(
            format!(
                "the plugin's launcher \"{}\" cannot run a2a-mod: {e}",
                launcher.display()
            ),
            "run `a2a-mod install` with the binary Claude Code should use",
        ),
        Ok((v, _)) if v.trim() == ours => pass(format!(
            "plugin runs {} ({})",
            v.trim(),
            bin_env.unwrap_or("found on PATH")
        )),
        Ok((v, _)) => fail(
            format!("the plugin runs {}, this is {ours}", v.trim()),
            "run `a2a-mod install` with the binary Claude Code should use",
        ),
    }
}

fn check_statusline(scope: &str, sl: &Value) -> Check {
    let install = "run `a2a-mod install` (it keeps your own status line through --then)";
    let Some(cmd) = sl.get("command").and_then(Value::as_str) else {
        return fail("status line: statusLine has no command", install);
    };
    if settings::parse_statusline(cmd).is_none() {
        return fail(
            format!("status line: the {scope} statusLine does not run `a2a-mod statusline`"),
            install,
        );
    }
    if sl.get("refreshInterval").and_then(Value::as_u64) != Some(settings::REFRESH_INTERVAL) {
        return fail(
            "status line: refreshInterval is not 1, so task state is not redrawn while idle",
            install,
        );
    }
    // One render as Claude Code runs it: through the shell, JSON on stdin.
    let sample = serde_json::json!({
        "session_id": "a2a-mod-doctor",
        "cwd": std::env::current_dir().unwrap_or_default(),
        "version": TESTED_CLAUDE,
    });
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(cmd);
    match run_timed(
        &mut sh,
        sample.to_string().as_bytes(),
        Duration::from_secs(5),
    ) {
        Err(e) => fail(format!("status line: `{cmd}` failed: {e}"), install),
        Ok((_, t)) if t > STATUSLINE_SLOW => fail(
            format!("status line: one render took {} ms", t.as_millis()),
            "Claude Code drops a status line slower than its 1 s interval; check the command after --then",
        ),
        Ok((_, t)) => pass(format!(
            "status line wired ({scope} settings, refreshInterval 1); one render took {} ms",
            t.as_millis()
        )),
    }
}

fn check_workers(ctx: &Ctx) -> Vec<Check> {
    let config = match load(ctx) {
        Ok(c) => c,
        Err(e) => {
            return vec![fail(
                format!("config: {e:#}"),
                "fix config.toml (`a2a-mod worker list` shows what is read)",
            )];
        }
    };
    if config.workers.is_empty() {
        return vec![pass(
            "workers: none configured yet (add one: a2a-mod worker add <alias> <url>)",
        )];
    }
    let rt = match runtime() {
        Ok(r) => r,
        Err(e) => return vec![fail(format!("workers: {e:#}"), "try again")],
    };
    let http = a2a_mod_a2a::http_client();
    let checks: Vec<Check> = rt.block_on(async {
        let futs = config.workers.iter().map(|(alias, cfg)| {
            let worker = Worker::new(alias, cfg.clone(), http.clone());
            async move { check_worker(&worker).await }
        });
        futures::future::join_all(futs).await
    });
    checks
}

async fn check_worker(w: &Worker) -> Check {
    let alias = &w.alias;
    let url = &w.config.url;
    let deadline = || tokio::time::Instant::now() + WORKER_DEADLINE;
    let card = match w.card(deadline()).await {
        Ok(c) => c,
        Err(e) => {
            let fix = match e {
                A2aError::Unreachable(_) | A2aError::Timeout(_) => {
                    format!("check that it is running at {url}")
                }
                A2aError::Rpc { .. } => {
                    "the worker answered the card request with an error of its own; ask its operator".to_string()
                }
                A2aError::Auth { .. } | A2aError::Credentials(_) => format!(
                    "fix the credentials of worker {alias:?} in config.toml or the environment"
                ),
                _ => format!("check that {url} is an A2A agent (`a2a-mod worker show {alias}`)"),
            };
            return fail(format!("worker {alias:?}: card not reachable: {e}"), &fix);
        }
    };
    // A task id no worker has: "task not found" means the worker accepted our credentials.
    let probe = format!("a2a-mod-doctor-{}", a2a_mod_os::env::now_ms());
    let auth = match w.get_task(&probe, deadline()).await {
        Ok(_) | Err(A2aError::TaskNotFound) => Ok("auth working"),
        Err(e @ A2aError::Auth { .. }) => Err(e.to_string()),
        Err(A2aError::Credentials(e)) => Err(format!("cannot get credentials: {e}")),
        // Other answers (an RPC error, a timeout) do not tell about auth either way.
        Err(_) => Ok("auth not confirmed"),
    };
    // Which credentials went (the keys, the service account, the token), so a user with several
    // sees the one in use, and how long a token has left.
    let fix = format!("fix the credentials of worker {alias:?} in config.toml or the environment");
    let creds = match w.credentials_now(deadline()).await {
        Ok(Some((src, left))) => match (left, &w.config.bearer_env) {
            (Some(l), Some(var)) if l <= EXPIRING_S => {
                return fail(
                    format!("worker {alias:?}: the token in {var} {}", expiry(l)),
                    &format!(
                        "put a fresh token in {var}, or add the worker with --token-cmd, which a2a-mod runs again when a token runs out"
                    ),
                );
            }
            (Some(l), _) => format!(" ({src}; the token {}, renewed before it does)", expiry(l)),
            (None, _) => format!(" ({src})"),
        },
        Ok(None) => String::new(),
        Err(e) => return fail(format!("worker {alias:?}: {e}"), &fix),
    };
    match auth {
        Ok(note) => pass(format!(
            "worker {alias:?}: {} at {url}, card reachable, {note}{creds}",
            card.name.lines().next().unwrap_or("")
        )),
        Err(e) => fail(format!("worker {alias:?}: {e}"), &fix),
    }
}

/// A token with this little left (seconds) is about to fail: a token the user put in the
/// environment is not renewed by a2a-mod.
const EXPIRING_S: f64 = 600.0;

/// "expires in 59 min", "expired 2 min ago".
fn expiry(left: f64) -> String {
    let mins = (left.abs() / 60.0).round();
    let span = if left.abs() < 90.0 {
        format!("{} s", left.abs().round())
    } else {
        format!("{mins} min")
    };
    if left > 0.0 {
        format!("expires in {span}")
    } else {
        format!("expired {span} ago")
    }
}

fn check_state_dir(ctx: &Ctx) -> Check {
    let dir = &ctx.state_dir;
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    let r = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b"ok"))
        .and_then(|()| std::fs::remove_file(&probe));
    match r {
        Ok(()) => pass(format!("state folder writable ({})", dir.display())),
        Err(e) => fail(
            format!("state folder \"{}\" not writable: {e}", dir.display()),
            "fix its permissions, or set A2A_MOD_HOME to a writable folder",
        ),
    }
}

/// Old sessions' saved results: offered for `tasks --prune`, never a failure.
fn check_results(ctx: &Ctx) -> Check {
    let keep = a2a_mod_config::Config::load(&ctx.config_path())
        .map(|c| c.results)
        .unwrap_or_default();
    let old = a2a_mod_results::artifacts::prunable(ctx, keep.keep(), std::time::SystemTime::now());
    if old.is_empty() {
        return pass(format!("results: none older than {} days", keep.keep_days));
    }
    let bytes: u64 = old.iter().map(|s| s.bytes).sum();
    pass(format!(
        "results: {} session(s) idle over {} days keep {bytes} bytes under {} — run `a2a-mod tasks --prune` to remove them",
        old.len(),
        keep.keep_days,
        a2a_mod_results::artifacts::results_dir(ctx).display()
    ))
}

fn check_pollers(ctx: &Ctx) -> Vec<Check> {
    let mut checks = Vec::new();
    let mut live_sessions = 0;
    for id in session::list(ctx) {
        let live = Reader::open(&SessionPaths::of_owner(ctx, &id).db)
            .ok()
            .flatten()
            .and_then(|s| s.live_tasks().ok())
            .unwrap_or_default();
        if live.is_empty() {
            continue;
        }
        live_sessions += 1;
        checks.push(check_wake_path(ctx, &id, &live));
        if a2a_mod_app::poller::is_running(ctx, &id) {
            checks.push(pass(format!(
                "poller alive for session {id} ({} live task(s))",
                live.len()
            )));
        } else {
            checks.push(fail(
                format!(
                    "no poller for session {id}, which has {} live task(s)",
                    live.len()
                ),
                &format!(
                    "run `a2a-mod task {} --session {id}` to restart it",
                    live[0].task_id
                ),
            ));
        }
    }
    if live_sessions == 0 {
        checks.push(pass("pollers: no session has a live task"));
    }
    checks
}

/// Which path will wake Claude for this live session: the monitor, the asyncRewake waiter, or a
/// headless run's waiting Stop hook (each holds its lock while it runs).
fn check_wake_path(ctx: &Ctx, id: &str, live: &[a2a_mod_store::TaskRecord]) -> Check {
    use a2a_mod_claude::hook::mode::{self, Mode};
    use a2a_mod_core::wake::{MONITOR_LOCK, STOP_LOCK, WAITER_LOCK};
    let paths = SessionPaths::of_owner(ctx, id);
    let held = |what: &str| a2a_mod_os::fsx::is_locked(&paths.lock(what));
    let fetch = format!("a2a-mod task {} --session {id}", live[0].task_id);
    // `[claude] native_tasks`: Claude Code polls these itself and wakes Claude when they end.
    if live.iter().all(|t| t.native_ms.is_some()) {
        return pass(format!(
            "wake path for session {id}: Claude Code's own MCP tasks ({} live task(s), [claude] native_tasks)",
            live.len()
        ));
    }
    match mode::recorded(ctx, id) {
        Some(Mode::Headless) if held(STOP_LOCK) => pass(format!(
            "wake path for session {id}: headless wait (the run's Stop hook holds it open)"
        )),
        Some(Mode::Headless) => fail(
            format!(
                "wake path for session {id} (headless): no run is waiting for its {} live task(s)",
                live.len()
            ),
            &format!("fetch a result later with `{fetch}`"),
        ),
        _ if held(MONITOR_LOCK) => pass(format!(
            "wake path for session {id}: monitor (a2a-mod watch)"
        )),
        _ if held(WAITER_LOCK) => pass(format!(
            "wake path for session {id}: fallback (the asyncRewake waiter; no monitor runs)"
        )),
        _ => fail(
            format!("no wake path for session {id}: neither the monitor nor the waiter runs"),
            &format!(
                "its results reach Claude at the session's next prompt, or fetch one with `{fetch}`"
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_numerically() {
        assert!(version_at_least("2.1.332", "2.1.332"));
        assert!(version_at_least("2.10.0", "2.1.332"));
        assert!(!version_at_least("2.1.99", "2.1.332"));
        assert!(!version_at_least("", "2.1.332"));
    }
}
