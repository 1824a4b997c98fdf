//! The real Claude Code CLI, run interactively in a private tmux server against `FakeModelApi`.
//!
//! Owns: the isolated Claude Code home (`~/.claude.json` that skips every start-up dialog, see
//! docs/claude-code.md), the environment (fake API key and base URL, no telemetry or
//! updates, nothing inherited from a Claude Code the tests may themselves run under), the tmux
//! session (fixed size, own `-L` socket so parallel tests never share a server), keystrokes and
//! screen captures, and clean-up: every process started under the session carries a tag in its
//! environment, so `kill` finds them even after they were re-parented (plugin monitors run in their
//! own process group) and nothing outlives the test.
//!
//! Tests that need the CLI call `ClaudeSession::start`, which returns `None` (after printing
//! `SKIPPED: ...`) when `claude` or `tmux` is not installed.

use crate::fake::model_api::FakeModelApi;
use crate::util::{TempHome, skip, which};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The plugin's `send` tool as Claude Code names it, and all five (what the scripted model may call).
pub const SEND: &str = "mcp__plugin_a2a-mod_a2a__send";
pub const TOOLS: [&str; 5] = [
    SEND,
    "mcp__plugin_a2a-mod_a2a__task",
    "mcp__plugin_a2a-mod_a2a__cancel",
    "mcp__plugin_a2a-mod_a2a__tasks",
    "mcp__plugin_a2a-mod_a2a__workers",
];

/// The fake API key. Its last 20 characters are pre-approved in `~/.claude.json`, which is what
/// stops Claude Code asking "Do you want to use this API key?".
pub const FAKE_API_KEY: &str = "sk-ant-api03-a2a-mod-fake-key-for-tests-0123456789abcdefghij";

/// Name of the env var that tags every process of one session (see `kill`).
const TAG_VAR: &str = "A2A_MOD_IT_TAG";

/// The tmux session name inside each private server.
const TMUX_SESSION: &str = "claude";

/// How to start Claude Code. Build with `ClaudeOpts::new(&model)` and the chained setters.
pub struct ClaudeOpts {
    base_url: String,
    home: Option<TempHome>,
    settings: Option<Value>,
    mcp_config: Option<Value>,
    plugin_dirs: Vec<PathBuf>,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// The terminal's columns and rows.
const SIZE: (u16, u16) = (200, 50);

impl ClaudeOpts {
    pub fn new(model: &FakeModelApi) -> ClaudeOpts {
        ClaudeOpts {
            base_url: model.url(),
            home: None,
            settings: None,
            mcp_config: None,
            plugin_dirs: Vec::new(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Use this home (e.g. with a2a-mod config already written) instead of a fresh one.
    pub fn home(mut self, home: TempHome) -> ClaudeOpts {
        self.home = Some(home);
        self
    }

    /// Passed as `--settings <file>`: statusLine, hooks, permissions.allow, ...
    pub fn settings(mut self, settings: Value) -> ClaudeOpts {
        self.settings = Some(settings);
        self
    }

    /// Passed as `--mcp-config <file>`, e.g. `{"mcpServers": {"lab": {"command": ..., "args": [...]}}}`.
    pub fn mcp_config(mut self, config: Value) -> ClaudeOpts {
        self.mcp_config = Some(config);
        self
    }

    /// Passed as `--plugin-dir <dir>` (repeatable).
    pub fn plugin_dir(mut self, dir: impl Into<PathBuf>) -> ClaudeOpts {
        self.plugin_dirs.push(dir.into());
        self
    }

    pub fn arg(mut self, arg: impl Into<String>) -> ClaudeOpts {
        self.args.push(arg.into());
        self
    }

    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> ClaudeOpts {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// A running interactive Claude Code. Killed (with everything it started) on drop.
pub struct ClaudeSession {
    /// Always `Some` until `into_home` takes it.
    home: Option<TempHome>,
    /// Names the tmux server's socket (`-L`) and marks every process started in it.
    tag: String,
    started: Instant,
    alive: bool,
}

/// `claude --version`'s number, e.g. `2.1.332`, or why it is unusable.
pub fn claude_version() -> Result<String, String> {
    static VERSION: OnceLock<Result<String, String>> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let claude = which("claude")
                .ok_or("`claude` is not on PATH (npm install -g @anthropic-ai/claude-code)")?;
            let out = Command::new(&claude)
                .arg("--version")
                .env("DISABLE_AUTOUPDATER", "1")
                .output()
                .map_err(|e| format!("running `{} --version`: {e}", claude.display()))?;
            let text = String::from_utf8_lossy(&out.stdout);
            text.split_whitespace()
                .next()
                .filter(|v| {
                    out.status.success() && v.chars().next().is_some_and(|c| c.is_ascii_digit())
                })
                .map(str::to_owned)
                .ok_or_else(|| format!("`claude --version` printed {text:?}"))
        })
        .clone()
}

/// Why the CLI tests can't run here, if they can't.
pub fn missing_tools() -> Option<String> {
    if which("tmux").is_none() {
        return Some("`tmux` is not on PATH (apt-get install tmux)".to_owned());
    }
    claude_version().err()
}

impl ClaudeSession {
    /// Writes the home, settings and MCP config, starts `claude` in a detached tmux session and
    /// returns at once (use `wait_ready` or wait for the first model request). `None` means the
    /// test should be skipped; the reason is already printed.
    pub fn start(opts: ClaudeOpts) -> Option<ClaudeSession> {
        let p = Prepared::new(opts, &[])?;
        let tmux_conf = p.home.root().join("tmux.conf");
        // remain-on-exit keeps the pane (and Claude Code's last words) if it dies, for the failure
        // dump; the bigger history lets tests search scrolled-off text with `pane_history`.
        std::fs::write(
            &tmux_conf,
            "set -g default-terminal tmux-256color\nset -g remain-on-exit on\nset -g history-limit 20000\nset -g status off\nset -g focus-events on\n",
        )
        .expect("write tmux.conf");
        let claude = which("claude").expect("checked above");
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &p.tag, "-f"])
            .arg(&tmux_conf)
            .args(["new-session", "-d", "-s", TMUX_SESSION])
            .args(["-x", &SIZE.0.to_string(), "-y", &SIZE.1.to_string()])
            .arg("-c")
            .arg(&p.cwd);
        for (k, v) in &p.env {
            cmd.arg("-e").arg(format!("{k}={v}"));
        }
        cmd.arg("--").arg(&claude).args(&p.args).current_dir(&p.cwd);
        scrub_env(&mut cmd);
        // The tmux server forks from this client and passes its environment to the pane; setting
        // it here as well as with -e means no variable of ours can be lost either way.
        cmd.envs(p.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let out = cmd.output().expect("run tmux new-session");
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Some(ClaudeSession {
            home: Some(p.home),
            tag: p.tag,
            started: Instant::now(),
            alive: true,
        })
    }

    /// Where a session started with `home` runs: `<root>/work`. Write project files there
    /// (`.claude/settings.json`, `.mcp.json`) before `start`; `start` keeps what it finds.
    pub fn project_dir(home: &TempHome) -> PathBuf {
        home.root().join("work")
    }

    pub fn home(&self) -> &TempHome {
        self.home
            .as_ref()
            .expect("home is taken only by into_home, which consumes the session")
    }

    /// Stops everything (as `kill`) and hands back the home, to start Claude Code again in it
    /// (`claude --resume <id>` after `/exit`).
    pub fn into_home(mut self) -> TempHome {
        self.kill();
        self.home.take().expect("home is present until into_home")
    }

    /// Types `text`, waits until it is drawn in the prompt, then presses Enter. Waiting first keeps
    /// Enter from arriving in the same read as the text, where it could be taken as pasted input.
    #[track_caller]
    pub fn send_keys(&self, text: &str) {
        self.type_text(text);
        let head: String = text.chars().take(40).collect();
        self.wait_for_pane(
            &format!("typed text {head:?} to appear"),
            Duration::from_secs(30),
            |p| p.contains(&head),
        );
        self.send_key("Enter");
    }

    /// Types `text` literally, without Enter.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", TMUX_SESSION, "-l", "--", text]);
    }

    /// Presses one key by tmux name: `Enter`, `Escape`, `C-c`, `Down`, `BTab`...
    pub fn send_key(&self, key: &str) {
        self.tmux(&["send-keys", "-t", TMUX_SESSION, key]);
    }

    /// The visible screen as plain text.
    pub fn pane_text(&self) -> String {
        self.capture(&["-p"])
    }

    /// The screen plus scroll-back, as plain text.
    pub fn pane_history(&self) -> String {
        self.capture(&["-p", "-S", "-"])
    }

    /// Polls the screen until `pred` holds and returns that screen; panics naming `what` and
    /// showing the last screen on timeout.
    #[track_caller]
    pub fn wait_for_pane(
        &self,
        what: &str,
        deadline: Duration,
        mut pred: impl FnMut(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let text = self.pane_text();
            if pred(&text) {
                return text;
            }
            if start.elapsed() >= deadline {
                panic!(
                    "timed out after {deadline:?} waiting for the claude pane to show {what}; screen:\n{text}"
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `wait_for_pane` for one substring.
    #[track_caller]
    pub fn wait_for_text(&self, needle: &str, deadline: Duration) -> String {
        self.wait_for_pane(&format!("{needle:?}"), deadline, |p| p.contains(needle))
    }

    /// Waits until the input prompt is drawn, i.e. keystrokes will reach it.
    #[track_caller]
    pub fn wait_ready(&self, deadline: Duration) {
        self.wait_for_pane("the input prompt", deadline, is_ready);
    }

    /// Pid of the process in the pane (claude itself), while it lives.
    pub fn claude_pid(&self) -> Option<u32> {
        let out = self.tmux_output(&[
            "display-message",
            "-p",
            "-t",
            TMUX_SESSION,
            "#{pane_pid} #{pane_dead}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout);
        let mut parts = text.split_whitespace();
        let pid = parts.next()?.parse().ok()?;
        (parts.next() == Some("0")).then_some(pid)
    }

    /// Pids of every live process started under this session (tmux server included).
    pub fn processes(&self) -> Vec<u32> {
        tagged_pids(&self.tag)
    }

    /// Stops claude, the tmux server and every process they started (MCP servers, hooks, status
    /// line commands, monitors). Idempotent. Claude Code gets SIGHUP from the closing pane first
    /// and ~3 s to stop its children itself; whatever is left is SIGKILLed.
    pub fn kill(&mut self) {
        if !self.alive {
            return;
        }
        self.alive = false;
        let _ = self.tmux_output(&["kill-server"]);
        let gone = |tag: &str| tagged_pids(tag).is_empty();
        let start = Instant::now();
        while !gone(&self.tag) && start.elapsed() < Duration::from_secs(3) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left = tagged_pids(&self.tag);
        if !left.is_empty() {
            eprintln!(
                "claude harness: {} process(es) outlived the tmux server by 3 s; SIGKILL: {}",
                left.len(),
                describe(&left)
            );
        }
        for pid in left {
            a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
        }
        // No panic here: kill also runs from Drop while a failed test unwinds, where a second
        // panic would abort the whole test binary.
        let start = Instant::now();
        while !gone(&self.tag) && start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left = tagged_pids(&self.tag);
        if !left.is_empty() {
            eprintln!(
                "claude harness: still alive 5 s after SIGKILL: {}",
                describe(&left)
            );
        }
    }

    fn capture(&self, extra: &[&str]) -> String {
        let mut args = vec!["capture-pane", "-t", TMUX_SESSION];
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&self.tmux_output(&args).stdout).into_owned()
    }

    fn tmux(&self, args: &[&str]) {
        let out = self.tmux_output(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn tmux_output(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.tag]).args(args);
        scrub_env(&mut cmd);
        cmd.output().expect("run tmux")
    }
}

impl Drop for ClaudeSession {
    fn drop(&mut self) {
        if std::thread::panicking() && self.alive {
            eprintln!(
                "--- claude pane at failure ({:?} after start) ---\n{}\n--- end of pane ---",
                self.started.elapsed(),
                self.pane_history().trim_end()
            );
        }
        self.kill();
    }
}

/// What both ways of running Claude Code share: the home with `~/.claude.json`, the project dir,
/// the arguments from `ClaudeOpts` and the environment (with the tag that finds every process).
struct Prepared {
    home: TempHome,
    cwd: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    tag: String,
}

impl Prepared {
    /// `None` (after printing why) when the CLI tests cannot run here. `head` comes first in the
    /// arguments (`-p` and its formats).
    fn new(opts: ClaudeOpts, head: &[String]) -> Option<Prepared> {
        if let Some(why) = missing_tools() {
            skip(&format!("real Claude Code test: {why}"));
            return None;
        }
        let version = claude_version().expect("checked above");
        let home = opts.home.unwrap_or_else(TempHome::new);
        let root = home.root().to_path_buf();
        let cwd = ClaudeSession::project_dir(&home);
        std::fs::create_dir_all(&cwd).expect("create project dir");
        // Claude Code keys the trust flag by the real path; a symlinked tmp would miss it.
        let cwd = cwd.canonicalize().expect("canonical project dir");
        write_claude_json(&home.home(), &cwd, &version);

        let mut args: Vec<String> = head.to_vec();
        if let Some(settings) = &opts.settings {
            let p = root.join("claude-settings.json");
            write_json(&p, settings);
            args.extend(["--settings".to_owned(), path_str(&p)]);
        }
        if let Some(mcp) = &opts.mcp_config {
            let p = root.join("claude-mcp.json");
            write_json(&p, mcp);
            args.extend(["--mcp-config".to_owned(), path_str(&p)]);
        }
        for d in &opts.plugin_dirs {
            args.extend(["--plugin-dir".to_owned(), path_str(d)]);
        }
        args.extend(opts.args.iter().cloned());

        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let tag = format!(
            "a2a-it-{}-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        );
        let mut env: Vec<(String, String)> = vec![
            ("HOME".into(), path_str(&home.home())),
            ("A2A_MOD_HOME".into(), path_str(&home.a2a_home())),
            ("ANTHROPIC_BASE_URL".into(), opts.base_url.clone()),
            ("ANTHROPIC_API_KEY".into(), FAKE_API_KEY.into()),
            // Claude Code refuses to run as root without it (we are root in the sandbox and CI).
            ("IS_SANDBOX".into(), "1".into()),
            ("DISABLE_TELEMETRY".into(), "1".into()),
            ("DISABLE_AUTOUPDATER".into(), "1".into()),
            ("DISABLE_ERROR_REPORTING".into(), "1".into()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
                "1".into(),
            ),
            ("CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY".into(), "1".into()),
            ("CLAUDE_CODE_DISABLE_TERMINAL_TITLE".into(), "1".into()),
            (TAG_VAR.into(), tag.clone()),
        ];
        env.extend(opts.env.iter().cloned());
        Some(Prepared {
            home,
            cwd,
            args,
            env,
            tag,
        })
    }
}

/// What a process that runs Claude Code itself needs (`a2a-mod serve`, which starts a headless
/// run per task): the home with `~/.claude.json` trusting `cwd`, and the environment (the fake
/// API, the tag that finds every process). Everything tagged is killed on drop.
pub struct ClaudeEnv {
    pub home: TempHome,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    tag: String,
}

impl ClaudeEnv {
    /// `None` (after printing why) when the CLI tests cannot run here.
    pub fn new(opts: ClaudeOpts) -> Option<ClaudeEnv> {
        let p = Prepared::new(opts, &[])?;
        Some(ClaudeEnv {
            home: p.home,
            cwd: p.cwd,
            env: p.env,
            tag: p.tag,
        })
    }

    /// Sets `cmd`'s environment: nothing of the tests' own Claude Code, then ours.
    pub fn apply(&self, cmd: &mut Command) {
        scrub_env(cmd);
        cmd.envs(self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    }

    /// The pids of every process started under this environment still alive.
    pub fn processes(&self) -> Vec<u32> {
        tagged_pids(&self.tag)
    }
}

impl Drop for ClaudeEnv {
    fn drop(&mut self) {
        for pid in tagged_pids(&self.tag) {
            a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
        }
    }
}

/// How a headless run takes its prompt and prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Headless {
    /// `claude -p <prompt>`: prints the final answer as text.
    Text,
    /// `claude -p --input-format stream-json --output-format stream-json --verbose`, the Agent
    /// SDK's way: one user message on stdin, kept open until the `result` event.
    StreamJson,
    /// The official Python Agent SDK itself (`tests/peers/sdk_driver.py` in `venv-sdk`) with its
    /// own bundled Claude Code, set up as docs/claude-code.md says: the first plugin dir through
    /// its `plugins` option and the a2a tools in `allowed_tools`, not the settings or arguments
    /// of `ClaudeOpts`. Prints a `result` event like stream-json.
    AgentSdk,
}

/// A finished headless run.
pub struct HeadlessRun {
    /// Kept so the run's state (the a2a-mod store) outlives it for the test's checks.
    pub home: TempHome,
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl HeadlessRun {
    /// The stream-json events printed (every stdout line that parses).
    pub fn events(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    /// The last `result` event (stream-json).
    pub fn result_event(&self) -> Option<Value> {
        self.events()
            .into_iter()
            .rev()
            .find(|e| e["type"] == "result")
    }
}

/// Runs Claude Code headless (no tmux, no terminal, as a script, CI job or the Agent SDK does)
/// with `prompt`, waiting up to `deadline` for it to exit; everything it started is killed after.
/// `None` means the test should be skipped (the reason is printed).
pub fn run_headless(
    opts: ClaudeOpts,
    how: Headless,
    prompt: &str,
    deadline: Duration,
) -> Option<HeadlessRun> {
    use std::io::{BufRead, BufReader, Read, Write};
    let head: Vec<String> = match how {
        Headless::Text => vec!["-p".into(), prompt.into()],
        Headless::AgentSdk => Vec::new(),
        Headless::StreamJson => [
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        .map(String::from)
        .to_vec(),
    };
    let plugin = opts.plugin_dirs.first().cloned();
    let p = Prepared::new(opts, &head)?;
    let mut cmd = match how {
        Headless::AgentSdk => {
            let python = crate::workers::peers_dir().join("venv-sdk/bin/python");
            if !python.exists() {
                skip(&format!(
                    "Agent SDK test: {} missing — run tests/peers/setup.sh",
                    python.display()
                ));
                return None;
            }
            let driver = crate::workers::repo().join("tests/peers/sdk_driver.py");
            let mut c = Command::new(python);
            c.arg(driver)
                .arg(plugin.expect("the plugin dir the SDK loads"))
                .arg(prompt);
            c
        }
        Headless::Text | Headless::StreamJson => {
            let mut c = Command::new(which("claude").expect("checked above"));
            c.args(&p.args);
            c
        }
    };
    cmd.current_dir(&p.cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    scrub_env(&mut cmd);
    cmd.envs(p.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn claude -p");
    let mut stdin = child.stdin.take();
    if how == Headless::StreamJson {
        let msg = json!({"type": "user", "message": {"role": "user", "content": prompt}});
        let w = stdin.as_mut().expect("stdin");
        writeln!(w, "{msg}").expect("write the user message");
        w.flush().expect("flush");
    } else {
        stdin = None;
    }
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let out = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut err = child.stderr.take().expect("stderr");
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let mut stdout = String::new();
    let status = loop {
        while let Ok(line) = rx.try_recv() {
            // The SDK closes its input once it has the answer; the run then ends.
            if line.contains("\"type\":\"result\"") {
                stdin = None;
            }
            stdout.push_str(&line);
            stdout.push('\n');
        }
        if let Some(st) = child.try_wait().expect("wait for claude -p") {
            break st.code();
        }
        if started.elapsed() >= deadline {
            let left = tagged_pids(&p.tag);
            for pid in left {
                a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
            }
            let _ = child.wait();
            panic!("claude -p still running after {deadline:?}; stdout so far:\n{stdout}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(stdin);
    let took = started.elapsed();
    let _ = reader.join();
    while let Ok(line) = rx.try_recv() {
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let stderr = err_reader.join().unwrap_or_default();
    // Whatever it left behind (a poller still polling a task the run gave up on).
    for pid in tagged_pids(&p.tag) {
        a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
    }
    Some(HeadlessRun {
        home: p.home,
        status,
        stdout,
        stderr,
        took,
    })
}

/// The prompt box is drawn: `❯` at the start of a line plus the footer hint or mode line.
pub fn is_ready(pane: &str) -> bool {
    pane.lines().any(|l| l.trim_start().starts_with('❯'))
}

/// Drops whatever the test process inherited that would change Claude Code's behaviour: our own
/// Claude Code session (when tests run inside one), real credentials, and an enclosing tmux.
fn scrub_env(cmd: &mut Command) {
    for (k, _) in std::env::vars_os() {
        let Some(k) = k.to_str() else { continue };
        if k.starts_with("CLAUDE")
            || k.starts_with("ANTHROPIC")
            || k.starts_with("TMUX")
            || k == "A2A_MOD_HOME"
            || k == TAG_VAR
        {
            cmd.env_remove(k);
        }
    }
}

fn write_claude_json(home: &Path, cwd: &Path, version: &str) {
    let key_tail: String = {
        let chars: Vec<char> = FAKE_API_KEY.chars().collect();
        chars[chars.len() - 20..].iter().collect()
    };
    // Merged into whatever a test seeded (e.g. user-scope `mcpServers`), our keys winning.
    let path = home.join(".claude.json");
    let mut cfg: Value = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let ours = json!({
        "hasCompletedOnboarding": true,
        "lastOnboardingVersion": version,
        "theme": "dark",
        "autoUpdates": false,
        "customApiKeyResponses": {"approved": [key_tail], "rejected": []},
    });
    for (k, v) in ours.as_object().expect("object") {
        cfg[k] = v.clone();
    }
    if !cfg["projects"].is_object() {
        cfg["projects"] = json!({});
    }
    let project = &mut cfg["projects"][path_str(cwd)];
    if !project.is_object() {
        *project = json!({"allowedTools": []});
    }
    project["hasTrustDialogAccepted"] = json!(true);
    project["hasCompletedProjectOnboarding"] = json!(true);
    write_json(&path, &cfg);
}

fn write_json(path: &Path, v: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(v).expect("json"))
        .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
}

fn path_str(p: &Path) -> String {
    p.to_str()
        .unwrap_or_else(|| panic!("non-UTF-8 path {}", p.display()))
        .to_owned()
}

/// `pid cmdline` of each, for diagnostics.
fn describe(pids: &[u32]) -> String {
    pids.iter()
        .map(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            format!("{pid} {}", cmd.trim())
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// Live (non-zombie) processes whose environment holds `TAG_VAR=tag`.
fn tagged_pids(tag: &str) -> Vec<u32> {
    let needle = format!("{TAG_VAR}={tag}");
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}
