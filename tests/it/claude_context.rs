//! A conversation continued by `contextId` in the real Claude Code CLI: the plugin
//! loaded from the repository (`--plugin-dir`), a worker (the embedded fake, or the Python
//! `a2a-sdk` peer), and the scripted fake Messages API standing in for the model.
//!
//! The scripted model sends `parts` with a file from the session's project directory, reads the
//! context id from the tool result Claude Code hands it (the `structuredContent` JSON), and sends
//! a follow-up with that `contextId`. The worker echoes what it received: the file's bytes the
//! first time, and the same context both times, in two different tasks.

use crate::fake::model_api::{FakeModelApi, Recorded, Reply, Rule, Script};
use crate::peers::claude::{ClaudeOpts, ClaudeSession, SEND, TOOLS};
use crate::util::{TempHome, bin, ok, wait_until};
use crate::workers::{Kind, Peer, repo};
use serde_json::{Value, json};
use sha2::Digest as _;
use std::time::{Duration, Instant};

const LONG: Duration = Duration::from_secs(60);
const FILE: &str = "report.csv";
const FILE_BYTES: &[u8] = b"id,result\n1,ok\n2,flaky\n";

/// The structured outcomes of the `send` results new in `r`.
fn send_outcomes(r: &Recorded) -> Vec<Value> {
    r.tool_results()
        .iter()
        .filter(|t| t.tool_name.as_deref() == Some(SEND))
        .map(|t| serde_json::from_str(&t.text).unwrap_or_else(|_| json!({"note": t.text})))
        .collect()
}

/// The worker's `parts` echo in an outcome's text.
fn echo_of(o: &Value) -> Option<Value> {
    let text = o["text"].as_str()?;
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("{\"contextId\""))?;
    serde_json::from_str(line.trim()).ok()
}

fn context_conversation(kind: Kind) {
    let home = TempHome::new();
    let Some(worker) = Peer::start(kind, &[]) else {
        return;
    };
    ok(&home, &["worker", "add", "w", &worker.url]);
    let project = ClaudeSession::project_dir(&home);
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join(FILE), FILE_BYTES).unwrap();

    // First send: a file and the verb; its result: a follow-up in the context it shows; the
    // follow-up's result: the end of the turn.
    let script = Script::new()
        .rule(Rule::on_tool_result_for(SEND).once().reply_with(
            |r| match send_outcomes(r).first() {
                Some(o) if o["contextId"].is_string() => Reply::tool_use(
                    SEND,
                    json!({"worker": "w", "message": "parts", "contextId": o["contextId"]}),
                ),
                _ => Reply::text("NO-CONTEXT-IN-RESULT"),
            },
        ))
        .rule(Rule::on_tool_result_for(SEND).text("CONVERSATION-DONE"))
        .rule(Rule::on_user_text("CTX").reply_with(|r| {
            if !r.deferred_tools().iter().any(|t| t == SEND) {
                return Reply::text("NO-TOOLS-YET");
            }
            Reply::tool_use(
                SEND,
                json!({"worker": "w", "message": "parts", "files": [FILE]}),
            )
        }));
    let model = FakeModelApi::start(script);
    let bin = bin();
    let opts = ClaudeOpts::new(&model)
        .home(home)
        .plugin_dir(repo())
        .env("A2A_MOD_BIN", bin.to_str().expect("utf-8 binary path"))
        .settings(json!({"permissions": {"allow": TOOLS}}));
    let Some(claude) = ClaudeSession::start(opts) else {
        return;
    };
    claude.wait_ready(LONG);

    // The plugin's MCP server connects in the background: type the prompt until the tools are
    // announced.
    let start = Instant::now();
    let mut n = 0;
    loop {
        n += 1;
        let text = format!("CTX-{n}");
        claude.send_keys(&text);
        let r = model.wait_for_request(&format!("the {text} turn"), LONG, |r| {
            r.is_main_loop() && r.last_user_text().contains(&text)
        });
        if r.deferred_tools().iter().any(|t| t == SEND) {
            break;
        }
        claude.wait_for_text("NO-TOOLS-YET", LONG);
        assert!(start.elapsed() < LONG, "no tools:\n{}", model.summary());
        let at = Instant::now();
        wait_until("the MCP server to connect", Duration::from_secs(2), || {
            at.elapsed() > Duration::from_millis(500)
        });
    }
    claude.wait_for_text("CONVERSATION-DONE", LONG);

    let outcomes: Vec<Value> = model
        .turns()
        .iter()
        .flat_map(send_outcomes)
        .filter(|o| o["state"] == "completed")
        .collect();
    assert_eq!(outcomes.len(), 2, "{}", model.summary());
    let (first, second) = (&outcomes[0], &outcomes[1]);
    let (e1, e2) = (
        echo_of(first).expect("first echo"),
        echo_of(second).expect("second echo"),
    );
    // The worker got the file's bytes from the session's project directory.
    let file = &e1["parts"][1];
    assert_eq!(file["name"], FILE, "{e1}");
    assert_eq!(file["size"], FILE_BYTES.len());
    let sha: String = sha2::Sha256::digest(FILE_BYTES)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    assert_eq!(file["sha256"], sha);
    // One context, two tasks: as the worker saw it and as Claude was told.
    let ctx = first["contextId"].as_str().unwrap();
    assert_eq!(e1["contextId"], ctx);
    assert_eq!(e2["contextId"], ctx, "the follow-up left the context");
    assert_eq!(second["contextId"], ctx);
    assert_ne!(first["taskId"], second["taskId"]);
    let sends = worker.events().iter().filter(|e| e.is_send()).count();
    assert_eq!(sends, 2, "{:?}", worker.events());
}

#[test]
fn claude_continues_a_conversation_by_context_id_fake() {
    context_conversation(Kind::Fake);
}

#[test]
fn claude_continues_a_conversation_by_context_id_python_v1() {
    context_conversation(Kind::PyV1);
}
