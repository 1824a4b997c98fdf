//! Every command-line type, and no logic; each command's `Run` is in
//! `src/cmd/<command>.rs`. The doors are docs/commands-and-tools.md's; extend them, never change them.

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "a2a-mod",
    version,
    about = "Hand work from Claude Code to remote A2A agents (workers), and be woken when it ends",
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Add, remove, list or show workers (remote A2A agents)
    #[command(subcommand)]
    Worker(WorkerCmd),
    /// Send a message to a worker; wait the inline window, then print the result or the task id
    Send(SendArgs),
    /// Fetch a task's state and result now (re-tracks a dropped live task)
    Task(TaskArgs),
    /// Cancel a task
    Cancel(CancelArgs),
    /// Answer a worker's pending permission question yourself: allow, always or deny (with a reason)
    Approve(ApproveArgs),
    /// List this session's tasks
    Tasks(TasksArgs),
    /// Run the embedded scripted A2A worker (for the demo and tests)
    FakeWorker(FakeWorkerArgs),
    /// Serve this machine's Claude Code as an A2A worker (its tasks are headless runs)
    Serve(ServeArgs),
    /// Show the whole loop with the embedded fake worker, no set-up needed
    Demo(DemoArgs),
    /// Register the Claude Code plugin, status line and permissions (or remove them)
    Install(InstallArgs),
    /// Check the set-up, one line per check, each failure with its fix
    Doctor(DoctorArgs),
    /// The MCP stdio server Claude Code starts (server name `a2a`)
    Mcp(McpArgs),
    /// Print the status line for the session named in Claude Code's JSON on stdin
    Statusline(StatuslineArgs),
    /// Claude Code hook entry points (JSON on stdin)
    Hook(HookArgs),
    /// The plugin's monitor: prints one line each time tasks of this session end
    Watch(WatchArgs),
    /// The background poller of one session (started by a2a-mod itself)
    #[command(hide = true)]
    Poller(PollerArgs),
}

#[derive(Debug, Subcommand)]
pub enum WorkerCmd {
    /// Add a worker: fetches its agent card first (unless --no-check)
    Add(Box<WorkerAddArgs>),
    /// Remove a worker; its live tasks stop being tracked and Claude is told
    Remove { alias: String },
    /// List the configured workers
    List {
        #[arg(long)]
        json: bool,
    },
    /// Show a worker's agent card: name, description, skills, protocol, auth
    Show {
        alias: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct WorkerAddArgs {
    pub alias: String,
    pub url: String,
    /// Send `Authorization: Bearer $VAR`
    #[arg(long, value_name = "VAR", group = "auth")]
    pub bearer_env: Option<String>,
    /// Send the API key in $VAR in a header
    #[arg(long, value_name = "VAR", group = "auth")]
    pub api_key_env: Option<String>,
    /// The API key header (default: the card's, else X-API-Key)
    #[arg(long, value_name = "H", requires = "api_key_env")]
    pub api_key_header: Option<String>,
    /// Bearer token = stdout of this command, cached until a 401/403
    #[arg(long, value_name = "CMD", group = "auth")]
    pub token_cmd: Option<String>,
    /// OAuth2 client credentials: the client id
    #[arg(long, value_name = "ID", group = "auth", requires = "oauth_secret_env")]
    pub oauth_client_id: Option<String>,
    /// OAuth2 client credentials: the env var holding the client secret
    #[arg(long, value_name = "VAR", requires = "oauth_client_id")]
    pub oauth_secret_env: Option<String>,
    /// OAuth2 token URL (default: the card's)
    #[arg(long, value_name = "URL", requires = "oauth_client_id")]
    pub oauth_token_url: Option<String>,
    /// OAuth2 scope
    #[arg(long, value_name = "S", requires = "oauth_client_id")]
    pub oauth_scope: Option<String>,
    /// Sign every request with AWS Signature Version 4 (credentials from AWS_* or AWS_PROFILE)
    #[arg(long, group = "auth")]
    pub aws_sigv4: bool,
    /// The AWS region to sign for (default: AWS_REGION, else the host's)
    #[arg(long, value_name = "R", requires = "aws_sigv4")]
    pub aws_region: Option<String>,
    /// The AWS service to sign for (default: bedrock-agentcore)
    #[arg(long, value_name = "S", requires = "aws_sigv4")]
    pub aws_service: Option<String>,
    /// Google Application Default Credentials: an ID token for the worker's origin, or an access
    /// token for *.googleapis.com
    #[arg(long, group = "auth")]
    pub google: bool,
    /// The ID token's audience (default: the worker's origin, as Cloud Run expects)
    #[arg(long, value_name = "AUD", requires = "google")]
    pub google_audience: Option<String>,
    /// Trust this origin too: the card may send requests, and credentials, there (repeatable)
    #[arg(long = "allow-origin", value_name = "URL")]
    pub allow_origin: Vec<String>,
    /// Ask the worker to use this A2A extension, on every request (repeatable)
    #[arg(long = "extension", value_name = "URI")]
    pub extension: Vec<String>,
    /// Check the card's signatures with the public key in FILE: PEM, JWK or JWK set (repeatable)
    #[arg(long = "card-key", value_name = "FILE")]
    pub card_key: Vec<std::path::PathBuf>,
    /// Refuse the worker unless a signature of its card holds
    #[arg(long)]
    pub require_signed_card: bool,
    /// Who answers this worker's permission questions (default: `[asks] approvals`, a person)
    #[arg(long, value_enum)]
    pub approvals: Option<ApprovalsArg>,
    /// Do not fetch the agent card now
    #[arg(long)]
    pub no_check: bool,
}

#[derive(Debug, Args, Clone)]
pub struct SessionArg {
    /// Session id (default: $CLAUDE_CODE_SESSION_ID, else `cli`)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    pub alias: String,
    /// What the worker should do (may be left out when --data or --file says it all)
    #[arg(required_unless_present_any = ["data", "files"], num_args = 1..)]
    pub message: Vec<String>,
    /// Answer an input-required task
    #[arg(long, value_name = "ID")]
    pub task_id: Option<String>,
    /// Continue a conversation: a new task in this context (the contextId of an earlier result)
    #[arg(long, value_name = "ID")]
    pub context_id: Option<String>,
    /// Send this local file too, as a file part (repeatable; inside the project directory)
    #[arg(long = "file", value_name = "PATH")]
    pub files: Vec<String>,
    /// Send this JSON value too, as a data part
    #[arg(long, value_name = "JSON")]
    pub data: Option<String>,
    #[command(flatten)]
    pub session: SessionArg,
    #[arg(long)]
    pub json: bool,
    /// Close the worker's stream when the command ends instead of reading it to the task's end
    /// from a background process (the poller then follows the task; a worker that cancels a
    /// task whose stream disconnects cancels it)
    #[arg(long)]
    pub no_keep: bool,
    /// The send itself, run by `send` in a child that outlives it (src/cmd/send.rs)
    #[arg(long, hide = true, conflicts_with = "no_keep")]
    pub keeper: bool,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The task that asks (input-required)
    pub task_id: String,
    /// allow: this once; always: allow it for the rest of the worker's conversation; deny
    pub verdict: Verdict,
    /// Why, with deny: the worker's Claude reads it
    #[arg(num_args = 0..)]
    pub reason: Vec<String>,
    #[command(flatten)]
    pub session: SessionArg,
    #[arg(long)]
    pub json: bool,
}

/// `--approvals`: who answers a worker's permission questions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApprovalsArg {
    Person,
    Claude,
    Deny,
}

impl From<ApprovalsArg> for a2a_mod_config::Approvals {
    fn from(a: ApprovalsArg) -> Self {
        match a {
            ApprovalsArg::Person => Self::Person,
            ApprovalsArg::Claude => Self::Claude,
            ApprovalsArg::Deny => Self::Deny,
        }
    }
}

/// A person's answer to a permission question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Verdict {
    Allow,
    Always,
    Deny,
}

#[derive(Debug, Args)]
pub struct TaskArgs {
    pub task_id: String,
    #[command(flatten)]
    pub session: SessionArg,
    #[arg(long)]
    pub json: bool,
}

/// `cancel` takes what `task` takes; a type of its own so each command has one `Run`.
#[derive(Debug, Args)]
pub struct CancelArgs {
    #[command(flatten)]
    pub task: TaskArgs,
}

#[derive(Debug, Args)]
pub struct TasksArgs {
    /// Session id (default: $CLAUDE_CODE_SESSION_ID, else `cli`)
    #[arg(long, value_name = "ID", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every session's tasks
    #[arg(long)]
    pub all: bool,
    /// Remove the saved results of sessions idle longer than `[results] keep_days` (default 30);
    /// a live session's are never removed
    #[arg(long, conflicts_with_all = ["session", "all"])]
    pub prune: bool,
    /// The worker's own tasks (its ListTasks, A2A v1), not this session's
    #[arg(long, value_name = "ALIAS", conflicts_with_all = ["session", "all", "prune"])]
    pub remote: Option<String>,
    /// With --remote: only the tasks of this context
    #[arg(long, value_name = "ID", requires = "remote")]
    pub context_id: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct FakeWorkerArgs {
    /// Port on 127.0.0.1 (default: one the OS picks)
    #[arg(long)]
    pub port: Option<u16>,
    /// Require `Authorization: Bearer $VAR`
    #[arg(long, value_name = "VAR")]
    pub bearer_env: Option<String>,
    /// Serve only v0.3 (card with `url`, v1 methods answer -32601)
    #[arg(long)]
    pub v03_only: bool,
    /// Issue OAuth2 client-credentials tokens that expire after N seconds, and require them
    #[arg(long, value_name = "SECS")]
    pub oauth_ttl: Option<f64>,
    /// What the token answer's `expires_in` claims (default: the real ttl). A longer claim makes a
    /// worker that revokes tokens early, so a client meets a 401 on a token it thought valid.
    #[arg(long, value_name = "SECS", requires = "oauth_ttl")]
    pub oauth_claimed_ttl: Option<u64>,
    /// Append one JSON line per request received to this file (tests read it)
    #[arg(long, value_name = "FILE")]
    pub log: Option<std::path::PathBuf>,
    /// Offer streaming in the card and serve it (`on`), or one of its faults (default: off)
    #[arg(long, value_name = "MODE", value_enum, default_value = "off")]
    pub streaming: FakeStreaming,
    /// The --streaming fault applies to subscriptions (SubscribeToTask) only; sends stream as `on`
    #[arg(long)]
    pub subscribe_faults_only: bool,
    /// Cancel a task when the stream of the send that made it closes before the task ends
    #[arg(long)]
    pub cancel_on_disconnect: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The folder Claude Code works in (default: the current one)
    #[arg(long, value_name = "PATH")]
    pub dir: Option<std::path::PathBuf>,
    /// ADDR:PORT to listen on (default: serve.listen, else 127.0.0.1 on a port the OS picks)
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// The agent's name: its card's name and its path (default: the folder's name)
    #[arg(long)]
    pub name: Option<String>,
    /// A variable holding a bearer token clients must send (repeatable; needed off loopback)
    #[arg(long = "token-env", value_name = "VAR")]
    pub token_env: Vec<String>,
    /// Serve this agent of config.toml's [serve.agents] (repeatable; default: all of them)
    #[arg(long = "agent", value_name = "NAME")]
    pub agent: Vec<String>,
}

/// `fake-worker --streaming`: see `fake_worker::StreamMode`.
#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FakeStreaming {
    Off,
    On,
    Drop,
    Mute,
    Garbage,
    Http404,
    RpcError,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Scope {
    User,
    Project,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// user: ~/.claude/settings.json; project: .claude/settings.json in this folder
    #[arg(long, value_enum, default_value = "user")]
    pub scope: Scope,
    /// Show what would change, write nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Remove our entries and restore the previous status line
    #[arg(long)]
    pub uninstall: bool,
}

/// `demo`, `doctor` and `mcp` take no arguments; each has a type so it has a `Run`.
#[derive(Debug, Args)]
pub struct DemoArgs {}

#[derive(Debug, Args)]
pub struct DoctorArgs {}

#[derive(Debug, Args)]
pub struct McpArgs {}

#[derive(Debug, Args)]
pub struct StatuslineArgs {
    /// Run this status-line command first (same stdin) and print its output above ours
    #[arg(long, value_name = "CMD")]
    pub then: Option<String>,
}

#[derive(Debug, Args)]
pub struct HookArgs {
    #[arg(value_enum)]
    pub event: HookEvent,
}

/// Which hook runs: the claude crate's, so the hooks need nothing of this file.
pub use a2a_mod_claude::hook::Entry as HookEvent;

#[derive(Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub session: SessionArg,
}

#[derive(Debug, Args)]
pub struct PollerArgs {
    #[arg(long, value_name = "ID")]
    pub session: String,
}
