//! The one waiting loop of the monitor (`watch.rs`), the asyncRewake waiter (`hook/rewake.rs`) and
//! the headless Stop hook (`hook/stop.rs`): look at the session, ask the batch state machine
//! ([`core::batch`](a2a_mod_core::batch)) what to do, and wait on the wake socket
//! ([`a2a_mod_store::notify`]) or the tick. No runtime: it blocks in `poll`, which a writer's
//! datagram or a stop signal cuts short.

use crate::error::EXIT_OK;
use a2a_mod_core::batch::{Batch, Look, Next, Rule};
use a2a_mod_store::notify;

/// One waiter's side of the loop.
pub trait Waiter {
    /// One look at the session, which also keeps it going (the poller alive, the socket bound to
    /// the store `/clear` moved to). `signalled` is filled in by the loop.
    fn look(&mut self) -> anyhow::Result<Look>;
    /// Hands the batch over (`give_up`: saying what still runs); `Some(code)` ends the wait.
    fn hand_over(&mut self, give_up: bool) -> Option<i32>;
    /// The socket writers tell endings on (`None`: the tick alone serves).
    fn listener(&self) -> Option<&notify::Listener>;
    /// Whether nobody is left to hand anything to (the monitor's: its stdout closed, or Claude
    /// Code gone): the wait ends at once.
    fn gone(&self) -> bool {
        false
    }
}

/// Waits on `rule`'s terms until the waiter is done; its exit code.
pub fn wait(w: &mut impl Waiter, rule: Rule) -> i32 {
    let tick = notify::fallback_tick();
    // The batch's times are the waiter's own, on a clock nobody sets: a wall clock set back an
    // hour must not hold a wake-up for an hour, nor one set forward make the waiter give up.
    let origin = std::time::Instant::now();
    let now_ms = || i64::try_from(origin.elapsed().as_millis()).unwrap_or(i64::MAX);
    let mut batch = Batch::new(rule, now_ms());
    loop {
        if w.gone() {
            return EXIT_OK;
        }
        let next = match w.look() {
            Ok(look) => {
                let signalled = a2a_mod_os::process::stop_asked();
                batch.next(&Look { signalled, ..look }, now_ms(), tick)
            }
            Err(e) => {
                // A store error (locked past the busy timeout, a file replaced under us) must
                // not end the wait: the session would never be woken. Look again next tick,
                // the batch forming afresh.
                tracing::warn!("waiting for tasks: {e:#}");
                batch.forget();
                if a2a_mod_os::process::stop_asked() {
                    return EXIT_OK;
                }
                Next::Wait(tick)
            }
        };
        match next {
            Next::Wait(d) => notify::wait(w.listener(), d),
            Next::HandOver | Next::GiveUp => {
                if let Some(code) = w.hand_over(next == Next::GiveUp) {
                    return code;
                }
            }
            Next::Leave => return EXIT_OK,
        }
    }
}
