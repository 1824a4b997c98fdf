//! Credentials go only where the user sent them: cards,
//! token URLs and redirects that point at a second origin, `--allow-origin`, URLs with a password
//! in them, a hanging `token_cmd`, and redirects to an HTML page. Each test drives the built
//! binary (`worker add`, `send`) against small scripted HTTP servers that record every request's
//! headers, so "no credential reached the other origin" is read off what that server saw.

use crate::util::{
    SECOND, Served, TempHome, a2a, append_timing, fails, one_line_error, stderr, stdout, wait_until,
};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// One request as a scripted server saw it.
#[derive(Debug, Clone)]
struct Req {
    method: String,
    path: String,
    /// Header names lower-cased.
    headers: BTreeMap<String, String>,
    body: Value,
}

impl Req {
    /// Authorization (a bearer, OAuth Basic auth) or the API-key header.
    fn carries_credentials(&self) -> bool {
        self.headers.contains_key("authorization") || self.headers.contains_key("x-api-key")
    }
}

struct Reply {
    status: u16,
    headers: Vec<(&'static str, String)>,
    body: String,
}

fn json_reply(status: u16, v: Value) -> Reply {
    Reply {
        status,
        headers: vec![("content-type", "application/json".into())],
        body: v.to_string(),
    }
}

fn redirect(status: u16, to: &str) -> Reply {
    Reply {
        status,
        headers: vec![("location", to.into())],
        body: String::new(),
    }
}

fn html_page() -> Reply {
    Reply {
        status: 200,
        headers: vec![("content-type", "text/html; charset=utf-8".into())],
        body: "<!doctype html><html><body>Sign in</body></html>".into(),
    }
}

fn not_found() -> Reply {
    Reply {
        status: 404,
        headers: vec![],
        body: "not found".into(),
    }
}

type Script = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

/// A scripted HTTP server on 127.0.0.1:0 ([`Served`]); it stops on drop.
struct Server {
    url: String,
    log: Arc<Mutex<Vec<Req>>>,
    _served: Served,
}

impl Server {
    fn start(script: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Server {
        let log = Arc::new(Mutex::new(Vec::new()));
        let state = (Arc::new(script) as Script, log.clone());
        let served = Served::start(|_| Router::new().fallback(handle).with_state(state));
        Server {
            url: served.url.clone(),
            log,
            _served: served,
        }
    }

    fn requests(&self) -> Vec<Req> {
        self.log.lock().unwrap().clone()
    }

    /// `http://127.0.0.1:port`, as messages name this server's origin.
    fn origin(&self) -> &str {
        &self.url
    }
}

async fn handle(
    State((script, log)): State<(Script, Arc<Mutex<Vec<Req>>>)>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = Req {
        method: method.to_string(),
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    v.to_str().unwrap_or("").to_string(),
                )
            })
            .collect(),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    log.lock().unwrap().push(req.clone());
    let r = script(&req);
    let mut b = Response::builder().status(r.status);
    for (k, v) in r.headers {
        b = b.header(k, v);
    }
    b.body(Body::from(r.body)).unwrap()
}

/// A v1 card whose one JSON-RPC interface is `rpc`, with extra top-level fields.
fn card(rpc: &str, extra: Value) -> Value {
    let mut c = json!({
        "name": "Scripted", "description": "a scripted worker", "version": "1",
        "supportedInterfaces": [
            {"url": rpc, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ],
        "capabilities": {}, "skills": []
    });
    if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    c
}

/// An A2A JSON-RPC answer: every SendMessage completes at once.
fn rpc(r: &Req) -> Reply {
    let task = json!({"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED",
        "message": {"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": "done"}]}}});
    let result = match r.body["method"].as_str() {
        Some("SendMessage") => json!({"task": task}),
        _ => task,
    };
    json_reply(
        200,
        json!({"jsonrpc": "2.0", "id": r.body["id"], "result": result}),
    )
}

/// A worker: the card at the standard place naming `rpc_url` (relative: this server), JSON-RPC
/// on `/a2a`, and `/token` answering OAuth token requests.
fn worker(rpc_url: String, extra: Value) -> impl Fn(&Req) -> Reply + Send + Sync + 'static {
    move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => json_reply(200, card(&rpc_url, extra.clone())),
        ("POST", "/a2a") => rpc(r),
        ("POST", "/token") => token(),
        _ => not_found(),
    }
}

fn token() -> Reply {
    json_reply(
        200,
        json!({"access_token": "tok-1", "token_type": "Bearer", "expires_in": 3600}),
    )
}

/// `a2a-mod <args>` that must fail with one `a2a-mod: ` line on stderr; returns it.
#[track_caller]
fn fails_with(home: &TempHome, args: &[&str], envs: &[(&str, &str)]) -> String {
    home.command().envs(envs.iter().copied()).args(args).fails()
}

#[track_caller]
fn succeeds(home: &TempHome, args: &[&str], envs: &[(&str, &str)]) -> String {
    home.command().envs(envs.iter().copied()).args(args).ok()
}

#[track_caller]
fn assert_no_credentials(server: &Server, what: &str) {
    let leaked: Vec<_> = server
        .requests()
        .into_iter()
        .filter(Req::carries_credentials)
        .collect();
    assert!(
        leaked.is_empty(),
        "{what}: credentials reached {}: {leaked:?}",
        server.url
    );
}

const ENV: &[(&str, &str)] = &[("W_TOKEN", "tok-secret"), ("W_SECRET", "client-secret")];

/// A card whose interface is on another port: `worker add` shows it and refuses, whatever the
/// credential (bearer, API key); a worker added with `--no-check` is refused at `send`; nothing,
/// let alone a credential, reaches the other origin until `--allow-origin` names it, which is
/// stored in `allow_origins` and makes the card acceptable.
#[test]
fn card_interface_on_another_origin_needs_allow_origin() {
    for auth in [
        &["--bearer-env", "W_TOKEN"][..],
        &["--api-key-env", "W_TOKEN"][..],
    ] {
        let other = Server::start(rpc);
        let home_srv = Server::start(worker(format!("{}/a2a", other.url), json!({})));
        let home = TempHome::new();
        let mut add = vec!["worker", "add", "w", &home_srv.url];
        add.extend_from_slice(auth);

        let err = fails_with(&home, &add, ENV);
        assert!(
            err.contains(&format!("the card sends requests to {}", other.origin()))
                && err.contains(&format!("pass --allow-origin {}", other.origin())),
            "{err}"
        );
        assert!(
            !home.a2a_home().join("config.toml").exists()
                || !std::fs::read_to_string(home.a2a_home().join("config.toml"))
                    .unwrap()
                    .contains("[workers.w]"),
            "a refused worker is not saved"
        );

        let mut unchecked = add.clone();
        unchecked.push("--no-check");
        succeeds(&home, &unchecked, ENV);
        let err = fails_with(&home, &["send", "w", "hello"], ENV);
        assert!(err.contains("--allow-origin"), "{err}");
        assert!(other.requests().is_empty(), "{:?}", other.requests());

        let mut allowed = add.clone();
        allowed.extend_from_slice(&["--allow-origin", &other.url]);
        let out = succeeds(&home, &allowed, ENV);
        assert!(out.contains("updated worker \"w\""), "{out}");
        let cfg = std::fs::read_to_string(home.a2a_home().join("config.toml")).unwrap();
        assert!(
            cfg.contains(&format!("allow_origins = [\"{}\"]", other.url)),
            "{cfg}"
        );
        let out = succeeds(&home, &["send", "w", "hello"], ENV);
        assert!(out.contains("completed"), "{out}");
        let sent = other.requests();
        assert!(
            sent.iter()
                .any(|r| r.body["method"] == "SendMessage" && r.carries_credentials()),
            "the allowed origin gets the request and its credential: {sent:?}"
        );
    }
}

/// A card publishing its OAuth token URL on another port: the client secret is not sent there
/// unless the user confirms it (`--oauth-token-url`, or `--allow-origin`).
#[test]
fn card_token_url_on_another_origin_needs_confirmation() {
    let tokens = Server::start(|r| match r.path.as_str() {
        "/token" => token(),
        _ => not_found(),
    });
    let token_url = format!("{}/token", tokens.url);
    let oauth = json!({
        "securitySchemes": {"o": {"oauth2SecurityScheme": {"flows": {"clientCredentials":
            {"tokenUrl": token_url, "scopes": {}}}}}},
        "securityRequirements": [{"schemes": {"o": {"list": []}}}]
    });
    let srv = Server::start(worker("/a2a".into(), oauth));
    let home = TempHome::new();
    let add = [
        "worker",
        "add",
        "w",
        &srv.url,
        "--oauth-client-id",
        "id",
        "--oauth-secret-env",
        "W_SECRET",
    ];
    let err = fails_with(&home, &add, ENV);
    assert!(
        err.contains(&format!(
            "the card sends the oauth client secret to {token_url}"
        )) && err.contains(&format!("--allow-origin {}", tokens.url)),
        "{err}"
    );
    let mut unchecked = add.to_vec();
    unchecked.push("--no-check");
    succeeds(&home, &unchecked, ENV);
    let err = fails_with(&home, &["send", "w", "hello"], ENV);
    assert!(err.contains("oauth client secret"), "{err}");
    assert!(tokens.requests().is_empty(), "{:?}", tokens.requests());

    // Confirmed by giving it: the secret goes there, the token to the worker.
    let mut confirmed = add.to_vec();
    confirmed.extend_from_slice(&["--oauth-token-url", &token_url]);
    succeeds(&home, &confirmed, ENV);
    let out = succeeds(&home, &["send", "w", "hello"], ENV);
    assert!(out.contains("completed"), "{out}");
    assert!(
        tokens.requests().iter().any(|r| r
            .headers
            .get("authorization")
            .is_some_and(|a| a.starts_with("Basic "))),
        "{:?}",
        tokens.requests()
    );
    assert!(
        srv.requests()
            .iter()
            .any(|r| r.body["method"] == "SendMessage"
                && r.headers.get("authorization").map(String::as_str) == Some("Bearer tok-1")),
        "{:?}",
        srv.requests()
    );
}

/// Redirects never carry credentials and are followed only within the trusted origins: an A2A
/// call redirected to another port fails naming the status; a card that redirects to another
/// port is not followed; a guarded card redirected within its origin is fetched again without
/// the credential.
#[test]
fn redirects_carry_no_credentials() {
    let other = Server::start(|r| match r.path.as_str() {
        "/card.json" => json_reply(200, card("/a2a", json!({}))),
        "/a2a" => rpc(r),
        _ => not_found(),
    });
    let other_url = other.url.clone();
    let redirecting = Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => json_reply(200, card("/a2a", json!({}))),
        ("POST", "/a2a") => redirect(307, &format!("{other_url}/a2a")),
        _ => not_found(),
    });
    for auth in [
        &["--bearer-env", "W_TOKEN"][..],
        &["--api-key-env", "W_TOKEN"][..],
    ] {
        let home = TempHome::new();
        let mut add = vec!["worker", "add", "w", &redirecting.url];
        add.extend_from_slice(auth);
        succeeds(&home, &add, ENV);
        let err = fails_with(&home, &["send", "w", "hello"], ENV);
        assert!(
            err.contains("HTTP 307") && err.contains("redirect"),
            "{err}"
        );
    }
    // The token endpoint (same origin, so trusted) redirecting the client secret elsewhere.
    let other_url = other.url.clone();
    let oauth = json!({
        "securitySchemes": {"o": {"oauth2SecurityScheme": {"flows": {"clientCredentials":
            {"tokenUrl": "/token", "scopes": {}}}}}}
    });
    let token_redirect = Server::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("POST", "/token") => redirect(307, &format!("{other_url}/token")),
        _ => worker("/a2a".into(), oauth.clone())(r),
    });
    let home = TempHome::new();
    let add = [
        "worker",
        "add",
        "w",
        &token_redirect.url,
        "--oauth-client-id",
        "id",
        "--oauth-secret-env",
        "W_SECRET",
    ];
    succeeds(&home, &add, ENV);
    let err = fails_with(&home, &["send", "w", "hello"], ENV);
    assert!(
        err.contains("HTTP 307") && err.contains("not followed"),
        "{err}"
    );
    assert_no_credentials(&other, "a redirected call");
    assert!(other.requests().is_empty(), "{:?}", other.requests());

    // A card redirected to another origin is not followed.
    let other_url = other.url.clone();
    let card_elsewhere = Server::start(move |r| match r.path.as_str() {
        "/.well-known/agent-card.json" if r.carries_credentials() => {
            redirect(302, &format!("{other_url}/card.json"))
        }
        "/.well-known/agent-card.json" => json_reply(401, json!({"error": "unauthorized"})),
        _ => not_found(),
    });
    let home = TempHome::new();
    let err = fails_with(
        &home,
        &[
            "worker",
            "add",
            "w",
            &card_elsewhere.url,
            "--bearer-env",
            "W_TOKEN",
        ],
        ENV,
    );
    assert!(
        err.contains("HTTP 302") && err.contains("not followed"),
        "{err}"
    );
    assert!(other.requests().is_empty(), "{:?}", other.requests());

    // Within the origin, the hop is followed but without the credential.
    let guarded = Server::start(move |r| match r.path.as_str() {
        "/.well-known/agent-card.json" if r.carries_credentials() => {
            redirect(302, "/real/card.json")
        }
        "/.well-known/agent-card.json" => json_reply(401, json!({"error": "unauthorized"})),
        "/real/card.json" => json_reply(200, card("/a2a", json!({}))),
        "/a2a" => rpc(r),
        _ => not_found(),
    });
    let home = TempHome::new();
    succeeds(
        &home,
        &[
            "worker",
            "add",
            "w",
            &guarded.url,
            "--bearer-env",
            "W_TOKEN",
        ],
        ENV,
    );
    let hops: Vec<_> = guarded
        .requests()
        .into_iter()
        .filter(|r| r.path == "/real/card.json")
        .collect();
    assert!(!hops.is_empty(), "{:?}", guarded.requests());
    assert!(
        hops.iter().all(|r| !r.carries_credentials()),
        "a redirect carried the credential: {hops:?}"
    );
}

/// `worker add` refuses a URL with a password in it, in one line that does not repeat the
/// password and points to the environment instead; so do `--allow-origin` and
/// `--oauth-token-url`.
#[test]
fn userinfo_url_is_refused_without_echoing_it() {
    let home = TempHome::new();
    for args in [
        &["worker", "add", "w", "http://user:hunter2@127.0.0.1:9/"][..],
        &[
            "worker",
            "add",
            "w",
            "https://user:hunter2@agent.example.com",
            "--no-check",
        ][..],
        &[
            "worker",
            "add",
            "w",
            "http://hunter2@127.0.0.1:9/",
            "--no-check",
        ][..],
        &[
            "worker",
            "add",
            "w",
            "http://127.0.0.1:9",
            "--allow-origin",
            "http://u:hunter2@127.0.0.1:10",
            "--no-check",
        ][..],
        &[
            "worker",
            "add",
            "w",
            "http://127.0.0.1:9",
            "--oauth-client-id",
            "id",
            "--oauth-secret-env",
            "W_SECRET",
            "--oauth-token-url",
            "http://u:hunter2@127.0.0.1:10/token",
            "--no-check",
        ][..],
    ] {
        let err = fails(&home, args);
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("user name or password"), "{err}");
        assert!(err.contains("--bearer-env"), "{err}");
    }
    assert!(!home.a2a_home().join("config.toml").exists());
}

/// A hand-edited config.toml with a password in a worker URL (unreachable, too): no command
/// prints the userinfo.
#[test]
fn userinfo_in_config_is_never_printed() {
    let home = TempHome::new();
    std::fs::write(
        home.a2a_home().join("config.toml"),
        "[workers.w]\nurl = \"http://user:hunter2@127.0.0.1:9/\"\n",
    )
    .unwrap();
    for args in [
        &["send", "w", "hello"][..],
        &["worker", "show", "w"][..],
        &["worker", "list"][..],
    ] {
        let o = a2a(&home, args);
        let all = format!("{}{}", stdout(&o), stderr(&o));
        assert!(!o.status.success(), "{args:?}: {all}");
        assert!(
            !all.contains("hunter2") && !all.contains("user:"),
            "{args:?}: {all}"
        );
        let err = one_line_error(&o, &format!("{args:?}"));
        assert!(err.contains("workers.w.url"), "{err}");
    }
}

/// Whether `pid` is a live process (a zombie waiting for its reaper is not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// A token command that never finishes (it waits on background `sleep`s it started) is cut at
/// its budget, the request's 3 s: the error names the command and the budget, the worker is never
/// asked, and afterwards no process of the command's group is alive.
#[test]
fn hanging_token_cmd_is_cut_with_its_group() {
    let srv = Server::start(worker("/a2a".into(), json!({})));
    let home = TempHome::new();
    let pids = home.root().join("pids");
    let cmd = format!(
        "sleep 300 & echo $! >> {p}; sleep 301 & echo $! >> {p}; echo $$ >> {p}; wait",
        p = pids.display()
    );
    succeeds(
        &home,
        &["worker", "add", "w", &srv.url, "--token-cmd", &cmd],
        &[],
    );
    append_timing(&home.a2a_home(), "poll_timeout_s = 3");
    let started = std::time::Instant::now();
    let err = fails_with(&home, &["send", "w", "hello"], &[]);
    assert!(
        err.contains("token command \"sleep 300 &")
            && err.contains("did not finish within 3 s")
            && !err.contains("worker is slow"),
        "{err}"
    );
    assert!(started.elapsed() < 10 * SECOND, "{:?}", started.elapsed());
    assert!(
        !srv.requests().iter().any(|r| r.method == "POST"),
        "the worker was asked: {:?}",
        srv.requests()
    );
    let pids: Vec<u32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(pids.len(), 3, "{pids:?}");
    wait_until(
        "every process of the token command to end",
        5 * SECOND,
        || pids.iter().all(|p| !alive(*p)),
    );
}

/// A worker URL that redirects to a sign-in page, for the card or for the A2A call: the error
/// says what came back and names the HTTP status.
#[test]
fn redirect_to_an_html_page_names_the_status() {
    let login = Server::start(|r| match r.path.as_str() {
        "/.well-known/agent-card.json" | "/.well-known/agent.json" => redirect(302, "/login"),
        "/login" => html_page(),
        _ => not_found(),
    });
    let home = TempHome::new();
    let err = fails_with(&home, &["worker", "add", "w", &login.url], &[]);
    assert!(
        err.contains("redirected with HTTP 302") && err.contains("an HTML page"),
        "{err}"
    );

    let rpc_login = Server::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/.well-known/agent-card.json") => json_reply(200, card("/a2a", json!({}))),
        ("POST", "/a2a") => redirect(303, "/login"),
        ("GET", "/login") => html_page(),
        _ => not_found(),
    });
    succeeds(&home, &["worker", "add", "w", &rpc_login.url], &[]);
    let err = fails_with(&home, &["send", "w", "hello"], &[]);
    assert!(err.contains("HTTP 303") && err.contains("/login"), "{err}");
}
