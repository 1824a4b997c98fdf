//! When to poll, and what a poll's outcome does to a task (docs/how-it-works.md "The inline window",
//! "Background polling", "Lost contact"). Pure: callers pass the clock in and apply the result.

use super::task::{EndReason, PollUpdate, TaskState};
use std::time::Duration;

/// What one GetTask told, reduced to what the schedule cares about.
#[derive(Debug, Clone, PartialEq)]
pub enum PollOutcome {
    Seen {
        state: TaskState,
        /// The state as the worker spelled it, named when it is not one a2a-mod knows.
        wire_state: String,
        text: Option<String>,
        question: Option<String>,
        context_id: Option<String>,
    },
    /// The worker says it does not know the task (JSON-RPC -32001 / HTTP 404): nothing more will
    /// come of polling it.
    NotFound,
    /// The worker answered HTTP 429/503 with `Retry-After`: it is there and said when to come
    /// back, so this is not a failed check; the next poll waits that long (capped).
    Deferred { error: String, after: Duration },
    /// No usable answer: timeout, unreachable, 5xx, garbage, 401/403. Counts toward lost contact.
    Failed { error: String },
}

/// The longest a worker's `Retry-After` puts a poll off: a worker cannot park a task for hours.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(5 * 60);

/// What a poll's `last_error` says of a state outside A2A's list: the worker's own word, cleaned.
pub fn unknown_state_note(wire_state: &str) -> String {
    let word = super::text::one_line(wire_state, 40);
    if word.is_empty() {
        "the worker sent no state".to_string()
    } else {
        format!("the worker sent the state \"{}\"", word.replace('"', "'"))
    }
}

/// Folds one poll into the task: the seed's rules, in one place for the inline window and the
/// background poller alike.
/// - submitted/working: stays live, failures reset, next poll one interval after this one began
///   (so slow answers do not stretch the 5 s cadence);
/// - any other state, `unknown` included: tracking ends;
/// - a failure: counted; `max_failed` in a row ends tracking as lost contact.
pub fn after_poll(
    failed_polls: u32,
    state_before: TaskState,
    outcome: PollOutcome,
    poll_started_ms: i64,
    interval: Duration,
    max_failed: u32,
) -> PollUpdate {
    let next = poll_started_ms.saturating_add(interval.as_millis() as i64);
    match outcome {
        PollOutcome::Seen {
            state,
            wire_state,
            text,
            question,
            context_id,
        } => PollUpdate {
            next_poll_ms: state.is_live().then_some(next),
            ..told(state, &wire_state, text, question, context_id)
        },
        PollOutcome::NotFound => PollUpdate {
            state: TaskState::Unknown,
            text: None,
            text_chars: None,
            question: None,
            context_id: None,
            failed_polls: 0,
            last_error: Some("the worker no longer knows this task (it may have restarted)".into()),
            end: Some(EndReason::Gone),
            next_poll_ms: None,
            held_until_ms: None,
        },
        PollOutcome::Deferred { error, after } => {
            let wait = interval.max(after.min(MAX_RETRY_AFTER));
            let deferred = poll_started_ms.saturating_add(wait.as_millis() as i64);
            PollUpdate {
                state: state_before,
                text: None,
                text_chars: None,
                question: None,
                context_id: None,
                // The worker answered: contact is not lost, however long it asks us to wait.
                failed_polls: 0,
                last_error: Some(error),
                end: None,
                next_poll_ms: Some(deferred),
                held_until_ms: deferral_hold(deferred, poll_started_ms, interval),
            }
        }
        PollOutcome::Failed { error } => {
            let failed = failed_polls.saturating_add(1);
            let lost = failed >= max_failed;
            PollUpdate {
                state: state_before,
                text: None,
                text_chars: None,
                question: None,
                context_id: None,
                failed_polls: failed,
                last_error: Some(error),
                end: lost.then_some(EndReason::Lost),
                next_poll_ms: (!lost).then_some(next),
                held_until_ms: None,
            }
        }
    }
}

/// What one event of the poller's subscription to a task does: the task as the worker
/// now tells it, folded like a GetTask answer. Only a told state counts (`None` for anything else:
/// a stream's failures are not polls and never end a task). For a task that stays live, the
/// update's `failed_polls` and `next_poll_ms` mean nothing: `lifecycle::Event::Streamed` keeps the 5 s
/// poll rhythm and the failed-check count as the polls left them, so a stream that is healthy
/// neither counts as a check nor hides the failures of the polls beside it.
pub fn after_event(outcome: PollOutcome) -> Option<PollUpdate> {
    match outcome {
        PollOutcome::Seen {
            state,
            wire_state,
            text,
            question,
            context_id,
        } => Some(told(state, &wire_state, text, question, context_id)),
        _ => None,
    }
}

/// What a told state does to the task, a GetTask's or a stream's: the worker's words, and the
/// end of tracking for any state but submitted/working. No next poll: that is the poll rhythm's
/// (`after_poll`), which a stream never moves.
fn told(
    state: TaskState,
    wire_state: &str,
    text: Option<String>,
    question: Option<String>,
    context_id: Option<String>,
) -> PollUpdate {
    PollUpdate {
        state,
        text,
        text_chars: None,
        question,
        context_id,
        failed_polls: 0,
        last_error: (state == TaskState::Unknown).then(|| unknown_state_note(wire_state)),
        end: (!state.is_live()).then_some(EndReason::State),
        next_poll_ms: None,
        held_until_ms: None,
    }
}

/// How long a stream lease runs (a process that goes on reading a task's stream after its
/// window, `Store::set_stream_lease`); renewed three times as often, so a crashed holder frees
/// the task for the poller's own subscription within this long.
pub const STREAM_LEASE: Duration = Duration::from_secs(3);

/// How long a stream's changes gather before the next one is told (the inline window's and the
/// poller's streams alike): a token stream of a thousand chunks a second, or a flood of status
/// updates, is told ten times a second, each time as the task then stands; the first change
/// after a quiet spell and an ending are told at once.
pub const STREAM_GATHER: Duration = Duration::from_millis(100);

/// A stream floods when it sends more than this many events in a row that change nothing (the
/// same status again, keep-alives) within [`FLOOD_WINDOW`]: a worker can send millions a second,
/// and reading them cost the reader a whole core. Such a stream is dropped and polls carry its
/// task to its end. An honest stream's repeats come between changes (a status with each token),
/// and every change starts the count afresh.
pub const FLOOD_NOOPS: u32 = 1_000;
/// The time [`FLOOD_NOOPS`] are counted in.
pub const FLOOD_WINDOW: Duration = Duration::from_secs(1);

/// The first wait before a dropped subscription is opened again; doubled on each drop in a row.
pub const RESUBSCRIBE_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two subscriptions to one task: polling covers the gap meanwhile.
pub const RESUBSCRIBE_MAX: Duration = Duration::from_secs(60);
/// A subscription that stayed open this long was healthy: its drop starts the backoff afresh.
pub const STREAM_HEALTHY: Duration = Duration::from_secs(60);

/// How long to wait before subscribing to a task again after its stream dropped, and the count of
/// drops in a row to remember: 1, 2, 4 … s up to a minute, from the start again after a stream
/// that lasted [`STREAM_HEALTHY`]. A worker that drops every stream at once is so asked at most
/// once a minute per task, and a proxy that cuts long streams now and then costs a second.
pub fn resubscribe_after(drops_before: u32, lived: Duration) -> (Duration, u32) {
    let drops = if lived >= STREAM_HEALTHY {
        1
    } else {
        drops_before.saturating_add(1)
    };
    let wait = RESUBSCRIBE_FIRST
        .saturating_mul(1u32 << (drops - 1).min(16))
        .min(RESUBSCRIBE_MAX);
    (wait, drops)
}

/// Whether another stream to a worker fits under `[streaming] max_streams_per_worker`; a task that
/// finds no room is polled, and gets a stream when its next poll falls due with one free.
pub fn stream_fits(open_to_worker: usize, cap: usize) -> bool {
    open_to_worker < cap
}

/// The hold a deferred poll puts on its task (`lifecycle::Life::held_until_ms`): a worker that
/// asked for a pause is asked nothing, not even for a stream, until one interval before the
/// deferred poll; `None` when that is not after `now_ms` (a pause no longer than the rhythm).
pub fn deferral_hold(deferred_poll_ms: i64, now_ms: i64, interval: Duration) -> Option<i64> {
    let until = deferred_poll_ms.saturating_sub(interval.as_millis() as i64);
    (until > now_ms).then_some(until)
}

/// The inline window's GetTask times, as offsets from the send: the gaps of `[timing]
/// inline_polls_s` added up (0.5, 1.5, 3.5, 7.5 s for the seed's 0.5, 1, 2, 4).
pub fn inline_offsets(gaps: &[Duration]) -> Vec<Duration> {
    gaps.iter()
        .scan(Duration::ZERO, |acc, g| {
            *acc += *g;
            Some(*acc)
        })
        .collect()
}

/// Whether the inline poll planned at `offset` still fits in the call's budget. A poll is only
/// worth making if, after it, `reserve` is left to hand the result back before the host gives up
/// on the call (Claude Code fails a tool call at its MCP timeout, whatever we were doing).
pub fn inline_poll_fits(offset: Duration, budget: Duration, reserve: Duration) -> bool {
    offset + reserve <= budget
}

/// How long one request may take: until the call's budget (less the reserve) or the per-request
/// timeout, whichever comes first; zero means do not send.
pub fn request_window(
    elapsed: Duration,
    budget: Duration,
    reserve: Duration,
    per_request: Duration,
) -> Duration {
    budget
        .saturating_sub(reserve)
        .saturating_sub(elapsed)
        .min(per_request)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(5);

    /// The window's record holds the task until its end and slack; the hand-over and a poll of
    /// the poller's own hold nothing; a Retry-After holds until one interval before the deferred
    /// poll, and a pause no longer than the rhythm holds nothing.
    #[test]
    fn a_task_is_held_by_its_window_and_by_a_deferral() {
        let window = crate::inline::Window::new(
            &[
                Duration::from_millis(500),
                Duration::from_secs(1),
                Duration::from_secs(2),
                Duration::from_secs(4),
            ],
            S,
            Duration::from_secs(60),
            Duration::ZERO,
            10_000,
        );
        let held = |now| window.hold_ms() > now;
        assert!(held(10_000));
        assert!(held(18_499));
        assert!(!held(18_500), "window end + slack");
        assert_eq!(window.first_background_poll_ms(), 18_500 + 5_000);
        let seen = PollOutcome::Seen {
            state: TaskState::Working,
            wire_state: "working".into(),
            text: None,
            question: None,
            context_id: None,
        };
        // The poller's own poll: no hold.
        assert_eq!(
            after_poll(0, TaskState::Working, seen, 30_000, S, 6).held_until_ms,
            None
        );
        // Retry-After 60 s at 30 s: held until 85 s.
        let deferred = |after| PollOutcome::Deferred {
            error: "busy".into(),
            after,
        };
        let u = after_poll(
            0,
            TaskState::Working,
            deferred(Duration::from_secs(60)),
            30_000,
            S,
            6,
        );
        assert_eq!(
            (u.next_poll_ms, u.held_until_ms),
            (Some(90_000), Some(85_000))
        );
        let u = after_poll(
            0,
            TaskState::Working,
            deferred(Duration::from_secs(2)),
            30_000,
            S,
            6,
        );
        assert_eq!((u.next_poll_ms, u.held_until_ms), (Some(35_000), None));
    }

    #[test]
    fn seed_offsets() {
        let gaps = [500, 1_000, 2_000, 4_000].map(Duration::from_millis);
        let off: Vec<f64> = inline_offsets(&gaps)
            .iter()
            .map(|d| d.as_secs_f64())
            .collect();
        assert_eq!(off, [0.5, 1.5, 3.5, 7.5]);
    }

    #[test]
    fn budget_cuts_the_window() {
        let r = Duration::from_secs(1);
        assert!(inline_poll_fits(
            Duration::from_millis(3500),
            Duration::from_secs(5),
            r
        ));
        assert!(!inline_poll_fits(
            Duration::from_millis(7500),
            Duration::from_secs(5),
            r
        ));
        assert_eq!(
            request_window(
                Duration::from_secs(3),
                Duration::from_secs(5),
                r,
                Duration::from_secs(15)
            ),
            Duration::from_secs(1)
        );
        assert_eq!(
            request_window(
                Duration::from_secs(6),
                Duration::from_secs(5),
                r,
                Duration::from_secs(15)
            ),
            Duration::ZERO
        );
    }

    #[test]
    fn live_states_keep_polling_on_cadence() {
        let seen = |state: TaskState| PollOutcome::Seen {
            state,
            wire_state: state.as_str().to_string(),
            text: None,
            question: None,
            context_id: None,
        };
        let u = after_poll(3, TaskState::Working, seen(TaskState::Working), 1000, S, 6);
        assert_eq!(
            (u.end, u.next_poll_ms, u.failed_polls),
            (None, Some(6000), 0)
        );
        for s in TaskState::ALL.into_iter().filter(|s| !s.is_live()) {
            let u = after_poll(0, TaskState::Working, seen(s), 1000, S, 6);
            assert_eq!(
                (u.end, u.next_poll_ms),
                (Some(EndReason::State), None),
                "{s}"
            );
        }
    }

    #[test]
    fn six_failures_in_a_row_lose_contact() {
        let fail = || PollOutcome::Failed {
            error: "timeout".into(),
        };
        let mut n = 0;
        for i in 1..=5 {
            let u = after_poll(n, TaskState::Working, fail(), 0, S, 6);
            assert_eq!((u.failed_polls, u.end), (i, None));
            n = u.failed_polls;
        }
        let u = after_poll(n, TaskState::Working, fail(), 0, S, 6);
        assert_eq!(
            (u.failed_polls, u.end, u.state),
            (6, Some(EndReason::Lost), TaskState::Working)
        );
    }

    /// A task the worker forgot is "gone", not "an unknown state".
    #[test]
    fn not_found_ends_as_gone() {
        let u = after_poll(0, TaskState::Working, PollOutcome::NotFound, 0, S, 6);
        assert_eq!(
            (u.state, u.end),
            (TaskState::Unknown, Some(EndReason::Gone))
        );
        assert!(u.last_error.unwrap().contains("may have restarted"));
    }

    #[test]
    fn unknown_state_is_named() {
        let seen = PollOutcome::Seen {
            state: TaskState::Unknown,
            wire_state: "paused\u{1b}[2J".into(),
            text: None,
            question: None,
            context_id: None,
        };
        let u = after_poll(0, TaskState::Working, seen, 0, S, 6);
        assert_eq!(
            u.last_error.as_deref(),
            Some("the worker sent the state \"paused\"")
        );
    }

    /// A 429/503 with Retry-After is not a failed check, and waits as long as asked
    /// (never less than the cadence, never more than five minutes).
    #[test]
    fn retry_after_postpones_without_counting() {
        let defer = |secs| PollOutcome::Deferred {
            error: "overloaded".into(),
            after: Duration::from_secs(secs),
        };
        let u = after_poll(4, TaskState::Working, defer(30), 1000, S, 6);
        assert_eq!(
            (u.failed_polls, u.end, u.next_poll_ms),
            (0, None, Some(31_000))
        );
        assert_eq!(u.state, TaskState::Working);
        let u = after_poll(0, TaskState::Working, defer(1), 1000, S, 6);
        assert_eq!(u.next_poll_ms, Some(6000));
        let u = after_poll(0, TaskState::Working, defer(86_400), 0, S, 6);
        assert_eq!(u.next_poll_ms, Some(300_000));
    }
    /// A streamed state folds like a poll's, and only a state counts; the rhythm and the
    /// count are the store's to keep (what `lifecycle::Event::Streamed` relies on).
    #[test]
    fn an_event_ends_or_updates_like_a_poll() {
        let seen = |state: TaskState| PollOutcome::Seen {
            state,
            wire_state: state.as_str().to_string(),
            text: Some("t".into()),
            question: None,
            context_id: None,
        };
        let u = after_event(seen(TaskState::Working)).unwrap();
        assert_eq!(
            (u.state, u.end, u.text.as_deref()),
            (TaskState::Working, None, Some("t"))
        );
        for s in TaskState::ALL.into_iter().filter(|s| !s.is_live()) {
            let u = after_event(seen(s)).unwrap();
            assert_eq!(
                (u.end, u.next_poll_ms),
                (Some(EndReason::State), None),
                "{s}"
            );
        }
        assert_eq!(after_event(PollOutcome::NotFound), None);
        assert_eq!(after_event(PollOutcome::Failed { error: "x".into() }), None);
    }

    #[test]
    fn resubscription_backs_off_and_starts_again_after_a_healthy_stream() {
        let short = Duration::from_millis(10);
        let mut drops = 0;
        let mut waits = Vec::new();
        for _ in 0..9 {
            let (w, d) = resubscribe_after(drops, short);
            waits.push(w.as_secs());
            drops = d;
        }
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(
            resubscribe_after(drops, STREAM_HEALTHY),
            (RESUBSCRIBE_FIRST, 1)
        );
        assert_eq!(resubscribe_after(u32::MAX, short).0, RESUBSCRIBE_MAX);
    }

    #[test]
    fn streams_beyond_the_cap_are_polled() {
        assert!(stream_fits(0, 1));
        assert!(!stream_fits(1, 1));
        assert!(!stream_fits(0, 0), "0 turns background streams off");
    }
}
