//! A served task as the server keeps it, and what a run reports about it. Pure: the engine
//! applies a run's reports here and writes the result to the store and the streams.

use a2a_mod_core::task::TaskState;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message of a task's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Msg {
    pub message_id: String,
    /// From the agent (else from the client).
    pub agent: bool,
    pub text: String,
}

/// A task: what GetTask shows, and the store keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub context_id: String,
    pub agent: String,
    pub state: TaskState,
    /// The status message's text (a tool in use, a failure's words).
    pub status_text: Option<String>,
    /// The answer: one text artifact, the run's text in the order it came.
    pub answer: String,
    pub history: Vec<Msg>,
    /// Cost, turns, duration, model, session (`Report::Ended`).
    pub metadata: Map<String, Value>,
    /// What the run changed in the agent's git work tree, as a patch (`changes.rs`): the
    /// `changes.patch` artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<String>,
    /// The question the task waits on, structured (`ask.rs` [`crate::ask::Asked::data`]): a data
    /// part beside the status line while it is `input-required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<Value>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// What changed, as a stream tells it (the task itself says the rest).
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    /// The state or the status message.
    Status,
    /// More of the answer: `append` false for its first piece.
    Chunk { text: String, append: bool },
    /// The run's changes, whole (`Task::changes`).
    Changes,
}

/// What a run tells the engine, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// The run has started (the task leaves `submitted`).
    Started,
    /// More of the answer.
    Text(String),
    /// A step worth a status line ("Bash: cargo test").
    Step(String),
    /// What the run changed in a git work tree: the patch (`None` when too large to return),
    /// and the files it touches.
    Changes {
        patch: Option<String>,
        files: Vec<String>,
    },
    /// The run asks the client (a permission prompt, Claude's question): the task waits,
    /// `input-required`, with this line as its status message and the question structured
    /// beside it when the run says it so.
    Ask { line: String, data: Option<Value> },
    /// The client's reply to the question (the engine's report, not the run's): the task goes
    /// on, `working`.
    Answer(Msg),
    /// What the client allowed for good ("allow always"): the engine keeps it for the context's
    /// later runs; nothing shows.
    Allowed(Grants),
    /// The end: the state, the words for a failure, and what the run cost.
    Ended {
        state: TaskState,
        words: Option<String>,
        metadata: Map<String, Value>,
    },
}

/// What a context's client allowed for good ("allow always"): Claude Code permission rules
/// (`Bash(echo x *)`), and folders its runs may work in besides the agent's (Claude Code's
/// `addDirectories` suggestion: a command that writes a file through a redirection needs it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    pub rules: Vec<String>,
    pub dirs: Vec<String>,
}

impl Grants {
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty() && self.dirs.is_empty()
    }
}

/// What the engine hands a run that asked.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// The client's words.
    Said(String),
    /// Nobody answered within this many seconds.
    TimedOut(u64),
}

/// Whether a run may still change a task: it runs, waits for one, or waits for an answer
/// (`input-required` is paused, not over: its run is still there).
pub fn running(state: TaskState) -> bool {
    state.is_live() || state == TaskState::InputRequired
}

/// The most a status message holds, in characters: one line on a client's screen.
pub const STEP_CHARS: usize = 160;

/// Answers longer than this are cut (the rest of a run's text is dropped, and the task says so):
/// a client reads the whole answer in one GetTask, and the server keeps it in memory.
pub const MAX_ANSWER_BYTES: usize = 8 << 20;

impl Task {
    pub fn new(id: &str, context_id: &str, agent: &str, now_ms: i64) -> Task {
        Task {
            id: id.into(),
            context_id: context_id.into(),
            agent: agent.into(),
            state: TaskState::Submitted,
            status_text: None,
            answer: String::new(),
            history: Vec::new(),
            metadata: Map::new(),
            changes: None,
            ask: None,
            created_ms: now_ms,
            updated_ms: now_ms,
        }
    }

    /// The task less its answer and history: what a stream event names of it (the run's
    /// changes kept: set once, at the end).
    pub fn head(&self) -> Task {
        Task {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            agent: self.agent.clone(),
            state: self.state,
            status_text: self.status_text.clone(),
            answer: String::new(),
            history: Vec::new(),
            metadata: self.metadata.clone(),
            // Set at the run's end only, and what its `Update::Changes` event carries.
            changes: self.changes.clone(),
            ask: self.ask.clone(),
            created_ms: self.created_ms,
            updated_ms: self.updated_ms,
        }
    }

    pub fn artifact_id(&self) -> String {
        format!("{}-answer", self.id)
    }

    /// Applies a run's report; returns the stream's update, or `None` when nothing shows
    /// (a report after the end, an empty chunk).
    pub fn apply(&mut self, r: Report, now_ms: i64) -> Option<Update> {
        if !running(self.state) {
            return None;
        }
        self.updated_ms = now_ms;
        // A question is over once anything but more of the answer (or a grant) comes.
        if !matches!(r, Report::Text(_) | Report::Allowed(_)) {
            self.ask = None;
        }
        match r {
            Report::Started => {
                self.state = TaskState::Working;
                Some(Update::Status)
            }
            Report::Text(t) => {
                let room = MAX_ANSWER_BYTES.saturating_sub(self.answer.len());
                let t = cut_bytes(&t, room);
                if t.is_empty() {
                    return None;
                }
                let append = !self.answer.is_empty();
                self.answer.push_str(t);
                Some(Update::Chunk {
                    text: t.to_string(),
                    append,
                })
            }
            Report::Step(line) => {
                self.state = TaskState::Working;
                self.status_text = Some(line);
                Some(Update::Status)
            }
            Report::Ask {
                line: question,
                data,
            } => {
                self.ask = data;
                self.state = TaskState::InputRequired;
                self.history.push(Msg {
                    message_id: format!("{}-ask-{}", self.id, self.history.len()),
                    agent: true,
                    text: question.clone(),
                });
                self.status_text = Some(question);
                Some(Update::Status)
            }
            Report::Answer(msg) => {
                self.state = TaskState::Working;
                self.status_text = None;
                self.history.push(msg);
                Some(Update::Status)
            }
            Report::Allowed(_) => None,
            Report::Changes { patch, files } => {
                self.metadata
                    .insert("changedFiles".into(), Value::from(files));
                if patch.is_none() {
                    self.metadata.insert(
                        "changesPatch".into(),
                        Value::from("left out: over 8 MiB (see the agent's folder)"),
                    );
                }
                self.changes = patch;
                // Without a patch the metadata rides with the end.
                self.changes.is_some().then_some(Update::Changes)
            }
            Report::Ended {
                state,
                words,
                metadata,
            } => {
                self.state = state;
                self.status_text = words;
                self.metadata.extend(metadata);
                if let Some(w) = &self.status_text {
                    self.history.push(Msg {
                        message_id: format!("{}-end", self.id),
                        agent: true,
                        text: w.clone(),
                    });
                }
                Some(Update::Status)
            }
        }
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn cut_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// One line naming a tool use as a status message: the tool and what it acts on
/// ("Bash: cargo test", "Edit: src/lib.rs"), cleaned of control sequences and cut.
pub fn step_line(tool: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str);
    let what = match tool {
        "Bash" => field("command"),
        "Read" | "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => {
            field("file_path").or_else(|| field("notebook_path"))
        }
        "Grep" | "Glob" => field("pattern"),
        "WebFetch" => field("url"),
        "WebSearch" => field("query"),
        "Task" | "Agent" => field("description"),
        _ => None,
    }
    .or_else(|| {
        input
            .as_object()
            .and_then(|o| o.values().find_map(Value::as_str))
    });
    let line = match what {
        Some(w) => format!("{tool}: {w}"),
        None => tool.to_string(),
    };
    a2a_mod_core::text::one_line(&line, STEP_CHARS)
}

/// One change as the streams tell it, with the status it had then.
#[derive(Debug, Clone)]
pub struct Event {
    pub update: Update,
    pub state: TaskState,
    pub status_text: Option<String>,
    pub at_ms: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_step_is_one_clean_line() {
        assert_eq!(
            step_line(
                "Bash",
                &json!({"command": "cargo test", "description": "x"})
            ),
            "Bash: cargo test"
        );
        assert_eq!(
            step_line(
                "Edit",
                &json!({"file_path": "src/lib.rs", "old_string": "a"})
            ),
            "Edit: src/lib.rs"
        );
        assert_eq!(
            step_line("mcp__x__y", &json!({"n": 1, "q": "what"})),
            "mcp__x__y: what"
        );
        assert_eq!(step_line("TodoWrite", &json!({"todos": []})), "TodoWrite");
        let hostile = step_line(
            "Bash",
            &json!({"command": "echo \u{1b}]0;pwned\u{7}\nrm -rf x"}),
        );
        assert!(!hostile.chars().any(char::is_control), "{hostile:?}");
        let long = step_line("Bash", &json!({"command": "x".repeat(1000)}));
        assert!(long.chars().count() <= STEP_CHARS, "{}", long.len());
    }

    #[test]
    fn a_task_takes_reports_until_it_ends() {
        let mut t = Task::new("t", "c", "a", 1);
        assert_eq!(t.apply(Report::Started, 2), Some(Update::Status));
        assert_eq!(
            t.apply(Report::Text("He".into()), 3),
            Some(Update::Chunk {
                text: "He".into(),
                append: false
            })
        );
        assert_eq!(
            t.apply(Report::Text("llo".into()), 3),
            Some(Update::Chunk {
                text: "llo".into(),
                append: true
            })
        );
        assert_eq!(t.apply(Report::Text(String::new()), 3), None);
        t.apply(
            Report::Ended {
                state: TaskState::Completed,
                words: None,
                metadata: Map::new(),
            },
            4,
        );
        assert_eq!(
            (t.state, t.answer.as_str()),
            (TaskState::Completed, "Hello")
        );
        assert_eq!(t.apply(Report::Text("late".into()), 5), None);
        assert_eq!(t.answer, "Hello");
    }

    #[test]
    fn an_answer_is_bounded_on_a_char_boundary() {
        let mut t = Task::new("t", "c", "a", 1);
        t.answer = "x".repeat(MAX_ANSWER_BYTES - 1);
        t.apply(Report::Text("é".into()), 2);
        assert_eq!(t.answer.len(), MAX_ANSWER_BYTES - 1);
        t.apply(Report::Text("y".into()), 2);
        assert_eq!(t.answer.len(), MAX_ANSWER_BYTES);
    }
}
