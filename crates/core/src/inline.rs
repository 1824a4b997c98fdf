//! The inline window of `send` (docs/how-it-works.md "The inline window") as one pure state
//! machine: GetTask 0.5, 1, 2 and 4 s apart (at 0.5, 1.5, 3.5 and 7.5 s after the send goes out),
//! no poll the call's budget cannot wait for, every poll cut at the window's end, failures that do
//! not count toward lost contact, and the hand-over to the background poller in its own rhythm.
//! `Session::send` (`crates/app/src/session/`) does the IO: it asks [`Window::next`] what to do, sleeps,
//! polls, and feeds each outcome to [`Window::after`]. Pure: the clock is always a parameter.

use super::schedule::{self, MAX_RETRY_AFTER, PollOutcome};
use super::task::{PollUpdate, TaskState};
use std::time::Duration;

/// Time kept back to hand a result over before the host's timeout fires.
pub const BUDGET_RESERVE: Duration = Duration::from_millis(1000);
/// Slack after the window's last poll: a GetTask in flight may still answer within it.
pub const WINDOW_SLACK: Duration = Duration::from_millis(1000);

/// One send's window, from the moment the send went out.
#[derive(Debug, Clone)]
pub struct Window {
    /// Poll times, since the send went out.
    offsets: Vec<Duration>,
    next: usize,
    /// The tool call's whole budget, and how much of it was gone when the send went out.
    budget: Duration,
    budget_used_at_send: Duration,
    interval: Duration,
    sent_ms: i64,
    last_started_ms: Option<i64>,
    /// The worker's stream told a state since the last poll slot: the next slot's poll is not
    /// needed (polls run only when the stream has told nothing newer).
    streamed: bool,
}

/// What the window does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Wait until `at` after the send, then GetTask, the request cut `cut` after the send.
    Poll { at: Duration, cut: Duration },
    /// The window is over: the poller owns the task, its first poll at `next_poll_ms`.
    HandOver { next_poll_ms: i64 },
}

/// What one inline poll means for the task.
#[derive(Debug, Clone, PartialEq)]
pub enum After {
    /// It ended: Claude gets it in the tool result (apply the update as told).
    Ended(PollUpdate),
    /// Still live: apply the update and ask [`Window::next`] again.
    Live(PollUpdate),
    /// The worker asked us to come back later (`Retry-After`): apply the update, then the window
    /// ends and the poller's first poll waits until `next_poll_ms`, the task held meanwhile as
    /// the update says (`schedule::deferral_hold`).
    Deferred {
        update: PollUpdate,
        next_poll_ms: i64,
    },
}

impl After {
    /// The store update to apply, and whether Claude is told it now (the tool result carries an
    /// ending; a live or deferred task is still the poller's to announce). Mutable: a long
    /// result is cut to what a row keeps before it is stored.
    pub fn update(&mut self) -> (&mut PollUpdate, bool) {
        match self {
            After::Ended(u) => (u, true),
            After::Live(u) | After::Deferred { update: u, .. } => (u, false),
        }
    }
}

impl Window {
    /// `gaps`: `[timing] inline_polls_s`; `budget_used_at_send`: how much of the call's budget had
    /// gone when the send went out (the agent card and the send itself).
    pub fn new(
        gaps: &[Duration],
        interval: Duration,
        budget: Duration,
        budget_used_at_send: Duration,
        sent_ms: i64,
    ) -> Window {
        Window {
            offsets: schedule::inline_offsets(gaps),
            next: 0,
            budget,
            budget_used_at_send,
            interval,
            sent_ms,
            last_started_ms: None,
            streamed: false,
        }
    }

    fn end(&self) -> Duration {
        self.offsets.last().copied().unwrap_or_default()
    }

    /// When the poller may first poll the task should the window stop early (the call was
    /// cancelled, the process killed): one interval after the window and its last poll's slack,
    /// so the two never poll the task at once. What the task is recorded with before the window.
    pub fn first_background_poll_ms(&self) -> i64 {
        self.hold_ms() + self.interval.as_millis() as i64
    }

    /// Until when the window holds its task from the poller (`lifecycle::Life::held_until_ms`):
    /// its end and its last poll's slack. What the task is recorded with before the window; the
    /// hand-over lets it go sooner.
    pub fn hold_ms(&self) -> i64 {
        self.sent_ms + (self.end() + WINDOW_SLACK).as_millis() as i64
    }

    /// The next step, `since_send` after the send went out, at `now_ms`. A poll whose time the
    /// budget cannot wait for (with the reserve left to answer) ends the window.
    pub fn next(&mut self, since_send: Duration, now_ms: i64) -> Step {
        if let Some(&at) = self.offsets.get(self.next) {
            let used_then = self.budget_used_at_send + at.max(since_send);
            if schedule::inline_poll_fits(used_then, self.budget, BUDGET_RESERVE) {
                self.next += 1;
                return Step::Poll {
                    at,
                    cut: self.end() + WINDOW_SLACK,
                };
            }
            self.next = self.offsets.len();
        }
        Step::HandOver {
            next_poll_ms: self.hand_over_ms(now_ms),
        }
    }

    /// The poller's first poll after the window: one interval after the window's last poll
    /// began, the rhythm the poller keeps itself (`schedule::after_poll`), never in the past.
    pub fn hand_over_ms(&self, now_ms: i64) -> i64 {
        let interval = self.interval.as_millis() as i64;
        self.last_started_ms
            .map_or(now_ms + interval, |t| (t + interval).max(now_ms))
    }

    /// At a poll slot: whether to poll. Not when the stream told a state since the last slot (it
    /// is working); always when it told nothing, so a stalled or dropped stream changes nothing.
    pub fn due(&mut self) -> bool {
        !std::mem::take(&mut self.streamed)
    }

    /// Folds one event of the worker's stream (the task as it now stands) into the task, as a
    /// poll that cannot fail. It does not move the poll rhythm the poller takes over.
    pub fn streamed(&mut self, before: TaskState, outcome: PollOutcome, at_ms: i64) -> After {
        self.streamed = true;
        let last = self.last_started_ms;
        let after = self.after(before, outcome, at_ms);
        self.last_started_ms = last;
        after
    }

    /// Folds one inline poll, begun at `started_ms`, into the task. Failed inline polls do not
    /// count toward lost contact: a silent worker cuts the window short at an arbitrary point, so
    /// the count would be arbitrary; the poller starts from zero and drops the task after exactly
    /// `max_failed_polls` of its own.
    pub fn after(&mut self, before: TaskState, outcome: PollOutcome, started_ms: i64) -> After {
        self.last_started_ms = Some(started_ms);
        let deferred = match &outcome {
            PollOutcome::Deferred { after, .. } => {
                Some(started_ms + (*after).min(MAX_RETRY_AFTER).as_millis() as i64)
            }
            _ => None,
        };
        let mut update =
            schedule::after_poll(0, before, outcome, started_ms, self.interval, u32::MAX);
        update.failed_polls = 0;
        if update.end.is_some() {
            return After::Ended(update);
        }
        // The background poller takes over only after the window.
        let first = self.first_background_poll_ms();
        update.next_poll_ms = Some(first);
        match deferred {
            Some(at) => {
                let next_poll_ms = at.max(first);
                update.held_until_ms =
                    schedule::deferral_hold(next_poll_ms, started_ms, self.interval);
                After::Deferred {
                    update,
                    next_poll_ms,
                }
            }
            None => After::Live(update),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn seed(budget: Duration) -> Window {
        let gaps = [500, 1000, 2000, 4000].map(MS);
        Window::new(&gaps, Duration::from_secs(5), budget, MS(200), 10_000)
    }

    fn polls(w: &mut Window) -> Vec<u64> {
        let mut at = Vec::new();
        while let Step::Poll { at: a, cut } = w.next(Duration::ZERO, 0) {
            assert_eq!(cut, MS(8500));
            at.push(a.as_millis() as u64);
        }
        at
    }

    #[test]
    fn the_seed_window() {
        let mut w = seed(Duration::from_secs(60));
        assert_eq!(polls(&mut w), [500, 1500, 3500, 7500]);
        assert_eq!(w.first_background_poll_ms(), 10_000 + 7500 + 1000 + 5000);
        assert_eq!(w.hold_ms(), 10_000 + 7500 + 1000);
    }

    #[test]
    fn the_budget_cuts_it() {
        // 5 s budget, 0.2 s gone at the send, 1 s reserve: polls up to 3.8 s after the send.
        let mut w = seed(Duration::from_secs(5));
        assert_eq!(polls(&mut w), [500, 1500, 3500]);
        // Later than planned (a slow answer): the budget counts from now.
        let mut w = seed(Duration::from_secs(5));
        assert!(matches!(w.next(MS(3700), 0), Step::Poll { .. }));
        assert!(matches!(w.next(MS(3900), 0), Step::HandOver { .. }));
    }

    #[test]
    fn failures_do_not_count_and_hand_over_keeps_the_rhythm() {
        let mut w = seed(Duration::from_secs(60));
        let fail = PollOutcome::Failed {
            error: "timeout".into(),
        };
        let After::Live(u) = w.after(TaskState::Working, fail, 10_500) else {
            panic!("a failure keeps the task live");
        };
        assert_eq!((u.failed_polls, u.next_poll_ms), (0, Some(23_500)));
        assert_eq!(w.hand_over_ms(11_000), 15_500);
        assert_eq!(w.hand_over_ms(20_000), 20_000);
    }

    #[test]
    fn a_stream_event_stands_in_for_the_next_poll_only() {
        let mut w = seed(Duration::from_secs(60));
        assert!(w.due(), "no stream: every slot polls");
        let seen = |state| PollOutcome::Seen {
            state,
            wire_state: String::new(),
            text: Some("done".into()),
            question: None,
            context_id: None,
        };
        let After::Live(u) = w.streamed(TaskState::Submitted, seen(TaskState::Working), 10_100)
        else {
            panic!("working is live");
        };
        assert_eq!(u.next_poll_ms, Some(w.first_background_poll_ms()));
        assert!(!w.due(), "the stream told something: skip this slot");
        assert!(w.due(), "and nothing since: poll the next");
        // A streamed event does not move the hand-over rhythm.
        assert_eq!(w.hand_over_ms(11_000), 16_000);
        let After::Ended(u) = w.streamed(TaskState::Working, seen(TaskState::Completed), 10_200)
        else {
            panic!("completed ends it");
        };
        assert_eq!(u.text.as_deref(), Some("done"));
    }

    #[test]
    fn a_deferral_ends_the_window() {
        let mut w = seed(Duration::from_secs(60));
        let defer = PollOutcome::Deferred {
            error: "overloaded".into(),
            after: Duration::from_secs(30),
        };
        assert_eq!(
            w.after(TaskState::Working, defer, 10_500),
            After::Deferred {
                update: PollUpdate {
                    state: TaskState::Working,
                    text: None,
                    text_chars: None,
                    question: None,
                    context_id: None,
                    failed_polls: 0,
                    last_error: Some("overloaded".into()),
                    end: None,
                    next_poll_ms: Some(23_500),
                    held_until_ms: Some(35_500),
                },
                next_poll_ms: 40_500,
            }
        );
    }
}
