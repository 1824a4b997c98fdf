//! `send`: prepare (everything read and checked before the worker is asked anything), start,
//! record, and the inline window (core::inline's schedule, the stream read beside the polls),
//! then the hand-over to the poller, and [`Session::follow_on`] for a stream kept past the call.

use super::errors::{unknown_task, worker_error};
use super::{Budget, Outcome, Session};
use a2a_mod_a2a::{A2aError, Outgoing, Started, TaskView, Worker};
use a2a_mod_core::fence;
use a2a_mod_core::lifecycle::{Event, NewTask, TaskKey};
use a2a_mod_core::task::TaskState;
use a2a_mod_core::{inline, schedule};
use a2a_mod_os::env::now_ms;
use a2a_mod_results::overflow::{for_row, update_for_row};
use a2a_mod_store::TaskRecord;
use anyhow::{Result, anyhow};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// What `send` takes besides the worker and the text: the task it answers, the conversation,
/// files and data.
#[derive(Debug, Clone, Default)]
pub struct SendInput {
    /// Answer this input-required task.
    pub task_id: Option<String>,
    /// Start the new task in this conversation (or, with `task_id`, must be that task's).
    pub context_id: Option<String>,
    /// Local files to send as file parts (`crate::session::attach` rules).
    pub files: Vec<String>,
    /// A JSON value to send as a data part.
    pub data: Option<serde_json::Value>,
}

/// One send, as the tools, the command and the demo ask for it ([`Session::send`]).
pub struct SendRequest<'a> {
    /// The worker's alias.
    pub alias: &'a str,
    /// What the worker should do (may be empty when `input` has files or data).
    pub message: &'a str,
    pub input: SendInput,
    pub budget: Budget,
    /// Told what the inline window is waiting for.
    pub progress: Progress<'a>,
    /// Ends the inline window early when it completes (Claude Code cancelled the call, the
    /// command's window closed): the task is then handed to the poller as after a full window.
    /// Not watched while the message is being sent: a task the worker accepted must be recorded,
    /// or nobody would ever announce it (that request is bounded by the budget anyway).
    /// (`Sync`, as the request is borrowed across the send's awaits on any thread.)
    pub stop: Stop<'a>,
    /// For a process that outlives the call (the MCP server, the command's keeper): a task
    /// handed to the background with its stream still open comes back with that stream
    /// ([`Handed`]), for [`Session::follow_on`] to go on reading. Closing it would lose the
    /// chunks the poller's own subscription starts after, and some servers cancel a task whose
    /// creating stream disconnects.
    pub keep_stream: bool,
    /// The MCP task Claude Code follows, whose form the person answered with this send
    /// (`mcp/approve.rs`): the task goes on under it ([`NewTask::native_ms`]).
    pub native_ms: Option<i64>,
}

impl<'a> SendRequest<'a> {
    /// A plain send: nothing but the text, no progress, never stopped early, the stream closed
    /// with the call.
    pub fn new(alias: &'a str, message: &'a str, budget: Budget) -> SendRequest<'a> {
        SendRequest {
            alias,
            message,
            input: SendInput::default(),
            budget,
            progress: &no_progress,
            stop: Box::pin(std::future::pending()),
            keep_stream: false,
            native_ms: None,
        }
    }
}

fn no_progress(_: String) {}

/// What ends an inline window early ([`SendRequest::stop`]).
pub type Stop<'a> = std::pin::Pin<Box<dyn Future<Output = ()> + Send + Sync + 'a>>;

/// What [`Session::prepare`] found: the worker, the task answered, the context, the parts.
struct Prepared {
    worker: Arc<Worker>,
    previous: Option<TaskRecord>,
    context_id: Option<String>,
    parts: Vec<a2a_mod_a2a::OutPart>,
}

/// What [`Session::start`] got: the task as first told, its stream, when the send went out.
struct Begun {
    view: TaskView,
    stream: Option<a2a_mod_a2a::TaskStream>,
    sent_at: Instant,
}

/// The inline window's next poll: its time (from the send) and cut, or the poll in flight.
enum Slot {
    Wait {
        at: Duration,
        cut: Duration,
    },
    Poll {
        poll: futures::future::BoxFuture<'static, Result<TaskView, A2aError>>,
        started: i64,
    },
}

impl Slot {
    /// The time of the window's next poll and its cut, `slot` taken for it (a poll in flight
    /// has none: its branch of the wait is off); `Err` with the poller's next poll when the
    /// window is over.
    fn next(
        slot: &mut Option<Slot>,
        window: &mut inline::Window,
        sent_at: Instant,
    ) -> Result<(Duration, Duration), i64> {
        match slot {
            Some(Slot::Wait { at, cut }) => Ok((*at, *cut)),
            Some(Slot::Poll { .. }) => Ok((Duration::ZERO, Duration::ZERO)),
            None => match window.next(sent_at.elapsed(), now_ms()) {
                inline::Step::Poll { at, cut } => {
                    *slot = Some(Slot::Wait { at, cut });
                    Ok((at, cut))
                }
                inline::Step::HandOver { next_poll_ms } => Err(next_poll_ms),
            },
        }
    }

    /// A GetTask of `task_id` in flight, given up at `deadline`.
    fn poll(worker: &Arc<Worker>, task_id: &str, deadline: Instant) -> Slot {
        let (worker, task) = (worker.clone(), task_id.to_string());
        Slot::Poll {
            poll: Box::pin(async move { worker.get_task(&task, deadline).await }),
            started: now_ms(),
        }
    }
}

/// What ended one wait of the inline window.
enum Woke {
    Due,
    Polled((Result<TaskView, A2aError>, i64)),
    Event(Option<Result<TaskView, A2aError>>),
    Stopped,
}

/// The poll in flight's answer and when it began; never, when none is.
async fn poll_of(slot: &mut Option<Slot>) -> (Result<TaskView, A2aError>, i64) {
    match slot {
        Some(Slot::Poll { poll, started }) => (poll.await, *started),
        _ => std::future::pending().await,
    }
}

fn progress_line(req: &SendRequest<'_>, last: &TaskView) {
    (req.progress)(format!("waiting for {}: {}", req.alias, last.state));
}

/// Progress while the inline window runs: what is going on (the caller keeps its own clock).
pub type Progress<'a> = &'a (dyn Fn(String) + Send + Sync);

impl Session {
    /// `send`: forwards the message, then the inline window (GetTask after 0.5, 1, 2 and 4 s, cut
    /// at the call's budget, the worker's stream read beside it). The result at once if the task
    /// ends inside the window; otherwise the task id and the hand-over note, the task tracked and
    /// the poller running (and, with [`SendRequest::keep_stream`], its stream for
    /// [`Session::follow_on`]). Four steps: [`Session::prepare`] checks and reads everything
    /// before the worker is asked anything, [`Session::start`] sends, [`Session::record`] keeps
    /// the task, [`Session::window`] waits.
    pub async fn send(&self, mut req: SendRequest<'_>) -> Result<(Outcome, Option<Handed>)> {
        let stop = std::mem::replace(&mut req.stop, Box::pin(std::future::pending()));
        let p = self.prepare(&req).await?;
        let begun = self.start(&req, &p).await?;
        let timing = &self.config.timing;
        let window = inline::Window::new(
            &timing.inline_gaps(),
            timing.poll_interval(),
            req.budget.total,
            req.budget.elapsed().saturating_sub(begun.sent_at.elapsed()),
            now_ms(),
        );
        if let Err(e) = self.record(&req, &p, &begun.view, &window) {
            let v = &begun.view;
            if v.state.is_live() {
                // Not saved, it could never be followed: the worker is asked to stop it rather
                // than work on for a result nobody will get, and Claude is told so.
                let deadline = Instant::now() + timing.poll_timeout().min(Duration::from_secs(5));
                let stopped = p.worker.cancel(&v.task_id, deadline).await.is_ok();
                return Err(e.context(format!(
                    "{} task {} could not be saved, so a2a-mod cannot follow it; {} — send it again once this is fixed",
                    req.alias,
                    v.task_id,
                    if stopped {
                        "the worker was asked to cancel it"
                    } else {
                        "it may still run on the worker"
                    }
                )));
            }
            // Ended already: Claude gets it in this answer, nothing is left to track.
            tracing::warn!("{} task {}: {e:#}", req.alias, v.task_id);
        }
        let (mut o, handed) = if begun.view.state.is_live() {
            // Tracked from here on: if the caller stops waiting (Claude Code cancels the call),
            // the poller already owns the task.
            crate::poller::ensure(&self.ctx, &self.id);
            self.window(&req, &p.worker, window, begun, stop).await?
        } else {
            (self.outcome(&begun.view, req.alias, false), None)
        };
        // The answer to a question went to a new task (a worker that ignores `taskId`): say so,
        // since Claude asked about the other one, which no longer waits (`Event::Moved`).
        if let Some(asked) = req.input.task_id.as_deref().map(str::trim)
            && asked != o.task_id
        {
            o.note = format!(
                "The worker took this answer up on a new task, {}; task {} no longer waits. What follows is about the new task.\n{}",
                o.task_id,
                fence::shown(asked),
                o.note
            );
        }
        Ok((o, handed))
    }

    /// Everything a send needs before the worker is asked anything: the message checked, the
    /// worker, the task it answers, the context, the files read and checked.
    async fn prepare(&self, req: &SendRequest<'_>) -> Result<Prepared> {
        let input = &req.input;
        let message = req.message.trim();
        // A message may hold only files or data (some agents resume an interrupted task only
        // from a lone data part); with nothing at all there is nothing to send.
        if message.is_empty() && input.files.is_empty() && input.data.is_none() {
            return Err(anyhow!(
                "the message is empty — say what the worker should do"
            ));
        }
        let given_context = match input.context_id.as_deref().map(str::trim) {
            Some("") => {
                return Err(anyhow!(
                    "the contextId is empty — pass the contextId an earlier result showed, or leave it out"
                ));
            }
            Some(c) if !a2a_mod_core::bounds::plain_id(c) => {
                return Err(anyhow!(
                    "the contextId {} is not one a worker gave — pass the contextId an earlier result showed",
                    fence::shown(c)
                ));
            }
            other => other,
        };
        let alias = req.alias;
        let worker = self.worker(alias)?;
        let previous = match input.task_id.as_deref() {
            Some(id) => Some(
                self.store(|s| s.get(&TaskKey::new(alias, id)))?
                    .ok_or_else(|| unknown_task(id, Some(alias)))?,
            ),
            None => None,
        };
        let stored_context = previous.as_ref().and_then(|p| p.context_id.clone());
        if let (Some(given), Some(stored)) = (given_context, stored_context.as_deref())
            && given != stored
        {
            return Err(anyhow!(
                "task {} of worker {alias:?} is in context {}, not {} — leave contextId out when answering with taskId, or pass that task's own",
                fence::shown(input.task_id.as_deref().unwrap_or_default()),
                fence::shown(stored),
                fence::shown(given)
            ));
        }
        let context_id = stored_context.or_else(|| given_context.map(str::to_string));
        // Every file is checked, and only then read, before the worker is asked anything.
        let mut parts = if input.files.is_empty() {
            Vec::new()
        } else {
            // Up to 25 MiB of disk reads: off the async threads, which also serve progress.
            let (files, project, rules) = (
                input.files.clone(),
                crate::session::attach::project_dir()?,
                self.config.files.clone(),
            );
            let private = [self.ctx.state_dir.clone(), self.ctx.config_path()];
            tokio::task::spawn_blocking(move || {
                crate::session::attach::load(&files, &project, &rules, &private)
            })
            .await
            .map_err(|e| anyhow!("reading the files failed: {e} — try again"))??
        };
        if let Some(d) = &input.data {
            parts.push(a2a_mod_a2a::OutPart::Data(d.clone()));
        }
        Ok(Prepared {
            worker,
            previous,
            context_id,
            parts,
        })
    }

    /// Sends the message: the task as the worker first tells it, and its stream when it streams.
    async fn start(&self, req: &SendRequest<'_>, p: &Prepared) -> Result<Begun> {
        let (alias, worker) = (req.alias, &p.worker);
        let failed = |e: &A2aError| worker_error(alias, &worker.config.url, e);
        // The window counts from when the send went out, as the worker sees it arrive: a slow
        // answer to the send must not push every GetTask later, and neither must the agent card,
        // which a fresh process fetches first (cached for the send and the polls after it).
        worker
            .card(req.budget.request_deadline(self.poll_timeout()))
            .await
            .map_err(|e| failed(&e))?;
        let sent_at = Instant::now();
        let deadline = req.budget.request_deadline(self.poll_timeout());
        let message = Outgoing {
            text: req.message.trim(),
            parts: &p.parts,
            task_id: req.input.task_id.as_deref(),
            context_id: p.context_id.as_deref(),
            stream: true,
        };
        let started = worker
            .send(&message, deadline)
            .await
            .map_err(|e| failed(&e))?;
        // A streamed send's first event is the task (or the direct answer); without it there is no
        // task id to track, so a stream that says nothing in time fails like a send would.
        let (mut view, stream) = match started {
            Started::Plain(v) => (v, None),
            Started::Stream(mut s) => {
                let first = match tokio::time::timeout_at(deadline, s.next()).await {
                    Ok(Some(r)) => r,
                    Ok(None) => Err(A2aError::Protocol(format!(
                        "{} closed the stream before saying anything",
                        worker.config.url
                    ))),
                    Err(_) => Err(A2aError::Timeout(
                        deadline.saturating_duration_since(sent_at).as_secs_f64(),
                    )),
                };
                // The worker may have taken the message, but told no task id: nothing can be
                // tracked. Its streaming is not to be relied on, so later sends go out plainly.
                let v = first.map_err(|e| {
                    // An A2A error (task not found, invalid params) is the worker speaking.
                    if matches!(
                        e,
                        A2aError::Timeout(_) | A2aError::Protocol(_) | A2aError::Unreachable(_)
                    ) {
                        worker.stream_failed(&e);
                    }
                    failed(&e)
                })?;
                (v, Some(*s))
            }
        };
        // An answer to an input-required task may come back with the task still in its old
        // waiting state (a2a-sdk 0.3 answers the snapshot taken before the resumed run starts):
        // the worker has the answer but has not picked it up. Treat it as submitted, so the
        // inline window and the poller look again instead of reporting the old question. Any
        // artifact in that snapshot goes too: the result is told once, with the state that ends
        // the task, not beside "submitted" and then again by the wake.
        if p.previous.as_ref().is_some_and(|p| p.state == view.state) && view.state.is_waiting() {
            view.state = TaskState::Submitted;
            view.question = None;
            view.text = None;
        }
        Ok(Begun {
            view,
            stream,
            sent_at,
        })
    }

    /// Keeps the task as the worker told it, before any waiting: a task the worker accepted is
    /// never lost, whatever happens to this call. An answer taken up on a new task marks the
    /// asked one moved.
    fn record(
        &self,
        req: &SendRequest<'_>,
        p: &Prepared,
        view: &TaskView,
        window: &inline::Window,
    ) -> Result<()> {
        let (alias, input) = (req.alias, &req.input);
        let message = req.message.trim();
        // What the status line and the task lists call a task sent without words.
        let shown = match (message.is_empty(), input.files.len(), &input.data) {
            (false, ..) => message.to_string(),
            (true, 0, _) => "(data)".to_string(),
            (true, 1, None) => "(1 file)".to_string(),
            (true, n, None) => format!("({n} files)"),
            (true, 1, Some(_)) => "(1 file and data)".to_string(),
            (true, n, Some(_)) => format!("({n} files and data)"),
        };
        let key = TaskKey::new(alias, &view.task_id);
        let (result, result_chars) = for_row(&self.ctx, &self.id, &key, view.text.as_deref());
        let now = now_ms();
        self.store(|s| {
            s.record_sent(
                &NewTask {
                    worker: alias,
                    task_id: &view.task_id,
                    context_id: view.context_id.as_deref(),
                    // An answer goes on the asked task's row; taken up on a new task, that
                    // task's row carries the answer sent.
                    message: p
                        .previous
                        .as_ref()
                        .filter(|prev| prev.task_id == view.task_id)
                        .map_or(shown.as_str(), |prev| prev.message.as_str()),
                    state: view.state,
                    result,
                    result_chars,
                    question: view.question.as_deref(),
                    next_poll_ms: Some(window.first_background_poll_ms()),
                    held_until_ms: Some(window.hold_ms()),
                    // Claude reads the answer in the tool's result, but for one Claude Code
                    // reports at its next poll of the MCP task the send goes on under.
                    told: !view.state.is_live() && req.native_ms.is_none(),
                    native_ms: req.native_ms,
                },
                now,
            )
        })?;
        if let Some(prev) = p
            .previous
            .as_ref()
            .filter(|prev| prev.task_id != view.task_id)
        {
            self.store(|s| s.transition(&TaskKey::new(alias, &prev.task_id), Event::Moved, now))?;
        }
        Ok(())
    }

    /// The inline window of a live task: one wait over the next poll's time, the poll in
    /// flight, the stream's next event and the caller's stop, each folded in by
    /// `core::inline::Window`, until the task ends (the answer) or the window is over (handed to
    /// the poller).
    async fn window(
        &self,
        req: &SendRequest<'_>,
        worker: &Arc<Worker>,
        mut window: inline::Window,
        begun: Begun,
        mut stop: Stop<'_>,
    ) -> Result<(Outcome, Option<Handed>)> {
        let Begun {
            view: mut last,
            mut stream,
            sent_at,
        } = begun;
        let (alias, budget) = (req.alias, req.budget);
        let mut slot: Option<Slot> = None;
        loop {
            let (at, cut) = match Slot::next(&mut slot, &mut window, sent_at) {
                Ok(times) => times,
                Err(next_poll_ms) => {
                    return self.hand_over(req, worker, &last, next_poll_ms, None, stream);
                }
            };
            let waiting = matches!(slot, Some(Slot::Wait { .. }));
            let woke = tokio::select! {
                () = tokio::time::sleep_until(sent_at + at), if waiting => Woke::Due,
                p = poll_of(&mut slot) => Woke::Polled(p),
                r = next_event(&mut stream) => Woke::Event(r),
                () = &mut stop => Woke::Stopped,
            };
            match woke {
                // A slot the stream has spoken since needs no poll: on to the next.
                Woke::Due if !window.due() => slot = None,
                Woke::Due => {
                    progress_line(req, &last);
                    let deadline = budget
                        .request_deadline(self.poll_timeout())
                        .min(sent_at + cut);
                    slot = Some(Slot::poll(worker, &last.task_id, deadline));
                }
                Woke::Polled((polled, started)) => {
                    slot = None;
                    let not_found = matches!(polled, Err(A2aError::TaskNotFound));
                    let mut after =
                        window.after(last.state, a2a_mod_a2a::poll_outcome(&polled), started);
                    self.apply(alias, &last.task_id, &mut after)?;
                    if let Ok(v) = polled {
                        last = v;
                    }
                    match after {
                        inline::After::Ended(_) if not_found => {
                            return Err(anyhow!(
                                "worker {alias:?}: {} — send the work again",
                                A2aError::TaskNotFound
                            ));
                        }
                        inline::After::Ended(_) => {
                            return Ok((self.outcome(&last, alias, false), None));
                        }
                        inline::After::Live(_) => {}
                        inline::After::Deferred {
                            next_poll_ms,
                            update,
                        } => {
                            let hold = update.held_until_ms;
                            return self.hand_over(req, worker, &last, next_poll_ms, hold, stream);
                        }
                    }
                }
                Woke::Event(r) => {
                    let partial = partial_of(&stream);
                    let deadline = budget.request_deadline(self.poll_timeout());
                    let Some(v) = filled(worker, r, partial, deadline).await else {
                        // The stream is over (or broke): the polls carry the task on.
                        stream = None;
                        continue;
                    };
                    let mut after = window.streamed(
                        last.state,
                        a2a_mod_a2a::poll_outcome(&Ok(v.clone())),
                        now_ms(),
                    );
                    self.apply(alias, &v.task_id, &mut after)?;
                    last = v;
                    if let inline::After::Ended(_) = after {
                        return Ok((self.outcome(&last, alias, false), None));
                    }
                }
                // Stopped early (the call was cancelled): hand over in the window's rhythm.
                Woke::Stopped => {
                    let next = window.hand_over_ms(now_ms());
                    return self.hand_over(req, worker, &last, next, None, stream);
                }
            }
        }
    }

    /// Stores what a poll or a streamed event changed.
    fn apply(&self, alias: &str, task_id: &str, after: &mut inline::After) -> Result<()> {
        let (update, told) = after.update();
        let key = TaskKey::new(alias, task_id);
        update_for_row(&self.ctx, &self.id, &key, update);
        self.store(|s| s.apply_poll(&key, update, told, now_ms()))
            .map(drop)
    }

    /// The window is over and the task live: the poller's next poll, the hold a deferral leaves,
    /// and the stream (if one is open and kept) leased to this process for
    /// [`Session::follow_on`], in one write (`Event::HandedOver`); the outcome says it is
    /// tracked.
    fn hand_over(
        &self,
        req: &SendRequest<'_>,
        worker: &Arc<Worker>,
        last: &TaskView,
        next_poll_ms: i64,
        held_until_ms: Option<i64>,
        stream: Option<a2a_mod_a2a::TaskStream>,
    ) -> Result<(Outcome, Option<Handed>)> {
        let stream = stream.filter(|_| req.keep_stream);
        let now = now_ms();
        let lease_until_ms = stream
            .as_ref()
            .map(|_| now + schedule::STREAM_LEASE.as_millis() as i64);
        let event = Event::HandedOver {
            next_poll_ms,
            held_until_ms,
            lease_until_ms,
        };
        let key = TaskKey::new(&worker.alias, &last.task_id);
        self.store(|s| s.transition(&key, event, now))?;
        let handed = stream.map(|stream| Handed {
            worker: worker.clone(),
            task_id: last.task_id.clone(),
            stream,
        });
        Ok((self.outcome(last, req.alias, true), handed))
    }

    /// Goes on reading the stream of a task the inline window handed over ([`Session::send`]
    /// with [`SendRequest::keep_stream`]),
    /// applying each event as the poller applies its own streams' (the end saved and stored, not
    /// told: the wake-up announces it), while holding the task's stream lease so the poller opens
    /// no second stream. The polls go on beside it as ever. Over when the task ends (here or by a
    /// poll, a cancel) or the stream does; the lease is then given up, and a task still live
    /// gets the poller's own subscription.
    pub async fn follow_on(self: Arc<Self>, mut h: Handed) {
        let handed_at = Instant::now();
        let alias = h.worker.alias.clone();
        let key = TaskKey::new(&alias, &h.task_id);
        let keep = crate::poller::Keep::new(&self.ctx, &self.id, &self.config);
        let timing = &self.config.timing;
        let lease_ms = schedule::STREAM_LEASE.as_millis() as i64;
        let mut renew = tokio::time::interval(schedule::STREAM_LEASE / 3);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        renew.reset();
        loop {
            tokio::select! {
                r = h.stream.next() => {
                    let v = match r {
                        Some(Ok(v)) => v,
                        Some(Err(e)) => {
                            tracing::debug!(worker = %alias, "stream of task {} ended: {e}", h.task_id);
                            break;
                        }
                        None => break,
                    };
                    let ended = !v.state.is_live();
                    let v = if ended {
                        // The send's PostToolUse hook runs as Claude Code gets the tool result:
                        // an ending stored before it would ride in that hook's context, and the
                        // monitor's wake line would then come with nothing in it. The poller's
                        // own subscription never told an ending this soon either.
                        tokio::time::sleep_until(handed_at + HAND_OVER_SETTLE).await;
                        let deadline = Instant::now() + timing.poll_timeout();
                        let partial = h.stream.partial().then(|| h.stream.seen_chunks().to_vec());
                        let v = h.worker.whole(v, partial.as_deref(), deadline).await;
                        keep.save(&alias, &v).await;
                        v
                    } else {
                        v
                    };
                    if let Some(mut u) = schedule::after_event(a2a_mod_a2a::poll_outcome(&Ok(v))) {
                        update_for_row(&self.ctx, &self.id, &key, &mut u);
                        let applied = self.store(|s| s.transition(&key, Event::Streamed(&u), now_ms()));
                        if let Err(e) = applied {
                            tracing::warn!("{e:#}");
                        }
                    }
                    if ended {
                        break;
                    }
                }
                _ = renew.tick() => {
                    let until = now_ms() + lease_ms;
                    match self.store(|s| s.set_stream_lease(&key, Some(until), now_ms())) {
                        Ok(true) => {}
                        // Ended meanwhile (a poll saw it first, a cancel): nothing left to read.
                        Ok(false) => break,
                        Err(e) => {
                            tracing::warn!("{e:#}");
                            break;
                        }
                    }
                }
            }
        }
        if let Err(e) = self.store(|s| s.set_stream_lease(&key, None, now_ms())) {
            tracing::warn!("{e:#}");
        }
    }
}

/// A streamed view with its answer looked up when it ended without one (`Worker::filled`);
/// `None` when the stream is over or broke (said in the log).
async fn filled(
    worker: &Worker,
    r: Option<Result<TaskView, A2aError>>,
    partial: Option<Vec<String>>,
    deadline: Instant,
) -> Option<TaskView> {
    match r? {
        Ok(v) if !v.state.is_live() => Some(worker.whole(v, partial.as_deref(), deadline).await),
        Ok(v) => Some(v),
        Err(e) => {
            tracing::debug!(worker = %worker.alias, "stream ended, polling on: {e}");
            None
        }
    }
}

/// The chunks a stream that joined mid-way read ([`Worker::whole`]), copied out: a stream is not
/// shared across an await.
fn partial_of(stream: &Option<a2a_mod_a2a::TaskStream>) -> Option<Vec<String>> {
    stream
        .as_ref()
        .filter(|s| s.partial())
        .map(|s| s.seen_chunks().to_vec())
}

/// How long after the hand-over [`Session::follow_on`] holds back a streamed ending: longer than
/// Claude Code takes to run the send's PostToolUse hook once it has the tool result.
const HAND_OVER_SETTLE: Duration = Duration::from_millis(300);

/// A live task's stream, still open after its inline window, for [`Session::follow_on`].
pub struct Handed {
    worker: Arc<Worker>,
    task_id: String,
    stream: a2a_mod_a2a::TaskStream,
}

/// The next event of the stream, if one is open; never, if not (so `select!` waits on the rest).
async fn next_event(
    stream: &mut Option<a2a_mod_a2a::TaskStream>,
) -> Option<Result<TaskView, A2aError>> {
    match stream {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}
