//! The background poller of one session: a process of its own (`a2a-mod poller --session ID`),
//! started by whoever leaves a task live (the MCP server, `send`, the monitor) and kept to exactly
//! one per session by an OS file lock, which a crash (`kill -9`) releases. It lives outside the
//! MCP server so tasks sent from the command line are polled too, and so a poller survives the
//! process that started it; it exits when the session has no live task left. ARCHITECTURE.md has
//! the reasoning. Starting one (`ensure`) is the claude crate's ([`a2a_mod_claude::poller`]): the hooks
//! call it, and they must not reach this file's tokio loop.

use a2a_mod_config::Config;
use a2a_mod_core::clock::{self, Reading};
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_core::schedule::{self, PollOutcome};
use a2a_mod_core::task::EndReason;
use a2a_mod_os::env::{Ctx, now_ms};
use a2a_mod_results::overflow::update_for_row;
use a2a_mod_store::{SessionPaths, Store, TaskRecord, clock_now};
use anyhow::Result;
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

mod holds;
mod keep;
mod streams;
pub use a2a_mod_claude::poller::{LOCK_PATIENCE, ensure, ensure_if_live, is_running, lock_path};
pub(crate) use keep::Keep;

/// How often the poller looks at the store for tasks added by other processes.
const RESCAN: Duration = Duration::from_millis(500);
/// Polls falling due this close together go out in one batch (at most a tenth of an interval
/// early): 500 tasks spread over 5 s would otherwise wake the poller every 10 ms, and each wake-up
/// costs more than the polls it sends (benches/poller.rs). Batched tasks stay batched, since each
/// next poll is one interval after the poll began.
const BATCH: Duration = Duration::from_millis(100);
/// At most this many polls in flight at once, so 500 tasks do not open 500 sockets together.
const MAX_IN_FLIGHT: usize = 64;

/// A poll's answer as it comes back: the row the poll was sent for, when it went out, what it got.
type Answer = (TaskRecord, tokio::time::Instant, PollOutcome);

/// The poller's main loop. Returns when the session has no live task, or at once when another
/// poller holds the lock.
pub async fn run(ctx: Ctx, session_id: String) -> Result<()> {
    let paths = SessionPaths::locate(&ctx, &session_id);
    let session_id = paths.owner;
    let lock_file = lock_path(&ctx, &session_id);
    let Some(mut lock) = a2a_mod_os::fsx::try_lock_within(&lock_file, LOCK_PATIENCE)? else {
        return Ok(());
    };
    let store = Store::open(&paths.db)?;
    if let Err(e) = store.meta_set("poller_pid", &std::process::id().to_string()) {
        // A full disk: the pid is for `doctor`; the polls matter more.
        tracing::warn!("poller of session {session_id}: {e:#}");
    }
    tracing::info!("poller of session {session_id} started");
    let config = Loaded::load(&ctx.config_path(), None);
    let (tx, mut rx) = mpsc::unbounded_channel::<Answer>();
    // Subscriptions to the tasks of streaming workers: their events come in beside the
    // polls' answers and go to the store in the same write.
    let (stx, mut srx) = mpsc::unbounded_channel::<streams::Msg>();
    let subs = streams::Streams::new(stx, Keep::new(&ctx, &session_id, &config.config));
    let mut p = Poller {
        ctx: &ctx,
        session_id: &session_id,
        store,
        config,
        workers: a2a_mod_a2a::Workers::default(),
        in_flight: HashSet::new(),
        tx,
        subs,
        holds: holds::Holds::new(),
        swept_ms: now_ms(),
        clock: clock_now(),
        trouble: None,
    };
    let card_ready = p.holds.card_ready();
    loop {
        p.reload_config();
        let next = match p.paused_until() {
            Some(until) => Some(until),
            None => p
                .watch_clock()
                .and_then(|()| p.start_due(now_ms()))
                .unwrap_or_else(|e| Some(p.cannot(&e))),
        };
        // Sleep until the next poll falls due, at most RESCAN (other processes add tasks); a
        // poll's answer wakes us at once.
        let wait = next.map_or(RESCAN, |due| {
            Duration::from_millis((due - now_ms()).clamp(0, RESCAN.as_millis() as i64) as u64)
        });
        let mut answers = Vec::new();
        let mut told = Vec::new();
        tokio::select! {
            Some(a) = rx.recv() => answers.push(a),
            Some(m) = srx.recv() => told.push(m),
            _ = card_ready.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
        // Apply every answer that has arrived, not one per pass: 500 tasks answer in bursts.
        while let Ok(a) = rx.try_recv() {
            answers.push(a);
        }
        while let Ok(m) = srx.try_recv() {
            told.push(m);
        }
        match p
            .apply(answers, told)
            .and_then(|wrote| p.sweep().map(|()| wrote))
        {
            Err(e) => {
                p.cannot(&e);
            }
            Ok(true) if p.trouble.take().is_some() => {
                tracing::info!("poller of session {session_id}: the store takes writes again");
            }
            Ok(_) => {}
        }

        if p.in_flight.is_empty() && p.store.live_count()? == 0 {
            // Release, then look once more: a task recorded between the check and the release
            // would otherwise wait for the next `ensure`.
            drop(lock);
            if p.store.live_count()? == 0 {
                tracing::info!("poller of session {session_id}: no live task left, exiting");
                return Ok(());
            }
            match a2a_mod_os::fsx::try_lock_within(&lock_file, LOCK_PATIENCE)? {
                Some(l) => lock = l,
                None => return Ok(()),
            }
        }
    }
}

/// The poller's state between passes of its loop.
struct Poller<'a> {
    ctx: &'a Ctx,
    session_id: &'a str,
    store: Store,
    config: Loaded,
    workers: a2a_mod_a2a::Workers,
    /// By row (`seq`, which an upsert keeps): the rows of polls in flight come back as due.
    in_flight: HashSet<i64>,
    tx: mpsc::UnboundedSender<Answer>,
    subs: streams::Streams,
    holds: holds::Holds,
    swept_ms: i64,
    /// The clocks as the last pass read them.
    clock: Reading,
    /// The store could not take the last write (a full disk, a read-only folder): what it said,
    /// and until when nothing is polled (what a poll brings could not be saved either).
    trouble: Option<(String, tokio::time::Instant)>,
}

impl Poller<'_> {
    /// A config edited since the last pass is read again (a broken one keeps the last good).
    fn reload_config(&mut self) {
        let path = self.ctx.config_path();
        if !self.config.changed(&path) {
            return;
        }
        let last_good = std::mem::take(&mut self.config.config);
        self.config = Loaded::load(&path, Some(last_good));
        self.workers.clear();
        self.holds.reload();
        self.subs.keep = Keep::new(self.ctx, self.session_id, &self.config.config);
        let t = &self.config.config.timing;
        if !t.streaming || t.max_streams_per_worker == 0 {
            self.subs.close_all();
        }
    }

    /// A wall clock set since the last pass (NTP, the user, a VM restored): the store's times
    /// move with it at once (every write does so first, `Store::keep_clock`; this one does it now
    /// so the status line counts on), and so do the poller's own, so polls, holds and backoffs
    /// fall due when they would have, not an hour late nor all at once. A resume from sleep is no
    /// step (`core::clock::step`): what it finds overdue is.
    fn watch_clock(&mut self) -> Result<()> {
        let now = clock_now();
        let before = std::mem::replace(&mut self.clock, now);
        let Some(by) = clock::step(before, now) else {
            return Ok(());
        };
        self.subs.clock_set(by);
        self.holds.clock_set(by);
        self.swept_ms = self.swept_ms.saturating_add(by);
        // A store that takes no write now moves its times at the first one it takes.
        let moved = self.store.keep_clock()?;
        tracing::warn!(
            "the clock was set {} by {} s: the times of {moved} task(s) moved with it",
            if by < 0 { "back" } else { "forward" },
            // Rounded: the wall and boot clocks are read one after the other, so a step of an
            // hour measures a few microseconds short or long of it.
            by.unsigned_abs().saturating_add(500) / 1000
        );
        Ok(())
    }

    /// A pass that could not write to the store: the poller does not exit (its tasks would wait
    /// for the next `ensure`), it says why once and polls again an interval on, when the tasks
    /// whose answers were lost are still due: nothing is lost, and all resumes once the disk has
    /// room or the folder is writable again. When to look again.
    fn cannot(&mut self, e: &anyhow::Error) -> i64 {
        let interval = self.config.config.timing.poll_interval();
        let said = format!("{e:#}");
        if self
            .trouble
            .as_ref()
            .is_none_or(|(before, _)| *before != said)
        {
            tracing::warn!(
                "poller of session {}: {said}; the tasks stay tracked and are checked again in {} s",
                self.session_id,
                interval.as_secs_f64()
            );
        }
        self.trouble = Some((said, tokio::time::Instant::now() + interval));
        now_ms().saturating_add(interval.as_millis() as i64)
    }

    /// While a write failure's pause lasts, when it ends (wall ms); once it is over, `None`.
    fn paused_until(&mut self) -> Option<i64> {
        let (_, until) = self.trouble.as_ref()?;
        let left = until.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() {
            // Over: the next failure is said again only if it says something else.
            return None;
        }
        Some(now_ms().saturating_add(left.as_millis() as i64))
    }

    /// Opens the streams now due and sends the polls now due (a batch: those due within a tenth
    /// of an interval); when the next thing is due (`None`: nothing known, look again soon).
    fn start_due(&mut self, now: i64) -> Result<Option<i64>> {
        let timing = &self.config.config.timing;
        let (config, workers) = (&self.config, &mut self.workers);
        let mut worker_of = |alias: &str| {
            let cfg = config.config.workers.get(alias)?;
            Some(workers.get(alias, cfg, timing.streaming))
        };
        // Subscriptions as soon as a window's hold is over (`holds.rs`).
        if timing.streaming && timing.max_streams_per_worker > 0 {
            let subs = &mut self.subs;
            self.holds
                .pass(&self.store, now, timing, subs, &mut worker_of)?;
        } else {
            self.holds.off();
        }
        // Dropped streams whose backoff is over, for tasks still live and not held by a window.
        for key in self.subs.retries_due(now) {
            let live = self
                .store
                .get(&key)?
                .is_some_and(|t| t.is_live() && !t.is_held(now))
                && !self.store.stream_leased(&key, now)?;
            if let (true, Some(w)) = (live, worker_of(&key.worker)) {
                self.subs.consider(&key, &w, timing);
            }
        }
        let horizon = now + (timing.poll_interval() / 10).min(BATCH).as_millis() as i64;
        let mut no_room = false;
        let mut removed: HashSet<String> = HashSet::new();
        // The rows of polls in flight still look due: ask for enough to see past them.
        let in_flight = &mut self.in_flight;
        for t in self
            .store
            .due_tasks(horizon, MAX_IN_FLIGHT + in_flight.len())?
        {
            if in_flight.contains(&t.seq) {
                continue;
            }
            if in_flight.len() >= MAX_IN_FLIGHT {
                no_room = true;
                break;
            }
            let Some(worker) = worker_of(&t.worker) else {
                // Removed from config without `worker remove` (edited by hand): same outcome.
                // Never on a config we could not read: a typo must not drop tasks.
                // One call ends all of that worker's tasks; its other due rows need none.
                if config.ok && removed.insert(t.worker.clone()) {
                    self.store.end_removed(&t.worker, now)?;
                }
                continue;
            };
            in_flight.insert(t.seq);
            let tx = self.tx.clone();
            let timeout = timing.poll_timeout();
            let keep = self.subs.keep.clone();
            tokio::spawn(async move {
                let started = tokio::time::Instant::now();
                let deadline = started + timeout;
                let got = worker.get_task(&t.task_id, deadline).await;
                if let Ok(v) = &got {
                    keep.save(&t.worker, v).await;
                }
                let outcome = a2a_mod_a2a::poll_outcome(&got);
                let _ = tx.send((t, started, outcome));
            });
        }
        // Tasks whose poll is in flight are not "due": sleeping on them would spin until they
        // answer (up to the 15 s poll timeout).
        let next = match (no_room, self.store.next_due_after(horizon)?) {
            (false, Some(due)) => Some(due),
            _ => None,
        };
        Ok([next, self.subs.next_retry_ms(), self.holds.next_look_ms()]
            .into_iter()
            .flatten()
            .min())
    }

    /// The polls' answers and the streams' events of one pass, to the store in one write (each
    /// long result saved whole first), after the streams they end are forgotten. Whether there
    /// was anything to write.
    fn apply(&mut self, answers: Vec<Answer>, told: Vec<streams::Msg>) -> Result<bool> {
        let timing = &self.config.config.timing;
        let mut events = Vec::new();
        for m in told {
            match m.what {
                streams::Told::Event(ref v) => {
                    if let Some(mut u) =
                        schedule::after_event(a2a_mod_a2a::poll_outcome(&Ok(v.clone())))
                    {
                        update_for_row(self.ctx, self.session_id, &m.key, &mut u);
                        events.push((m.key.clone(), u));
                    }
                }
                streams::Told::Closed(ref close) => {
                    let w = self.workers.built(&m.key.worker).cloned();
                    self.subs.closed(&m, close, w.as_deref(), now_ms());
                }
            }
        }
        let mut updates = Vec::with_capacity(answers.len());
        for (t, started, outcome) in answers {
            self.in_flight.remove(&t.seq);
            // On the wall clock as it reads now: one set while the poll was out moves its start.
            let started = now_ms().saturating_sub(started.elapsed().as_millis() as i64);
            let mut u = schedule::after_poll(
                t.failed_polls,
                t.state,
                outcome,
                started,
                timing.poll_interval(),
                timing.max_failed_polls,
            );
            if u.end == Some(EndReason::Lost) {
                tracing::warn!("{} task {}: lost contact", t.worker, t.task_id);
            }
            let key = t.key();
            update_for_row(self.ctx, self.session_id, &key, &mut u);
            if u.end.is_some() {
                self.subs.forget(&key);
            } else if let Some(w) = self.workers.built(&t.worker)
                && !self.holds.is_held(t.seq)
            {
                // A poll's answer also considers a stream (a task over the cap gets one once a
                // slot is free; a worker whose card came with this poll).
                self.subs.consider(&key, w, timing);
            }
            updates.push((t, u));
        }
        let wrote = !updates.is_empty() || !events.is_empty();
        if wrote {
            self.store.apply_polls_and_events(
                updates.iter().map(|(t, u)| (t, u)),
                events.iter().map(|(k, u)| (k, u)),
                now_ms(),
            )?;
        }
        Ok(wrote)
    }

    /// Streams of tasks ended elsewhere (a cancel, the `task` tool) are closed once an interval.
    fn sweep(&mut self) -> Result<()> {
        let interval = self.config.config.timing.poll_interval().as_millis() as i64;
        if self.subs.is_empty() || now_ms() - self.swept_ms < interval {
            return Ok(());
        }
        self.swept_ms = now_ms();
        let live: HashSet<TaskKey> = self
            .store
            .live_tasks()?
            .iter()
            .map(TaskRecord::key)
            .collect();
        self.subs.keep_only(&live);
        Ok(())
    }
}

/// The config as last read, and when, so edits (a worker removed or re-pointed) reach a running
/// poller. A broken file keeps the last good config: the poller must not die on a typo.
struct Loaded {
    config: Config,
    mtime: Option<SystemTime>,
    /// False while the file does not parse and `config` is the last good one (or empty).
    ok: bool,
}

impl Loaded {
    fn load(path: &Path, previous: Option<Config>) -> Loaded {
        let mtime = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        match Config::load(path) {
            Ok(config) => Loaded {
                config,
                mtime,
                ok: true,
            },
            Err(e) => {
                tracing::warn!("{e:#}");
                let config = previous.unwrap_or_default();
                Loaded {
                    config,
                    mtime,
                    ok: false,
                }
            }
        }
    }

    fn changed(&self, path: &Path) -> bool {
        std::fs::metadata(path).and_then(|m| m.modified()).ok() != self.mtime
    }
}
