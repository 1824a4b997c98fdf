//! The server's tasks: made by a send, run by an [`Executor`] one at a time per context and at
//! most `max_concurrent` at once (the rest wait, `submitted`, in arrival order), told to streams
//! as they change, kept in the store at each durable change so GetTask and ListTasks answer after
//! a restart.
//!
//! A run is owned by the engine, not by the request that started it: a client that disconnects
//! (a closed stream, a dropped blocking send) cancels nothing; only CancelTask stops a run.
//! Locks are std mutexes held for synchronous work only, never across an await.

use crate::task::{Event, Grants, Msg, Reply, Report, Task, Update, running};
use crate::wire::{self, A2aError, Incoming};
use a2a_mod_core::task::TaskState;
use a2a_mod_store::served::{ListFilter, PushConfig, ServedContext, ServedStore, ServedTask};
use anyhow::Result;
use bytes::Bytes;
use futures::future::BoxFuture;
use serde_json::Map;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Semaphore, mpsc, watch};

/// One agent: its card, and how its runs are made.
#[derive(Debug, Clone)]
pub struct Agent {
    pub name: String,
    pub description: String,
    pub dir: PathBuf,
    pub config: a2a_mod_config::ServeAgentConfig,
}

/// Which Claude Code conversation a run continues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Session {
    /// The context's first run: a conversation with this id.
    New(String),
    /// A follow-up: the context's conversation, resumed.
    Resume(String),
}

impl Session {
    pub fn id(&self) -> &str {
        match self {
            Session::New(s) | Session::Resume(s) => s,
        }
    }
}

/// One run to make.
#[derive(Debug, Clone)]
pub struct Job {
    pub task_id: String,
    /// The client's name for the conversation; with `owner` and the agent, its key.
    pub context_id: String,
    /// Who sent it: the token's variable, or `local`.
    pub owner: String,
    pub agent: Arc<Agent>,
    pub text: String,
    pub session: Session,
    /// What the context's client allowed for good (`Report::Allowed`).
    pub allowed: Grants,
}

/// The executors, one per kind of agent: Claude Code (`claude.rs`) for most, a command
/// (`exec.rs`) for an agent whose config names one.
pub struct Executors {
    pub claude: Arc<dyn Executor>,
    pub exec: Arc<dyn Executor>,
}

impl Executors {
    fn of(&self, agent: &Agent) -> &Arc<dyn Executor> {
        if agent.config.exec.is_some() {
            &self.exec
        } else {
            &self.claude
        }
    }
}

/// What runs a task: Claude Code (`claude.rs`), any command (`exec.rs`), or anything else that
/// reports the same way.
pub trait Executor: Send + Sync + 'static {
    /// Runs `job` to its end, sending what happens to `reports` (an [`Report::Ended`] last). When
    /// `stop` turns true the run is stopped and the future returns; the engine ends the task
    /// `canceled`. A future that returns without `Ended` ends it `failed`. After a
    /// [`Report::Ask`] the answer comes on `replies` (the client's, or that nobody answered).
    fn run(
        &self,
        job: Job,
        reports: mpsc::Sender<Report>,
        stop: watch::Receiver<bool>,
        replies: mpsc::UnboundedReceiver<Reply>,
    ) -> BoxFuture<'static, ()>;
}

/// A page of ListTasks: its tasks, how many match in all, and where the next page starts (the
/// last task's `updated_ms` and id, as the store orders them) when there is one.
pub struct Listed {
    pub tasks: Vec<Task>,
    pub total: usize,
    pub next: Option<(i64, String)>,
}

/// A task a run may still change: its state, every change in order (for the streams), and the
/// switch that stops its run.
pub struct Live {
    inner: Mutex<LiveInner>,
    /// The number of events so far; streams wait on it.
    told: watch::Sender<usize>,
    stop: watch::Sender<bool>,
    /// The answers to the run's questions: sent only by whoever moves the task out of
    /// `input-required` (the client's reply or the timer), under the lock, so each question
    /// gets exactly one.
    replies: mpsc::UnboundedSender<Reply>,
    owner: String,
    /// Streams reading it now (`serve.max_streams_per_task` bounds them).
    pub readers: AtomicUsize,
    /// Whether a webhook may have been registered for it: its durable changes are then queued
    /// for the webhooks with the task's write (`push.rs`).
    pushing: AtomicBool,
}

struct LiveInner {
    task: Task,
    events: Vec<Event>,
    /// The answer so far as JSON string content (escaped, no quotes), escaped once as it comes
    /// and shared by every stream that starts with the task (`stream.rs`), so a late reader of
    /// a long answer costs references, not a copy.
    answer: AnswerJson,
    /// Questions asked so far: a timer answers only the question it was set for.
    asks: u64,
    /// How much of the answer (bytes) the webhooks have been told.
    told_answer: usize,
}

/// The answer's JSON, append-only: full blocks shared as they are, and the tail still filling.
#[derive(Default)]
struct AnswerJson {
    blocks: Vec<Bytes>,
    tail: Vec<u8>,
}

/// A block's size: big enough that a long answer is a few hundred writes, small enough that
/// copying the tail for each new reader costs little.
const ANSWER_BLOCK: usize = 16 << 10;

impl AnswerJson {
    fn push(&mut self, text: &str) {
        // A JSON string's escapes are per character, so the pieces' escapes add up to the whole's.
        let quoted = serde_json::to_string(text).unwrap_or_default();
        self.tail.extend_from_slice(
            quoted
                .as_bytes()
                .get(1..quoted.len() - 1)
                .unwrap_or_default(),
        );
        if self.tail.len() >= ANSWER_BLOCK {
            self.blocks
                .push(Bytes::from(std::mem::take(&mut self.tail)));
        }
    }
}

/// Where a stream starts: the event count, the task then (less its answer), and the answer's
/// JSON then: `blocks` shared blocks (read with [`Live::answer_block`]) and a copy of the tail.
pub struct Start {
    pub rx: watch::Receiver<usize>,
    pub from: usize,
    pub task: Task,
    pub has_answer: bool,
    pub blocks: usize,
    pub tail: Bytes,
}

impl Live {
    pub fn snapshot(&self) -> Task {
        lock(&self.inner).task.clone()
    }

    /// Whether a run may still change the task (read without copying it): it runs, waits for
    /// a slot, or waits for an answer.
    pub fn is_live(&self) -> bool {
        running(lock(&self.inner).task.state)
    }

    /// Whether the task waits for nothing from the server: it ended, or asks the client.
    fn is_settled(&self) -> bool {
        !lock(&self.inner).task.state.is_live()
    }

    /// The events from `from` on, and the task after them without its answer and history (what
    /// an event names of it: ids, metadata), so a token stream costs its chunks, not a copy of
    /// the text so far per batch. At most [`EVENT_BATCH`] of them: a reader far behind copies a
    /// batch at a time.
    pub fn since(&self, from: usize) -> (Vec<Event>, Task) {
        let inner = lock(&self.inner);
        let events = inner
            .events
            .get(from..)
            .map(|e| e[..e.len().min(EVENT_BATCH)].to_vec())
            .unwrap_or_default();
        (events, inner.task.head())
    }

    /// Where a new stream starts, read in one step (a stream starts with the task, then tells
    /// the events after it). Copies no more of the answer than its tail block.
    pub fn start(&self) -> Start {
        let inner = lock(&self.inner);
        Start {
            rx: self.told.subscribe(),
            from: inner.events.len(),
            task: inner.task.head(),
            has_answer: !inner.task.answer.is_empty(),
            blocks: inner.answer.blocks.len(),
            tail: Bytes::copy_from_slice(&inner.answer.tail),
        }
    }

    /// Block `i` of the answer's JSON (blocks never change once full).
    pub fn answer_block(&self, i: usize) -> Option<Bytes> {
        lock(&self.inner).answer.blocks.get(i).cloned()
    }
}

/// The most events a stream copies at once.
pub const EVENT_BATCH: usize = 256;

/// A poisoned lock only means a panic elsewhere mid-update; the data is still what was written.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The engine's limits.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_concurrent: usize,
    pub max_queued: usize,
    /// Live tasks (running, waiting, asking) one owner may have.
    pub max_live_per_owner: Option<usize>,
    /// What one owner's runs may cost in a UTC day, in USD.
    pub per_token_daily_usd: Option<f64>,
}

pub struct Engine {
    store: Mutex<ServedStore>,
    /// Held while a send is admitted: the limits are checked and the task counted (stored
    /// live, queued) in one step, so concurrent sends cannot all pass one check.
    admit: Mutex<()>,
    live: Mutex<HashMap<String, Arc<Live>>>,
    /// One run at a time per context: a follow-up resumes the conversation the last run wrote.
    contexts: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// One run at a time per git work tree, so each run's patch holds its own changes only
    /// (`changes.rs`); an entry per agent dir.
    dirs: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    executors: Executors,
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    limits: Limits,
    /// Set by [`Engine::drain`]: no new task is taken.
    draining: AtomicBool,
    /// Set by [`Engine::shutdown`]: a run stopped now ends `failed` ([`STOPPED`]), not canceled.
    closing: AtomicBool,
    /// Told when POSTs to webhooks are queued (`push.rs`).
    push_wake: Arc<tokio::sync::Notify>,
}

/// The A2A error a send that cannot be taken now gets; REST says 503.
pub const SERVER_BUSY: i64 = -32000;

/// What a task a stopping server ends gets told.
pub const STOPPED: &str =
    "the server stopped while this task ran, and its run was stopped — send the message again";

/// What a restart tells about a run it found cut short.
pub const RESTARTED: &str =
    "the server restarted while this task ran, and its run was stopped — send the message again";

impl Engine {
    /// Opens the store; tasks a run was changing when the server stopped end `failed`
    /// ([`RESTARTED`]): their process is gone with the server, and resuming one silently could
    /// repeat work its first run had done.
    pub fn open(store: ServedStore, executors: Executors, limits: Limits) -> Result<Engine> {
        let now = a2a_mod_os::env::now_ms();
        for row in store.live()? {
            let mut t = task_of(&row)?;
            let update = t.apply(ended(TaskState::Failed, Some(RESTARTED.into())), now);
            let ev = update.map(|update| Event {
                update,
                state: t.state,
                status_text: t.status_text.clone(),
                at_ms: now,
            });
            // Its webhooks are told the end, the answer whole with it (what they were told of
            // it before the restart is not known).
            store.put_telling(&row_of(&t, &row.owner), |d| {
                ev.as_ref()
                    .map(|ev| crate::push::bodies(d, &t, ev, 0))
                    .unwrap_or_default()
            })?;
            tracing::info!(task = %t.id, "ended: the server restarted during its run");
        }
        Ok(Engine {
            store: Mutex::new(store),
            admit: Mutex::new(()),
            live: Mutex::new(HashMap::new()),
            contexts: Mutex::new(HashMap::new()),
            dirs: Mutex::new(HashMap::new()),
            executors,
            slots: Arc::new(Semaphore::new(limits.max_concurrent)),
            waiting: AtomicUsize::new(0),
            limits,
            draining: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            push_wake: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// Runs `f` on the store (under its lock: keep it short).
    pub(crate) fn with_store<T>(&self, f: impl FnOnce(&ServedStore) -> T) -> T {
        f(&lock(&self.store))
    }

    /// What the push workers wait on.
    pub(crate) fn push_wake(&self) -> Arc<tokio::sync::Notify> {
        self.push_wake.clone()
    }

    fn persist(&self, t: &Task, owner: &str) {
        if let Err(e) = lock(&self.store).put(&row_of(t, owner)) {
            // The task goes on in memory; GetTask still answers while the server runs.
            tracing::error!(task = %t.id, "cannot save the task: {e:#}");
        }
    }

    /// [`Engine::persist`] that also queues the change (its last event) for the task's webhooks.
    fn persist_telling(&self, inner: &mut LiveInner, owner: &str) {
        let Some(ev) = inner.events.last() else {
            return;
        };
        let (t, told) = (&inner.task, inner.told_answer);
        let queued = lock(&self.store)
            .put_telling(&row_of(t, owner), |d| crate::push::bodies(d, t, ev, told));
        match queued {
            Ok(n) => {
                inner.told_answer = inner.task.answer.len();
                if n > 0 {
                    self.push_wake.notify_one();
                }
            }
            Err(e) => tracing::error!(task = %inner.task.id, "cannot save the task: {e:#}"),
        }
    }

    /// A task as its owner may see it: the live one, else the stored one.
    pub fn get(&self, owner: &str, agent: &str, id: &str) -> Result<Task, A2aError> {
        let not_found = || A2aError::new(wire::TASK_NOT_FOUND, format!("Task not found: {id}"));
        if let Some(l) = lock(&self.live).get(id).cloned() {
            let t = l.snapshot();
            return if l.owner == owner && t.agent == agent {
                Ok(t)
            } else {
                Err(not_found())
            };
        }
        let row = lock(&self.store).get(id).map_err(internal)?;
        match row {
            Some(r) if r.owner == owner && r.agent == agent => task_of(&r).map_err(internal),
            _ => Err(not_found()),
        }
    }

    /// The live task, if it is.
    pub fn live(&self, id: &str) -> Option<Arc<Live>> {
        lock(&self.live).get(id).cloned()
    }

    /// ListTasks: newest first, live ones as they are now.
    /// A page of ListTasks.
    pub fn list(
        &self,
        owner: &str,
        agent: &str,
        f: &ListFilter<'_>,
        page: usize,
    ) -> Result<Listed, A2aError> {
        let (mut rows, total) = lock(&self.store)
            .list(agent, owner, f, page + 1)
            .map_err(internal)?;
        let more = rows.len() > page;
        rows.truncate(page);
        let next = more
            .then(|| rows.last().map(|r| (r.updated_ms, r.id.clone())))
            .flatten();
        let tasks = rows
            .iter()
            .map(|r| match self.live(&r.id) {
                Some(l) => Ok(l.snapshot()),
                None => task_of(r).map_err(internal),
            })
            .collect::<Result<_, _>>()?;
        Ok(Listed { tasks, total, next })
    }

    /// A new task for `msg`, queued for a run; returns it as it is now (`submitted`).
    pub fn send(
        self: &Arc<Self>,
        owner: &str,
        agent: &Arc<Agent>,
        mut msg: Incoming,
    ) -> Result<Arc<Live>, A2aError> {
        if let Some(id) = msg.task_id.clone() {
            return self.reply(owner, agent, &id, msg);
        }
        let now = a2a_mod_os::env::now_ms();
        let (mut task, session, allowed) = self
            .admit(owner, agent, msg.context_id.as_deref(), now)
            .inspect_err(|e| {
                if e.code == SERVER_BUSY {
                    tracing::warn!("refused a task for {owner}: {}", e.message);
                }
            })?;
        let id = task.id.clone();
        // The send's webhook and files are saved after the task is counted, outside the
        // admission lock: a slow write holds no other sender, and the count already holds this
        // task's place. The webhook before the run starts, so it hears of every change (a new
        // task has none yet: no cap to pass).
        let pushing = msg.push.is_some();
        let registered = match msg.push.take() {
            Some(c) => lock(&self.store)
                .put_push(&crate::push::for_task(c, &id), crate::push::MAX_PER_TASK)
                .map(drop)
                .map_err(internal),
            None => Ok(()),
        };
        let saved = registered.and_then(|()| {
            crate::inbox::save(&agent.dir, &id, &msg.files).map_err(|e| {
                tracing::warn!(task = %id, "cannot save the message's files: {e:#}");
                A2aError::new(
                    wire::INTERNAL_ERROR,
                    "Internal error: the message's files could not be saved in the agent's folder — tell its operator",
                )
            })
        });
        let files = match saved {
            Ok(f) => f,
            Err(e) => {
                if let Err(e) = lock(&self.store).delete(&id) {
                    tracing::error!(task = %id, "cannot forget the task: {e:#}");
                }
                self.waiting.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        };
        task.history.push(Msg {
            message_id: msg.message_id.clone(),
            agent: false,
            text: msg.text.clone(),
        });
        self.persist(&task, owner);
        tracing::info!(
            "task {id} accepted: agent {}, token {owner}, context {}",
            agent.name,
            task.context_id
        );
        let (replies, answers) = mpsc::unbounded_channel();
        let context_id = task.context_id.clone();
        let live = Arc::new(Live {
            inner: Mutex::new(LiveInner {
                task,
                events: Vec::new(),
                answer: AnswerJson::default(),
                asks: 0,
                told_answer: 0,
            }),
            told: watch::channel(0).0,
            stop: watch::channel(false).0,
            replies,
            owner: owner.to_string(),
            readers: AtomicUsize::new(0),
            pushing: AtomicBool::new(pushing),
        });
        lock(&self.live).insert(id.clone(), live.clone());
        let job = Job {
            task_id: id,
            context_id,
            owner: owner.to_string(),
            agent: agent.clone(),
            text: if msg.text.trim().is_empty() {
                files.trim_start().to_string()
            } else {
                msg.text + &files
            },
            session,
            allowed,
        };
        let engine = self.clone();
        let l = live.clone();
        tokio::spawn(async move { engine.drive(l, job, answers).await });
        Ok(live)
    }

    /// Admits a new task in one step under the admission lock: the server takes tasks, the
    /// owner is within its limits, the queue has room; then the task is stored live (which the
    /// owner's count reads) and queued, before the lock is let go.
    fn admit(
        &self,
        owner: &str,
        agent: &Agent,
        context: Option<&str>,
        now: i64,
    ) -> Result<(Task, Session, Grants), A2aError> {
        let _admit = lock(&self.admit);
        if self.draining.load(Ordering::SeqCst) {
            return Err(A2aError::new(
                SERVER_BUSY,
                "Server stopping: it takes no new task now — send again once it is back",
            ));
        }
        self.check_owner(owner)?;
        if self.waiting.load(Ordering::SeqCst) >= self.limits.max_queued {
            return Err(A2aError::new(
                SERVER_BUSY,
                format!(
                    "Server busy: {} tasks are waiting for a run (serve.max_queued) — try again later",
                    self.limits.max_queued
                ),
            ));
        }
        let (context_id, session, allowed) = self.context_for(owner, agent, context, now)?;
        let id = a2a_mod_os::ids::uuid_v4();
        let task = Task::new(&id, &context_id, &agent.name, now);
        lock(&self.store)
            .put(&row_of(&task, owner))
            .map_err(internal)?;
        self.waiting.fetch_add(1, Ordering::SeqCst);
        Ok((task, session, allowed))
    }

    /// Refuses a new task of an owner over its limits: its live tasks, its day's cost.
    fn check_owner(&self, owner: &str) -> Result<(), A2aError> {
        let store = lock(&self.store);
        if let Some(max) = self.limits.max_live_per_owner
            && store.live_of(owner).map_err(internal)? >= max
        {
            return Err(A2aError::new(
                SERVER_BUSY,
                format!(
                    "Too many tasks: your token has {max} running, waiting or asking (serve.per_token_max_concurrent) — wait for one to end, or cancel one, then send again"
                ),
            ));
        }
        if let Some(budget) = self.limits.per_token_daily_usd {
            let now = a2a_mod_os::env::now_ms();
            let day = now - now.rem_euclid(86_400_000);
            let spent = store.spent_since(owner, day).map_err(internal)?;
            if spent >= budget {
                return Err(A2aError::new(
                    SERVER_BUSY,
                    format!(
                        "Daily budget reached: your token's runs cost ${spent:.4} today, its budget is ${budget:.2} a day (serve.per_token_daily_usd) — send again after 00:00 UTC, or ask the operator to raise it"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A message naming a task: the answer to its question when it asks one, else refused (a
    /// task takes no message but the one that made it and the answers to its questions).
    fn reply(
        &self,
        owner: &str,
        agent: &Agent,
        id: &str,
        mut msg: Incoming,
    ) -> Result<Arc<Live>, A2aError> {
        let t = self.get(owner, &agent.name, id)?;
        let context = msg.context_id.as_deref();
        if context.is_some_and(|c| c != t.context_id) {
            return Err(A2aError::new(
                wire::INVALID_PARAMS,
                format!(
                    "Invalid params: task {id} belongs to another context than {}",
                    context.unwrap_or_default()
                ),
            ));
        }
        if let Some(live) = self.live(id)
            && t.state == TaskState::InputRequired
        {
            if !msg.files.is_empty() {
                return Err(A2aError::new(
                    wire::INVALID_PARAMS,
                    "Invalid params: an answer to a task's question is text only — send files in a new message",
                ));
            }
            if let Some(c) = msg.push.take() {
                self.set_push(owner, &agent.name, crate::push::for_task(c, id))?;
            }
            let text = msg.text.clone();
            let answer = Report::Answer(Msg {
                message_id: msg.message_id,
                agent: false,
                text: msg.text,
            });
            // Only the one that moves the task out of input-required answers it: the reply
            // or the timer, whichever comes first.
            if self.report_if(&live, answer, |i| i.task.state == TaskState::InputRequired) {
                let _ = live.replies.send(Reply::Said(text));
                return Ok(live);
            }
        }
        Err(if running(t.state) {
            A2aError::new(
                wire::UNSUPPORTED_OPERATION,
                format!(
                    "Unsupported operation: task {id} is working and asks nothing now — wait for its end, or cancel it"
                ),
            )
        } else {
            A2aError::new(
                wire::UNSUPPORTED_OPERATION,
                format!(
                    "Unsupported operation: task {id} is {} (a terminal state) — send a new message without its taskId; its contextId continues the conversation",
                    t.state
                ),
            )
        })
    }

    /// CreateTaskPushNotificationConfig: a webhook for a task its owner may see (or the one of
    /// that id replaced). A finished task takes one too (kept, and told nothing more).
    pub fn set_push(
        &self,
        owner: &str,
        agent: &str,
        c: PushConfig,
    ) -> Result<PushConfig, A2aError> {
        self.get(owner, agent, &c.task_id)?;
        // Set before the write: a change made meanwhile finds the webhook or comes before it.
        if let Some(l) = self.live(&c.task_id) {
            l.pushing.store(true, Ordering::SeqCst);
        }
        let max = crate::push::MAX_PER_TASK;
        if !lock(&self.store).put_push(&c, max).map_err(internal)? {
            return Err(A2aError::new(
                wire::INVALID_PARAMS,
                format!(
                    "Invalid params: task {} has {max} push notification configs already — delete one first",
                    c.task_id
                ),
            ));
        }
        Ok(c)
    }

    /// A task's webhooks (GetTaskPushNotificationConfig, ListTaskPushNotificationConfigs).
    pub fn pushes(
        &self,
        owner: &str,
        agent: &str,
        task_id: &str,
    ) -> Result<Vec<PushConfig>, A2aError> {
        self.get(owner, agent, task_id)?;
        lock(&self.store).pushes(task_id).map_err(internal)
    }

    /// DeleteTaskPushNotificationConfig: the webhook and what was still to POST to it are gone;
    /// deleting one that is not there is no error (the spec makes it idempotent).
    pub fn delete_push(
        &self,
        owner: &str,
        agent: &str,
        task_id: &str,
        id: &str,
    ) -> Result<(), A2aError> {
        self.get(owner, agent, task_id)?;
        lock(&self.store)
            .delete_push(task_id, id)
            .map(drop)
            .map_err(internal)
    }

    /// The context a message goes on in, and the Claude Code session of it. A context is its
    /// owner's: another token naming the same id gets a conversation of its own, as an unknown
    /// id does, so an id reveals nothing and cannot be taken from its owner.
    fn context_for(
        &self,
        owner: &str,
        agent: &Agent,
        context: Option<&str>,
        now: i64,
    ) -> Result<(String, Session, Grants), A2aError> {
        let store = lock(&self.store);
        if let Some(c) = context
            && let Some(ctx) = store.context(owner, &agent.name, c).map_err(internal)?
        {
            let grants = Grants {
                rules: ctx.allowed,
                dirs: ctx.dirs,
            };
            return Ok((ctx.id, Session::Resume(ctx.session_id), grants));
        }
        // A new conversation; a contextId the client chose names it (it is only ever a key).
        let id = context.map_or_else(a2a_mod_os::ids::uuid_v4, str::to_string);
        let session = a2a_mod_os::ids::uuid_v4();
        store
            .put_context(&ServedContext {
                id: id.clone(),
                agent: agent.name.clone(),
                owner: owner.to_string(),
                session_id: session.clone(),
                created_ms: now,
                allowed: Vec::new(),
                dirs: Vec::new(),
            })
            .map_err(internal)?;
        Ok((id, Session::New(session), Grants::default()))
    }

    /// Applies a report: the task, its stream, and the store when the change is durable.
    fn report(&self, live: &Live, r: Report) {
        self.report_if(live, r, |_| true);
    }

    /// Applies a report if `when` holds of the task as it is, in one step: the task, its
    /// stream, and the store when the change is durable (written under the task's lock, so a
    /// reply, a timer and the run never store their changes out of order). Whether it applied.
    fn report_if(&self, live: &Live, r: Report, when: impl FnOnce(&LiveInner) -> bool) -> bool {
        let durable = !matches!(r, Report::Text(_));
        let asks = matches!(r, Report::Ask { .. });
        let now = a2a_mod_os::env::now_ms();
        let mut inner = lock(&live.inner);
        if !when(&inner) {
            return false;
        }
        let Some(update) = inner.task.apply(r, now) else {
            return false;
        };
        inner.asks += u64::from(asks);
        if let Update::Chunk { text, .. } = &update {
            inner.answer.push(text);
        }
        // A chunk's event tells no status: no copy of the status line per token.
        let status_text = match update {
            Update::Status => inner.task.status_text.clone(),
            Update::Chunk { .. } | Update::Changes => None,
        };
        let ev = Event {
            update,
            state: inner.task.state,
            status_text,
            at_ms: now,
        };
        inner.events.push(ev);
        let n = inner.events.len();
        let ended = !running(inner.task.state);
        if durable || ended {
            if live.pushing.load(Ordering::SeqCst) {
                self.persist_telling(&mut inner, &live.owner);
            } else {
                self.persist(&inner.task, &live.owner);
            }
            if ended {
                log_end(&inner.task, now);
            }
        }
        drop(inner);
        live.told.send_replace(n);
        true
    }

    /// After `wait`, answers the run's question `n` with "nobody answered", unless the client
    /// did first.
    fn time_out(self: &Arc<Self>, live: &Arc<Live>, n: u64, wait: std::time::Duration) {
        let (engine, live) = (self.clone(), live.clone());
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            let secs = wait.as_secs();
            let step = Report::Step(format!(
                "No answer within {secs} s: not allowed, the run goes on without it"
            ));
            if engine.report_if(&live, step, |i| {
                i.asks == n && i.task.state == TaskState::InputRequired
            }) {
                tracing::info!(task = %lock(&live.inner).task.id, "no answer within {secs} s");
                let _ = live.replies.send(Reply::TimedOut(secs));
            }
        });
    }

    /// The task's whole run: its turn in its context and for a slot, the executor, the end.
    async fn drive(
        self: Arc<Self>,
        live: Arc<Live>,
        job: Job,
        replies: mpsc::UnboundedReceiver<Reply>,
    ) {
        let mut stop = live.stop.subscribe();
        let turn = lock(&self.contexts)
            .entry(turn_key(&job))
            .or_default()
            .clone();
        let repo = crate::changes::Repo::at(&job.agent.dir).await;
        let dir_turn = repo.as_ref().map(|_| {
            lock(&self.dirs)
                .entry(job.agent.dir.clone())
                .or_default()
                .clone()
        });
        let slots = self.slots.clone();
        let started = tokio::select! {
            guard = async move {
                let g = turn.lock_owned().await;
                let d = match dir_turn {
                    Some(m) => Some(m.lock_owned().await),
                    None => None,
                };
                let p = slots.acquire_owned().await;
                (g, d, p)
            } => Some(guard),
            () = stopped(&mut stop) => None,
        };
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        let Some((_turn, _dir, Ok(_slot))) = started else {
            self.report(&live, self.stopped_end());
            self.retire(&job);
            return;
        };
        self.report(&live, Report::Started);
        tracing::info!(task = %job.task_id, agent = %job.agent.name, session = %job.session.id(), "run started");
        let before = match &repo {
            Some(r) => r
                .snapshot(&format!("{}-before", job.task_id))
                .await
                .inspect_err(|e| tracing::warn!(task = %job.task_id, "no changes.patch: {e:#}"))
                .ok(),
            None => None,
        };
        let (tx, mut rx) = mpsc::channel(256);
        let run =
            self.executors
                .of(&job.agent)
                .run(job.clone(), tx, live.stop.subscribe(), replies);
        let mut run = std::pin::pin!(run);
        let mut finished = false;
        // With a snapshot to compare, the end waits for the run's changes, told first.
        let mut end = None;
        loop {
            tokio::select! {
                r = rx.recv() => match r {
                    Some(r @ Report::Ended { .. }) if before.is_some() => end = Some(r),
                    Some(Report::Allowed(grants)) => self.allow(&job, &grants),
                    Some(r @ Report::Ask { .. }) => {
                        self.report(&live, r);
                        let n = lock(&live.inner).asks;
                        self.time_out(&live, n, job.agent.config.ask_timeout());
                    }
                    Some(r) => self.report(&live, r),
                    None if finished => break,
                    // Every sender is gone: the run is ending; wait for it.
                    None => { (&mut run).await; break; }
                },
                () = &mut run, if !finished => finished = true,
            }
        }
        if let (Some(end), Some(repo), Some(before)) = (end, &repo, &before) {
            self.report_changes(&live, &job, repo, before).await;
            self.report(&live, end);
        }
        if live.is_live() {
            let end = if *live.stop.borrow() {
                self.stopped_end()
            } else {
                ended(
                    TaskState::Failed,
                    Some("the run ended without a result".into()),
                )
            };
            self.report(&live, end);
        }
        self.retire(&job);
    }

    /// What the run changed in the agent's git folder since `before`, told as the task's
    /// changes (nothing when it changed nothing; a warning when they cannot be read).
    async fn report_changes(
        &self,
        live: &Live,
        job: &Job,
        repo: &crate::changes::Repo,
        before: &str,
    ) {
        let changes = async {
            let after = repo.snapshot(&format!("{}-after", job.task_id)).await?;
            repo.diff(before, &after).await
        }
        .await;
        match changes {
            Ok(c) if !c.files.is_empty() => self.report(
                live,
                Report::Changes {
                    patch: c.patch,
                    files: c.files,
                },
            ),
            Ok(_) => {}
            Err(e) => tracing::warn!(task = %job.task_id, "no changes.patch: {e:#}"),
        }
    }

    /// Keeps what the client allowed for good for the context's later runs.
    fn allow(&self, job: &Job, grants: &Grants) {
        let stored = lock(&self.store).grant(
            &job.owner,
            &job.agent.name,
            &job.context_id,
            &grants.rules,
            &grants.dirs,
        );
        if let Err(e) = stored {
            // This run has it already; a later one asks again.
            tracing::warn!(task = %job.task_id, "cannot keep what was allowed for good: {e:#}");
        }
    }

    /// How a stopped run ends: canceled by its client, or failed when the server stops.
    fn stopped_end(&self) -> Report {
        if self.closing.load(Ordering::SeqCst) {
            ended(TaskState::Failed, Some(STOPPED.into()))
        } else {
            ended(TaskState::Canceled, None)
        }
    }

    /// Takes no new task from now on (a send is refused, saying so); what runs goes on.
    pub fn drain(&self) {
        let _admit = lock(&self.admit);
        self.draining.store(true, Ordering::SeqCst);
    }

    /// The server stops: no new task; the tasks taken get `grace` to end by themselves, then
    /// every run still going is stopped and ends `failed` ([`STOPPED`]). Returns once each task
    /// has ended and is stored (each run within its executor's grace after its stop).
    pub async fn shutdown(&self, grace: std::time::Duration) {
        self.drain();
        let live: Vec<Arc<Live>> = lock(&self.live).values().cloned().collect();
        let all_settled = async {
            for l in &live {
                Engine::settled(l).await;
            }
        };
        if tokio::time::timeout(grace, all_settled).await.is_ok() {
            return;
        }
        self.closing.store(true, Ordering::SeqCst);
        let live: Vec<Arc<Live>> = lock(&self.live).values().cloned().collect();
        tracing::info!(
            "stopping {} run(s) still going after {} s",
            live.len(),
            grace.as_secs_f64()
        );
        for l in &live {
            l.stop.send_replace(true);
        }
        for l in live {
            Engine::settled(&l).await;
        }
    }

    /// A finished task leaves the live map (streams still reading it keep it until they end).
    fn retire(&self, job: &Job) {
        lock(&self.live).remove(&job.task_id);
        let mut contexts = lock(&self.contexts);
        let key = turn_key(job);
        if let Some(m) = contexts.get(&key)
            && Arc::strong_count(m) == 1
        {
            contexts.remove(&key);
        }
    }

    /// CancelTask: stops the run (or takes the task out of the queue) and returns the task once
    /// it has ended.
    pub async fn cancel(&self, owner: &str, agent: &str, id: &str) -> Result<Task, A2aError> {
        let t = self.get(owner, agent, id)?;
        let Some(live) = self.live(id).filter(|_| running(t.state)) else {
            return Err(A2aError::new(
                wire::TASK_NOT_CANCELABLE,
                format!("Task cannot be canceled: it is already {}", t.state),
            ));
        };
        live.stop.send_replace(true);
        // The executor's own grace bounds this: SIGTERM, then SIGKILL.
        Ok(Engine::settled(&live).await)
    }

    /// Waits until the task has ended (a cancel, a shutdown).
    pub async fn settled(live: &Live) -> Task {
        let mut rx = live.told.subscribe();
        let _ = rx.wait_for(|_| !live.is_live()).await;
        live.snapshot()
    }

    /// Waits until the task has ended or asks the client something (a blocking send).
    pub async fn answered(live: &Live) -> Task {
        let mut rx = live.told.subscribe();
        let _ = rx.wait_for(|_| live.is_settled()).await;
        live.snapshot()
    }
}

/// Returns once `stop` is true (never, if its sender is gone without it).
pub async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The key of a context's turn: its owner's, for its agent.
fn turn_key(job: &Job) -> String {
    format!("{}\n{}\n{}", job.owner, job.agent.name, job.context_id)
}

/// One line per ending: the state, what the run cost (when it says), and how long the task took.
fn log_end(t: &Task, now_ms: i64) {
    let cost = ["claudeCode", "exec"]
        .iter()
        .find_map(|k| t.metadata.get(*k)?.get("costUsd")?.as_f64())
        .map_or_else(String::new, |usd| format!(", ${usd:.4}"));
    let secs = (now_ms - t.created_ms).max(0) as f64 / 1000.0;
    tracing::info!("task {} {}{cost} in {secs:.1} s", t.id, t.state);
}

fn ended(state: TaskState, words: Option<String>) -> Report {
    Report::Ended {
        state,
        words,
        metadata: Map::new(),
    }
}

fn internal(e: anyhow::Error) -> A2aError {
    tracing::error!("store: {e:#}");
    A2aError::new(
        wire::INTERNAL_ERROR,
        "Internal error: the task store failed",
    )
}

fn row_of(t: &Task, owner: &str) -> ServedTask {
    ServedTask {
        id: t.id.clone(),
        agent: t.agent.clone(),
        context_id: t.context_id.clone(),
        owner: owner.to_string(),
        state: t.state.as_str().to_string(),
        live: running(t.state),
        created_ms: t.created_ms,
        updated_ms: t.updated_ms,
        body: serde_json::to_string(t).unwrap_or_default(),
    }
}

fn task_of(r: &ServedTask) -> Result<Task> {
    Ok(serde_json::from_str(&r.body)?)
}

#[cfg(test)]
mod tests;
