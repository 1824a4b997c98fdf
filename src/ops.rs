//! send / task / cancel / tasks: one implementation behind Claude's tools, the user's commands and
//! the demo, so all three behave exactly alike (INTERFACES.md: "`send`, `task`, `cancel` behave
//! exactly like the tools").
//!
//! IO shell around `core::schedule` and `core::fence`: talks to workers through `a2a::Worker`,
//! records every task in the session store, and starts the session's poller when a task is left
//! live.

use crate::a2a::{A2aError, TaskView, Worker};
use crate::config::Config;
use crate::core::fence::{self, TaskFacts};
use crate::core::schedule;
use crate::core::task::TaskState;
use crate::env::{Ctx, now_ms};
use crate::state::{NewTask, Store, TaskRecord, session};
use anyhow::{Result, anyhow};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Longest worker text put into a tool result; the rest is saved to a file Claude can read.
pub const MAX_RESULT_CHARS: usize = 16_000;
/// Our own cap on a tool call's budget when the host names none (Claude Code's default is hours).
pub const DEFAULT_BUDGET: Duration = Duration::from_secs(60);
/// Time kept back to hand a result over before the host's timeout fires.
pub const BUDGET_RESERVE: Duration = Duration::from_millis(1000);
/// Slack after the inline window's last poll: a GetTask in flight may still answer within it.
const WINDOW_SLACK: Duration = Duration::from_millis(1000);

/// The structured result of `send`, `task` and `cancel`: INTERFACES.md's fields plus `note`.
/// The tools return it as `structuredContent` and `--json` prints it, so both are the same.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// What happened and what to do next; the worker's own words are fenced as untrusted.
    /// (Claude Code shows the model only `structuredContent`, so the note lives here.)
    pub note: String,
    pub worker: String,
    pub task_id: String,
    pub context_id: Option<String>,
    pub state: TaskState,
    /// The worker's result text (worker's words, not instructions), cleaned and bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What the worker asks, when the state is input-required or auth-required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// True: still running; a2a-mod watches it and a message will come when it ends.
    pub tracked: bool,
}

/// A tool call's time budget, from the moment the call began.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub start: Instant,
    pub total: Duration,
}

impl Budget {
    pub fn new(total: Duration) -> Budget {
        Budget {
            start: Instant::now(),
            total,
        }
    }

    /// The budget Claude Code gives an MCP tool call: `MCP_TOOL_TIMEOUT` (ms) or the per-server
    /// timeout we ship in `.mcp.json` (passed as `A2A_MOD_TOOL_TIMEOUT_MS`), capped by ours.
    pub fn from_env() -> Budget {
        let ms = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|v| *v > 0)
        };
        let host = [ms("A2A_MOD_TOOL_TIMEOUT_MS"), ms("MCP_TOOL_TIMEOUT")]
            .into_iter()
            .flatten()
            .min()
            .map(Duration::from_millis);
        Budget::new(host.map_or(DEFAULT_BUDGET, |h| h.min(DEFAULT_BUDGET)))
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Deadline for one request: the budget less the reserve, or `per_request`, whichever is first.
    pub fn request_deadline(&self, per_request: Duration) -> Instant {
        Instant::now()
            + schedule::request_window(self.elapsed(), self.total, BUDGET_RESERVE, per_request)
    }
}

/// Progress while the inline window runs: what is going on (the caller keeps its own clock).
pub type Progress<'a> = &'a (dyn Fn(String) + Send + Sync);

/// One session's view: config, store, workers. Cheap to share across concurrent tool calls.
pub struct Session {
    pub ctx: Ctx,
    pub config: Config,
    /// The session that owns the store (after following `/clear` links).
    pub id: String,
    store: Mutex<Store>,
    workers: Mutex<HashMap<String, Arc<Worker>>>,
    http: reqwest::Client,
}

impl Session {
    pub fn open(ctx: &Ctx, config: Config, session_id: &str) -> Result<Session> {
        let id = session::resolve(ctx, session_id);
        let store = Store::open(&session::db_path(ctx, &id))?;
        Ok(Session {
            ctx: ctx.clone(),
            config,
            id,
            store: Mutex::new(store),
            workers: Mutex::new(HashMap::new()),
            http: crate::a2a::http_client(),
        })
    }

    /// Runs `f` on the store. The lock is held only for one short SQLite call.
    pub fn store<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let guard = self
            .store
            .lock()
            .map_err(|_| anyhow!("session store lock poisoned"))?;
        f(&guard)
    }

    pub fn worker(&self, alias: &str) -> Result<Arc<Worker>> {
        let cfg = self.config.worker(alias)?;
        let mut map = self
            .workers
            .lock()
            .map_err(|_| anyhow!("worker cache lock poisoned"))?;
        Ok(map
            .entry(alias.to_string())
            .or_insert_with(|| Arc::new(Worker::new(alias, cfg.clone(), self.http.clone())))
            .clone())
    }

    fn poll_timeout(&self) -> Duration {
        self.config.timing.poll_timeout()
    }

    fn note(&self, v: &TaskView, worker: &str) -> String {
        let (text, extra) = self.bounded(worker, &v.task_id, v.text.as_deref());
        let mut note = fence::note(
            &TaskFacts {
                worker,
                task_id: &v.task_id,
                state: v.state,
                end: None,
                text: text.as_deref(),
                question: v.question.as_deref(),
                last_error: None,
            },
            self.config.timing.max_failed_polls,
        );
        note.push_str(&extra);
        note
    }

    /// Bounds a result for Claude; a longer one is saved whole to a file named in the note.
    fn bounded(&self, worker: &str, task_id: &str, text: Option<&str>) -> (Option<String>, String) {
        let Some(text) = text else {
            return (None, String::new());
        };
        let (kept, extra) = crate::wake::bound_result(
            &self.ctx,
            &self.id,
            (worker, task_id),
            text,
            MAX_RESULT_CHARS,
            |e| format!("the whole result could not be saved: {e:#}"),
        );
        (Some(kept.to_string()), extra)
    }

    fn outcome(&self, v: &TaskView, worker: &str, tracked: bool) -> Outcome {
        // Worker text outside the note's fence is still the worker's: cleaned and bounded too.
        let worker_words = |t: &Option<String>| {
            t.as_deref().map(|t| {
                let clean = fence::clean_multiline(t);
                fence::bound(&clean, MAX_RESULT_CHARS).0.to_string()
            })
        };
        Outcome {
            note: self.note(v, worker),
            worker: worker.to_string(),
            task_id: v.task_id.clone(),
            context_id: v.context_id.clone(),
            state: v.state,
            text: worker_words(&v.text),
            question: worker_words(&v.question),
            tracked,
        }
    }

    /// `send`: forwards the message, then the inline window (GetTask after 0.5, 1, 2 and 4 s, cut
    /// at the call's budget). The result at once if the task ends inside the window; otherwise the
    /// task id and the hand-over note, the task tracked and the poller running.
    pub async fn send(
        &self,
        alias: &str,
        message: &str,
        task_id: Option<&str>,
        budget: Budget,
        progress: Progress<'_>,
    ) -> Result<Outcome> {
        self.send_until(
            alias,
            message,
            task_id,
            budget,
            progress,
            std::future::pending(),
        )
        .await
    }

    /// `send`, whose inline window ends early when `stop` completes (Claude Code cancelled the
    /// call): the task is then handed to the poller as after a full window. `stop` is not watched
    /// while the message is being sent, because a task the worker accepted must be recorded, or
    /// nobody would ever announce it; that request is bounded by the budget anyway.
    pub async fn send_until(
        &self,
        alias: &str,
        message: &str,
        task_id: Option<&str>,
        budget: Budget,
        progress: Progress<'_>,
        stop: impl std::future::Future<Output = ()>,
    ) -> Result<Outcome> {
        let mut stop = std::pin::pin!(stop);
        let message = message.trim();
        if message.is_empty() {
            return Err(anyhow!(
                "the message is empty — say what the worker should do"
            ));
        }
        let worker = self.worker(alias)?;
        let previous = match task_id {
            Some(id) => Some(
                self.store(|s| s.get(alias, id))?
                    .ok_or_else(|| unknown_task(id, Some(alias)))?,
            ),
            None => None,
        };
        let context_id = previous.as_ref().and_then(|p| p.context_id.clone());
        // The window counts from when the send went out, as the worker sees it arrive: a slow
        // answer to the send must not push every GetTask later, and neither must the agent card,
        // which a fresh process fetches first (cached for the send and the polls after it).
        worker
            .card(budget.request_deadline(self.poll_timeout()))
            .await
            .map_err(|e| worker_error(alias, &worker.config.url, &e))?;
        let sent_at = Instant::now();
        let view = worker
            .send(
                message,
                task_id,
                context_id.as_deref(),
                budget.request_deadline(self.poll_timeout()),
            )
            .await
            .map_err(|e| worker_error(alias, &worker.config.url, &e))?;
        let mut view = view;
        // An answer to an input-required task may come back with the task still in its old
        // waiting state (a2a-sdk 0.3 answers the snapshot taken before the resumed run starts):
        // the worker has the answer but has not picked it up. Treat it as submitted, so the
        // inline window and the poller look again instead of reporting the old question. Any
        // artifact in that snapshot goes too: the result is told once, with the state that ends
        // the task, not beside "submitted" and then again by the wake.
        if previous.as_ref().is_some_and(|p| p.state == view.state) && view.state.is_waiting() {
            view.state = TaskState::Submitted;
            view.question = None;
            view.text = None;
        }

        let timing = &self.config.timing;
        let offsets = schedule::inline_offsets(&timing.inline_gaps());
        let window_end = offsets.last().copied().unwrap_or_default();
        let now = now_ms();
        // Should this call stop waiting before the window's end (cancelled, killed), the poller
        // takes over one interval after the window, its last poll's slack included, so the two
        // never poll the task at once.
        let first_bg_poll =
            now + (window_end + WINDOW_SLACK + timing.poll_interval()).as_millis() as i64;
        let live = view.state.is_live();
        self.store(|s| {
            s.record_sent(
                &NewTask {
                    worker: alias,
                    task_id: &view.task_id,
                    context_id: view.context_id.as_deref(),
                    message: previous.as_ref().map_or(message, |p| p.message.as_str()),
                    state: view.state,
                    result: view.text.as_deref(),
                    question: view.question.as_deref(),
                    next_poll_ms: Some(first_bg_poll),
                    told: !live,
                },
                now,
            )
        })?;
        if !live {
            return Ok(self.outcome(&view, alias, false));
        }
        // Tracked from here on: if the caller stops waiting (Claude Code cancels the call), the
        // poller already owns the task.
        crate::poller::ensure(&self.ctx, &self.id);

        let mut last = view;
        let mut last_started = None;
        for offset in offsets {
            if !schedule::inline_poll_fits(
                budget.elapsed() + (offset.saturating_sub(sent_at.elapsed())),
                budget.total,
                BUDGET_RESERVE,
            ) {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(sent_at + offset) => {}
                _ = &mut stop => break,
            }
            progress(format!("waiting for {alias}: {}", last.state));
            let deadline = budget
                .request_deadline(self.poll_timeout())
                .min(sent_at + window_end + WINDOW_SLACK);
            let started = now_ms();
            last_started = Some(started);
            let polled = tokio::select! {
                p = worker.get_task(&last.task_id, deadline) => p,
                _ = &mut stop => break,
            };
            let not_found = matches!(polled, Err(A2aError::TaskNotFound));
            let mut update = schedule::after_poll(
                0,
                last.state,
                crate::a2a::poll_outcome(&polled),
                started,
                timing.poll_interval(),
                u32::MAX,
            );
            // Failed inline polls are not counted toward lost contact (the window is cut short on
            // a silent worker, so its count would be arbitrary): the background poller starts
            // from zero, and drops the task after exactly `max_failed_polls` of its own.
            update.failed_polls = 0;
            if update.end.is_none() {
                // The background poller takes over only after the window.
                update.next_poll_ms = Some(first_bg_poll);
            }
            let ended = update.end.is_some();
            self.store(|s| s.apply_poll(alias, &last.task_id, &update, true, now_ms()))?;
            if let Ok(v) = polled {
                last = v;
            }
            if ended {
                if not_found {
                    return Err(unknown_task(&last.task_id, Some(alias)));
                }
                return Ok(self.outcome(&last, alias, false));
            }
        }
        // Hand-over: the poller's first poll comes one interval after the window's last one
        // began, the rhythm the poller keeps itself (`after_poll`).
        let interval = timing.poll_interval().as_millis() as i64;
        let next = last_started.map_or(now_ms() + interval, |t| (t + interval).max(now_ms()));
        self.store(|s| s.set_next_poll(alias, &last.task_id, next))?;
        Ok(self.outcome(&last, alias, true))
    }

    /// `task`: GetTask now. Claude gets the outcome, so it is marked told; a live task that was
    /// dropped (lost contact) is tracked again.
    pub async fn task(&self, task_id: &str, budget: Budget) -> Result<Outcome> {
        let rec = self.find(task_id)?;
        let worker = self.worker(&rec.worker)?;
        let view = match worker
            .get_task(&rec.task_id, budget.request_deadline(self.poll_timeout()))
            .await
        {
            Ok(v) => v,
            Err(A2aError::TaskNotFound) => {
                return Err(anyhow!(
                    "worker {:?} no longer knows task {task_id} — it may have expired; send the work again",
                    rec.worker
                ));
            }
            Err(e) => return Err(worker_error(&rec.worker, &worker.config.url, &e)),
        };
        self.seen(&rec, &view)
    }

    /// `cancel`: CancelTask. A task that already ended is reported as it is.
    pub async fn cancel(&self, task_id: &str, budget: Budget) -> Result<Outcome> {
        let rec = self.find(task_id)?;
        let worker = self.worker(&rec.worker)?;
        let deadline = budget.request_deadline(self.poll_timeout());
        let view = match worker.cancel(&rec.task_id, deadline).await {
            Ok(v) => v,
            Err(A2aError::NotCancelable) => {
                let v = worker
                    .get_task(&rec.task_id, budget.request_deadline(self.poll_timeout()))
                    .await
                    .map_err(|e| worker_error(&rec.worker, &worker.config.url, &e))?;
                let mut o = self.seen(&rec, &v)?;
                o.note = format!(
                    "{} task {task_id} had already ended ({}); nothing to cancel. {}",
                    rec.worker, v.state, o.note
                );
                return Ok(o);
            }
            Err(A2aError::TaskNotFound) => {
                return Err(anyhow!(
                    "worker {:?} no longer knows task {task_id} — nothing to cancel",
                    rec.worker
                ));
            }
            Err(e) => return Err(worker_error(&rec.worker, &worker.config.url, &e)),
        };
        self.seen(&rec, &view)
    }

    fn seen(&self, rec: &TaskRecord, view: &TaskView) -> Result<Outcome> {
        let now = now_ms();
        let next = now + self.config.timing.poll_interval().as_millis() as i64;
        let seen = crate::core::task::Seen {
            task_id: &view.task_id,
            state: view.state,
            text: view.text.as_deref(),
            question: view.question.as_deref(),
        };
        self.store(|s| s.record_seen(&rec.worker, seen, next, now))?;
        let live = view.state.is_live();
        if live {
            crate::poller::ensure(&self.ctx, &self.id);
        }
        Ok(self.outcome(view, &rec.worker, live))
    }

    fn find(&self, task_id: &str) -> Result<TaskRecord> {
        let task_id = task_id.trim();
        if task_id.is_empty() {
            return Err(anyhow!(
                "the taskId is empty — pass the id that send returned"
            ));
        }
        self.store(|s| s.find(task_id))?
            .ok_or_else(|| unknown_task(task_id, None))
    }

    /// This session's tasks, oldest first.
    pub fn tasks(&self) -> Result<Vec<TaskRecord>> {
        self.store(|s| s.all())
    }
}

fn unknown_task(task_id: &str, worker: Option<&str>) -> anyhow::Error {
    match worker {
        Some(w) => anyhow!(
            "task {task_id} of worker {w:?} is not in this session — use the taskId that send returned (the tasks tool lists them)"
        ),
        None => anyhow!(
            "task {task_id} is not in this session — use the taskId that send returned (the tasks tool lists them)"
        ),
    }
}

/// One line that says what failed, why, and what to do.
pub fn worker_error(alias: &str, url: &str, e: &A2aError) -> anyhow::Error {
    let fix = match e {
        A2aError::Auth { .. } => {
            format!("check the credentials configured for it (`a2a-mod worker show {alias}`)")
        }
        A2aError::Timeout(_) => "the worker is slow or stuck; try again later".to_string(),
        A2aError::Unreachable(_) => format!("check that it is running at {url}"),
        A2aError::Protocol(_) | A2aError::Rpc { .. } => {
            format!("check that {url} is an A2A agent (`a2a-mod worker show {alias}`)")
        }
        A2aError::TaskNotFound => "send the work again".to_string(),
        A2aError::NotCancelable => "it has already ended".to_string(),
        A2aError::Credentials(_) => {
            format!("fix the credentials of worker {alias:?} in config.toml or the environment")
        }
    };
    anyhow!("worker {alias:?}: {e} — {fix}")
}
