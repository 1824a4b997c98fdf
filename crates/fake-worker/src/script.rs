//! The fake worker's script language and task model, as pure functions of time.
//!
//! Owns: parsing a message text into a [`Script`], and [`TaskRecord::snapshot`], which says what a
//! task looks like at a given instant. A task's state is a function of the time elapsed since its
//! send (and of the follow-up or cancel it received), so the server needs no background timers and
//! tests can check every state change without a clock. No IO, no clock reads: `now_ms` is always a
//! parameter, counted in milliseconds since the worker started.

use a2a_mod_core::task::TaskState;

/// What a task's first message asks the fake worker to do (docs/commands-and-tools.md "The embedded fake worker").
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Script {
    /// Anything unrecognised: completed at once, the artifact echoes the text.
    Echo(String),
    /// `slow N <words>`: working for `ms`, then completed with `done: <words>`.
    Slow { ms: u64, words: String },
    /// `slow-until T <words>`: `slow` until the Unix time T (ms), so tasks sent apart end together;
    /// the server makes it a `slow` when the task arrives (parsing reads no clock).
    SlowUntil { unix_ms: i64, words: String },
    /// `ask <question>`: input-required until a follow-up on the same task answers it.
    Ask(String),
    /// `ask-after N <question>`: working for `ms`, then `ask` (a question that comes once the
    /// task has gone to the background).
    AskAfter { ms: u64, question: String },
    /// `fail <why>`: failed with `why` as the status message.
    Fail(String),
    /// `reject`: rejected.
    Reject,
    /// `auth`: auth-required until a follow-up on the same task (credentials come out of band).
    Auth,
    /// `silent`: accepted, then every GetTask/CancelTask on the task hangs.
    Silent,
    /// `artifact <kind>`: completed at once with artifacts other than text.
    Artifacts(Made),
    /// `parts`: completed at once, the artifact describes every part received (`echo.rs`); the
    /// server fills the description in, since the script sees only the text. A message with no
    /// text at all (files or data alone) gets the same answer.
    Parts(String),
    /// `quiet N <words>`: working for `ms` with `<words>` as the status message, then completed
    /// with no message and no artifact, the words left only in the history (Microsoft Agent
    /// Framework's default answer, docs/a2a.md).
    Quiet { ms: u64, words: String },
    /// `ask-elsewhere <question>`: input-required like `ask`, but the follow-up is answered on a
    /// new task (a worker that ignores `message.taskId`, as FastA2A does); this one stays
    /// input-required.
    AskElsewhere(String),
    /// `tokens BYTES CHUNK [S]`: working for S seconds (default 0), then completed with BYTES of
    /// text ([`token_text`]), which a stream sends as appended CHUNK-byte artifact chunks as fast
    /// as the client reads them: an LLM's token stream at the fastest rate loopback allows.
    Tokens { bytes: usize, chunk: usize, ms: u64 },
    /// `flood N S [RATE]`: working for S seconds, then completed with `flooded`; its stream sends
    /// N identical `working` status updates first, RATE a second (default: as fast as the client
    /// reads them).
    Flood {
        updates: usize,
        ms: u64,
        rate: Option<u64>,
    },
}

/// What `artifact <kind>` makes: `data`, `file [KiB]` (default 1024), `url`, `chunks` (one text
/// artifact, streamed in three appended chunks), `twins` (two artifacts of one name),
/// `hostile` (file names that try to leave the folder or carry control characters),
/// `many N` (N small files).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Made {
    Data,
    File {
        kib: usize,
    },
    Url,
    Chunks,
    Twins,
    Hostile,
    Many(usize),
    /// `report [KiB]`: a text artifact, then a file part of that many KiB (an answer whose text
    /// must still arrive beside a large file).
    Report {
        kib: usize,
    },
}

/// One artifact the fake worker answers with, before the dialect spells it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FakeArtifact {
    pub name: String,
    pub parts: Vec<FakePart>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum FakePart {
    Text(String),
    Data(serde_json::Value),
    Bytes {
        filename: String,
        media_type: String,
        bytes: Vec<u8>,
    },
    Url {
        filename: String,
        media_type: String,
        url: String,
    },
}

/// The bytes of `artifact file N`: N KiB that are not all one value, so a lost or moved chunk shows.
pub fn file_bytes(kib: usize) -> Vec<u8> {
    // i * 31 % 251 repeats every 251 bytes: built from one period, so 60 MiB is quick in debug.
    let period: Vec<u8> = (0..251).map(|i| (i * 31 % 251) as u8).collect();
    period.iter().copied().cycle().take(kib * 1024).collect()
}

impl Made {
    fn parse(rest: &str) -> Option<Made> {
        let mut w = rest.split_whitespace();
        let kind = w.next()?.to_ascii_lowercase();
        let n = w.next().map(str::parse::<usize>);
        Some(match (kind.as_str(), n) {
            ("data", None) => Made::Data,
            ("file", None) => Made::File { kib: 1024 },
            // Up to 64 MiB: a large file part, as a benchmark sends one.
            ("file", Some(Ok(kib))) if kib <= 65_536 => Made::File { kib },
            ("report", None) => Made::Report { kib: 1024 },
            ("report", Some(Ok(kib))) if kib <= 65_536 => Made::Report { kib },
            ("url", None) => Made::Url,
            ("chunks", None) => Made::Chunks,
            ("twins", None) => Made::Twins,
            ("hostile", None) => Made::Hostile,
            ("many", Some(Ok(n))) if n <= 1000 => Made::Many(n),
            _ => return None,
        })
    }

    /// The artifacts, in the order the task lists them.
    pub(crate) fn artifacts(&self) -> Vec<FakeArtifact> {
        let file = |name: &str, filename: &str, bytes: &[u8]| FakeArtifact {
            name: name.to_string(),
            parts: vec![FakePart::Bytes {
                filename: filename.to_string(),
                media_type: "application/octet-stream".into(),
                bytes: bytes.to_vec(),
            }],
        };
        match self {
            Made::Data => vec![FakeArtifact {
                name: "stats".into(),
                parts: vec![FakePart::Data(serde_json::json!({
                    "rows": 3, "ok": true, "names": ["a", "b", "c"]
                }))],
            }],
            Made::File { kib } => vec![file("blob", "blob.bin", &file_bytes(*kib))],
            Made::Report { kib } => vec![
                FakeArtifact {
                    name: "report".into(),
                    parts: vec![FakePart::Text(format!("report: {kib} KiB attached"))],
                },
                file("blob", "blob.bin", &file_bytes(*kib)),
            ],
            Made::Url => vec![FakeArtifact {
                name: "chart".into(),
                parts: vec![FakePart::Url {
                    filename: "chart.png".into(),
                    media_type: "image/png".into(),
                    url: "https://example.invalid/chart.png".into(),
                }],
            }],
            Made::Chunks => vec![FakeArtifact {
                name: "log.txt".into(),
                parts: vec![FakePart::Text(CHUNKED_TEXT.into())],
            }],
            Made::Twins => vec![
                file("report", "report.txt", b"first report\n"),
                file("report", "report.txt", b"second report\n"),
            ],
            Made::Hostile => vec![
                file("../../x", "../../x", b"escape attempt\n"),
                file("evil", "ev\u{1b}[31mil\u{7}\n.txt", b"control characters\n"),
            ],
            Made::Many(n) => (0..*n)
                .map(|i| {
                    file(
                        &format!("f{i}"),
                        &format!("f{i}.txt"),
                        format!("{i}\n").as_bytes(),
                    )
                })
                .collect(),
        }
    }

    /// How many appended chunks a stream splits a text artifact into.
    pub(crate) fn chunks(&self) -> usize {
        if *self == Made::Chunks { 3 } else { 2 }
    }
}

/// The text of `artifact chunks`, whole once its three chunks are put together.
pub const CHUNKED_TEXT: &str = "alpha line\nbeta line\ngamma line\n";

/// The text of `tokens BYTES CHUNK`: chunk `i` is `i` zero-padded to CHUNK − 1 digits and a space
/// (the last one cut to what is left), so a chunk lost, doubled or moved shows.
pub fn token_text(bytes: usize, chunk: usize) -> String {
    let chunk = chunk.max(2);
    let mut text = String::with_capacity(bytes + chunk);
    let mut i = 0usize;
    while text.len() < bytes {
        text.push_str(&format!("{i:0w$} ", w = chunk - 1));
        i += 1;
    }
    text.truncate(bytes);
    text
}

/// The largest `tokens` text, and the most `flood` updates: a typo stays a benchmark's size.
const MAX_TOKEN_BYTES: usize = 256 << 20;
const MAX_FLOOD: usize = 100_000_000;

/// `slow N` accepts at most this many seconds, so a typo cannot build an absurd deadline.
const MAX_SLOW_SECS: f64 = 7.0 * 24.0 * 3600.0;

impl Script {
    /// The verb is the first word, case-insensitive; a malformed verb line (`slow x`) is just text
    /// to echo, because the fake worker never refuses a message.
    pub(crate) fn parse(text: &str) -> Script {
        let text = text.trim();
        let (verb, rest) = match text.split_once(char::is_whitespace) {
            Some((v, r)) => (v, r.trim()),
            None => (text, ""),
        };
        match verb.to_ascii_lowercase().as_str() {
            "slow" => match timed(rest) {
                Some((ms, words)) => Script::Slow { ms, words },
                None => Script::Echo(text.to_string()),
            },
            "slow-until" => {
                let (t, words) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                match t.parse::<i64>() {
                    Ok(unix_ms) => Script::SlowUntil {
                        unix_ms,
                        words: words.trim().to_string(),
                    },
                    Err(_) => Script::Echo(text.to_string()),
                }
            }
            "quiet" => match timed(rest) {
                Some((ms, words)) => Script::Quiet { ms, words },
                None => Script::Echo(text.to_string()),
            },
            "ask" => Script::Ask(rest.to_string()),
            "ask-after" => match timed(rest) {
                Some((ms, question)) => Script::AskAfter { ms, question },
                None => Script::Echo(text.to_string()),
            },
            "ask-elsewhere" => Script::AskElsewhere(rest.to_string()),
            "fail" => Script::Fail(if rest.is_empty() {
                "failed".to_string()
            } else {
                rest.to_string()
            }),
            "reject" if rest.is_empty() => Script::Reject,
            "auth" if rest.is_empty() => Script::Auth,
            "silent" if rest.is_empty() => Script::Silent,
            "artifact" => match Made::parse(rest) {
                Some(m) => Script::Artifacts(m),
                None => Script::Echo(text.to_string()),
            },
            "parts" => Script::Parts(String::new()),
            "tokens" => tokens(rest).unwrap_or_else(|| Script::Echo(text.to_string())),
            "flood" => flood(rest).unwrap_or_else(|| Script::Echo(text.to_string())),
            _ => Script::Echo(text.to_string()),
        }
    }
}

/// `BYTES CHUNK [S]` of `tokens`.
fn tokens(rest: &str) -> Option<Script> {
    let mut w = rest.split_whitespace();
    let bytes = w
        .next()?
        .parse::<usize>()
        .ok()
        .filter(|b| *b <= MAX_TOKEN_BYTES)?;
    let chunk = w
        .next()?
        .parse::<usize>()
        .ok()
        .filter(|c| (2..=bytes.max(2)).contains(c))?;
    let ms = match w.next() {
        Some(secs) => timed(secs)?.0,
        None => 0,
    };
    Some(Script::Tokens { bytes, chunk, ms })
}

/// `N S [RATE]` of `flood`.
fn flood(rest: &str) -> Option<Script> {
    let mut w = rest.split_whitespace();
    let updates = w
        .next()?
        .parse::<usize>()
        .ok()
        .filter(|n| *n <= MAX_FLOOD)?;
    let ms = timed(w.next()?)?.0;
    let rate = match w.next() {
        Some(r) => Some(r.parse::<u64>().ok().filter(|r| *r > 0)?),
        None => None,
    };
    Some(Script::Flood { updates, ms, rate })
}

/// `N <words>` of `slow` and `quiet`: N seconds (fractional, at most [`MAX_SLOW_SECS`]) in ms.
fn timed(rest: &str) -> Option<(u64, String)> {
    let (n, words) = match rest.split_once(char::is_whitespace) {
        Some((n, w)) => (n, w.trim()),
        None => (rest, ""),
    };
    match n.parse::<f64>() {
        // in range by the guard, so the cast neither wraps nor saturates
        Ok(secs) if (0.0..=MAX_SLOW_SECS).contains(&secs) => {
            Some(((secs * 1000.0).round() as u64, words.to_string()))
        }
        _ => None,
    }
}

/// A message as the task's history keeps it, already reduced to text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HistoryEntry {
    pub message_id: String,
    pub from_agent: bool,
    pub text: String,
}

/// Everything the server remembers about one task.
#[derive(Debug, Clone)]
pub(crate) struct TaskRecord {
    pub id: String,
    pub context_id: String,
    pub script: Script,
    /// The first user message, verbatim text.
    pub first: HistoryEntry,
    /// When the creating send arrived (ms since the worker started).
    pub created_ms: u64,
    /// The follow-up that resumed an ask/auth task: (arrival ms, the user's message).
    pub answer: Option<(u64, HistoryEntry)>,
    pub canceled_ms: Option<u64>,
}

/// What a task looks like at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Snapshot {
    pub state: TaskState,
    /// When the task entered `state` (ms since the worker started).
    pub since_ms: u64,
    /// The agent's status message (the question, the failure reason).
    pub status_text: Option<String>,
    /// The one result artifact's text, once completed.
    pub artifact: Option<String>,
    /// `artifact <kind>`'s artifacts, once completed.
    pub made: Vec<FakeArtifact>,
    pub history: Vec<HistoryEntry>,
}

impl TaskRecord {
    /// How many appended chunks a stream splits this task's text artifacts into.
    pub(crate) fn chunks(&self) -> usize {
        match &self.script {
            Script::Artifacts(m) => m.chunks(),
            Script::Tokens { bytes, chunk, .. } => bytes.div_ceil(*chunk).max(1),
            _ => 2,
        }
    }

    /// How many identical `working` updates a stream of this task sends before anything else,
    /// and how many a second (`None`: as fast as they are read).
    pub(crate) fn flood(&self) -> (usize, Option<u64>) {
        match self.script {
            Script::Flood { updates, rate, .. } => (updates, rate),
            _ => (0, None),
        }
    }

    pub(crate) fn snapshot(&self, now_ms: u64) -> Snapshot {
        let created = self.created_ms;
        let at = |state, since_ms, status_text: Option<&str>, artifact: Option<String>| Snapshot {
            state,
            since_ms,
            status_text: status_text.map(str::to_string),
            artifact,
            made: Vec::new(),
            history: vec![self.first.clone()],
        };
        // Only a live or interrupted task can be canceled (see `cancel`), so a cancel time wins.
        if let Some(canceled) = self.canceled_ms {
            return at(TaskState::Canceled, canceled, None, None);
        }
        let (waiting, prompt) = match &self.script {
            Script::Echo(text) | Script::Parts(text) => {
                return at(TaskState::Completed, created, None, Some(text.clone()));
            }
            Script::Artifacts(m) => {
                let mut s = at(TaskState::Completed, created, None, None);
                s.made = m.artifacts();
                return s;
            }
            Script::Slow { ms, .. } | Script::Tokens { ms, .. } | Script::Flood { ms, .. } => {
                let done_at = created.saturating_add(*ms);
                if now_ms < done_at {
                    return at(TaskState::Working, created, None, None);
                }
                return at(
                    TaskState::Completed,
                    done_at,
                    None,
                    Some(self.timed_result()),
                );
            }
            Script::Quiet { ms, words } => {
                let done_at = created.saturating_add(*ms);
                if now_ms < done_at {
                    return at(TaskState::Working, created, Some(words), None);
                }
                let mut s = at(TaskState::Completed, done_at, None, None);
                s.history.push(HistoryEntry {
                    message_id: format!("{}-answer", self.id),
                    from_agent: true,
                    text: words.clone(),
                });
                return s;
            }
            // Made a `slow` on arrival (`server.rs`); as written, it is done.
            Script::SlowUntil { .. } => {
                return at(
                    TaskState::Completed,
                    created,
                    None,
                    Some(self.timed_result()),
                );
            }
            Script::Fail(why) => return at(TaskState::Failed, created, Some(why), None),
            Script::Reject => return at(TaskState::Rejected, created, Some(REJECT_TEXT), None),
            Script::Silent => return at(TaskState::Submitted, created, None, None),
            Script::Ask(question) | Script::AskElsewhere(question) => {
                (TaskState::InputRequired, question.as_str())
            }
            Script::AskAfter { ms, question } => {
                if self.answer.is_none() && now_ms < created.saturating_add(*ms) {
                    return at(TaskState::Working, created, None, None);
                }
                (TaskState::InputRequired, question.as_str())
            }
            Script::Auth => (TaskState::AuthRequired, AUTH_TEXT),
        };
        // ask/auth: waiting until answered, then completed echoing the answer, with the agent's
        // prompt and the user's answer appended to the history.
        match &self.answer {
            None => at(waiting, created, Some(prompt), None),
            Some((answered, answer)) => {
                let mut s = at(
                    TaskState::Completed,
                    *answered,
                    None,
                    Some(format!("you said: {}", answer.text)),
                );
                s.history.push(HistoryEntry {
                    message_id: format!("{}-prompt", self.id),
                    from_agent: true,
                    text: prompt.to_string(),
                });
                s.history.push(answer.clone());
                s
            }
        }
    }

    /// What a task that ends by itself at its time answers (`slow`, `tokens`, `flood`).
    fn timed_result(&self) -> String {
        match &self.script {
            Script::Tokens { bytes, chunk, .. } => token_text(*bytes, *chunk),
            Script::Flood { .. } => "flooded".into(),
            Script::Slow { words, .. } | Script::SlowUntil { words, .. } => {
                format!("done: {words}")
            }
            _ => String::new(),
        }
    }

    /// When this task changes by itself next (a `slow` or `quiet` task's end), if it is live.
    pub(crate) fn wakes_at(&self, now_ms: u64) -> Option<u64> {
        match &self.script {
            Script::Slow { ms, .. }
            | Script::AskAfter { ms, .. }
            | Script::Quiet { ms, .. }
            | Script::Tokens { ms, .. }
            | Script::Flood { ms, .. } => {
                Some(self.created_ms.saturating_add(*ms)).filter(|at| *at > now_ms)
            }
            _ => None,
        }
    }

    /// The task as a non-blocking send returns it: its first state, before any work (docs/a2a.md:
    /// the Python and JS SDKs answer `submitted`).
    pub(crate) fn submitted(&self) -> Snapshot {
        Snapshot {
            state: TaskState::Submitted,
            since_ms: self.created_ms,
            status_text: None,
            artifact: None,
            made: Vec::new(),
            history: vec![self.first.clone()],
        }
    }

    /// Records a cancel. `Err` carries the terminal state that makes the task not cancelable.
    pub(crate) fn cancel(&mut self, now_ms: u64) -> Result<(), TaskState> {
        let state = self.snapshot(now_ms).state;
        if state.is_terminal() {
            return Err(state);
        }
        self.canceled_ms = Some(now_ms);
        Ok(())
    }

    /// Records a follow-up message. Only an input-required or auth-required task takes one.
    pub(crate) fn follow_up(&mut self, now_ms: u64, msg: HistoryEntry) -> Result<(), TaskState> {
        let state = self.snapshot(now_ms).state;
        if !state.is_waiting() {
            return Err(state);
        }
        self.answer = Some((now_ms, msg));
        Ok(())
    }
}

const AUTH_TEXT: &str =
    "authorization required: authorize out of band, then send any message on this task";
const REJECT_TEXT: &str = "rejected";

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> HistoryEntry {
        HistoryEntry {
            message_id: "m1".into(),
            from_agent: false,
            text: text.into(),
        }
    }

    fn record(text: &str, created_ms: u64) -> TaskRecord {
        TaskRecord {
            id: "t1".into(),
            context_id: "c1".into(),
            script: Script::parse(text),
            first: user(text),
            created_ms,
            answer: None,
            canceled_ms: None,
        }
    }

    #[test]
    fn parses_every_verb() {
        let cases = [
            (
                "slow 2 build it",
                Script::Slow {
                    ms: 2000,
                    words: "build it".into(),
                },
            ),
            (
                "SLOW 0.3 x",
                Script::Slow {
                    ms: 300,
                    words: "x".into(),
                },
            ),
            (
                "slow 1",
                Script::Slow {
                    ms: 1000,
                    words: "".into(),
                },
            ),
            ("slow soon x", Script::Echo("slow soon x".into())),
            (
                "quiet 1 the answer",
                Script::Quiet {
                    ms: 1000,
                    words: "the answer".into(),
                },
            ),
            ("ask-elsewhere q?", Script::AskElsewhere("q?".into())),
            (
                "ask-after 2 which colour?",
                Script::AskAfter {
                    ms: 2000,
                    question: "which colour?".into(),
                },
            ),
            ("slow -1 x", Script::Echo("slow -1 x".into())),
            ("slow NaN x", Script::Echo("slow NaN x".into())),
            ("ask what colour?", Script::Ask("what colour?".into())),
            ("fail disk full", Script::Fail("disk full".into())),
            ("fail", Script::Fail("failed".into())),
            ("reject", Script::Reject),
            ("  auth ", Script::Auth),
            ("silent", Script::Silent),
            ("silent please", Script::Echo("silent please".into())),
            ("hello world", Script::Echo("hello world".into())),
            ("", Script::Echo("".into())),
        ];
        for (text, want) in cases {
            assert_eq!(Script::parse(text), want, "{text:?}");
        }
    }

    #[test]
    fn slow_is_working_until_its_deadline() {
        let r = record("slow 2 the words", 1000);
        assert_eq!(r.submitted().state, TaskState::Submitted);
        assert_eq!(r.snapshot(1000).state, TaskState::Working);
        assert_eq!(r.snapshot(2999).state, TaskState::Working);
        let done = r.snapshot(3000);
        assert_eq!(done.state, TaskState::Completed);
        assert_eq!(done.since_ms, 3000);
        assert_eq!(done.artifact.as_deref(), Some("done: the words"));
    }

    #[test]
    fn ask_waits_then_echoes_the_answer() {
        let mut r = record("ask which branch?", 0);
        let s = r.snapshot(50);
        assert_eq!(s.state, TaskState::InputRequired);
        assert_eq!(s.status_text.as_deref(), Some("which branch?"));
        r.follow_up(60, user("main")).unwrap();
        let s = r.snapshot(70);
        assert_eq!(s.state, TaskState::Completed);
        assert_eq!(s.artifact.as_deref(), Some("you said: main"));
        assert_eq!(s.history.len(), 3);
        assert!(s.history[1].from_agent);
        assert_eq!(r.follow_up(80, user("again")), Err(TaskState::Completed));
    }

    #[test]
    fn cancel_only_before_the_end() {
        let mut r = record("slow 1 x", 0);
        r.cancel(500).unwrap();
        assert_eq!(r.snapshot(5000).state, TaskState::Canceled);
        assert_eq!(r.cancel(6000), Err(TaskState::Canceled));
        let mut done = record("hello", 0);
        assert_eq!(done.cancel(1), Err(TaskState::Completed));
        let mut asked = record("ask q", 0);
        asked.cancel(1).unwrap();
        assert_eq!(asked.snapshot(2).state, TaskState::Canceled);
    }

    #[test]
    fn quiet_answers_only_in_a_working_message_and_the_history() {
        let r = record("quiet 1 forty-two", 0);
        let s = r.snapshot(500);
        assert_eq!(
            (s.state, s.status_text.as_deref()),
            (TaskState::Working, Some("forty-two"))
        );
        let s = r.snapshot(1000);
        assert_eq!(
            (s.state, s.status_text, s.artifact),
            (TaskState::Completed, None, None)
        );
        assert!(
            s.history
                .last()
                .is_some_and(|h| h.from_agent && h.text == "forty-two")
        );
        assert_eq!(r.wakes_at(500), Some(1000));
        assert_eq!(r.wakes_at(1000), None);
    }

    #[test]
    fn the_other_verbs() {
        let s = record("fail no disk", 0).snapshot(0);
        assert_eq!(
            (s.state, s.status_text.as_deref()),
            (TaskState::Failed, Some("no disk"))
        );
        assert_eq!(record("reject", 0).snapshot(0).state, TaskState::Rejected);
        assert_eq!(record("auth", 0).snapshot(0).state, TaskState::AuthRequired);
        assert_eq!(record("silent", 0).snapshot(99).state, TaskState::Submitted);
        let s = record("hi there", 0).snapshot(0);
        assert_eq!(
            (s.state, s.artifact.as_deref()),
            (TaskState::Completed, Some("hi there"))
        );
    }
}
