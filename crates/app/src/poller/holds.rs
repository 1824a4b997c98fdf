//! When the poller subscribes to a task: as soon as no inline window holds it
//! ([`core::lifecycle::Life::held_until_ms`](a2a_mod_core::lifecycle::Life::held_until_ms)), not at
//! its first background poll one interval later, so a task that ends just after its window is told
//! by the stream within a second. Each pass looks up the held tasks (one range query, empty outside
//! windows and deferrals); a task that was held at the last pass and no longer is, or any unheld
//! live task at the poller's start, is handed to `Streams::consider` once its worker's card is
//! known. A card not fetched yet is fetched once per worker in the background (bounded by the poll
//! timeout), and its arrival wakes the loop. A held task has no poller stream: a follow-up `send`
//! starts afresh.

use super::streams::Streams;
use a2a_mod_a2a::Worker;
use a2a_mod_config::Timing;
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_store::Store;
use anyhow::Result;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The held tasks are looked up at most this often: under load the loop wakes at every burst
/// of answers (up to 100 times a second for 500 tasks), and a release seen 0.1 s late costs
/// nothing a stream would have told.
const LOOK_EVERY_MS: i64 = 100;

/// Tasks by row (`seq`), oldest first: under the per-worker cap the oldest tasks get the streams.
type Tasks = BTreeMap<i64, TaskKey>;

pub(super) struct Holds {
    /// The tasks held at the last pass; `None` before the first (which takes every unheld task).
    held: Option<Tasks>,
    /// Tasks whose hold is over, waiting for their worker's card.
    unheld: Tasks,
    /// One card fetch per worker (since the last config reload).
    cards: HashMap<String, JoinHandle<()>>,
    card_ready: Arc<Notify>,
    looked_ms: i64,
    /// When the first of the held tasks is released (its window's hold ends): the loop wakes
    /// then, so a task is subscribed to as its hold ends, not at the next rescan (up to 0.5 s
    /// later, which pulled apart two endings that must share one wake-up).
    release_ms: Option<i64>,
    /// The newest row looked at: a task recorded and handed over between two looks (a short
    /// window, `inline_polls_s = []`, a CLI send) is never seen held, so new rows are looked at too.
    newest_seq: i64,
}

impl Holds {
    pub fn new() -> Holds {
        Holds {
            held: None,
            unheld: BTreeMap::new(),
            cards: HashMap::new(),
            card_ready: Arc::new(Notify::new()),
            looked_ms: i64::MIN,
            release_ms: None,
            newest_seq: 0,
        }
    }

    /// Wakes the loop when a card fetch is over.
    pub fn card_ready(&self) -> Arc<Notify> {
        self.card_ready.clone()
    }

    /// The config changed: the poller's workers are new, their cards unknown.
    pub fn reload(&mut self) {
        self.cards.clear();
    }

    /// The wall clock was set by `by` ms: the times kept here move with it.
    pub fn clock_set(&mut self, by: i64) {
        self.looked_ms = self.looked_ms.saturating_add(by);
        self.release_ms = self.release_ms.map(|r| r.saturating_add(by));
    }

    /// Streaming is off: nothing to subscribe; when it comes back, start as the poller does.
    pub fn off(&mut self) {
        self.held = None;
        self.release_ms = None;
        self.unheld.clear();
    }

    /// When the loop should look again for tasks whose hold ended (never sooner than the
    /// lookup's own pace, so a release just after a look cannot make the loop spin).
    pub fn next_look_ms(&self) -> Option<i64> {
        self.release_ms
            .map(|r| r.max(self.looked_ms.saturating_add(LOOK_EVERY_MS)))
    }

    pub fn is_held(&self, seq: i64) -> bool {
        self.held.as_ref().is_some_and(|h| h.contains_key(&seq))
    }

    /// One pass: which tasks are held now, which were released since the last pass; then a
    /// subscription (if it fits) for each released task whose worker's card says it streams.
    pub fn pass(
        &mut self,
        store: &Store,
        now_ms: i64,
        timing: &Timing,
        subs: &mut Streams,
        mut worker_of: impl FnMut(&str) -> Option<Arc<Worker>>,
    ) -> Result<()> {
        // A card that just came wakes the loop: its tasks need no new look at the store.
        if now_ms.saturating_sub(self.looked_ms) < LOOK_EVERY_MS && self.unheld.is_empty() {
            return Ok(());
        }
        self.looked_ms = now_ms;
        let rows = store.held_tasks(now_ms)?;
        self.release_ms = rows.iter().map(|(_, _, until)| *until).min();
        let held: Tasks = rows.into_iter().map(|(seq, key, _)| (seq, key)).collect();
        for (seq, key) in &held {
            subs.forget(key);
            self.unheld.remove(seq);
        }
        let mut newest = held.keys().copied().fold(self.newest_seq, i64::max);
        match &self.held {
            None => {
                for t in store.live_tasks()? {
                    newest = newest.max(t.seq);
                    if t.is_live() && !held.contains_key(&t.seq) {
                        self.unheld.insert(t.seq, t.key());
                    }
                }
            }
            Some(before) => {
                for t in store.live_tasks_after(self.newest_seq)? {
                    newest = newest.max(t.seq);
                    if t.is_live() && !held.contains_key(&t.seq) && !before.contains_key(&t.seq) {
                        self.unheld.insert(t.seq, t.key());
                    }
                }
                for (seq, key) in before {
                    if held.contains_key(seq) {
                        continue;
                    }
                    // Released: the window handed over, or stopped (its task ended, or the call
                    // was cancelled and the hold ran out).
                    let row = store.get(key)?;
                    if row.is_some_and(|t| t.seq == *seq && t.is_live()) {
                        self.unheld.insert(*seq, key.clone());
                    }
                }
            }
        }
        self.newest_seq = newest;
        let timeout = timing.poll_timeout();
        // The card of a held task's worker is fetched meanwhile, so its release subscribes at once.
        for key in held.values() {
            if let Some(w) = worker_of(&key.worker) {
                self.fetch_card(&w, timeout);
            }
        }
        self.held = Some(held);
        let mut unheld = std::mem::take(&mut self.unheld);
        unheld.retain(|_, key| {
            let Some(w) = worker_of(&key.worker) else {
                return false;
            };
            if w.claims_streaming() {
                subs.consider(key, &w, timing);
                return false;
            }
            // Not known to stream: wait for the card, unless its fetch is over (then the worker
            // does not stream, or could not be asked: a poll's answer considers it again).
            self.fetch_card(&w, timeout);
            self.cards
                .get(&key.worker)
                .is_some_and(|h| !h.is_finished())
        });
        self.unheld = unheld;
        Ok(())
    }

    fn fetch_card(&mut self, w: &Arc<Worker>, timeout: std::time::Duration) {
        if self.cards.contains_key(&w.alias) {
            return;
        }
        let (worker, ready) = (w.clone(), self.card_ready.clone());
        let fetch = tokio::spawn(async move {
            if let Err(e) = worker.card(tokio::time::Instant::now() + timeout).await {
                tracing::debug!(worker = %worker.alias, "poller: no card yet ({e})");
            }
            ready.notify_one();
        });
        self.cards.insert(w.alias.clone(), fetch);
    }
}
