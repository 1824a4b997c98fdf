//! Waking Claude, end to end in the real Claude Code CLI: the repository loaded as a
//! plugin (`--plugin-dir`, so the MCP server, the hooks and the `a2a-mod watch` monitor are the
//! shipped files, run through `bin/a2a-mod-launch` with `A2A_MOD_BIN` = this build), a worker
//! (the embedded fake or the Python `a2a-sdk` peer), and the scripted fake Messages API.
//!
//! Each test: the scripted model calls `send`, its turn ends (or goes on with a long tool call),
//! the task ends at the worker, and Claude Code sends the model a new request by itself carrying
//! the wake line (in a `<task-notification>`) and the result as hidden context (a `role:"system"`
//! message from our hooks). Also `/clear` and `/exit` + `claude --resume` mid-task.
//!
//! Each scenario is one function taking the worker `Kind`; thin `#[test]` wrappers run it against
//! the embedded fake worker and the Python a2a-sdk 1.3.0 worker, and the input-required round
//! trip also against a2a-sdk 0.3.26 (which answers the follow-up in the task's old state).
//! Scenarios about behaviour rather than the seed's timing use a shortened `[timing]`.
//!
//! Every test has its own tmux server, temp home and worker, so they run in parallel.

use crate::fake::model_api::{FakeModelApi, Recorded, Reply, Rule, Script};
use crate::peers::claude::{ClaudeOpts, ClaudeSession, SEND, TOOLS};
use crate::util::{TempHome, append_config, bin, fast_timing, ok, wait_until};
use crate::workers::{Kind, Peer, repo};
use a2a_mod::testing::now_ms;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const NO_PLUGIN_SEND: &str = "mcp__a2a__send";
const LONG: Duration = Duration::from_secs(60);

/// Wall-clock time a request arrived at the fake model.
fn wall_ms(r: &Recorded) -> i64 {
    now_ms() - r.at.elapsed().as_millis() as i64
}

/// A wake-up: Claude Code's own request carrying a monitor (or rewake) notification.
pub(crate) fn is_wake(r: &Recorded) -> bool {
    r.is_main_loop() && r.new_text().contains("<task-notification>")
}

/// Text of the `role:"system"` messages new in this request: where hook context lands.
pub(crate) fn system_text(r: &Recorded) -> String {
    r.new_messages()
        .iter()
        .filter(|m| m["role"] == "system")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(a) => a
                .iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `<event>` lines of the notifications in this request (our wake lines).
pub(crate) fn events(r: &Recorded) -> Vec<String> {
    let text = r.new_text();
    text.split("<event>")
        .skip(1)
        .filter_map(|s| s.split("</event>").next())
        .map(str::to_owned)
        .collect()
}

/// `taskId "<id>"` as our notes write it.
pub(crate) fn task_id_in(text: &str) -> Option<String> {
    let rest = text.split("taskId \"").nth(1)?;
    Some(rest.split('"').next()?.to_owned())
}

/// On a user prompt starting with `trigger`, call `send` with `args` once the plugin's tools are
/// announced; before that (the MCP server connects in the background) say `NO-TOOLS-YET`, and
/// `Rig::prompt` types the prompt again.
pub(crate) fn send_on(trigger: &str, args: Vec<Value>) -> Rule {
    send_with(SEND, trigger, args)
}

/// `send_on` for the tool named `tool` (`mcp__a2a__send` without the plugin).
fn send_with(tool: &'static str, trigger: &str, args: Vec<Value>) -> Rule {
    Rule::on_user_text(trigger).reply_with(move |r| {
        if !r.deferred_tools().iter().any(|t| t == tool) {
            return Reply::text("NO-TOOLS-YET");
        }
        let mut it = args.iter();
        let mut reply = Reply::tool_use(tool, it.next().cloned().unwrap_or_default());
        for a in it {
            reply = reply.and_tool_use(tool, a.clone());
        }
        reply
    })
}

pub(crate) struct Rig {
    pub(crate) model: FakeModelApi,
    pub(crate) claude: ClaudeSession,
    /// The worker the rig started; `None` for one started elsewhere (`Rig::start_at`).
    worker: Option<Peer>,
    prompts: usize,
    send_tool: &'static str,
}

#[derive(Default)]
pub(crate) struct RigOpts {
    /// `[timing]` for behaviour tests: (inline_polls_s, poll_interval_s, max_failed_polls).
    pub(crate) timing: Option<(&'static str, f64, u32)>,
    pub(crate) allow: Vec<&'static str>,
    /// Install without the plugin: the MCP server by `--mcp-config` and the hooks of
    /// `hooks/settings-without-plugin.json` (the asyncRewake fallback) in `--settings`.
    pub(crate) no_plugin: bool,
    /// The worker's own arguments (the fake worker's `--streaming on`).
    pub(crate) peer_args: &'static [&'static str],
    /// `[claude] native_tasks = true`: Claude Code's own MCP tasks where a call offers them.
    pub(crate) native: bool,
    /// More of `config.toml` (TOML appended as it is).
    pub(crate) config: &'static str,
}

impl Rig {
    fn start(kind: Kind, alias: &'static str, script: Script, o: RigOpts) -> Option<Rig> {
        let worker = Peer::start(kind, o.peer_args)?;
        let mut rig = Rig::start_at(&worker.url, alias, script, o)?;
        rig.worker = Some(worker);
        Some(rig)
    }

    /// The rig with a worker started elsewhere (an `a2a-mod serve`), added as `alias`.
    pub(crate) fn start_at(
        url: &str,
        alias: &'static str,
        script: Script,
        o: RigOpts,
    ) -> Option<Rig> {
        let home = TempHome::new();
        ok(&home, &["worker", "add", alias, url]);
        if let Some((inline, interval, max_failed)) = o.timing {
            fast_timing(&home, inline, interval, max_failed);
        }
        if o.native {
            append_config(&home.a2a_home(), "\n[claude]\nnative_tasks = true\n");
        }
        append_config(&home.a2a_home(), o.config);
        let model = FakeModelApi::start(script);
        let opts = if o.no_plugin {
            Rig::opts_without_plugin(&model, home, &o.allow)
        } else {
            Rig::opts(&model, home, &o.allow)
        };
        let claude = ClaudeSession::start(opts)?;
        claude.wait_ready(LONG);
        Some(Rig {
            model,
            claude,
            worker: None,
            prompts: 0,
            send_tool: if o.no_plugin { NO_PLUGIN_SEND } else { SEND },
        })
    }

    fn opts(model: &FakeModelApi, home: TempHome, allow: &[&str]) -> ClaudeOpts {
        let bin = bin();
        let mut allowed: Vec<&str> = TOOLS.to_vec();
        allowed.extend_from_slice(allow);
        ClaudeOpts::new(model)
            .home(home)
            .plugin_dir(repo())
            .env("A2A_MOD_BIN", bin.to_str().expect("utf-8 binary path"))
            .settings(json!({
                "statusLine": {"type": "command", "command": format!("{} statusline", bin.display()),
                               "refreshInterval": 1},
                "permissions": {"allow": allowed},
            }))
    }

    fn opts_without_plugin(model: &FakeModelApi, home: TempHome, allow: &[&str]) -> ClaudeOpts {
        let bin = bin();
        let bin = bin.to_str().expect("utf-8 binary path");
        let shipped = std::fs::read_to_string(repo().join("hooks/settings-without-plugin.json"))
            .expect("hooks/settings-without-plugin.json");
        // The file names the binary `a2a-mod` (on PATH after install); point it at this build.
        let mut settings: Value =
            serde_json::from_str(&shipped.replace("\"a2a-mod ", &format!("\"{bin} ")))
                .expect("settings JSON");
        let mut allowed: Vec<String> = TOOLS
            .iter()
            .map(|t| t.replace("plugin_a2a-mod_a2a", "a2a"))
            .collect();
        allowed.extend(allow.iter().map(|s| s.to_string()));
        settings["statusLine"] = json!({"type": "command", "command": format!("{bin} statusline"),
                                        "refreshInterval": 1});
        settings["permissions"] = json!({"allow": allowed});
        ClaudeOpts::new(model)
            .home(home)
            .settings(settings)
            .mcp_config(json!({"mcpServers": {"a2a": {"command": bin, "args": ["mcp"]}}}))
    }

    /// Types `<trigger>-<n>` until the model's answer to it is not `NO-TOOLS-YET`; returns that
    /// request.
    pub(crate) fn prompt(&mut self, trigger: &str) -> Recorded {
        let start = Instant::now();
        loop {
            self.prompts += 1;
            let text = format!("{trigger}-{}", self.prompts);
            self.claude.send_keys(&text);
            let r = self
                .model
                .wait_for_request(&format!("the {text} turn"), LONG, |r| {
                    r.is_main_loop() && r.last_user_text().contains(&text)
                });
            if r.deferred_tools().iter().any(|t| t == self.send_tool) {
                return r;
            }
            self.claude.wait_for_text("NO-TOOLS-YET", LONG);
            assert!(
                start.elapsed() < LONG,
                "the plugin's MCP tools were never announced:\n{}",
                self.model.summary()
            );
            wait_until("the MCP server to connect", Duration::from_secs(2), || {
                start.elapsed() > Duration::from_millis(500)
            });
        }
    }

    fn home(&self) -> &TempHome {
        self.claude.home()
    }

    /// The worker this rig started.
    fn worker(&self) -> &Peer {
        self.worker
            .as_ref()
            .expect("a rig started with Rig::start has its worker")
    }

    /// The wake-ups so far.
    fn wakes(&self) -> Vec<Recorded> {
        self.model.turns().into_iter().filter(is_wake).collect()
    }

    /// The session whose store holds task `id`.
    pub(crate) fn session_of(&self, id: &str) -> String {
        stored_tasks(self.home())
            .iter()
            .find(|t| t["task_id"] == id)
            .and_then(|t| t["session"].as_str())
            .expect("the task is in a session's store")
            .to_string()
    }

    /// The worker's ids of every task in the store, oldest first.
    pub(crate) fn task_ids(&self) -> Vec<String> {
        stored_tasks(self.home())
            .iter()
            .filter_map(|t| t["task_id"].as_str().map(str::to_owned))
            .collect()
    }
}

/// Every task of every session in `home`'s store (`tasks --all --json`).
fn stored_tasks(home: &TempHome) -> Vec<Value> {
    let o = ok(home, &["tasks", "--all", "--json"]);
    serde_json::from_str(&o).expect("tasks --json prints a JSON array")
}

/// The script of the idle case: send `slow 12 build`, end the turn, answer the wake.
fn idle_script(alias: &str) -> Script {
    Script::new()
        .rule(Rule::when("wake", is_wake).text("WOKEN-BY-A2A"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(send_on(
            "GO",
            vec![json!({"worker": alias, "message": "slow 12 build"})],
        ))
}

/// Asserts a wake request carries `line` and, as hidden context, the result `result`.
#[track_caller]
pub(crate) fn assert_wake(wake: &Recorded, line: &str, result: &str) {
    assert_eq!(events(wake), [line], "{}", wake.new_text());
    let ctx = system_text(wake);
    assert!(
        ctx.contains("hook additional context: [a2a-mod notice"),
        "no a2a-mod context in the wake request:\n{ctx}"
    );
    assert!(ctx.contains("<worker-output"), "{ctx}");
    assert!(ctx.contains(result), "{ctx}");
}

/// The alias a worker of `kind` is registered under.
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

/// The structured outcomes (`{"note", "state", "text", ...}`) of the `send` results in `r`.
fn send_outcomes(r: &Recorded) -> Vec<Value> {
    r.tool_results()
        .iter()
        .filter(|t| t.tool_name.as_deref() == Some(SEND))
        .map(|t| serde_json::from_str(&t.text).unwrap_or_else(|_| json!({"note": t.text})))
        .collect()
}

/// The request carries a `send` result that reports the task completed with `text`.
fn send_completed_with(r: &Recorded, text: &str) -> bool {
    send_outcomes(r)
        .iter()
        .any(|o| o["state"] == "completed" && o["text"].as_str().is_some_and(|t| t.contains(text)))
}

/// The seed case, with the seed's timing: `slow 12` sent by the model ends its turn, the status
/// line shows it running, and ~12 s later Claude Code asks the model again by itself with the wake
/// line and the result. Prints the wake latency (task end at the worker → request at the model).
fn wakes_idle_claude(kind: Kind) {
    let alias = alias_of(kind);
    let Some(mut rig) = Rig::start(kind, alias, idle_script(alias), RigOpts::default()) else {
        return;
    };
    rig.prompt("GO");
    rig.claude.wait_for_text("slow 12 build", LONG);
    let sent = rig.model.wait_for_request("the send result", LONG, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.tool_name.as_deref() == Some(SEND))
    });
    let id = rig.task_ids().pop().expect("the task is in the store");
    let short: String = id.chars().take(4).collect();
    assert!(
        sent.tool_results()[0].text.contains(&id),
        "{:?}",
        sent.tool_results()
    );
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    // The turn is over and the task runs: the status line says so.
    let pane = rig
        .claude
        .wait_for_pane("the status line with the task", LONG, |p| {
            p.lines()
                .any(|l| l.contains("a2a-mod:") && l.contains(&format!("{alias} slow 12 build")))
        });
    assert!(rig.wakes().is_empty(), "woken too early:\n{pane}");

    let wake = rig.model.wait_for_request("the wake-up", LONG, is_wake);
    assert_wake(
        &wake,
        &format!("a2a: {alias} task {short}… completed"),
        "done: build",
    );
    assert!(wake.new_text().contains(&id));
    rig.claude.wait_for_text("WOKEN-BY-A2A", LONG);
    let send_at = rig
        .worker()
        .events()
        .into_iter()
        .find(|e| e.is_send())
        .expect("the worker logged the send")
        .at_ms;
    let end_at = send_at + 12_000;
    let latency = wall_ms(&wake) - end_at;
    // Split: how long until a poll saw the end (the 5 s cadence's phase), then the rest (settle,
    // the monitor's tick, Claude Code's delivery).
    let seen = rig
        .worker()
        .events()
        .into_iter()
        .filter(|e| e.is_get() && e.at_ms >= end_at)
        .map(|e| e.at_ms - end_at)
        .min()
        .unwrap_or(-1);
    eprintln!(
        "WAKE-LATENCY {kind:?} {latency} ms (task end at the worker → wake request; first poll after the end +{seen} ms, then {} ms)",
        latency - seen
    );
    // Exactly once: no second wake and no context again on the next prompt.
    rig.claude.send_keys("AFTER");
    let after = rig.model.wait_for_request("the AFTER turn", LONG, |r| {
        r.is_main_loop() && r.last_user_text().contains("AFTER")
    });
    assert!(!system_text(&after).contains("a2a-mod notice"));
    assert_eq!(rig.wakes().len(), 1, "{}", rig.model.summary());
}

/// Claude is busy in an 8 s Bash call when a 2 s task ends: no separate wake turn; the
/// notification and the result are folded into the request that carries the Bash result.
fn long_tool_call_joins_the_turn(kind: Kind) {
    let alias = alias_of(kind);
    let script = Script::new()
        .rule(Rule::on_tool_result_for("Bash").text("BASH-AND-TASK-DONE"))
        .rule(Rule::on_tool_result_for(SEND).tool_use(
            "Bash",
            json!({"command": "sleep 8", "description": "Wait a while"}),
        ))
        .rule(send_on(
            "BUSY",
            vec![json!({"worker": alias, "message": "slow 2 build"})],
        ))
        .rule(Rule::when("wake", is_wake).text("SEPARATE-WAKE"));
    let Some(mut rig) = Rig::start(
        kind,
        alias,
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 6)),
            allow: vec!["Bash(sleep 8)"],
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("BUSY");
    let bash = rig.model.wait_for_request("the Bash result", LONG, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.tool_name.as_deref() == Some("Bash"))
    });
    rig.claude.wait_for_text("BASH-AND-TASK-DONE", LONG);
    let id = rig.task_ids().pop().expect("task");
    let short: String = id.chars().take(4).collect();
    assert_eq!(
        events(&bash),
        [format!("a2a: {alias} task {short}… completed")],
        "{}",
        bash.new_text()
    );
    let ctx = system_text(&bash);
    assert_eq!(ctx.matches("[a2a-mod notice").count(), 1, "{ctx}");
    assert!(ctx.contains("done: build"), "{ctx}");
    assert!(
        rig.model.turns().iter().all(|r| r.answered_by != "wake"),
        "{}",
        rig.model.summary()
    );
}

/// Two tasks that end together make one wake-up listing both.
fn two_tasks_share_one_wake(kind: Kind) {
    let alias = alias_of(kind);
    // Both end at one instant, 6 s after the model asks for them, however far apart Claude Code
    // then makes the two calls (one after the other, with their hooks between: under load
    // seconds apart). The ends must be seen when they happen, so the worker streams: polls go
    // out a poll interval after each send, as far apart as the sends, and two ends seen 0.3 s
    // apart are two batches by design. The batching rule (settle) is what is tested here.
    let script = Script::new()
        .rule(Rule::when("wake", is_wake).text("WOKEN-FOR-TWO"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-TWO"))
        .rule(Rule::on_user_text("TWO").reply_with(move |r| {
            if !r.deferred_tools().iter().any(|t| t == SEND) {
                return Reply::text("NO-TOOLS-YET");
            }
            let at = a2a_mod::testing::now_ms() + 6000;
            let send =
                |w: &str| json!({"worker": alias, "message": format!("slow-until {at} {w}")});
            Reply::tool_use(SEND, send("alpha")).and_tool_use(SEND, send("beta"))
        }));
    let Some(mut rig) = Rig::start(
        kind,
        alias,
        script,
        RigOpts {
            // No poll before the ends: they are seen on the streams, as they happen.
            timing: Some(("[]", 10.0, 6)),
            peer_args: match kind {
                Kind::Fake => &["--streaming", "on"],
                _ => &[],
            },
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("TWO");
    let wake = rig.model.wait_for_request("the wake-up", LONG, is_wake);
    rig.claude.wait_for_text("WOKEN-FOR-TWO", LONG);
    let sends: Vec<i64> = rig
        .worker()
        .events()
        .into_iter()
        .filter(|e| e.is_send())
        .map(|e| e.at_ms)
        .collect();
    eprintln!("TWO-SENDS {kind:?} {sends:?} (both end at one instant)");
    assert!(
        wake.tool_results().is_empty(),
        "the tasks ended before the turn did:\n{}",
        rig.model.summary()
    );
    assert_eq!(
        events(&wake),
        [format!("a2a: 2 tasks finished ({alias} ✓, {alias} ✓)")],
        "{}",
        wake.new_text()
    );
    let ctx = system_text(&wake);
    assert!(
        ctx.contains("done: alpha") && ctx.contains("done: beta"),
        "{ctx}"
    );
    assert_eq!(ctx.matches("[a2a-mod notice").count(), 1, "{ctx}");
    // Nothing else is announced later.
    rig.claude.send_keys("AFTER");
    rig.model.wait_for_request("the AFTER turn", LONG, |r| {
        r.is_main_loop() && r.last_user_text().contains("AFTER")
    });
    assert_eq!(rig.wakes().len(), 1, "{}", rig.model.summary());
}

/// Claude Code's own wake for an MCP task it follows (docs/claude-code.md "Native MCP tasks").
fn is_native_wake(r: &Recorded) -> bool {
    is_wake(r) && r.new_text().contains("<summary>MCP task")
}

/// The answer `send` got in the request after it.
fn send_result(r: &Recorded) -> Option<String> {
    r.tool_results()
        .into_iter()
        .find(|t| t.tool_name.as_deref() == Some(SEND))
        .map(|t| t.text)
}

/// A rig with native tasks on whose model sends `message` at "GO", and answers the send's result
/// with `sent`, a wake with "NATIVE-WOKEN" and "AFTER" with "AFTER-DONE".
fn native_rig(message: &str, sent: &str, timing: Option<(&'static str, f64, u32)>) -> Option<Rig> {
    let script = Script::new()
        .rule(Rule::when("wake", is_wake).text("NATIVE-WOKEN"))
        .rule(Rule::on_user_text("AFTER").text("AFTER-DONE"))
        .rule(Rule::on_tool_result_for(SEND).text(sent))
        .rule(send_on(
            "GO",
            vec![json!({"worker": "fake", "message": message})],
        ));
    let opts = RigOpts {
        timing,
        native: true,
        ..Default::default()
    };
    Rig::start(Kind::Fake, "fake", script, opts)
}

impl Rig {
    /// The user's next turn ("AFTER"), once the model got it: any wake due before it has come.
    fn after_turn(&mut self) {
        self.claude.send_keys("AFTER");
        self.model.wait_for_request("the AFTER turn", LONG, |r| {
            r.is_main_loop() && r.last_user_text().contains("AFTER")
        });
    }
}

/// Native tasks on: a send that outlives its window (the seed's 7.5 s) comes back as an MCP task,
/// which Claude Code shows in its footer and polls itself; its end wakes the idle session once,
/// by Claude Code's own notification holding the wake line (no monitor line), with the result
/// as hidden context once.
#[test]
fn native_task_outlives_the_window_and_claude_code_wakes_claude_once() {
    let Some(mut rig) = native_rig("slow 14 build", "SENT-NATIVE", None) else {
        return;
    };
    rig.prompt("GO");
    let sent = rig
        .model
        .wait_for_request("the send's answer", LONG, |r| send_result(r).is_some());
    let placeholder = send_result(&sent).unwrap_or_default();
    let id = rig.task_ids().pop().expect("the task is in the store");
    assert!(
        placeholder.contains("background") && placeholder.contains(&id),
        "not an MCP task with our note: {placeholder}"
    );
    // The footer counts the monitor and the MCP task (docs/claude-code.md "Native MCP tasks").
    rig.claude.wait_for_text("2 background tasks", LONG);
    // The status line still shows it.
    rig.claude.wait_for_text("fake slow 14 build", LONG);
    let doctor = rig.home().command().arg("doctor").output();
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor.contains("Claude Code's own MCP tasks (1 live task(s), [claude] native_tasks)"),
        "{doctor}"
    );
    let wake = rig
        .model
        .wait_for_request("Claude Code's wake", LONG, is_native_wake);
    let short: String = id.chars().take(4).collect();
    let text = wake.new_text();
    assert!(
        text.contains(&format!("a2a: fake task {short}… completed")),
        "{text}"
    );
    assert!(events(&wake).is_empty(), "a monitor line too: {text}");
    let ctx = system_text(&wake);
    assert_eq!(ctx.matches("[a2a-mod notice").count(), 1, "{ctx}");
    assert_eq!(ctx.matches("done: build").count(), 1, "{ctx}");
    rig.claude.wait_for_text("NATIVE-WOKEN", LONG);
    // Nothing else announces it: the next turn is the user's, and no wake came between.
    rig.after_turn();
    assert_eq!(rig.wakes().len(), 1, "{}", rig.model.summary());
}

/// Native tasks on: a task that ends inside the window is the plain answer, as ever.
#[test]
fn native_tasks_on_a_quick_task_still_answers_inline() {
    let Some(mut rig) = native_rig("slow 2 quick", "SENT-QUICK", None) else {
        return;
    };
    rig.prompt("GO");
    let sent = rig
        .model
        .wait_for_request("the send's answer", LONG, |r| send_result(r).is_some());
    let answer = send_result(&sent).unwrap_or_default();
    assert!(answer.contains("done: quick"), "{answer}");
    rig.claude.wait_for_text("SENT-QUICK", LONG);
    rig.after_turn();
    assert!(rig.wakes().is_empty(), "{}", rig.model.summary());
}

/// Native tasks on: a task that asks a question once in the background ends its MCP task with a
/// result naming the question and the taskId to answer with (never Claude Code's own input
/// request, which would ask the user), and the answer sent with that taskId gets the result.
#[test]
fn native_task_asking_a_question_tells_claude_how_to_answer() {
    let script = Script::new()
        .rule(Rule::on_tool_result_for(SEND).reply_with(|r| {
            let last = r.tool_results().pop().map(|t| t.text).unwrap_or_default();
            Reply::text(if last.contains("you said") {
                "ANSWERED"
            } else {
                "SENT-ASK"
            })
        }))
        .rule(Rule::when("wake", is_native_wake).reply_with(|r| {
            let id = task_id_in(&r.new_text()).unwrap_or_default();
            Reply::tool_use(
                SEND,
                json!({"worker": "fake", "taskId": id, "message": "blue"}),
            )
        }))
        .rule(send_on(
            "GO",
            vec![json!({"worker": "fake", "message": "ask-after 3 which colour?"})],
        ));
    let opts = RigOpts {
        timing: Some(("[0.2]", 0.5, 6)),
        native: true,
        ..Default::default()
    };
    let Some(mut rig) = Rig::start(Kind::Fake, "fake", script, opts) else {
        return;
    };
    rig.prompt("GO");
    rig.claude.wait_for_text("SENT-ASK", LONG);
    let wake = rig
        .model
        .wait_for_request("Claude Code's wake", LONG, is_native_wake);
    let id = rig.task_ids().pop().expect("the task is in the store");
    let text = wake.new_text();
    assert!(
        text.contains("which colour?") && text.contains(&format!("taskId \"{id}\"")),
        "{text}"
    );
    let answered = rig
        .model
        .wait_for_request("the answer's result", LONG, |r| {
            send_result(r).is_some_and(|t| t.contains("you said: blue"))
        });
    assert!(answered.is_main_loop());
    rig.claude.wait_for_text("ANSWERED", LONG);
    assert_eq!(rig.wakes().len(), 1, "{}", rig.model.summary());
}

/// Native tasks on: the user stops the task in Claude Code's `/tasks` panel (`x`), and the worker
/// gets the CancelTask.
#[test]
fn native_task_stopped_in_the_task_panel_is_cancelled_at_the_worker() {
    let Some(mut rig) = native_rig("slow 120 long", "SENT-LONG", Some(("[0.2]", 0.5, 6))) else {
        return;
    };
    rig.prompt("GO");
    rig.claude.wait_for_text("SENT-LONG", LONG);
    // The footer counts the monitor and the MCP task; ↓ focuses it, Enter opens the panel,
    // ↓ Enter opens the MCP task (our status message, our poll interval), x stops it.
    rig.claude.wait_for_text("2 background tasks", LONG);
    rig.claude.send_key("Down");
    rig.claude.send_key("Enter");
    rig.claude.wait_for_text("MCP tasks", LONG);
    rig.claude.send_key("Down");
    rig.claude.send_key("Enter");
    rig.claude.wait_for_text("fake working", LONG);
    rig.claude.wait_for_text("checks every 500ms", LONG);
    rig.claude.send_key("x");
    let id = rig.task_ids().pop().expect("the task is in the store");
    wait_until("the worker to get the cancel", LONG, || {
        rig.worker()
            .events()
            .iter()
            .any(|e| e.method == "CancelTask" && e.task_id.as_deref() == Some(&id))
    });
    wait_until("the task to end canceled in the store", LONG, || {
        stored_tasks(rig.home())
            .iter()
            .any(|t| t["task_id"] == id.as_str() && t["state"] == "canceled")
    });
}

/// What tells Claude of tasks in this request: our hooks' hidden context and, in a wake, the
/// wake's own text (where the asyncRewake waiter puts the results, `hook/rewake.rs`). Not a tool
/// result: Claude Code folds a wake that comes while the model works into the turn that carries
/// the tool's result, which says what it says on its own.
fn told_text(r: &Recorded) -> String {
    let mut text = system_text(r);
    if is_wake(r) {
        text.push('\n');
        text.push_str(&r.new_text_without_tool_results());
    }
    text
}

/// A task asks a question: Claude is told it once, with how to answer; the model answers with
/// `send` and the same `taskId`, and gets the result: in the tool result when the worker says it
/// finished (the fake and a2a-sdk 1.x), or by a wake when its answer to the follow-up still shows
/// the old waiting state (a2a-sdk 0.3). Never the old question again.
///
/// Three paths tell the question, each right, and the test says which it saw: the monitor's wake
/// (the line, then the hook's hidden context), the asyncRewake waiter's wake (the line and the
/// question in its own text, no hidden context: the monitor had not taken its lock yet, or looked
/// stuck; that is the failure 2 of 10 loaded CI runs showed while the test knew only the first
/// path), or the send's own turn (the poller's stream saw the question before Claude Code ran the
/// send's PostToolUse hook, which then hands it over; a loaded CI run did so, and a hook delayed
/// 400 ms does so every time, the monitor's line then folded into the answer's turn).
fn input_required_round_trip(kind: Kind) {
    let alias = alias_of(kind);
    let asked = |r: &Recorded| told_text(r).contains("Which colour?");
    let script = Script::new()
        .rule(
            Rule::when("answered", |r| {
                send_completed_with(r, "you said: blue") || told_text(r).contains("you said: blue")
            })
            .text("GOT-THE-ANSWER"),
        )
        .rule(Rule::when("asked", asked).reply_with(move |r| {
            let id = task_id_in(&told_text(r)).unwrap_or_default();
            Reply::tool_use(
                SEND,
                json!({"worker": alias, "message": "blue", "taskId": id}),
            )
        }))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-OK"))
        .rule(send_on(
            "ASK",
            vec![json!({"worker": alias, "message": "ask Which colour?"})],
        ));
    let Some(mut rig) = Rig::start(
        kind,
        alias,
        script,
        RigOpts {
            timing: Some(("[]", 0.5, 6)),
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("ASK");
    let question = rig
        .model
        .wait_for_request("the question told to Claude", LONG, asked);
    let id = rig.task_ids().pop().expect("task");
    let short: String = id.chars().take(4).collect();
    let by_wake = is_wake(&question);
    let path = if !by_wake {
        assert!(
            question
                .tool_results()
                .iter()
                .any(|t| t.tool_name.as_deref() == Some(SEND)),
            "the question came neither by a wake nor with the send's turn:\n{}",
            rig.model.summary()
        );
        "with the send's turn"
    } else if events(&question).is_empty() {
        "by the waiter's wake"
    } else {
        assert_eq!(
            events(&question),
            [format!("a2a: {alias} task {short}… input-required")]
        );
        "by the monitor's wake"
    };
    let told = told_text(&question);
    if by_wake {
        assert!(
            told.contains(&format!("a2a: {alias} task {short}… input-required")),
            "{told}"
        );
    }
    assert!(
        told.contains(&format!(
            "call send with worker \"{alias}\", taskId \"{id}\""
        )),
        "{told}"
    );
    // The model's answer goes out; what comes back must not be the old question.
    let replied = rig
        .model
        .wait_for_request("the answer's send result", LONG, |r| {
            r.seq > question.seq
                && r.tool_results()
                    .iter()
                    .any(|t| t.tool_name.as_deref() == Some(SEND))
        });
    let reply = &replied.tool_results()[0].text;
    assert!(reply.contains(&id), "{reply}");
    assert!(
        !reply.contains("Which colour?") && !reply.contains("input-required"),
        "the answer came back as the old question: {reply}"
    );
    let answered = rig
        .model
        .wait_for_request("the result of the answer", LONG, |r| {
            r.answered_by == "answered"
        });
    rig.claude.wait_for_text("GOT-THE-ANSWER", LONG);
    let inline = send_completed_with(&answered, "you said: blue");
    if !inline {
        // Not in a tool result that says the task still runs (told once), but by a wake: the
        // completion of the same task.
        assert!(!reply.contains("you said: blue"), "told twice: {reply}");
        assert!(is_wake(&answered), "{}", rig.model.summary());
        let told = told_text(&answered);
        assert!(
            told.contains(&format!("a2a: {alias} task {short}… completed")),
            "{told}"
        );
    }
    eprintln!(
        "INPUT-REQUIRED {kind:?}: the question came {path}, the result {}",
        if inline {
            "in the tool result"
        } else {
            "by a wake"
        }
    );
    // Told once: no further wake and no context about it later.
    rig.claude.send_keys("AFTER");
    let after = rig.model.wait_for_request("the AFTER turn", LONG, |r| {
        r.is_main_loop() && r.last_user_text().contains("AFTER")
    });
    assert!(!system_text(&after).contains("a2a-mod notice"));
    // A wake for each thing a wake told; when the question came with the send's turn, the
    // wake line may already have been out (a wake with nothing new, never one telling the
    // question again).
    let wakes = rig.wakes().iter().filter(|r| is_a2a_wake(r)).count();
    let told_by_wakes = usize::from(by_wake) + usize::from(!inline);
    assert!(
        wakes == told_by_wakes || (!by_wake && wakes == told_by_wakes + 1),
        "{wakes} wakes:\n{}",
        rig.model.summary()
    );
    let times_told = |what: &str| {
        rig.model
            .turns()
            .iter()
            .filter(|r| told_text(r).contains(what))
            .count()
    };
    assert_eq!(
        (times_told("Which colour?"), times_told("you said: blue")),
        (1, usize::from(!inline)),
        "the question or the result was told twice:\n{}\nin each turn (wake, question, result):\n{}",
        rig.model.summary(),
        rig.model
            .turns()
            .iter()
            .map(|r| {
                let told = told_text(r);
                format!(
                    "#{}: {} {} {}",
                    r.seq,
                    is_wake(r),
                    told.contains("Which colour?"),
                    told.contains("you said: blue")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(rig.task_ids(), [id], "the answer went to the same task");
}

/// The worker dies mid-task: after `max_failed_polls` failed checks Claude is woken with the
/// lost-contact message.
fn lost_contact_wakes_claude(kind: Kind) {
    let alias = alias_of(kind);
    let script = Script::new()
        .rule(Rule::when("wake", is_wake).text("WOKEN-LOST"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-OK"))
        .rule(send_on(
            "LOSE",
            vec![json!({"worker": alias, "message": "slow 300 forever"})],
        ));
    let Some(mut rig) = Rig::start(
        kind,
        alias,
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 3)),
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("LOSE");
    rig.claude.wait_for_text("SENT-OK", LONG);
    rig.worker.as_mut().expect("started here").kill();
    let wake = rig
        .model
        .wait_for_request("the lost-contact wake", LONG, is_wake);
    let id = rig.task_ids().pop().expect("task");
    let short: String = id.chars().take(4).collect();
    assert_eq!(
        events(&wake),
        [format!("a2a: {alias} task {short}… lost contact")]
    );
    let ctx = system_text(&wake);
    assert!(
        ctx.contains(&format!(
            "{alias} task {id}: lost contact with the worker after 3 failed checks. Use the task tool to try again."
        )),
        "{ctx}"
    );
    rig.claude.wait_for_text("WOKEN-LOST", LONG);
}

#[test]
fn fake_worker_task_wakes_idle_claude() {
    wakes_idle_claude(Kind::Fake);
}

#[test]
fn python_worker_task_wakes_idle_claude() {
    wakes_idle_claude(Kind::PyV1);
}

#[test]
fn fake_worker_task_ending_during_a_long_tool_call_joins_the_turn() {
    long_tool_call_joins_the_turn(Kind::Fake);
}

#[test]
fn python_worker_task_ending_during_a_long_tool_call_joins_the_turn() {
    long_tool_call_joins_the_turn(Kind::PyV1);
}

#[test]
fn fake_worker_two_tasks_ending_together_share_one_wake() {
    two_tasks_share_one_wake(Kind::Fake);
}

#[test]
fn python_worker_two_tasks_ending_together_share_one_wake() {
    two_tasks_share_one_wake(Kind::PyV1);
}

#[test]
fn fake_worker_input_required_is_answered_with_the_same_task_id() {
    input_required_round_trip(Kind::Fake);
}

#[test]
fn python_worker_input_required_is_answered_with_the_same_task_id() {
    input_required_round_trip(Kind::PyV1);
}

/// a2a-sdk 0.3 answers the follow-up with the task's old state (tests/peers/README.md, finding 2).
#[test]
fn python_v03_worker_input_required_is_answered_with_the_same_task_id() {
    input_required_round_trip(Kind::PyV03);
}

#[test]
fn fake_worker_lost_contact_wakes_claude_with_the_message() {
    lost_contact_wakes_claude(Kind::Fake);
}

#[test]
fn python_worker_lost_contact_wakes_claude_with_the_message() {
    lost_contact_wakes_claude(Kind::PyV1);
}

/// `/clear` mid-task: the status line (new session id) still shows the task, the monitor (old
/// id) still wakes the cleared conversation, and the hook (new id) still attaches the result.
#[test]
fn clear_mid_task_keeps_status_wake_and_result() {
    let script = idle_script("fake");
    let Some(mut rig) = Rig::start(
        Kind::Fake,
        "fake",
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 6)),
            ..Default::default()
        },
    ) else {
        return;
    };
    let first = rig.prompt("GO");
    let old_id = first.session_id().expect("session header").to_owned();
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    rig.claude.send_keys("/clear");
    // The status line of the new session still shows the task.
    wait_until("the status line after /clear", LONG, || {
        let p = rig.claude.pane_text();
        !p.contains("SENT-WILL-WAIT") && p.contains("fake slow 12 build")
    });
    let wake = rig
        .model
        .wait_for_request("the wake after /clear", LONG, is_wake);
    let new_id = wake.session_id().expect("session header").to_owned();
    assert_ne!(new_id, old_id, "/clear starts a new session id");
    let id = rig.task_ids().pop().expect("task");
    let short: String = id.chars().take(4).collect();
    assert_eq!(
        events(&wake),
        [format!("a2a: fake task {short}… completed")]
    );
    // The first request after /clear carries hook context inside its leading system text
    // (docs/claude-code.md "Hooks and hidden context"), so look at the whole body.
    let body = wake.body.to_string();
    assert!(body.contains("[a2a-mod notice"), "no context after /clear");
    assert!(body.contains("done: build"));
    rig.claude.wait_for_text("WOKEN-BY-A2A", LONG);
}

/// `/exit` mid-task (the poller dies with the session here), then `claude --resume <id>`: the
/// task is picked up again and the wake-up arrives in the resumed session.
#[test]
fn resume_after_exit_mid_task_still_wakes() {
    let script = Script::new()
        .rule(Rule::when("wake", is_wake).text("WOKEN-AFTER-RESUME"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(send_on(
            "GO",
            vec![json!({"worker": "fake", "message": "slow 15 build"})],
        ));
    let Some(mut rig) = Rig::start(
        Kind::Fake,
        "fake",
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 6)),
            ..Default::default()
        },
    ) else {
        return;
    };
    let first = rig.prompt("GO");
    let session = first.session_id().expect("session header").to_owned();
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    rig.claude.send_keys("/exit");
    wait_until("claude to exit", LONG, || rig.claude.claude_pid().is_none());
    let Rig {
        model,
        claude,
        worker,
        ..
    } = rig;
    // Everything of the old session is gone now, the poller too.
    let home = claude.into_home();
    assert!(rig_store_has_live_task(&home));
    let Some(claude) = ClaudeSession::start(
        Rig::opts(&model, home, &[])
            .arg("--resume")
            .arg(session.clone()),
    ) else {
        return;
    };
    let wake = model.wait_for_request("the wake after resume", LONG, is_wake);
    assert_eq!(wake.session_id(), Some(session.as_str()));
    assert!(
        system_text(&wake).contains("done: build") || wake.body.to_string().contains("done: build")
    );
    claude.wait_for_text("WOKEN-AFTER-RESUME", LONG);
    drop(worker);
}

fn rig_store_has_live_task(home: &TempHome) -> bool {
    stored_tasks(home).iter().any(|t| t["ended_ms"].is_null())
}

/// Without the plugin (so without its monitor), the asyncRewake hook on `send` wakes the idle
/// session when the task ends, with the wake line and the result in the same notification.
#[test]
fn without_the_plugin_the_async_rewake_hook_wakes_claude() {
    let script = Script::new()
        .rule(Rule::when("wake", is_wake).text("WOKEN-BY-REWAKE"))
        .rule(Rule::on_tool_result_for(NO_PLUGIN_SEND).text("SENT-WILL-WAIT"))
        .rule(send_with(
            NO_PLUGIN_SEND,
            "GO",
            vec![json!({"worker": "fake", "message": "slow 6 build"})],
        ));
    let Some(mut rig) = Rig::start(
        Kind::Fake,
        "fake",
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 6)),
            no_plugin: true,
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("GO");
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    rig.claude
        .wait_for_pane("the status line with the task", LONG, |p| {
            p.contains("fake slow 6 build")
        });
    let wake = rig.model.wait_for_request("the rewake", LONG, is_wake);
    let id = rig.task_ids().pop().expect("task");
    let short: String = id.chars().take(4).collect();
    let text = wake.new_text();
    assert!(
        text.contains(&format!("a2a: fake task {short}… completed")),
        "{text}"
    );
    assert!(
        text.contains("[a2a-mod notice") && text.contains("done: build"),
        "{text}"
    );
    assert_eq!(text.matches("done: build").count(), 1, "given once: {text}");
    rig.claude.wait_for_text("WOKEN-BY-REWAKE", LONG);
    assert_eq!(rig.wakes().len(), 1, "{}", rig.model.summary());
}

/// Pids of the session's `a2a-mod watch` monitors (the launcher `exec`s the binary).
fn monitor_pids(rig: &Rig) -> Vec<u32> {
    rig.claude
        .processes()
        .into_iter()
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let args: Vec<&[u8]> = cmd.split(|b| *b == 0).collect();
            args.len() >= 2 && args[0].ends_with(b"a2a-mod") && args[1] == b"watch"
        })
        .collect()
}

/// Waits for the plugin's monitor to run and hold its lock, then `kill -9`s it.
fn kill_monitor(rig: &Rig) {
    let sessions = a2a_mod::testing::Ctx::at(&rig.home().a2a_home()).sessions_dir();
    wait_until("the monitor to start and hold its lock", LONG, || {
        !monitor_pids(rig).is_empty()
            && std::fs::read_dir(&sessions).is_ok_and(|d| {
                d.filter_map(Result::ok).any(|e| {
                    e.file_name().to_string_lossy().ends_with(".monitor.lock")
                        && a2a_mod::testing::is_locked(&e.path())
                })
            })
    });
    for pid in monitor_pids(rig) {
        a2a_mod_os::process::signal(pid, a2a_mod_os::process::Signal::Kill);
    }
    wait_until("the monitor to be gone", LONG, || {
        monitor_pids(rig).is_empty()
    });
    // Claude Code tells the model the monitor died, as a notification of its own. Until that has
    // reached the model it may be folded into the next turn, whose tool result the script would
    // then answer as that notification (seen in CI): wait for it, so the turns stay apart.
    rig.model
        .wait_for_request("Claude Code's notice that the monitor died", LONG, |r| {
            is_wake(r) && !is_a2a_wake(r)
        });
    // Both scripts that kill the monitor answer that notice so; its turn is over once shown.
    rig.claude.wait_for_text("OTHER-NOTIFICATION", LONG);
}

/// A wake-up from a2a-mod (monitor line or rewake), not another notification: Claude Code also
/// tells the model when a monitor dies ("Monitor … script failed (exit 137)").
fn is_a2a_wake(r: &Recorded) -> bool {
    is_wake(r) && r.new_text().contains("a2a: ")
}

/// No wake-up depends on the monitor alone: with the plugin's monitor `kill -9`ed before the
/// send, or while the task runs, the plugin's asyncRewake waiter still wakes the idle session
/// when the task ends, once.
fn monitor_killed_still_wakes(before_send: bool) {
    let script = Script::new()
        .rule(Rule::when("a2a wake", is_a2a_wake).text("WOKEN-BY-A2A"))
        .rule(Rule::when("other notification", is_wake).text("OTHER-NOTIFICATION"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(send_on(
            "GO",
            vec![json!({"worker": "fake", "message": "slow 12 build"})],
        ));
    let Some(mut rig) = Rig::start(
        Kind::Fake,
        "fake",
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 6)),
            ..Default::default()
        },
    ) else {
        return;
    };
    if before_send {
        kill_monitor(&rig);
    }
    rig.prompt("GO");
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    if !before_send {
        kill_monitor(&rig);
    }
    let a2a_wakes = |rig: &Rig| rig.model.turns().into_iter().filter(is_a2a_wake).count();
    assert_eq!(a2a_wakes(&rig), 0, "woken before the task ended");
    let wake = rig.model.wait_for_request("the wake-up", LONG, is_a2a_wake);
    let id = rig.task_ids().pop().expect("task");
    let short: String = id.chars().take(4).collect();
    let text = wake.new_text();
    assert!(
        text.contains(&format!("a2a: fake task {short}… completed")),
        "{text}"
    );
    assert_eq!(text.matches("done: build").count(), 1, "given once: {text}");
    rig.claude.wait_for_text("WOKEN-BY-A2A", LONG);
    rig.claude.send_keys("AFTER");
    let after = rig.model.wait_for_request("the AFTER turn", LONG, |r| {
        r.is_main_loop() && r.last_user_text().contains("AFTER")
    });
    assert!(!system_text(&after).contains("a2a-mod notice"));
    assert_eq!(a2a_wakes(&rig), 1, "{}", rig.model.summary());
}

#[test]
fn monitor_killed_before_the_send_the_waiter_still_wakes_claude() {
    monitor_killed_still_wakes(true);
}

#[test]
fn monitor_killed_while_the_task_runs_the_waiter_still_wakes_claude() {
    monitor_killed_still_wakes(false);
}

/// The waiter lives while the session has live tasks, not just until its first wake-up: with the
/// monitor `kill -9`ed, two tasks ending 8 s apart give two wake-ups (the second from the waiter
/// the wake turn's Stop started), each result once.
#[test]
fn monitor_killed_two_batches_each_wake_claude() {
    let script = Script::new()
        .rule(Rule::when("a2a wake", is_a2a_wake).text("WOKEN-BY-A2A"))
        .rule(Rule::when("other notification", is_wake).text("OTHER-NOTIFICATION"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(send_on(
            "GO",
            vec![
                json!({"worker": "fake", "message": "slow 5 first"}),
                json!({"worker": "fake", "message": "slow 12 second"}),
            ],
        ));
    let Some(mut rig) = Rig::start(
        Kind::Fake,
        "fake",
        script,
        RigOpts {
            timing: Some(("[0.2]", 0.5, 6)),
            ..Default::default()
        },
    ) else {
        return;
    };
    kill_monitor(&rig);
    rig.prompt("GO");
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    let a2a_wakes = |rig: &Rig| -> Vec<Recorded> {
        rig.model.turns().into_iter().filter(is_a2a_wake).collect()
    };
    wait_until("two wake-ups", LONG, || a2a_wakes(&rig).len() >= 2);
    let w = a2a_wakes(&rig);
    let all: String = w.iter().map(|r| r.new_text()).collect();
    assert_eq!(all.matches("done: first").count(), 1, "{all}");
    assert_eq!(all.matches("done: second").count(), 1, "{all}");
    rig.claude.send_keys("AFTER");
    rig.model.wait_for_request("the AFTER turn", LONG, |r| {
        r.is_main_loop() && r.last_user_text().contains("AFTER")
    });
    assert_eq!(a2a_wakes(&rig).len(), 2, "{}", rig.model.summary());
}
