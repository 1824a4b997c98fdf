//! Wake-ups in headless and Agent SDK runs, end to end in the real Claude Code CLI:
//! `claude -p` (text) and `-p --input-format stream-json --output-format stream-json` (how the
//! Agent SDK drives the CLI), with the repository loaded as a plugin, a worker (the embedded fake
//! or the Python `a2a-sdk` peer) and the scripted fake Messages API. Monitors and asyncRewake do
//! not run there; the plugin's Stop hook (`a2a-mod hook stop`) holds the run while the task runs
//! and hands the model its result as a new turn (`{"decision":"block","reason":…}`).
//!
//! Each scenario: the scripted model sends `slow N`, ends its turn; the process stays; when the
//! task ends the model gets a request carrying the Stop hook's feedback (the wake line and the
//! fenced result) and answers quoting the worker's result, which is what `-p` prints / what the
//! last `result` event carries.

use crate::fake::model_api::{FakeModelApi, Recorded, Reply, Rule, Script};
use crate::peers::claude::{ClaudeOpts, Headless, HeadlessRun, SEND, TOOLS, run_headless};
use crate::util::{TempHome, append_config, bin, ok};
use crate::workers::{Kind, Peer, repo};
use serde_json::{Value, json};
use std::time::Duration;

/// What Claude Code puts before a Stop hook's block reason (docs/claude-code.md).
const FEEDBACK: &str = "Stop hook feedback:";
const DEADLINE: Duration = Duration::from_secs(120);

/// A request carrying our Stop hook's answer, i.e. a wake-up of a headless run.
fn is_stop_wake(r: &Recorded) -> bool {
    r.is_main_loop() && r.new_text().contains(FEEDBACK)
}

/// The Stop hook's reason as the model got it: Claude Code sends it twice (a user message after
/// "Stop hook feedback:" and a system message; the Agent SDK's bundled 2.1.327 appends it once
/// more after "Stop hook blocking error from command: …:"); this is the first.
fn feedback(r: &Recorded) -> String {
    let text = r.new_text();
    text.split_once(FEEDBACK)
        .map(|(_, rest)| {
            let rest = rest.split("</system-reminder>").next().unwrap_or(rest);
            rest.split("Stop hook blocking error from command")
                .next()
                .unwrap_or(rest)
        })
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The worker outputs fenced in `text`, in order.
fn worker_outputs(text: &str) -> Vec<String> {
    text.split("<worker-output")
        .skip(1)
        .filter_map(|s| s.split_once(">\n")?.1.split("\n</worker-output>").next())
        .map(str::to_owned)
        .collect()
}

/// The script: on `GO` send each of `messages` (one tool call each), end the turn with
/// `SENT-WILL-WAIT`; on a Stop hook wake answer `RESULTS: <each worker output> | …` (or, when the
/// reason says tasks are still running, `GAVE-UP-SEEN`).
fn script(alias: &'static str, messages: &'static [&'static str]) -> Script {
    Script::new()
        .rule(Rule::when("stop wake", is_stop_wake).reply_with(|r| {
            let text = feedback(r);
            if text.contains("still running") {
                return Reply::text("GAVE-UP-SEEN");
            }
            Reply::text(format!("RESULTS: {}", worker_outputs(&text).join(" | ")))
        }))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(Rule::on_user_text("GO").reply_with(move |r| {
            if !r.deferred_tools().iter().any(|t| t == SEND) {
                return Reply::text("NO-TOOLS-YET");
            }
            let mut it = messages
                .iter()
                .map(|m| json!({"worker": alias, "message": m}));
            let mut reply = Reply::tool_use(SEND, it.next().unwrap_or_default());
            for a in it {
                reply = reply.and_tool_use(SEND, a);
            }
            reply
        }))
}

struct Run {
    model: FakeModelApi,
    run: HeadlessRun,
    _worker: Peer,
}

impl Run {
    fn wakes(&self) -> Vec<Recorded> {
        self.model
            .turns()
            .into_iter()
            .filter(is_stop_wake)
            .collect()
    }

    /// What the run printed as its answer: the text (`-p`) or the last `result` event's `result`.
    fn answer(&self, how: Headless) -> String {
        match how {
            Headless::Text => self.run.stdout.trim().to_owned(),
            Headless::StreamJson | Headless::AgentSdk => self
                .run
                .result_event()
                .and_then(|e| e["result"].as_str().map(str::to_owned))
                .unwrap_or_default(),
        }
    }

    fn dump(&self) -> String {
        format!(
            "exit {:?} after {:?}\nstdout:\n{}\nstderr:\n{}\nmodel:\n{}",
            self.run.status,
            self.run.took,
            self.run.stdout,
            self.run.stderr,
            self.model.summary()
        )
    }
}

/// Starts worker, model and a headless Claude Code with the plugin; runs `GO` to the end.
fn run(
    kind: Kind,
    alias: &'static str,
    how: Headless,
    messages: &'static [&'static str],
    config: &str,
) -> Option<Run> {
    let home = TempHome::new();
    let worker = Peer::start(kind, &[])?;
    ok(&home, &["worker", "add", alias, &worker.url]);
    if !config.is_empty() {
        append_config(&home.a2a_home(), config);
    }
    let model = FakeModelApi::start(script(alias, messages));
    let bin = bin();
    let opts = ClaudeOpts::new(&model)
        .home(home)
        .plugin_dir(repo())
        .env("A2A_MOD_BIN", bin.to_str().expect("utf-8 binary path"))
        .settings(json!({"permissions": {"allow": TOOLS}}));
    let run = run_headless(opts, how, "GO", DEADLINE)?;
    Some(Run {
        model,
        run,
        _worker: worker,
    })
}

fn alias_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Fake | Kind::FakeV03 => "fake",
        Kind::PyV1 => "py",
        Kind::PyV03 => "py03",
        Kind::Js => "js",
        Kind::Adk => "adk",
        Kind::Maf => "maf",
    }
}

/// The seed case headless: `slow 12` sent, turn ended, the run stays ~12 s, then the model gets
/// the result as a new turn and its answer (quoting the result) is the run's output.
fn waits_for_the_task(kind: Kind, how: Headless) {
    waits_for_the_task_with(kind, how, "");
}

/// [`waits_for_the_task`] with `config` appended to the config file.
fn waits_for_the_task_with(kind: Kind, how: Headless, config: &str) {
    let alias = alias_of(kind);
    let Some(r) = run(kind, alias, how, &["slow 12 build"], config) else {
        return;
    };
    assert_eq!(r.run.status, Some(0), "{}", r.dump());
    let wakes = r.wakes();
    assert_eq!(wakes.len(), 1, "one wake turn: {}", r.dump());
    let text = feedback(&wakes[0]);
    assert!(
        text.contains(&format!("a2a: {alias} task ")) && text.contains("completed"),
        "the wake line: {text}"
    );
    assert!(text.contains("[a2a-mod notice"), "{text}");
    assert_eq!(worker_outputs(&text), ["done: build"], "{text}");
    assert_eq!(r.answer(how), "RESULTS: done: build", "{}", r.dump());
    assert!(
        r.run.took >= Duration::from_secs(11),
        "the run ended before the task: {:?}",
        r.run.took
    );
    // The model's first turn ended with the send; nothing was woken twice.
    assert!(
        r.model
            .turns()
            .iter()
            .any(|t| t.new_text().contains("SENT-WILL-WAIT") || t.tool_results().len() == 1),
        "{}",
        r.dump()
    );
    if how == Headless::StreamJson {
        // The SDK sees the hand-over as a synthetic user event before the final result.
        assert!(
            r.run
                .events()
                .iter()
                .any(|e: &Value| e["type"] == "user" && e["isSynthetic"] == true),
            "{}",
            r.dump()
        );
    }
    if how == Headless::AgentSdk {
        // What docs/claude-code.md tells SDK users to expect with each delivered result.
        assert!(
            r.run
                .events()
                .iter()
                .any(|e: &Value| e["type"] == "system" && e["data"]["key"] == "stop-hook-error"),
            "{}",
            r.dump()
        );
    }
    eprintln!("HEADLESS {kind:?} {how:?}: run took {:?}", r.run.took);
}

/// The documented Agent SDK set-up (docs/claude-code.md "Agent SDK"), run by the official Python
/// SDK with the Claude Code it bundles: the plugin through `plugins`, its tools through
/// `allowed_tools`; the task's result comes back in the SDK's final `result`.
#[test]
fn the_python_agent_sdk_gets_the_result_as_its_final_result() {
    waits_for_the_task(Kind::Fake, Headless::AgentSdk);
}

/// Native MCP tasks on: a `-p` run keeps today's protocol and path exactly (Claude Code offers
/// no tasks there; docs/claude-code.md "Native MCP tasks").
#[test]
fn print_mode_with_native_tasks_on_waits_as_ever() {
    waits_for_the_task_with(
        Kind::Fake,
        Headless::Text,
        "\n[claude]\nnative_tasks = true\n",
    );
}

#[test]
fn print_mode_waits_for_the_task_fake() {
    waits_for_the_task(Kind::Fake, Headless::Text);
}

#[test]
fn print_mode_waits_for_the_task_a2a_sdk() {
    waits_for_the_task(Kind::PyV1, Headless::Text);
}

#[test]
fn stream_json_waits_for_the_task_fake() {
    waits_for_the_task(Kind::Fake, Headless::StreamJson);
}

#[test]
fn stream_json_waits_for_the_task_a2a_sdk() {
    waits_for_the_task(Kind::PyV1, Headless::StreamJson);
}

/// Two tasks ending together: one wake turn carrying both results.
#[test]
fn two_tasks_ending_together_give_one_turn() {
    // Claude Code runs the two calls one after the other, each with its inline window: a short
    // window and a quick cadence, and the first task a second longer, make them end together.
    let Some(r) = run(
        Kind::Fake,
        "fake",
        Headless::Text,
        &["slow 8 alpha", "slow 7 beta"],
        "\n[timing]\ninline_polls_s = [0.5]\npoll_interval_s = 0.5\n",
    ) else {
        return;
    };
    let sends: Vec<i64> = r
        ._worker
        .events()
        .iter()
        .filter(|e| e.is_send())
        .map(|e| e.at_ms)
        .collect();
    eprintln!(
        "sends {} ms apart",
        sends.last().unwrap_or(&0) - sends.first().unwrap_or(&0)
    );
    assert_eq!(r.run.status, Some(0), "{}", r.dump());
    let wakes = r.wakes();
    assert_eq!(wakes.len(), 1, "{}", r.dump());
    let text = feedback(&wakes[0]);
    assert!(
        text.contains("a2a: 2 tasks finished (fake ✓, fake ✓)"),
        "{text}\n{}",
        r.dump()
    );
    let mut outs = worker_outputs(&text);
    outs.sort();
    assert_eq!(outs, ["done: alpha", "done: beta"], "{text}");
    assert!(r.answer(Headless::Text).starts_with("RESULTS: done: "));
}

/// A task longer than `[headless] max_wait_s`: the run ends with the "still running" reason,
/// naming the task and the command that fetches it later, and does not wait again.
#[test]
fn a_task_longer_than_max_wait_ends_the_run_with_still_running() {
    let Some(r) = run(
        Kind::Fake,
        "fake",
        Headless::Text,
        &["slow 60 forever"],
        "\n[headless]\nmax_wait_s = 4\n",
    ) else {
        return;
    };
    assert_eq!(r.run.status, Some(0), "{}", r.dump());
    let wakes = r.wakes();
    assert_eq!(wakes.len(), 1, "{}", r.dump());
    let text = feedback(&wakes[0]);
    assert!(
        text.contains("a2a: 1 task(s) still running after waiting 4 s"),
        "{text}"
    );
    assert!(
        text.contains("a2a-mod task ") && text.contains(" --session "),
        "{text}"
    );
    // The command it names works as given.
    let cmd = text
        .lines()
        .find_map(|l| l.split_once(": a2a-mod ").map(|(_, c)| c.to_owned()))
        .expect("a command line");
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let out = ok(&r.run.home, &args);
    assert!(out.contains("forever") || out.contains("working"), "{out}");
    assert_eq!(r.answer(Headless::Text), "GAVE-UP-SEEN", "{}", r.dump());
    assert!(
        r.run.took < Duration::from_secs(40),
        "waited past max_wait_s: {:?}",
        r.run.took
    );
}
