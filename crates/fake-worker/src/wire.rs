//! The fake worker's JSON on the wire: agent cards, tasks and JSON-RPC errors, in the v1 and v0.3
//! spellings exactly as docs/a2a.md records real servers emitting them. Also the small helpers
//! that make ids and timestamps without extra crates.
//!
//! Pure rendering: callers pass the record, the snapshot and the clock values in.

use super::script::{FakePart, HistoryEntry, Snapshot, TaskRecord};
pub(crate) use a2a_mod_proto::Dialect;
pub(crate) use a2a_mod_proto::error::{
    INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, PARSE_ERROR, TASK_NOT_CANCELABLE,
    TASK_NOT_FOUND, UNSUPPORTED_OPERATION, VERSION_NOT_SUPPORTED, rpc_result,
};
use a2a_mod_proto::{Binding, Wire, write};
use serde_json::{Value, json};

/// The fake worker speaks JSON-RPC only.
fn rpc(d: Dialect) -> Wire {
    Wire {
        dialect: d,
        binding: Binding::JsonRpc,
    }
}

/// What the card advertises for auth.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CardAuth {
    pub bearer: bool,
    pub oauth: bool,
}

const BEARER_SCHEME: &str = "bearer";
const OAUTH_SCHEME: &str = "oauth";

/// One skill per script verb, so `worker show` lists what the fake worker understands.
fn skills() -> Value {
    // The skill shape is the same in v1 and v0.3.
    let skill = |id: &str, description: &str, example: &str| {
        json!({
            "id": id,
            "name": id,
            "description": description,
            "tags": ["fake", id],
            "examples": [example],
        })
    };
    json!([
        skill(
            "echo",
            "Anything else: completed at once, echoing the text",
            "hello"
        ),
        skill(
            "slow",
            "slow N <words>: working, completed N seconds after the send",
            "slow 20 build the docs"
        ),
        skill(
            "ask",
            "ask <question>: input-required; a follow-up on the task completes it",
            "ask which branch?"
        ),
        skill(
            "fail",
            "fail <why>: failed with that reason",
            "fail disk full"
        ),
        skill("reject", "reject: rejected", "reject"),
        skill(
            "auth",
            "auth: auth-required; a follow-up on the task completes it",
            "auth"
        ),
        skill(
            "silent",
            "silent: accepted, then never answers GetTask",
            "silent"
        ),
    ])
}

/// The v0.3 (OpenAPI-style) security schemes and requirements.
fn v03_security(auth: CardAuth, token_url: &str) -> (Value, Value) {
    let mut schemes = serde_json::Map::new();
    let mut reqs = Vec::new();
    if auth.bearer {
        schemes.insert(
            BEARER_SCHEME.into(),
            json!({"type": "http", "scheme": "Bearer"}),
        );
        reqs.push(json!({ BEARER_SCHEME: [] }));
    }
    if auth.oauth {
        schemes.insert(
            OAUTH_SCHEME.into(),
            json!({"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}}}),
        );
        reqs.push(json!({ OAUTH_SCHEME: [] }));
    }
    (Value::Object(schemes), Value::Array(reqs))
}

/// The hybrid card of the Python a2a-sdk 1.x (docs/a2a.md "Versions"): v1 fields, then the
/// v0.3 fields derived from the first interface. One deliberate difference: the Python SDK rewrites
/// each `securitySchemes` entry into the v0.3 form only, which v1 parsers (a2a-lf) reject; here each
/// entry carries both forms (`httpAuthSecurityScheme`/`oauth2SecurityScheme` *and* `type`…), so a
/// client reading either style finds the scheme.
pub(crate) fn hybrid_card(rpc_url: &str, token_url: &str, auth: CardAuth) -> Value {
    let mut card = json!({
        "name": "fake",
        "description": DESCRIPTION,
        "supportedInterfaces": [
            {"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": rpc_url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {"streaming": false, "pushNotifications": false},
    });
    if auth.bearer || auth.oauth {
        let (mut schemes, security) = v03_security(auth, token_url);
        let mut v1_reqs = Vec::new();
        if let Some(map) = schemes.as_object_mut() {
            if let Some(s) = map.get_mut(BEARER_SCHEME) {
                s["httpAuthSecurityScheme"] = json!({"scheme": "Bearer"});
                v1_reqs.push(json!({"schemes": { BEARER_SCHEME: {"list": []} }}));
            }
            if let Some(s) = map.get_mut(OAUTH_SCHEME) {
                s["oauth2SecurityScheme"] =
                    json!({"flows": {"clientCredentials": {"tokenUrl": token_url, "scopes": {}}}});
                v1_reqs.push(json!({"schemes": { OAUTH_SCHEME: {"list": []} }}));
            }
        }
        card["securitySchemes"] = schemes;
        card["securityRequirements"] = Value::Array(v1_reqs);
        card["security"] = security;
    }
    card["defaultInputModes"] = json!(INPUT_MODES);
    card["defaultOutputModes"] = json!(["text/plain"]);
    card["skills"] = skills();
    // The v0.3 view, as the Python SDK derives it from `supportedInterfaces[0]` and the rest.
    card["url"] = json!(rpc_url);
    card["preferredTransport"] = json!("JSONRPC");
    card["protocolVersion"] = json!("1.0");
    card["additionalInterfaces"] = json!([{"url": rpc_url, "transport": "JSONRPC"}]);
    card
}

/// A pure v0.3 card (a2a-sdk 0.3.x): top-level `url`, no `supportedInterfaces`.
pub(crate) fn v03_card(rpc_url: &str, token_url: &str, auth: CardAuth) -> Value {
    let mut card = json!({
        "name": "fake",
        "description": DESCRIPTION,
        "url": rpc_url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": INPUT_MODES,
        "defaultOutputModes": ["text/plain"],
        "skills": skills(),
    });
    if auth.bearer || auth.oauth {
        let (schemes, security) = v03_security(auth, token_url);
        card["securitySchemes"] = schemes;
        card["security"] = security;
    }
    card
}

/// Any part is taken (the `parts` verb describes files and data; the others read the text).
const INPUT_MODES: [&str; 3] = ["text/plain", "application/json", "application/octet-stream"];

const DESCRIPTION: &str = "a2a-mod's scripted fake worker: the message text is a script \
(slow N <words> | ask <question> | fail <why> | reject | auth | silent | parts | anything else echoes)";

/// A part of `artifact <kind>` in the dialect's spelling (docs/a2a.md: v1 `raw`/`url`/`data`
/// with `mediaType` and `filename`; v0.3 `kind` with a `file` object).
fn made_part(d: Dialect, p: &FakePart) -> Value {
    use base64::Engine as _;
    let w = rpc(d);
    match p {
        FakePart::Text(t) => write::text_part(w, t),
        FakePart::Data(v) => write::data_part(w, v),
        FakePart::Bytes {
            filename,
            media_type,
            bytes,
        } => {
            let b64 = base64::engine::general_purpose::STANDARD.encode(bytes);
            write::file_part(w, &b64, filename, media_type)
        }
        FakePart::Url {
            filename,
            media_type,
            url,
        } => write::url_part(w, url, filename, media_type),
    }
}

fn message(d: Dialect, rec: &TaskRecord, m: &HistoryEntry) -> Value {
    let about = write::Message {
        message_id: &m.message_id,
        task_id: &rec.id,
        context_id: &rec.context_id,
        agent: m.from_agent,
    };
    write::message(rpc(d), &about, vec![write::text_part(rpc(d), &m.text)])
}

/// One task in the request's dialect. `history_length`: `None` = all, `Some(0)` = none (the
/// `history` key is left out, as MessageToDict omits an empty list), `Some(n)` = the last n.
pub(crate) fn task(
    d: Dialect,
    rec: &TaskRecord,
    snap: &Snapshot,
    history_length: Option<usize>,
    start_unix_ms: i64,
) -> Value {
    let mut status = json!({ "state": write::state(rpc(d), snap.state) });
    if let Some(text) = &snap.status_text {
        let entry = HistoryEntry {
            message_id: format!("{}-status-{}", rec.id, snap.since_ms),
            from_agent: true,
            text: text.clone(),
        };
        status["message"] = message(d, rec, &entry);
    }
    let at_ms = start_unix_ms.saturating_add(i64::try_from(snap.since_ms).unwrap_or(i64::MAX));
    status["timestamp"] = json!(a2a_mod_core::clock::rfc3339(at_ms));
    let mut v = json!({ "id": rec.id, "contextId": rec.context_id, "status": status });
    if let Some(text) = &snap.artifact {
        v["artifacts"] = json!([{
            "artifactId": format!("{}-result", rec.id),
            "name": "result",
            "parts": [write::text_part(rpc(d), text)],
        }]);
    }
    if !snap.made.is_empty() {
        v["artifacts"] = snap
            .made
            .iter()
            .enumerate()
            .map(|(i, a)| {
                json!({
                    "artifactId": format!("{}-a{i}", rec.id),
                    "name": a.name,
                    "parts": a.parts.iter().map(|p| made_part(d, p)).collect::<Vec<_>>(),
                })
            })
            .collect();
    }
    let keep = history_length.unwrap_or(usize::MAX).min(snap.history.len());
    if keep > 0 {
        let from = snap.history.len() - keep;
        v["history"] = snap.history[from..]
            .iter()
            .map(|m| message(d, rec, m))
            .collect();
    }
    write::task_kind(rpc(d), v)
}

/// The `SendMessage` result: v1 wraps the task (`{"task": …}`); v0.3 returns it bare.
pub(crate) fn send_result(d: Dialect, task: Value) -> Value {
    write::send_result(rpc(d), task)
}

/// A JSON-RPC error response. v1 A2A errors carry `google.rpc.ErrorInfo` details like the Python
/// SDK's; v0.3 and the standard JSON-RPC errors carry no `data`.
pub(crate) fn rpc_error(id: &Value, d: Option<Dialect>, code: i64, message: &str) -> Value {
    let e = a2a_mod_proto::RpcError::new(code, message);
    match d {
        Some(Dialect::V1) => e.rpc_v1(id),
        _ => e.rpc(id),
    }
}

/// A stream's status event for `task` (a [`task`] value): v1 `{"statusUpdate": …}`, v0.3
/// `kind: "status-update"` with `final` set on the last one.
pub(crate) fn status_update(d: Dialect, task: &Value, last: bool) -> Value {
    let mut u = json!({
        "taskId": task["id"],
        "contextId": task["contextId"],
        "status": task["status"],
    });
    if d == Dialect::V03 {
        u["final"] = json!(last);
    }
    write::event(rpc(d), write::Event::Status, u)
}

/// The artifacts of `task` as artifact events: a text artifact in `chunks` appended pieces (so a
/// client's chunk assembly is exercised on every streamed result), any other whole, in one event.
pub(crate) fn artifact_updates(d: Dialect, task: &Value, chunks: usize) -> Vec<Value> {
    let Some(arts) = task["artifacts"].as_array() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for art in arts {
        let parts = art["parts"].as_array().map_or(0, Vec::len);
        let pieces: Vec<(Value, bool)> = match art["parts"][0]["text"].as_str() {
            Some(text) if parts == 1 => {
                // The artifact less its parts, once: a copy of the whole text per chunk would
                // make a 4 MiB token stream cost the square of its length here.
                let mut bare = art.clone();
                if let Some(o) = bare.as_object_mut() {
                    o.remove("parts");
                }
                split(text, chunks.max(1))
                    .into_iter()
                    .enumerate()
                    .map(|(i, piece)| {
                        let mut a = bare.clone();
                        a["parts"] = json!([write::text_part(rpc(d), piece)]);
                        (a, i > 0)
                    })
                    .collect()
            }
            _ => vec![(art.clone(), false)],
        };
        let n = pieces.len();
        for (i, (a, append)) in pieces.into_iter().enumerate() {
            let u = json!({
                "taskId": task["id"],
                "contextId": task["contextId"],
                "artifact": a,
                "append": append,
                "lastChunk": i + 1 == n,
            });
            out.push(write::event(rpc(d), write::Event::Artifact, u));
        }
    }
    out
}

/// `text` in `n` pieces of about equal length, cut on char boundaries.
fn split(text: &str, n: usize) -> Vec<&str> {
    // Piece k ends at char count·k/n; one walk over the text finds every cut.
    let count = text.chars().count();
    let mut out = Vec::with_capacity(n);
    let (mut from, mut k) = (0, 1);
    for (ci, (bi, _)) in text.char_indices().enumerate() {
        while k < n && ci == count * k / n {
            out.push(&text[from..bi]);
            from = bi;
            k += 1;
        }
    }
    while k < n {
        out.push(&text[from..]);
        from = text.len();
        k += 1;
    }
    out.push(&text[from..]);
    out
}
