//! `config.toml`: workers, `[timing]`, `[streaming]`, `[statusline]`, … (docs/commands-and-tools.md). Read strictly: an unknown
//! key or a bad value is a one-line error naming the key and the file. Written surgically through
//! `toml_edit`, so a user's comments and order survive `worker add`/`remove`; always 0600, because
//! it names where secrets come from.

use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub workers: BTreeMap<String, WorkerConfig>,
    pub timing: Timing,
    pub statusline: StatuslineConfig,
    pub headless: HeadlessConfig,
    /// `[asks]`: who answers a worker's permission question.
    pub asks: AsksConfig,
    pub claude: ClaudeConfig,
    pub results: ResultsConfig,
    pub files: FilesConfig,
    /// `[streaming]`: what it sets is applied to `timing` (`Config::parse`), where the code reads it.
    pub streaming: StreamingConfig,
    /// `[serve]`: `a2a-mod serve`, this machine as a worker (docs/serve.md).
    pub serve: ServeConfig,
    /// One line per deprecated key the file still uses (logged by `Config::load`, shown by
    /// `doctor`).
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// `[streaming]`: a worker's SSE streams. These keys were under `[timing]` at first, and are
/// still read there, with a deprecation note.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamingConfig {
    /// `false`: never use a worker's stream, only polls (`Timing::streaming`).
    pub enabled: Option<bool>,
    /// `Timing::max_streams_per_worker`.
    pub max_streams_per_worker: Option<usize>,
}

/// The streaming keys as `[timing]` used to hold them, read only to apply and name them.
#[derive(Debug, Default, Deserialize)]
struct OldKeys {
    #[serde(default)]
    timing: OldTiming,
}

#[derive(Debug, Default, Deserialize)]
struct OldTiming {
    streaming: Option<bool>,
    max_streams_per_worker: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerConfig {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bearer_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_header: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_cmd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthConfig>,
    /// AWS Signature Version 4 on every request (`worker add --aws-sigv4`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_sigv4: Option<AwsSigV4Config>,
    /// Google Application Default Credentials (`worker add --google`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub google: Option<GoogleConfig>,
    /// Force a protocol version ("1.0" or "0.3") instead of reading it from the card.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Origins besides `url`'s that the card may send requests (and credentials) to, as
    /// `scheme://host[:port]` (`worker add --allow-origin`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow_origins: Vec<String>,
    /// Who answers this worker's permission questions (`[asks] approvals` when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approvals: Option<Approvals>,
    /// A2A extensions a2a-mod asks this worker to use, sent with every request as
    /// `A2A-Extensions` (`X-A2A-Extensions` to v0.3 workers) (`worker add --extension`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Files holding the public keys the card's signatures are checked with: PEM, JWK or JWK
    /// set (`worker add --card-key`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub card_keys: Vec<String>,
    /// Refuse the worker when no signature of its card holds (`--require-signed-card`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_signed_card: bool,
}

/// `aws_sigv4 = { region = "...", service = "..." }`; both optional (the region then comes from
/// `AWS_REGION` or the host, the service is `bedrock-agentcore`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AwsSigV4Config {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
}

/// `google = { audience = "..." }`: an ID token for `audience` (default: the worker's origin), or
/// an access token when the worker is on `*.googleapis.com`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GoogleConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audience: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    pub client_id: String,
    pub client_secret_env: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

/// The seed's numbers (docs/how-it-works.md) are the defaults; tests shorten them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timing {
    /// Gaps between the inline window's GetTask calls: 0.5, 1, 2, 4 s after the send.
    pub inline_polls_s: Vec<f64>,
    pub poll_interval_s: f64,
    pub poll_timeout_s: f64,
    pub max_failed_polls: u32,
    pub done_display_s: f64,
    /// Use a worker's SSE stream when its card offers one; polling stays the safety net either
    /// way. `false`: plain calls only. Set as `[streaming] enabled` (the `[timing]` key is the
    /// old spelling).
    pub streaming: bool,
    /// The background poller's subscriptions (`SubscribeToTask`) open at once to one streaming
    /// worker; its other tasks are polled only. Each holds a connection open, and a browser's
    /// six per host is the usual courtesy; 16 covers the tasks a session keeps live at once.
    /// 0: the poller never subscribes (inline streaming is `streaming`'s).
    pub max_streams_per_worker: usize,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            inline_polls_s: vec![0.5, 1.0, 2.0, 4.0],
            poll_interval_s: 5.0,
            poll_timeout_s: 15.0,
            max_failed_polls: 6,
            done_display_s: 5.0,
            streaming: true,
            max_streams_per_worker: 16,
        }
    }
}

impl Timing {
    pub fn inline_gaps(&self) -> Vec<Duration> {
        self.inline_polls_s.iter().map(|s| secs(*s)).collect()
    }
    pub fn poll_interval(&self) -> Duration {
        secs(self.poll_interval_s)
    }
    pub fn poll_timeout(&self) -> Duration {
        secs(self.poll_timeout_s)
    }
    pub fn done_display_ms(&self) -> i64 {
        (self.done_display_s * 1000.0) as i64
    }

    fn validate(&self) -> Result<()> {
        let ok = |v: f64| (0.0..=86_400.0).contains(&v);
        if let Some(v) = self.inline_polls_s.iter().find(|v| !ok(**v)) {
            return Err(anyhow!(
                "timing.inline_polls_s: {v} is not a number of seconds between 0 and 86400"
            ));
        }
        for (k, v) in [
            ("poll_interval_s", self.poll_interval_s),
            ("poll_timeout_s", self.poll_timeout_s),
            ("done_display_s", self.done_display_s),
        ] {
            if !ok(v) {
                return Err(anyhow!(
                    "timing.{k}: {v} is not a number of seconds between 0 and 86400"
                ));
            }
        }
        if self.poll_interval_s < 0.05 {
            return Err(anyhow!("timing.poll_interval_s: must be at least 0.05"));
        }
        if self.max_failed_polls == 0 {
            return Err(anyhow!("timing.max_failed_polls: must be at least 1"));
        }
        Ok(())
    }
}

/// Seconds from config as a `Duration`; `Duration::from_secs_f64` panics on negative or NaN, and
/// config is validated, but this never panics whatever it is given.
#[expect(
    clippy::disallowed_methods,
    reason = "the guarded wrapper clippy.toml points to"
)]
pub fn secs(s: f64) -> Duration {
    if s.is_finite() && s > 0.0 {
        Duration::from_secs_f64(s.min(1e9))
    } else {
        Duration::ZERO
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatuslineConfig {
    pub theme: String,
    pub animations: bool,
}

impl Default for StatuslineConfig {
    fn default() -> Self {
        StatuslineConfig {
            theme: "default".into(),
            animations: true,
        }
    }
}

/// `[asks]`: who answers a worker's question that is a permission (a served run's "Claude wants
/// to run Bash: …"): a person by default, never the model alone (docs/commands-and-tools.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AsksConfig {
    pub approvals: Approvals,
}

/// Who answers a worker's permission question.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Approvals {
    /// The person at the session (`a2a-mod approve`); with nobody there (`claude -p`, the Agent
    /// SDKs) it is denied, saying so.
    #[default]
    Person,
    /// Claude answers it: another machine's command approved by a model (a documented risk).
    Claude,
    /// Always denied.
    Deny,
}

/// `[headless]`: `claude -p` and Agent SDK runs, where the Stop hook waits for live tasks.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HeadlessConfig {
    /// How long one Stop hook waits for a batch to end; below the hook's `timeout` (3600 s in
    /// hooks/hooks.json), so the hook answers before Claude Code kills it and drops its output.
    pub max_wait_s: f64,
}

impl Default for HeadlessConfig {
    fn default() -> Self {
        HeadlessConfig { max_wait_s: 1800.0 }
    }
}

impl HeadlessConfig {
    pub fn max_wait(&self) -> Duration {
        secs(self.max_wait_s)
    }
}

/// `[claude]`: what a2a-mod uses of Claude Code's own features.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaudeConfig {
    /// Answer a `send` that outlives its inline window with an MCP task, which Claude Code
    /// follows itself (its task panel, its own wake-up), where a call offers them: interactive
    /// sessions only (docs/claude-code.md "Native MCP tasks"). Off, or not offered: the monitor
    /// wakes Claude as ever.
    pub native_tasks: bool,
}

/// `[results]`: what workers send back, saved under `state/results/<session>/`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultsConfig {
    /// Bytes of files and data one task may save, in MiB; parts past it are listed as dropped.
    pub max_task_mib: f64,
    /// `tasks --prune` (and `doctor`'s offer) remove the results of sessions idle this long.
    pub keep_days: f64,
}

impl Default for ResultsConfig {
    fn default() -> Self {
        ResultsConfig {
            max_task_mib: 64.0,
            keep_days: 30.0,
        }
    }
}

/// `[files]`: which local files `send` may read and send as file parts. Only files
/// inside the project directory (`CLAUDE_PROJECT_DIR`, else the working directory) or one of
/// `allow_dirs` are read, each at most `max_file_mib`, all of one send at most `max_send_mib`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FilesConfig {
    /// Directories besides the project directory whose files may be sent (absolute, or `~/…`).
    pub allow_dirs: Vec<String>,
    pub max_file_mib: f64,
    pub max_send_mib: f64,
}

impl Default for FilesConfig {
    fn default() -> Self {
        FilesConfig {
            allow_dirs: Vec::new(),
            max_file_mib: 10.0,
            max_send_mib: 25.0,
        }
    }
}

impl ResultsConfig {
    pub fn max_task_bytes(&self) -> u64 {
        (self.max_task_mib * 1024.0 * 1024.0) as u64
    }
    pub fn keep(&self) -> Duration {
        secs(self.keep_days * 86_400.0)
    }
}

impl FilesConfig {
    pub fn max_file_bytes(&self) -> u64 {
        mib(self.max_file_mib)
    }
    pub fn max_send_bytes(&self) -> u64 {
        mib(self.max_send_mib)
    }

    fn validate(&self) -> Result<()> {
        for (k, v) in [
            ("max_file_mib", self.max_file_mib),
            ("max_send_mib", self.max_send_mib),
        ] {
            if !(v.is_finite() && (0.0..=4096.0).contains(&v)) {
                return Err(anyhow!(
                    "files.{k}: {v} is not a number of MiB between 0 and 4096"
                ));
            }
        }
        for d in &self.allow_dirs {
            if !(Path::new(d).is_absolute() || d.starts_with("~/")) {
                return Err(anyhow!(
                    "files.allow_dirs: {d:?} is not an absolute path (or one starting with ~/)"
                ));
            }
        }
        Ok(())
    }
}

/// `[serve]`: the A2A server `a2a-mod serve` runs (docs/serve.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// `ADDR:PORT` to listen on (`--listen` wins); loopback unless a token is set.
    pub listen: Option<String>,
    /// Variables holding the bearer tokens clients must present, read at start (`--token-env`
    /// adds to them).
    pub token_envs: Vec<String>,
    /// Runs at once over all agents; more wait in the queue as `submitted`.
    pub max_concurrent: usize,
    /// Tasks waiting for a run at most; one more is refused with an A2A error (never dropped).
    pub max_queued: usize,
    /// The largest request body, in MiB.
    pub max_body_mib: f64,
    /// A canceled run's grace after SIGTERM before SIGKILL, in seconds.
    pub cancel_grace_s: f64,
    /// Tasks one token (one client: `local` without tokens) may have at once, running, waiting
    /// for a slot or asking; one more is refused with an A2A error. Unset: only `max_queued`
    /// bounds them.
    pub per_token_max_concurrent: Option<usize>,
    /// What one token's tasks may cost in a day (UTC), in USD, from the runs' own cost: once
    /// reached, its sends are refused with an A2A error until the day turns (0 refuses all).
    pub per_token_daily_usd: Option<f64>,
    /// Host names besides serve's own (the bound address; `localhost`, `127.0.0.1` and `[::1]`
    /// on a loopback listen; the machine's name and the address a client reached on a wildcard
    /// one) that a request's `Host` may name: a reverse proxy's or a LAN name. Any other `Host`
    /// is refused, which is what stops a DNS-rebinding page (docs/serve.md "Safe by default").
    pub allowed_hosts: Vec<String>,
    /// Browser origins (`https://app.example.com`) allowed to call serve; a request that
    /// carries any other `Origin`, or `Sec-Fetch-Site: cross-site`, is refused. Empty by
    /// default: A2A clients send no `Origin`, web pages do.
    pub allowed_origins: Vec<String>,
    /// Connections open at once; more wait in the listen queue until one closes.
    pub max_connections: usize,
    /// How long a client may take to send a request's headers, and how long a kept-alive
    /// connection may sit idle waiting for its next request, in seconds.
    pub header_timeout_s: f64,
    /// How long a response (a stream above all) may wait for its reader to take bytes before
    /// the connection is closed, in seconds; the task goes on.
    pub send_timeout_s: f64,
    /// Readers one task's event stream may have at once (subscribers and its own stream).
    pub max_streams_per_task: usize,
    /// Event streams open at once over all tasks.
    pub max_streams: usize,
    /// On SIGTERM, how long running tasks get to end by themselves before their runs are
    /// stopped (and end `failed`), in seconds.
    pub stop_grace_s: f64,
    /// Whether push notification webhooks may be on loopback, private and link-local addresses
    /// (127.0.0.1, 10.x, 192.168.x, 169.254.x, `localhost`…). Off by default: a client could
    /// otherwise make this machine POST into its own network. serve's own port is never one.
    pub push_allow_private: bool,
    pub agents: BTreeMap<String, ServeAgentConfig>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            listen: None,
            token_envs: Vec::new(),
            max_concurrent: 2,
            max_queued: 256,
            max_body_mib: 16.0,
            cancel_grace_s: 3.0,
            per_token_max_concurrent: None,
            per_token_daily_usd: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            max_connections: 512,
            header_timeout_s: 10.0,
            send_timeout_s: 30.0,
            max_streams_per_task: 64,
            max_streams: 256,
            stop_grace_s: 10.0,
            push_allow_private: false,
            agents: BTreeMap::new(),
        }
    }
}

/// `[serve.agents.<name>]`: one agent, one card, its tasks Claude Code runs in `dir` (or, with
/// `exec`, a command of the user's).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeAgentConfig {
    /// Where its runs work (absolute, or `~/…`); default: serve's working directory.
    pub dir: Option<String>,
    /// A command run per task instead of Claude Code (the program, then its arguments): the
    /// message on its stdin, its stdout the answer (`codex exec`, `gemini -p`, a script).
    pub exec: Option<Vec<String>>,
    pub description: Option<String>,
    /// `--model` of each run.
    pub model: Option<String>,
    /// `--allowedTools` of each run (Claude Code's rule syntax, e.g. `Bash(cargo test:*)`).
    pub allowed_tools: Vec<String>,
    /// `--permission-mode`: Claude Code's own default unless named; `bypassPermissions` only
    /// when written here.
    pub permission_mode: Option<String>,
    /// `--max-budget-usd` of each run.
    pub max_budget_usd: Option<f64>,
    /// `--append-system-prompt` of each run.
    pub append_system_prompt: Option<String>,
    /// How long a permission prompt or a question of a run waits for the client's answer
    /// before it is denied, in seconds (default [`ServeAgentConfig::ASK_TIMEOUT_S`]).
    pub ask_timeout_s: Option<f64>,
}

impl ServeAgentConfig {
    /// A question's wait when `ask_timeout_s` is unset: long enough for a client's Claude to be
    /// woken, read it and answer; short enough that a forgotten one frees its run.
    pub const ASK_TIMEOUT_S: f64 = 600.0;

    pub fn ask_timeout(&self) -> std::time::Duration {
        // Validated to 1..=86400 s; anything else read as the default.
        std::time::Duration::try_from_secs_f64(self.ask_timeout_s.unwrap_or(Self::ASK_TIMEOUT_S))
            .unwrap_or(std::time::Duration::from_secs(600))
    }

    /// `dir` as a path, `~/` read as the home directory; `None` when unset (serve's own folder).
    pub fn dir_path(&self) -> Option<std::path::PathBuf> {
        let d = self.dir.as_deref()?;
        Some(match (d.strip_prefix("~/"), a2a_mod_os::env::home_dir()) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => std::path::PathBuf::from(d),
        })
    }
}

/// Claude Code's permission modes (`claude --help`, 2.1.332), and `default`: no
/// `--permission-mode` at all, so Claude Code's own default holds.
pub const PERMISSION_MODES: [&str; 7] = [
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "default",
    "dontAsk",
    "manual",
    "plan",
];

impl ServeConfig {
    pub fn max_body_bytes(&self) -> u64 {
        mib(self.max_body_mib)
    }

    /// The connection, stream and browser-guard keys ("Safe by default" in docs/serve.md).
    fn validate_guards(&self) -> Result<()> {
        for (key, v, max) in [
            ("header_timeout_s", self.header_timeout_s, 3600.0),
            ("send_timeout_s", self.send_timeout_s, 3600.0),
            ("stop_grace_s", self.stop_grace_s, 3600.0),
        ] {
            if !(v.is_finite() && v > 0.0 && v <= max) {
                return Err(anyhow!(
                    "serve.{key}: must be a number of seconds above 0 and at most {max}"
                ));
            }
        }
        for (key, v) in [
            ("max_connections", self.max_connections),
            ("max_streams_per_task", self.max_streams_per_task),
            ("max_streams", self.max_streams),
        ] {
            if v == 0 {
                return Err(anyhow!("serve.{key}: must be 1 or more"));
            }
        }
        for h in &self.allowed_hosts {
            if h.is_empty() || h.contains(['/', ' ', '@']) {
                return Err(anyhow!(
                    "serve.allowed_hosts: {h:?} is not a host name — write it as `host` or `host:port`, e.g. \"build.lan\""
                ));
            }
        }
        for o in &self.allowed_origins {
            let ok = (o.starts_with("http://") || o.starts_with("https://"))
                && !o.trim_end_matches('/').contains(['?', '#'])
                && o.split("://")
                    .nth(1)
                    .is_some_and(|h| !h.trim_end_matches('/').contains('/'));
            if !ok {
                return Err(anyhow!(
                    "serve.allowed_origins: {o:?} is not an origin — write scheme://host[:port], e.g. \"https://app.example.com\""
                ));
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<()> {
        if !(self.max_body_mib.is_finite() && (0.01..=4096.0).contains(&self.max_body_mib)) {
            return Err(anyhow!(
                "serve.max_body_mib: {} is not a number of MiB between 0.01 and 4096",
                self.max_body_mib
            ));
        }
        if !(self.cancel_grace_s.is_finite() && (0.0..=600.0).contains(&self.cancel_grace_s)) {
            return Err(anyhow!(
                "serve.cancel_grace_s: must be a number of seconds from 0 to 600"
            ));
        }
        if self.max_concurrent == 0 {
            return Err(anyhow!("serve.max_concurrent: must be 1 or more"));
        }
        self.validate_guards()?;
        if self.per_token_max_concurrent == Some(0) {
            return Err(anyhow!("serve.per_token_max_concurrent: must be 1 or more"));
        }
        if let Some(b) = self.per_token_daily_usd
            && !(b.is_finite() && b >= 0.0)
        {
            return Err(anyhow!(
                "serve.per_token_daily_usd: must be a number of dollars, 0 or more (0 refuses every task)"
            ));
        }
        for (name, a) in &self.agents {
            validate_alias(name).map_err(|e| anyhow!("serve.agents.{name}: {e}"))?;
            if let Some(d) = &a.dir
                && !(Path::new(d).is_absolute() || d.starts_with("~/"))
            {
                return Err(anyhow!(
                    "serve.agents.{name}.dir: {d:?} is not an absolute path (or one starting with ~/)"
                ));
            }
            if let Some(m) = &a.permission_mode
                && !PERMISSION_MODES.contains(&m.as_str())
            {
                return Err(anyhow!(
                    "serve.agents.{name}.permission_mode: {m:?} is not one of {}",
                    PERMISSION_MODES.join(", ")
                ));
            }
            if let Some(t) = a.ask_timeout_s
                && !(t.is_finite() && (1.0..=86_400.0).contains(&t))
            {
                return Err(anyhow!(
                    "serve.agents.{name}.ask_timeout_s: must be a number of seconds from 1 to 86400"
                ));
            }
            if let Some(b) = a.max_budget_usd
                && !(b.is_finite() && b > 0.0)
            {
                return Err(anyhow!(
                    "serve.agents.{name}.max_budget_usd: must be a positive number of dollars"
                ));
            }
            if let Some(cmd) = &a.exec {
                if cmd.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(anyhow!(
                        "serve.agents.{name}.exec: name the command, e.g. exec = [\"codex\", \"exec\"]"
                    ));
                }
                let claude_only = [
                    ("model", a.model.is_some()),
                    ("allowed_tools", !a.allowed_tools.is_empty()),
                    ("permission_mode", a.permission_mode.is_some()),
                    ("max_budget_usd", a.max_budget_usd.is_some()),
                    ("append_system_prompt", a.append_system_prompt.is_some()),
                    ("ask_timeout_s", a.ask_timeout_s.is_some()),
                ];
                if let Some((key, _)) = claude_only.iter().find(|(_, set)| *set) {
                    return Err(anyhow!(
                        "serve.agents.{name}: {key} is for Claude Code runs, and exec runs a command of its own — drop one of them"
                    ));
                }
            }
        }
        Ok(())
    }
}

/// MiB from config as bytes; validated to 0..=4096, so the cast neither wraps nor saturates.
fn mib(v: f64) -> u64 {
    (v.clamp(0.0, 4096.0) * 1024.0 * 1024.0) as u64
}

impl Config {
    /// `[streaming]` onto `timing`, after the old `[timing]` spellings (each with its note).
    fn apply_streaming(&mut self, text: &str) {
        let old = toml_edit::de::from_str::<OldKeys>(text)
            .map(|o| o.timing)
            .unwrap_or_default();
        let mut note = |old_key: &str, new_key: &str| {
            self.notes.push(format!(
                "timing.{old_key} is deprecated — write it as {new_key} under [streaming]"
            ));
        };
        if old.streaming.is_some() {
            note("streaming", "enabled");
        }
        if old.max_streams_per_worker.is_some() {
            note("max_streams_per_worker", "max_streams_per_worker");
        }
        if let Some(on) = self.streaming.enabled {
            self.timing.streaming = on;
        }
        if let Some(n) = self.streaming.max_streams_per_worker {
            self.timing.max_streams_per_worker = n;
        }
    }

    /// A missing file is an empty config; a bad one is an error naming the file and the key.
    pub fn load(path: &Path) -> Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", quote_path(path))),
        };
        let cfg = Config::parse(&text).map_err(|e| {
            anyhow!(
                "bad config {}: {e} — fix or remove that key",
                quote_path(path)
            )
        })?;
        for n in &cfg.notes {
            tracing::warn!("config {}: {n}", quote_path(path));
        }
        Ok(cfg)
    }

    pub fn parse(text: &str) -> Result<Config> {
        let mut cfg: Config =
            toml_edit::de::from_str(text).map_err(|e| anyhow!(toml_error_line(&e.to_string())))?;
        // Only a file that names streaming at all is read a second time for the old keys.
        if text.contains("stream") {
            cfg.apply_streaming(text);
        }
        cfg.timing.validate()?;
        cfg.files.validate()?;
        cfg.serve.validate()?;
        if !(cfg.headless.max_wait_s.is_finite() && cfg.headless.max_wait_s >= 0.0) {
            return Err(anyhow!(
                "headless.max_wait_s: must be a number of seconds, 0 or more"
            ));
        }
        for (k, v, max) in [
            ("max_task_mib", cfg.results.max_task_mib, 1e6),
            ("keep_days", cfg.results.keep_days, 1e5),
        ] {
            if !(v.is_finite() && (0.0..=max).contains(&v)) {
                return Err(anyhow!("results.{k}: must be a number from 0 to {max}"));
            }
        }
        for (alias, w) in &cfg.workers {
            validate_alias(alias).map_err(|e| anyhow!("workers.{alias}: {e}"))?;
            validate_url(&w.url).map_err(|e| anyhow!("workers.{alias}.url: {e}"))?;
            let auths = [
                w.bearer_env.is_some(),
                w.api_key_env.is_some(),
                w.token_cmd.is_some(),
                w.oauth.is_some(),
                w.aws_sigv4.is_some(),
                w.google.is_some(),
            ];
            if auths.iter().filter(|b| **b).count() > 1 {
                return Err(anyhow!(
                    "workers.{alias}: more than one of bearer_env, api_key_env, token_cmd, oauth, aws_sigv4, google"
                ));
            }
            if let Some(a) = &w.aws_sigv4 {
                a.validate()
                    .map_err(|e| anyhow!("workers.{alias}.aws_sigv4.{e}"))?;
            }
            if let Some(aud) = w.google.as_ref().and_then(|g| g.audience.as_deref()) {
                validate_audience(aud)
                    .map_err(|e| anyhow!("workers.{alias}.google.audience: {e}"))?;
            }
            for o in &w.allow_origins {
                validate_url(o).map_err(|e| anyhow!("workers.{alias}.allow_origins: {e}"))?;
            }
            for e in &w.extensions {
                validate_extension(e).map_err(|e| anyhow!("workers.{alias}.extensions: {e}"))?;
            }
            if let Some(u) = w.oauth.as_ref().and_then(|o| o.token_url.as_deref()) {
                validate_url(u).map_err(|e| anyhow!("workers.{alias}.oauth.token_url: {e}"))?;
            }
            if let Some(p) = &w.protocol
                && p != "1.0"
                && p != "0.3"
            {
                return Err(anyhow!(
                    "workers.{alias}.protocol: {p:?} is not \"1.0\" or \"0.3\""
                ));
            }
        }
        Ok(cfg)
    }

    /// Who answers `alias`'s permission questions.
    pub fn approvals(&self, alias: &str) -> Approvals {
        self.workers
            .get(alias)
            .and_then(|w| w.approvals)
            .unwrap_or(self.asks.approvals)
    }

    pub fn worker(&self, alias: &str) -> Result<&WorkerConfig> {
        self.workers.get(alias).ok_or_else(|| {
            anyhow!("worker {alias:?} not found — run `a2a-mod worker list`, or add it with `a2a-mod worker add {alias} <url>`")
        })
    }
}

pub fn validate_alias(alias: &str) -> Result<()> {
    if alias.is_empty()
        || alias.len() > 64
        || !alias
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(anyhow!(
            "alias {alias:?} must be 1-64 letters, digits, '-', '_' or '.'"
        ));
    }
    Ok(())
}

/// A Google ID token's audience as it goes in a JWT claim: printable, no spaces, bounded.
pub fn validate_audience(aud: &str) -> Result<()> {
    if aud.is_empty() || aud.len() > 512 || !aud.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(anyhow!(
            "{aud:?} is not an audience: give the service's URL (e.g. https://agent-xyz.a.run.app) or its custom audience, 1-512 printable characters without spaces"
        ));
    }
    Ok(())
}

impl AwsSigV4Config {
    /// The region and service as they go in a signature's scope; an error starts with the key
    /// at fault (`region: …`), for the caller to prefix with where it was set.
    pub fn validate(&self) -> Result<()> {
        for (k, v) in [("region", &self.region), ("service", &self.service)] {
            if let Some(v) = v {
                validate_aws_name(v).map_err(|e| anyhow!("{k}: {e}"))?;
            }
        }
        Ok(())
    }
}

/// An AWS region or service name as it goes in a signature's scope: 1-64 lowercase letters,
/// digits and '-'.
fn validate_aws_name(name: &str) -> Result<()> {
    if !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Ok(());
    }
    let shown: String = name.chars().filter(|c| !c.is_control()).take(80).collect();
    Err(anyhow!(
        "{shown:?} is not an AWS name (lowercase letters, digits and '-', such as us-east-1)"
    ))
}

/// An A2A extension's URI as it can go in a header list: a URI with a scheme, of at most 512
/// visible ASCII characters, none of them a comma (the list's separator), a quote or a space.
pub fn validate_extension(uri: &str) -> Result<()> {
    let plain = !uri.is_empty()
        && uri.len() <= 512
        && uri
            .bytes()
            .all(|b| b.is_ascii_graphic() && !matches!(b, b',' | b'"' | b'\\'));
    if plain && url::Url::parse(uri).is_ok() {
        return Ok(());
    }
    let shown: String = uri.chars().filter(|c| !c.is_control()).take(80).collect();
    Err(anyhow!(
        "{shown:?} is not an extension URI (a URI such as https://example.com/ext/v1, no spaces or commas)"
    ))
}

/// An http(s) URL with a host and no user name or password. A URL's userinfo is a secret sent as
/// Basic auth and shown wherever the URL is, so it is refused and never echoed back.
pub fn validate_url(url: &str) -> Result<()> {
    match url::Url::parse(url) {
        Ok(u) if has_userinfo(&u) => Err(anyhow!(
            "{:?} has a user name or password in it; a2a-mod takes secrets only from the \
             environment, a command or a provider (bearer_env, api_key_env, token_cmd, oauth, aws_sigv4, google)",
            without_userinfo(&u)
        )),
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(u) => Err(anyhow!("{:?} is not an http(s) URL", without_userinfo(&u))),
        // The parser failed, so the userinfo cannot be cut out reliably: the text is not shown
        // when it may hold one.
        Err(e) if url.contains('@') => Err(anyhow!("the URL is not a URL ({e})")),
        Err(e) => Err(anyhow!("{url:?} is not a URL ({e})")),
    }
}

pub fn has_userinfo(u: &url::Url) -> bool {
    !u.username().is_empty() || u.password().is_some()
}

/// `u` as it may be shown: user name and password cut out (`http://***@host/` keeps the fact).
pub fn without_userinfo(u: &url::Url) -> String {
    if !has_userinfo(u) {
        return u.to_string();
    }
    let mut c = u.clone();
    // Both setters fail only for URLs that cannot have userinfo at all (no host), and those
    // have none to hide.
    let _ = c.set_password(None);
    let _ = c.set_username("***");
    c.to_string()
}

/// Adds or replaces `[workers.<alias>]`, keeping the rest of the file (comments included).
pub fn save_worker(path: &Path, alias: &str, w: &WorkerConfig) -> Result<()> {
    let mut doc = load_doc(path)?;
    let value = toml_edit::ser::to_document(w)
        .map_err(|e| anyhow!("cannot write worker {alias:?}: {e}"))?;
    let workers = doc
        .entry("workers")
        .or_insert_with(|| {
            let mut t = toml_edit::Table::new();
            t.set_implicit(true);
            toml_edit::Item::Table(t)
        })
        .as_table_mut()
        .ok_or_else(|| {
            anyhow!(
                "bad config {}: `workers` is not a table — fix it by hand",
                quote_path(path)
            )
        })?;
    let mut table = value.as_table().clone();
    table.set_implicit(false);
    workers.insert(alias, toml_edit::Item::Table(table));
    save_doc(path, &doc)
}

/// Removes `[workers.<alias>]`; false when there was none.
pub fn remove_worker(path: &Path, alias: &str) -> Result<bool> {
    let mut doc = load_doc(path)?;
    let removed = doc
        .get_mut("workers")
        .and_then(|w| w.as_table_like_mut())
        .and_then(|t| t.remove(alias))
        .is_some();
    if removed {
        save_doc(path, &doc)?;
    }
    Ok(removed)
}

fn load_doc(path: &Path) -> Result<toml_edit::DocumentMut> {
    // Parse strictly first so a broken file is refused untouched rather than rewritten.
    Config::load(path)?;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", quote_path(path))),
    };
    text.parse::<toml_edit::DocumentMut>().map_err(|e| {
        anyhow!(
            "bad config {}: {} — fix it by hand",
            quote_path(path),
            toml_error_line(&e.to_string())
        )
    })
}

fn save_doc(path: &Path, doc: &toml_edit::DocumentMut) -> Result<()> {
    a2a_mod_os::fsx::write_atomic(path, doc.to_string().as_bytes(), Some(0o600))
}

pub fn quote_path(p: &Path) -> String {
    format!("\"{}\"", p.display())
}

/// toml_edit's errors span several lines with a source excerpt; users get one line.
pub fn toml_error_line(s: &str) -> String {
    let mut parts: Vec<&str> = s
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with('|')
                && !l.starts_with("-->")
                && !l
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '|' || c == ' ' || c == '^')
        })
        .collect();
    parts.dedup();
    parts.join(": ").replace("TOML parse error at ", "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serve_agents_are_read_strictly() {
        let c = Config::parse(
            "[serve]\nlisten = \"0.0.0.0:8462\"\ntoken_envs = [\"T\"]\n[serve.agents.build]\ndir = \"/srv/app\"\nallowed_tools = [\"Read\", \"Bash(cargo test:*)\"]\npermission_mode = \"acceptEdits\"\nmax_budget_usd = 2.0\n",
        )
        .unwrap();
        assert_eq!(c.serve.max_concurrent, 2);
        let a = &c.serve.agents["build"];
        assert_eq!(a.allowed_tools, ["Read", "Bash(cargo test:*)"]);
        assert_eq!(a.permission_mode.as_deref(), Some("acceptEdits"));
        for (bad, why) in [
            (
                "[serve.agents.b]\npermission_mode = \"yolo\"\n",
                "permission_mode",
            ),
            ("[serve.agents.b]\ndir = \"rel/dir\"\n", "absolute"),
            ("[serve.agents.b]\nmax_budget_usd = 0\n", "positive"),
            ("[serve.agents.\"a b\"]\n", "serve.agents.a b"),
            ("[serve]\nmax_concurrent = 0\n", "max_concurrent"),
            (
                "[serve]\nper_token_max_concurrent = 0\n",
                "per_token_max_concurrent",
            ),
            ("[serve]\nper_token_daily_usd = -1\n", "0 or more"),
            ("[serve]\nheader_timeout_s = 0\n", "serve.header_timeout_s"),
            ("[serve]\nmax_streams = 0\n", "serve.max_streams"),
            (
                "[serve]\nallowed_hosts = [\"http://x\"]\n",
                "is not a host name",
            ),
            (
                "[serve]\nallowed_origins = [\"app.example.com\"]\n",
                "is not an origin",
            ),
            ("[serve.agents.b]\nask_timeout_s = 0\n", "ask_timeout_s"),
            (
                "[serve.agents.b]\nexec = [\"x\"]\nask_timeout_s = 5\n",
                "ask_timeout_s is for Claude Code runs",
            ),
            ("[serve.agents.b]\nmodle = \"x\"\n", "modle"),
            ("[serve.agents.b]\nexec = []\n", "name the command"),
            (
                "[serve.agents.b]\nexec = [\"sh\"]\nmodel = \"x\"\n",
                "model is for Claude Code runs",
            ),
        ] {
            let e = Config::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn defaults_are_the_seed() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.timing.inline_polls_s, [0.5, 1.0, 2.0, 4.0]);
        assert_eq!(c.timing.poll_interval_s, 5.0);
        assert_eq!(c.timing.poll_timeout_s, 15.0);
        assert_eq!(c.timing.max_failed_polls, 6);
        assert_eq!(c.timing.done_display_s, 5.0);
        assert_eq!(c.timing.max_streams_per_worker, 16);
        assert_eq!(c.statusline, StatuslineConfig::default());
    }

    #[test]
    fn streaming_has_its_own_section_and_the_old_keys_still_work() {
        let c =
            Config::parse("[streaming]\nenabled = false\nmax_streams_per_worker = 3\n").unwrap();
        assert_eq!(
            (c.timing.streaming, c.timing.max_streams_per_worker),
            (false, 3)
        );
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        let c = Config::parse("[timing]\nstreaming = false\nmax_streams_per_worker = 2\n").unwrap();
        assert_eq!(
            (c.timing.streaming, c.timing.max_streams_per_worker),
            (false, 2)
        );
        assert_eq!(
            c.notes,
            [
                "timing.streaming is deprecated — write it as enabled under [streaming]",
                "timing.max_streams_per_worker is deprecated — write it as max_streams_per_worker under [streaming]",
            ]
        );
        // Both: the new section wins.
        let c =
            Config::parse("[timing]\nstreaming = false\n[streaming]\nenabled = true\n").unwrap();
        assert!(c.timing.streaming);
        assert_eq!(c.notes.len(), 1);
        assert!(Config::parse("[streaming]\nenable = true\n").is_err());
        let d = Config::parse("").unwrap();
        assert_eq!(
            (d.timing.streaming, d.timing.max_streams_per_worker),
            (true, 16)
        );
    }

    #[test]
    fn claude_native_tasks() {
        assert!(!Config::parse("").unwrap().claude.native_tasks);
        assert!(
            Config::parse("[claude]\nnative_tasks = true\n")
                .unwrap()
                .claude
                .native_tasks
        );
        let e = Config::parse("[claude]\nnative_tasks = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("native_tasks"), "{e}");
    }

    #[test]
    fn headless_max_wait() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.headless.max_wait(), Duration::from_secs(1800));
        let c = Config::parse("[headless]\nmax_wait_s = 90\n").unwrap();
        assert_eq!(c.headless.max_wait(), Duration::from_secs(90));
        let e = Config::parse("[headless]\nmax_wait_s = -1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("headless.max_wait_s"), "{e}");
        assert!(Config::parse("[headless]\nmax_wait = 1\n").is_err());
    }

    #[test]
    fn files_caps() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.files.max_file_bytes(), 10 * 1024 * 1024);
        assert_eq!(c.files.max_send_bytes(), 25 * 1024 * 1024);
        let c = Config::parse("[files]\nmax_file_mib = 0.5\nallow_dirs = [\"/srv/x\"]\n").unwrap();
        assert_eq!(c.files.max_file_bytes(), 512 * 1024);
        assert_eq!(c.files.allow_dirs, ["/srv/x"]);
        let e = Config::parse("[files]\nmax_send_mib = -1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("files.max_send_mib"), "{e}");
        let e = Config::parse("[files]\nallow_dirs = [\"rel\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("files.allow_dirs"), "{e}");
    }

    #[test]
    fn unknown_key_is_named() {
        let e = Config::parse("[workers.fake]\nurl = \"http://x\"\ncolour = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour"), "{e}");
        assert!(!e.contains('\n'), "{e}");
        let e = Config::parse("[timing]\npoll_interval_s = -1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("poll_interval_s"), "{e}");
    }

    #[test]
    fn save_keeps_comments() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "# mine\n[timing]\npoll_interval_s = 1 # fast\n").unwrap();
        let w = WorkerConfig {
            url: "http://127.0.0.1:1".into(),
            bearer_env: Some("T".into()),
            ..Default::default()
        };
        save_worker(&p, "fake", &w).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.contains("# mine") && text.contains("# fast"), "{text}");
        let c = Config::load(&p).unwrap();
        assert_eq!(c.workers["fake"], w);
        assert!(remove_worker(&p, "fake").unwrap());
        assert!(Config::load(&p).unwrap().workers.is_empty());
        assert!(!remove_worker(&p, "fake").unwrap());
    }
}
