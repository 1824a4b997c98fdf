//! The MCP side of `a2a-mod mcp`: the `ServerHandler`, the handshake Claude Code expects, which
//! session a call belongs to, and the keeper that restarts the session's poller.
//!
//! Handshake: Claude Code 2.1.332 first sends a `server/discover` probe (protocol 2026-07-28) and,
//! when it gets `-32601`, falls back to `initialize` with 2025-11-25 (docs/claude-code.md "MCP server").
//! That fallback is the path observed to work with progress, cancellation and tool results, so we
//! answer the probe with `-32601` and speak the session lifecycle, unless `[claude] native_tasks`
//! asks for Claude Code's own MCP tasks, which only the 2026-07-28 protocol has: then rmcp answers
//! the probe, and a `send` call that offers tasks may get one (`native.rs`).

use super::{approve, line_cap, native};
use crate::session::Session;
use a2a_mod_config::Config;
use a2a_mod_os::env::Ctx;
use a2a_mod_store::{Reader, SessionPaths, TaskRecord};
use anyhow::{Result, anyhow};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{
    CancelTaskParams, CustomRequest, CustomResult, DiscoverRequestMethod, DiscoverResult,
    ElicitResult, ErrorCode, GetTaskParams, GetTaskResult, Implementation, ServerCapabilities,
    ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool_handler};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// How often the keeper checks that a session with live tasks has its poller (one `kill -9`ed is
/// replaced within this).
const KEEPER_EVERY: Duration = Duration::from_secs(5);

/// What the model reads about the server as a whole (Claude Code puts server instructions in the
/// system prompt), so the flow is known even before a tool schema is loaded through ToolSearch.
const INSTRUCTIONS: &str = "a2a hands work to remote A2A agents (\"workers\"). `workers` lists \
them. `send` gives a worker a task and waits a few seconds: a quick answer comes back at once, \
otherwise you get a taskId; carry on with other work and do not poll: a message arrives when the \
task ends. When a task needs input (state input-required), answer with `send` and the same \
taskId. `task` checks one task now, `cancel` stops one, `tasks` lists this session's tasks.";

#[derive(Clone)]
pub struct A2aServer {
    pub(super) sessions: Arc<Sessions>,
    tool_router: ToolRouter<A2aServer>,
    /// `[claude] native_tasks` as it was when Claude Code started us: the handshake is decided
    /// once, so a later change applies from the next session.
    pub(super) native: bool,
    /// What the native tasks' forms asked the person (`approve.rs`).
    pub(super) forms: Arc<approve::Forms>,
}

impl A2aServer {
    pub fn new(ctx: Ctx, session_id: Result<String>) -> A2aServer {
        // A config that does not load fails every tool call with its own error; here it means
        // today's handshake. `-p` and the Agent SDKs (entrypoint `sdk-*`) never offer tasks, so
        // they keep today's protocol too, exactly.
        let (_, entrypoint) = a2a_mod_os::env::session_mode_vars();
        let headless = entrypoint.is_some_and(|e| e.starts_with("sdk"));
        let native =
            !headless && Config::load(&ctx.config_path()).is_ok_and(|c| c.claude.native_tasks);
        A2aServer {
            native,
            forms: Arc::default(),
            sessions: Arc::new(Sessions {
                ctx,
                raw_id: session_id,
                current: Mutex::new(None),
            }),
            // Made by `#[tool_router]` in tools.rs, the tools' home.
            tool_router: Self::tool_router(),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for A2aServer {
    fn get_info(&self) -> ServerConfig {
        let caps = match self.native {
            true => ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
            false => ServerCapabilities::builder().enable_tools().build(),
        };
        ServerConfig::new(caps)
            .with_server_info(Implementation::new("a2a", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> Result<DiscoverResult, ErrorData> {
        if !self.native {
            return Err(ErrorData::method_not_found::<DiscoverRequestMethod>());
        }
        Ok(DiscoverResult::from_server_info(
            self.supported_protocol_versions().into_owned(),
            self.get_info(),
        ))
    }

    /// Claude Code's poll of an MCP task we made: the row as the poller left it.
    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (session, t, made) = self.native_task(&request.task_id)?;
        let asking = self.asking(&session, &t, &request.task_id);
        Ok(GetTaskResult::new(native::detailed(&t, made, asking)))
    }

    /// The person's answer in a native task's form (`approve.rs`): sent to the worker, and the
    /// task goes on under the same MCP task; a dismissed form ends the MCP task, saying so.
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (session, t, made) = self.native_task(&request.task_id)?;
        let key = native::form_key(&t);
        let response = match self.asking(&session, &t, &request.task_id) {
            Some(native::Asking::Form(_)) => request.input_responses.get(&key),
            _ => None,
        };
        let Some(response) = response else {
            return Err(ErrorData::invalid_params(
                format!(
                    "task {:?} asks nothing now: the question was answered already",
                    request.task_id
                ),
                None,
            ));
        };
        let answered: ElicitResult = serde_json::from_value(response.clone()).map_err(|e| {
            ErrorData::invalid_params(format!("not an elicitation result: {e}"), None)
        })?;
        let reply = match approve::read(&answered) {
            approve::Answer::Reply(reply) => reply,
            approve::Answer::Dismissed => {
                self.forms.set(&request.task_id, |f| f.dismissed = true);
                return Ok(());
            }
        };
        tracing::info!(
            "{} task {}: the person answered {reply:?}",
            t.worker,
            t.task_id
        );
        let mut req =
            crate::session::SendRequest::new(&t.worker, &reply, crate::session::Budget::from_env());
        req.input.task_id = Some(t.task_id.clone());
        // Nobody waits inline: the task is the poller's at once, and Claude Code's next poll
        // of the MCP task tells how it goes.
        req.stop = Box::pin(std::future::ready(()));
        req.keep_stream = true;
        req.native_ms = Some(made);
        let (_, handed) = session.send(req).await.map_err(internal)?;
        if let Some(h) = handed {
            tokio::spawn(session.clone().follow_on(h));
        }
        Ok(())
    }

    /// A stop in Claude Code's task panel: the worker is asked to cancel; the next poll shows
    /// what came of it.
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (session, t, _) = self.native_task(&request.task_id)?;
        if t.is_live() {
            // The cancel tool's path: the outcome is stored, and any failure is the worker's
            // to report at the next poll, so the acknowledgement does not wait on it.
            let budget = crate::session::Budget::from_env();
            if let Err(e) = session.cancel(&t.task_id, budget).await {
                tracing::warn!("cancelling {} task {}: {e:#}", t.worker, t.task_id);
            }
        }
        Ok(())
    }

    /// The stand-in `LineCap` puts where a request line was too long to read: answered with an
    /// error, so the call fails at once instead of Claude Code waiting for its timeout.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        if request.method != line_cap::TOO_LONG_METHOD {
            return Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            ));
        }
        let p = request.params.unwrap_or_default();
        Err(ErrorData::invalid_request(
            too_long_message(p["bytes"].as_u64(), p["limit"].as_u64()),
            None,
        ))
    }
}

impl A2aServer {
    /// What a native task's form asks the person now, if anything: a worker's permission
    /// question the user wants a person to answer (`[asks] approvals`; a native task is
    /// always interactive).
    fn asking(&self, session: &Session, t: &TaskRecord, id: &str) -> Option<native::Asking> {
        if t.state != a2a_mod_core::task::TaskState::InputRequired {
            return None;
        }
        let what = t
            .question
            .as_deref()
            .and_then(a2a_mod_core::status::approval_of)?;
        if session.config.approvals(&t.worker) != a2a_mod_config::Approvals::Person {
            return None;
        }
        let form = self.forms.get(id);
        if form.dismissed {
            return Some(native::Asking::Dismissed(approve::dismissed(
                &t.worker, &t.task_id,
            )));
        }
        Some(native::Asking::Form(Box::new(approve::form(
            &approve::Ask {
                worker: &t.worker,
                task_id: &t.task_id,
                what: &what,
                proposal: form.proposal.as_deref(),
            },
        ))))
    }

    /// The session, the task an MCP task id of ours names, and when that MCP task was made.
    fn native_task(&self, id: &str) -> Result<(Arc<Session>, TaskRecord, i64), ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("no task {id:?} here"), None);
        let (seq, made) = native::parse(id).ok_or_else(unknown)?;
        let session = self.sessions.get().map_err(internal)?;
        let t = session
            .store(|s| s.by_seq(seq))
            .map_err(internal)?
            .filter(|t| native::is_for(t, made))
            .ok_or_else(unknown)?;
        Ok((session, t, made))
    }
}

fn internal(e: anyhow::Error) -> ErrorData {
    ErrorData::internal_error(a2a_mod_claude::error::render(&e), None)
}

/// What Claude reads when one request was over the size of a message (docs/troubleshooting.md).
fn too_long_message(bytes: Option<u64>, limit: Option<u64>) -> String {
    let mib =
        |n: Option<u64>| n.map_or("?".to_string(), |n| format!("{:.1}", n as f64 / 1048576.0));
    format!(
        "a2a-mod: request too long: {} MiB, over the {} MiB limit of one MCP message — send less \
         text at once (pass large content as file paths in `files`)",
        mib(bytes),
        mib(limit)
    )
}

/// The session a tool call belongs to. Claude Code's `/clear` links a new session id to the old
/// store while this process keeps the old id (docs/claude-code.md "Sessions across /clear, --resume and /exit"), so the id is
/// resolved on every call; the config is reloaded when `config.toml` changes (`worker add` while
/// the session runs).
pub(super) struct Sessions {
    pub(super) ctx: Ctx,
    /// The session id, or why there is none: kept to answer every tool call with it.
    raw_id: Result<String>,
    current: Mutex<Option<Cached>>,
}

struct Cached {
    id: String,
    config_mtime: Option<SystemTime>,
    session: Arc<Session>,
}

impl Sessions {
    fn raw_id(&self) -> Result<&str> {
        self.raw_id.as_deref().map_err(|e| anyhow!("{e:#}"))
    }

    /// This call's session files: its store's owner, after following `/clear` links.
    pub(super) fn locate(&self) -> Result<SessionPaths> {
        Ok(SessionPaths::locate(&self.ctx, self.raw_id()?))
    }

    /// The session for this call, opened lazily: a session that never uses a2a-mod gets no store.
    pub(super) fn get(&self) -> Result<Arc<Session>> {
        let paths = self.locate()?;
        let path = self.ctx.config_path();
        let mtime = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let mut cur = self
            .current
            .lock()
            .map_err(|_| anyhow!("session cache lock poisoned"))?;
        if let Some(c) = cur.as_ref()
            && c.id == paths.owner
            && c.config_mtime == mtime
        {
            return Ok(c.session.clone());
        }
        let config = Config::load(&path)?;
        let id = paths.owner.clone();
        let s = Arc::new(Session::open_at(&self.ctx, config, paths)?);
        *cur = Some(Cached {
            id,
            config_mtime: mtime,
            session: s.clone(),
        });
        Ok(s)
    }

    /// Starts the poller when the session has live tasks and none runs. Reads only: a session
    /// without a store is left without one.
    fn keep_poller(&self) {
        let Ok(paths) = self.locate() else { return };
        match Reader::open(&paths.db) {
            Ok(Some(store)) => crate::poller::ensure_if_live(&self.ctx, &paths.owner, &store),
            Ok(None) => {}
            Err(e) => tracing::warn!("{e:#}"),
        }
    }
}

/// rmcp's stdio transport, reading stdin through [`line_cap::LineCap`] so an over-long request
/// line is answered rather than dropped in silence. rmcp's own cap is set just above ours so it
/// never drops a line itself (the cut line reaches it with two bytes more).
fn stdio_transport() -> impl rmcp::transport::Transport<RoleServer, Error = std::io::Error> {
    let (stdin, stdout) = rmcp::transport::stdio();
    AsyncRwTransport::new_server(line_cap::LineCap::new(stdin), stdout)
        .with_max_line_length(line_cap::LIMIT + 2)
}

/// Serves MCP on stdin/stdout until Claude Code closes stdin.
pub async fn serve_stdio(ctx: Ctx) -> Result<()> {
    let session_id = a2a_mod_os::env::cli_session(None);
    if let Err(e) = &session_id {
        tracing::warn!("{e:#}");
    }
    let server = A2aServer::new(ctx, session_id);
    let sessions = server.sessions.clone();
    // The keeper starts after the handshake is under way: Claude Code starts this server at every
    // session start, so nothing may delay the `initialize` reply.
    let keeper = tokio::spawn(async move {
        let mut every = tokio::time::interval(KEEPER_EVERY);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            let s = sessions.clone();
            let _ = tokio::task::spawn_blocking(move || s.keep_poller()).await;
        }
    });
    let result = async {
        let service = server
            .serve(stdio_transport())
            .await
            .map_err(|e| anyhow!("MCP handshake failed: {e}"))?;
        tracing::info!("mcp server ready (pid {})", std::process::id());
        service
            .waiting()
            .await
            .map_err(|e| anyhow!("MCP server stopped: {e}"))?;
        Ok(())
    }
    .await;
    keeper.abort();
    tracing::info!("mcp server done");
    result
}
