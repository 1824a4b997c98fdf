//! `a2a-mod serve`: checks everything before it binds (the agents, their folders, the tokens,
//! the address, Claude Code), then serves until SIGTERM/SIGINT. Its first stdout line is the
//! first agent's URL, the second the `worker add` line a client runs; logs go to stderr (a line
//! per accepted task, ending and refusal by default). SIGTERM drains: no new task, running ones
//! get `stop_grace_s` to end, then are stopped and end `failed`; a second signal skips the grace.

use super::Run;
use super::shell::{load, out, wait_for_stop_signal};
use crate::cli::ServeArgs;
use a2a_mod_config::{ServeAgentConfig, ServeConfig};
use a2a_mod_serve::claude::Claude;
use a2a_mod_serve::engine::{Agent, Engine, Executors, Limits};
use a2a_mod_serve::http::{RESERVED, Token};
use a2a_mod_serve::{Options, Serving};
use anyhow::{Context as _, Result, anyhow, bail};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

impl Run for ServeArgs {
    fn run(self) -> Result<i32> {
        let ctx = a2a_mod_os::env::Ctx::from_env()?;
        a2a_mod_app::log::init_serve();
        let cfg = load(&ctx)?;
        let plan = plan(
            &self,
            &cfg.serve,
            &std::env::current_dir()?,
            a2a_mod_os::env::secret,
        )?;
        // Only Claude Code agents need it: a server of `exec` agents runs without it.
        let bin = if plan.agents.iter().any(|a| a.config.exec.is_none()) {
            claude_bin()?
        } else {
            PathBuf::from("claude")
        };
        let dir = ctx.state_dir.join("serve");
        a2a_mod_os::fsx::create_private_dir(&dir)
            .with_context(|| format!("serve: cannot create \"{}\"", dir.display()))?;
        let first = &plan.agents[0].name;
        // One server per first agent: a second would end the first one's live tasks as
        // "restarted" when it opens the same store.
        let _lock = a2a_mod_os::fsx::try_lock(&dir.join(format!("{first}.lock")))?.ok_or_else(|| {
            anyhow!("serve: another a2a-mod serve is serving \"{first}\" — stop it, or give this one another --name")
        })?;
        let store = a2a_mod_store::served::ServedStore::open(&dir.join(format!("{first}.db")))?;
        let claude = Claude {
            bin,
            scrub: plan.tokens.iter().map(|(var, _)| var.clone()).collect(),
            grace: a2a_mod_config::secs(cfg.serve.cancel_grace_s),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("serve: cannot start the async runtime")?;
        rt.block_on(serve(plan, &cfg.serve, claude, store))?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

/// What `serve` will do, checked whole before anything starts.
#[derive(Debug)]
struct Plan {
    agents: Vec<Agent>,
    listen: SocketAddr,
    /// (variable, token) pairs.
    tokens: Vec<(String, String)>,
}

async fn serve(
    plan: Plan,
    cfg: &ServeConfig,
    claude: Claude,
    store: a2a_mod_store::served::ServedStore,
) -> Result<()> {
    let exec = a2a_mod_serve::exec::Exec {
        scrub: claude.scrub.clone(),
        grace: claude.grace,
    };
    let engine = Arc::new(Engine::open(
        store,
        Executors {
            claude: Arc::new(claude),
            exec: Arc::new(exec),
        },
        Limits {
            max_concurrent: cfg.max_concurrent,
            max_queued: cfg.max_queued,
            max_live_per_owner: cfg.per_token_max_concurrent,
            per_token_daily_usd: cfg.per_token_daily_usd,
        },
    )?);
    let listener = tokio::net::TcpListener::bind(plan.listen)
        .await
        .with_context(|| {
            format!(
                "serve: cannot listen on {} — pick another --listen, or free that port",
                plan.listen
            )
        })?;
    let tokens = plan.tokens.iter().map(|(v, t)| Token::new(v, t)).collect();
    let agents: Vec<Arc<Agent>> = plan.agents.into_iter().map(Arc::new).collect();
    let options = options(cfg);
    a2a_mod_os::env::raise_open_files(options.conn.max_connections + 64);
    let serving = Serving::start(listener, engine.clone(), agents.clone(), tokens, options).await?;
    let origin = &serving.server.origin;
    let first = &agents[0];
    let url = format!("{origin}/{}", first.name);
    let mut add = format!("a2a-mod worker add {} {url}", first.name);
    if let Some((var, _)) = plan.tokens.first() {
        add.push_str(&format!(" --bearer-env {var}"));
    }
    out(&url)?;
    out(&add)?;
    for a in &agents {
        tracing::info!(agent = %a.name, dir = %a.dir.display(), "serving {origin}/{}", a.name);
    }
    wait_for_stop_signal().await?;
    let grace = a2a_mod_config::secs(cfg.stop_grace_s);
    tracing::info!(
        "stopping: no new tasks; running ones get {} s to end, then are stopped (a second signal stops them now)",
        grace.as_secs_f64()
    );
    // The server keeps answering meanwhile, so clients are told how their tasks end.
    tokio::select! {
        () = engine.shutdown(grace) => {}
        r = wait_for_stop_signal() => {
            r?;
            tracing::info!("stopping now");
            engine.shutdown(std::time::Duration::ZERO).await;
        }
    }
    serving.stop().await;
    tracing::info!("stopped");
    Ok(())
}

/// The server's options from `[serve]`.
fn options(cfg: &ServeConfig) -> Options {
    Options {
        max_body: usize::try_from(cfg.max_body_bytes()).unwrap_or(usize::MAX),
        allowed_hosts: cfg.allowed_hosts.clone(),
        allowed_origins: cfg.allowed_origins.clone(),
        conn: a2a_mod_serve::conn::Limits {
            max_connections: cfg.max_connections,
            header_timeout: a2a_mod_config::secs(cfg.header_timeout_s),
            send_timeout: a2a_mod_config::secs(cfg.send_timeout_s),
        },
        max_streams_per_task: cfg.max_streams_per_task,
        max_streams: cfg.max_streams,
        push_allow_private: cfg.push_allow_private,
    }
}

/// Claude Code: `A2A_MOD_CLAUDE_BIN`, else `claude` on `PATH`.
fn claude_bin() -> Result<PathBuf> {
    if let Some(b) = a2a_mod_os::env::claude_bin() {
        return Ok(b);
    }
    super::setup::which("claude").ok_or_else(|| {
        anyhow!("serve: Claude Code (`claude`) is not on PATH — install it (npm install -g @anthropic-ai/claude-code), or set A2A_MOD_CLAUDE_BIN")
    })
}

/// Checks the arguments and the config into a [`Plan`]; `env` reads a token's variable.
fn plan(
    args: &ServeArgs,
    cfg: &ServeConfig,
    cwd: &Path,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Plan> {
    let mut agents = Vec::new();
    for n in &args.agent {
        if !cfg.agents.contains_key(n) {
            bail!(
                "serve: no agent \"{n}\" in [serve.agents] of config.toml — add it there, or drop --agent {n}"
            );
        }
    }
    // `--dir`/`--name` make an agent of their own; the config's are served when `--agent` names
    // them, or when no flag makes one.
    let flagged = args.dir.is_some() || args.name.is_some();
    if flagged || cfg.agents.is_empty() {
        let dir = match &args.dir {
            Some(d) => cwd.join(d),
            None => cwd.to_path_buf(),
        };
        let name = args.name.clone().unwrap_or_else(|| default_name(&dir));
        agents.push(agent(&name, &dir, ServeAgentConfig::default())?);
    }
    for (name, a) in &cfg.agents {
        let wanted = if args.agent.is_empty() {
            !flagged
        } else {
            args.agent.contains(name)
        };
        if wanted {
            let dir = a.dir_path().unwrap_or_else(|| cwd.to_path_buf());
            agents.push(agent(name, &dir, a.clone())?);
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for a in &agents {
        if !seen.insert(a.name.as_str()) {
            bail!(
                "serve: two agents are named \"{}\" — give --name another one",
                a.name
            );
        }
    }
    let listen_text = args
        .listen
        .clone()
        .or_else(|| cfg.listen.clone())
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let listen: SocketAddr = listen_text.parse().map_err(|_| {
        anyhow!("serve: --listen {listen_text:?} is not ADDR:PORT — pass e.g. 127.0.0.1:8462")
    })?;
    let mut tokens = Vec::new();
    for var in cfg.token_envs.iter().chain(&args.token_env) {
        match env(var) {
            Some(t) => tokens.push((var.clone(), t)),
            None => bail!(
                "serve: the token variable \"{var}\" is not set — export it, or drop it from --token-env / serve.token_envs"
            ),
        }
    }
    if tokens.is_empty() && !listen.ip().is_loopback() {
        bail!(
            "serve: listening on {listen} needs a bearer token — set one with --token-env VAR (or serve.token_envs), or listen on 127.0.0.1"
        );
    }
    Ok(Plan {
        agents,
        listen,
        tokens,
    })
}

fn agent(name: &str, dir: &Path, config: ServeAgentConfig) -> Result<Agent> {
    a2a_mod_config::validate_alias(name)
        .map_err(|e| anyhow!("serve: agent name \"{name}\": {e}"))?;
    if RESERVED.contains(&name) {
        bail!("serve: \"{name}\" names one of the server's own paths — pick another agent name");
    }
    let dir = dir
        .canonicalize()
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            anyhow!(
                "serve: {} is not a folder — pass --dir an existing folder",
                a2a_mod_config::quote_path(dir)
            )
        })?;
    if let Some(program) = config.exec.as_ref().and_then(|c| c.first())
        && !program.contains('/')
        && super::setup::which(program).is_none()
    {
        bail!(
            "serve: agent \"{name}\" runs {program:?}, which is not on PATH — install it, or name it by its path in exec"
        );
    }
    let description = config
        .description
        .clone()
        .unwrap_or_else(|| match &config.exec {
            Some(c) => format!("{} working in {}", c.join(" "), dir.display()),
            None => format!("Claude Code working in {}", dir.display()),
        });
    Ok(Agent {
        name: name.to_string(),
        description,
        dir,
        config,
    })
}

/// The folder's name as an agent name: its letters, digits, `-`, `_` and `.`, else `claude`.
fn default_name(dir: &Path) -> String {
    let base = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let name: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let name = name.trim_matches(['-', '.']).to_string();
    if name.is_empty() || RESERVED.contains(&name.as_str()) {
        "claude".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ServeArgs {
        ServeArgs {
            dir: None,
            listen: None,
            name: None,
            token_env: Vec::new(),
            agent: Vec::new(),
        }
    }

    fn render(e: anyhow::Error) -> String {
        a2a_mod_claude::error::render(&e)
    }

    #[test]
    fn off_loopback_needs_a_token() {
        let tmp = tempfile::tempdir().unwrap();
        let a = ServeArgs {
            listen: Some("0.0.0.0:8462".into()),
            ..args()
        };
        let e = plan(&a, &ServeConfig::default(), tmp.path(), |_| None).unwrap_err();
        assert_eq!(
            render(e),
            "a2a-mod: serve: listening on 0.0.0.0:8462 needs a bearer token — set one with --token-env VAR (or serve.token_envs), or listen on 127.0.0.1"
        );
        let a = ServeArgs {
            token_env: vec!["T".into()],
            ..a
        };
        let e = plan(&a, &ServeConfig::default(), tmp.path(), |_| None).unwrap_err();
        assert!(render(e).contains("\"T\" is not set"));
        let p = plan(&a, &ServeConfig::default(), tmp.path(), |v| {
            (v == "T").then(|| "s3cret".into())
        })
        .unwrap();
        assert_eq!(p.tokens, [("T".to_string(), "s3cret".to_string())]);
        assert!(!format!("{:?}", p.agents).contains("s3cret"));
    }

    #[test]
    fn agents_come_from_the_flags_or_the_config() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("my app");
        std::fs::create_dir(&work).unwrap();
        let p = plan(&args(), &ServeConfig::default(), &work, |_| None).unwrap();
        assert_eq!(p.agents[0].name, "my-app");
        assert_eq!(p.listen.to_string(), "127.0.0.1:0");
        let cfg: ServeConfig = a2a_mod_config::Config::parse(&format!(
            "[serve.agents.build]\ndir = {:?}\n[serve.agents.docs]\ndir = {:?}\n",
            work.display().to_string(),
            tmp.path().display().to_string()
        ))
        .unwrap()
        .serve;
        let names = |p: Plan| p.agents.into_iter().map(|a| a.name).collect::<Vec<_>>();
        assert_eq!(
            names(plan(&args(), &cfg, &work, |_| None).unwrap()),
            ["build", "docs"]
        );
        let only = ServeArgs {
            agent: vec!["docs".into()],
            ..args()
        };
        assert_eq!(names(plan(&only, &cfg, &work, |_| None).unwrap()), ["docs"]);
        let bad = ServeArgs {
            agent: vec!["nope".into()],
            ..args()
        };
        assert!(
            render(plan(&bad, &cfg, &work, |_| None).unwrap_err()).contains("no agent \"nope\"")
        );
        let gone = ServeArgs {
            dir: Some(tmp.path().join("missing")),
            ..args()
        };
        assert!(
            render(plan(&gone, &cfg, &work, |_| None).unwrap_err()).contains("is not a folder")
        );
        let reserved = ServeArgs {
            name: Some("tasks".into()),
            ..args()
        };
        assert!(render(plan(&reserved, &cfg, &work, |_| None).unwrap_err()).contains("own paths"));
    }
}
