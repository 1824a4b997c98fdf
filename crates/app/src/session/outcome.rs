//! What `send`, `task` and `cancel` answer: the [`Outcome`] and its note, the worker's words
//! fenced (core::fence), a long result named by the file it was saved whole in.

use super::{MAX_RESULT_CHARS, Session};
use a2a_mod_a2a::TaskView;
use a2a_mod_core::bounds::row_keeps;
use a2a_mod_core::fence::{self, TaskFacts};
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_core::task::TaskState;
use a2a_mod_results::note;
use serde::Serialize;

/// The structured result of `send`, `task` and `cancel`: docs/commands-and-tools.md's fields plus `note`.
/// The tools return it as `structuredContent` and `--json` prints it, so both are the same.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// What happened and what to do next; the worker's own words are fenced as untrusted.
    /// (Claude Code shows the model only `structuredContent`, so the note lives here.)
    pub note: String,
    pub worker: String,
    pub task_id: String,
    pub context_id: Option<String>,
    pub state: TaskState,
    /// The worker's result text (worker's words, not instructions), cleaned and bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What the worker asks, when the state is input-required or auth-required.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// True: still running; a2a-mod watches it and a message will come when it ends.
    pub tracked: bool,
    /// What the worker made: each artifact part saved under the session's results
    /// folder (`path`, to read with the Read tool), listed by `url`, or `dropped` with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<a2a_mod_core::artifact::Kept>,
}

impl Session {
    /// `saved`: the whole's length when the row holds the head of a result saved whole
    /// ([`for_row`](a2a_mod_results::overflow::for_row)), so the note names that file.
    pub(super) fn note(&self, v: &TaskView, worker: &str, saved: Option<u64>) -> String {
        let facts = TaskFacts {
            worker,
            task_id: &v.task_id,
            state: v.state,
            end: None,
            text: v.text.as_deref(),
            question: v.question.as_deref(),
            last_error: None,
            failed_checks: 0,
        };
        let otherwise = |e: anyhow::Error| format!("the whole of it could not be saved: {e:#}");
        let whole = note::Whole::Saved {
            otherwise: &otherwise,
        };
        let mut told = note::note(&self.ctx, &self.id, (facts, saved), MAX_RESULT_CHARS, whole);
        if let Some(c) = v
            .context_id
            .as_deref()
            .filter(|c| a2a_mod_core::bounds::plain_id(c))
            && !v.state.is_live()
            && !v.state.is_waiting()
        {
            // The id is the worker's choice: fenced as its words, however plain it looks.
            told.push_str(&format!(
                "\nTo go on with this conversation, call send with worker \"{}\" and as contextId the id the worker gave it, fenced below (a new task in the same context):\n{}",
                fence::shown(worker),
                fence::fence(worker, &v.task_id, c)
            ));
        }
        told
    }

    pub(super) fn outcome(&self, v: &TaskView, worker: &str, tracked: bool) -> Outcome {
        let key = TaskKey::new(worker, &v.task_id);
        // A long result was saved whole before its row was recorded, and the row says how long;
        // a text a row keeps whole names no file (and needs no look at the row).
        let saved = match v.text.as_deref().and_then(row_keeps) {
            Some(_) => self.store(|s| s.get(&key)).ok().flatten(),
            None => None,
        }
        .and_then(|row| row.result_chars);
        // Saved once the task ended or waits, so the files are there before Claude reads of them.
        let artifacts = if v.state.is_live() {
            Vec::new()
        } else {
            let spilled = |i: usize| {
                v.spills
                    .reader(i)
                    .map(|r| Box::new(r) as Box<dyn std::io::Read + '_>)
            };
            a2a_mod_results::artifacts::save(
                &self.ctx,
                &self.id,
                &key,
                &v.artifacts,
                self.config.results.max_task_bytes(),
                &spilled,
            )
        };
        let listed = a2a_mod_results::artifacts::summary(
            &self.ctx,
            &self.id,
            &key,
            &artifacts,
            a2a_mod_core::bounds::TOOL_ARTIFACT_CHARS,
        );
        // Worker text outside the note's fence is still the worker's: cleaned and bounded too.
        let worker_words = |t: &Option<String>| {
            t.as_deref().map(|t| {
                let clean = fence::clean_multiline(t);
                fence::bound(&clean, MAX_RESULT_CHARS).0.to_string()
            })
        };
        Outcome {
            note: self.note(v, worker, saved) + &listed,
            worker: worker.to_string(),
            task_id: v.task_id.clone(),
            context_id: v.context_id.clone(),
            state: v.state,
            text: worker_words(&v.text),
            question: worker_words(&v.question),
            tracked,
            artifacts,
        }
    }
}
