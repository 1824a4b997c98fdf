//! `a2a-mod hook wake`: the asyncRewake waiter, so that no wake-up depends on the monitor alone.
//! Claude Code runs it as an `asyncRewake` hook after `send` and at every turn end (Stop), so a new
//! one takes over after each wake turn (the plugin ships it next to the monitor; without the
//! plugin, on `send`, it is the only wake path); exit 2 with the wake line and
//! the results on stderr wakes Claude (docs/claude-code.md "Hooks and hidden context"). One waiter per session (a lock):
//! a second one exits 0 at once. It lives while the session has live tasks or an unannounced
//! batch and leaves each batch to the monitor while the monitor holds its lock (`watch.rs`),
//! announcing it itself only when it stays unannounced past `SETTLE` with no monitor, or past
//! `MONITOR_GRACE` with a stuck one. The claim decides who announces, so a monitor dying at any
//! moment still leaves Claude woken exactly once. A writer that ends a task tells it at once
//! (`state::notify`, its socket bound before its first look); the tick is the safety net. On its own timeout or a signal it still wakes
//! Claude, saying what is still running. Not in headless runs: asyncRewake does not wake there
//! and `-p` waits for the hook to end, so the Stop hook (`stop.rs`) serves them.

use crate::env::{Ctx, now_ms};
use crate::error::{EXIT_OK, HOOK_EXIT_WAKE};
use crate::state::{Reader, SessionPaths, Store, notify};
// The monitor's rhythm: a wake from either path batches tasks the same way.
use crate::core::wake::{MONITOR_LOCK, SETTLE, WAITER_LOCK, monitor_grace};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Longer than any sensible inline task, shorter than Claude Code's patience for a hook.
const MAX_WAIT: Duration = Duration::from_secs(50 * 60);

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

pub fn run(ctx: &Ctx, session_id: &str) -> i32 {
    if super::mode::from_env() == super::mode::Mode::Headless {
        return EXIT_OK;
    }
    let paths = SessionPaths::locate(ctx, session_id);
    let owner = paths.owner.as_str();
    // It runs at every turn end of every attended session: with nothing live and nothing
    // unannounced (what the loop's first look would find) it leaves at once, on one read-only
    // look, creating no store and no lock file for a session that never used a2a.
    match Reader::open(&paths.db) {
        Ok(Some(s)) if s.live_count().unwrap_or(0) > 0 || s.has_unannounced().unwrap_or(false) => {}
        _ => return EXIT_OK,
    }
    // Before the lock: once it is held (and seen held), a stop signal must end the wait cleanly.
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGHUP, on_signal as *const () as libc::sighandler_t);
    }
    let lock = paths.lock(WAITER_LOCK);
    let Ok(Some(_lock)) = crate::fsx::try_lock_within(&lock, crate::poller::LOCK_PATIENCE) else {
        return EXIT_OK;
    };
    let path = &paths.db;
    let start = Instant::now();
    let mut settle_since: Option<Instant> = None;
    let Ok(store) = Store::open(path) else {
        return EXIT_OK;
    };
    let monitor = paths.lock(MONITOR_LOCK);
    let tick = notify::fallback_tick();
    // Armed before the first look: an ending committed after it is queued on the socket.
    let listener = notify::Listener::bind(path, notify::WAKER);
    loop {
        let live = store.live_count().unwrap_or(0);
        let pending = store.has_unannounced().unwrap_or(false);
        let stopping = STOP.load(Ordering::SeqCst) || start.elapsed() >= MAX_WAIT;
        let mut wait = tick;
        if pending {
            let since = *settle_since.get_or_insert_with(Instant::now);
            // A live monitor announces a batch after SETTLE; give it that and more before
            // deciding it is stuck. Without one, announce like it would.
            let patience = if crate::fsx::is_locked(&monitor) {
                monitor_grace(tick)
            } else {
                SETTLE
            };
            if since.elapsed() >= patience || stopping {
                return wake(ctx, owner, &store, None);
            }
            wait = wait.min(patience.saturating_sub(since.elapsed()));
        } else {
            settle_since = None;
            if live == 0 {
                // Nothing ended unannounced and nothing runs (the result came back inline, or
                // the monitor announced the last batch): no wake.
                return EXIT_OK;
            }
        }
        if stopping {
            let note = format!(
                "a2a: {live} task(s) still running; a2a-mod stopped waiting. Use the tasks tool to see them."
            );
            return wake(ctx, owner, &store, Some(note));
        }
        if live > 0 {
            crate::poller::ensure(ctx, owner);
        }
        // A signal cuts the wait short too (poll returns EINTR).
        notify::wait(listener.as_ref(), wait);
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
