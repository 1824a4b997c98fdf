//! `a2a-mod hook wake`: the asyncRewake waiter, so that no wake-up depends on the monitor alone.
//! Claude Code runs it as an `asyncRewake` hook after `send` and at every turn end (Stop), so a new
//! one takes over after each wake turn (the plugin ships it next to the monitor; without the
//! plugin, on `send`, it is the only wake path); exit 2 with the wake line and the results on
//! stderr wakes Claude (docs/claude-code.md "Hooks and hidden context"). One waiter per session (a
//! lock): a second one exits 0 at once. It lives while the session has live tasks or an unannounced
//! batch and leaves each batch to the monitor while the monitor holds its lock (`wake/watch.rs`),
//! announcing it itself only when it stays unannounced past `SETTLE` with no monitor, or past
//! `MONITOR_GRACE` with a stuck one. The claim decides who announces, so a monitor dying at any
//! moment still leaves Claude woken exactly once. A writer that ends a task tells it at once
//! ([`a2a_mod_store::notify`], its socket bound before its first look); the tick is the safety net.
//! The loop is the three waiters' one (`wake/waiter.rs`), on the rule
//! [`core::batch::Rule::Rewake`](a2a_mod_core::batch::Rule::Rewake). On its own timeout or a signal
//! it still wakes Claude, saying what is still running. Not in headless runs: asyncRewake does not
//! wake there and `-p` waits for the hook to end, so the Stop hook (`stop.rs`) serves them.

use crate::error::{EXIT_OK, HOOK_EXIT_WAKE};
use crate::wake::waiter::{self, Waiter};
use a2a_mod_core::batch::{Look, Rule};
use a2a_mod_os::env::{Ctx, now_ms};
use a2a_mod_store::{Reader, SessionPaths, Store, notify};
// The monitor's rhythm: a wake from either path batches tasks the same way.
use a2a_mod_core::wake::{MONITOR_LOCK, WAITER_LOCK, monitor_grace};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// Longer than any sensible inline task, shorter than Claude Code's patience for a hook.
const MAX_WAIT: Duration = Duration::from_secs(50 * 60);

pub fn run(ctx: &Ctx, session_id: &str) -> i32 {
    if super::mode::from_env() == super::mode::Mode::Headless {
        return EXIT_OK;
    }
    let paths = SessionPaths::locate(ctx, session_id);
    // It runs at every turn end of every attended session: with nothing live and nothing
    // unannounced (what the loop's first look would find) it leaves at once, on one read-only
    // look, creating no store and no lock file for a session that never used a2a.
    match Reader::open(&paths.db) {
        Ok(Some(s)) if s.live_count().unwrap_or(0) > 0 || s.has_unannounced().unwrap_or(false) => {}
        _ => return EXIT_OK,
    }
    // Before the lock: once it is held (and seen held), a stop signal must end the wait cleanly.
    a2a_mod_os::process::catch_stop_signals();
    let lock = paths.lock(WAITER_LOCK);
    let Ok(Some(_lock)) = a2a_mod_os::fsx::try_lock_within(&lock, crate::poller::LOCK_PATIENCE)
    else {
        return EXIT_OK;
    };
    let Ok(store) = Store::open(&paths.db) else {
        return EXIT_OK;
    };
    let mut w = Rewake {
        ctx,
        owner: paths.owner.clone(),
        monitor: paths.lock(MONITOR_LOCK),
        // Armed before the first look: an ending committed after it is queued on the socket.
        listener: notify::Listener::bind(&paths.db, notify::WAKER),
        store,
        live: 0,
    };
    let grace = monitor_grace(notify::fallback_tick());
    waiter::wait(
        &mut w,
        Rule::Rewake {
            grace,
            max_wait: MAX_WAIT,
        },
    )
}

struct Rewake<'a> {
    ctx: &'a Ctx,
    owner: String,
    monitor: PathBuf,
    listener: Option<notify::Listener>,
    store: Store,
    live: usize,
}

impl Waiter for Rewake<'_> {
    fn look(&mut self) -> anyhow::Result<Look> {
        // A store that cannot be read reads as nothing to wait for: this hook must not hold on.
        self.live = self.store.live_count().unwrap_or(0);
        let pending = self.store.has_unannounced().unwrap_or(false);
        if self.live > 0 {
            crate::poller::ensure(self.ctx, &self.owner);
        }
        Ok(Look {
            live: self.live,
            waited_for: self.live,
            pending,
            monitor: a2a_mod_os::fsx::is_locked(&self.monitor),
            signalled: false,
        })
    }

    fn hand_over(&mut self, give_up: bool) -> Option<i32> {
        let note = give_up.then(|| {
            format!(
                "a2a: {} task(s) still running; a2a-mod stopped waiting. Use the tasks tool to see them.",
                self.live
            )
        });
        Some(wake(self.ctx, &self.owner, &self.store, note))
    }

    fn listener(&self) -> Option<&notify::Listener> {
        self.listener.as_ref()
    }
}

fn wake(ctx: &Ctx, owner: &str, store: &Store, note: Option<String>) -> i32 {
    let now = now_ms();
    let announced = store.claim_unannounced(now).unwrap_or_default();
    let delivered = store.take_undelivered(now).unwrap_or_default();
    let mut text = crate::wake::line(&announced);
    if let Some(n) = note {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&n);
    }
    if text.is_empty() && delivered.is_empty() {
        return EXIT_OK;
    }
    let left = store.count_undelivered().unwrap_or(0);
    let context = crate::wake::context(ctx, owner, &delivered, left);
    let mut e = std::io::stderr().lock();
    let _ = write!(e, "{text}\n\n{context}");
    let _ = e.flush();
    HOOK_EXIT_WAKE
}
