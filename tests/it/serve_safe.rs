//! `a2a-mod serve` left running on a laptop, tried as its attackers would: a web page in the
//! user's own browser (the forms a page sends without a CORS preflight, a DNS-rebinding page's
//! foreign `Host`), slow and greedy clients (unfinished headers, idle keep-alives, readers that
//! never read a 4 MiB answer), racing senders against the limits, a second token after a
//! context, and the operator's view (the log, `/healthz`, SIGTERM with a run live).
//!
//! Raw requests go over a plain `TcpStream`, with exactly the headers a browser would send; the
//! runs behind serve are the real Claude Code CLI against the fake Messages API (which records
//! every request, so "no run started" is seen there) or `exec` scripts.

use crate::fake::model_api::{Rule, Script};
use crate::serve::{LONG, Serve, client, http, http_text, server_env};
use crate::util::{append_config, send_json, wait_until};
use serde_json::{Value, json};
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// `127.0.0.1:PORT` and `/agent` of a serve URL.
fn split_url(url: &str) -> (String, String) {
    let rest = url.trim_start_matches("http://");
    let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
    (addr.to_string(), format!("/{path}"))
}

/// One raw HTTP/1.1 request with exactly `headers` (and its length, `Connection: close`); the
/// status, the response head (lowercase) and the body.
fn raw(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).expect("connect to serve");
    s.set_read_timeout(Some(LONG)).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// A v1 SendMessage carrying `text`.
fn send_body(text: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message":
        {"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]}}})
    .to_string()
}

fn refusals(serve: &Serve) -> usize {
    serve.log_text().matches("refused a request").count()
}

/// The forms a web page sends with no CORS preflight, each carrying a JSON-RPC SendMessage:
/// `(what, Content-Type, body)`.
fn no_preflight_forms(rpc: &str) -> Vec<(&'static str, Option<&'static str>, Vec<u8>)> {
    let form_text = format!("{},\"x\":\"=\"}}", &rpc[..rpc.len() - 1]);
    let multipart =
        format!("--XyZ\r\nContent-Disposition: form-data; name=\"q\"\r\n\r\n{rpc}\r\n--XyZ--\r\n");
    vec![
        (
            "fetch no-cors, text/plain",
            Some("text/plain;charset=UTF-8"),
            rpc.into(),
        ),
        (
            "form, urlencoded",
            Some("application/x-www-form-urlencoded"),
            format!("{rpc}=").into(),
        ),
        (
            "form, multipart",
            Some("multipart/form-data; boundary=XyZ"),
            multipart.into(),
        ),
        (
            "<form enctype=text/plain>",
            Some("text/plain"),
            form_text.into(),
        ),
        ("sendBeacon of an untyped Blob", None, rpc.into()),
    ]
}

/// No web page gets in: the five forms a page can POST without a preflight, with and without
/// `Origin`, to both bindings, start no run (the fake model sees no request for them) and a
/// non-JSON body is 415; a DNS-rebinding page's foreign `Host` reads no task, no card and starts
/// nothing; a foreign `Origin` and its preflight are refused and no response carries a CORS
/// header. a2a-mod's own client, a name in `allowed_hosts` and an origin in `allowed_origins`
/// still work. Each refusal is one log line.
#[test]
fn no_web_page_starts_a_run_or_reads_a_task() {
    let script = Script::new()
        .rule(Rule::on_user_text("EVIL").text("ran the evil one"))
        .fallback_text("FINE");
    let Some((model, env)) = server_env(script) else {
        return;
    };
    append_config(
        &env.home.a2a_home(),
        "\n[serve]\nallowed_hosts = [\"a2a.example.com\"]\nallowed_origins = [\"https://app.example.com\"]\n",
    );
    let serve = Serve::start(&env, &[]);
    let (addr, path) = split_url(&serve.url);
    let rpc_path = format!("{path}/");

    // a2a-mod's own client.
    let home = client(&serve);
    let r = send_json(&home, "remote", "hello there", &[]);
    assert_eq!(r["state"], "completed", "{r}");
    let legit = r["taskId"].as_str().unwrap().to_string();

    let evil = send_body("EVIL rm -rf ~");
    let host = ("Host", addr.as_str());
    let mut refused = 0;
    for (what, ctype, body) in no_preflight_forms(&evil) {
        for target in [rpc_path.clone(), format!("{path}/message:send")] {
            let mut page = vec![
                host,
                ("Origin", "http://evil.example"),
                ("Sec-Fetch-Site", "cross-site"),
            ];
            let mut bare = vec![host];
            if let Some(c) = ctype {
                page.push(("Content-Type", c));
                bare.push(("Content-Type", c));
            }
            let (s, head, b) = raw(&addr, "POST", &target, &page, &body);
            assert_eq!(s, 403, "{what} from a page to {target}: {b}");
            assert!(!head.contains("access-control-allow"), "{head}");
            let (s, _, b) = raw(&addr, "POST", &target, &bare, &body);
            assert_eq!(s, 415, "{what} without Origin to {target}: {b}");
            let e: Value = serde_json::from_str(&b).expect("a JSON error");
            assert!(
                e["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("declared JSON"),
                "{e}"
            );
            refused += 2;
        }
    }

    // A DNS-rebinding page: its own domain in Host, everything else as a client would send.
    let rebound = "evil.example:".to_string() + addr.split(':').nth(1).unwrap();
    let foreign = [
        ("Host", rebound.as_str()),
        ("Content-Type", "application/json"),
    ];
    let (s, _, b) = raw(&addr, "POST", &rpc_path, &foreign, evil.as_bytes());
    assert_eq!(s, 403, "{b}");
    assert!(b.contains("serve.allowed_hosts"), "{b}");
    for get in [
        format!("{path}/tasks"),
        format!("{path}/.well-known/agent-card.json"),
        format!("{path}/tasks/{legit}"),
    ] {
        let (s, _, b) = raw(&addr, "GET", &get, &[("Host", &rebound)], b"");
        assert_eq!(s, 403, "{get}: {b}");
        assert!(!b.contains(&legit), "a foreign Host reads no task: {b}");
        refused += 1;
    }
    refused += 1;
    // A foreign Origin with a JSON body, and its preflight.
    let (s, head, _) = raw(
        &addr,
        "POST",
        &rpc_path,
        &[
            host,
            ("Content-Type", "application/json"),
            ("Origin", "http://evil.example"),
        ],
        evil.as_bytes(),
    );
    assert_eq!(s, 403);
    assert!(!head.contains("access-control-allow"), "{head}");
    let (s, head, _) = raw(
        &addr,
        "OPTIONS",
        &rpc_path,
        &[
            host,
            ("Origin", "http://evil.example"),
            ("Access-Control-Request-Method", "POST"),
            ("Access-Control-Request-Headers", "content-type"),
        ],
        b"",
    );
    assert_eq!(s, 403, "a foreign preflight is refused");
    assert!(!head.contains("access-control-allow"), "{head}");
    refused += 2;

    // What the operator allowed: a proxy's name, a web app's origin.
    let list = |headers: &[(&str, &str)]| {
        let (s, head, b) = raw(&addr, "GET", &format!("{path}/tasks"), headers, b"");
        assert_eq!(s, 200, "{b}");
        assert!(!head.contains("access-control-allow"), "{head}");
        assert!(b.contains(&legit), "{b}");
    };
    list(&[("Host", "a2a.example.com")]);
    list(&[("Host", "A2A.example.com:443")]);
    list(&[
        host,
        ("Origin", "https://app.example.com"),
        ("Sec-Fetch-Site", "cross-site"),
    ]);
    list(&[host]);

    let evil_turns = model
        .requests()
        .iter()
        .filter(|r| r.is_main_loop() && r.last_user_text().contains("EVIL"))
        .count();
    assert_eq!(
        evil_turns,
        0,
        "no refused request started a run: {}",
        model.summary()
    );
    let (_, tasks) = http("GET", &format!("{}/tasks", serve.url), None, &[]);
    assert_eq!(tasks["tasks"].as_array().map(Vec::len), Some(1), "{tasks}");
    wait_until("a log line per refusal", LONG, || {
        refusals(&serve) == refused
    });
}

/// Slow clients hold nothing: with 500 connections that never finish their headers, a real
/// client is answered at once, and the 500 are closed within the header timeout; a kept-alive
/// connection left idle is closed too. At `max_connections`, a new client waits for a place
/// (it is answered once a slow connection is closed) instead of being turned away.
#[test]
fn slow_connections_are_closed_and_never_keep_a_client_out() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    append_config(&env.home.a2a_home(), "\n[serve]\nheader_timeout_s = 2\n");
    let serve = Serve::start(&env, &[]);
    let (addr, _) = split_url(&serve.url);
    let mut slow: Vec<(TcpStream, Instant)> = (0..500)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).expect("connect");
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .unwrap();
            (s, Instant::now())
        })
        .collect();
    let asked = Instant::now();
    let (s, _, b) = raw(&addr, "GET", "/healthz", &[("Host", &addr)], b"");
    let took = asked.elapsed();
    assert_eq!(s, 200, "{b}");
    println!("a client's answer with 500 slow connections open: {took:?}");
    assert!(
        took < Duration::from_secs(1),
        "answered within 1 s, took {took:?}"
    );
    let health: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(health["status"], "ok");

    // Read in the order they were opened: each read returns at its own close (or at once, if
    // it closed while an earlier one was read), so each one's time open is at most what shows.
    let mut longest = Duration::ZERO;
    for (s, opened) in &mut slow {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut buf = [0u8; 512];
        match s.read(&mut buf) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("a slow connection was not closed: {e}"),
        }
        longest = longest.max(opened.elapsed());
    }
    println!(
        "500 unfinished-header connections, each closed within {longest:?} (header timeout 2 s)"
    );
    assert!(longest < Duration::from_millis(4500), "{longest:?}");

    // Kept alive, then idle.
    let mut idle = TcpStream::connect(&addr).unwrap();
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let at = Instant::now();
    loop {
        match idle.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => panic!("an idle kept-alive connection was not closed: {e}"),
        }
    }
    assert!(
        String::from_utf8_lossy(&got).starts_with("HTTP/1.1 200"),
        "answered first"
    );
    assert!(at.elapsed() < Duration::from_secs(6), "{:?}", at.elapsed());
    drop(serve);

    // At the bound, a new client waits for a place.
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    append_config(
        &env.home.a2a_home(),
        "\n[serve]\nheader_timeout_s = 2\nmax_connections = 4\n",
    );
    let serve = Serve::start(&env, &[]);
    let (addr, _) = split_url(&serve.url);
    let opened = Instant::now();
    let held: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
            s
        })
        .collect();
    // The fifth waits in the listen queue until the header timeout frees a place (2 s after the
    // four were opened): answered, but not before. Load can only make it later.
    let (s, _, _) = raw(&addr, "GET", "/healthz", &[("Host", &addr)], b"");
    let waited = opened.elapsed();
    assert_eq!(s, 200);
    println!("with 4 of max_connections = 4 held, a fifth client was answered after {waited:?}");
    assert!(
        waited >= Duration::from_millis(1500),
        "the fifth connection was served before any of the four held ones was closed ({waited:?})"
    );
    drop(held);
}

/// The resident set of a process, peak and now, in KiB (`/proc`).
fn rss_kib(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap_or(0)
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

/// An `exec` agent `sh agent.sh` in `env`'s project dir, with `[serve]` keys `serve_keys`.
pub(crate) fn exec_agent(env: &crate::peers::claude::ClaudeEnv, script: &str, serve_keys: &str) {
    std::fs::write(env.cwd.join("agent.sh"), script).unwrap();
    append_config(
        &env.home.a2a_home(),
        &format!(
            "\n[serve]\n{serve_keys}\n[serve.agents.sh]\ndir = {:?}\nexec = [\"/bin/sh\", \"agent.sh\"]\n",
            env.cwd.display().to_string()
        ),
    );
}

/// Streams cost what they carry: 200 clients that subscribe late to a task with a 4 MiB answer
/// and never read hold serve's peak resident set under 128 MiB (they share the task's one event
/// log and its answer's JSON); the task ends, a reading client gets the answer whole, a reader
/// past the task's bound is refused with the reason, and the non-readers' connections are closed.
#[test]
fn late_readers_that_never_read_cost_no_copy_of_a_long_answer() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    let line = "x".repeat(1023);
    let big: String = (0..4096)
        .map(|i| format!("{i:04}{}\n", &line[4..]))
        .collect();
    std::fs::write(env.cwd.join("big.txt"), &big).unwrap();
    exec_agent(
        &env,
        "read -r verb\ncat big.txt\n: > printed\nwhile [ ! -e go ]; do sleep 0.05; done\necho END\n",
        "max_streams_per_task = 201\nheader_timeout_s = 3\nsend_timeout_s = 10\n",
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let (addr, path) = split_url(&serve.url);
    let sent = serve.rpc(
        "message/send",
        json!({"message": {"kind": "message", "messageId": "big", "role": "user",
            "parts": [{"kind": "text", "text": "big"}]}, "configuration": {"blocking": false}}),
        false,
    );
    let id = sent["result"]["id"].as_str().expect("a task").to_string();
    wait_until("the whole answer to be printed", LONG, || {
        env.cwd.join("printed").exists()
    });
    wait_until("the task to hold the whole answer", LONG, || {
        let t = serve.rpc("tasks/get", json!({"id": id, "historyLength": 0}), false);
        t["result"]["artifacts"][0]["parts"][0]["text"]
            .as_str()
            .map(str::len)
            == Some(big.len())
    });
    let pid = serve.pid();
    let fds_before = open_fds(pid);
    let peak_before = rss_kib(pid, "VmHWM:");
    let subscribe =
        json!({"jsonrpc": "2.0", "id": 7, "method": "SubscribeToTask", "params": {"id": id}})
            .to_string();
    let request = format!(
        "POST {path}/ HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{subscribe}",
        subscribe.len()
    );
    // Each reads its response's first bytes (so serve has started its stream), then nothing.
    let deadline = Instant::now() + LONG;
    let idle: Vec<TcpStream> = (0..200)
        .map(|_| {
            let mut s = TcpStream::connect(&addr).unwrap();
            s.write_all(request.as_bytes()).unwrap();
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "the readers' streams did not start within {LONG:?}"
            );
            s.set_read_timeout(Some(left)).unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 256];
            while !String::from_utf8_lossy(&seen).contains("data:") {
                let n = s.read(&mut buf).unwrap();
                assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&seen));
                seen.extend_from_slice(&buf[..n]);
            }
            s
        })
        .collect();
    let (opened, started) = std::sync::mpsc::channel();
    let reader = {
        let (url, body) = (format!("{}/", serve.url), subscribe.clone());
        std::thread::spawn(move || read_stream(&url, body, &opened))
    };
    started
        .recv_timeout(LONG)
        .expect("the reading client's stream to open");
    let (s, _, b) = raw(
        &addr,
        "POST",
        &format!("{path}/"),
        &[("Host", &addr), ("Content-Type", "application/json")],
        subscribe.as_bytes(),
    );
    let e: Value = serde_json::from_str(&b).unwrap_or_default();
    assert_eq!((s, e["error"]["code"].as_i64()), (200, Some(-32000)), "{b}");
    assert!(b.contains("serve.max_streams_per_task"), "{b}");

    std::fs::write(env.cwd.join("go"), "").unwrap();
    let text = reader.join().unwrap();
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).expect("an event"))
        .collect();
    let head = &events[0]["result"]["task"];
    let mut answer = head["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    for e in &events[1..] {
        if let Some(t) = e["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"].as_str() {
            answer.push_str(t);
        }
    }
    assert_eq!(
        answer.len(),
        big.len() + 4,
        "the reader got the answer whole"
    );
    assert!(
        answer == format!("{big}END\n"),
        "the reader got the answer in order"
    );
    let last = events.last().unwrap();
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{last}"
    );

    let peak = rss_kib(pid, "VmHWM:");
    println!(
        "serve with 200 idle late readers of a 4 MiB answer: peak RSS {:.1} MiB ({:.1} MiB before they came)",
        peak as f64 / 1024.0,
        peak_before as f64 / 1024.0
    );
    assert!(peak < 128 * 1024, "peak RSS {peak} KiB is over 128 MiB");
    wait_until("the idle readers' connections to be closed", LONG, || {
        open_fds(pid) <= fds_before + 2
    });
    drop(idle);
}

/// Reads a streaming POST to its end, telling `opened` once its first bytes are in.
fn read_stream(url: &str, body: String, opened: &std::sync::mpsc::Sender<()>) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut resp = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("a stream");
        assert_eq!(resp.status(), 200);
        let mut all = Vec::new();
        while let Some(c) = resp.chunk().await.expect("the stream's bytes") {
            all.extend_from_slice(&c);
            let _ = opened.send(());
        }
        String::from_utf8(all).expect("utf-8")
    })
}

/// The limits are one step: 20 senders at once, each message with 4 file parts, never have
/// more than `per_token_max_concurrent = 2` runs going, and with one slot and `max_queued = 3`
/// no more than 1 + 3 are ever taken; every task taken runs to its end. Each 20 times.
#[test]
fn limits_are_checked_and_taken_in_one_step() {
    use base64::Engine as _;
    let file = base64::engine::general_purpose::STANDARD.encode(vec![7u8; 64 << 10]);
    let message = |text: &str| {
        let parts: Vec<Value> = std::iter::once(json!({"text": text}))
            .chain((0..4).map(|i| {
                json!({"raw": file, "filename": format!("f{i}.bin"), "mediaType": "application/octet-stream"})
            }))
            .collect();
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": uuid(), "role": "ROLE_USER", "parts": parts},
            "configuration": {"returnImmediately": true}}})
        .to_string()
    };
    // Sends all at once; the ids of the tasks taken, and how many were refused as busy.
    let burst = |url: &str, text: &str| -> (Vec<String>, usize) {
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(20));
        let handles: Vec<_> = (0..20)
            .map(|_| {
                let (url, body, barrier) = (url.to_string(), message(text), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    http("POST", &url, Some(body), &[("A2A-Version", "1.0".into())]).1
                })
            })
            .collect();
        let mut taken = Vec::new();
        let mut busy = 0;
        for h in handles {
            let v = h.join().unwrap();
            match v["result"]["task"]["id"].as_str() {
                Some(id) => taken.push(id.to_string()),
                None => {
                    assert_eq!(v["error"]["code"], -32000, "only a busy refusal: {v}");
                    busy += 1;
                }
            }
        }
        (taken, busy)
    };
    let ended = |serve: &Serve, ids: &[String]| {
        for id in ids {
            wait_until("every task taken to end", LONG, || {
                serve.rpc("GetTask", json!({"id": id}), true)["result"]["status"]["state"]
                    == "TASK_STATE_COMPLETED"
            });
        }
    };

    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    exec_agent(
        &env,
        "read -r verb\ncat > /dev/null\necho start >> runs.log\nsleep 0.3\necho end >> runs.log\necho ok\n",
        "max_concurrent = 8\nper_token_max_concurrent = 2\n",
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let url = format!("{}/", serve.url);
    let mut taken_all = 0;
    for round in 0..20 {
        let (taken, busy) = burst(&url, &format!("job {round}"));
        assert_eq!(taken.len() + busy, 20);
        assert!(!taken.is_empty());
        taken_all += taken.len();
        ended(&serve, &taken);
    }
    let log = std::fs::read_to_string(env.cwd.join("runs.log")).unwrap();
    let (mut now, mut most) = (0i32, 0i32);
    for l in log.lines() {
        now += if l == "start" { 1 } else { -1 };
        most = most.max(now);
    }
    assert_eq!(
        log.lines().filter(|l| *l == "start").count(),
        taken_all,
        "every task taken ran"
    );
    assert!(
        most <= 2,
        "at most 2 runs at once for one token, saw {most}"
    );
    drop(serve);

    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    exec_agent(
        &env,
        "read -r verb round\ncat > /dev/null\nwhile [ ! -e \"go-$round\" ]; do sleep 0.02; done\necho ok\n",
        "max_concurrent = 1\nmax_queued = 3\n",
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let url = format!("{}/", serve.url);
    for round in 0..20 {
        let (taken, _) = burst(&url, &format!("wait {round}"));
        assert!(
            (1..=4).contains(&taken.len()),
            "one running and at most 3 waiting, took {}",
            taken.len()
        );
        std::fs::write(env.cwd.join(format!("go-{round}")), "").unwrap();
        ended(&serve, &taken);
    }
}

fn uuid() -> String {
    a2a_mod::testing::uuid_v4()
}

/// A context belongs to its token: a second token naming the first one's contextId gets a
/// conversation of its own (its run does not see the first one's), as an unknown id would, so
/// it can neither probe nor squat; the first token's follow-up still resumes its own, and a
/// context the second token named first takes nothing from the first.
#[test]
fn a_context_belongs_to_the_token_that_made_it() {
    let script = Script::new().fallback_text("NOTED");
    let Some((model, env)) = server_env(script) else {
        return;
    };
    let serve = Serve::start_with(
        &env,
        &["--token-env", "TOKEN_A", "--token-env", "TOKEN_B"],
        &[("TOKEN_A", "secret-a"), ("TOKEN_B", "secret-b")],
    );
    let send = |token: &str, text: &str, context: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message":
            {"kind": "message", "messageId": uuid(), "role": "user", "contextId": context,
             "parts": [{"kind": "text", "text": text}]}}});
        http(
            "POST",
            &format!("{}/", serve.url),
            Some(body.to_string()),
            &[("Authorization", format!("Bearer {token}"))],
        )
        .1
    };
    let turn = |needle: &str| {
        model.wait_for_request(needle, LONG, |r| {
            r.is_main_loop() && r.last_user_text().contains(needle)
        })
    };
    let all_text = |needle: &str| serde_json::to_string(turn(needle).messages()).unwrap();

    let a1 = send("secret-a", "remember PINEAPPLE", "shared");
    assert_eq!(a1["result"]["status"]["state"], "completed", "{a1}");
    let b1 = send("secret-b", "what do you remember B", "shared");
    assert_eq!(
        b1["result"]["status"]["state"], "completed",
        "not refused: {b1}"
    );
    assert_eq!(b1["result"]["contextId"], "shared");
    assert!(
        !all_text("what do you remember B").contains("PINEAPPLE"),
        "B's run is its own conversation"
    );
    let unknown = send("secret-b", "a fresh one", "never-used");
    assert_eq!(
        unknown["result"]["status"]["state"], b1["result"]["status"]["state"],
        "another's context answers as an unknown one"
    );
    let a2 = send("secret-a", "what do you remember A", "shared");
    assert_eq!(a2["result"]["status"]["state"], "completed", "{a2}");
    assert!(
        all_text("what do you remember A").contains("PINEAPPLE"),
        "A's follow-up resumes A's"
    );

    // B names a context first; A's use of the same name is A's own.
    let b2 = send("secret-b", "squat on TAKEN", "taken");
    assert_eq!(b2["result"]["status"]["state"], "completed");
    let a3 = send("secret-a", "mine after all", "taken");
    assert_eq!(a3["result"]["status"]["state"], "completed", "{a3}");
    assert!(!all_text("mine after all").contains("TAKEN"));
    let list = |token: &str, context: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/list", "params": {"contextId": context}});
        let v = http(
            "POST",
            &format!("{}/", serve.url),
            Some(body.to_string()),
            &[("Authorization", format!("Bearer {token}"))],
        )
        .1;
        v["result"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        list("secret-b", "shared"),
        [b1["result"]["id"].as_str().unwrap()]
    );
    assert_eq!(
        list("secret-a", "taken"),
        [a3["result"]["id"].as_str().unwrap()]
    );
}

/// The operator's view: a line per accepted task (its agent and the token's variable, never the
/// token), per ending (state and seconds) and per refusal (the rule) on stderr without
/// `A2A_MOD_LOG`; `/healthz` answers with no token and tells nothing but liveness. SIGTERM with
/// runs live drains: a new send is refused as stopping, a run that ends within `stop_grace_s`
/// completes, the one that does not is stopped and ends failed, and a client streaming it is
/// told; serve exits 0, and a restart reads both endings.
#[test]
fn serve_logs_what_it_does_and_drains_on_sigterm() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    exec_agent(
        &env,
        "read -r verb\ncase \"$verb\" in\n  quick) echo done ;;\n  finish) while [ ! -e finish ]; do sleep 0.02; done; echo finished ;;\n  hang) echo started; sleep 300 & echo $! > sleeper.pid; wait ;;\nesac\n",
        "stop_grace_s = 2\ntoken_envs = [\"SERVE_TOKEN\"]\n",
    );
    let token = "tok-5e1f-do-not-log-me";
    let mut serve = Serve::spawn(&env, &[], &[("SERVE_TOKEN", token)]);
    let auth = [("Authorization", format!("Bearer {token}"))];
    let send = |text: &str, blocking: bool| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {
            "message": {"kind": "message", "messageId": uuid(), "role": "user",
                "parts": [{"kind": "text", "text": text}]},
            "configuration": {"blocking": blocking}}});
        http(
            "POST",
            &format!("{}/", serve.url),
            Some(body.to_string()),
            &auth,
        )
        .1
    };
    let (addr, _) = split_url(&serve.url);
    let (s, _, b) = raw(&addr, "GET", "/healthz", &[("Host", &addr)], b"");
    assert_eq!(s, 200, "no token needed: {b}");
    let health: Value = serde_json::from_str(&b).unwrap();
    assert_eq!(
        health.as_object().map(|o| o.len()),
        Some(2),
        "liveness and version only: {b}"
    );
    assert_eq!(health["status"], "ok");

    let quick = send("quick", true);
    assert_eq!(quick["result"]["status"]["state"], "completed", "{quick}");
    let quick_id = quick["result"]["id"].as_str().unwrap();
    let (s, _) = http("POST", &format!("{}/", serve.url), Some("{}".into()), &[]);
    assert_eq!(s, 401);
    wait_until("the log's lines", LONG, || {
        let log = serve.log_text();
        log.contains(&format!(
            "task {quick_id} accepted: agent sh, token SERVE_TOKEN"
        )) && log.contains(&format!("task {quick_id} completed in "))
            && log.contains("refused a request from 127.0.0.1:")
            && log.contains("missing or invalid bearer token")
    });

    let hang = send("hang", false);
    let hang_id = hang["result"]["id"].as_str().unwrap().to_string();
    let finish = send("finish", false);
    let finish_id = finish["result"]["id"].as_str().unwrap().to_string();
    wait_until("the hanging run to start its child", LONG, || {
        std::fs::read_to_string(env.cwd.join("sleeper.pid"))
            .is_ok_and(|p| p.trim().parse::<i32>().is_ok())
    });
    let sleeper: i32 = std::fs::read_to_string(env.cwd.join("sleeper.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let url = format!("{}/", serve.url);
    let sub = json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": {"id": hang_id}}).to_string();
    let streamed = {
        let auth = auth.clone();
        std::thread::spawn(move || http_text("POST", &url, Some(sub), &auth))
    };
    wait_until("the stream to open", LONG, || {
        serve.log_text().contains("run started")
    });

    serve.terminate();
    wait_until("serve to start draining", LONG, || {
        serve.log_text().contains("stopping: no new tasks")
    });
    let refused = send("quick", true);
    assert_eq!(refused["error"]["code"], -32000, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Server stopping"),
        "{refused}"
    );
    std::fs::write(env.cwd.join("finish"), "").unwrap();

    let status = serve.wait_exit(LONG).expect("serve exits after the grace");
    assert!(status.success(), "{status:?}");
    let (s, text) = streamed.join().unwrap();
    assert_eq!(s, 200);
    let last: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .map(|d| serde_json::from_str(d).unwrap())
        .unwrap();
    assert_eq!(
        last["result"]["status"]["state"], "failed",
        "the stream is told: {last}"
    );
    assert!(
        last["result"]["status"]["message"]["parts"][0]["text"]
            .as_str()
            .unwrap()
            .contains("server stopped"),
        "{last}"
    );
    let log = serve.log_text();
    assert!(
        log.contains(&format!("task {finish_id} completed in ")),
        "{log}"
    );
    assert!(log.contains(&format!("task {hang_id} failed in ")), "{log}");
    assert!(
        log.contains("refused a task for SERVE_TOKEN: Server stopping"),
        "{log}"
    );
    assert!(!log.contains(token), "the token is never logged");
    wait_until("the run's child to be stopped", LONG, || {
        !Path::new(&format!("/proc/{sleeper}")).exists()
            || std::fs::read_to_string(format!("/proc/{sleeper}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
    });

    let again = Serve::spawn(&env, &[], &[("SERVE_TOKEN", token)]);
    let get = |id: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": id}});
        http(
            "POST",
            &format!("{}/", again.url),
            Some(body.to_string()),
            &auth,
        )
        .1["result"]["status"]["state"]
            .clone()
    };
    assert_eq!(get(&finish_id), "completed");
    assert_eq!(get(&hang_id), "failed");
    assert!(
        !again.log_text().contains("restarted"),
        "nothing was left live: {}",
        again.log_text()
    );
}

/// A reader that stops reading is dropped once its connection has taken nothing for
/// `send_timeout_s`, and the run goes on to its end: a stream of 150,000 small chunks (far more
/// than the kernel's buffers hold) read for its first bytes only is closed before its end.
#[test]
fn a_reader_that_stops_reading_is_dropped_and_the_run_goes_on() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    exec_agent(
        &env,
        "read -r verb\nyes | head -n 150000\necho END\n",
        "send_timeout_s = 1\n",
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let (addr, path) = split_url(&serve.url);
    let stream = json!({"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message":
        {"kind": "message", "messageId": "flood", "role": "user", "parts": [{"kind": "text", "text": "go"}]}}})
    .to_string();
    let fds_before = open_fds(serve.pid());
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(
        format!(
            "POST {path}/ HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{stream}",
            stream.len()
        )
        .as_bytes(),
    )
    .unwrap();
    let mut first = [0u8; 64];
    s.set_read_timeout(Some(LONG)).unwrap();
    let _ = s.read(&mut first).unwrap();
    // The run finishes though its only reader never reads on.
    let t = |serve: &Serve| serve.rpc("tasks/list", json!({}), false)["result"]["tasks"][0].clone();
    wait_until("the run to end", LONG, || {
        t(&serve)["status"]["state"] == "completed"
    });
    let id = t(&serve)["id"].as_str().unwrap().to_string();
    let full = serve.rpc("tasks/get", json!({"id": id}), false);
    let answer = full["result"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert_eq!(answer.len(), 300_004, "the run's answer is whole");
    wait_until("serve to close the stream nobody reads", LONG, || {
        open_fds(serve.pid()) <= fds_before
    });
    // The stream was closed before its end: reading on gets what the kernel had buffered, then
    // the close, and never the final event.
    let mut sink = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    match s.read_to_end(&mut sink) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!(
            "the unread stream was not closed: {e} after {} bytes",
            sink.len()
        ),
    }
    let text = String::from_utf8_lossy(&sink);
    assert!(
        !text.contains("\"completed\""),
        "closed before its end ({} bytes read)",
        sink.len()
    );
    println!(
        "an unread stream was closed after the kernel held {} bytes of it",
        sink.len()
    );
}
