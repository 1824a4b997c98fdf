//! The background poller's subscriptions: while a tracked task of a streaming worker is
//! live, the poller holds a `SubscribeToTask` / `tasks/resubscribe` stream to it, and each event
//! is applied to the store the moment it arrives (by the loop in `mod.rs`, in the same write as
//! the polls). Polling goes on beside it unchanged (5 s, 15 s timeout, 6 failed checks): a stream
//! is never trusted to be complete, only to be early.
//!
//! Owns: which tasks have a stream (at most `[streaming] max_streams_per_worker` per worker, the
//! rest only polled), re-subscribing a dropped stream with backoff
//! ([`core::schedule::resubscribe_after`](a2a_mod_core::schedule::resubscribe_after)), and
//! remembering for the poller's life a worker that claims streaming but refuses it (logged once).
//! Decisions are [`core::schedule`](a2a_mod_core::schedule)'s; this file is the IO.

use super::keep::Keep;
use a2a_mod_a2a::{A2aError, Followed, TaskView, Worker};
use a2a_mod_config::Timing;
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_core::schedule;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::AbortHandle;
use tokio::time::Instant;

/// What a subscription tells the loop.
pub(super) struct Msg {
    pub key: TaskKey,
    /// Which subscription of the task (a closed one's last words must not close its successor).
    pub sub_id: u64,
    pub what: Told,
}

pub(super) enum Told {
    /// The task as the worker now tells it.
    Event(TaskView),
    /// The subscription is over, and why.
    Closed(Close),
}

pub(super) enum Close {
    /// The worker told the end, or no longer streams this task (ended, unknown to it), or floods
    /// its stream: nothing more to subscribe to; the polls have the last word on anything it did
    /// not tell.
    Over,
    /// The worker does not stream (its card), or refused it.
    NotStreaming,
    /// The stream broke, closed early, or could not be opened this time: try again later.
    Dropped(String),
}

struct Open {
    sub_id: u64,
    since: Instant,
    handle: AbortHandle,
}

pub(super) struct Streams {
    open: HashMap<TaskKey, Open>,
    per_worker: HashMap<String, usize>,
    /// Drops in a row, per task (the backoff's memory).
    drops: HashMap<TaskKey, u32>,
    /// Tasks waiting out a backoff, and until when.
    waiting: HashMap<TaskKey, i64>,
    /// Tasks whose stream is over: not subscribed again while they stay live.
    over: HashSet<TaskKey>,
    /// Workers that do not stream, for the poller's life (a config reload keeps them).
    refused: HashSet<String>,
    next_sub_id: u64,
    tx: mpsc::UnboundedSender<Msg>,
    /// Where an ending's artifacts go before the loop stores it (set at each config load).
    pub keep: Keep,
}

impl Streams {
    pub fn new(tx: mpsc::UnboundedSender<Msg>, keep: Keep) -> Streams {
        Streams {
            keep,
            open: HashMap::new(),
            per_worker: HashMap::new(),
            drops: HashMap::new(),
            waiting: HashMap::new(),
            over: HashSet::new(),
            refused: HashSet::new(),
            next_sub_id: 0,
            tx,
        }
    }

    /// Opens a subscription to a live task when it has none, is not waiting out a backoff, its
    /// worker's card (already fetched) offers streaming and there is room under the cap. Called
    /// when no inline window holds the task any more (`holds.rs`), and at each poll's answer, so
    /// a task beyond the cap gets a stream at a later poll once one is free.
    pub fn consider(&mut self, key: &TaskKey, worker: &Arc<Worker>, timing: &Timing) {
        let alias = &worker.alias;
        if !timing.streaming
            || self.open.contains_key(key)
            || self.waiting.contains_key(key)
            || self.over.contains(key)
            || self.refused.contains(alias)
            || !worker.claims_streaming()
        {
            return;
        }
        let n = self.per_worker.get(alias).copied().unwrap_or(0);
        if !schedule::stream_fits(n, timing.max_streams_per_worker) {
            return;
        }
        self.next_sub_id += 1;
        let sub_id = self.next_sub_id;
        let handle = tokio::spawn(follow(
            worker.clone(),
            key.clone(),
            sub_id,
            timing.poll_timeout(),
            self.tx.clone(),
            self.keep.clone(),
        ))
        .abort_handle();
        *self.per_worker.entry(alias.clone()).or_default() += 1;
        self.open.insert(
            key.clone(),
            Open {
                sub_id,
                since: Instant::now(),
                handle,
            },
        );
    }

    /// A subscription ended: free its slot, and decide whether and when to subscribe again.
    pub fn closed(&mut self, m: &Msg, close: &Close, worker: Option<&Worker>, now_ms: i64) {
        if self.open.get(&m.key).is_none_or(|o| o.sub_id != m.sub_id) {
            return; // forgotten meanwhile (the task ended), or an older subscription's
        }
        let Some(open) = self.open.remove(&m.key) else {
            return;
        };
        self.release(&m.key.worker);
        match close {
            Close::Over => {
                self.over.insert(m.key.clone());
            }
            Close::NotStreaming => {
                let claims = worker.is_some_and(Worker::claims_streaming);
                if self.refused.insert(m.key.worker.clone()) && claims {
                    tracing::warn!(
                        "poller: worker \"{}\" offers streaming but refused a subscription; its tasks are polled",
                        m.key.worker
                    );
                }
            }
            Close::Dropped(why) => {
                let before = self.drops.get(&m.key).copied().unwrap_or(0);
                let (wait, drops) = schedule::resubscribe_after(before, open.since.elapsed());
                tracing::debug!(
                    "poller: stream of {} dropped ({why}); again in {wait:?}",
                    m.key
                );
                self.drops.insert(m.key.clone(), drops);
                let at_ms = now_ms.saturating_add(wait.as_millis() as i64);
                self.waiting.insert(m.key.clone(), at_ms);
            }
        }
    }

    /// Tasks whose backoff is over, to subscribe again if still live.
    /// The wall clock was set by `by` ms: the backoffs end when they would have.
    pub fn clock_set(&mut self, by: i64) {
        for at in self.waiting.values_mut() {
            *at = at.saturating_add(by);
        }
    }

    pub fn retries_due(&mut self, now_ms: i64) -> Vec<TaskKey> {
        let due: Vec<TaskKey> = self
            .waiting
            .iter()
            .filter(|(_, at)| **at <= now_ms)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &due {
            self.waiting.remove(k);
        }
        due
    }

    /// When the next backoff is over.
    pub fn next_retry_ms(&self) -> Option<i64> {
        self.waiting.values().copied().min()
    }

    /// The task ended (or is no longer ours): close its stream and forget it.
    pub fn forget(&mut self, key: &TaskKey) {
        if let Some(open) = self.open.remove(key) {
            open.handle.abort();
            self.release(&key.worker);
        }
        self.waiting.remove(key);
        self.drops.remove(key);
        self.over.remove(key);
    }

    /// Forgets every task not in `live` (ended by another process: a cancel, the inline window).
    pub fn keep_only(&mut self, live: &HashSet<TaskKey>) {
        let known: Vec<TaskKey> = (self.open.keys())
            .chain(self.waiting.keys())
            .chain(self.drops.keys())
            .chain(self.over.iter())
            .filter(|k| !live.contains(*k))
            .cloned()
            .collect();
        for k in known {
            self.forget(&k);
        }
    }

    /// Closes every stream (streaming turned off in the config).
    pub fn close_all(&mut self) {
        self.keep_only(&HashSet::new());
    }

    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
            && self.waiting.is_empty()
            && self.drops.is_empty()
            && self.over.is_empty()
    }

    fn release(&mut self, worker: &str) {
        if let Some(n) = self.per_worker.get_mut(worker) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_worker.remove(worker);
            }
        }
    }
}

/// One subscription, from the call to its close; every event goes to the loop as it arrives.
async fn follow(
    worker: Arc<Worker>,
    key: TaskKey,
    sub_id: u64,
    open_timeout: Duration,
    tx: mpsc::UnboundedSender<Msg>,
    keep: Keep,
) {
    let send = |what: Told| {
        let _ = tx.send(Msg {
            key: key.clone(),
            sub_id,
            what,
        });
    };
    let close = stream(&worker, &key.task_id, open_timeout, &keep, &send).await;
    send(Told::Closed(close));
}

async fn stream(
    worker: &Worker,
    task_id: &str,
    open_timeout: Duration,
    keep: &Keep,
    send: &impl Fn(Told),
) -> Close {
    let deadline = Instant::now() + open_timeout;
    let mut s = match worker.follow(task_id, deadline).await {
        Ok(Followed::Stream(s)) => s,
        Ok(Followed::NotStreaming) => return Close::NotStreaming,
        // The worker does not know the task (restarted): polling ends it as gone.
        Ok(Followed::Declined(A2aError::TaskNotFound)) => return Close::Over,
        // "Unsupported operation" is both what an ended task gets and what a worker that does
        // not serve streaming answers: one look at the task tells which.
        Ok(Followed::Declined(e @ A2aError::Rpc { code, .. }))
            if code == a2a_mod_proto::error::UNSUPPORTED_OPERATION =>
        {
            return ended_or_refused(worker, task_id, open_timeout, &e, keep, send).await;
        }
        Ok(Followed::Declined(e)) | Err(e) => return Close::Dropped(e.to_string()),
    };
    let mut told = false;
    loop {
        match s.next().await {
            Some(Ok(v)) => {
                let live = v.state.is_live();
                told = true;
                let v = if live {
                    v
                } else {
                    worker
                        .whole(
                            v,
                            s.partial().then(|| s.seen_chunks()),
                            Instant::now() + open_timeout,
                        )
                        .await
                };
                keep.save(&worker.alias, &v).await;
                send(Told::Event(v));
                if !live {
                    return Close::Over;
                }
            }
            Some(Err(A2aError::TaskNotFound)) => return Close::Over,
            // A flood: subscribing again would read another; the polls carry the task.
            Some(Err(e @ A2aError::Flooded(_))) => {
                tracing::warn!("poller: {}: {e}", worker.alias);
                return Close::Over;
            }
            // Garbage before any task: the worker's streams cannot be read (as inline).
            Some(Err(e @ A2aError::Protocol(_))) if !told => {
                worker.stream_failed(&e);
                return Close::NotStreaming;
            }
            Some(Err(e)) => return Close::Dropped(e.to_string()),
            None => return Close::Dropped("the worker closed the stream".into()),
        }
    }
}

async fn ended_or_refused(
    worker: &Worker,
    task_id: &str,
    timeout: Duration,
    refusal: &A2aError,
    keep: &Keep,
    send: &impl Fn(Told),
) -> Close {
    match worker.get_task(task_id, Instant::now() + timeout).await {
        Ok(v) if v.state.is_live() => {
            worker.refuse_streaming(refusal);
            Close::NotStreaming
        }
        Ok(v) => {
            keep.save(&worker.alias, &v).await;
            send(Told::Event(v));
            Close::Over
        }
        Err(e) => Close::Dropped(e.to_string()),
    }
}
