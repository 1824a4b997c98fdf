//! [`Worker`]: one configured A2A agent, as the session, the poller, the MCP tools and `doctor`
//! use it. Owns discovery (once per Worker), the dialect choice and the v1 → v0.3 fallback, the
//! auth retry on 401/403, and the classification of answers into [`A2aError`]. The official
//! `a2a-client-lf` is not used: it cannot reach v0.3 agents and turns 401/403/5xx/timeouts into one
//! JSON-RPC error (docs/a2a.md "Which client").

use super::auth::{self, Cred, TokenCache};
use super::card::{self, Binding, Card, Dialect, Endpoint};
use super::http::{Answer, Budget, Resend, Size, fetch};
use super::parts::OutPart;
use super::signature::{self, Verdict};
use super::stream::{self, Refusal, StreamOp, TaskStream};
use super::wire::{self, Op, RpcAnswer};
use crate::error::A2aError;
use crate::view::{CardSummary, TaskView};
use a2a_mod_config::WorkerConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::time::Instant;

pub use super::http::http_client;

/// One worker. Cheap to share behind an `Arc`; the card and tokens are cached inside.
pub struct Worker {
    pub alias: String,
    pub config: WorkerConfig,
    http: reqwest::Client,
    state: Mutex<State>,
    pub(super) tokens: TokenCache,
    next_id: AtomicU64,
}

#[derive(Default)]
struct State {
    card: Option<Arc<Card>>,
    /// A v1 call met a v0.3-only server: use the card's fallback endpoint from now on.
    fell_back: bool,
    /// Streaming is off for this worker: config said so (for good), or it claimed streaming
    /// and refused it (until [`STREAM_RETRY`] has passed, then tried again; logged once).
    no_stream: NoStream,
}

/// Whether stream calls go to the worker.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum NoStream {
    #[default]
    Streams,
    /// `[streaming] enabled = false`.
    Configured,
    /// The worker refused a stream call in a way that means it does not serve one: plain calls
    /// until then. Not for good: a refusal holds only as long as it is likely to (a worker
    /// restarted with streaming, a proxy fixed), and one more refused call costs little.
    Until(Instant),
}

impl NoStream {
    fn off(self, now: Instant) -> bool {
        match self {
            NoStream::Streams => false,
            NoStream::Configured => true,
            NoStream::Until(t) => now < t,
        }
    }
}

/// How long a worker that refused streaming is sent plain calls before a stream call is tried
/// again.
const STREAM_RETRY: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// The workers one process has built, by alias, each kept for its cached card and tokens: one
/// home for how a worker is built from config (its streaming switched off when `[streaming]`
/// says so), shared by the MCP server's and CLI's sessions and the poller.
#[derive(Default)]
pub struct Workers {
    built: std::collections::HashMap<String, Arc<Worker>>,
}

impl Workers {
    /// The worker `alias`, built from its config at its first use (`streaming`: the config's
    /// `[streaming] enabled`).
    pub fn get(&mut self, alias: &str, cfg: &WorkerConfig, streaming: bool) -> Arc<Worker> {
        self.built
            .entry(alias.to_string())
            .or_insert_with(|| {
                let w = Worker::new(alias, cfg.clone(), http_client());
                if !streaming {
                    w.disable_streaming();
                }
                Arc::new(w)
            })
            .clone()
    }

    /// A worker already built (none is built here).
    pub fn built(&self, alias: &str) -> Option<&Arc<Worker>> {
        self.built.get(alias)
    }

    /// The config changed: workers are built anew from it.
    pub fn clear(&mut self) {
        self.built.clear();
    }
}

/// One message to a worker ([`Worker::send`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Outgoing<'a> {
    pub text: &'a str,
    /// Files and data after the text (`a2a::parts`).
    pub parts: &'a [OutPart],
    /// The input-required task it answers.
    pub task_id: Option<&'a str>,
    /// The conversation it goes on in.
    pub context_id: Option<&'a str>,
    /// Streamed when the worker streams; else a plain send.
    pub stream: bool,
}

impl<'a> Outgoing<'a> {
    /// Just the text, sent plainly.
    pub fn text(text: &'a str) -> Outgoing<'a> {
        Outgoing {
            text,
            ..Outgoing::default()
        }
    }
}

/// How a send began.
pub enum Started {
    /// The worker streams the task: its events follow (boxed: a stream is large beside a view).
    Stream(Box<TaskStream>),
    /// The worker does not stream (or declined): the plain send's answer.
    Plain(TaskView),
}

/// How a subscription began ([`Worker::follow`]).
pub enum Followed {
    /// The task's events follow, the whole task first (boxed: a stream is large beside the rest).
    Stream(Box<TaskStream>),
    /// The worker does not stream (its card, the config, or a refusal remembered).
    NotStreaming,
    /// This one call accepted nothing: why (the task unknown or ended, credentials, the network).
    Declined(A2aError),
}

/// History messages asked for when an ended task's answer may be only there: enough to reach
/// the agent's last message past a few of the user's, and a bounded answer.
const HISTORY_LOOK: u32 = 10;

/// Redirects followed for one card location before giving up.
const MAX_REDIRECTS: usize = 5;

/// Where a card GET ended up.
struct Fetched {
    /// The URL that gave the final answer (a card's relative URLs resolve against it).
    url: String,
    /// Redirects followed: the status and the target of each.
    hops: Vec<(u16, String)>,
    /// A redirect to this URL was not followed: it is outside the trusted origins.
    refused: Option<String>,
}

/// One page of a worker's own tasks ([`Worker::list_tasks`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listed {
    pub tasks: Vec<TaskView>,
    /// Tasks the worker listed that are not here: past the page, or not readable as tasks.
    pub left_out: usize,
}

/// How one exchange ended, before the fallback decision.
enum Fail {
    A2a(A2aError),
    /// The endpoint does not know the v1 method (JSON-RPC -32601, REST 404 on the route); the
    /// error is what to report if there is no v0.3 endpoint to try.
    MethodMissing(A2aError),
}

impl From<A2aError> for Fail {
    fn from(e: A2aError) -> Fail {
        Fail::A2a(e)
    }
}

/// Past the fallback decision, or where there is none: what to report.
impl From<Fail> for A2aError {
    fn from(f: Fail) -> A2aError {
        match f {
            Fail::A2a(e) | Fail::MethodMissing(e) => e,
        }
    }
}

impl Worker {
    pub fn new(alias: &str, config: WorkerConfig, http: reqwest::Client) -> Worker {
        Worker {
            alias: alias.to_string(),
            config,
            http,
            state: Mutex::new(State::default()),
            tokens: TokenCache::default(),
            next_id: AtomicU64::new(1),
        }
    }

    pub async fn card(&self, deadline: Instant) -> Result<CardSummary, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        let (ep, _) = self.endpoints(&card);
        Ok(card.summary(&ep))
    }

    /// GetTask without the history (a poll). A task that is over and says nothing of its answer
    /// is asked again with its history, where some agents leave the answer (`filled`).
    pub async fn get_task(&self, task_id: &str, deadline: Instant) -> Result<TaskView, A2aError> {
        let v = self
            .call(
                Op::Get {
                    id: task_id,
                    history: 0,
                },
                deadline,
            )
            .await?;
        Ok(self.filled(v, deadline).await)
    }

    /// `v` itself, or, when the task is over and `v` holds no answer (no artifact, no status
    /// message: Microsoft Agent Framework's default), the task as a GetTask with its recent
    /// history shows it, whose last agent message is then the answer. A failed look keeps `v`:
    /// the ending stands, only its answer is missing.
    pub async fn filled(&self, v: TaskView, deadline: Instant) -> TaskView {
        if !wire::lacks_answer(&v) {
            return v;
        }
        let op = Op::Get {
            id: &v.task_id,
            history: HISTORY_LOOK,
        };
        match self.call(op, deadline).await {
            Ok(w) if w.state == v.state && !wire::lacks_answer(&w) => w,
            Ok(_) => v,
            Err(e) => {
                tracing::debug!(worker = %self.alias, "no history for task {}: {e}", v.task_id);
                v
            }
        }
    }

    /// A streamed ending with its whole answer, the one rule wherever the chunks came from: a
    /// stream that joined mid-way (`partial`: `Some` with the chunks it read of the artifact it
    /// joined, [`TaskStream::seen_chunks`]) is completed from the worker's snapshot, the chunks it
    /// read itself winning over the snapshot's copy of them (`stream::rejoin`); an ending that
    /// says nothing of its answer is looked for in the history ([`Worker::filled`]).
    pub async fn whole(
        &self,
        v: TaskView,
        partial: Option<&[String]>,
        deadline: Instant,
    ) -> TaskView {
        if let Some(seen) = partial {
            match self.get_task(&v.task_id, deadline).await {
                Ok(mut snap) if snap.state == v.state => {
                    if let Some(t) = snap.text.as_deref().and_then(|t| stream::rejoin(t, seen)) {
                        snap.text = Some(t);
                    }
                    return snap;
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(
                    worker = %self.alias,
                    "no snapshot of task {} after a partial stream: {e}",
                    v.task_id
                ),
            }
        }
        self.filled(v, deadline).await
    }

    pub async fn cancel(&self, task_id: &str, deadline: Instant) -> Result<TaskView, A2aError> {
        self.call(Op::Cancel { id: task_id }, deadline).await
    }

    /// The verdict on the card's signatures (`worker show`).
    pub async fn card_signature(&self, deadline: Instant) -> Result<Verdict, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        Ok(self.verdict(&card, &budget).await)
    }

    /// The keys are read from their files at each check, so a rotated key is picked up.
    async fn verdict(&self, card: &Card, budget: &Budget) -> Verdict {
        let mut pinned = Vec::new();
        for f in &self.config.card_keys {
            match signature::load_card_keys(std::path::Path::new(f)) {
                Ok(k) => pinned.extend(k),
                Err(e) => return Verdict::Unverifiable(format!("card_keys: {e}")),
            }
        }
        signature::verify(card, &pinned, &self.http, budget).await
    }

    /// The credentials a request would carry now, for `doctor`: which they are and, for a token,
    /// how many seconds it has left (from a JWT's `exp`, else the cache's own reckoning). `None`
    /// when the worker needs none. Never the value.
    pub async fn credentials_now(
        &self,
        deadline: Instant,
    ) -> Result<Option<(String, Option<f64>)>, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        let Some(c) = self.creds(&card, &budget).await? else {
            return Ok(None);
        };
        let left = match &c.apply {
            auth::Apply::Header { value, .. } => value
                .expose()
                .split_whitespace()
                .last()
                .and_then(super::google::jwt_expires_in),
            auth::Apply::Sign(_) => None,
        }
        .or(self.tokens.left().await);
        Ok(Some((c.source, left)))
    }

    /// The extended agent card, when the card offers one (v1 `capabilities.extendedAgentCard`,
    /// v0.3 `supportsAuthenticatedExtendedCard`): asked for at the card's endpoint with the
    /// worker's credentials, read like any card. `None` when the card offers none.
    pub async fn extended_card(&self, deadline: Instant) -> Result<Option<CardSummary>, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        if !card.offers_extended() {
            return Ok(None);
        }
        let (ep, _) = self.endpoints(&card);
        let op = Op::ExtendedCard;
        let v = self.result(&card, &ep, &op, &budget).await?;
        let bad = |why: String| A2aError::Protocol(format!("{}: the extended card {why}", ep.url));
        if !card::looks_like_card(&v) {
            return Err(bad("is not an agent card".into()));
        }
        // Its own interfaces are not followed: calls keep going where the public card said.
        let extended =
            Card::parse(v, card.url.as_str(), self.forced()).map_err(|e| bad(e.to_string()))?;
        Ok(Some(extended.summary(&ep)))
    }

    /// The worker's own tasks (v1 ListTasks), in one context or all, in the worker's order (the
    /// spec's: newest first): one page of them and how many were left out (past the page, or
    /// unreadable). `None` from a worker that speaks only A2A 0.3, which has no such call.
    pub async fn list_tasks(
        &self,
        context_id: Option<&str>,
        deadline: Instant,
    ) -> Result<Option<Listed>, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        let (ep, _) = self.endpoints(&card);
        if ep.dialect == Dialect::V03 {
            return Ok(None);
        }
        let op = Op::List { context_id };
        let v = self.result(&card, &ep, &op, &budget).await?;
        let (tasks, left_out) = wire::parse_task_list(&v)
            .map_err(|why| A2aError::Protocol(format!("{}: {why}", ep.url)))?;
        Ok(Some(Listed { tasks, left_out }))
    }

    /// No stream calls to this worker from now on (config `[streaming] enabled = false`).
    pub fn disable_streaming(&self) {
        self.lock().no_stream = NoStream::Configured;
    }

    /// A stream call was accepted but its stream told no task (silence, garbage, a close): plain
    /// calls from now on, logged once.
    pub fn stream_failed(&self, why: &A2aError) {
        if self.stop_streaming() {
            tracing::warn!(worker = %self.alias, "the worker's stream told no task ({why}); polling it instead for {} minutes", STREAM_RETRY.as_secs() / 60);
        }
    }

    /// Whether this worker's card offers streaming (either binding), and it has not refused it.
    pub async fn streams(&self, deadline: Instant) -> bool {
        if self.lock().no_stream.off(Instant::now()) {
            return false;
        }
        let Ok(budget) = Budget::start(deadline) else {
            return false;
        };
        match self.discover(&budget).await {
            Ok(card) => self.stream_endpoint(&card).is_some(),
            Err(_) => false,
        }
    }

    fn stream_endpoint(&self, card: &Card) -> Option<Endpoint> {
        self.stream_endpoint_of(card, true)
    }

    /// The endpoint stream calls go to when the card offers streaming; `unless_refused`: and the
    /// worker has not refused it.
    fn stream_endpoint_of(&self, card: &Card, unless_refused: bool) -> Option<Endpoint> {
        let claims = card.doc.capabilities.streaming;
        let (ep, _) = self.endpoints(card);
        let refused = unless_refused && self.lock().no_stream.off(Instant::now());
        (claims && !refused).then_some(ep)
    }

    /// SendMessage: `m` as one message (its id made here, the same across a retry, so the
    /// worker makes one task). With [`Outgoing::stream`] it goes out streamed when the worker
    /// streams (`SendStreamingMessage` / `message/stream`); a refused stream call accepted
    /// nothing, so the message then goes out as a plain send, and a worker that does not serve
    /// streaming is remembered as such.
    pub async fn send(&self, m: &Outgoing<'_>, deadline: Instant) -> Result<Started, A2aError> {
        let message_id = a2a_mod_os::ids::uuid_v4();
        let op = StreamOp::Send {
            text: m.text,
            parts: m.parts,
            task_id: m.task_id,
            context_id: m.context_id,
            message_id: &message_id,
        };
        if !m.stream {
            return self.call(op.plain(), deadline).await.map(Started::Plain);
        }
        match self.open_stream(op, deadline).await {
            Ok(Followed::Stream(s)) => Ok(Started::Stream(s)),
            // The worker refused this message itself (a task that ended, a part it does not
            // take): the same message sent again plainly would only be refused again.
            Ok(Followed::Declined(why)) if why.is_refusal() => Err(why),
            // Nothing was accepted: the same message, by its id, goes out as a plain send.
            Ok(Followed::NotStreaming | Followed::Declined(_)) => {
                self.call(op.plain(), deadline).await.map(Started::Plain)
            }
            Err(e) => Err(e),
        }
    }

    /// A subscription to a live task (`SubscribeToTask` / `tasks/resubscribe`): its first event is
    /// the whole task. `Ok(None)` when the worker does not stream.
    pub async fn subscribe(
        &self,
        task_id: &str,
        deadline: Instant,
    ) -> Result<Option<TaskStream>, A2aError> {
        Ok(match self.follow(task_id, deadline).await? {
            Followed::Stream(s) => Some(*s),
            Followed::NotStreaming | Followed::Declined(_) => None,
        })
    }

    /// [`Worker::subscribe`] for the background poller, which must tell a worker that does not
    /// stream from one that declined this one subscription (the task is unknown to it, or ended:
    /// -32001 / -32004; a 401; a connection refused) and why.
    pub async fn follow(&self, task_id: &str, deadline: Instant) -> Result<Followed, A2aError> {
        self.open_stream(StreamOp::Subscribe { id: task_id }, deadline)
            .await
    }

    /// Whether the card (as already fetched, no request made) offers streaming.
    pub fn claims_streaming(&self) -> bool {
        let card = self.lock().card.clone();
        card.is_some_and(|c| self.stream_endpoint_of(&c, false).is_some())
    }

    /// The worker claims streaming but refused it (a stream call it does not serve, or a
    /// subscription to a task it still runs answered "unsupported operation"): plain calls from
    /// now on, logged once.
    pub fn refuse_streaming(&self, why: &A2aError) {
        if self.stop_streaming() {
            tracing::warn!(worker = %self.alias, "the card offers streaming but the worker refused it ({why}); polling it instead for {} minutes", STREAM_RETRY.as_secs() / 60);
        }
    }

    /// Plain calls for [`STREAM_RETRY`] from now (never undoing the config's "off"). True when
    /// streaming was on until now, so the caller logs the change once.
    fn stop_streaming(&self) -> bool {
        let now = Instant::now();
        let mut st = self.lock();
        let was_on = !st.no_stream.off(now);
        if st.no_stream != NoStream::Configured {
            st.no_stream = NoStream::Until(now + STREAM_RETRY);
        }
        was_on
    }

    /// Opens a stream call: the stream, or why not (the caller then makes the plain call, which
    /// meets and reports any real problem).
    async fn open_stream(&self, op: StreamOp<'_>, deadline: Instant) -> Result<Followed, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        let Some(ep) = self.stream_endpoint(&card) else {
            return Ok(Followed::NotStreaming);
        };
        let cred = self.creds(&card, &budget).await?;
        let (mut req, rpc_id) = match ep.binding {
            Binding::JsonRpc => {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let body = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": stream::jsonrpc_method(&op, ep.dialect),
                    "params": stream::jsonrpc_params(&op, &ep),
                });
                (self.http.post(&ep.url).json(&body), Some(id))
            }
            Binding::Rest => {
                let (url, body) = stream::rest_request(&op, &ep);
                let req = self
                    .http
                    .post(url)
                    .header(reqwest::header::CONTENT_TYPE, "application/a2a+json")
                    .body(body.to_string());
                (req, None)
            }
        };
        req = req.header(reqwest::header::ACCEPT, "text/event-stream");
        req = self.protocol_headers(req, ep.dialect);
        if let Some(c) = &cred {
            req = c.on(req)?;
        }
        let resp = match budget.run(async { Ok(req.send().await) }).await? {
            Ok(r) => r,
            // Nothing reached the worker: the plain call may go out instead.
            Err(e) if e.is_connect() => {
                return Ok(Followed::Declined(super::http::transport_error(
                    &e, &budget,
                )));
            }
            Err(e) => return Err(super::http::transport_error(&e, &budget)),
        };
        let (known, names_task) = match op {
            StreamOp::Subscribe { id } => (Some(id), true),
            StreamOp::Send { task_id, .. } => (None, task_id.is_some()),
        };
        match budget
            .run(async {
                Ok(TaskStream::open(resp, rpc_id, &ep.url, known, names_task, &budget).await)
            })
            .await?
        {
            Ok(s) => Ok(Followed::Stream(Box::new(s))),
            Err(Refusal::Unsupported(why)) => {
                self.refuse_streaming(&why);
                Ok(Followed::NotStreaming)
            }
            Err(Refusal::Declined(why)) => {
                let why = self.named_extensions(&card, why);
                if let (A2aError::Auth { .. }, Some(c)) = (&why, &cred) {
                    self.tokens.forget(c).await;
                }
                tracing::debug!(worker = %self.alias, "stream call declined ({why}); plain call instead");
                Ok(Followed::Declined(why))
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave State half-written (plain field stores),
        // so a poisoned lock is still good to use.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn forced(&self) -> Option<Dialect> {
        match self.config.protocol.as_deref() {
            Some("1.0") => Some(Dialect::V1),
            Some("0.3") => Some(Dialect::V03),
            _ => None,
        }
    }

    /// The endpoint to use now, and the one to fall back to.
    fn endpoints(&self, card: &Card) -> (Endpoint, Option<Endpoint>) {
        let fell_back = self.lock().fell_back;
        match (&card.fallback, fell_back) {
            (Some(fb), true) => (fb.clone(), None),
            _ => (card.primary.clone(), card.fallback.clone()),
        }
    }

    async fn call(&self, op: Op<'_>, deadline: Instant) -> Result<TaskView, A2aError> {
        let budget = Budget::start(deadline)?;
        let card = self.discover(&budget).await?;
        let (ep, fallback) = self.endpoints(&card);
        let missing = match self.exchange(&card, &ep, &op, &budget).await {
            Ok(v) => return Ok(v),
            Err(Fail::A2a(e)) => return Err(e),
            Err(Fail::MethodMissing(e)) => e,
        };
        let Some(fb) = fallback else {
            return Err(missing);
        };
        let r = self.exchange(&card, &fb, &op, &budget).await;
        // Remember the fallback only once the v0.3 endpoint has answered as A2A; a transport
        // failure says nothing about which dialect the worker speaks.
        let speaks_03 = match &r {
            Ok(_) => true,
            Err(Fail::A2a(e)) => matches!(
                e,
                A2aError::TaskNotFound | A2aError::NotCancelable | A2aError::Rpc { .. }
            ),
            Err(Fail::MethodMissing(_)) => false,
        };
        if speaks_03 {
            tracing::info!(worker = %self.alias, "worker speaks A2A 0.3 only, using {}", fb.describe());
            self.lock().fell_back = true;
        }
        r.map_err(A2aError::from)
    }

    async fn discover(&self, budget: &Budget) -> Result<Arc<Card>, A2aError> {
        if let Some(c) = self.lock().card.clone() {
            return Ok(c);
        }
        let card = self.fetch_card(budget).await?;
        // Checked before the card is kept, so no request of this worker ever goes there.
        if let Some(u) = card.untrusted(&self.config) {
            return Err(u.into());
        }
        if self.config.require_signed_card {
            match self.verdict(&card, budget).await {
                Verdict::Verified { .. } => {}
                v => return Err(A2aError::UnsignedCard(v.to_string())),
            }
        }
        let card = Arc::new(card);
        let mut st = self.lock();
        // Two concurrent first calls may both fetch; keep the first so endpoints stay stable.
        Ok(st.card.get_or_insert(card).clone())
    }

    async fn fetch_card(&self, budget: &Budget) -> Result<Card, A2aError> {
        let urls =
            card::candidates(&self.config.url).map_err(|e| A2aError::Protocol(e.to_string()))?;
        let mut first_err: Option<String> = None;
        for url in &urls {
            let (mut ans, mut got) = self.get_card(url, None, budget).await?;
            if ans.is_auth_failure() {
                // Most cards are public; a worker that guards its card gets our credentials,
                // as far as they can be had without the card.
                match auth::credentials(&self.config, None, &self.tokens, &self.http, budget).await
                {
                    Ok(Some(c)) => {
                        (ans, got) = self.get_card(url, Some(&c), budget).await?;
                        if ans.is_auth_failure() {
                            self.tokens.forget(&c).await;
                            return Err(auth::refusal(Some(&c), ans.status));
                        }
                    }
                    Ok(None) => {}
                    // The guarded card cannot be had: what keeps us from credentials is the
                    // thing to fix.
                    Err(e) => return Err(e),
                }
                if ans.is_auth_failure() {
                    return Err(auth::refusal(None, ans.status));
                }
            }
            let via = got.hops.first().map(|(status, to)| {
                let more = match got.hops.len() {
                    1 => String::new(),
                    n => format!(" and {} more", n - 1),
                };
                format!(
                    "redirected with HTTP {status} to {}{more}: ",
                    card::shown(to)
                )
            });
            let via = via.as_deref().unwrap_or("");
            let why = if let Some(to) = got.refused {
                format!(
                    "no agent card at {url} (it redirects with HTTP {} to {}, outside the worker's origins: not followed)",
                    ans.status,
                    card::shown(&to)
                )
            } else if ans.redirect().is_some() {
                format!("no agent card at {url} ({via}too many redirects)")
            } else if !ans.ok() {
                format!("no agent card at {url} ({via}HTTP {})", ans.status)
            } else if ans.looks_html() {
                format!("no agent card at {url} ({via}an HTML page)")
            } else {
                match ans.json() {
                    Some(v) if card::looks_like_card(&v) => {
                        return Card::parse(v, &got.url, self.forced())
                            .map_err(|e| A2aError::Protocol(e.to_string()));
                    }
                    _ => format!("no agent card at {url} ({via}not an agent card)"),
                }
            };
            first_err.get_or_insert(why);
        }
        Err(A2aError::Protocol(first_err.unwrap_or_else(|| {
            format!("no agent card for {}", self.config.url)
        })))
    }

    /// GETs a card at `url`, following redirects within the worker's trusted origins. Only the
    /// first request carries `cred`: a redirect target never gets credentials, even on the same
    /// origin (a worker that guards its card answers it without redirecting).
    async fn get_card(
        &self,
        url: &str,
        cred: Option<&Cred>,
        budget: &Budget,
    ) -> Result<(Answer, Fetched), A2aError> {
        let trusted = card::trusted(&self.config);
        let mut got = Fetched {
            url: url.to_string(),
            hops: Vec::new(),
            refused: None,
        };
        let mut req = self
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some(c) = cred {
            req = c.on(req)?;
        }
        loop {
            let ans = fetch(req, budget, Resend::IfDropped, Size::Whole).await?;
            let Some(loc) = ans.redirect() else {
                return Ok((ans, got));
            };
            let next = match reqwest::Url::parse(&got.url).and_then(|base| base.join(loc)) {
                Ok(u) => u.to_string(),
                Err(_) => return Ok((ans, got)),
            };
            if !card::is_trusted(&trusted, &next) {
                got.refused = Some(next);
                return Ok((ans, got));
            }
            if got.hops.len() >= MAX_REDIRECTS {
                return Ok((ans, got));
            }
            got.hops.push((ans.status, next.clone()));
            req = self
                .http
                .get(&next)
                .header(reqwest::header::ACCEPT, "application/json");
            got.url = next;
        }
    }

    async fn creds(&self, card: &Card, budget: &Budget) -> Result<Option<Cred>, A2aError> {
        auth::credentials(&self.config, Some(card), &self.tokens, &self.http, budget).await
    }

    /// One operation against one endpoint, with the 401/403 retry: the failed token is cleared,
    /// and a cached one (perhaps just expired) is replaced by a fresh one for a single retry.
    async fn exchange(
        &self,
        card: &Card,
        ep: &Endpoint,
        op: &Op<'_>,
        budget: &Budget,
    ) -> Result<TaskView, Fail> {
        let (ans, id) = self.answer(card, ep, op, budget).await?;
        let view = parsed(ep, op, &self.classified(card, ep, op, &ans, id)?)?;
        Ok(TaskView {
            spills: ans.spills(),
            ..view
        })
    }

    /// One operation's result JSON (for the calls that read it as something other than a task).
    async fn result(
        &self,
        card: &Card,
        ep: &Endpoint,
        op: &Op<'_>,
        budget: &Budget,
    ) -> Result<serde_json::Value, Fail> {
        let (ans, id) = self.answer(card, ep, op, budget).await?;
        self.classified(card, ep, op, &ans, id)
    }

    /// [`result_of`], an "extension required" refusal naming what the card requires.
    fn classified(
        &self,
        card: &Card,
        ep: &Endpoint,
        op: &Op<'_>,
        ans: &Answer,
        id: u64,
    ) -> Result<serde_json::Value, Fail> {
        result_of(ep, op, ans, id).map_err(|f| match f {
            Fail::A2a(e) => Fail::A2a(self.named_extensions(card, e)),
            other => other,
        })
    }

    /// An "extension required" refusal with the card's required extensions a2a-mod does not
    /// send, each one a clean plain URI: what to add, when the worker's words do not say.
    fn named_extensions(&self, card: &Card, e: A2aError) -> A2aError {
        let A2aError::ExtensionRequired { said, .. } = e else {
            return e;
        };
        let required = (card.doc.capabilities.extensions.iter())
            .filter(|x| x.required)
            .map(|x| x.uri.as_str())
            .filter(|u| {
                a2a_mod_config::validate_extension(u).is_ok()
                    && !self.config.extensions.iter().any(|have| have == u)
            })
            .map(str::to_string)
            .take(4)
            .collect();
        A2aError::ExtensionRequired { said, required }
    }

    /// [`Worker::exchange`]'s request and its 401/403 retry: the worker's answer, whatever it
    /// says, but for a refusal of our credentials.
    async fn answer(
        &self,
        card: &Card,
        ep: &Endpoint,
        op: &Op<'_>,
        budget: &Budget,
    ) -> Result<(Answer, u64), Fail> {
        let cred = self.creds(card, budget).await?;
        let (ans, id) = self.post(ep, op, cred.as_ref(), budget).await?;
        if !ans.is_auth_failure() {
            return Ok((ans, id));
        }
        let Some(c) = cred else {
            return Err(auth::refusal(None, ans.status).into());
        };
        self.tokens.forget(&c).await;
        if !c.cached {
            return Err(auth::refusal(Some(&c), ans.status).into());
        }
        let fresh = self.creds(card, budget).await?;
        let (ans, id) = self.post(ep, op, fresh.as_ref(), budget).await?;
        if ans.is_auth_failure() {
            if let Some(c) = &fresh {
                self.tokens.forget(c).await;
            }
            return Err(auth::refusal(fresh.as_ref(), ans.status).into());
        }
        Ok((ans, id))
    }

    async fn post(
        &self,
        ep: &Endpoint,
        op: &Op<'_>,
        cred: Option<&Cred>,
        budget: &Budget,
    ) -> Result<(Answer, u64), A2aError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut req = match ep.binding {
            Binding::JsonRpc => {
                let body = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": op.method().rpc_name(ep.dialect),
                    "params": wire::jsonrpc_params(op, ep),
                });
                self.http
                    .post(&ep.url)
                    .header(reqwest::header::ACCEPT, "application/json")
                    .json(&body)
            }
            Binding::Rest => {
                let (method, url, body) = wire::rest_request(op, ep);
                let mut r = self.http.request(method, url).header(
                    reqwest::header::ACCEPT,
                    "application/a2a+json, application/json",
                );
                if let Some(b) = body {
                    r = r
                        .header(reqwest::header::CONTENT_TYPE, "application/a2a+json")
                        .body(b.to_string());
                }
                r
            }
        };
        req = self.protocol_headers(req, ep.dialect);
        if let Some(c) = cred {
            req = c.on(req)?;
        }
        // A cancel sent twice only meets "already ended" the second time, which `cancel` handles.
        let resend = match op {
            Op::Send { .. } => Resend::Never,
            Op::Get { .. } | Op::Cancel { .. } | Op::List { .. } | Op::ExtendedCard => {
                Resend::IfDropped
            }
        };
        let ans = fetch(req, budget, resend, Size::Spill).await?;
        // Not followed (http.rs): the body would have to be sent again, perhaps elsewhere.
        if let Some(loc) = ans.redirect() {
            let to = reqwest::Url::parse(&ep.url)
                .and_then(|b| b.join(loc))
                .map(|u| super::card::shown(u.as_str()))
                .unwrap_or_else(|_| "an unreadable location".into());
            return Err(A2aError::Protocol(format!(
                "{} answered HTTP {} (a redirect to {to}, not followed: an A2A endpoint answers in place)",
                ep.url, ans.status
            )));
        }
        Ok((ans, id))
    }

    /// What every request to the worker's endpoint carries besides its body: the protocol version
    /// (v1) and the extensions the user asked for, under the dialect's header name.
    fn protocol_headers(
        &self,
        mut req: reqwest::RequestBuilder,
        dialect: Dialect,
    ) -> reqwest::RequestBuilder {
        if dialect == Dialect::V1 {
            // The Python v1 handler refuses v1 methods without it (docs/a2a.md).
            req = req.header("A2A-Version", "1.0");
        }
        if !self.config.extensions.is_empty() {
            let name = match dialect {
                Dialect::V1 => "A2A-Extensions",
                Dialect::V03 => "X-A2A-Extensions",
            };
            req = req.header(name, self.config.extensions.join(", "));
        }
        req
    }
}

/// The result a worker's answer to `op` carries (JSON-RPC `result`, a REST body), or what the
/// answer says went wrong, classified.
fn result_of(ep: &Endpoint, op: &Op<'_>, ans: &Answer, id: u64) -> Result<serde_json::Value, Fail> {
    // Before the body: a rate limit's body is whatever the proxy in front wrote.
    if ans.is_overloaded() {
        return Err(A2aError::Overloaded {
            status: ans.status,
            retry_after: ans.retry_after,
        }
        .into());
    }
    match ep.binding {
        Binding::JsonRpc => jsonrpc_result(ep, ans, id),
        Binding::Rest => rest_result(ep, op, ans),
    }
}

/// The task in a successful answer to `op`, refused when it names a task other than the one
/// asked about, or carries an id a2a-mod cannot show safely (`core::bounds::plain_id`): the
/// worker chose those bytes, and they reach the terminal, the status line and Claude's notes.
fn parsed(ep: &Endpoint, op: &Op<'_>, v: &serde_json::Value) -> Result<TaskView, Fail> {
    let r = match op {
        Op::Send { .. } => wire::parse_send_result(v),
        _ => wire::parse_task_result(v),
    };
    let view = r.map_err(|why| Fail::A2a(A2aError::Protocol(format!("{}: {why}", ep.url))))?;
    wire::checked(op, view).map_err(Fail::A2a)
}

fn jsonrpc_result(ep: &Endpoint, ans: &Answer, id: u64) -> Result<serde_json::Value, Fail> {
    let bad = |why: String| Fail::A2a(A2aError::Protocol(format!("{} {why}", ep.url)));
    let html = ans.looks_html();
    let json = if html { None } else { ans.json() };
    let Some(json) = json else {
        return Err(bad(if !ans.ok() {
            format!("answered HTTP {}", ans.status)
        } else if html {
            "answered with an HTML page, not JSON-RPC".into()
        } else {
            "answered with something that is not JSON".into()
        }));
    };
    let rpc = match wire::parse_jsonrpc(json, id) {
        Ok(r) => r,
        Err(_) if !ans.ok() => return Err(bad(format!("answered HTTP {}", ans.status))),
        Err(why) => return Err(bad(format!("answered wrongly: {why}"))),
    };
    match rpc {
        RpcAnswer::Error { code, message } => {
            let e = A2aError::from_rpc(code, message);
            if code == a2a_mod_proto::error::METHOD_NOT_FOUND && ep.dialect == Dialect::V1 {
                Err(Fail::MethodMissing(e))
            } else {
                Err(e.into())
            }
        }
        RpcAnswer::Result(_) if !ans.ok() => Err(bad(format!("answered HTTP {}", ans.status))),
        RpcAnswer::Result(r) => Ok(r),
    }
}

fn rest_result(ep: &Endpoint, op: &Op<'_>, ans: &Answer) -> Result<serde_json::Value, Fail> {
    let json = if ans.looks_html() { None } else { ans.json() };
    if ans.ok() {
        let Some(v) = json else {
            return Err(A2aError::Protocol(format!(
                "{} answered with something that is not JSON",
                ep.url
            ))
            .into());
        };
        return Ok(v);
    }
    let a2a_err = json.as_ref().and_then(wire::parse_rest_error);
    match (ans.status, a2a_err) {
        (404, Some(e)) => {
            if e.reason == "TASK_NOT_FOUND" || op.names_task() {
                Err(A2aError::TaskNotFound.into())
            } else {
                Err(A2aError::Rpc {
                    code: 404,
                    message: e.message,
                }
                .into())
            }
        }
        (404, None) => {
            // Not an A2A error: the route itself is missing, as on a server of the other dialect.
            let e = if op.names_task() {
                A2aError::TaskNotFound
            } else {
                A2aError::Protocol(format!("no A2A REST endpoint at {} (HTTP 404)", ep.url))
            };
            if ep.dialect == Dialect::V1 {
                Err(Fail::MethodMissing(e))
            } else {
                Err(e.into())
            }
        }
        (status, Some(e)) => {
            if e.reason == "TASK_NOT_CANCELABLE"
                || (matches!(op, Op::Cancel { .. }) && e.status == "FAILED_PRECONDITION")
            {
                Err(A2aError::NotCancelable.into())
            } else if let Some(code) = wire::code_of_reason(&e.reason) {
                // The same error as over JSON-RPC, so the same hint.
                Err(A2aError::from_rpc(code, e.message).into())
            } else {
                Err(A2aError::Rpc {
                    code: i64::from(status),
                    message: e.message,
                }
                .into())
            }
        }
        (status, None) => {
            Err(A2aError::Protocol(format!("{} answered HTTP {status}", ep.url)).into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal of streaming holds for `STREAM_RETRY`, then a stream call is tried again; the
    /// config's "off" is never undone by it.
    #[test]
    fn a_refusal_of_streaming_lasts_ten_minutes_and_the_config_for_good() {
        let w = Worker::new("w", WorkerConfig::default(), http_client());
        let why = A2aError::Protocol("no".into());
        let before = Instant::now();
        w.refuse_streaming(&why);
        let off = w.lock().no_stream;
        let NoStream::Until(until) = off else {
            panic!("{off:?}");
        };
        assert!(until >= before + STREAM_RETRY, "{off:?}");
        assert!(
            off.off(until - std::time::Duration::from_secs(1)),
            "still refused"
        );
        assert!(!off.off(until), "tried again");

        w.disable_streaming();
        w.stream_failed(&why);
        let off = w.lock().no_stream;
        assert_eq!(off, NoStream::Configured);
        assert!(off.off(until + STREAM_RETRY), "the config's off stays");
    }
}
