//! When a waiter hands a batch of ended tasks to Claude (docs/how-it-works.md "Waking Claude"): one
//! pure state machine for the three waiters, each with its own [`Rule`]. The waiter looks at the
//! session, tells [`Batch::next`] what it saw, and waits, hands the batch over, or leaves, as told;
//! one synchronous loop does that for all three (the binary's `crates/claude/src/wake/waiter.rs`).

use super::wake::{HEADLESS_SETTLE, SETTLE};
use std::time::Duration;

/// Which waiter, and its terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rule {
    /// The monitor: announces a batch [`SETTLE`] after it began to form (at once with nothing
    /// live: nothing can join it), and runs until stopped.
    Monitor,
    /// The asyncRewake waiter: leaves each batch to a live monitor for `grace`
    /// (`wake::monitor_grace`), else announces like it (after [`SETTLE`], at once with nothing
    /// live); leaves once nothing is live or pending;
    /// stopped (a signal, or `max_wait` gone by) it wakes Claude saying what still runs.
    Rewake { grace: Duration, max_wait: Duration },
    /// The headless Stop hook: hands a batch over once no task ended for [`HEADLESS_SETTLE`], at
    /// most three times that after it began, at once with nothing live; leaves when nothing is
    /// pending and it waits for nothing (every live task one it gave up on); after `max_wait` it
    /// gives up, saying what still runs; a signal makes it leave quietly.
    Headless { max_wait: Duration },
}

/// What one look at the session saw.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// Live tasks.
    pub live: usize,
    /// Live tasks the waiter still waits for (the Stop hook's: not given up on); `live` otherwise.
    pub waited_for: usize,
    /// Ended tasks not yet handed over (unannounced for the monitor and the waiter, undelivered
    /// for the Stop hook).
    pub pending: bool,
    /// A monitor holds its lock.
    pub monitor: bool,
    /// A stop signal came.
    pub signalled: bool,
}

/// What the waiter does next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Next {
    /// Look again after this long, or as soon as a writer tells of an ending.
    Wait(Duration),
    /// Hand the pending batch over.
    HandOver,
    /// Stop waiting: hand over what there is, saying what still runs.
    GiveUp,
    /// Nothing more to do: exit quietly.
    Leave,
}

/// One waiter's batch as it forms.
#[derive(Debug, Clone)]
pub struct Batch {
    rule: Rule,
    started_ms: i64,
    /// When the pending batch began to form (first seen pending).
    first_pending_ms: Option<i64>,
    /// The Stop hook's: when a task last ended (the live count dropped).
    last_end_ms: Option<i64>,
    last_live: Option<usize>,
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn left(until_ms: i64, now_ms: i64) -> Duration {
    Duration::from_millis(until_ms.saturating_sub(now_ms).max(0) as u64)
}

impl Batch {
    pub fn new(rule: Rule, now_ms: i64) -> Batch {
        Batch {
            rule,
            started_ms: now_ms,
            first_pending_ms: None,
            last_end_ms: None,
            last_live: None,
        }
    }

    /// The look failed: the batch forms afresh at the next one (its waiter's wait keeps running).
    pub fn forget(&mut self) {
        self.first_pending_ms = None;
    }

    /// What to do after `look` at `now_ms`; `tick` bounds every wait (the safety net).
    pub fn next(&mut self, look: &Look, now_ms: i64, tick: Duration) -> Next {
        let first = match look.pending {
            true => *self.first_pending_ms.get_or_insert(now_ms),
            false => {
                self.first_pending_ms = None;
                now_ms
            }
        };
        let waited = now_ms.saturating_sub(self.started_ms);
        match self.rule {
            Rule::Monitor => {
                if look.signalled {
                    return Next::Leave;
                }
                if !look.pending {
                    return Next::Wait(tick);
                }
                // SETTLE is for tasks that end together; with nothing live, none can join.
                let due = match look.live {
                    0 => now_ms,
                    _ => first.saturating_add(ms(SETTLE)),
                };
                if now_ms >= due {
                    self.first_pending_ms = None;
                    return Next::HandOver;
                }
                Next::Wait(left(due, now_ms).min(tick))
            }
            Rule::Rewake { grace, max_wait } => {
                let stopping = look.signalled || waited >= ms(max_wait);
                if look.pending {
                    // A live monitor announces a batch after SETTLE; give it that and more
                    // before deciding it is stuck. Without one, announce like it would.
                    let patience = match (look.monitor, look.live) {
                        (true, _) => grace,
                        (false, 0) => Duration::ZERO,
                        (false, _) => SETTLE,
                    };
                    let due = first.saturating_add(ms(patience));
                    if now_ms >= due || stopping {
                        return Next::HandOver;
                    }
                    return Next::Wait(left(due, now_ms).min(tick));
                }
                if look.live == 0 {
                    // Nothing ended unannounced and nothing runs: no wake.
                    return Next::Leave;
                }
                match stopping {
                    true => Next::GiveUp,
                    false => Next::Wait(tick),
                }
            }
            Rule::Headless { max_wait } => {
                if look.signalled {
                    return Next::Leave;
                }
                // The first look counts as an ending: a batch found pending waits to go quiet.
                if self.last_live.is_none_or(|n| look.live < n) {
                    self.last_end_ms = Some(now_ms);
                }
                self.last_live = Some(look.live);
                let mut wait = tick;
                if look.pending {
                    let settle = ms(HEADLESS_SETTLE);
                    let quiet_at = self
                        .last_end_ms
                        .map_or(now_ms, |t| t.saturating_add(settle));
                    let cap_at = first.saturating_add(3 * settle);
                    // With nothing live, nothing can join the batch.
                    if look.live == 0 || now_ms >= quiet_at || now_ms >= cap_at {
                        return Next::HandOver;
                    }
                    wait = wait.min(left(quiet_at.min(cap_at), now_ms));
                } else if look.waited_for == 0 {
                    // Nothing to hand over, and nothing we still wait for: the run may end.
                    return Next::Leave;
                }
                let end = self.started_ms.saturating_add(ms(max_wait));
                if now_ms >= end {
                    return Next::GiveUp;
                }
                Next::Wait(wait.min(left(end, now_ms)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TICK: Duration = Duration::from_millis(250);

    fn look(live: usize, pending: bool) -> Look {
        Look {
            live,
            waited_for: live,
            pending,
            monitor: false,
            signalled: false,
        }
    }

    /// While another task runs, the monitor announces a batch SETTLE after it began to form, and
    /// not before; a batch nothing live can join (a lone task's) it announces at once.
    #[test]
    fn the_monitor_settles_then_announces() {
        let mut b = Batch::new(Rule::Monitor, 0);
        assert_eq!(b.next(&look(2, false), 0, TICK), Next::Wait(TICK));
        assert_eq!(
            b.next(&look(1, true), 1_000, TICK),
            Next::Wait(Duration::from_millis(250))
        );
        assert_eq!(
            b.next(&look(1, true), 1_200, TICK),
            Next::Wait(Duration::from_millis(100))
        );
        assert_eq!(b.next(&look(1, true), 1_300, TICK), Next::HandOver);
        // A new batch forms afresh; the other task's end joins it, and then nothing can.
        assert_eq!(
            b.next(&look(1, true), 2_000, TICK),
            Next::Wait(Duration::from_millis(250))
        );
        assert_eq!(b.next(&look(0, true), 2_100, TICK), Next::HandOver);
        assert_eq!(b.next(&look(0, true), 3_000, TICK), Next::HandOver);
        let stop = Look {
            signalled: true,
            ..look(0, true)
        };
        assert_eq!(b.next(&stop, 2_100, TICK), Next::Leave);
    }

    /// The waiter leaves a batch to a live monitor for its grace, announces it after SETTLE with
    /// none (at once when nothing is live), leaves with nothing to do, and when stopped wakes Claude with what still runs.
    #[test]
    fn the_waiter_defers_to_a_live_monitor() {
        let rule = Rule::Rewake {
            grace: Duration::from_secs(4),
            max_wait: Duration::from_secs(60),
        };
        let mut b = Batch::new(rule, 0);
        let watched = Look {
            monitor: true,
            ..look(0, true)
        };
        assert_eq!(b.next(&watched, 100, TICK), Next::Wait(TICK));
        assert_eq!(
            b.next(&watched, 4_099, TICK),
            Next::Wait(Duration::from_millis(1))
        );
        assert_eq!(b.next(&watched, 4_100, TICK), Next::HandOver);
        let mut b = Batch::new(rule, 0);
        assert_eq!(
            b.next(&look(1, true), 100, TICK),
            Next::Wait(Duration::from_millis(250))
        );
        assert_eq!(b.next(&look(1, true), 400, TICK), Next::HandOver);
        assert_eq!(b.next(&look(0, true), 450, TICK), Next::HandOver);
        assert_eq!(b.next(&look(0, false), 500, TICK), Next::Leave);
        assert_eq!(b.next(&look(2, false), 500, TICK), Next::Wait(TICK));
        assert_eq!(b.next(&look(2, false), 60_000, TICK), Next::GiveUp);
        let stop = Look {
            signalled: true,
            ..look(2, true)
        };
        assert_eq!(Batch::new(rule, 0).next(&stop, 1, TICK), Next::HandOver);
    }

    /// The Stop hook waits for the batch to go quiet (or its cap), hands it over at once with
    /// nothing live, leaves when it waits for nothing, and gives up after its wait.
    #[test]
    fn the_stop_hook_waits_for_quiet_or_the_cap() {
        let rule = Rule::Headless {
            max_wait: Duration::from_secs(60),
        };
        let mut b = Batch::new(rule, 0);
        assert_eq!(b.next(&look(3, false), 0, TICK), Next::Wait(TICK));
        // One ended (live 3 → 2): quiet after HEADLESS_SETTLE.
        assert_eq!(b.next(&look(2, true), 1_000, TICK), Next::Wait(TICK));
        // Another ends meanwhile: quiet from then on.
        assert_eq!(b.next(&look(1, true), 1_900, TICK), Next::Wait(TICK));
        assert_eq!(
            b.next(&look(1, true), 2_800, TICK),
            Next::Wait(Duration::from_millis(100))
        );
        assert_eq!(b.next(&look(1, true), 2_900, TICK), Next::HandOver);
        assert_eq!(b.next(&look(0, true), 3_000, TICK), Next::HandOver);
        let given_up = Look {
            waited_for: 0,
            ..look(1, false)
        };
        assert_eq!(b.next(&given_up, 3_100, TICK), Next::Leave);
        assert_eq!(b.next(&look(1, false), 60_000, TICK), Next::GiveUp);
        let stop = Look {
            signalled: true,
            ..look(1, true)
        };
        assert_eq!(b.next(&stop, 60_001, TICK), Next::Leave);
    }
}
