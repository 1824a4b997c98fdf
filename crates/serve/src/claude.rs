//! The Claude Code executor: a task is one headless run,
//! `claude -p --output-format stream-json --input-format stream-json --verbose
//! --include-partial-messages`, in the agent's dir, with `--session-id` for a context's first run
//! and `--resume` for a follow-up (docs/serve.md records what the CLI does with each).
//!
//! The run's stdout is read line by line (each line bounded): text deltas of the main
//! conversation are the answer's chunks, each tool use a status line, the `result` event the end
//! with its cost. serve is the run's permission host (`--permission-prompt-tool stdio`): a tool
//! use its rules do not cover, or Claude's own question, comes as a control request and goes to
//! the client as `input-required` (`ask.rs`); the client's reply is the control response. A run
//! is its own process group: a cancel sends SIGTERM to the group, then
//! SIGKILL after the grace; on Linux the run also gets SIGTERM if serve itself dies.

use crate::ask::Asked;
use crate::engine::{Executor, Job, Session};
use crate::process::{failure, next_line, stderr_tail, stop_group};
use crate::task::{Grants, Reply, Report, step_line};
use a2a_mod_core::task::TaskState;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncWriteExt as _, BufReader};
use tokio::sync::{mpsc, watch};

/// How serve starts Claude Code.
#[derive(Debug, Clone)]
pub struct Claude {
    /// `claude` on `PATH`, or `A2A_MOD_CLAUDE_BIN`.
    pub bin: PathBuf,
    /// Variables the run must not inherit: serve's own tokens, and what would make Claude Code
    /// think it runs inside another Claude Code.
    pub scrub: Vec<String>,
    /// Between SIGTERM and SIGKILL when a run is canceled.
    pub grace: Duration,
}

impl Claude {
    /// The arguments of one run (no prompt: it goes on stdin as a stream-json user message).
    pub fn args(job: &Job) -> Vec<String> {
        let mut a: Vec<String> = [
            "-p",
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            // serve answers permission prompts itself, by asking the client.
            "--permission-prompt-tool",
            "stdio",
        ]
        .map(String::from)
        .into();
        match &job.session {
            Session::New(id) => a.extend(["--session-id".into(), id.clone()]),
            Session::Resume(id) => a.extend(["--resume".into(), id.clone()]),
        }
        let c = &job.agent.config;
        if let Some(m) = &c.model {
            a.extend(["--model".into(), m.clone()]);
        }
        // `default` is no flag: 2.1.332 takes no `--permission-mode default`.
        if let Some(m) = c.permission_mode.as_ref().filter(|m| *m != "default") {
            a.extend(["--permission-mode".into(), m.clone()]);
        }
        if let Some(b) = c.max_budget_usd {
            a.extend(["--max-budget-usd".into(), b.to_string()]);
        }
        if let Some(p) = &c.append_system_prompt {
            a.extend(["--append-system-prompt".into(), p.clone()]);
        }
        // One flag per rule: a rule may hold spaces (`Bash(cargo test:*)`). The context's own
        // ("allow always") after the agent's.
        for t in c.allowed_tools.iter().chain(&job.allowed.rules) {
            a.extend(["--allowedTools".into(), t.clone()]);
        }
        for d in &job.allowed.dirs {
            a.extend(["--add-dir".into(), d.clone()]);
        }
        a
    }

    fn command(&self, job: &Job) -> tokio::process::Command {
        let mut cmd = crate::process::command(self.bin.as_os_str(), job, &self.scrub);
        cmd.args(Self::args(job));
        cmd
    }
}

impl Executor for Claude {
    fn run(
        &self,
        job: Job,
        reports: mpsc::Sender<Report>,
        stop: watch::Receiver<bool>,
        mut replies: mpsc::UnboundedReceiver<Reply>,
    ) -> BoxFuture<'static, ()> {
        let me = self.clone();
        Box::pin(async move {
            let mut job = job;
            let mut outcome = run(
                me.command(&job),
                &job,
                &reports,
                stop.clone(),
                &mut replies,
                me.grace,
            )
            .await;
            // A context whose first run left no conversation (it failed or was canceled before
            // Claude Code wrote one): its follow-up starts the conversation instead of failing.
            if let (Err(RunEnd::NoConversation), Session::Resume(id)) = (&outcome, &job.session) {
                tracing::info!(task = %job.task_id, "no conversation {id} to resume; starting it");
                job.session = Session::New(id.clone());
                outcome = run(
                    me.command(&job),
                    &job,
                    &reports,
                    stop,
                    &mut replies,
                    me.grace,
                )
                .await;
            }
            let words = match outcome {
                Ok(()) => return,
                Err(RunEnd::Failed(why)) => why,
                Err(RunEnd::NoConversation) => "Claude Code found no conversation to resume".into(),
            };
            tracing::warn!(task = %job.task_id, "run failed: {words}");
            let _ = reports
                .send(Report::Ended {
                    state: TaskState::Failed,
                    words: Some(words),
                    metadata: Map::new(),
                })
                .await;
        })
    }
}

/// How a run ended without reporting its end.
#[derive(Debug)]
enum RunEnd {
    /// It gave no `result`: the failure's words.
    Failed(String),
    /// `--resume` found no conversation with that id (nothing was reported).
    NoConversation,
}

/// What Claude Code says when `--resume` names no conversation (2.1.332, docs/serve.md).
const NO_CONVERSATION: &str = "No conversation found with session ID";

/// One run to its end. `Err` when the run gave no `result` (or one saying there is no
/// conversation to resume); a stopped run returns `Ok` with no end reported (the engine ends it
/// `canceled`).
async fn run(
    mut cmd: tokio::process::Command,
    job: &Job,
    reports: &mpsc::Sender<Report>,
    mut stop: watch::Receiver<bool>,
    replies: &mut mpsc::UnboundedReceiver<Reply>,
    grace: Duration,
) -> Result<(), RunEnd> {
    let mut child = cmd.spawn().map_err(|e| {
        RunEnd::Failed(format!(
            "cannot start Claude Code ({}): {e}",
            cmd.as_std().get_program().to_string_lossy()
        ))
    })?;
    let pid = child.id();
    let mut stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let tail = stderr_tail(child.stderr.take());
    let prompt = json!({"type": "user", "message": {"role": "user", "content": job.text}});
    if let Some(i) = stdin.as_mut() {
        write_line(i, &prompt).await;
    }
    let mut reader = BufReader::new(
        stdout.ok_or_else(|| RunEnd::Failed("Claude Code's stdout is not readable".into()))?,
    );
    let mut state = Reading::default();
    let mut line = Vec::new();
    let mut got_result = false;
    // The question the run waits on (one at a time: the CLI waits for each answer).
    let mut asked: Option<Asked> = None;
    // What the context's client allowed for good, and what it allows during this run.
    let mut grants = job.allowed.clone();
    loop {
        tokio::select! {
            r = next_line(&mut reader, &mut line) => match r {
                Ok(true) => {
                    let Ok(v) = serde_json::from_slice::<Value>(&line) else {
                        continue;
                    };
                    if let Some(a) = Asked::read(&v) {
                        tracing::debug!(task = %job.task_id, "asked: {}", v["request"]);
                        if answered_by_grant(&a, &grants, stdin.as_mut()).await {
                            continue;
                        }
                        let (q, data) = (a.question(), Some(a.data()));
                        asked = Some(a);
                        if reports.send(Report::Ask { line: q, data }).await.is_err() {
                            break;
                        }
                        continue;
                    }
                    if let (Some(answer), Some(i)) = (crate::ask::unsupported(&v), stdin.as_mut()) {
                        write_line(i, &answer).await;
                        continue;
                    }
                    for rep in state.read(&v) {
                        if let Report::Ended { state: TaskState::Failed, words: Some(w), .. } = &rep
                            && w.starts_with(NO_CONVERSATION)
                            && matches!(job.session, Session::Resume(_))
                        {
                            drop(stdin.take());
                            let _ = child.wait().await;
                            return Err(RunEnd::NoConversation);
                        }
                        got_result |= matches!(rep, Report::Ended { .. });
                        if reports.send(rep).await.is_err() {
                            break;
                        }
                    }
                    if got_result {
                        // Its stdin closed, a stream-json run exits after its result.
                        drop(stdin.take());
                    }
                }
                Ok(false) | Err(_) => break,
            },
            Some(reply) = replies.recv(), if asked.is_some() => {
                let Some(a) = asked.take() else { continue };
                match answer(a, reply, reports, stdin.as_mut()).await {
                    Some(kept) => {
                        grants.rules.extend(kept.rules);
                        grants.dirs.extend(kept.dirs);
                    }
                    None => break,
                }
            }
            () = crate::engine::stopped(&mut stop) => {
                stop_group(pid, &mut child, grace).await;
                return Ok(());
            }
        }
    }
    drop(stdin);
    let status = tokio::select! {
        s = child.wait() => s.ok(),
        _ = tokio::time::sleep(Duration::from_secs(10)) => {
            stop_group(pid, &mut child, grace).await;
            None
        }
    };
    if got_result {
        return Ok(());
    }
    Err(RunEnd::Failed(
        failure("Claude Code", status, " without a result", tail).await,
    ))
}

/// Allows at once what the client allowed for good though the CLI asks again (a write through
/// a redirection, which no rule of its own covers: `Asked::granted_by`). Whether it did.
async fn answered_by_grant(
    asked: &Asked,
    grants: &Grants,
    stdin: Option<&mut tokio::process::ChildStdin>,
) -> bool {
    if !asked.granted_by(grants) {
        return false;
    }
    if let Some(i) = stdin {
        write_line(i, &asked.answer("allow").0).await;
    }
    true
}

/// The client's reply to the question the run waits on, written as the CLI's control response;
/// what it allows for the context's later runs goes to the engine first. What it allowed for
/// good, or `None` when the engine no longer listens.
async fn answer(
    asked: Asked,
    reply: Reply,
    reports: &mpsc::Sender<Report>,
    stdin: Option<&mut tokio::process::ChildStdin>,
) -> Option<Grants> {
    let (response, keep) = match reply {
        Reply::Said(text) => asked.answer(&text),
        Reply::TimedOut(secs) => (asked.timed_out(secs), Grants::default()),
    };
    if !keep.is_empty() && reports.send(Report::Allowed(keep.clone())).await.is_err() {
        return None;
    }
    if let Some(i) = stdin {
        write_line(i, &response).await;
    }
    Some(keep)
}

/// Writes one stream-json line to the run's stdin. A failed write shows as the run's own
/// failure (it exits without a result, or never gets its answer and is canceled).
async fn write_line(stdin: &mut tokio::process::ChildStdin, v: &Value) {
    let mut line = v.to_string();
    line.push('\n');
    let _ = stdin.write_all(line.as_bytes()).await;
    let _ = stdin.flush().await;
}

/// What the reader knows of the run so far.
#[derive(Debug, Default)]
struct Reading {
    model: Option<String>,
    session: Option<String>,
    /// Any answer text told yet, and whether the next text starts a new block (a gap first).
    said: bool,
    gap: bool,
    /// Text deltas seen since the last whole `assistant` message (else its text is told whole).
    deltas: bool,
}

impl Reading {
    /// The reports one stdout line makes (none for a line that is not an event we read).
    fn read(&mut self, v: &Value) -> Vec<Report> {
        let main = v.get("parent_tool_use_id").is_none_or(Value::is_null);
        match v.get("type").and_then(Value::as_str) {
            Some("system") if v.get("subtype").and_then(Value::as_str) == Some("init") => {
                self.model = str_of(v, "model");
                self.session = str_of(v, "session_id");
                Vec::new()
            }
            Some("stream_event") if main => self.stream_event(&v["event"]),
            Some("assistant") if main => self.assistant(&v["message"]),
            Some("result") => self.result(v),
            _ => Vec::new(),
        }
    }

    fn text(&mut self, t: &str) -> Option<Report> {
        if t.is_empty() {
            return None;
        }
        let mut out = String::new();
        if self.gap && self.said {
            out.push_str("\n\n");
        }
        self.gap = false;
        self.said = true;
        out.push_str(t);
        Some(Report::Text(out))
    }

    fn stream_event(&mut self, ev: &Value) -> Vec<Report> {
        match ev.get("type").and_then(Value::as_str) {
            Some("content_block_delta") => {
                let d = &ev["delta"];
                if d.get("type").and_then(Value::as_str) == Some("text_delta") {
                    self.deltas = true;
                    return self
                        .text(d["text"].as_str().unwrap_or_default())
                        .into_iter()
                        .collect();
                }
                Vec::new()
            }
            // Each text block of the answer is a paragraph of its own.
            Some("content_block_stop") => {
                self.gap = true;
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    fn assistant(&mut self, m: &Value) -> Vec<Report> {
        let mut out = Vec::new();
        let streamed = std::mem::take(&mut self.deltas);
        for b in m["content"].as_array().into_iter().flatten() {
            match b.get("type").and_then(Value::as_str) {
                Some("tool_use") => out.push(Report::Step(step_line(
                    b["name"].as_str().unwrap_or("tool"),
                    &b["input"],
                ))),
                // Told by its deltas already, unless the run did not stream this message.
                Some("text") if !streamed => {
                    self.gap = true;
                    out.extend(self.text(b["text"].as_str().unwrap_or_default()));
                }
                _ => {}
            }
        }
        out
    }

    fn result(&mut self, v: &Value) -> Vec<Report> {
        let subtype = v["subtype"].as_str().unwrap_or("unknown");
        let failed = subtype != "success" || v["is_error"].as_bool() == Some(true);
        let said = v["result"].as_str().unwrap_or_default();
        let mut out = Vec::new();
        if !failed && !self.said {
            out.extend(self.text(said));
        }
        let words = failed.then(|| {
            let errors: Vec<&str> = v["errors"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let w = if !said.is_empty() {
                said.to_string()
            } else if !errors.is_empty() {
                errors.join("; ")
            } else {
                format!("the run ended with {subtype}")
            };
            a2a_mod_core::text::sanitize_lines(&w)
        });
        let mut meta = Map::new();
        // `total_cost_usd` adds up over the whole conversation (every resumed run); this run's
        // own is the sum of `model_usage_since_last_result`.
        let run_cost: Option<f64> = v["model_usage_since_last_result"]
            .as_object()
            .map(|m| m.values().filter_map(|u| u["costUSD"].as_f64()).sum());
        if let Some(c) = run_cost.or_else(|| v["total_cost_usd"].as_f64()) {
            meta.insert("costUsd".into(), json!(c));
        }
        for (k, from) in [
            ("sessionCostUsd", "total_cost_usd"),
            ("numTurns", "num_turns"),
            ("durationMs", "duration_ms"),
            ("usage", "usage"),
        ] {
            if let Some(x) = v.get(from).filter(|x| !x.is_null()) {
                meta.insert(k.into(), camel_keys(x));
            }
        }
        if let Some(m) = &self.model {
            meta.insert("model".into(), m.clone().into());
        }
        if let Some(s) = str_of(v, "session_id").or_else(|| self.session.clone()) {
            meta.insert("sessionId".into(), s.into());
        }
        meta.insert("resultSubtype".into(), subtype.into());
        let mut metadata = Map::new();
        metadata.insert("claudeCode".into(), Value::Object(meta));
        out.push(Report::Ended {
            state: if failed {
                TaskState::Failed
            } else {
                TaskState::Completed
            },
            words,
            metadata,
        });
        out
    }
}

fn str_of(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_string)
}

/// `v` with every object key in camelCase (`cache_read_input_tokens` → `cacheReadInputTokens`):
/// what serve writes is A2A JSON, camelCase throughout, whatever Claude Code's own keys are.
fn camel_keys(v: &Value) -> Value {
    use heck::ToLowerCamelCase as _;
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.to_lower_camel_case(), camel_keys(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(camel_keys).collect()),
        v => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_keys_are_camel_case() {
        let usage = json!({"input_tokens": 3, "cache_creation": {"ephemeral_5m_input_tokens": 0},
            "server_tool_use": [{"web_search_requests": 1}], "service_tier": "standard"});
        assert_eq!(
            camel_keys(&usage),
            json!({"inputTokens": 3, "cacheCreation": {"ephemeral5mInputTokens": 0},
                "serverToolUse": [{"webSearchRequests": 1}], "serviceTier": "standard"})
        );
    }

    fn read_all(lines: &[Value]) -> Vec<Report> {
        let mut r = Reading::default();
        lines.iter().flat_map(|l| r.read(l)).collect()
    }

    fn delta(t: &str) -> Value {
        json!({"type": "stream_event", "parent_tool_use_id": null, "session_id": "s",
            "event": {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}})
    }

    #[test]
    fn deltas_are_the_answer_and_a_tool_use_a_step() {
        let reports = read_all(&[
            json!({"type": "system", "subtype": "init", "model": "claude-x", "session_id": "s"}),
            delta("I'll "),
            delta("look."),
            json!({"type": "stream_event", "event": {"type": "content_block_stop", "index": 0}}),
            json!({"type": "assistant", "parent_tool_use_id": null, "message": {"content": [
                {"type": "text", "text": "I'll look."},
                {"type": "tool_use", "name": "Bash", "input": {"command": "cargo test"}}]}}),
            json!({"type": "stream_event", "parent_tool_use_id": "toolu_1", "event":
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "sub-agent text"}}}),
            delta("Done."),
            json!({"type": "result", "subtype": "success", "is_error": false, "result": "Done.",
                "total_cost_usd": 0.25, "num_turns": 2, "duration_ms": 900, "session_id": "s"}),
        ]);
        let texts: String = reports
            .iter()
            .filter_map(|r| match r {
                Report::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, "I'll look.\n\nDone.");
        assert!(reports.contains(&Report::Step("Bash: cargo test".into())));
        let Some(Report::Ended {
            state,
            words,
            metadata,
        }) = reports.last()
        else {
            panic!("{reports:?}")
        };
        assert_eq!((*state, words), (TaskState::Completed, &None));
        assert_eq!(
            metadata["claudeCode"],
            json!({"costUsd": 0.25, "sessionCostUsd": 0.25, "numTurns": 2, "durationMs": 900,
                "model": "claude-x", "sessionId": "s", "resultSubtype": "success"})
        );
    }

    #[test]
    fn a_resumed_runs_cost_is_its_own() {
        let resumed = read_all(&[
            json!({"result": "x", "subtype": "success", "type": "result", "total_cost_usd": 0.5,
                "model_usage_since_last_result": {"a": {"costUSD": 0.125}, "b": {"costUSD": 0.125}}}),
        ]);
        let Some(Report::Ended { metadata, .. }) = resumed.last() else {
            panic!()
        };
        assert_eq!(metadata["claudeCode"]["costUsd"], 0.25);
        assert_eq!(metadata["claudeCode"]["sessionCostUsd"], 0.5);
    }

    #[test]
    fn a_failed_result_keeps_claude_codes_words() {
        let r = read_all(&[
            json!({"type": "result", "subtype": "error_during_execution",
            "is_error": true, "result": "API Error: 400 \u{1b}[31mboom", "session_id": "s"}),
        ]);
        let Some(Report::Ended { state, words, .. }) = r.last() else {
            panic!()
        };
        assert_eq!(*state, TaskState::Failed);
        assert_eq!(words.as_deref(), Some("API Error: 400 boom"));
        let r = read_all(
            &[json!({"type": "result", "subtype": "error_max_budget_usd",
            "is_error": true, "errors": ["Reached maximum budget ($0.01)"]})],
        );
        let Some(Report::Ended { words, .. }) = r.last() else {
            panic!()
        };
        assert_eq!(words.as_deref(), Some("Reached maximum budget ($0.01)"));
    }

    #[test]
    fn an_unstreamed_answer_is_told_from_the_message_or_the_result() {
        let r = read_all(&[
            json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "whole"}]}}),
            json!({"type": "result", "subtype": "success", "result": "whole"}),
        ]);
        assert_eq!(r[0], Report::Text("whole".into()));
        assert_eq!(r.len(), 2);
        let r = read_all(&[json!({"type": "result", "subtype": "success", "result": "only here"})]);
        assert_eq!(r[0], Report::Text("only here".into()));
    }
}
