//! Push notifications sent (A2A v1.0 §4.3.3): each change of a task POSTed to the webhooks its
//! client registered (`push.rs` says which and what), at least once, in order per webhook, never
//! holding up a run.
//!
//! - A change is queued in the store with the task's own write (`ServedStore::put_telling`), so a
//!   crash keeps both or neither and a restart resumes delivery; the run only pays that write.
//! - One worker per webhook with POSTs waiting takes them oldest first, one at a time; a failure
//!   is retried with backoff (1 s doubling to a minute), logged once per outage, given up after a
//!   day of failures. A slow or dead webhook holds only its own queue.

use crate::engine::Engine;
use crate::push::{Policy, TIMEOUT};
use a2a_mod_store::served::Pending;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use url::Url;

/// POSTs in flight at once over all webhooks.
const MAX_IN_FLIGHT: usize = 16;
/// The longest wait between tries.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// A webhook that has failed for this long is given up on: its queue is dropped, and logged.
const GIVE_UP: Duration = Duration::from_secs(24 * 3600);

/// The delivery workers: one per webhook with POSTs waiting.
pub struct Pusher {
    engine: Arc<Engine>,
    client: Result<reqwest::Client, String>,
    /// Webhooks a worker is delivering to now.
    busy: Mutex<HashSet<(String, String)>>,
    in_flight: Semaphore,
    stop: watch::Receiver<bool>,
}

impl Pusher {
    /// Starts delivering what the store holds and whatever is queued later, until `stop`.
    pub fn start(
        engine: Arc<Engine>,
        policy: Policy,
        stop: watch::Receiver<bool>,
    ) -> tokio::task::JoinHandle<()> {
        let client = crate::push::client(&policy);
        if let Err(e) = &client {
            tracing::error!("push notifications cannot be sent: {e}");
        }
        let pusher = Arc::new(Pusher {
            engine,
            client,
            busy: Mutex::new(HashSet::new()),
            in_flight: Semaphore::new(MAX_IN_FLIGHT),
            stop,
        });
        tokio::spawn(pusher.run(Arc::new(policy)))
    }

    /// Waits for queued POSTs and starts a worker for each webhook that has some and none.
    async fn run(self: Arc<Self>, policy: Arc<Policy>) {
        let wake = self.engine.push_wake();
        let mut stop = self.stop.clone();
        loop {
            match self.engine.with_store(|s| s.lanes()) {
                Ok(lanes) => {
                    for lane in lanes {
                        if crate::engine::lock(&self.busy).insert(lane.clone()) {
                            tokio::spawn(self.clone().lane(lane, policy.clone()));
                        }
                    }
                }
                Err(e) => tracing::error!("push notifications: the store failed: {e:#}"),
            }
            tokio::select! {
                () = wake.notified() => {}
                () = crate::engine::stopped(&mut stop) => return,
            }
        }
    }

    /// Delivers one webhook's POSTs in order until none is left (or it is given up on, or the
    /// server stops: what is left is delivered after a restart).
    async fn lane(self: Arc<Self>, lane: (String, String), policy: Arc<Policy>) {
        let (task, id) = &lane;
        let mut stop = self.stop.clone();
        // Since when it fails, and how many tries in a row.
        let mut failing: Option<(tokio::time::Instant, u32)> = None;
        loop {
            let next = match self.engine.with_store(|s| s.next_push(task, id)) {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    tracing::error!("push notifications: the store failed: {e:#}");
                    // Not at once again: the next look comes after a pause.
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        () = crate::engine::stopped(&mut stop) => {}
                    }
                    break;
                }
            };
            let origin = origin(&next.config.url);
            let sent = tokio::select! {
                r = self.post(&next, &policy) => r,
                () = crate::engine::stopped(&mut stop) => break,
            };
            match sent {
                Ok(()) => {
                    if let Err(e) = self.engine.with_store(|s| s.pushed(next.seq)) {
                        tracing::error!("push notifications: the store failed: {e:#}");
                        break;
                    }
                    if let Some((_, tries)) = failing.take() {
                        tracing::info!(task = %task, "push to {origin} delivered again after {tries} failed tries");
                    }
                }
                Err(why) => {
                    let (since, tries) = failing.get_or_insert((tokio::time::Instant::now(), 0));
                    *tries += 1;
                    if *tries == 1 {
                        tracing::warn!(task = %task, "push to {origin} failed: {why} — retrying with backoff, logged again once it is delivered");
                    }
                    if since.elapsed() >= GIVE_UP {
                        tracing::warn!(task = %task, "push to {origin} given up after {tries} tries over a day: its notifications are dropped");
                        if let Err(e) = self.engine.with_store(|s| s.drop_lane(task, id)) {
                            tracing::error!("push notifications: the store failed: {e:#}");
                        }
                        break;
                    }
                    let wait = backoff(*tries);
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = crate::engine::stopped(&mut stop) => break,
                    }
                }
            }
        }
        crate::engine::lock(&self.busy).remove(&lane);
        // A POST queued after the last look, while this worker was still counted, is not missed.
        self.engine.push_wake().notify_one();
    }

    /// One POST; `Err` says what went wrong (never the URL's path or query, which may hold a
    /// secret).
    async fn post(&self, p: &Pending, policy: &Policy) -> Result<(), String> {
        let client = self.client.as_ref().map_err(String::clone)?;
        // Checked again: the config may predate the policy (a restart with another config).
        let url = policy.check(&p.config.url)?;
        let mut req = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(p.body.clone());
        if let Some(t) = &p.config.token {
            req = req.header("X-A2A-Notification-Token", t);
        }
        if let (Some(s), Some(c)) = (&p.config.scheme, &p.config.credentials) {
            req = req.header(reqwest::header::AUTHORIZATION, format!("{s} {c}"));
        }
        let _slot = self.in_flight.acquire().await.map_err(|e| e.to_string())?;
        let answer = req.send().await.map_err(|e| {
            if e.is_timeout() {
                format!("no answer within {} s", TIMEOUT.as_secs())
            } else {
                causes(&e.without_url())
            }
        })?;
        let status = answer.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(format!("it answered {status}"))
        }
    }
}

/// The wait before try `tries + 1`: 1 s, doubling, at most [`MAX_BACKOFF`].
fn backoff(tries: u32) -> Duration {
    Duration::from_secs(1u64 << tries.saturating_sub(1).min(6)).min(MAX_BACKOFF)
}

/// An error and its causes, in one line.
fn causes(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        line.push_str(": ");
        line.push_str(&s.to_string());
        source = s.source();
    }
    a2a_mod_core::text::one_line(&line, 300)
}

/// `scheme://host:port` of a URL: what the log names of a webhook.
fn origin(url: &str) -> String {
    Url::parse(url).map_or_else(|_| "?".into(), |u| u.origin().ascii_serialization())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_a_minute() {
        let waits: Vec<u64> = (1..=9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }
}
