//! `a2a-mod serve` in front of clients nobody here wrote, with the real Claude Code behind it:
//! the official Python `a2a-sdk` (1.x and 0.3.x) and `@a2a-js/sdk` clients
//! (`tests/peers/client.py`, `tests/peers/js/client.mjs`) over v1 and v0.3, JSON-RPC and HTTP+JSON,
//! streaming and not; and an interactive Claude Code in tmux with a2a-mod installed, handing a
//! task to a second, headless Claude Code behind serve and woken with its answer, or with its
//! permission prompt to answer first.

use crate::claude_wake::{Rig, RigOpts, assert_wake, is_wake, send_on, system_text, task_id_in};
use crate::fake::model_api::{Recorded, Reply, Rule, Script};
use crate::peers::claude::SEND;
use crate::serve::{LONG, Serve, numbered, server_env};
use crate::util::{append_config, skip};
use crate::workers::{peers_dir, repo};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

/// One official client: how to run it, and what it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sdk {
    /// a2a-sdk 1.x: v1 and v0.3, both bindings.
    Py1,
    /// a2a-sdk 0.3.x: v0.3 only.
    Py03,
    /// @a2a-js/sdk 1.x: v1 and v0.3, both bindings.
    Js,
}

impl Sdk {
    fn command(self) -> Option<Command> {
        let (prog, script): (PathBuf, PathBuf) = match self {
            Sdk::Py1 | Sdk::Py03 => {
                let venv = if self == Sdk::Py1 {
                    "venv-v1"
                } else {
                    "venv-v03"
                };
                let py = peers_dir().join(venv).join("bin/python");
                if !py.exists() {
                    skip(&format!(
                        "{self:?} client: {} missing — run tests/peers/setup.sh",
                        py.display()
                    ));
                    return None;
                }
                (py, repo().join("tests/peers/client.py"))
            }
            Sdk::Js => {
                let node = crate::workers::js_peers()?;
                (node, repo().join("tests/peers/js/client.mjs"))
            }
        };
        let mut c = Command::new(prog);
        c.arg(script).env("A2A_PEERS_DIR", peers_dir());
        Some(c)
    }

    fn versions(self) -> &'static [&'static str] {
        match self {
            Sdk::Py03 => &["0.3"],
            Sdk::Py1 | Sdk::Js => &["1", "0.3"],
        }
    }
}

/// Runs the client with `args` against the card; its last line (the outcome).
fn client(sdk: Sdk, card: &str, args: &[&str]) -> Option<(Value, Vec<Value>)> {
    let mut c = sdk.command()?;
    c.args(["--card-url", card, "--timeout", "60"]).args(args);
    let out = c.output().expect("run the SDK client");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("{sdk:?} printed {l:?}")))
        .collect();
    let last = lines.last().cloned().unwrap_or_else(|| {
        panic!(
            "{sdk:?} {args:?} printed nothing; stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Some((last, lines))
}

#[test]
fn the_official_sdk_clients_drive_serve_every_way() {
    let answer = numbered(60);
    let a = answer.clone();
    let script = Script::new()
        .rule(Rule::on_user_text("what word did I give").reply_with(|r| {
            let earlier = serde_json::to_string(r.messages()).unwrap_or_default();
            Reply::text(if earlier.contains("the word is PAPAYA") {
                "PAPAYA"
            } else {
                "NO-MEMORY"
            })
        }))
        .rule(Rule::on_user_text("the word is PAPAYA").text("NOTED"))
        .rule(
            Rule::on_user_text("a long one")
                .reply_with(|_| Reply::text(numbered(400)).paced(400, Duration::from_millis(200))),
        )
        .rule(
            Rule::on_user_text("count for me")
                .reply_with(move |_| Reply::text(a.clone()).paced(20, Duration::from_millis(20))),
        )
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    append_config(&env.home.a2a_home(), "\n[serve]\nmax_concurrent = 4\n");
    let serve = Serve::start(&env, &["--name", "coder"]);
    let card = format!("{}/.well-known/agent-card.json", serve.url);

    let mut cases = Vec::new();
    for sdk in [Sdk::Py1, Sdk::Py03, Sdk::Js] {
        for version in sdk.versions() {
            for binding in ["jsonrpc", "rest"] {
                for stream in [false, true] {
                    cases.push((sdk, *version, binding, stream));
                }
            }
        }
    }
    // Four at a time: each case is a client process and a Claude Code run.
    let results: Vec<_> = cases
        .chunks(4)
        .flat_map(|batch| {
            std::thread::scope(|s| {
                let handles: Vec<_> = batch
                    .iter()
                    .map(|&(sdk, version, binding, stream)| {
                        let card = card.clone();
                        s.spawn(move || {
                            let mut args = vec![
                                "--binding",
                                binding,
                                "--version",
                                version,
                                "--message",
                                "count for me",
                            ];
                            if stream {
                                args.push("--stream");
                            }
                            ((sdk, version, binding, stream), client(sdk, &card, &args))
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for (case, got) in results {
        let Some((last, lines)) = got else {
            return;
        };
        assert_eq!(last["state"], "completed", "{case:?}: {last}");
        let (sdk, version, binding, stream) = case;
        if stream {
            let chunks = lines
                .iter()
                .filter(|l| l["event"] == "artifact-update")
                .count();
            assert!(
                chunks > 1,
                "{case:?}: the answer streamed in chunks ({chunks})"
            );
        }
        // @a2a-js/sdk 1.3.0's v0.3 REST stream drops `append`, so each chunk reads as the whole
        // (tests/peers/README.md): only its end is checked there.
        if sdk == Sdk::Js && version == "0.3" && binding == "rest" && stream {
            let text = last["text"].as_str().unwrap_or_default();
            assert!(
                !text.is_empty() && answer.ends_with(text),
                "{case:?}: {last}"
            );
        } else {
            assert_eq!(last["text"], answer.as_str(), "{case:?}: {last}");
        }
        assert!(
            last["metadata"]["claudeCode"]["costUsd"].is_number() || stream,
            "{case:?}: {last}"
        );
    }

    // Each client: a conversation over two tasks (the second run resumes the first), GetTask
    // of the first, and a cancel of a long one.
    for (sdk, version, binding) in [
        (Sdk::Py1, "1", "rest"),
        (Sdk::Py03, "0.3", "jsonrpc"),
        (Sdk::Js, "1", "jsonrpc"),
    ] {
        let base = ["--binding", binding, "--version", version];
        fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
            [base, extra].concat()
        }
        let Some((first, _)) = client(
            sdk,
            &card,
            &with(&base, &["--message", "the word is PAPAYA"]),
        ) else {
            return;
        };
        let ctx = first["contextId"].as_str().expect("contextId").to_string();
        let (second, _) = client(
            sdk,
            &card,
            &with(
                &base,
                &["--message", "what word did I give", "--context-id", &ctx],
            ),
        )
        .unwrap();
        assert_eq!(
            (second["text"].as_str(), second["contextId"].as_str()),
            (Some("PAPAYA"), Some(ctx.as_str())),
            "{sdk:?}: {second}"
        );
        let id = first["taskId"].as_str().unwrap();
        let (got, _) = client(
            sdk,
            &card,
            &with(&base, &["--get", id, "--history-length", "5"]),
        )
        .unwrap();
        assert_eq!(
            (got["state"].as_str(), got["text"].as_str()),
            (Some("completed"), Some("NOTED")),
            "{sdk:?}: {got}"
        );
        let (long, _) = client(
            sdk,
            &card,
            &with(&base, &["--message", "a long one", "--no-wait"]),
        )
        .unwrap();
        let long_id = long["taskId"].as_str().unwrap().to_string();
        let (canceled, _) = client(sdk, &card, &with(&base, &["--cancel", &long_id])).unwrap();
        assert_eq!(canceled["state"], "canceled", "{sdk:?}: {canceled}");
        let (again, _) = client(sdk, &card, &with(&base, &["--cancel", &long_id])).unwrap();
        assert!(
            again["error"].is_object(),
            "{sdk:?}: a finished task is not cancelable: {again}"
        );
    }
}

/// Claude A (interactive, in tmux, a2a-mod installed as a plugin) hands a job to Claude B
/// (headless, behind `a2a-mod serve`), ends its turn, and is woken with B's answer.
#[test]
fn interactive_claude_code_hands_work_to_a_served_claude_code_and_is_woken() {
    let script_b = Script::new()
        .rule(Rule::on_user_text("check the build").reply_with(|_| {
            // About 10 s: past A's inline window, so A is woken by the monitor.
            Reply::text("REMOTE-CLAUDE-SAYS: the build is green")
                .paced(40, Duration::from_millis(250))
        }))
        .fallback_text("FALLBACK");
    let Some((_model_b, env_b)) = server_env(script_b) else {
        return;
    };
    let serve = Serve::start(&env_b, &["--name", "buildbox"]);
    let script_a = Script::new()
        .rule(Rule::when("wake", is_wake).text("WOKEN-BY-A2A"))
        .rule(Rule::on_tool_result_for(SEND).text("SENT-WILL-WAIT"))
        .rule(send_on(
            "GO",
            vec![json!({"worker": "buildbox", "message": "check the build"})],
        ));
    let Some(mut rig) = Rig::start_at(&serve.url, "buildbox", script_a, RigOpts::default()) else {
        return;
    };
    rig.prompt("GO");
    rig.claude.wait_for_text("SENT-WILL-WAIT", LONG);
    let wake = rig.model.wait_for_request("the wake-up", LONG, is_wake);
    let id = rig.task_ids().pop().expect("the task is in A's store");
    let short: String = id.chars().take(4).collect();
    assert_wake(
        &wake,
        &format!("a2a: buildbox task {short}… completed"),
        "REMOTE-CLAUDE-SAYS: the build is green",
    );
    rig.claude.wait_for_text("WOKEN-BY-A2A", LONG);
}

/// Claude A (interactive, in tmux) hands Claude B (behind serve) a job whose command B's agent
/// does not allow: A is woken with B's permission prompt as the task's question, answers
/// `allow` on the same taskId with its send tool (the user let Claude answer them:
/// `[asks] approvals = "claude"`), and gets B's result (a wake, or the hooks of the answered
/// send's turn when the run ends first); the command ran on B's machine only after that answer.
#[test]
fn interactive_claude_code_answers_a_served_runs_permission_prompt_and_is_woken() {
    let script_b = Script::new()
        .rule(Rule::on_tool_result_for("Bash").reply_with(|r| {
            let how = if r.tool_results()[0].is_error {
                "REFUSED"
            } else {
                "RAN"
            };
            // A few seconds, so the end comes after A's answer has returned.
            Reply::text(format!("REMOTE-BASH-{how}: the build dir is clean"))
                .paced(12, Duration::from_millis(250))
        }))
        .rule(
            Rule::on_user_text("clean the build")
                .tool_use("Bash", json!({"command": "rm -rf build"})),
        )
        .fallback_text("FALLBACK");
    let Some((model_b, env_b)) = server_env(script_b) else {
        return;
    };
    let build = env_b.cwd.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let serve = Serve::start(&env_b, &["--name", "buildbox"]);
    let done = |r: &Recorded| is_wake(r) && system_text(r).contains("REMOTE-BASH-RAN");
    let script_a = Script::new()
        .rule(Rule::when("result", done).text("WOKEN-WITH-THE-RESULT"))
        .rule(claude_allows())
        .rule(Rule::on_tool_result_for(SEND).text("SENT-OK"))
        .rule(send_on(
            "GO",
            vec![json!({"worker": "buildbox", "message": "clean the build"})],
        ));
    let Some(mut rig) = Rig::start_at(
        &serve.url,
        "buildbox",
        script_a,
        RigOpts {
            // Nothing inline: the question and the result each come by a wake.
            timing: Some(("[]", 0.5, 6)),
            // The user lets Claude answer a worker's permission questions (a person does by
            // default: mcp::a_workers_permission_question_is_a_persons_to_answer).
            config: "\n[asks]\napprovals = \"claude\"\n",
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("GO");
    let question = rig
        .model
        .wait_for_request("the question's wake", LONG, is_asked);
    let id = rig.task_ids().pop().expect("the task is in A's store");
    let short: String = id.chars().take(4).collect();
    assert!(
        question
            .new_text()
            .contains(&format!("a2a: buildbox task {short}… input-required")),
        "{}",
        question.new_text()
    );
    let ctx = system_text(&question);
    assert!(
        ctx.contains("Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny"),
        "{ctx}"
    );
    // B's result reaches A once, by whichever comes first after the end: the wake (the common
    // case, the run being paced past A's answer), or the hooks of the turn A's answered `send`
    // returns to, when that turn is slower than the run (a loaded machine).
    let got = rig
        .model
        .wait_for_request("B's result to reach A", LONG, |r: &Recorded| {
            r.is_main_loop() && r.new_text().contains("REMOTE-BASH-RAN")
        });
    if is_wake(&got) {
        assert_wake(
            &got,
            &format!("a2a: buildbox task {short}… completed"),
            "REMOTE-BASH-RAN: the build dir is clean",
        );
        rig.claude.wait_for_text("WOKEN-WITH-THE-RESULT", LONG);
    } else {
        assert!(
            got.new_text()
                .contains("REMOTE-BASH-RAN: the build dir is clean"),
            "{}",
            got.new_text()
        );
    }
    assert!(!build.exists(), "the allowed command ran on B's machine");
    // And only after A had the question (A's model answers it at once): B's model got the
    // command's result after A's model got the question. (A look at the folder right after
    // the question would race A's own answer.)
    let ran = model_b
        .requests()
        .into_iter()
        .find(|r| {
            r.tool_results()
                .iter()
                .any(|t| t.tool_name.as_deref() == Some("Bash") && !t.is_error)
        })
        .expect("B's model got the command's result");
    assert!(
        ran.at > question.at,
        "the command ran before A had the question"
    );
}

/// A run's permission prompt reaches every official client structured, beside its line: the
/// status message's data part (the extension the card declares) names the tool, the command
/// and the answers, over v1 and v0.3, JSON-RPC and HTTP+JSON.
#[test]
fn the_official_sdk_clients_read_a_permission_prompt_structured() {
    let script = Script::new()
        .rule(Rule::on_user_text("clean the build").tool_use(
            "Bash",
            json!({"command": "rm -rf build", "description": "clean"}),
        ))
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    // Every case's run waits on its question: room for all of them at once.
    append_config(&env.home.a2a_home(), "\n[serve]\nmax_concurrent = 12\n");
    let serve = Serve::start(&env, &["--name", "coder"]);
    let card_url = format!("{}/.well-known/agent-card.json", serve.url);
    let (_, card) = crate::serve::http("GET", &card_url, None, &[]);
    assert_eq!(
        card["capabilities"]["extensions"][0]["uri"],
        a2a_mod_serve::ask::EXTENSION,
        "{card}"
    );
    let mut cases = Vec::new();
    for sdk in [Sdk::Py1, Sdk::Py03, Sdk::Js] {
        for version in sdk.versions() {
            for binding in ["jsonrpc", "rest"] {
                cases.push((sdk, *version, binding));
            }
        }
    }
    for batch in cases.chunks(4) {
        std::thread::scope(|s| {
            let runs: Vec<_> = batch
                .iter()
                .map(|&(sdk, version, binding)| {
                    let card_url = &card_url;
                    s.spawn(move || {
                        let args = [
                            "--version",
                            version,
                            "--binding",
                            binding,
                            "--message",
                            "clean the build",
                        ];
                        ((sdk, version, binding), client(sdk, card_url, &args))
                    })
                })
                .collect();
            for r in runs {
                let (case, got) = r.join().unwrap();
                let Some((last, _)) = got else { continue };
                assert_eq!(last["state"], "input-required", "{case:?}: {last}");
                let call = &last["statusData"][0]["toolCall"];
                assert_eq!(call["toolName"], "Bash", "{case:?}: {last}");
                assert_eq!(
                    call["confirmationRequest"]["executeDetails"]["command"], "rm -rf build",
                    "{case:?}: {last}"
                );
                let ids: Vec<&str> = call["confirmationRequest"]["options"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|o| o["id"].as_str())
                    .collect();
                assert_eq!(
                    ids,
                    ["proceed_once", "proceed_always", "cancel"],
                    "{case:?}"
                );
                assert!(
                    last["statusText"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("Claude wants to run Bash"),
                    "the line is still there: {case:?}: {last}"
                );
            }
        });
    }
}

/// A wake with a task's question.
fn is_asked(r: &Recorded) -> bool {
    is_wake(r) && r.new_text().contains("input-required")
}

/// A's model answers `allow` by itself on the task its wake names, as a model would.
fn claude_allows() -> Rule {
    Rule::when("asked", is_asked).reply_with(|r| {
        let id = task_id_in(&system_text(r)).unwrap_or_default();
        Reply::tool_use(
            SEND,
            json!({"worker": "buildbox", "message": "allow", "taskId": id}),
        )
    })
}

/// B's model: on each user text of `jobs` it runs its command with Bash (which B's agent does
/// not allow, so the run asks), then says `REMOTE-BASH-RAN` or `REMOTE-BASH-REFUSED`.
fn bash_asker(jobs: &[(&str, &str)]) -> Script {
    let mut script = Script::new().rule(Rule::on_tool_result_for("Bash").reply_with(|r| {
        let how = if r.tool_results()[0].is_error {
            "REFUSED"
        } else {
            "RAN"
        };
        Reply::text(format!("REMOTE-BASH-{how}"))
    }));
    for (asked, command) in jobs {
        script =
            script.rule(Rule::on_user_text(asked).tool_use("Bash", json!({"command": command})));
    }
    script.fallback_text("FALLBACK")
}

/// A person answers a worker's permission question, not the model (`[asks] approvals`, default
/// `person`): Claude A (interactive, in tmux) is woken with B's question and answers `allow`
/// itself; Claude Code shows the person the form, who closes it (Escape) to answer later:
/// nothing is sent and Claude is told so; the command has not run on B. The person then
/// presses the keys: `!` (Claude Code's shell mode) and `a2a-mod approve <id> allow`, Enter;
/// only then does the command run on B's machine.
#[test]
fn interactive_a_person_not_claude_approves_a_served_runs_permission_prompt() {
    let script_b = bash_asker(&[("clean the build", "rm -rf build")]);
    let Some((_model_b, env_b)) = server_env(script_b) else {
        return;
    };
    let build = env_b.cwd.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let serve = Serve::start(&env_b, &["--name", "buildbox"]);
    let refused = |r: &Recorded| {
        r.tool_results()
            .iter()
            .any(|t| t.text.contains("Nothing was sent"))
    };
    let script_a = Script::new()
        .rule(Rule::when("refused", refused).text("A-PERSON-MUST-DECIDE"))
        .rule(claude_allows())
        .rule(send_on(
            "GO",
            vec![json!({"worker": "buildbox", "message": "clean the build"})],
        ))
        .fallback_text("NOTED");
    let Some(mut rig) = Rig::start_at(
        &serve.url,
        "buildbox",
        script_a,
        RigOpts {
            timing: Some(("[]", 0.5, 6)),
            ..Default::default()
        },
    ) else {
        return;
    };
    rig.prompt("GO");
    rig.model
        .wait_for_request("the question's wake", LONG, is_asked);
    rig.claude.wait_for_text(FORM, LONG);
    rig.claude.send_key("Escape");
    rig.model
        .wait_for_request("Claude's own answer refused", LONG, refused);
    rig.claude.wait_for_text("A-PERSON-MUST-DECIDE", LONG);
    assert!(build.exists(), "Claude's own allow ran nothing");
    let id = rig.task_ids().pop().expect("the task is in A's store");
    let session = rig.session_of(&id);

    // The person: shell mode, then the command, as typed at Claude Code's prompt.
    rig.claude.type_text("!");
    let bin = crate::util::bin();
    rig.claude.send_keys(&format!(
        "{} approve {id} allow --session {session}",
        bin.display()
    ));
    crate::util::wait_until("the person's allow to run the command on B", LONG, || {
        !build.exists()
    });
}

/// Claude Code's header over an MCP server's form (docs/claude-code.md "Asking the person").
const FORM: &str = "requests your input";

/// The person's keys in Claude Code's form (docs/claude-code.md "Asking the person"): Right opens
/// the answer's choices, Down moves, Enter picks and moves to the reason, whose text is typed;
/// Enter moves on to Accept and Enter accepts.
fn deny_in_the_form(rig: &Rig, reason: &str) {
    for key in ["Right", "Down", "Down", "Enter"] {
        rig.claude.send_key(key);
    }
    rig.claude.wait_for_text("Answer: Deny", LONG);
    rig.claude.type_text(reason);
    rig.claude.wait_for_text(&format!("Reason: {reason}"), LONG);
    rig.claude.send_key("Enter");
    accept(rig);
}

/// "Allow once": the first choice, then Down to Accept.
fn allow_in_the_form(rig: &Rig) {
    for key in ["Right", "Enter"] {
        rig.claude.send_key(key);
    }
    rig.claude.wait_for_text("Answer: Allow once", LONG);
    rig.claude.send_key("Down");
    accept(rig);
}

/// Enter on Accept, once the form has moved there. Claude Code drops an Enter that comes within
/// about a second of the focus landing on the buttons (an accidental double press accepts
/// nothing; a single Enter 1.5 s later takes at once), so the key is pressed again, a second
/// apart, while the form stays; once it is gone, Enter on the empty prompt box does nothing.
fn accept(rig: &Rig) {
    rig.claude
        .wait_for_pane("Accept chosen", LONG, |p| p.contains("❯ Accept"));
    for _ in 0..10 {
        rig.claude.send_key("Enter");
        let gone = std::time::Instant::now() + Duration::from_secs(1);
        while std::time::Instant::now() < gone {
            if !rig.claude.pane_text().contains(FORM) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    panic!("the form never took Accept:\n{}", rig.claude.pane_text());
}

/// Claude Code A hands B (serve over a second real CLI) two jobs whose commands B's agent does
/// not allow. A's model, scripted, answers `allow` to each question by itself; the person is
/// shown the request in Claude Code's own form (tool and command on A's screen) and their choice
/// is what B gets: a deny with a reason (B's model reads the reason, the command never ran, B's
/// answer reaches A), then an allow (the command ran, once).
fn a_person_answers_in_claude_codes_form(native: bool) {
    let script_b = bash_asker(&[
        ("clean the build", "rm -rf build"),
        ("clean the cache", "rm -rf cache"),
    ]);
    let Some((model_b, env_b)) = server_env(script_b) else {
        return;
    };
    let (build, cache) = (env_b.cwd.join("build"), env_b.cwd.join("cache"));
    std::fs::create_dir_all(&build).unwrap();
    std::fs::create_dir_all(&cache).unwrap();
    let serve = Serve::start(&env_b, &["--name", "buildbox"]);
    // B's answer reaches A's model once, by whichever comes first after the end: the wake, or
    // the hooks of the turn the answered `send` returned to (a quick run ends while it returns).
    let ended = |how: &'static str| {
        move |r: &Recorded| r.is_main_loop() && r.new_text().contains(&format!("REMOTE-BASH-{how}"))
    };
    let script_a = Script::new()
        .rule(
            Rule::when("result", |r| {
                is_wake(r) && system_text(r).contains("REMOTE-BASH-")
            })
            .text("WOKEN-WITH-THE-RESULT"),
        )
        // The model would allow it: the person's answer must be what is sent.
        .rule(claude_allows())
        .rule(send_on(
            "GO",
            vec![json!({"worker": "buildbox", "message": "clean the build"})],
        ))
        .rule(send_on(
            "AGAIN",
            vec![json!({"worker": "buildbox", "message": "clean the cache"})],
        ))
        .fallback_text("NOTED");
    let Some(mut rig) = Rig::start_at(
        &serve.url,
        "buildbox",
        script_a,
        RigOpts {
            timing: Some(("[]", 0.5, 6)),
            native,
            ..Default::default()
        },
    ) else {
        return;
    };

    rig.prompt("GO");
    let form = rig.claude.wait_for_text(FORM, LONG);
    assert!(
        form.contains("buildbox (task ") && form.contains("Bash rm -rf build"),
        "the person sees the worker, the tool and the command:\n{form}"
    );
    if !native {
        assert!(form.contains("Claude suggests: allow"), "{form}");
    }
    deny_in_the_form(&rig, "the build dir is shared");
    let reason = "The caller did not allow this: the build dir is shared";
    model_b.wait_for_request("B's model to read the person's reason", LONG, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.is_error && t.text.contains(reason))
    });
    rig.model
        .wait_for_request("B's answer to reach A", LONG, ended("REFUSED"));
    assert!(build.exists(), "the denied command never ran");

    rig.prompt("AGAIN");
    let form = rig.claude.wait_for_pane("the second request", LONG, |p| {
        p.contains(FORM) && p.contains("Bash rm -rf cache")
    });
    assert!(form.contains("buildbox (task "), "{form}");
    allow_in_the_form(&rig);
    rig.model
        .wait_for_request("B's answer to reach A", LONG, ended("RAN"));
    assert!(!cache.exists(), "the allowed command ran on B's machine");
    let ran: std::collections::BTreeSet<String> = model_b
        .requests()
        .iter()
        .flat_map(|r| r.tool_results())
        .filter(|t| t.tool_name.as_deref() == Some("Bash") && !t.is_error)
        .map(|t| t.tool_use_id)
        .collect();
    assert_eq!(ran.len(), 1, "it ran once: {}", model_b.summary());
    assert!(build.exists(), "and the denied one still never ran");
}

/// [`a_person_answers_in_claude_codes_form`] while Claude's `send` call waits: an MCP elicitation.
#[test]
fn interactive_a_person_not_claude_answers_a_permission_prompt_in_claude_codes_form() {
    a_person_answers_in_claude_codes_form(false);
}

/// [`a_person_answers_in_claude_codes_form`] with `[claude] native_tasks`: the MCP task's
/// `inputRequests`, answered with `tasks/update`; Claude is not asked at all.
#[test]
fn interactive_a_person_answers_a_permission_prompt_in_a_native_tasks_form() {
    a_person_answers_in_claude_codes_form(true);
}

/// The worker's task id in a tool result (the structured outcome's `taskId`) or a note.
fn asked_task_id(text: &str) -> String {
    text.split("\"taskId\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(str::to_owned)
        .or_else(|| task_id_in(text))
        .unwrap_or_default()
}

/// `claude -p` on A (nobody at it) hands B a job whose command B's agent does not allow; A's
/// model, scripted, answers B's question `allow` by itself. By default (`approvals = "person"`)
/// what B gets is a denial saying no one was there to approve it, which B's model reads, and the
/// command never runs; with `approvals = "claude"` the model's allow goes through and it runs.
/// Whether the command ran on B, and what B's model read as the Bash tool's result.
fn print_mode_meets_a_permission_prompt(config: &'static str) -> Option<(bool, Vec<String>)> {
    let script_b = bash_asker(&[("clean the build", "rm -rf build")]);
    let (model_b, env_b) = server_env(script_b)?;
    let build = env_b.cwd.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let serve = Serve::start(&env_b, &["--name", "buildbox"]);
    let question = a2a_mod::testing::status::APPROVAL_ENDING;
    let script_a = Script::new()
        .rule(Rule::on_contains("REMOTE-BASH-REFUSED").text("FINAL: REFUSED"))
        .rule(Rule::on_contains("REMOTE-BASH-RAN").text("FINAL: RAN"))
        .rule(
            Rule::when("asked", move |r: &Recorded| {
                r.is_main_loop() && r.new_text().contains(question)
            })
            .reply_with(|r| {
                let id = asked_task_id(&r.new_text());
                Reply::tool_use(
                    SEND,
                    json!({"worker": "buildbox", "message": "allow", "taskId": id}),
                )
            }),
        )
        .rule(Rule::on_user_text("GO").tool_use(
            SEND,
            json!({"worker": "buildbox", "message": "clean the build"}),
        ))
        .fallback_text("WAITING");
    let model_a = crate::fake::model_api::FakeModelApi::start(script_a);
    let home = crate::util::TempHome::new();
    crate::util::ok(&home, &["worker", "add", "buildbox", &serve.url]);
    append_config(&home.a2a_home(), config);
    let bin = crate::util::bin();
    let opts = crate::peers::claude::ClaudeOpts::new(&model_a)
        .home(home)
        .plugin_dir(repo())
        .env("A2A_MOD_BIN", bin.to_str().expect("utf-8 binary path"))
        .settings(json!({"permissions": {"allow": crate::peers::claude::TOOLS}}));
    let how = crate::peers::claude::Headless::Text;
    let run = crate::peers::claude::run_headless(opts, how, "GO", LONG)?;
    assert_eq!(
        run.status,
        Some(0),
        "{}\n{}\n{}",
        run.stdout,
        run.stderr,
        model_a.summary()
    );
    let ran = !build.exists();
    assert_eq!(
        run.stdout.trim(),
        if ran { "FINAL: RAN" } else { "FINAL: REFUSED" },
        "A's answer says what B did: {}",
        model_a.summary()
    );
    let told_b: Vec<String> = model_b
        .requests()
        .iter()
        .flat_map(|r| r.tool_results())
        .filter(|t| t.tool_name.as_deref() == Some("Bash"))
        .map(|t| t.text)
        .collect();
    Some((ran, told_b))
}

#[test]
fn print_mode_denies_a_workers_permission_prompt_saying_no_one_was_there() {
    let Some((ran, told_b)) = print_mode_meets_a_permission_prompt("") else {
        return;
    };
    assert!(!ran, "the command never ran");
    assert!(
        told_b
            .iter()
            .any(|t| t.contains("The caller did not allow this: no one was there to approve it")),
        "B's model reads why: {told_b:?}"
    );
}

#[test]
fn print_mode_with_approvals_claude_sends_the_models_answer() {
    let Some((ran, told_b)) =
        print_mode_meets_a_permission_prompt("\n[asks]\napprovals = \"claude\"\n")
    else {
        return;
    };
    assert!(ran, "the model's allow went through: {told_b:?}");
}
