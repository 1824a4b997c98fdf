//! `a2a-mod serve` against what the A2A v1.0 specification says a server MUST and SHOULD do,
//! over JSON-RPC and HTTP+JSON, each rule a check written from the spec's text (the A2A TCK's
//! checks of the same rules are its own): the version a request asks for, errors with their
//! `ErrorInfo`, the proto's snake_case parameter names, a cacheable card, camelCase in what it
//! writes, and a subscription to a task that waits for an answer.

use crate::fake::model_api::{Reply, Rule, Script};
use crate::serve::{Serve, client, http, request, server_env, sse_then};
use crate::serve_safe::exec_agent;
use crate::util::send_json;
use serde_json::{Value, json};

/// An exec agent that answers `got: <the message>`.
fn echo_agent(env: &crate::peers::claude::ClaudeEnv) -> Serve {
    exec_agent(env, "read -r line; echo \"got: $line\"\n", "");
    Serve::spawn(env, &[], &[])
}

fn v1() -> Vec<(&'static str, String)> {
    vec![("A2A-Version", "1.0".into())]
}

fn rpc(serve: &Serve, method: &str, params: Value, headers: &[(&str, String)]) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    http(
        "POST",
        &format!("{}/", serve.url),
        Some(body.to_string()),
        headers,
    )
    .1
}

/// The one `ErrorInfo` of an error's details: its reason and domain.
fn error_info(details: &Value) -> (String, String) {
    let d = &details[0];
    assert_eq!(
        d["@type"], "type.googleapis.com/google.rpc.ErrorInfo",
        "{details}"
    );
    (
        d["reason"].as_str().unwrap_or_default().to_string(),
        d["domain"].as_str().unwrap_or_default().to_string(),
    )
}

/// A GET's status, and the named response headers.
fn get_headers(
    url: &str,
    headers: &[(&str, String)],
    names: &[&str],
) -> (u16, Vec<Option<String>>) {
    let (status, head, _) = request("GET", url, None, headers);
    let got = (names.iter())
        .map(|n| Some(head.get(*n)?.to_str().ok()?.to_string()))
        .collect();
    (status, got)
}

#[test]
fn versions_errors_snake_case_and_the_cacheable_card() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    let serve = echo_agent(&env);

    // A version serve does not speak: -32009 with its ErrorInfo, HTTP 400 over HTTP+JSON.
    let bad = vec![("A2A-Version", "99.0".to_string())];
    let r = rpc(&serve, "GetTask", json!({"id": "nope"}), &bad);
    assert_eq!(r["error"]["code"], -32009, "{r}");
    assert_eq!(r["id"], 7, "{r}");
    assert_eq!(
        error_info(&r["error"]["data"]),
        ("VERSION_NOT_SUPPORTED".into(), "a2a-protocol.org".into())
    );
    let (s, body) = http("GET", &format!("{}/tasks/nope", serve.url), None, &bad);
    assert_eq!(s, 400, "{body}");
    assert_eq!(
        error_info(&body["error"]["details"]).0,
        "VERSION_NOT_SUPPORTED"
    );
    let (s, body) = http(
        "GET",
        &format!("{}/tasks/nope?A2A-Version=99.0", serve.url),
        None,
        &[],
    );
    assert_eq!(s, 400, "the query parameter is read too: {body}");
    // The versions it speaks, and none named, are served: v0.3's names keep working.
    for (method, headers) in [
        ("GetTask", v1()),
        ("GetTask", vec![("A2A-Version", "1".into())]),
        ("GetTask", vec![("A2A-Version", String::new())]),
        ("tasks/get", vec![("A2A-Version", "0.3".into())]),
        ("tasks/get", vec![]),
    ] {
        let r = rpc(&serve, method, json!({"id": "nope"}), &headers);
        assert_eq!(r["error"]["code"], -32001, "{method} {headers:?}: {r}");
    }

    // A v1 error carries its ErrorInfo in `data`, and nothing but code, message and data.
    let r = rpc(&serve, "GetTask", json!({"id": "nope"}), &v1());
    let e = r["error"].as_object().unwrap();
    let mut keys: Vec<&str> = e.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(keys, ["code", "data", "message"], "{r}");
    assert_eq!(
        error_info(&r["error"]["data"]),
        ("TASK_NOT_FOUND".into(), "a2a-protocol.org".into())
    );
    // A v0.3 method's error is as 0.3 wrote it.
    let r = rpc(&serve, "tasks/get", json!({"id": "nope"}), &[]);
    assert!(r["error"].get("data").is_none(), "{r}");

    // Two tasks in one context, one in another; then read with the proto's snake_case names.
    let send = |text: &str, context: &str| {
        let message = json!({"messageId": format!("m-{text}"), "role": "ROLE_USER",
            "parts": [{"text": text}], "contextId": context});
        let r = rpc(&serve, "SendMessage", json!({"message": message}), &v1());
        let t = &r["result"]["task"];
        assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{r}");
        assert_eq!(
            t["artifacts"][0]["parts"][0]["text"],
            format!("got: {text}\n")
        );
        t["id"].as_str().unwrap().to_string()
    };
    let first = send("one", "ctx-a");
    send("two", "ctx-a");
    send("three", "ctx-b");
    let r = rpc(&serve, "GetTask", json!({"id": first}), &v1());
    assert!(
        r["result"]["history"].is_array(),
        "all of it by default: {r}"
    );
    let r = rpc(
        &serve,
        "GetTask",
        json!({"id": first, "history_length": 0}),
        &v1(),
    );
    assert!(
        r["result"].get("history").is_none(),
        "history_length read: {r}"
    );
    let listed = |params: Value| {
        let r = rpc(&serve, "ListTasks", params, &v1());
        r["result"]["tasks"].as_array().map_or(0, Vec::len)
    };
    assert_eq!(listed(json!({"contextId": "ctx-a"})), 2);
    assert_eq!(listed(json!({"context_id": "ctx-a"})), 2, "context_id read");
    assert_eq!(
        listed(json!({"context_id": "ctx-a", "page_size": 1})),
        1,
        "page_size read"
    );

    // Each A2A error with the HTTP status of the spec's table: a cancel of a finished task is
    // 409; the push notification configs of a task nobody has are 404 on every route.
    let (s, body) = http(
        "POST",
        &format!("{}/tasks/{first}:cancel", serve.url),
        Some("{}".into()),
        &v1(),
    );
    assert_eq!(s, 409, "{body}");
    assert_eq!(
        error_info(&body["error"]["details"]).0,
        "TASK_NOT_CANCELABLE"
    );
    let configs = format!("{}/tasks/nope/pushNotificationConfigs", serve.url);
    for (method, url, body) in [
        ("GET", configs.clone(), None),
        (
            "POST",
            configs.clone(),
            Some(json!({"url": "https://example.com/hook"}).to_string()),
        ),
        ("GET", format!("{configs}/c1"), None),
        ("DELETE", format!("{configs}/c1"), None),
    ] {
        let (s, r) = http(method, &url, body, &v1());
        assert_eq!(s, 404, "{method} {url}: {r}");
        assert_eq!(error_info(&r["error"]["details"]).0, "TASK_NOT_FOUND");
    }
    // A body not declared JSON: 415, with the A2A error of its binding.
    let text_plain = |url: &str| {
        let (s, _, body) = request("POST", url, Some(("{}".into(), "text/plain")), &v1());
        (
            s,
            serde_json::from_str::<Value>(&body).unwrap_or(Value::Null),
        )
    };
    let (s, r) = text_plain(&format!("{}/", serve.url));
    assert_eq!((s, r["error"]["code"].clone()), (415, json!(-32005)), "{r}");
    let (s, r) = text_plain(&format!("{}/message:send", serve.url));
    assert_eq!(s, 415, "{r}");
    assert_eq!(
        error_info(&r["error"]["details"]).0,
        "CONTENT_TYPE_NOT_SUPPORTED"
    );

    // The card is cacheable: a max-age, an ETag that a conditional request is answered 304 to,
    // and Last-Modified.
    let card = format!("{}/.well-known/agent-card.json", serve.url);
    let names = ["cache-control", "etag", "last-modified", "content-type"];
    let (s, h) = get_headers(&card, &[], &names);
    assert_eq!(s, 200);
    assert!(
        h[0].as_deref().is_some_and(|c| c.contains("max-age=")),
        "{h:?}"
    );
    let etag = h[1].clone().expect("an ETag");
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert!(
        h[2].as_deref().is_some_and(|d| d.ends_with(" GMT")),
        "{h:?}"
    );
    assert!(
        h[3].as_deref()
            .is_some_and(|c| c.contains("application/json")),
        "{h:?}"
    );
    let (s, h) = get_headers(&card, &[("If-None-Match", etag.clone())], &names);
    assert_eq!(s, 304);
    assert_eq!(h[1].as_deref(), Some(etag.as_str()));
    let (s, _) = get_headers(&card, &[("If-None-Match", "\"other\"".into())], &names);
    assert_eq!(s, 200);
}

/// A subscription to a task that waits for an answer is served, over both bindings, and goes on
/// through the answer to the task's end; the send's own stream still ends where the task waits.
#[test]
fn a_subscription_to_a_waiting_task_follows_it_to_its_end() {
    let script = Script::new()
        .rule(
            Rule::on_tool_result_for("Bash")
                .reply_with(|r| Reply::text(format!("BASH-RAN: {}", r.tool_results()[0].text))),
        )
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
    for rest in [false, true] {
        std::fs::create_dir_all(env.cwd.join("build")).unwrap();
        let r = send_json(&home, "remote", "clean the build", &[]);
        assert_eq!(r["state"], "input-required", "{r}");
        let id = r["taskId"].as_str().unwrap().to_string();
        let answer = || {
            let r = send_json(&home, "remote", "allow", &["--task-id", &id]);
            assert_eq!(r["state"], "completed", "{r}");
        };
        let (url, body) = if rest {
            (format!("{}/tasks/{id}:subscribe", serve.url), json!({}))
        } else {
            (
                format!("{}/", serve.url),
                json!({"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": id}}),
            )
        };
        let events = sse_then(&url, body, &v1(), answer);
        let state = |e: &Value| {
            let e = if rest { e } else { &e["result"] };
            (e["task"]["status"]["state"].as_str())
                .or(e["statusUpdate"]["status"]["state"].as_str())
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(state(&events[0]), "TASK_STATE_INPUT_REQUIRED", "{events:?}");
        assert_eq!(
            state(events.last().unwrap()),
            "TASK_STATE_COMPLETED",
            "rest {rest}: {events:?}"
        );
    }
    // serve's metadata is camelCase too (Claude Code's usage keys are snake_case).
    let r = send_json(&home, "remote", "anything else", &[]);
    let id = r["taskId"].as_str().unwrap();
    let t = rpc(&serve, "GetTask", json!({"id": id}), &v1());
    let meta = t["result"]["metadata"].to_string();
    assert!(meta.contains("inputTokens"), "{meta}");
    assert!(!meta.contains("_tokens"), "{meta}");
}
