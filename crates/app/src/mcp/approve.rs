//! A worker's permission question put to the person at the session, through Claude Code's own
//! form (docs/claude-code.md "Asking the person"): an MCP elicitation while Claude's `send` call
//! waits, or, with `[claude] native_tasks`, the MCP task's `inputRequests`, answered with
//! `tasks/update`. Claude may propose an answer; the person's choice is what is sent.

use a2a_mod_core::fence;
use a2a_mod_core::status::Verdict;
use a2a_mod_core::text::one_line;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Mutex;

/// The most of Claude's proposal the form shows, in characters.
const PROPOSAL_CHARS: usize = 300;

/// What the person is asked about.
pub(super) struct Ask<'a> {
    pub worker: &'a str,
    pub task_id: &'a str,
    /// What the run would do, as the status line shows it (`Bash rm -rf build`).
    pub what: &'a str,
    /// Claude's own answer, shown as a suggestion only.
    pub proposal: Option<&'a str>,
}

/// What the person did with the form.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// The reply to send: the person's choice (a decline is a deny).
    Reply(String),
    /// Dismissed without an answer: nothing is sent, the question still waits.
    Dismissed,
}

/// The form: the request in the message, the answer a required choice (no default: the person
/// picks, rather than accepting what Claude proposed), and a reason for a deny, which the
/// worker's Claude reads.
pub(super) fn form(a: &Ask<'_>) -> ElicitRequestParams {
    let mut message = format!(
        "{} (task {}) asks to run, on its machine:\n  {}\n",
        fence::shown(a.worker),
        fence::shown(a.task_id),
        one_line(a.what, 500)
    );
    if let Some(p) = a.proposal.map(str::trim).filter(|p| !p.is_empty()) {
        message.push_str(&format!(
            "Claude suggests: {}\n",
            one_line(p, PROPOSAL_CHARS)
        ));
    }
    message.push_str("Your answer is what is sent.");
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message,
        requested_schema: schema(),
    }
}

fn schema() -> ElicitationSchema {
    let v = json!({
        "type": "object",
        "properties": {
            "answer": {
                "type": "string",
                "title": "Answer",
                "oneOf": [
                    {"const": "allow", "title": "Allow once"},
                    {"const": "always", "title": "Allow always (this conversation)"},
                    {"const": "deny", "title": "Deny"}
                ]
            },
            "reason": {
                "type": "string",
                "title": "Reason",
                "description": "For a deny: the worker's Claude reads it",
                "maxLength": 500
            }
        },
        "required": ["answer"]
    });
    // invariant: the literal above is a valid elicitation schema; a unit test builds it.
    serde_json::from_value(v).expect("the approval form is a valid elicitation schema")
}

/// The reply the person's answer makes.
pub(super) fn read(r: &ElicitResult) -> Answer {
    match r.action {
        ElicitationAction::Decline => Answer::Reply(Verdict::Deny.reply("the user declined it")),
        ElicitationAction::Accept => {
            let content = r.content.as_ref();
            let field = |k: &str| content.and_then(|c| c[k].as_str()).unwrap_or("");
            let reason = one_line(field("reason"), 500);
            match field("answer") {
                "allow" => Answer::Reply(Verdict::Allow.reply("")),
                "always" => Answer::Reply(Verdict::Always.reply("")),
                // A deny, or an answer the form never offered: never read as an allow.
                _ => Answer::Reply(Verdict::Deny.reply(&reason)),
            }
        }
        // A cancel, or an action of a later protocol: no answer given.
        _ => Answer::Dismissed,
    }
}

/// What a session's native tasks asked in their forms, by MCP task id: the proposal Claude sent
/// with the call, and whether the person dismissed the form (the MCP task then ends, telling
/// Claude so, while the worker's question still waits).
#[derive(Default)]
pub(super) struct Forms(Mutex<HashMap<String, Form>>);

#[derive(Default, Clone)]
pub(super) struct Form {
    pub proposal: Option<String>,
    pub dismissed: bool,
}

impl Forms {
    pub fn get(&self, id: &str) -> Form {
        self.0
            .lock()
            .map(|m| m.get(id).cloned().unwrap_or_default())
            .unwrap_or_default()
    }

    pub fn set(&self, id: &str, f: impl FnOnce(&mut Form)) {
        if let Ok(mut m) = self.0.lock() {
            f(m.entry(id.to_string()).or_default());
        }
    }
}

/// What Claude reads when the person dismissed the form.
pub(super) fn dismissed(worker: &str, task_id: &str) -> String {
    let (w, id) = (fence::shown(worker), fence::shown(task_id));
    format!(
        "Nothing was sent: the user closed {w}'s permission request (task {id}) without answering; \
         it still waits. Leave it to them: they can answer later with `a2a-mod approve {id} allow` \
         (or `always`, or `deny <reason>`)."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(content: serde_json::Value) -> ElicitResult {
        ElicitResult::new(ElicitationAction::Accept).with_content(content)
    }

    #[test]
    fn the_persons_choice_is_the_reply() {
        assert_eq!(
            read(&accepted(json!({"answer": "allow", "reason": "x"}))),
            Answer::Reply("allow".into())
        );
        assert_eq!(
            read(&accepted(json!({"answer": "always"}))),
            Answer::Reply("allow always".into())
        );
        assert_eq!(
            read(&accepted(
                json!({"answer": "deny", "reason": "the build\ndir is shared"})
            )),
            Answer::Reply("deny: the build dir is shared".into())
        );
        assert_eq!(
            read(&accepted(json!({"answer": "yes please"}))),
            Answer::Reply("deny".into()),
            "what the form never offered is no allow"
        );
        assert_eq!(
            read(&ElicitResult::new(ElicitationAction::Decline)),
            Answer::Reply("deny: the user declined it".into())
        );
        assert_eq!(
            read(&ElicitResult::new(ElicitationAction::Cancel)),
            Answer::Dismissed
        );
    }

    #[test]
    fn the_form_shows_the_request_and_claudes_suggestion_and_asks_for_a_choice() {
        let f = form(&Ask {
            worker: "buildbox",
            task_id: "t1",
            what: "Bash rm -rf build",
            proposal: Some("allow"),
        });
        let v = serde_json::to_value(&f).unwrap();
        let message = v["message"].as_str().unwrap();
        assert!(message.contains("buildbox (task t1)"), "{message}");
        assert!(message.contains("Bash rm -rf build"), "{message}");
        assert!(message.contains("Claude suggests: allow"), "{message}");
        assert_eq!(v["mode"], "form");
        assert_eq!(v["requestedSchema"]["required"], json!(["answer"]));
        assert!(v["requestedSchema"]["properties"]["answer"]["default"].is_null());
    }
}
