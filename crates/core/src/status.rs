//! The status line's text: every row of the seed's table (docs/how-it-works.md, "The status line")
//! as pure functions: [`summarize`] folds the session's tasks into a small [`Snapshot`], and
//! [`render_snapshot`] draws it at `now`. [`render`] is the two together.
//!
//! Pure and hot (runs once a second): no IO, no env, no clock; the spinner frame, the running
//! clock and the "done for 5 s" rule all come from `now` at render time, so a snapshot written once
//! draws the right line every second until the next write. Worker-provided text goes through
//! [`text::sanitize`] and [`text::cut`] before it is drawn.
//!
//! Why a snapshot: the status line's process must cost about what starting a process costs, and
//! SQLite's first read of the file alone costs more than that. Writers publish the
//! snapshot after every write (`a2a_mod_store::snapshot`); the status line reads only that. It is
//! O(1) in the number of tasks: counts, the first running and the first waiting task, and the
//! newest ended one, with texts kept only as far as the line can show them.
//!
//! What is shown, first match wins:
//! 1. One task running: `⠋ fake slow 20 build 0:12` (task text cut to [`TEXT_COLS`] columns; time
//!    since it started). With tasks waiting as well, ` · 1 waiting` follows: the running task keeps
//!    its detail and the waiting one is still visible.
//! 2. Several running: `⠋ 2 running`, then ` · 1 waiting` when any wait.
//! 3. Nothing running, a task ended within the done window: `✓ fake done 0:20` (the time is
//!    ended − started), `✕ fake failed`, `⊘ fake canceled`, `✕ fake rejected`, `? fake ended`
//!    (unrecognised state), `✕ fake lost contact 1:05`, `⊘ fake no longer tracked` (worker
//!    removed). The newest such task wins; ` · 1 waiting` follows when tasks wait, because the
//!    outcome is news for a few seconds while the waiting task stays until answered.
//! 4. One waiting: `? fake waiting: Which colour?` (the question cut to [`QUESTION_COLS`]),
//!    or, for a permission a worker's run asks ([`approval_of`]), `! build needs your ok: Bash
//!    rm -rf build`,
//!    `? fake waiting for input` without a question, `? fake needs auth` for auth-required.
//! 5. Several waiting: `? 2 waiting`.
//! 6. Otherwise nothing (empty string).
//!
//! A waiting task that is answered becomes live again (the store re-tracks it), so it shows as
//! running, its time still counted from the first send. Newlines and tabs in task text or a
//! question become single spaces: the status line is one line.

use crate::ending::{self, Standing};
use crate::task::{EndReason, TaskState};
use crate::text;
use crate::theme::{Glyphs, Role, Style, Theme};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The seed's cut for the task text.
pub const TEXT_COLS: usize = 32;
/// A question is what the user has to act on, so it gets a little more room.
pub const QUESTION_COLS: usize = 48;
/// Aliases are short by validation; this only guards a tampered store.
pub const WORKER_COLS: usize = 24;
pub const LABEL: &str = "a2a-mod:";

/// One task as the status line sees it (borrowed from the store's record).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row<'a> {
    pub worker: &'a str,
    /// The task text as sent (the message).
    pub text: &'a str,
    pub state: TaskState,
    pub started_ms: i64,
    /// `None` while the background poller owns the task (live).
    pub ended_ms: Option<i64>,
    pub end: Option<EndReason>,
    pub question: Option<&'a str>,
}

fn kind(r: &Row<'_>) -> Standing {
    ending::of(r.state, r.end, r.ended_ms.is_none()).standing
}

/// One styled piece of the line; pieces are joined by single spaces.
pub type Span<'a> = (Role, Cow<'a, str>);

/// One task as the [`Snapshot`] keeps it: owned, its texts sanitized and cut to what the line can
/// show (`text::keep_for_cut`), so a long prompt costs the snapshot a few dozen bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapRow {
    pub worker: String,
    pub text: String,
    pub state: TaskState,
    pub started_ms: i64,
    pub ended_ms: Option<i64>,
    pub end: Option<EndReason>,
    /// The question, or for a permission a worker's run asks, what it asks for
    /// ([`approval_of`]).
    pub question: Option<String>,
    /// Whether the question is a permission for a person to give.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval: bool,
}

/// Bound on what is kept of one text even when all of it fits the line: only text made mostly of
/// zero-width characters gets here, and such text draws the same without its tail.
const KEEP_MAX_BYTES: usize = 1024;

fn keep(s: &str, cols: usize) -> String {
    let clean = text::sanitize(s);
    let kept = text::keep_for_cut(&clean, cols);
    kept[..kept.floor_char_boundary(KEEP_MAX_BYTES)].to_string()
}

impl SnapRow {
    pub fn of(r: &Row<'_>) -> SnapRow {
        // Read whole, before the question is cut to what the line shows.
        let approval = r.question.and_then(approval_of);
        SnapRow {
            worker: keep(r.worker, WORKER_COLS),
            text: keep(r.text, TEXT_COLS),
            state: r.state,
            started_ms: r.started_ms,
            ended_ms: r.ended_ms,
            end: r.end,
            question: approval
                .as_deref()
                .or(r.question)
                .map(|q| keep(q, QUESTION_COLS)),
            approval: approval.is_some(),
        }
    }

    pub fn as_row(&self) -> Row<'_> {
        Row {
            worker: &self.worker,
            text: &self.text,
            state: self.state,
            started_ms: self.started_ms,
            ended_ms: self.ended_ms,
            end: self.end,
            question: self.question.as_deref(),
        }
    }
}

/// Everything the line can show, whatever `now` is: built once per write by [`summarize`], drawn
/// every second by [`render_snapshot`]. Its size does not grow with the number of tasks.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// Live tasks (the poller owns them).
    pub running: u32,
    /// The first live task in store order (oldest); drawn when it is the only one.
    pub first_running: Option<SnapRow>,
    /// Ended in input-required or auth-required (and not lost or removed).
    pub waiting: u32,
    pub first_waiting: Option<SnapRow>,
    /// The task that ended last (any other ending). Whether it is still news is decided at render
    /// time from `now` and the done window: if the newest ending is too old, every other is too.
    pub last_ended: Option<SnapRow>,
}

impl Snapshot {
    /// One fold step of [`summarize`]. Rows of one kind (running, waiting, ended) must come in store
    /// order (started, then seq), which decides "first" and, between endings at the same
    /// millisecond, which one is shown (the later); the kinds may come in any order.
    /// Clones only a row that becomes first or newest, so 500 running tasks cost 500 counter bumps.
    pub fn push(&mut self, r: &Row<'_>) {
        match kind(r) {
            Standing::Running => {
                self.running = self.running.saturating_add(1);
                if self.first_running.is_none() {
                    self.first_running = Some(SnapRow::of(r));
                }
            }
            Standing::Waiting => {
                self.waiting = self.waiting.saturating_add(1);
                if self.first_waiting.is_none() {
                    self.first_waiting = Some(SnapRow::of(r));
                }
            }
            Standing::Ended => {
                let newer = self
                    .last_ended
                    .as_ref()
                    .is_none_or(|l| l.ended_ms <= r.ended_ms);
                if newer {
                    self.last_ended = Some(SnapRow::of(r));
                }
            }
        }
    }

    /// The same as pushing `n` more running rows that come after the first one: lets the store
    /// count live tasks in SQL instead of reading each (500 live tasks, every poll).
    pub fn push_more_running(&mut self, n: u32) {
        self.running = self.running.saturating_add(n);
    }

    /// Whether the line shows anything at `now`: lets the status line skip loading a theme.
    pub fn shows_anything(&self, now_ms: i64, done_ms: i64) -> bool {
        self.running > 0 || self.waiting > 0 || self.last_ended_within(now_ms, done_ms).is_some()
    }

    fn last_ended_within(&self, now_ms: i64, done_ms: i64) -> Option<&SnapRow> {
        self.last_ended.as_ref().filter(|r| {
            // A clock that went backwards makes an end look recent, never hides it.
            now_ms.saturating_sub(r.ended_ms.unwrap_or(now_ms)) <= done_ms
        })
    }
}

/// The [`Snapshot`] of `rows` (in store order: started, then seq). Needs every live and waiting
/// task and at least the newest ended ones; older endings may be left out, they never show.
pub fn summarize<'r, 'a: 'r>(rows: impl IntoIterator<Item = &'r Row<'a>>) -> Snapshot {
    let mut s = Snapshot::default();
    for r in rows {
        s.push(r);
    }
    s
}

/// The line for `rows` at `now_ms`, painted with `theme`; empty when there is nothing to show.
/// `done_ms`: how long an ended task stays on the line. `animations`: false gives the still glyph.
pub fn render(
    rows: &[Row<'_>],
    now_ms: i64,
    done_ms: i64,
    theme: &Theme,
    animations: bool,
) -> String {
    render_snapshot(&summarize(rows), now_ms, done_ms, theme, animations)
}

/// The line for a snapshot at `now_ms` (see [`render`]).
pub fn render_snapshot(
    snap: &Snapshot,
    now_ms: i64,
    done_ms: i64,
    theme: &Theme,
    animations: bool,
) -> String {
    let spans = spans(snap, now_ms, done_ms, theme, animations);
    if spans.is_empty() {
        return String::new();
    }
    paint(&spans, theme)
}

/// The pieces of the line, unpainted (the label first); empty when there is nothing to show.
pub fn spans<'a>(
    snap: &'a Snapshot,
    now_ms: i64,
    done_ms: i64,
    theme: &'a Theme,
    animations: bool,
) -> Vec<Span<'a>> {
    let g = &theme.glyphs;
    let (running, waiting) = (snap.running, snap.waiting);
    let first_running = snap.first_running.as_ref().map(SnapRow::as_row);
    let first_waiting = snap.first_waiting.as_ref().map(SnapRow::as_row);
    let last_ended = snap.last_ended_within(now_ms, done_ms).map(SnapRow::as_row);
    let last_ended = last_ended.as_ref();

    let mut out: Vec<Span<'a>> = Vec::with_capacity(8);
    out.push((Role::Label, Cow::Borrowed(LABEL)));
    let waiting_tail = |out: &mut Vec<Span<'a>>| {
        if waiting > 0 {
            out.push((Role::Separator, Cow::Borrowed(g.separator.as_str())));
            out.push((Role::Count, Cow::Owned(format!("{waiting} waiting"))));
        }
    };

    if let (1, Some(r)) = (running, first_running.as_ref()) {
        out.push((Role::Spinner, Cow::Borrowed(spinner(g, now_ms, animations))));
        push_worker(&mut out, r, g);
        push_text(&mut out, Role::Text, r.text, TEXT_COLS, g);
        out.push((
            Role::Time,
            Cow::Owned(clock(now_ms.saturating_sub(r.started_ms))),
        ));
        waiting_tail(&mut out);
    } else if running > 1 {
        out.push((Role::Spinner, Cow::Borrowed(spinner(g, now_ms, animations))));
        out.push((Role::Count, Cow::Owned(format!("{running} running"))));
        waiting_tail(&mut out);
    } else if let Some(r) = last_ended {
        let (role, verb, timed) = outcome(r);
        out.push((role, Cow::Borrowed(icon(g, role))));
        push_worker(&mut out, r, g);
        out.push((role, Cow::Borrowed(verb)));
        if timed {
            let ended = r.ended_ms.unwrap_or(now_ms);
            out.push((
                Role::Time,
                Cow::Owned(clock(ended.saturating_sub(r.started_ms))),
            ));
        }
        waiting_tail(&mut out);
    } else if let (1, Some(r)) = (waiting, first_waiting.as_ref()) {
        // A person's ok is a row of its own, apart from a plain question.
        let approval = snap.first_waiting.as_ref().is_some_and(|s| s.approval);
        let mark = if approval {
            APPROVAL_MARK
        } else {
            g.waiting.as_str()
        };
        out.push((Role::Waiting, Cow::Borrowed(mark)));
        push_worker(&mut out, r, g);
        let question = r.question.map(text::sanitize).unwrap_or_default();
        if r.state == TaskState::AuthRequired {
            out.push((Role::Waiting, Cow::Borrowed("needs auth")));
        } else if question.is_empty() {
            out.push((Role::Waiting, Cow::Borrowed("waiting for input")));
        } else {
            let words = if approval {
                "needs your ok:"
            } else {
                "waiting:"
            };
            out.push((Role::Waiting, Cow::Borrowed(words)));
            let q = text::cut_with(&question, QUESTION_COLS, &g.ellipsis);
            out.push((Role::Text, Cow::Owned(q)));
        }
    } else if waiting > 1 {
        out.push((Role::Waiting, Cow::Borrowed(g.waiting.as_str())));
        out.push((Role::Count, Cow::Owned(format!("{waiting} waiting"))));
    } else {
        out.clear();
    }
    out
}

/// The mark of a permission waiting for a person's ok.
pub const APPROVAL_MARK: &str = "!";

/// How a2a-mod serve's permission line ends ([`approval_line`] writes it; [`approval_of`]
/// reads it): one spelling for both.
pub const APPROVAL_ENDING: &str = ". Reply allow, allow always, or deny (with a reason)";

/// A person's answer to a permission question: `a2a-mod approve`'s verdict, the choice in
/// Claude Code's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Always,
    Deny,
}

impl Verdict {
    /// The reply a2a-mod serve reads for it (`allow`, `allow always`, `deny: why`;
    /// docs/serve.md), the one spelling every way of answering sends.
    pub fn reply(self, reason: &str) -> String {
        let reason = reason.trim();
        match self {
            Verdict::Allow => "allow".into(),
            Verdict::Always => "allow always".into(),
            Verdict::Deny if reason.is_empty() => "deny".into(),
            Verdict::Deny => format!("deny: {reason}"),
        }
    }
}

/// a2a-mod serve's permission line for a step of `tool` as the step is shown (`Bash: rm -rf
/// build`, `Edit: src/lib.rs`): the one spelling [`approval_of`] reads, written by serve and by
/// the client for a structured request whose line says it otherwise.
pub fn approval_line(tool: &str, step: &str) -> String {
    let verb = if tool == "Bash" { "run" } else { "use" };
    format!("Claude wants to {verb} {step}{APPROVAL_ENDING}")
}

/// What a worker's run asks permission for, when `question` is a2a-mod serve's permission line
/// (`Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny (with a
/// reason)`): `Bash rm -rf build`. `None` for any other question.
pub fn approval_of(question: &str) -> Option<String> {
    let rest = question.strip_prefix("Claude wants to ")?;
    let rest = rest
        .strip_prefix("run ")
        .or_else(|| rest.strip_prefix("use "))?;
    let what = rest.strip_suffix(APPROVAL_ENDING)?;
    Some(what.replacen(": ", " ", 1))
}

/// The style role, the words and whether a duration follows, for a task that ended.
fn outcome(r: &Row<'_>) -> (Role, &'static str, bool) {
    let e = ending::of(r.state, r.end, false);
    (e.role, e.line_word, e.timed)
}

fn icon(g: &Glyphs, role: Role) -> &str {
    match role {
        Role::Done => &g.done,
        Role::Failed => &g.failed,
        Role::Canceled => &g.canceled,
        _ => &g.waiting,
    }
}

fn push_worker<'a>(out: &mut Vec<Span<'a>>, r: &Row<'a>, g: &Glyphs) {
    push_text(out, Role::Worker, r.worker, WORKER_COLS, g);
}

/// Untrusted text: sanitized, cut, left out when nothing printable remains.
fn push_text<'a>(out: &mut Vec<Span<'a>>, role: Role, s: &'a str, cols: usize, g: &Glyphs) {
    let clean = text::sanitize(s);
    if !clean.is_empty() {
        out.push((role, Cow::Owned(text::cut_with(&clean, cols, &g.ellipsis))));
    }
}

/// The spinner frame for this second: one step per second, read off the clock.
fn spinner(g: &Glyphs, now_ms: i64, animations: bool) -> &str {
    if !animations || g.spinner.is_empty() {
        return &g.still;
    }
    let i = now_ms.div_euclid(1000).rem_euclid(g.spinner.len() as i64) as usize;
    g.spinner.get(i).map_or(g.still.as_str(), String::as_str)
}

/// `m:ss`, or `h:mm:ss` from an hour on; a negative span (clock skew) shows as `0:00`.
pub fn clock(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// Draws the spans with the theme's colours, or as powerline blocks when the theme has them.
pub fn paint(spans: &[Span<'_>], theme: &Theme) -> String {
    let mut out = String::with_capacity(128);
    const RESET: &str = "\x1b[0m";
    let Some(pl) = &theme.powerline else {
        for (i, (role, text)) in spans.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let style = theme.styles.get(*role);
            if style.is_plain() {
                out.push_str(text);
            } else {
                style.push_sgr(&mut out, &Style::default());
                out.push_str(text);
                out.push_str(RESET);
            }
        }
        return out;
    };
    // Powerline: [ label ][▶ body ][▶]. Every piece re-applies its block's background after a
    // reset, so no colour leaks from one piece into the next.
    let piece = |out: &mut String, style: &Style, base: &Style, text: &str| {
        out.push_str(RESET);
        style.push_sgr(out, base);
        out.push_str(text);
    };
    let arrow = |out: &mut String, from: &Style, to: Option<&Style>| {
        if pl.separator.is_empty() {
            return;
        }
        let s = Style {
            fg: from.bg,
            bg: to.and_then(|t| t.bg),
            ..Style::default()
        };
        piece(out, &s, &Style::default(), &pl.separator);
    };
    let plain = Style::default();
    let (label, body) = spans
        .split_first()
        .map_or((None, &[][..]), |(l, b)| (Some(l), b));
    if let Some((role, text)) = label {
        piece(&mut out, &plain, &pl.label, " ");
        piece(&mut out, theme.styles.get(*role), &pl.label, text);
        piece(&mut out, &plain, &pl.label, " ");
        arrow(&mut out, &pl.label, (!body.is_empty()).then_some(&pl.body));
    }
    if !body.is_empty() {
        for (role, text) in body {
            piece(&mut out, &plain, &pl.body, " ");
            piece(&mut out, theme.styles.get(*role), &pl.body, text);
        }
        piece(&mut out, &plain, &pl.body, " ");
        arrow(&mut out, &pl.body, None);
    }
    out.push_str(RESET);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000_000; // a whole ten seconds: spinner frame 0

    /// The line the writers spell is the line the reader reads.
    #[test]
    fn a_permission_line_reads_back_as_what_it_asks() {
        assert_eq!(
            approval_of(&approval_line("Bash", "Bash: rm -rf build")).as_deref(),
            Some("Bash rm -rf build")
        );
        assert_eq!(
            approval_line("Edit", "Edit: src/lib.rs"),
            format!("Claude wants to use Edit: src/lib.rs{APPROVAL_ENDING}")
        );
        assert_eq!(
            approval_of("Claude asks: which? Reply with your answer"),
            None
        );
    }

    fn live<'a>(worker: &'a str, text: &'a str, started_ago_s: i64) -> Row<'a> {
        Row {
            worker,
            text,
            state: TaskState::Working,
            started_ms: NOW - started_ago_s * 1000,
            ended_ms: None,
            end: None,
            question: None,
        }
    }

    fn ended<'a>(worker: &'a str, state: TaskState, took_s: i64, ago_s: i64) -> Row<'a> {
        Row {
            worker,
            text: "x",
            state,
            started_ms: NOW - (took_s + ago_s) * 1000,
            ended_ms: Some(NOW - ago_s * 1000),
            end: Some(EndReason::State),
            question: None,
        }
    }

    fn waiting<'a>(worker: &'a str, q: Option<&'a str>) -> Row<'a> {
        Row {
            question: q,
            state: TaskState::InputRequired,
            ..ended(worker, TaskState::InputRequired, 3, 600)
        }
    }

    fn line(rows: &[Row<'_>]) -> String {
        render(rows, NOW, 5000, &Theme::plain(), true)
    }

    #[test]
    fn the_seed_table() {
        assert_eq!(
            line(&[live("fake", "slow 20 build", 12)]),
            "a2a-mod: ⠋ fake slow 20 build 0:12"
        );
        assert_eq!(
            line(&[
                live("fake", "a", 1),
                live("adk", "b", 2),
                waiting("x", Some("q"))
            ]),
            "a2a-mod: ⠋ 2 running · 1 waiting"
        );
        assert_eq!(
            line(&[live("fake", "a", 1), live("adk", "b", 2)]),
            "a2a-mod: ⠋ 2 running"
        );
        assert_eq!(
            line(&[waiting("fake", Some("Which colour?"))]),
            "a2a-mod: ? fake waiting: Which colour?"
        );
        assert_eq!(
            line(&[waiting("fake", Some("a")), waiting("adk", None)]),
            "a2a-mod: ? 2 waiting"
        );
        assert_eq!(
            line(&[waiting(
                "build",
                Some(
                    "Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny (with a reason)"
                )
            )]),
            "a2a-mod: ! build needs your ok: Bash rm -rf build"
        );
        assert_eq!(
            line(&[waiting(
                "build",
                Some("Claude wants to run Bash: x. Reply with your answer")
            )]),
            "a2a-mod: ? build waiting: Claude wants to run Bash: x. Reply with your an…",
            "only serve's permission line is an approval"
        );
        assert_eq!(
            line(&[ended("fake", TaskState::Completed, 20, 0)]),
            "a2a-mod: ✓ fake done 0:20"
        );
        assert_eq!(
            line(&[ended("fake", TaskState::Failed, 20, 5)]),
            "a2a-mod: ✕ fake failed 0:20"
        );
        assert_eq!(
            line(&[ended("fake", TaskState::Canceled, 20, 1)]),
            "a2a-mod: ⊘ fake canceled 0:20"
        );
        assert_eq!(line(&[ended("fake", TaskState::Completed, 20, 6)]), "");
        assert_eq!(line(&[]), "");
    }

    #[test]
    fn the_other_endings() {
        assert_eq!(
            line(&[ended("fake", TaskState::Rejected, 1, 0)]),
            "a2a-mod: ✕ fake rejected 0:01"
        );
        assert_eq!(
            line(&[ended("fake", TaskState::Unknown, 1, 0)]),
            "a2a-mod: ? fake ended 0:01"
        );
        let mut lost = ended("fake", TaskState::Working, 65, 0);
        lost.end = Some(EndReason::Lost);
        assert_eq!(line(&[lost]), "a2a-mod: ✕ fake lost contact 1:05");
        let mut removed = ended("fake", TaskState::Working, 65, 0);
        removed.end = Some(EndReason::Removed);
        assert_eq!(line(&[removed]), "a2a-mod: ⊘ fake no longer tracked");
        let auth = Row {
            state: TaskState::AuthRequired,
            ..waiting("fake", None)
        };
        assert_eq!(line(&[auth]), "a2a-mod: ? fake needs auth");
        assert_eq!(
            line(&[waiting("fake", None)]),
            "a2a-mod: ? fake waiting for input"
        );
        assert_eq!(
            line(&[waiting("fake", Some(" \x1b[2J\n "))]),
            "a2a-mod: ? fake waiting for input"
        );
    }

    #[test]
    fn edge_cases() {
        // One running and one waiting: the running task's detail, then the waiting count.
        assert_eq!(
            line(&[live("fake", "build", 12), waiting("adk", Some("Which?"))]),
            "a2a-mod: ⠋ fake build 0:12 · 1 waiting"
        );
        // Ended while another waits: the outcome, then the waiting count.
        assert_eq!(
            line(&[
                waiting("adk", Some("Which?")),
                ended("fake", TaskState::Completed, 20, 1)
            ]),
            "a2a-mod: ✓ fake done 0:20 · 1 waiting"
        );
        // Anything running hides a fresh outcome (nothing else live, says the seed).
        assert_eq!(
            line(&[
                live("fake", "build", 12),
                ended("adk", TaskState::Failed, 2, 0)
            ]),
            "a2a-mod: ⠋ fake build 0:12"
        );
        // Several just ended: the newest.
        assert_eq!(
            line(&[
                ended("fake", TaskState::Completed, 20, 1),
                ended("adk", TaskState::Failed, 3, 2)
            ]),
            "a2a-mod: ✓ fake done 0:20"
        );
        // Newlines and tabs in the task text: one line.
        assert_eq!(
            line(&[live("fake", "fix\nthe\tbuild\r\n", 3)]),
            "a2a-mod: ⠋ fake fix the build 0:03"
        );
        // Hours; a start in the future (clock skew) is 0:00.
        assert_eq!(
            line(&[live("fake", "long", 3 * 3600 + 62)]),
            "a2a-mod: ⠋ fake long 3:01:02"
        );
        assert_eq!(line(&[live("fake", "x", -5)]), "a2a-mod: ⠋ fake x 0:00");
        // A tampered store cannot overflow the clock.
        let mut odd = live("fake", "x", 0);
        odd.started_ms = i64::MIN;
        assert!(line(&[odd]).starts_with("a2a-mod: ⠋ fake x "));
        // Empty text is left out rather than leaving a double space.
        assert_eq!(line(&[live("fake", "", 3)]), "a2a-mod: ⠋ fake 0:03");
    }

    #[test]
    fn spinner_steps_once_a_second_or_stands_still() {
        let rows = [live("fake", "x", 0)];
        let frames: Vec<String> = (0..11)
            .map(|s| {
                render(&rows, NOW + s * 1000 + 999, 5000, &Theme::plain(), true)
                    .chars()
                    .nth(9)
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(frames.concat(), "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏⠋");
        assert_eq!(
            render(&rows, NOW + 3000, 5000, &Theme::plain(), false),
            "a2a-mod: ● fake x 0:03"
        );
    }

    #[test]
    fn text_is_cut_by_width() {
        let long = "a".repeat(100);
        assert_eq!(
            line(&[live("fake", &long, 1)]),
            format!("a2a-mod: ⠋ fake {}… 0:01", "a".repeat(31))
        );
        let cjk = format!("x{}", "漢".repeat(40));
        let l = line(&[live("fake", &cjk, 1)]);
        assert_eq!(l, format!("a2a-mod: ⠋ fake x{}… 0:01", "漢".repeat(15)));
    }

    /// What the store feeds `summarize` on a write: every live and waiting-state row, and only the
    /// endings at the newest non-waiting end time. It must draw like all the rows at every `now`.
    #[test]
    fn summarize_needs_only_live_waiting_and_the_newest_endings() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let states = TaskState::ALL;
        let ends = [
            None,
            Some(EndReason::State),
            Some(EndReason::Lost),
            Some(EndReason::Removed),
        ];
        let theme = Theme::plain();
        for _ in 0..3000 {
            let n = next(7) as usize;
            let rows: Vec<Row<'_>> = (0..n)
                .map(|i| {
                    let live = next(3) == 0;
                    Row {
                        worker: ["a", "b", "c"][i % 3],
                        text: "t",
                        state: states[next(states.len() as u64) as usize],
                        started_ms: NOW - 1000 * next(4) as i64,
                        ended_ms: (!live).then(|| NOW - 1000 * next(8) as i64),
                        end: if live { None } else { ends[next(4) as usize] },
                        question: Some("q"),
                    }
                })
                .collect();
            let newest = rows
                .iter()
                .filter(|r| r.ended_ms.is_some() && !r.state.is_waiting())
                .filter_map(|r| r.ended_ms)
                .max();
            let picked: Vec<Row<'_>> = rows
                .iter()
                .filter(|r| r.ended_ms.is_none() || r.state.is_waiting() || r.ended_ms == newest)
                .copied()
                .collect();
            let (all, some) = (summarize(&rows), summarize(&picked));
            assert_eq!(all, some, "{rows:?}");
            for dt in [0, 2000, 5000, 5001, 9000] {
                assert_eq!(
                    render_snapshot(&all, NOW + dt, 5000, &theme, true),
                    render(&rows, NOW + dt, 5000, &theme, true)
                );
                assert_eq!(
                    all.shows_anything(NOW + dt, 5000),
                    !render(&rows, NOW + dt, 5000, &theme, true).is_empty()
                );
            }
        }
    }

    #[test]
    fn a_snapshot_stays_small_and_keeps_the_right_rows() {
        let long = "x".repeat(100_000);
        let mut rows: Vec<Row<'_>> = (0..500).map(|i| live("fake", &long, 500 - i)).collect();
        rows.push(waiting("adk", Some("Which colour?")));
        rows.push(waiting("adk", Some("Which size?")));
        rows.push(ended("fake", TaskState::Failed, 3, 2));
        rows.push(ended("late", TaskState::Completed, 3, 1));
        rows.push(ended("tie", TaskState::Canceled, 4, 1));
        let s = summarize(&rows);
        assert_eq!((s.running, s.waiting), (500, 2));
        let first = s.first_running.as_ref().unwrap();
        assert_eq!(first.started_ms, NOW - 500_000);
        assert_eq!(
            first.text.len(),
            TEXT_COLS + 1,
            "kept only what the line can show"
        );
        assert_eq!(
            s.first_waiting.as_ref().unwrap().question.as_deref(),
            Some("Which colour?")
        );
        // The newest ending; at the same millisecond the later row (store order) wins.
        assert_eq!(s.last_ended.as_ref().unwrap().worker, "tie");
        assert!(serde_json::to_string(&s).unwrap().len() < 1024);
        // Written once, drawn every second: the clock, the spinner and the done window move.
        let one = summarize(&[ended("fake", TaskState::Completed, 20, 0)]);
        let at = |dt| render_snapshot(&one, NOW + dt, 5000, &Theme::plain(), true);
        assert_eq!(at(0), "a2a-mod: ✓ fake done 0:20");
        assert_eq!(at(5000), "a2a-mod: ✓ fake done 0:20");
        assert_eq!(at(5001), "");
        assert!(!one.shows_anything(NOW + 5001, 5000));
        let run = summarize(&[live("fake", "build", 0)]);
        let at = |dt| render_snapshot(&run, NOW + dt, 5000, &Theme::plain(), true);
        assert_eq!(at(0), "a2a-mod: ⠋ fake build 0:00");
        assert_eq!(at(61_000), "a2a-mod: ⠙ fake build 1:01");
        assert_eq!(summarize(&[]), Snapshot::default());
        assert!(!Snapshot::default().shows_anything(NOW, 5000));
    }

    #[test]
    fn colours_wrap_each_piece() {
        let t = Theme::default_theme();
        let l = render(&[live("fake", "x", 1)], NOW, 5000, &t, true);
        assert!(l.starts_with("\x1b[38;5;246ma2a-mod:\x1b[0m "), "{l:?}");
        assert!(l.contains("\x1b[1mfake\x1b[0m"), "{l:?}");
    }
}
