//! `a2a-mod serve` calls back: push notification configs kept per task over JSON-RPC and
//! HTTP+JSON in both dialects, each change of a task POSTed to its webhooks (a webhook of the
//! tests' own, `fake::webhook`) in order, with the config's authentication, through an outage,
//! a slow webhook and a kill -9; and webhook URLs that point inside refused before anything is
//! sent.

use crate::fake::model_api::Script;
use crate::fake::webhook::{Mode, Received, Webhook};
use crate::serve::{LONG, Serve, http, server_env};
use crate::serve_safe::exec_agent;
use crate::util::wait_until;
use serde_json::{Value, json};
use std::time::Duration;

fn v1() -> Vec<(&'static str, String)> {
    vec![("A2A-Version", "1.0".into())]
}

fn message(text: &str) -> Value {
    json!({"messageId": format!("m-{text}"), "role": "ROLE_USER", "parts": [{"text": text}]})
}

/// What a v1 POST told: `status:<state>` or `artifact:<name>:<text>`.
fn told(body: &Value) -> String {
    if let Some(s) = body.get("statusUpdate") {
        format!("status:{}", s["status"]["state"].as_str().unwrap_or("?"))
    } else if let Some(a) = body.get("artifactUpdate") {
        format!(
            "artifact:{}:{}",
            a["artifact"]["name"].as_str().unwrap_or("?"),
            a["artifact"]["parts"][0]["text"].as_str().unwrap_or("?")
        )
    } else {
        format!("other:{body}")
    }
}

/// What an exec agent that answers `got: hello` tells its webhooks, in order: its start, then
/// its answer and its end.
const TOLD: [&str; 3] = [
    "status:TASK_STATE_WORKING",
    "artifact:answer:got: hello\n",
    "status:TASK_STATE_COMPLETED",
];

/// Each distinct POST once, in the order it first came.
fn distinct(rs: &[Received]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rs {
        let t = told(&r.body);
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// The POSTs to `path` the webhook acknowledged.
fn acknowledged<'a>(rs: &'a [Received], path: &str) -> Vec<&'a Received> {
    rs.iter()
        .filter(|r| r.path == path && r.answered == 200)
        .collect()
}

fn port_of(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .and_then(|p| p.split('/').next())
        .and_then(|p| p.parse().ok())
        .expect("a port in the URL")
}

/// The configs: created, read, listed and deleted over JSON-RPC and HTTP+JSON in v1's and
/// v0.3's words, on a finished task too (kept, told nothing more); their secrets never answered;
/// at most 8 per task; deleting twice is no error, reading a deleted one is. A URL naming a
/// loopback, private or link-local address is refused with the reason, before any connection is
/// tried (the webhook's listener has nothing to accept), in a create and in a send.
#[test]
fn configs_are_kept_per_task_in_every_binding_and_inside_urls_are_refused() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    exec_agent(&env, "read -r line; echo \"got: $line\"\n", "");
    let serve = Serve::spawn(&env, &[], &[]);
    let (_, card) = http(
        "GET",
        &format!("{}/.well-known/agent-card.json", serve.url),
        None,
        &[],
    );
    assert_eq!(card["capabilities"]["pushNotifications"], true, "{card}");

    let done = serve.rpc("SendMessage", json!({"message": message("hello")}), true);
    let t = done["result"]["task"]["id"].as_str().unwrap().to_string();
    let rpc = |method: &str, params: Value| {
        let v1 = !method.contains('/');
        serve.rpc(method, params, v1)
    };

    // v1 JSON-RPC, flat, the proto's snake_case task_id.
    let made = rpc(
        "CreateTaskPushNotificationConfig",
        json!({"task_id": t, "id": "h1", "url": "https://hooks.example.com/a2a", "token": "tok-1",
            "authentication": {"scheme": "Bearer", "credentials": "secret-1"}}),
    );
    assert_eq!(
        made["result"],
        json!({"taskId": t, "id": "h1", "url": "https://hooks.example.com/a2a",
            "authentication": {"scheme": "Bearer"}}),
        "{made}"
    );
    let got = rpc(
        "GetTaskPushNotificationConfig",
        json!({"taskId": t, "id": "h1"}),
    );
    assert_eq!(got["result"], made["result"], "{got}");
    // v1 HTTP+JSON: the body is the config, the task the path's.
    let configs = format!("{}/tasks/{t}/pushNotificationConfigs", serve.url);
    let (s, made2) = http(
        "POST",
        &configs,
        Some(json!({"id": "h2", "url": "https://hooks.example.com/b"}).to_string()),
        &v1(),
    );
    assert_eq!(
        (s, &made2["id"], &made2["taskId"]),
        (200, &json!("h2"), &json!(t))
    );
    let (s, list) = http("GET", &configs, None, &v1());
    let ids: Vec<&str> = (list["configs"].as_array().unwrap().iter())
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!((s, ids), (200, vec!["h1", "h2"]), "{list}");
    // v0.3 JSON-RPC: the config inside the task's, get and delete name the task `id`.
    let made3 = rpc(
        "tasks/pushNotificationConfig/set",
        json!({"taskId": t, "pushNotificationConfig": {"id": "h3",
            "url": "https://hooks.example.com/c",
            "authentication": {"schemes": ["Bearer"], "credentials": "secret-3"}}}),
    );
    assert_eq!(
        made3["result"],
        json!({"taskId": t, "pushNotificationConfig": {"id": "h3",
            "url": "https://hooks.example.com/c", "authentication": {"schemes": ["Bearer"]}}}),
        "{made3}"
    );
    let got3 = rpc(
        "tasks/pushNotificationConfig/get",
        json!({"id": t, "pushNotificationConfigId": "h3"}),
    );
    assert_eq!(got3["result"], made3["result"], "{got3}");
    let list3 = rpc("tasks/pushNotificationConfig/list", json!({"id": t}));
    assert_eq!(list3["result"].as_array().map(Vec::len), Some(3), "{list3}");
    // v0.3 HTTP+JSON: `parent`, `configId`, `config`, answered by resource name.
    let configs03 = format!("{}/v1/tasks/{t}/pushNotificationConfigs", serve.url);
    let (s, made4) = http(
        "POST",
        &configs03,
        Some(
            json!({"parent": format!("tasks/{t}"), "configId": "h4",
                "config": {"pushNotificationConfig": {"url": "https://hooks.example.com/d"}}})
            .to_string(),
        ),
        &[],
    );
    assert_eq!(
        (s, made4["name"].as_str()),
        (
            200,
            Some(format!("tasks/{t}/pushNotificationConfigs/h4").as_str())
        ),
        "{made4}"
    );
    let (s, got4) = http("GET", &format!("{configs03}/h4"), None, &[]);
    assert_eq!((s, &got4), (200, &made4));
    for answer in [&made, &made2, &made3, &made4, &list, &list3] {
        let text = answer.to_string();
        assert!(
            !text.contains("secret-") && !text.contains("tok-1"),
            "a config's secrets are never answered: {text}"
        );
    }

    // Deleting is idempotent; a deleted config is not found.
    for _ in 0..2 {
        let r = rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"task_id": t, "id": "h1"}),
        );
        assert_eq!(r["result"], Value::Null, "{r}");
        assert!(r.get("error").is_none(), "{r}");
        let (s, body) = http("DELETE", &format!("{configs}/h2"), None, &v1());
        assert_eq!((s, body), (200, json!({})));
        let r = rpc(
            "tasks/pushNotificationConfig/delete",
            json!({"id": t, "pushNotificationConfigId": "h3"}),
        );
        assert!(r.get("error").is_none(), "{r}");
    }
    let gone = rpc(
        "GetTaskPushNotificationConfig",
        json!({"task_id": t, "id": "h1"}),
    );
    assert_eq!(gone["error"]["code"], -32001, "{gone}");
    let (s, _) = http("GET", &format!("{configs}/h2"), None, &v1());
    assert_eq!(s, 404);
    // A task nobody has, and a task's ninth webhook.
    let none = rpc(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "no-such-task", "url": "https://hooks.example.com/a"}),
    );
    assert_eq!(none["error"]["code"], -32001, "{none}");
    for i in 0..7 {
        let r = rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": t, "id": format!("more-{i}"), "url": "https://hooks.example.com/m"}),
        );
        assert!(r.get("result").is_some(), "{r}");
    }
    let over = rpc(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": t, "id": "ninth", "url": "https://hooks.example.com/m"}),
    );
    assert_eq!(over["error"]["code"], -32602, "{over}");
    assert!(
        over["error"]["message"].as_str().unwrap().contains("has 8"),
        "{over}"
    );

    // Inside URLs: refused, saying how the operator allows them, before any connection.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    for url in [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://localhost:{port}/hook"),
        format!("http://[::ffff:127.0.0.1]:{port}/hook"),
        "http://169.254.169.254/latest/meta-data".into(),
        "http://10.0.0.8/hook".into(),
        "http://192.168.1.1/hook".into(),
    ] {
        let r = rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": t, "id": "h1", "url": url}),
        );
        assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
        let why = r["error"]["message"].as_str().unwrap();
        assert!(why.contains("push_allow_private"), "{url}: {why}");
        let (s, _) = http(
            "POST",
            &configs,
            Some(json!({"id": "h1", "url": url}).to_string()),
            &v1(),
        );
        assert_eq!(s, 400, "{url}");
    }
    let refused = rpc(
        "SendMessage",
        json!({"message": message("inline"), "configuration": {"taskPushNotificationConfig":
            {"url": format!("http://127.0.0.1:{port}/hook")}}}),
    );
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    // No task was made for the refused send.
    let list = rpc("ListTasks", json!({}));
    assert_eq!(list["result"]["totalSize"], 1, "{list}");
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a refused webhook was connected to: {other:?}"),
    }
}

/// A webhook that is down (503) for 10 s gets every change afterwards, in order, each once
/// acknowledged, with the config's authentication and token, as a body of known length; a v0.3
/// client's webhook gets the task itself. The outage is logged once per webhook, and its end
/// once. serve's own port is never a webhook, even where private addresses are allowed.
#[test]
fn a_webhook_down_for_10_s_gets_every_change_in_order_once_it_is_back() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    exec_agent(
        &env,
        "read -r line; echo \"got: $line\"\n",
        "push_allow_private = true",
    );
    let serve = Serve::spawn(&env, &[], &[]);
    let hook = Webhook::start(Mode::Down);

    let own = port_of(&serve.url);
    let sent = serve.rpc(
        "SendMessage",
        json!({"message": message("hello"), "configuration": {"taskPushNotificationConfig": {
            "id": "v1-hook", "url": format!("{}/v1", hook.url), "token": "tok-1",
            "authentication": {"scheme": "Bearer", "credentials": "cred-1"}}}}),
        true,
    );
    let t = &sent["result"]["task"];
    assert_eq!(t["status"]["state"], "TASK_STATE_COMPLETED", "{sent}");
    let old = serve.rpc(
        "message/send",
        json!({"message": {"kind": "message", "messageId": "m03", "role": "user",
            "parts": [{"kind": "text", "text": "hello"}]},
            "configuration": {"pushNotificationConfig": {"url": format!("{}/v03", hook.url),
                "authentication": {"schemes": ["Bearer"], "credentials": "cred-3"}}}}),
        false,
    );
    assert_eq!(old["result"]["status"]["state"], "completed", "{old}");
    for url in [
        format!("http://127.0.0.1:{own}/"),
        format!("http://localhost:{own}/x"),
    ] {
        let r = serve.rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": t["id"], "id": "loop", "url": url}),
            true,
        );
        let why = r["error"]["message"].as_str().unwrap_or_default();
        assert!(why.contains("this server itself"), "{url}: {r}");
    }

    hook.wait_for("both webhooks to be tried", LONG, |rs| {
        ["/v1", "/v03"]
            .iter()
            .all(|p| rs.iter().any(|r| r.path == *p && r.answered == 503))
    });
    // The outage itself: the webhook stays down this long, whatever serve does meanwhile.
    std::thread::sleep(Duration::from_secs(10));
    hook.set(Mode::Up);
    let rs = hook.wait_for("every change to be acknowledged", LONG, |rs| {
        let v1 = acknowledged(rs, "/v1");
        let v03 = acknowledged(rs, "/v03");
        v1.last()
            .is_some_and(|r| told(&r.body) == "status:TASK_STATE_COMPLETED")
            && v03
                .last()
                .is_some_and(|r| r.body["status"]["state"] == "completed")
    });
    let v1: Vec<&Received> = rs.iter().filter(|r| r.path == "/v1").collect();
    let done: Vec<String> = acknowledged(&rs, "/v1")
        .iter()
        .map(|r| told(&r.body))
        .collect();
    assert_eq!(done, TOLD, "each change acknowledged once, in order");
    let tried: Vec<Received> = v1.iter().map(|r| (*r).clone()).collect();
    assert_eq!(distinct(&tried), TOLD, "never out of order");
    for r in &v1 {
        assert_eq!(r.authorization.as_deref(), Some("Bearer cred-1"), "{r:?}");
        assert_eq!(r.token.as_deref(), Some("tok-1"), "{r:?}");
        assert!(r.content_length.is_some() && !r.chunked, "{r:?}");
        // The spec's StreamResponse: no v0.3 `final` or `kind` inside.
        let inner = r.body.as_object().unwrap().values().next().unwrap();
        assert!(
            inner.get("final").is_none() && inner.get("kind").is_none(),
            "{r:?}"
        );
        assert_eq!(inner["taskId"], t["id"]);
    }
    let v03 = acknowledged(&rs, "/v03");
    assert!(
        v03.iter().all(
            |r| r.body["kind"] == "task" && r.authorization.as_deref() == Some("Bearer cred-3")
        )
    );

    let log = serve.log_text();
    let failed = log.matches(&format!("push to {} failed", hook.url)).count();
    let back = log.matches("delivered again after").count();
    assert_eq!(
        (failed, back),
        (2, 2),
        "one line per outage per webhook:\n{log}"
    );
    // The webhooks' secrets never reach the log.
    for secret in ["cred-1", "cred-3", "tok-1"] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
    // A task with a webhook ends with its log line like any other.
    let id = t["id"].as_str().unwrap();
    assert!(log.contains(&format!("task {id} completed")), "{log}");
}

/// A slow webhook holds up no run: the task runs to its end while the webhook has not answered
/// the POST of its start. serve is then killed (kill -9) with that POST in flight; restarted, it
/// delivers from the POST it had not seen acknowledged, every change after it in order.
#[test]
fn a_slow_webhook_holds_no_run_and_delivery_resumes_after_a_kill_9() {
    let Some((_model, env)) = server_env(Script::new()) else {
        return;
    };
    // The run waits for `go`, so its end comes while the webhook holds the first POST.
    exec_agent(
        &env,
        "read -r line; while [ ! -f go ]; do sleep 0.05; done; echo \"got: $line\"\n",
        "push_allow_private = true",
    );
    let mut serve = Serve::spawn(&env, &[], &[]);
    let hook = Webhook::start(Mode::Hold);
    let sent = serve.rpc(
        "SendMessage",
        json!({"message": message("hello"), "configuration": {"returnImmediately": true,
            "taskPushNotificationConfig": {"url": format!("{}/hook", hook.url)}}}),
        true,
    );
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    hook.wait_for("the webhook to hold the first POST", LONG, |rs| {
        !rs.is_empty()
    });
    std::fs::write(env.cwd.join("go"), "").unwrap();
    wait_until("the run to end", LONG, || {
        let t = serve.rpc("GetTask", json!({"id": id}), true);
        t["result"]["status"]["state"] == "TASK_STATE_COMPLETED"
    });
    let held = hook.received();
    assert_eq!(held.len(), 1, "one POST at a time per webhook: {held:?}");
    assert_eq!(
        (told(&held[0].body).as_str(), held[0].answered),
        (TOLD[0], 0),
        "the run ended while its webhook had not answered"
    );

    serve.kill9();
    hook.set(Mode::Up);
    let serve = Serve::spawn(&env, &[], &[]);
    let rs = hook.wait_for("delivery to resume after the restart", LONG, |rs| {
        rs.last()
            .is_some_and(|r| told(&r.body) == TOLD[2] && r.answered == 200)
    });
    assert_eq!(distinct(&rs), TOLD, "never out of order");
    let resumed: Vec<String> = rs[1..].iter().map(|r| told(&r.body)).collect();
    assert_eq!(
        resumed, TOLD,
        "the restart starts from the POST not acknowledged, then each change once"
    );
    drop(serve);
}
