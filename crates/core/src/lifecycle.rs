//! A task's life as one state machine: every change to a tracked task is an [`Event`] folded into
//! its [`Life`] by [`apply`], and the store persists what comes out in one statement
//! (`a2a_mod_store`, `Store::transition`). The rules of docs/how-it-works.md ("The inline window",
//! "Background polling", "Lost contact", "Waking Claude") that decide *what happens* to a task are
//! here; *when* to poll is [`super::schedule`]. Pure: the clock is a parameter.

use super::task::{EndReason, PollUpdate, Seen, TaskState};

/// Which task: the worker's alias and the worker's own id for it (unique per worker).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    pub worker: String,
    pub task_id: String,
}

impl TaskKey {
    pub fn new(worker: &str, task_id: &str) -> TaskKey {
        TaskKey {
            worker: worker.to_string(),
            task_id: task_id.to_string(),
        }
    }
}

impl std::fmt::Display for TaskKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} task {}", self.worker, self.task_id)
    }
}

/// What a task's life changes: its row but for its identity and its message (the store's row is
/// this plus those, `a2a_mod_store::TaskRecord`). Serialized as `tasks --json` lists it, without
/// the poller's own business (the hold and the stream lease).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Life {
    /// When it was sent. Moves only with the clock it was read on ([`Event::ClockSet`]).
    pub started_ms: i64,
    pub state: TaskState,
    pub context_id: Option<String>,
    pub result: Option<String>,
    /// Set when `result` holds only the head of a longer text (a row keeps at most
    /// [`crate::bounds::STORED_TEXT_CHARS`] of it, [`crate::bounds::row_keeps`]): how many
    /// characters the whole has. The whole was saved as a file before the event that carried it
    /// was recorded; `None` for a text held whole.
    pub result_chars: Option<u64>,
    pub question: Option<String>,
    pub updated_ms: i64,
    /// Set when tracking ends; the task is *live* (the poller owns it) until then.
    pub ended_ms: Option<i64>,
    pub end_reason: Option<EndReason>,
    /// When the poller polls it next (`None` on a live task: now).
    pub next_poll_ms: Option<i64>,
    /// Until then the poller leaves the task alone: it opens no stream to it and drops what its
    /// streams tell of it. An inline window holds its task (it tells Claude what it sees, once);
    /// a worker that asked for a pause (`Retry-After`) is held until one interval before the
    /// deferred poll.
    #[serde(skip)]
    pub held_until_ms: Option<i64>,
    /// Until then another process reads the task's stream: the poller polls it but opens no
    /// stream of its own.
    #[serde(skip)]
    pub stream_lease_ms: Option<i64>,
    pub failed_polls: u32,
    pub last_error: Option<String>,
    /// The monitor's wake-up has named it (or Claude got it in a tool result).
    pub announced_ms: Option<i64>,
    /// Its outcome has reached Claude (hidden context, the Stop hook, a tool result).
    pub delivered_ms: Option<i64>,
    /// Claude Code follows it as its own MCP task, made at this time (part of that task's id):
    /// Claude Code's polls of it tell Claude of its end, so its end counts as announced at once
    /// and no waiter announces it again.
    pub native_ms: Option<i64>,
}

/// A task as a send left it.
#[derive(Debug, Clone)]
pub struct NewTask<'a> {
    pub worker: &'a str,
    pub task_id: &'a str,
    pub context_id: Option<&'a str>,
    pub message: &'a str,
    pub state: TaskState,
    pub result: Option<&'a str>,
    /// As [`crate::task::PollUpdate::text_chars`].
    pub result_chars: Option<u64>,
    pub question: Option<&'a str>,
    /// When the background poller may first poll it (live tasks).
    pub next_poll_ms: Option<i64>,
    /// Until when the send's inline window holds it ([`Life::held_until_ms`]).
    pub held_until_ms: Option<i64>,
    /// Claude already has the outcome (it came back in the tool result).
    pub told: bool,
    /// The MCP task Claude Code follows this send under, made then ([`Life::native_ms`]): a
    /// person's answer in that task's form goes on under the same task, so an end this send
    /// already brings is Claude Code's to announce, at its next poll.
    pub native_ms: Option<i64>,
}

/// Everything that happens to a task.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A send left it so: a new task, or a waiting one answered (a follow-up with its id), which
    /// is then live, unannounced and undelivered again.
    Sent(&'a NewTask<'a>),
    /// A GetTask's outcome (`super::schedule::after_poll`, the inline window's or the poller's);
    /// `told`: Claude gets it now, in the tool result. Only a live task changes.
    Polled { update: &'a PollUpdate, told: bool },
    /// One event of a subscription (`super::schedule::after_event`): what the worker told, but on
    /// a task it leaves live the poll rhythm, the failed-check count and the last poll error stay
    /// as the polls left them (a stream is not a check). Only a live task that is not held
    /// changes: the window holding it tells Claude what it sees.
    Streamed(&'a PollUpdate),
    /// A fresh look outside the poller (the `task` tool, `cancel`): Claude gets it now, so an
    /// ending is told; a live task is tracked again, its next poll at `next_poll_ms`.
    Seen { seen: Seen<'a>, next_poll_ms: i64 },
    /// The inline window is over: the poller's next poll, the hold that remains (a deferral's),
    /// and the stream lease of a process that goes on reading the task's stream, at once, so the
    /// poller never sees the task free of both and opens a second stream between the two.
    HandedOver {
        next_poll_ms: i64,
        held_until_ms: Option<i64>,
        lease_until_ms: Option<i64>,
    },
    /// A stream lease renewed (`Some`) or given up (`None`).
    Leased(Option<i64>),
    /// Claude has the outcome (a tool returned it): neither announce nor deliver it again.
    Told,
    /// The monitor's wake-up names it.
    Announced,
    /// Its outcome reaches Claude.
    Delivered,
    /// A `send` call was answered with an MCP task Claude Code follows itself
    /// ([`Life::native_ms`]). Only a live task becomes one, or a waiting one whose question the
    /// person answers in that task's form.
    Native,
    /// A waiting task whose answer the worker took up on a new task: it waits no more, and
    /// nothing is announced of it (the send that answered it told Claude where the work went).
    Moved,
    /// Its worker was removed from the config while it was live: tracking ends, to be announced.
    Removed,
    /// The wall clock was set by this many ms (`super::clock::step`: negative when it went
    /// back): every time of the task moves with it, so each falls due when it would have (a
    /// clock set back an hour would otherwise stop the polls for an hour) and the status line
    /// counts from the same start.
    ClockSet(i64),
}

impl Life {
    /// Live = the poller owns it (the store's `tracked`).
    pub fn is_live(&self) -> bool {
        self.ended_ms.is_none()
    }

    /// Whether the poller leaves it alone at `now` ([`Life::held_until_ms`]).
    pub fn is_held(&self, now: i64) -> bool {
        held(self.held_until_ms, now)
    }

    /// What a change from `before` to `self` means to the session's waiters (the monitor, the
    /// asyncRewake and Stop hooks): a task ended, or an ended one was claimed or told, so there
    /// may be something new to say, or nothing left to wait for.
    pub fn wakes_waiters(&self, before: Option<&Life>) -> bool {
        !self.is_live()
            && before.is_none_or(|b| {
                b.is_live()
                    || b.announced_ms != self.announced_ms
                    || b.delivered_ms != self.delivered_ms
            })
    }
}

/// The hold rule, for a row read without its whole life: held while `now` is before the hold's end.
pub fn held(held_until_ms: Option<i64>, now: i64) -> bool {
    held_until_ms.is_some_and(|h| h > now)
}

/// The task after `event` at `now`; `None` when the event does not apply to it (a poll's answer
/// for a task that ended meanwhile, a claim of one already claimed, an event for a task the store
/// does not have). `before` is `None` for a task not yet recorded: only a send records one.
pub fn apply(before: Option<&Life>, event: Event<'_>, now: i64) -> Option<Life> {
    let Event::Sent(t) = event else {
        return changed(before?, event, now);
    };
    let live = t.state.is_live();
    let ended = (!live).then_some(now);
    let told = t.told.then_some(now);
    Some(Life {
        // A follow-up to a waiting task keeps its start.
        started_ms: before.map_or(now, |b| b.started_ms),
        state: t.state,
        context_id: t
            .context_id
            .map(str::to_string)
            .or_else(|| before.and_then(|b| b.context_id.clone())),
        result: t.result.map(str::to_string),
        result_chars: t.result_chars,
        question: t.question.map(str::to_string),
        updated_ms: now,
        ended_ms: ended,
        end_reason: ended.map(|_| EndReason::State),
        next_poll_ms: t.next_poll_ms.filter(|_| live),
        held_until_ms: t.held_until_ms.filter(|_| live),
        stream_lease_ms: before.and_then(|b| b.stream_lease_ms),
        failed_polls: 0,
        last_error: None,
        // Claude Code announces the end of a task it follows, as a native task's end is.
        announced_ms: told.or(t.native_ms.and(ended)),
        delivered_ms: told,
        // A send is a new call: an MCP task, if any, is made for it afterwards, unless the send
        // answers inside one.
        native_ms: t.native_ms,
    })
}

fn changed(b: &Life, event: Event<'_>, now: i64) -> Option<Life> {
    let live = b.is_live();
    let mut n = b.clone();
    match event {
        Event::Sent(_) => unreachable!("a send is applied by `apply`"),
        Event::Polled { update: u, told } => {
            if !live {
                return None;
            }
            n.polled(u, told, now);
        }
        Event::Streamed(u) => {
            if !live || b.is_held(now) {
                return None;
            }
            n.take_told(u);
            if let Some(reason) = u.end {
                n.last_error = u.last_error.clone();
                n.end(reason, now);
            }
        }
        Event::Seen { seen, next_poll_ms } => n.seen(seen, next_poll_ms, now),
        Event::HandedOver {
            next_poll_ms,
            held_until_ms,
            lease_until_ms,
        } => {
            if !live {
                return None;
            }
            n.next_poll_ms = Some(next_poll_ms);
            n.held_until_ms = held_until_ms;
            n.stream_lease_ms = lease_until_ms;
            return Some(n);
        }
        Event::Leased(until) => {
            if !live {
                return None;
            }
            n.stream_lease_ms = until;
            return Some(n);
        }
        Event::Told => {
            if live {
                return None;
            }
            n.mark_told(now);
            return Some(n);
        }
        Event::Announced => {
            if live || b.announced_ms.is_some() {
                return None;
            }
            n.announced_ms = Some(now);
            return Some(n);
        }
        Event::Delivered => {
            if live || b.delivered_ms.is_some() {
                return None;
            }
            n.delivered_ms = Some(now);
            return Some(n);
        }
        Event::Native => {
            // A live task, or one waiting for a person's answer, which the MCP task's form asks.
            if !live && !b.state.is_waiting() {
                return None;
            }
            n.native_ms = Some(now);
            return Some(n);
        }
        Event::Moved => {
            if live {
                n.end(EndReason::Moved, now);
            } else {
                n.end_reason = Some(EndReason::Moved);
            }
            n.mark_told(now);
        }
        Event::Removed => {
            if !live {
                return None;
            }
            n.end(EndReason::Removed, now);
        }
        Event::ClockSet(by) => {
            n.clock_set(by);
            return Some(n);
        }
    }
    n.updated_ms = now;
    Some(n)
}

impl Life {
    /// [`Event::ClockSet`]: every time, moved by `by`.
    fn clock_set(&mut self, by: i64) {
        let moved = |t: i64| t.saturating_add(by);
        self.started_ms = moved(self.started_ms);
        self.updated_ms = moved(self.updated_ms);
        for t in [
            &mut self.ended_ms,
            &mut self.next_poll_ms,
            &mut self.held_until_ms,
            &mut self.stream_lease_ms,
            &mut self.announced_ms,
            &mut self.delivered_ms,
            &mut self.native_ms,
        ] {
            *t = t.map(moved);
        }
    }

    /// A poll's answer to a live task ([`Event::Polled`]).
    fn polled(&mut self, u: &PollUpdate, told: bool, now: i64) {
        self.take_told(u);
        (self.failed_polls, self.last_error) = (u.failed_polls, u.last_error.clone());
        self.next_poll_ms = u.next_poll_ms;
        // A hold runs out by itself; a poll keeps one still running (the window's own polls)
        // unless it sets its own (a deferral).
        self.held_until_ms = u.held_until_ms.or(self.held_until_ms.filter(|&h| h > now));
        if let Some(reason) = u.end {
            self.end(reason, now);
            if told {
                self.mark_told(now);
            }
        }
    }

    /// A fresh look outside the poller ([`Event::Seen`]), live or not before it.
    fn seen(&mut self, seen: Seen<'_>, next_poll_ms: i64, now: i64) {
        let was_live = self.is_live();
        self.state = seen.state;
        if let Some(text) = seen.text {
            (self.result, self.result_chars) = (Some(text.to_string()), seen.text_chars);
        }
        self.question = seen.question.map(str::to_string);
        (self.failed_polls, self.last_error, self.held_until_ms) = (0, None, None);
        if seen.state.is_live() {
            self.next_poll_ms = Some(next_poll_ms);
            (self.ended_ms, self.end_reason) = (None, None);
            (self.announced_ms, self.delivered_ms) = (None, None);
            // Claude Code's task ended with the end this undoes: the waiters tell the next.
            if !was_live {
                self.native_ms = None;
            }
        } else {
            if was_live {
                self.end(EndReason::State, now);
            }
            self.next_poll_ms = None;
            self.mark_told(now);
        }
    }

    /// What the worker told, from a poll or a stream: a result or a context id that is absent
    /// keeps the one already known; the question is always the latest.
    fn take_told(&mut self, u: &PollUpdate) {
        self.state = u.state;
        if let Some(text) = &u.text {
            (self.result, self.result_chars) = (Some(text.clone()), u.text_chars);
        }
        self.question = u.question.clone();
        self.context_id = u.context_id.clone().or(self.context_id.take());
    }

    /// Tracking ends: the poller forgets it. Claude Code tells Claude of a native task's end
    /// (its next poll of the MCP task sees it), so that end is announced already.
    fn end(&mut self, reason: EndReason, now: i64) {
        self.ended_ms = Some(now);
        self.end_reason = Some(reason);
        self.next_poll_ms = None;
        self.held_until_ms = None;
        if self.native_ms.is_some() {
            self.announced_ms = self.announced_ms.or(Some(now));
        }
    }

    fn mark_told(&mut self, now: i64) {
        self.announced_ms = self.announced_ms.or(Some(now));
        self.delivered_ms = self.delivered_ms.or(Some(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(state: TaskState) -> NewTask<'static> {
        NewTask {
            worker: "fake",
            task_id: "t1",
            context_id: Some("ctx"),
            message: "build",
            state,
            result: None,
            result_chars: None,
            question: None,
            next_poll_ms: Some(9_500),
            held_until_ms: Some(4_500),
            told: false,
            native_ms: None,
        }
    }

    fn update(state: TaskState, end: Option<EndReason>) -> PollUpdate {
        PollUpdate {
            state,
            text: Some("done".into()),
            text_chars: None,
            question: None,
            context_id: None,
            failed_polls: 0,
            last_error: None,
            end,
            next_poll_ms: end.is_none().then_some(20_000),
            held_until_ms: None,
        }
    }

    fn live() -> Life {
        apply(None, Event::Sent(&sent(TaskState::Working)), 0).unwrap()
    }

    /// A clock set back moves every time of a live or ended task by as much, and nothing else:
    /// its next poll falls due one rhythm on, not an hour later; a follow-up keeps the start.
    #[test]
    fn a_clock_set_moves_every_time_and_nothing_else() {
        let held = apply(Some(&live()), Event::Native, 1_000).unwrap();
        let back = apply(Some(&held), Event::ClockSet(-3_600_000), 2_000).unwrap();
        assert_eq!(back.started_ms, -3_600_000);
        assert_eq!(back.updated_ms, held.updated_ms - 3_600_000);
        assert_eq!(back.next_poll_ms, Some(9_500 - 3_600_000));
        assert_eq!(back.held_until_ms, Some(4_500 - 3_600_000));
        assert_eq!(back.native_ms, Some(1_000 - 3_600_000));
        assert_eq!((back.ended_ms, back.announced_ms), (None, None));
        assert_eq!(
            apply(Some(&back), Event::ClockSet(3_600_000), 3_000),
            Some(held.clone()),
            "and back again"
        );
        let done = update(TaskState::Completed, Some(EndReason::State));
        let polled = Event::Polled {
            update: &done,
            told: true,
        };
        let ended = apply(Some(&held), polled, 5_000).unwrap();
        let on = apply(Some(&ended), Event::ClockSet(86_400_000), 6_000).unwrap();
        assert_eq!(on.ended_ms, Some(5_000 + 86_400_000));
        assert_eq!(on.delivered_ms, Some(5_000 + 86_400_000));
        assert_eq!(
            (on.state, on.result.as_deref()),
            (ended.state, ended.result.as_deref())
        );
        let again = apply(
            Some(&on),
            Event::Sent(&sent(TaskState::Working)),
            90_000_000,
        )
        .unwrap();
        assert_eq!(
            again.started_ms, on.started_ms,
            "a follow-up keeps its start"
        );
    }

    /// A native task's end is announced as it ends (Claude Code tells it) but not delivered (the
    /// hidden context still carries the result); a send or a fresh look that makes it live again
    /// leaves it to the waiters.
    #[test]
    fn a_native_tasks_end_is_announced_by_claude_code_alone() {
        let native = apply(Some(&live()), Event::Native, 1).unwrap();
        assert_eq!(native.native_ms, Some(1));
        let done = update(TaskState::Completed, Some(EndReason::State));
        let polled = Event::Polled {
            update: &done,
            told: false,
        };
        let ended = apply(Some(&native), polled, 2).unwrap();
        assert_eq!((ended.announced_ms, ended.delivered_ms), (Some(2), None));
        assert!(
            apply(Some(&ended), Event::Native, 3).is_none(),
            "only a live task"
        );
        let seen = Event::Seen {
            seen: Seen {
                task_id: "t1",
                state: TaskState::Working,
                text: None,
                text_chars: None,
                question: None,
            },
            next_poll_ms: 9,
        };
        let again = apply(Some(&ended), seen, 4).unwrap();
        assert_eq!((again.native_ms, again.announced_ms), (None, None));
        let asked = apply(Some(&native), Event::Sent(&sent(TaskState::Working)), 5).unwrap();
        assert_eq!(
            asked.native_ms, None,
            "a follow-up send is a call of its own"
        );
        let plain = apply(Some(&live()), polled, 2).unwrap();
        assert_eq!(
            plain.announced_ms, None,
            "a task Claude Code does not follow waits for a waiter"
        );
    }

    /// A person's answer in a native task's form: the waiting task becomes the MCP task's, and
    /// the send of the answer goes on under it; an end that send brings at once is Claude Code's
    /// to announce (at its next poll), its result still the hidden context's to deliver.
    #[test]
    fn a_persons_answer_goes_on_under_the_same_native_task() {
        let asking = apply(
            Some(&live()),
            Event::Sent(&sent(TaskState::InputRequired)),
            1,
        )
        .unwrap();
        let held = apply(Some(&asking), Event::Native, 2).unwrap();
        assert_eq!(held.native_ms, Some(2), "a waiting task is followed");
        let mut answer = sent(TaskState::Working);
        answer.native_ms = Some(2);
        let going = apply(Some(&held), Event::Sent(&answer), 3).unwrap();
        assert_eq!((going.native_ms, going.announced_ms), (Some(2), None));
        let mut done = sent(TaskState::Completed);
        done.native_ms = Some(2);
        let ended = apply(Some(&held), Event::Sent(&done), 3).unwrap();
        assert_eq!(
            (ended.native_ms, ended.announced_ms, ended.delivered_ms),
            (Some(2), Some(3), None)
        );
    }

    /// A send holds its task for the window; a poll inside the window keeps the hold, a stream
    /// event is dropped while it runs; once it has run out, both apply.
    #[test]
    fn a_window_holds_its_task_from_the_pollers_streams() {
        let t = live();
        assert!(t.is_held(4_499) && !t.is_held(4_500));
        let working = update(TaskState::Working, None);
        let polled = apply(
            Some(&t),
            Event::Polled {
                update: &working,
                told: false,
            },
            1_000,
        )
        .unwrap();
        assert_eq!(polled.held_until_ms, Some(4_500));
        let done = update(TaskState::Completed, Some(EndReason::State));
        assert_eq!(apply(Some(&polled), Event::Streamed(&done), 4_499), None);
        let ended = apply(Some(&polled), Event::Streamed(&done), 4_500).unwrap();
        assert_eq!(
            (ended.state, ended.ended_ms, ended.held_until_ms),
            (TaskState::Completed, Some(4_500), None)
        );
        assert!(ended.wakes_waiters(Some(&polled)));
    }

    /// Nothing but a send and a fresh look changes a task once it ended, and each claim is
    /// taken once: the rules that make every result reach Claude exactly once.
    #[test]
    fn an_ended_task_is_claimed_once_and_polls_change_nothing() {
        let done = update(TaskState::Completed, Some(EndReason::State));
        let ended = apply(
            Some(&live()),
            Event::Polled {
                update: &done,
                told: false,
            },
            5_000,
        )
        .unwrap();
        let working = update(TaskState::Working, None);
        for e in [
            Event::Polled {
                update: &working,
                told: false,
            },
            Event::Streamed(&working),
            Event::Removed,
            Event::Leased(Some(1)),
        ] {
            assert_eq!(apply(Some(&ended), e, 6_000), None, "{e:?}");
        }
        let announced = apply(Some(&ended), Event::Announced, 6_000).unwrap();
        assert_eq!(apply(Some(&announced), Event::Announced, 7_000), None);
        assert!(announced.wakes_waiters(Some(&ended)));
        let told = apply(Some(&announced), Event::Told, 8_000).unwrap();
        assert_eq!(
            (told.announced_ms, told.delivered_ms),
            (Some(6_000), Some(8_000))
        );
        assert_eq!(apply(None, Event::Announced, 0), None, "no such task");
    }

    /// A stream is not a check: a live event keeps the failed-check count, the last poll error
    /// and the poll rhythm; an ending from it ends the task as a poll would.
    #[test]
    fn a_stream_event_keeps_the_poll_rhythm() {
        let mut failed = update(TaskState::Submitted, None);
        (failed.failed_polls, failed.last_error, failed.text) = (2, Some("timeout".into()), None);
        let t = apply(
            Some(&live()),
            Event::Polled {
                update: &failed,
                told: false,
            },
            10_000,
        )
        .unwrap();
        let mut streamed = update(TaskState::Working, None);
        streamed.next_poll_ms = Some(999_999);
        let t = apply(Some(&t), Event::Streamed(&streamed), 11_000).unwrap();
        assert_eq!(
            (
                t.state,
                t.failed_polls,
                t.next_poll_ms,
                t.last_error.as_deref()
            ),
            (TaskState::Working, 2, Some(20_000), Some("timeout"))
        );
        assert_eq!(t.result.as_deref(), Some("done"));
    }

    /// A deferral holds the task until one interval before the deferred poll; the poller's next
    /// answer (which sets no hold) lets a run-out hold go.
    #[test]
    fn a_deferral_holds_until_its_own_time() {
        let mut deferred = update(TaskState::Working, None);
        (deferred.next_poll_ms, deferred.held_until_ms) = (Some(90_000), Some(85_000));
        let t = apply(
            Some(&live()),
            Event::Polled {
                update: &deferred,
                told: false,
            },
            30_000,
        )
        .unwrap();
        assert!(t.is_held(84_999) && !t.is_held(85_000));
        let working = update(TaskState::Working, None);
        let t = apply(
            Some(&t),
            Event::Polled {
                update: &working,
                told: false,
            },
            90_000,
        )
        .unwrap();
        assert_eq!(t.held_until_ms, None);
    }

    /// A waiting task answered by a send is live and unclaimed again; a fresh look at an ended
    /// task marks it told; a task moved elsewhere is told and ends with its own reason.
    #[test]
    fn follow_ups_looks_and_moves() {
        let mut ask = sent(TaskState::InputRequired);
        ask.question = Some("Which colour?");
        let waiting = apply(None, Event::Sent(&ask), 0).unwrap();
        assert!(!waiting.is_live() && waiting.next_poll_ms.is_none());
        let announced = apply(Some(&waiting), Event::Announced, 1).unwrap();
        let again = apply(Some(&announced), Event::Sent(&sent(TaskState::Working)), 2).unwrap();
        assert!(again.is_live() && again.announced_ms.is_none());
        assert_eq!(again.context_id.as_deref(), Some("ctx"));
        let seen = Seen {
            task_id: "t1",
            state: TaskState::Completed,
            text: Some("42"),
            text_chars: None,
            question: None,
        };
        let looked = apply(
            Some(&again),
            Event::Seen {
                seen,
                next_poll_ms: 0,
            },
            3,
        )
        .unwrap();
        assert_eq!(
            (looked.ended_ms, looked.end_reason, looked.delivered_ms),
            (Some(3), Some(EndReason::State), Some(3))
        );
        let moved = apply(Some(&waiting), Event::Moved, 4).unwrap();
        assert_eq!(
            (moved.ended_ms, moved.end_reason, moved.announced_ms),
            (Some(0), Some(EndReason::Moved), Some(4))
        );
    }
}
