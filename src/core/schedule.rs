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
            state,
            text,
            question,
            context_id,
            failed_polls: 0,
            last_error: (state == TaskState::Unknown).then(|| unknown_state_note(&wire_state)),
            end: (!state.is_live()).then_some(EndReason::State),
            next_poll_ms: state.is_live().then_some(next),
        },
        PollOutcome::NotFound => PollUpdate {
            state: TaskState::Unknown,
            text: None,
            question: None,
            context_id: None,
            failed_polls: 0,
            last_error: Some("the worker no longer knows this task (it may have restarted)".into()),
            end: Some(EndReason::Gone),
            next_poll_ms: None,
        },
        PollOutcome::Deferred { error, after } => PollUpdate {
            state: state_before,
            text: None,
            question: None,
            context_id: None,
            // The worker answered: contact is not lost, however long it asks us to wait.
            failed_polls: 0,
            last_error: Some(error),
            end: None,
            next_poll_ms: Some(
                poll_started_ms
                    .saturating_add(interval.max(after.min(MAX_RETRY_AFTER)).as_millis() as i64),
            ),
        },
        PollOutcome::Failed { error } => {
            let failed = failed_polls.saturating_add(1);
            let lost = failed >= max_failed;
            PollUpdate {
                state: state_before,
                text: None,
                question: None,
                context_id: None,
                failed_polls: failed,
                last_error: Some(error),
                end: lost.then_some(EndReason::Lost),
                next_poll_ms: (!lost).then_some(next),
            }
        }
    }
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

    /// Issue 9: a task the worker forgot is "gone", not "an unknown state".
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

    /// Issue 9: a 429/503 with Retry-After is not a failed check, and waits as long as asked
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
}
