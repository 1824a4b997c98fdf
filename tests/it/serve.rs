//! `a2a-mod serve` end to end: the real Claude Code CLI behind it (each task a headless run
//! against the scripted fake Messages API), driven by a2a-mod's own client (`worker add`, `send`,
//! `task`, `cancel`, the monitor), by raw JSON-RPC, HTTP+JSON and SSE requests, and, in
//! `serve_sdk.rs`, by the official SDK clients and an interactive Claude Code.
//!
//! Each test has its own fake model, server home (the served folder is its project dir) and
//! client home; everything the server started is killed when the test ends.

use crate::fake::model_api::{FakeModelApi, Recorded, Reply, Rule, Script};
use crate::peers::claude::{ClaudeEnv, ClaudeOpts};
use crate::util::{TempHome, append_config, append_timing, bin, fails, ok, send_json, wait_until};
use serde_json::{Value, json};
use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const LONG: Duration = Duration::from_secs(60);

/// A running `a2a-mod serve`. SIGKILLed on drop (its runs die with it: they are tagged, and on
/// Linux get SIGTERM when serve dies).
pub(crate) struct Serve {
    child: Child,
    /// Its first stdout line: the first agent's URL.
    pub url: String,
    /// Its second: the `worker add` line.
    pub add: String,
    /// Where its stderr (the log) goes.
    pub log: std::path::PathBuf,
}

impl Serve {
    /// Starts `a2a-mod serve --dir <project dir> <args>` in `env`'s home and reads its two lines.
    pub(crate) fn start(env: &ClaudeEnv, args: &[&str]) -> Serve {
        Serve::start_with(env, args, &[])
    }

    pub(crate) fn start_with(env: &ClaudeEnv, args: &[&str], vars: &[(&str, &str)]) -> Serve {
        let dir = env.cwd.to_str().expect("utf-8 project dir");
        Serve::spawn(env, &[&["--dir", dir], args].concat(), vars)
    }

    /// `a2a-mod serve <args>` exactly (no `--dir`: the config's agents).
    pub(crate) fn spawn(env: &ClaudeEnv, args: &[&str], vars: &[(&str, &str)]) -> Serve {
        static STARTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = env.home.root().join(format!("serve-{n}.log"));
        let mut cmd = Command::new(bin());
        cmd.arg("serve")
            .args(args)
            .current_dir(&env.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("serve log"));
        env.apply(&mut cmd);
        cmd.envs(vars.iter().copied());
        let mut child = cmd.spawn().expect("spawn a2a-mod serve");
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let line = || {
            rx.recv_timeout(LONG).unwrap_or_else(|_| {
                panic!(
                    "serve printed no line within {LONG:?}; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
        };
        let url = line();
        let add = line();
        Serve {
            child,
            url,
            add,
            log: log.clone(),
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGTERM, as systemd or Ctrl-C stops it.
    pub(crate) fn terminate(&self) {
        a2a_mod_os::process::signal(self.child.id(), a2a_mod_os::process::Signal::Term);
    }

    /// Its exit status once it has exited (`None` if it has not within `within`).
    pub(crate) fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < within {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub(crate) fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// A JSON-RPC call to the agent's endpoint; the whole response body.
    pub(crate) fn rpc(&self, method: &str, params: Value, v1: bool) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let (_, v) = http(
            "POST",
            &format!("{}/", self.url),
            Some(body.to_string()),
            &version_header(v1),
        );
        v
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- serve log ---\n{}\n--- end ---", self.log_text());
        }
        self.kill9();
    }
}

fn version_header(v1: bool) -> Vec<(&'static str, String)> {
    if v1 {
        vec![("A2A-Version", "1.0".into())]
    } else {
        Vec::new()
    }
}

/// One HTTP request (blocking); the status and the body as JSON (`Null` when not JSON).
pub(crate) fn http(
    method: &str,
    url: &str,
    body: Option<String>,
    headers: &[(&str, String)],
) -> (u16, Value) {
    let (status, text) = http_text(method, url, body, headers);
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

pub(crate) fn http_text(
    method: &str,
    url: &str,
    body: Option<String>,
    headers: &[(&str, String)],
) -> (u16, String) {
    let body = body.map(|b| (b, "application/json"));
    let (status, _, text) = request(method, url, body, headers);
    (status, text)
}

/// One HTTP request (blocking) with a body of its content type: the status, the response's
/// headers and its body.
pub(crate) fn request(
    method: &str,
    url: &str,
    body: Option<(String, &str)>,
    headers: &[(&str, String)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = reqwest::Client::new();
        let mut r = c.request(method.parse().unwrap(), url).timeout(LONG);
        for (k, v) in headers {
            r = r.header(*k, v);
        }
        if let Some((b, content_type)) = body {
            r = r.header("content-type", content_type).body(b);
        }
        let resp = r.send().await.expect("request to serve");
        let status = resp.status().as_u16();
        let head = resp.headers().clone();
        (status, head, resp.text().await.unwrap_or_default())
    })
}

/// The data lines of an SSE response, each as JSON, read to the stream's end.
pub(crate) fn sse(url: &str, body: Value, headers: &[(&str, String)]) -> Vec<Value> {
    sse_then(url, body, headers, || {})
}

/// The events of an SSE request read to the stream's end, and `then` called once the first
/// event is in (so what it does happens while the stream is open).
pub(crate) fn sse_then(
    url: &str,
    body: Value,
    headers: &[(&str, String)],
    then: impl FnOnce(),
) -> Vec<Value> {
    use futures::StreamExt as _;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut r = reqwest::Client::new()
            .post(url)
            .timeout(LONG)
            .header("content-type", "application/json")
            .body(body.to_string());
        for (k, v) in headers {
            r = r.header(*k, v);
        }
        let resp = r.send().await.expect("stream request to serve");
        assert_eq!(resp.status(), 200);
        let mut bytes = resp.bytes_stream();
        let mut text = String::new();
        let mut then = Some(then);
        while let Some(chunk) = bytes.next().await {
            text.push_str(&String::from_utf8_lossy(
                &chunk.expect("the stream's bytes"),
            ));
            if text.contains("\n\n")
                && let Some(f) = then.take()
            {
                // Blocking is fine here: what serve writes meanwhile waits in the socket.
                f();
            }
        }
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| serde_json::from_str(d.trim()).unwrap())
            .collect()
    })
}

/// The server side: a fake model answering `script`, and Claude Code's environment for it.
pub(crate) fn server_env(script: Script) -> Option<(FakeModelApi, ClaudeEnv)> {
    let model = FakeModelApi::start(script);
    let env = ClaudeEnv::new(ClaudeOpts::new(&model))?;
    Some((model, env))
}

/// A client home with the server added as `remote`.
///
/// Its send waits up to 30.5 s inline (0.5, 1, 2, 4, 8 and 15 s), not the seed's 7.5 s: these tests
/// are about serve, and a loaded machine can take longer than the window to start Claude Code
/// (CI runs saw runs of 8.3 s come back tracked). The window's own test uses
/// [`client_seed_window`].
pub(crate) fn client(serve: &Serve) -> TempHome {
    let home = client_seed_window(serve);
    append_timing(&home.a2a_home(), "inline_polls_s = [0.5, 1, 2, 4, 8, 15]");
    home
}

/// A client of `serve` with the seed's 7.5 s inline window.
fn client_seed_window(serve: &Serve) -> TempHome {
    let home = TempHome::new();
    ok(&home, &["worker", "add", "remote", &serve.url]);
    home
}

/// The fake model's main-loop request for the user text `needle`.
fn turn_with(model: &FakeModelApi, needle: &str) -> Recorded {
    model.wait_for_request(needle, LONG, |r| {
        r.is_main_loop() && r.last_user_text().contains(needle)
    })
}

/// Every text the request carries, earlier turns included.
fn all_text(r: &Recorded) -> String {
    serde_json::to_string(r.messages()).unwrap_or_default()
}

/// `n` numbered words, `w000 w001 …`: an answer whose order and completeness show.
pub(crate) fn numbered(n: usize) -> String {
    (0..n)
        .map(|i| format!("w{i:03}"))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn own_client_gets_the_answer_inline_resumes_the_context_and_reads_a_failure() {
    let script = Script::new()
        .rule(Rule::on_user_text("first question").text("ANSWER-ONE"))
        .rule(Rule::on_user_text("second question").reply_with(|r| {
            let earlier = all_text(r);
            Reply::text(
                if earlier.contains("first question") && earlier.contains("ANSWER-ONE") {
                    "SAW-THE-EARLIER-TURNS"
                } else {
                    "NO-MEMORY"
                },
            )
        }))
        .rule(
            Rule::on_user_text("break please")
                .reply_with(|_| Reply::api_error(400, "the model refused: boom")),
        )
        .fallback_text("FALLBACK");
    let Some((model, env)) = server_env(script) else {
        return;
    };
    let serve = Serve::start(&env, &["--name", "remote-box"]);
    assert!(serve.url.ends_with("/remote-box"), "{}", serve.url);
    assert_eq!(
        serve.add,
        format!("a2a-mod worker add remote-box {}", serve.url)
    );
    let home = client(&serve);

    let first = send_json(&home, "remote", "first question", &[]);
    assert_eq!(first["state"], "completed", "{first}");
    assert!(
        first["text"].as_str().unwrap().contains("ANSWER-ONE"),
        "{first}"
    );
    let ctx = first["contextId"].as_str().unwrap().to_string();

    let second = send_json(&home, "remote", "second question", &["--context-id", &ctx]);
    assert_eq!(second["state"], "completed", "{second}");
    assert!(
        second["text"]
            .as_str()
            .unwrap()
            .contains("SAW-THE-EARLIER-TURNS"),
        "{second}"
    );
    // The second run resumed the first one's conversation: the model got the earlier turns.
    let r = turn_with(&model, "second question");
    assert!(all_text(&r).contains("ANSWER-ONE"), "{}", model.summary());
    assert_eq!(second["contextId"], ctx.as_str());

    let failed = send_json(&home, "remote", "break please", &[]);
    assert_eq!(failed["state"], "failed", "{failed}");
    assert!(
        failed.to_string().contains("boom"),
        "Claude Code's words reach the client: {failed}"
    );

    // The task's metadata: cost, turns, duration, model and the session the context resumes.
    let t = serve.rpc("GetTask", json!({"id": first["taskId"]}), true);
    let meta = &t["result"]["metadata"]["claudeCode"];
    for k in ["costUsd", "numTurns", "durationMs", "model", "sessionId"] {
        assert!(!meta[k].is_null(), "{k} missing: {t}");
    }
    let t2 = serve.rpc("GetTask", json!({"id": second["taskId"]}), true);
    assert_eq!(
        t2["result"]["metadata"]["claudeCode"]["sessionId"],
        meta["sessionId"]
    );
    assert_eq!(t["result"]["status"]["state"], "TASK_STATE_COMPLETED");

    // HTTP+JSON reads its path and query percent-decoded, as clients are free to encode them.
    let encoded = |s: &str| s.bytes().map(|b| format!("%{b:02X}")).collect::<String>();
    let (s, listed) = http(
        "GET",
        &format!(
            "{}/tasks?contextId={}&pageSize=%35",
            serve.url,
            encoded(&ctx)
        ),
        None,
        &[],
    );
    let ids: Vec<&str> = listed["tasks"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(s, 200, "{listed}");
    assert_eq!(ids.len(), 2, "the context's two tasks: {listed}");
    assert_eq!(listed["pageSize"], 5, "{listed}");
    let id = first["taskId"].as_str().unwrap();
    let (s, got) = http(
        "GET",
        &format!("{}/tasks/{}?historyLength=%31", serve.url, encoded(id)),
        None,
        &[],
    );
    assert_eq!((s, got["id"].as_str()), (200, Some(id)), "{got}");
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1), "{got}");
}

#[test]
fn a_longer_task_is_tracked_woken_and_a_cancel_stops_the_run() {
    let answer = numbered(80);
    let a = answer.clone();
    let script = Script::new()
        // About 10 s of tokens: past the 7.5 s inline window.
        .rule(
            Rule::on_user_text("long job")
                .reply_with(move |_| Reply::text(a.clone()).paced(40, Duration::from_millis(250))),
        )
        .rule(
            Rule::on_user_text("endless job")
                .reply_with(|_| Reply::text(numbered(400)).paced(400, Duration::from_millis(250))),
        )
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let serve = Serve::start(&env, &[]);
    let home = client_seed_window(&serve);
    let watch = crate::wake::Watch::start_in(&home, "cli", &[]);

    let sent = send_json(&home, "remote", "long job", &[]);
    assert_eq!(sent["state"], "working", "{sent}");
    assert_eq!(sent["tracked"], true, "{sent}");
    let id = sent["taskId"].as_str().unwrap().to_string();
    let short: String = id.chars().take(4).collect();
    let line = watch.next_line(LONG);
    assert_eq!(line, format!("a2a: remote task {short}… completed"));
    let done = home.command().args(["task", &id, "--json"]).json();
    assert_eq!(done["state"], "completed", "{done}");
    assert_eq!(done["text"].as_str().unwrap().trim(), answer);

    let endless = send_json(&home, "remote", "endless job", &[]);
    assert_eq!(endless["state"], "working", "{endless}");
    let id = endless["taskId"].as_str().unwrap().to_string();
    let runs = || {
        env.processes()
            .into_iter()
            .filter(|p| *p != serve.pid())
            .collect::<Vec<_>>()
    };
    assert!(!runs().is_empty(), "the run is a process of its own");
    let canceled = home.command().args(["cancel", &id, "--json"]).json();
    assert_eq!(canceled["state"], "canceled", "{canceled}");
    wait_until(
        "the canceled run's processes to exit",
        Duration::from_secs(10),
        || runs().is_empty(),
    );
    let t = serve.rpc("GetTask", json!({"id": id}), true);
    assert_eq!(t["result"]["status"]["state"], "TASK_STATE_CANCELED", "{t}");
}

#[test]
fn a_token_stream_arrives_whole_and_in_order_streamed_and_polled() {
    let answer = numbered(300);
    let a = answer.clone();
    let script = Script::new()
        .rule(
            Rule::on_user_text("tokens")
                .reply_with(move |_| Reply::text(a.clone()).paced(150, Duration::from_millis(10))),
        )
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let serve = Serve::start(&env, &[]);

    // Streamed over SSE, JSON-RPC v1: the chunks joined in order are the answer.
    let msg = |id: &str| json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "tokens please"}]});
    let events = sse(
        &format!("{}/", serve.url),
        json!({"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": {"message": msg("m1")}}),
        &version_header(true),
    );
    let mut joined = String::new();
    let mut chunks = 0;
    for e in &events {
        assert_eq!(e["id"], 7, "{e}");
        if let Some(u) = e["result"].get("artifactUpdate") {
            let t = u["artifact"]["parts"][0]["text"].as_str().unwrap();
            if u["append"] == false {
                joined.clear();
            }
            joined.push_str(t);
            chunks += 1;
        }
    }
    assert_eq!(joined, answer);
    assert!(
        chunks > 50,
        "the answer came as the tokens did ({chunks} chunks)"
    );
    let last = &events.last().unwrap()["result"]["statusUpdate"]["status"]["state"];
    assert_eq!(last, "TASK_STATE_COMPLETED", "{events:?}");

    // Over HTTP+JSON's stream too (v0.3 spelling: `kind`s and `final`... not on REST).
    let rest = sse(
        &format!("{}/message:stream", serve.url),
        json!({"message": msg("m2")}),
        &version_header(true),
    );
    let text: String = rest
        .iter()
        .filter_map(|e| e["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, answer);

    // Polled: a2a-mod's client with streaming off gets the same text from GetTask.
    let home = client(&serve);
    append_config(&home.a2a_home(), "\n[streaming]\nenabled = false\n");
    let polled = send_json(&home, "remote", "tokens please", &[]);
    assert_eq!(polled["state"], "completed", "{polled}");
    assert_eq!(polled["text"].as_str().unwrap().trim(), answer);
    // And streaming on (the card offers it): the same.
    let home = client(&serve);
    let streamed = send_json(&home, "remote", "tokens please", &[]);
    assert_eq!(streamed["text"].as_str().unwrap().trim(), answer);
}

#[test]
fn kill_9_mid_task_then_restart_loses_nothing_finished() {
    let script = Script::new()
        .rule(Rule::on_user_text("quick").text("QUICK-DONE"))
        .rule(
            Rule::on_user_text("slow job")
                .reply_with(|_| Reply::text(numbered(200)).paced(200, Duration::from_millis(250))),
        )
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let mut serve = Serve::start(&env, &["--listen", "127.0.0.1:0"]);
    let msg =
        |id: &str, t: &str| json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": t}]});
    let done = serve.rpc("SendMessage", json!({"message": msg("m1", "quick")}), true);
    let done_id = done["result"]["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(
        done["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{done}"
    );
    let before = serve.rpc("GetTask", json!({"id": done_id}), true)["result"].clone();
    let live = serve.rpc(
        "SendMessage",
        json!({"message": msg("m2", "slow job"), "configuration": {"returnImmediately": true}}),
        true,
    );
    let live_id = live["result"]["task"]["id"].as_str().unwrap().to_string();
    wait_until("the slow run to work", LONG, || {
        let t = serve.rpc("GetTask", json!({"id": live_id}), true);
        t["result"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .is_some_and(|s| s.len() > 20)
    });
    let serve_pid = serve.pid();
    serve.kill9();
    // Its run does not outlive it (it gets SIGTERM when serve dies).
    wait_until("the orphaned run to exit", Duration::from_secs(15), || {
        env.processes().iter().all(|p| *p == serve_pid)
    });

    let serve = Serve::start(&env, &[]);
    let after = serve.rpc("GetTask", json!({"id": done_id}), true)["result"].clone();
    assert_eq!(
        after, before,
        "a finished task answers unchanged after a restart"
    );
    let t =
        serve.rpc("GetTask", json!({"id": live_id, "historyLength": 10}), true)["result"].clone();
    assert_eq!(t["status"]["state"], "TASK_STATE_FAILED", "{t}");
    assert!(
        t["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("the server restarted"),
        "{t}"
    );
    let list = serve.rpc("ListTasks", json!({}), true)["result"]["tasks"].clone();
    let ids: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, [live_id.as_str(), done_id.as_str()]);
}

#[test]
fn bad_input_gets_a_clear_error_and_nothing_else() {
    // Off loopback without a token: refused before anything starts (no Claude Code needed).
    let home = TempHome::new();
    let o = home
        .command()
        .args(["serve", "--listen", "0.0.0.0:0"])
        .fails();
    assert_eq!(
        o,
        "a2a-mod: serve: listening on 0.0.0.0:0 needs a bearer token — set one with --token-env VAR (or serve.token_envs), or listen on 127.0.0.1"
    );

    let script = Script::new()
        .rule(
            Rule::on_user_text("queued")
                .reply_with(|_| Reply::text(numbered(20)).paced(20, Duration::from_millis(100))),
        )
        .fallback_text("FINE");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let token = "tok-3f9a1c-very-secret-value";
    append_config(
        &env.home.a2a_home(),
        "\n[serve]\nmax_concurrent = 1\nmax_queued = 2\nmax_body_mib = 0.05\n",
    );
    let serve = Serve::start_with(&env, &["--token-env", "SERVE_T"], &[("SERVE_T", token)]);
    assert!(serve.add.ends_with("--bearer-env SERVE_T"), "{}", serve.add);
    let url = format!("{}/", serve.url);
    let good = vec![
        ("Authorization", format!("Bearer {token}")),
        ("A2A-Version", "1.0".into()),
    ];
    let call = |body: String, headers: &[(&str, String)]| http("POST", &url, Some(body), headers);
    let get =
        json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}).to_string();

    // The card is public and declares the scheme; everything else needs the token.
    let (s, card) = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", serve.url),
        None,
        &[],
    );
    assert_eq!(s, 200);
    assert!(card["securitySchemes"]["bearer"].is_object(), "{card}");
    assert_eq!(card["capabilities"]["streaming"], true);
    for bad in [
        None,
        Some("Bearer wrong"),
        Some(&format!("Basic {token}")[..]),
    ] {
        let h: Vec<(&str, String)> = bad
            .map(|b| ("Authorization", b.to_string()))
            .into_iter()
            .collect();
        let (s, body) = call(get.clone(), &h);
        assert_eq!(s, 401, "{bad:?}: {body}");
    }
    let (s, body) = call(get.clone(), &good);
    assert_eq!(
        (s, body["error"]["code"].as_i64()),
        (200, Some(-32001)),
        "{body}"
    );

    // Malformed JSON, an unknown method, an oversize body.
    let (_, body) = call("{not json".into(), &good);
    assert_eq!(body["error"]["code"], -32700, "{body}");
    let (_, body) = call(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/explode"}).to_string(),
        &good,
    );
    assert_eq!(body["error"]["code"], -32601, "{body}");
    // A push notification config that names no task, or one nobody has, in both dialects.
    for (method, code) in [
        ("CreateTaskPushNotificationConfig", -32602),
        ("tasks/pushNotificationConfig/get", -32001),
    ] {
        let (_, body) = call(
            json!({"jsonrpc": "2.0", "id": 4, "method": method, "params": {"id": "x"}}).to_string(),
            &good,
        );
        assert_eq!(body["error"]["code"], code, "{method}: {body}");
    }
    let big = json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message":
        {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x".repeat(200_000)}]}}});
    let (s, body) = call(big.to_string(), &good);
    assert_eq!(s, 413, "{body}");
    let (s, body) = http(
        "POST",
        &format!("{}/message:send", serve.url),
        Some("[]".into()),
        &good,
    );
    assert_eq!(
        (s, body["error"]["code"].as_i64()),
        (400, Some(400)),
        "{body}"
    );

    // The concurrency limit queues, never drops: one run at a time, two waiting, a fourth
    // refused while the queue is full (max_queued = 2), and every queued one runs.
    let send = |n: usize| {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {
            "message": {"messageId": format!("q{n}"), "role": "ROLE_USER", "parts": [{"text": format!("queued {n}")}]},
            "configuration": {"returnImmediately": true}}});
        call(body.to_string(), &good).1
    };
    let id_of = |v: Value| v["result"]["task"]["id"].as_str().unwrap().to_string();
    let state = |id: &str| {
        let b = json!({"jsonrpc": "2.0", "id": 9, "method": "GetTask", "params": {"id": id}});
        call(b.to_string(), &good).1["result"]["status"]["state"]
            .as_str()
            .unwrap_or("?")
            .to_string()
    };
    let first = id_of(send(0));
    wait_until("the first to run", LONG, || {
        state(&first) == "TASK_STATE_WORKING"
    });
    let ids = [first, id_of(send(1)), id_of(send(2))];
    // A message to a task that still runs is refused, never queued into its conversation.
    let more = json!({"jsonrpc": "2.0", "id": 8, "method": "SendMessage", "params": {"message":
        {"messageId": "more", "role": "ROLE_USER", "parts": [{"text": "and another thing"}], "taskId": ids[0]}}});
    let (_, body) = call(more.to_string(), &good);
    assert_eq!(body["error"]["code"], -32004, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("asks nothing now"),
        "{body}"
    );
    assert_eq!(state(&ids[1]), "TASK_STATE_SUBMITTED", "the second waits");
    assert_eq!(state(&ids[2]), "TASK_STATE_SUBMITTED", "the third waits");
    let busy = send(3);
    assert_eq!(busy["error"]["code"], -32000, "{busy}");
    assert!(
        busy["error"]["message"]
            .as_str()
            .unwrap()
            .contains("try again later"),
        "{busy}"
    );
    let started = Instant::now();
    wait_until("all three to complete", LONG, || {
        ids.iter().all(|id| state(id) == "TASK_STATE_COMPLETED")
    });
    eprintln!(
        "three queued runs ended {:?} after the first ran",
        started.elapsed()
    );

    // A cancel of a finished task; a taskId of another context; a message to a finished task.
    let cancel =
        json!({"jsonrpc": "2.0", "id": 4, "method": "CancelTask", "params": {"id": ids[0]}});
    let (_, body) = call(cancel.to_string(), &good);
    assert_eq!(body["error"]["code"], -32002, "{body}");
    let other = json!({"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message":
        {"messageId": "o", "role": "ROLE_USER", "parts": [{"text": "more"}], "taskId": ids[0], "contextId": "some-other-context"}}});
    let (_, body) = call(other.to_string(), &good);
    assert_eq!(body["error"]["code"], -32602, "{body}");
    let again = json!({"jsonrpc": "2.0", "id": 6, "method": "message/send", "params": {"message":
        {"kind": "message", "messageId": "a", "role": "user", "parts": [{"kind": "text", "text": "more"}], "taskId": ids[0]}}});
    let (_, body) = call(again.to_string(), &good);
    assert_eq!(body["error"]["code"], -32004, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("without its taskId"),
        "{body}"
    );
    // Hostile names: ids with control sequences, spaces or no end are refused, and nothing a
    // client named comes back with a control character in it; a plain id that reads like a path
    // is only ever a key.
    let hostile = "x\u{1b}]0;pwned\u{7} \u{1b}[2J";
    let rpc = |method: &str, params: Value| {
        let b = json!({"jsonrpc": "2.0", "id": 10, "method": method, "params": params});
        call(b.to_string(), &good).1
    };
    let m = |extra: Value| {
        let mut msg = json!({"messageId": "h", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
        for (k, v) in extra.as_object().unwrap() {
            msg[k] = v.clone();
        }
        json!({"message": msg, "configuration": {"returnImmediately": true}})
    };
    for (method, params) in [
        ("GetTask", json!({"id": hostile})),
        ("CancelTask", json!({"id": "y".repeat(10_000)})),
        ("ListTasks", json!({"contextId": hostile})),
        ("SendMessage", m(json!({"contextId": hostile}))),
        ("SendMessage", m(json!({"messageId": hostile}))),
        ("SendMessage", m(json!({"taskId": hostile}))),
    ] {
        let body = rpc(method, params);
        assert_eq!(body["error"]["code"], -32602, "{method}: {body}");
        let words = body["error"]["message"].as_str().unwrap();
        assert!(
            !words.chars().any(char::is_control) && words.len() < 200,
            "{words:?}"
        );
    }
    let body = rpc(&format!("tasks/{hostile}"), json!({}));
    assert_eq!(body["error"]["code"], -32601, "{body}");
    assert!(
        !body["error"]["message"]
            .as_str()
            .unwrap()
            .chars()
            .any(char::is_control),
        "{body}"
    );
    let pathlike = rpc(
        "SendMessage",
        m(json!({"contextId": "../../../../tmp/a2a-mod-it-escape"})),
    );
    let pathlike_id = pathlike["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    wait_until("the path-like context's task to end", LONG, || {
        state(&pathlike_id) == "TASK_STATE_COMPLETED"
    });
    assert!(!std::path::Path::new("/tmp/a2a-mod-it-escape").exists());

    // REST errors carry the HTTP status.
    let (s, body) = http("GET", &format!("{}/tasks/nope", serve.url), None, &good);
    assert_eq!(
        (s, body["error"]["status"].as_str()),
        (404, Some("NOT_FOUND")),
        "{body}"
    );

    // The token is in no log and no state file.
    assert!(!serve.log_text().contains(token), "{}", serve.log_text());
    for f in crate::util::files_under(&env.home.a2a_home()) {
        let bytes = std::fs::read(&f).unwrap_or_default();
        assert!(
            !bytes.windows(token.len()).any(|w| w == token.as_bytes()),
            "{} holds the token",
            f.display()
        );
    }
}

/// A stand-in `claude` (`A2A_MOD_CLAUDE_BIN`): what the real CLI prints in the cases a real run
/// cannot be made to show on demand. It logs its arguments, one line per run.
fn fake_claude(home: &TempHome) -> std::path::PathBuf {
    let script = home.root().join("claude");
    let log = home.root().join("claude-args.log");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
echo "$*" >> "{log}"
env >> "{log}.env"
read -r line
case "$line" in *exit-quietly*)
    echo "boom: the disk is full" >&2; exit 3;;
esac
case "$*" in *--resume*)
    sid=$(echo "$*" | sed 's/.*--resume \([^ ]*\).*/\1/')
    echo '{{"type":"result","subtype":"error_during_execution","is_error":true,"num_turns":0,"session_id":"'$sid'","errors":["No conversation found with session ID: '$sid'"]}}'
    exit 1;;
esac
echo '{{"type":"system","subtype":"init","model":"stand-in","session_id":"s"}}'
echo '{{"type":"assistant","message":{{"content":[{{"type":"tool_use","name":"Bash","input":{{"command":"printf \u001b]0;title\u0007 && make"}}}}]}}}}'
echo '{{"type":"stream_event","event":{{"type":"content_block_delta","delta":{{"type":"text_delta","text":"stand-in answer"}}}}}}'
echo '{{"type":"result","subtype":"success","is_error":false,"result":"stand-in answer","num_turns":1,"session_id":"s"}}'
"#,
            log = log.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn a_follow_up_with_no_conversation_to_resume_starts_it_and_a_silent_exit_is_a_failure() {
    const TOKEN: &str = "stand-in-token-7c1e";
    let server = TempHome::new();
    let dir = server.root().join("work");
    std::fs::create_dir(&dir).unwrap();
    let claude = fake_claude(&server);
    let mut cmd = Command::new(bin());
    server.apply(&mut cmd);
    let mut child = cmd
        .args(["serve", "--dir"])
        .arg(&dir)
        .env("A2A_MOD_CLAUDE_BIN", &claude)
        .args(["--token-env", "STAND_IN_TOKEN"])
        .env("STAND_IN_TOKEN", TOKEN)
        // What a serve started from inside a Claude Code session inherits.
        .env("CLAUDECODE", "1")
        .env("CLAUDE_CODE_ENTRYPOINT", "cli")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let url = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .next()
        .unwrap()
        .unwrap();
    let rpc = |method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut h = version_header(true);
        h.push(("Authorization", format!("Bearer {TOKEN}")));
        http("POST", &format!("{url}/"), Some(body.to_string()), &h).1
    };
    let msg = |t: &str, ctx: Option<&str>| {
        let mut m = json!({"messageId": t, "role": "ROLE_USER", "parts": [{"text": t}]});
        if let Some(c) = ctx {
            m["contextId"] = c.into();
        }
        json!({"message": m})
    };
    let first = rpc("SendMessage", msg("one", None))["result"]["task"].clone();
    assert_eq!(first["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    assert_eq!(first["artifacts"][0]["parts"][0]["text"], "stand-in answer");
    let ctx = first["contextId"].as_str().unwrap();
    // The stand-in has no conversation to resume: the follow-up starts it with the same id.
    let second = rpc("SendMessage", msg("two", Some(ctx)))["result"]["task"].clone();
    assert_eq!(
        second["status"]["state"], "TASK_STATE_COMPLETED",
        "{second}"
    );
    let runs = std::fs::read_to_string(server.root().join("claude-args.log")).unwrap();
    let runs: Vec<&str> = runs.lines().collect();
    assert_eq!(runs.len(), 3, "{runs:?}");
    // A run inherits serve's environment without serve's token or another session's marks.
    let env = std::fs::read_to_string(server.root().join("claude-args.log.env")).unwrap();
    assert!(
        env.contains("A2A_MOD_HOME="),
        "the environment is inherited: {env}"
    );
    for gone in [
        TOKEN,
        "STAND_IN_TOKEN",
        "CLAUDECODE=",
        "CLAUDE_CODE_ENTRYPOINT=",
    ] {
        assert!(!env.contains(gone), "{gone} reached the run");
    }
    let session = runs[0]
        .split("--session-id ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    assert!(runs[1].contains(&format!("--resume {session}")), "{runs:?}");
    assert!(
        runs[2].contains(&format!("--session-id {session}")),
        "{runs:?}"
    );
    for r in &runs {
        assert!(r.starts_with("-p --output-format stream-json --input-format stream-json --verbose --include-partial-messages"), "{r}");
    }
    // A tool's status line reached the task cleaned of its escape sequence.
    let events = sse(
        &format!("{url}/"),
        json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": msg("three", None)}),
        &[("Authorization", format!("Bearer {TOKEN}"))],
    );
    let steps: Vec<&str> = events
        .iter()
        .filter_map(|e| {
            e["result"]["statusUpdate"]["status"]["message"]["parts"][0]["text"].as_str()
        })
        .collect();
    assert!(
        steps.iter().any(|s| s.starts_with("Bash: printf")),
        "{events:?}"
    );
    assert!(
        steps.iter().all(|s| !s.chars().any(char::is_control)),
        "{steps:?}"
    );
    // A run that exits without a result: failed, with its stderr's last words.
    let quiet = rpc("SendMessage", msg("exit-quietly", None))["result"]["task"].clone();
    assert_eq!(quiet["status"]["state"], "TASK_STATE_FAILED", "{quiet}");
    assert_eq!(
        quiet["status"]["message"]["parts"][0]["text"],
        "Claude Code exited with status 3 without a result: boom: the disk is full"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// Agents from `config.toml`: each its own card and path, its runs in its own folder with its own
/// allowed tools; a tool its settings do not allow is denied (nothing bypassed), and the run goes
/// on without it.
#[test]
fn config_agents_run_in_their_folders_with_their_own_tools() {
    let script = Script::new()
        .rule(Rule::on_tool_result_for("Bash").reply_with(|r| {
            let t = &r.tool_results()[0];
            Reply::text(if t.is_error {
                "TOOL-REFUSED"
            } else {
                "TOOL-RAN"
            })
        }))
        .rule(
            Rule::on_user_text("make the file")
                .tool_use("Bash", json!({"command": "touch created.txt"})),
        )
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let (app, docs) = (env.cwd.join("app"), env.cwd.join("docs"));
    std::fs::create_dir_all(&app).unwrap();
    std::fs::create_dir_all(&docs).unwrap();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve.agents.build]\ndir = {:?}\ndescription = \"Builds the app\"\nallowed_tools = [\"Read\", \"Bash(touch:*)\"]\n[serve.agents.docs]\ndir = {:?}\n",
            app.display().to_string(),
            docs.display().to_string()
        ),
    );
    let serve = Serve::spawn(&env, &[], &[]);
    assert!(serve.url.ends_with("/build"), "{}", serve.url);
    let origin = serve.url.trim_end_matches("/build").to_string();
    let card = |path: &str| {
        http(
            "GET",
            &format!("{origin}{path}/.well-known/agent-card.json"),
            None,
            &[],
        )
        .1
    };
    assert_eq!(card("/build")["description"], "Builds the app");
    assert_eq!(card("/docs")["name"], "docs");
    assert_eq!(
        card("")["name"],
        "build",
        "the first agent is also at the root"
    );
    assert_eq!(
        card("/docs")["supportedInterfaces"][0]["url"].as_str(),
        Some(format!("{origin}/docs/").as_str())
    );

    let run = |agent: &str| {
        sse(
            &format!("{origin}/{agent}/"),
            json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message":
                {"kind": "message", "messageId": agent, "role": "user", "parts": [{"kind": "text", "text": "make the file"}]}}}),
            &[],
        )
    };
    let events = run("build");
    let steps: Vec<&str> = events
        .iter()
        .filter_map(|e| e["result"]["status"]["message"]["parts"][0]["text"].as_str())
        .collect();
    assert!(steps.contains(&"Bash: touch created.txt"), "{events:?}");
    let last = events.last().unwrap();
    assert_eq!(
        (
            last["result"]["kind"].as_str(),
            last["result"]["final"].as_bool()
        ),
        (Some("status-update"), Some(true)),
        "{last}"
    );
    assert_eq!(last["result"]["status"]["state"], "completed", "{last}");
    let text: String = events
        .iter()
        .filter_map(|e| e["result"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "TOOL-RAN");
    assert!(
        app.join("created.txt").exists(),
        "the run works in the agent's folder"
    );

    // Where nothing is allowed, the tool use is a question to the client (its stream ends
    // there); the client's "no" is the tool's refusal.
    let events = run("docs");
    let last = &events.last().unwrap()["result"];
    assert_eq!(
        (last["status"]["state"].as_str(), last["final"].as_bool()),
        (Some("input-required"), Some(true)),
        "{events:?}"
    );
    assert!(
        last["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Bash: touch created.txt"),
        "{last}"
    );
    assert!(
        !docs.join("created.txt").exists(),
        "nothing bypassed where nothing was allowed"
    );
    let (_, answered) = http(
        "POST",
        &format!("{origin}/docs/"),
        Some(
            json!({"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": {"message":
                {"kind": "message", "messageId": "no", "role": "user", "taskId": last["taskId"],
                 "parts": [{"kind": "text", "text": "no"}]}}})
            .to_string(),
        ),
        &[],
    );
    assert_eq!(
        answered["result"]["artifacts"][0]["parts"][0]["text"], "TOOL-REFUSED",
        "{answered}"
    );
    assert!(!docs.join("created.txt").exists());
}

/// Any command as a worker (`exec = [...]` in `[serve.agents.<name>]`): a script's lines reach
/// the client as the answer's chunks while it runs, whole and in order, over SSE and through
/// a2a-mod's own client; a failing one ends `failed` with its exit status and the last lines of
/// its stderr; a cancel stops it, and what it started with it (its process group).
#[test]
fn an_exec_agent_streams_its_lines_fails_with_its_stderr_and_is_canceled() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    std::fs::write(
        env.cwd.join("agent.sh"),
        r#"read -r verb n
case "$verb" in
  lines) i=0; while [ "$i" -lt "$n" ]; do echo "line $i"; i=$((i+1)); sleep 0.05; done ;;
  fail) echo "working on it"; echo "first cause" >&2; echo "disk full" >&2; exit 3 ;;
  hang) echo "started"; sleep 300 & echo $! > sleeper.pid; wait ;;
esac
"#,
    )
    .unwrap();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve.agents.sh]\ndir = {:?}\nexec = [\"/bin/sh\", \"agent.sh\"]\n",
            env.cwd.display().to_string()
        ),
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let card = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", serve.url),
        None,
        &[],
    )
    .1;
    assert!(
        card["description"]
            .as_str()
            .unwrap_or("")
            .starts_with("/bin/sh agent.sh working in "),
        "{card}"
    );
    let stream = json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message":
        {"kind": "message", "messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "lines 40"}]}}});
    let events = sse(&format!("{}/", serve.url), stream, &[]);
    let chunks: Vec<&str> = events
        .iter()
        .filter_map(|e| e["result"]["artifact"]["parts"][0]["text"].as_str())
        .collect();
    let want: String = (0..40).map(|i| format!("line {i}\n")).collect();
    assert!(chunks.len() > 1, "told as the lines came: {events:?}");
    assert_eq!(chunks.concat(), want);
    let last = events.last().unwrap();
    assert_eq!(last["result"]["status"]["state"], "completed", "{last}");

    let home = client(&serve);
    let r = send_json(&home, "remote", "lines 5", &[]);
    assert_eq!(r["state"], "completed", "{r}");
    assert_eq!(
        r["text"].as_str().map(str::trim_end),
        Some("line 0\nline 1\nline 2\nline 3\nline 4"),
        "{r}"
    );
    let r = send_json(&home, "remote", "fail now", &[]);
    assert_eq!(r["state"], "failed", "{r}");
    let why = "/bin/sh exited with status 3: first cause / disk full";
    assert_eq!(
        r["text"].as_str(),
        Some(format!("working on it\n\n{why}").as_str()),
        "what it printed, then why it failed: {r}"
    );
    let t = serve.rpc("tasks/get", json!({"id": r["taskId"]}), false);
    assert_eq!(
        t["result"]["status"]["message"]["parts"][0]["text"], why,
        "{t}"
    );

    let (_, sent) = http(
        "POST",
        &format!("{}/", serve.url),
        Some(
            json!({"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": {
                "message": {"kind": "message", "messageId": "h", "role": "user",
                    "parts": [{"kind": "text", "text": "hang"}]},
                "configuration": {"blocking": false}}})
            .to_string(),
        ),
        &[],
    );
    let id = sent["result"]["id"].as_str().expect("a task").to_string();
    let pid_file = env.cwd.join("sleeper.pid");
    wait_until("the command to start its child", LONG, || {
        std::fs::read_to_string(&pid_file).is_ok_and(|p| p.trim().parse::<i32>().is_ok())
    });
    let sleeper: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let c = serve.rpc("tasks/cancel", json!({"id": id}), false);
    assert_eq!(c["result"]["status"]["state"], "canceled", "{c}");
    // Gone, or a zombie nobody has reaped yet (its parent died first).
    wait_until("the command's child to be stopped", LONG, || {
        std::fs::read_to_string(format!("/proc/{sleeper}/stat")).map_or(true, |s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
        })
    });
}

/// Files in: the file parts of a message reach the run's inbox whole (sha256), under names serve
/// chooses inside `.a2a-inbox/<task>/`, and are named to the run in its prompt; hostile names
/// (a path out, an absolute path, `..`, escapes, 300 characters) stay labels inside it, and
/// nothing is written anywhere else. Sent by a2a-mod's own client (`send --file`) and by raw
/// JSON-RPC; the run is an `exec` script that hashes what its prompt names.
#[test]
fn files_sent_in_reach_the_runs_inbox_whole_and_stay_inside_it() {
    use sha2::Digest as _;
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    std::fs::write(
        env.cwd.join("inbox.sh"),
        "cat | grep '^- ' | while read -r dash path rest; do\n  echo \"$path $(sha256sum \"$path\" | cut -d' ' -f1)\"\ndone\n",
    )
    .unwrap();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve.agents.files]\ndir = {:?}\nexec = [\"/bin/sh\", \"inbox.sh\"]\n",
            env.cwd.display().to_string()
        ),
    );
    let before = crate::util::files_under(&env.cwd);
    let serve = Serve::spawn(&env, &[], &[]);
    let hex = |b: &[u8]| -> String {
        sha2::Sha256::digest(b)
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect()
    };
    // What the run saw: each file's path and hash, one line each.
    let seen = |text: &str| -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(p, h)| (p.to_string(), h.to_string()))
            .collect()
    };

    let project = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(project.path().join("a.bin"), &bytes).unwrap();
    let home = client(&serve);
    let r = home
        .command()
        .env("CLAUDE_PROJECT_DIR", project.path())
        .args(["send", "remote", "hash these", "--file", "a.bin", "--json"])
        .json();
    assert_eq!(r["state"], "completed", "{r}");
    let task = r["taskId"].as_str().unwrap();
    assert_eq!(
        seen(r["text"].as_str().unwrap()),
        [(format!(".a2a-inbox/{task}/1-a.bin"), hex(&bytes))],
        "{r}"
    );

    use base64::Engine as _;
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let hostile = [
        "../../escape.txt",
        "/etc/passwd",
        "..",
        "a\nb\u{1b}[31m.txt",
        &"x".repeat(300),
    ];
    let mut parts = vec![json!({"kind": "text", "text": "hash these"})];
    for (i, name) in hostile.iter().enumerate() {
        parts.push(
            json!({"kind": "file", "file": {"name": name, "mimeType": "text/plain",
            "bytes": b64(format!("file {i}").as_bytes())}}),
        );
    }
    let (_, sent) = http(
        "POST",
        &format!("{}/", serve.url),
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message":
                {"kind": "message", "messageId": "hostile", "role": "user", "parts": parts}}})
            .to_string(),
        ),
        &[],
    );
    let t = &sent["result"];
    assert_eq!(t["status"]["state"], "completed", "{sent}");
    let id = t["id"].as_str().unwrap();
    let text = t["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    let got = seen(text);
    let want: Vec<(String, String)> = [
        "escape.txt".to_string(),
        "passwd".into(),
        "file".into(),
        "a_b__31m.txt".into(),
        "x".repeat(80),
    ]
    .iter()
    .enumerate()
    .map(|(i, label)| {
        (
            format!(".a2a-inbox/{id}/{}-{label}", i + 1),
            hex(format!("file {i}").as_bytes()),
        )
    })
    .collect();
    assert_eq!(got, want, "{text}");

    let new: Vec<_> = crate::util::files_under(&env.cwd)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    assert_eq!(new.len(), 6, "{new:?}");
    for p in &new {
        let rel = p.strip_prefix(&env.cwd).unwrap();
        assert!(
            rel.starts_with(".a2a-inbox"),
            "written outside the inbox: {p:?}"
        );
        let mode =
            std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions());
        assert_eq!(mode & 0o077, 0, "private to the user: {p:?}");
    }
    assert!(!env.cwd.parent().unwrap().join("escape.txt").exists());
}

/// Changes out: in a git work tree, what a run changed comes back as a `changes.patch` artifact
/// (new files included, changes made before the run and the inbox left out) that `git apply`
/// applies cleanly to a clean checkout, and `metadata.changedFiles` names the files; two runs
/// in the same dir at once take turns, so neither patch holds the other's change.
#[test]
fn a_run_in_a_git_dir_returns_its_changes_as_a_patch_that_applies() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    let repo = env.cwd.join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git = |dir: &std::path::Path, args: &[&str]| {
        let o = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .expect("git");
        assert!(o.status.success(), "git {args:?}: {o:?}");
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    git(&repo, &["init", "-q"]);
    std::fs::write(repo.join("src.txt"), "one\n").unwrap();
    std::fs::write(
        repo.join("edit.sh"),
        "read -r verb name\ncase \"$verb\" in\n  edit) echo two >> src.txt; mkdir -p new; printf 'bin\\000ary' > new/data.bin; echo edited ;;\n  touch) sleep 1; echo \"$name\" > \"$name.txt\"; sleep 1; echo touched ;;\nesac\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "start"]);
    // A change made before the run is not the run's.
    std::fs::write(repo.join("before.txt"), "not the run's\n").unwrap();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve]\nmax_concurrent = 2\n[serve.agents.git]\ndir = {:?}\nexec = [\"/bin/sh\", \"edit.sh\"]\n",
            repo.display().to_string()
        ),
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let home = client(&serve);
    let r = send_json(&home, "remote", "edit", &[]);
    assert_eq!(r["state"], "completed", "{r}");
    let patch = r["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| {
            a["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("changes.patch"))
        })
        .unwrap_or_else(|| panic!("a changes.patch artifact: {r}"))["path"]
        .as_str()
        .unwrap()
        .to_string();
    let t = serve.rpc("tasks/get", json!({"id": r["taskId"]}), false);
    assert_eq!(
        t["result"]["metadata"]["changedFiles"],
        json!(["new/data.bin", "src.txt"]),
        "{t}"
    );
    let clean = env.cwd.join("clean");
    git(
        &env.cwd,
        &[
            "clone",
            "-q",
            repo.to_str().unwrap(),
            clean.to_str().unwrap(),
        ],
    );
    git(&clean, &["apply", &patch]);
    assert_eq!(
        std::fs::read_to_string(clean.join("src.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert_eq!(
        std::fs::read(clean.join("new/data.bin")).unwrap(),
        b"bin\0ary"
    );
    assert!(!clean.join("before.txt").exists());

    // Two runs at once in the same dir: each patch holds its own file only.
    let send = |name: &str| {
        let (_, v) = http(
            "POST",
            &format!("{}/", serve.url),
            Some(
                json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message":
                    {"kind": "message", "messageId": name, "role": "user",
                     "parts": [{"kind": "text", "text": format!("touch {name}")}]}}})
                .to_string(),
            ),
            &[],
        );
        v
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| send("alpha"));
        let b = s.spawn(|| send("beta"));
        (a.join().unwrap(), b.join().unwrap())
    });
    for (v, mine, theirs) in [(&a, "alpha", "beta"), (&b, "beta", "alpha")] {
        let t = &v["result"];
        assert_eq!(t["status"]["state"], "completed", "{v}");
        assert_eq!(
            t["metadata"]["changedFiles"],
            json!([format!("{mine}.txt")]),
            "{theirs}'s change is not in {mine}'s: {v}"
        );
    }
}

/// serve is each run's permission host: a tool use the agent's rules do not cover puts the task
/// in `input-required` with the command in the question, and the client's reply on the same
/// taskId is the answer the real CLI gets. `allow` runs it, `deny` with a reason hands Claude
/// the reason as the tool's result, no answer within `ask_timeout_s` denies it and says so, and
/// "allow always" is not asked again in that context (but is in another). Claude's own question
/// (AskUserQuestion) is asked the same way, and the reply is its answer.
#[test]
fn a_permission_prompt_is_a_question_the_client_answers() {
    let script = Script::new()
        .rule(Rule::on_tool_result_for("Bash").reply_with(|r| {
            let t = &r.tool_results()[0];
            let how = if t.is_error { "REFUSED" } else { "RAN" };
            Reply::text(format!("BASH-{how}: {}", t.text))
        }))
        .rule(Rule::on_tool_result_for("AskUserQuestion").reply_with(|r| {
            Reply::text(format!("ASKED: {}", r.tool_results()[0].text))
        }))
        .rule(
            Rule::on_user_text("clean the build")
                .tool_use("Bash", json!({"command": "rm -rf build", "description": "clean"})),
        )
        .rule(Rule::on_user_text("pick a colour").tool_use(
            "AskUserQuestion",
            json!({"questions": [{"question": "Which colour?", "header": "Colour", "multiSelect": false,
                "options": [{"label": "Red", "description": "warm"}, {"label": "Blue", "description": "cool"}]}]}),
        ))
        .fallback_text("FALLBACK");
    let Some((model, env)) = server_env(script) else {
        return;
    };
    let dir = env.cwd.display().to_string();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve.agents.ask]\ndir = {dir:?}\n[serve.agents.hurry]\ndir = {dir:?}\nask_timeout_s = 2\n"
        ),
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let home = client(&serve);
    let build = env.cwd.join("build");
    let text = |id: &str| {
        let t = home.command().args(["task", id, "--json"]).json();
        t["text"].as_str().unwrap_or_default().to_string()
    };
    let asked = |context: &[&str]| {
        std::fs::create_dir_all(&build).unwrap();
        let r = send_json(&home, "remote", "clean the build", context);
        assert_eq!(r["state"], "input-required", "{r}");
        assert_eq!(
            r["question"],
            "Claude wants to run Bash: rm -rf build. Reply allow, allow always, or deny (with a reason)",
            "{r}"
        );
        assert!(build.exists(), "nothing ran before the answer");
        (
            r["taskId"].as_str().unwrap().to_string(),
            r["contextId"].as_str().unwrap().to_string(),
        )
    };

    // "allow always": it runs, and the context's next run is not asked.
    let (id, context) = asked(&[]);
    let r = send_json(&home, "remote", "allow always", &["--task-id", &id]);
    assert_eq!(r["state"], "completed", "{r}");
    assert!(text(&id).starts_with("BASH-RAN"), "{}", text(&id));
    assert!(!build.exists(), "the allowed command ran");
    std::fs::create_dir_all(&build).unwrap();
    let r = send_json(
        &home,
        "remote",
        "clean the build",
        &["--context-id", &context],
    );
    assert_eq!(
        r["state"], "completed",
        "not asked again in its context: {r}"
    );
    assert!(!build.exists());
    assert!(
        !env.cwd.join(".claude/settings.local.json").exists(),
        "allow always stays serve's: the agent's own settings are left alone"
    );

    // "allow" in a new context: asked again, then it runs.
    let (id, _) = asked(&[]);
    let r = send_json(&home, "remote", "allow", &["--task-id", &id]);
    assert_eq!(r["state"], "completed", "{r}");
    assert!(text(&id).starts_with("BASH-RAN"), "{}", text(&id));
    assert!(!build.exists());

    // "deny" with a reason: the model gets the reason as the tool's result.
    let (id, _) = asked(&[]);
    let r = send_json(
        &home,
        "remote",
        "deny: the build dir is shared",
        &["--task-id", &id],
    );
    assert_eq!(r["state"], "completed", "{r}");
    let t = text(&id);
    assert!(
        t.starts_with("BASH-REFUSED") && t.contains("the build dir is shared"),
        "{t}"
    );
    assert!(build.exists(), "a denied command does not run");
    let seen = model.wait_for_request("the denial", LONG, |r| {
        r.tool_results()
            .iter()
            .any(|t| t.is_error && t.text.contains("the build dir is shared"))
    });
    assert!(seen.is_main_loop());

    // No answer: denied after ask_timeout_s, and the task says why it went on.
    let hurry = format!("{}/hurry", serve.url.trim_end_matches("/ask"));
    ok(&home, &["worker", "add", "hurry", &hurry]);
    let r = send_json(&home, "hurry", "clean the build", &[]);
    assert_eq!(r["state"], "input-required", "{r}");
    let id = r["taskId"].as_str().unwrap().to_string();
    let get = || serve_task(&hurry, &id);
    wait_until("the unanswered task to end", LONG, || {
        get()["status"]["state"] == "completed"
    });
    let t = get();
    let answer = t["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        answer.starts_with("BASH-REFUSED") && answer.contains("Nobody answered"),
        "{t}"
    );
    assert!(build.exists());
    let late = fails(&home, &["send", "hurry", "allow", "--task-id", &id]);
    assert!(
        late.contains("is completed") && late.contains("without its taskId"),
        "a late answer changes nothing: {late}"
    );

    // Claude's own question: the reply (an option's number) is its answer.
    let r = send_json(&home, "remote", "pick a colour", &[]);
    assert_eq!(r["state"], "input-required", "{r}");
    assert_eq!(
        r["question"], "Claude asks: Which colour? (Red / Blue). Reply with your answer",
        "{r}"
    );
    let id = r["taskId"].as_str().unwrap().to_string();
    let r = send_json(&home, "remote", "2", &["--task-id", &id]);
    assert_eq!(r["state"], "completed", "{r}");
    assert!(
        text(&id).contains(r#""Which colour?"="Blue""#),
        "{}",
        text(&id)
    );
}

/// GetTask (v0.3) of `id` at the agent `url`: the task.
fn serve_task(url: &str, id: &str) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": id}});
    http("POST", &format!("{url}/"), Some(body.to_string()), &[]).1["result"].clone()
}

/// A shared worker's per-client limits (`serve.per_token_max_concurrent`,
/// `serve.per_token_daily_usd`): one token over its count or its day's cost is refused with the
/// A2A error and the reason, another token is not, and what was accepted runs to its end whole.
#[test]
fn a_tokens_limits_refuse_with_the_reason_and_lose_nothing() {
    let answer = numbered(40);
    let a = answer.clone();
    let script = Script::new()
        .rule(
            Rule::on_user_text("slow job")
                .reply_with(move |_| Reply::text(a.clone()).paced(40, Duration::from_millis(150))),
        )
        .fallback_text("QUICK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    append_config(
        &env.home.a2a_home(),
        "\n[serve]\nper_token_max_concurrent = 1\nper_token_daily_usd = 0.0001\n",
    );
    let serve = Serve::start_with(
        &env,
        &["--token-env", "TOKEN_A", "--token-env", "TOKEN_B"],
        &[("TOKEN_A", "secret-a"), ("TOKEN_B", "secret-b")],
    );
    let call = |token: &str, method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        http(
            "POST",
            &format!("{}/", serve.url),
            Some(body.to_string()),
            &[("Authorization", format!("Bearer {token}"))],
        )
        .1
    };
    let send = |token: &str, text: &str, blocking: bool| {
        call(
            token,
            "message/send",
            json!({"message": {"kind": "message", "messageId": a2a_mod_id(), "role": "user",
                "parts": [{"kind": "text", "text": text}]}, "configuration": {"blocking": blocking}}),
        )
    };
    let refused = |v: &Value, why: &str| {
        assert_eq!(v["error"]["code"], -32000, "{v}");
        let m = v["error"]["message"].as_str().unwrap_or_default();
        assert!(m.contains(why), "{v}");
    };

    let slow = send("secret-a", "slow job", false);
    let slow_id = slow["result"]["id"].as_str().unwrap().to_string();
    refused(
        &send("secret-a", "quick job", true),
        "your token has 1 running",
    );
    let other = send("secret-b", "quick job", true);
    assert_eq!(other["result"]["status"]["state"], "completed", "{other}");

    let get = |id: &str| call("secret-a", "tasks/get", json!({"id": id}))["result"].clone();
    wait_until("the slow task to end", LONG, || {
        get(&slow_id)["status"]["state"] == "completed"
    });
    let done = get(&slow_id);
    assert_eq!(
        done["artifacts"][0]["parts"][0]["text"].as_str(),
        Some(answer.as_str()),
        "the accepted task ran whole"
    );
    assert!(
        done["metadata"]["claudeCode"]["costUsd"].as_f64().unwrap() > 0.0001,
        "{done}"
    );
    refused(&send("secret-a", "quick job", true), "Daily budget reached");
    let listed = call("secret-a", "tasks/list", json!({}));
    assert_eq!(
        listed["result"]["tasks"].as_array().map(Vec::len),
        Some(1),
        "a refusal makes no task: {listed}"
    );
}

fn a2a_mod_id() -> String {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    format!("m-{}", N.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
}

/// "allow always" holds for every shape Claude Code proposes: a command that writes through a
/// redirection (`echo x >> notes.txt`) needs the folder as well as the rule (Claude Code
/// suggests both), so it is asked once and then neither again in that run (a second write)
/// nor in a follow-up on the same context.
#[test]
fn allow_always_on_a_redirection_is_not_asked_again_in_the_run_or_its_context() {
    let note = json!({"command": "echo x >> notes.txt", "description": "note"});
    let second = note.clone();
    // Two writes in the first run, one in the follow-up; each result told as it comes.
    let script = Script::new()
        .rule(
            Rule::when("a write's result", |r| !r.tool_results().is_empty()).reply_with(move |r| {
                let t = r.tool_results().pop().unwrap();
                let ran = if t.is_error { "REFUSED" } else { "RAN" };
                let all = all_text(r);
                if all.contains("note twice") && all.matches("\"tool_result\"").count() == 1 {
                    Reply::text(format!("BASH-{ran}; once more"))
                        .and_tool_use("Bash", second.clone())
                } else {
                    Reply::text(format!("BASH-{ran}: {}", t.text))
                }
            }),
        )
        .rule(Rule::on_user_text("note twice").tool_use("Bash", note.clone()))
        .rule(Rule::on_user_text("note again").tool_use("Bash", note))
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let serve = Serve::start(&env, &[]);
    let home = client(&serve);
    let notes = env.cwd.join("notes.txt");
    let r = send_json(&home, "remote", "note twice", &[]);
    assert_eq!(r["state"], "input-required", "{r}");
    assert!(!notes.exists(), "nothing ran before the answer");
    let id = r["taskId"].as_str().unwrap().to_string();
    let context = r["contextId"].as_str().unwrap().to_string();
    let r = send_json(&home, "remote", "allow always", &["--task-id", &id]);
    assert_eq!(r["state"], "completed", "not asked again in the run: {r}");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "x\nx\n",
        "both writes ran"
    );
    let r = send_json(&home, "remote", "note again", &["--context-id", &context]);
    assert_eq!(
        r["state"], "completed",
        "not asked again in the context: {r}"
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "x\nx\nx\n");
}

/// A person answers a worker's permission question from a shell (`a2a-mod approve`): `deny`
/// with a reason reaches the worker's Claude and the command does not run, `allow` runs it
/// once; a task that asks nothing, or is not this session's, gets a one-line error.
#[test]
fn a_person_answers_a_permission_question_with_approve() {
    let script = Script::new()
        .rule(Rule::on_tool_result_for("Bash").reply_with(|r| {
            let t = &r.tool_results()[0];
            let how = if t.is_error { "REFUSED" } else { "RAN" };
            Reply::text(format!("BASH-{how}: {}", t.text))
        }))
        .rule(Rule::on_user_text("clean the build").tool_use(
            "Bash",
            json!({"command": "rm -rf build", "description": "clean"}),
        ))
        .fallback_text("FALLBACK");
    let Some((_model, env)) = server_env(script) else {
        return;
    };
    let serve = Serve::start(&env, &[]);
    let home = client(&serve);
    let build = env.cwd.join("build");
    let asked = || {
        std::fs::create_dir_all(&build).unwrap();
        let r = send_json(&home, "remote", "clean the build", &[]);
        assert_eq!(r["state"], "input-required", "{r}");
        r["taskId"].as_str().unwrap().to_string()
    };

    let id = asked();
    let r = home
        .command()
        .args([
            "approve", &id, "deny", "the", "build", "dir", "is", "shared", "--json",
        ])
        .json();
    assert_eq!(r["state"], "completed", "{r}");
    let text = r["text"].as_str().unwrap_or_default();
    assert!(text.starts_with("BASH-REFUSED"), "{r}");
    assert!(
        text.contains("the build dir is shared"),
        "the reason reached Claude: {r}"
    );
    assert!(build.exists(), "the denied command did not run");

    let id = asked();
    let r = home
        .command()
        .args(["approve", &id, "allow", "--json"])
        .json();
    assert_eq!(r["state"], "completed", "{r}");
    assert!(
        r["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("BASH-RAN"),
        "{r}"
    );
    assert!(!build.exists(), "the allowed command ran");

    let e = home.command().args(["approve", &id, "allow"]).fails();
    assert_eq!(
        e,
        format!(
            "a2a-mod: approve: task \"{id}\" is completed and asks nothing now — `a2a-mod task {id}` shows it"
        )
    );
    let e = home.command().args(["approve", "nope", "deny"]).fails();
    assert!(e.contains("no task \"nope\" in this session"), "{e}");
}
