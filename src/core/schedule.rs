//! When to poll, and what a poll's outcome does to a task (how-it-works.md "The inline window",
//! "Background polling", "Lost contact"). Pure: callers pass the clock in and apply the result.

use super::task::{EndReason, PollUpdate, TaskState};
use std::time::Duration;

/// What one GetTask told, reduced to what the schedule cares about.
#[derive(Debug, Clone, PartialEq)]
pub enum PollOutcome {
    Seen {
        state: TaskState,
        text: Option<String>,
        question: Option<String>,
        context_id: Option<String>,
    },
    /// The worker says it does not know the task (JSON-RPC -32001 / HTTP 404): nothing more will
    /// come of polling it.
    NotFound,
    /// No usable answer: timeout, unreachable, 5xx, garbage, 401/403. Counts toward lost contact.
    Failed { error: String },
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
            text,
            question,
            context_id,
        } => PollUpdate {
            state,
            text,
            question,
            context_id,
            failed_polls: 0,
            last_error: None,
            end: (!state.is_live()).then_some(EndReason::State),
            next_poll_ms: state.is_live().then_some(next),
        },
        PollOutcome::NotFound => PollUpdate {
            state: TaskState::Unknown,
            text: None,
            question: None,
            context_id: None,
            failed_polls: 0,
            last_error: Some("the worker no longer knows this task".into()),
            end: Some(EndReason::State),
            next_poll_ms: None,
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
        let seen = |state| PollOutcome::Seen {
            state,
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

    #[test]
    fn not_found_ends_as_unknown() {
        let u = after_poll(0, TaskState::Working, PollOutcome::NotFound, 0, S, 6);
        assert_eq!(
            (u.state, u.end),
            (TaskState::Unknown, Some(EndReason::State))
        );
    }
}
