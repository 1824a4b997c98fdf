//! `a2a-mod hook stop`: the plugin's Stop hook, the wake-up of headless and Agent SDK runs
//! (`claude -p`, stream-json), where neither the monitor nor asyncRewake runs. A Stop hook that
//! answers `{"decision":"block","reason":R}` makes Claude Code give the model a new turn with R,
//! and one that waits holds the run open while it waits (docs/claude-code.md "Hooks and hidden
//! context": a Stop hook can hold a headless run). So in a session nobody attends it waits while
//! the session has live tracked tasks and hands over each batch that ends: the wake line and the
//! results, the same text and fence as the hidden context, since UserPromptSubmit does not run for
//! such turns.
//!
//! Never a loop: with nothing live and nothing undelivered it exits 0 at once and silently; after
//! giving up on tasks (`[headless] max_wait_s`) it does not wait for those same tasks again. In an
//! attended session it returns at once: a waiting Stop hook there shows a spinner and turns the
//! prompt box into a queue. The answer is claimed (`delivered_ms`) in the transaction that prints
//! it, so no other hook hands the same result over again. A writer that ends a task tells it at
//! once ([`a2a_mod_store::notify`], its socket bound before its first look); the tick is the safety
//! net. The loop is the three waiters' one (`wake/waiter.rs`), on the rule
//! [`core::batch::Rule::Headless`](a2a_mod_core::batch::Rule::Headless).

use crate::error::EXIT_OK;
use crate::wake::waiter::{self, Waiter};
use a2a_mod_config::Config;
use a2a_mod_core::batch::{Look, Rule};
use a2a_mod_core::wake::STOP_LOCK;
use a2a_mod_os::env::{Ctx, now_ms};
use a2a_mod_store::{Reader, SessionPaths, Store, TaskRecord, notify};
use std::collections::BTreeSet;
use std::io::Write;
use std::time::Duration;

/// `meta` key: the live tasks (`worker/task_id`, one a line) the last wait gave up on.
const GAVE_UP: &str = "headless.gave_up";

pub fn run(ctx: &Ctx, session_id: &str) -> i32 {
    if super::mode::from_env() == super::mode::Mode::Attended {
        return EXIT_OK;
    }
    let paths = SessionPaths::locate(ctx, session_id);
    // The common case (a turn end with no delegated work) costs one read-only look.
    match Reader::open(&paths.db) {
        Ok(Some(s)) => {
            let live = s.live_count().unwrap_or(0);
            if live == 0 && !s.has_undelivered().unwrap_or(false) {
                return EXIT_OK;
            }
        }
        _ => return EXIT_OK,
    }
    // Claude Code ends a hook with SIGTERM at its timeout (and drops its output): leave quietly
    // then, nothing claimed, so the results stay for whoever looks next.
    a2a_mod_os::process::catch_stop_signals();
    let lock = paths.lock(STOP_LOCK);
    let Ok(Some(_lock)) = a2a_mod_os::fsx::try_lock_within(&lock, crate::poller::LOCK_PATIENCE)
    else {
        return EXIT_OK;
    };
    let Ok(store) = Store::open(&paths.db) else {
        return EXIT_OK;
    };
    let max_wait = Config::load(&ctx.config_path())
        .map(|c| c.headless.max_wait())
        .unwrap_or_else(|_| a2a_mod_config::HeadlessConfig::default().max_wait());
    let gave_up = store
        .meta_get(GAVE_UP)
        .ok()
        .flatten()
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default();
    let mut w = Stop {
        ctx,
        owner: paths.owner.clone(),
        // Armed before the first look: an ending committed after it is queued on the socket.
        listener: notify::Listener::bind(&paths.db, notify::STOP),
        store,
        gave_up,
        live: Vec::new(),
        max_wait,
    };
    waiter::wait(&mut w, Rule::Headless { max_wait })
}

struct Stop<'a> {
    ctx: &'a Ctx,
    owner: String,
    listener: Option<notify::Listener>,
    store: Store,
    gave_up: BTreeSet<String>,
    /// The live tasks at the last look.
    live: Vec<TaskRecord>,
    max_wait: Duration,
}

impl Waiter for Stop<'_> {
    fn look(&mut self) -> anyhow::Result<Look> {
        // A store that cannot be read reads as nothing to wait for: the run must not hang on it.
        self.live = self.store.live_tasks().unwrap_or_default();
        let pending = self.store.has_undelivered().unwrap_or(false);
        if !self.live.is_empty() {
            crate::poller::ensure(self.ctx, &self.owner);
        }
        Ok(Look {
            live: self.live.len(),
            waited_for: self
                .live
                .iter()
                .filter(|t| !self.gave_up.contains(&key(t)))
                .count(),
            pending,
            monitor: false,
            signalled: false,
        })
    }

    fn hand_over(&mut self, give_up: bool) -> Option<i32> {
        let note = give_up.then(|| {
            let keys: Vec<String> = self.live.iter().map(key).collect();
            let _ = self.store.meta_set(GAVE_UP, &keys.join("\n"));
            still_running(&self.owner, &self.live, self.max_wait)
        });
        Some(answer(self.ctx, &self.owner, &self.store, note))
    }

    fn listener(&self) -> Option<&notify::Listener> {
        self.listener.as_ref()
    }
}

fn key(t: &TaskRecord) -> String {
    format!("{}/{}", t.worker, t.task_id)
}

/// Prints the block answer with every undelivered outcome (and `note`), claiming them in the same
/// transaction; with nothing undelivered and no note it stays silent.
fn answer(ctx: &Ctx, owner: &str, store: &Store, note: Option<String>) -> i32 {
    let now = now_ms();
    // Announced now too: a monitor of this session (after `claude --resume` in a terminal) must
    // not wake Claude again for what this answer carries.
    let _ = store.claim_unannounced(now);
    let mut printed = false;
    // Counted before the claim: what the claim leaves is held back for the next Stop.
    let waiting = store.count_undelivered().unwrap_or(0);
    let taken = store.take_undelivered_with(now, |batch| {
        let left = waiting.saturating_sub(batch.len());
        print_block(&reason(ctx, owner, batch, note.as_deref(), left))?;
        printed = true;
        Ok(())
    });
    if taken.is_ok()
        && !printed
        && let Some(n) = note.as_deref()
    {
        let _ = print_block(&reason(ctx, owner, &[], Some(n), 0));
    }
    EXIT_OK
}

/// The wake line, the note, then the hidden-context text (marked, results fenced).
fn reason(
    ctx: &Ctx,
    owner: &str,
    batch: &[TaskRecord],
    note: Option<&str>,
    held_back: usize,
) -> String {
    let mut text = crate::wake::line(batch);
    if let Some(n) = note {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(n);
    }
    if !batch.is_empty() {
        text.push_str("\n\n");
        text.push_str(&crate::wake::context(ctx, owner, batch, held_back));
    }
    text
}

/// `a2a: 1 task still running after 30 min …`, naming each task and how to fetch it later.
fn still_running(owner: &str, live: &[TaskRecord], waited: Duration) -> String {
    let mins = waited.as_secs() / 60;
    let waited = if mins >= 1 {
        format!("{mins} min")
    } else {
        format!("{} s", waited.as_secs())
    };
    let mut s = format!(
        "a2a: {} task(s) still running after waiting {waited}; a2a-mod stopped waiting ([headless] max_wait_s). \
         They keep running at the worker; fetch a result later with the command shown:",
        live.len()
    );
    for t in live {
        s.push_str(&format!(
            "\n- {} task {}: a2a-mod task {} --session {owner}",
            a2a_mod_core::text::sanitize(&t.worker),
            a2a_mod_core::wake::short_id(&t.task_id),
            a2a_mod_core::fence::clean_multiline(&t.task_id)
        ));
    }
    s
}

fn print_block(reason: &str) -> std::io::Result<()> {
    let out = serde_json::json!({"decision": "block", "reason": reason});
    let mut o = std::io::stdout().lock();
    writeln!(o, "{out}")?;
    o.flush()
}
