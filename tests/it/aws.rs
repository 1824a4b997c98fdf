//! AWS Signature Version 4 (`worker add --aws-sigv4`): a loopback worker in front of which every
//! request's signature is recomputed by a verifier of our own (checked first against the AWS
//! signing test suite's `post-vanilla` vector), the way AgentCore's front door does. The keys come
//! from the environment (with and without a session token) and from a profile in the shared
//! files; a wrong secret is one line naming the credentials, and no key reaches a file.

use crate::util::{SECOND, Served, TempHome, ended_row, fast_timing, wait_until};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use hmac::{KeyInit, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

const ACCESS_KEY: &str = "AKIDA2AMODTEST";
const SECRET: &str = "s3cr3t/A2A+mod/never-in-a-file";
const SESSION_TOKEN: &str = "session-token-never-in-a-file";
const REGION: &str = "us-west-2";
/// The right keys, from the environment.
const ENV_KEYS: [(&str, &str); 2] = [
    ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
    ("AWS_SECRET_ACCESS_KEY", SECRET),
];
const UNSIGNED: &str = "no Authorization header";
/// AgentCore's invocation path: an ARN, percent-encoded, which SigV4 encodes once more.
const RPC_PATH: &str =
    "/runtimes/arn%3Aaws%3Abedrock-agentcore%3Aus-west-2%3A1%3Aruntime%2Fagent/invocations/";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut m = hmac::Hmac::<Sha256>::new_from_slice(key).expect("any key length");
    m.update(data.as_bytes());
    m.finalize().into_bytes().to_vec()
}

/// SigV4 (AWS's "Create a signed request" steps) over what a server received: `path` and
/// `query` as sent on the wire, the `signed` headers' values, the body.
#[expect(
    clippy::too_many_arguments,
    reason = "SigV4's inputs, each named as AWS's steps name it"
)]
fn signature(
    secret: &str,
    method: &str,
    path: &str,
    query: &str,
    headers: &BTreeMap<String, String>,
    signed: &[&str],
    body: &[u8],
    amz_date: &str,
    region: &str,
    service: &str,
) -> String {
    // Every service but S3 encodes the path once more: each byte outside the unreserved set
    // (and '/') as %XX, the '%' of an already-encoded byte included.
    let uri: String = path
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let mut pairs: Vec<&str> = query.split('&').filter(|p| !p.is_empty()).collect();
    pairs.sort();
    let canonical_headers: String = signed
        .iter()
        .map(|h| {
            let v = headers.get(*h).map(String::as_str).unwrap_or("");
            format!(
                "{h}:{}\n",
                v.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    let canonical = format!(
        "{method}\n{uri}\n{}\n{canonical_headers}\n{}\n{}",
        pairs.join("&"),
        signed.join(";"),
        hex(&Sha256::digest(body))
    );
    let date = &amz_date[..8];
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
        hex(&Sha256::digest(canonical.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{secret}").as_bytes(), date);
    for part in [region, service, "aws4_request"] {
        key = hmac(&key, part);
    }
    hex(&hmac(&key, &to_sign))
}

/// The verifier itself, against the AWS signing test suite (as shipped in the aws-sigv4 crate,
/// `aws-signing-test-suite/v4/post-vanilla`).
#[test]
fn the_verifier_computes_the_aws_test_suite_signature() {
    let headers = BTreeMap::from([
        ("host".to_string(), "example.amazonaws.com".to_string()),
        ("x-amz-date".to_string(), "20150830T123600Z".to_string()),
    ]);
    assert_eq!(
        signature(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "POST",
            "/",
            "",
            &headers,
            &["host", "x-amz-date"],
            b"",
            "20150830T123600Z",
            "us-east-1",
            "service"
        ),
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"
    );
}

/// What the front door expects of every request.
#[derive(Clone)]
struct Expect {
    secret: &'static str,
    session_token: Option<&'static str>,
}

#[derive(Default)]
struct Seen {
    /// Per request: the path, and whether its signature held (or why not).
    verdicts: Vec<(String, Result<(), String>)>,
    gets: u32,
}

type Shared = (Expect, Arc<Mutex<Seen>>, String);

fn verify(
    e: &Expect,
    method: &Method,
    uri: &Uri,
    h: &BTreeMap<String, String>,
    body: &[u8],
) -> Result<(), String> {
    let auth = h.get("authorization").ok_or(UNSIGNED)?;
    let rest = auth
        .strip_prefix("AWS4-HMAC-SHA256 ")
        .ok_or("not AWS4-HMAC-SHA256")?;
    let field = |name: &str| {
        rest.split(", ")
            .find_map(|f| f.strip_prefix(name))
            .ok_or(format!("no {name}"))
    };
    let cred = field("Credential=")?;
    let signed: Vec<&str> = field("SignedHeaders=")?.split(';').collect();
    let got = field("Signature=")?;
    let parts: Vec<&str> = cred.split('/').collect();
    let [key, date, region, service, "aws4_request"] = parts[..] else {
        return Err(format!("bad credential scope {cred}"));
    };
    if key != ACCESS_KEY || region != REGION || service != "bedrock-agentcore" {
        return Err(format!("unexpected scope {cred}"));
    }
    let amz_date = h.get("x-amz-date").ok_or("no X-Amz-Date")?;
    if !amz_date.starts_with(date) || !signed.contains(&"host") || !signed.contains(&"x-amz-date") {
        return Err("date or host not signed".into());
    }
    match (e.session_token, h.get("x-amz-security-token")) {
        (Some(want), Some(t)) if t == want && signed.contains(&"x-amz-security-token") => {}
        (None, None) => {}
        _ => return Err("session token missing, unsigned or unexpected".into()),
    }
    let want = signature(
        e.secret,
        method.as_str(),
        uri.path(),
        uri.query().unwrap_or(""),
        h,
        &signed,
        body,
        amz_date,
        region,
        service,
    );
    if want == got {
        Ok(())
    } else {
        Err("signature does not match".into())
    }
}

async fn front_door(
    State((expect, seen, base)): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let h: BTreeMap<String, String> = headers
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let verdict = verify(&expect, &method, &uri, &h, &body);
    let ok = verdict.is_ok();
    let reply = |status: u16, v: Value| {
        Response::builder()
            .status(status)
            .header("content-type", "application/json")
            .body(Body::from(v.to_string()))
            .unwrap()
    };
    let mut s = seen.lock().unwrap();
    s.verdicts.push((uri.path().to_string(), verdict));
    if !ok {
        return reply(
            403,
            json!({"message": "The request signature we calculated does not match the signature you provided."}),
        );
    }
    if uri.path() == "/.well-known/agent-card.json" {
        return reply(
            200,
            json!({"name": "Signed", "description": "behind SigV4", "version": "1",
                "supportedInterfaces": [{"url": format!("{base}{RPC_PATH}?qualifier=DEFAULT"),
                    "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {}, "skills": []}),
        );
    }
    let rpc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if rpc["method"] == "GetTask" && rpc["params"]["id"] != "t-aws" {
        return reply(
            200,
            json!({"jsonrpc": "2.0", "id": rpc["id"], "error": {"code": -32001, "message": "task not found"}}),
        );
    }
    let state = match rpc["method"].as_str() {
        Some("GetTask") => {
            s.gets += 1;
            // Ends at the second poll, after the inline window: the poller signs too.
            if s.gets >= 2 {
                "TASK_STATE_COMPLETED"
            } else {
                "TASK_STATE_WORKING"
            }
        }
        _ => "TASK_STATE_WORKING",
    };
    let mut task = json!({"id": "t-aws", "contextId": "c1", "status": {"state": state}});
    if state == "TASK_STATE_COMPLETED" {
        task["artifacts"] = json!([{"artifactId": "a", "parts": [{"text": "signed work done"}]}]);
    }
    let result = match rpc["method"].as_str() {
        Some("SendMessage") => json!({ "task": task }),
        _ => task,
    };
    reply(
        200,
        json!({"jsonrpc": "2.0", "id": rpc["id"], "result": result}),
    )
}

/// The front door on 127.0.0.1:0 ([`Served`]); stops on drop.
struct Door {
    url: String,
    seen: Arc<Mutex<Seen>>,
    _served: Served,
}

impl Door {
    fn start(expect: Expect) -> Door {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = seen.clone();
        let served = Served::start(|url| {
            axum::Router::new()
                .fallback(front_door)
                .with_state((expect, state, url.to_string()))
        });
        Door {
            url: served.url.clone(),
            seen,
            _served: served,
        }
    }

    /// The signed requests seen, each one's signature checked to hold. The card is asked for
    /// without credentials first (most are public), and only then signed.
    fn all_verified(&self) -> usize {
        let s = self.seen.lock().unwrap();
        let mut signed = 0;
        for (path, v) in &s.verdicts {
            match v {
                Ok(()) => signed += 1,
                Err(why) if path == "/.well-known/agent-card.json" && why == UNSIGNED => {}
                Err(why) => panic!("request to {path} not verified: {why}"),
            }
        }
        signed
    }
}

const AWS_VARS: [&str; 8] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
];

/// `a2a-mod` in `h` with only the AWS variables given (none of the machine's), logging at
/// trace (the background poller to its log file in the state folder).
fn run(h: &TempHome, envs: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut c = h.command();
    for v in AWS_VARS {
        c.env_remove(v);
    }
    c.env("A2A_MOD_LOG", "trace")
        .envs(envs.iter().copied())
        .args(args)
        .output()
}

/// [`run`] without the log, for a command's one-line error.
fn run_quiet(h: &TempHome, envs: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut c = h.command();
    for v in AWS_VARS {
        c.env_remove(v);
    }
    c.env_remove("A2A_MOD_LOG")
        .envs(envs.iter().copied())
        .args(args)
        .output()
}

/// No key, secret or token in any file a2a-mod wrote (config, state, logs, results).
fn no_secret_in_files(h: &TempHome) {
    fn walk(dir: &std::path::Path, found: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, found);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let text = String::from_utf8_lossy(&bytes);
                for s in [SECRET, SESSION_TOKEN, ACCESS_KEY] {
                    if text.contains(s) {
                        found.push(format!("{} holds {s}", p.display()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(&h.a2a_home(), &mut found);
    assert!(found.is_empty(), "{found:?}");
}

/// A task sent to the door ends in the background; every request on the way was signed right.
fn a_task_goes_through(h: &TempHome, door: &Door, envs: &[(&str, &str)], add: &[&str]) {
    let mut args = vec![
        "worker",
        "add",
        "agentcore",
        door.url.as_str(),
        "--aws-sigv4",
    ];
    args.extend_from_slice(add);
    let out = run(h, envs, &args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fast_timing(h, "[0.1]", 0.3, 6);
    let out = run(
        h,
        envs,
        &["send", "agentcore", "do it", "--session", "aws", "--json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The trace log of the command itself (stderr) holds no key either.
    let traced = String::from_utf8_lossy(&out.stderr);
    assert!(traced.contains("TRACE"), "no trace log: {traced}");
    for s in [SECRET, SESSION_TOKEN, ACCESS_KEY] {
        assert!(!traced.contains(s), "the trace log holds {s}");
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("send --json");
    let id = v["taskId"].as_str().expect("a task id").to_string();
    let row = ended_row(&h.a2a_home(), "aws", &id, 30 * SECOND);
    assert_eq!(row.result.as_deref(), Some("signed work done"));
    // Card, send, the inline poll and the poller's: all signed and all verified.
    assert!(door.all_verified() >= 4);
    let out = run(h, envs, &["worker", "list", "--json"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("aws sigv4 (bedrock-agentcore"), "{listed}");
    for s in [SECRET, SESSION_TOKEN, ACCESS_KEY] {
        assert!(!listed.contains(s));
    }
    no_secret_in_files(h);
}

#[test]
fn environment_keys_sign_every_request_card_send_and_polls() {
    let h = TempHome::new();
    let door = Door::start(Expect {
        secret: SECRET,
        session_token: None,
    });
    a_task_goes_through(&h, &door, &ENV_KEYS, &["--aws-region", REGION]);
}

#[test]
fn a_session_token_is_signed_and_the_region_comes_from_aws_region() {
    let h = TempHome::new();
    let door = Door::start(Expect {
        secret: SECRET,
        session_token: Some(SESSION_TOKEN),
    });
    let envs = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
        ("AWS_SESSION_TOKEN", SESSION_TOKEN),
        ("AWS_REGION", REGION),
    ];
    a_task_goes_through(&h, &door, &envs, &[]);
}

#[test]
fn a_profile_in_the_shared_files_gives_keys_and_region() {
    let h = TempHome::new();
    let aws = h.home().join(".aws");
    std::fs::create_dir_all(&aws).unwrap();
    std::fs::write(
        aws.join("credentials"),
        format!(
            "[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n[work]\n\
             aws_access_key_id = {ACCESS_KEY}\naws_secret_access_key = {SECRET}\n\
             aws_session_token = {SESSION_TOKEN}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        aws.join("config"),
        format!("[profile work]\nregion = {REGION}\n"),
    )
    .unwrap();
    let door = Door::start(Expect {
        secret: SECRET,
        session_token: Some(SESSION_TOKEN),
    });
    a_task_goes_through(&h, &door, &[("AWS_PROFILE", "work")], &[]);
}

#[test]
fn a_wrong_secret_is_one_line_naming_the_credentials() {
    let h = TempHome::new();
    let door = Door::start(Expect {
        secret: SECRET,
        session_token: None,
    });
    let wrong = "not-the-secret-either";
    let envs = [
        ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
        ("AWS_SECRET_ACCESS_KEY", wrong),
    ];
    let url = door.url.clone();
    let out = run_quiet(
        &h,
        &envs,
        &[
            "worker",
            "add",
            "agentcore",
            &url,
            "--aws-sigv4",
            "--aws-region",
            REGION,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("refused our credentials (HTTP 403)")
            && err.contains("AWS SigV4 for bedrock-agentcore in us-west-2")
            && err.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{err}"
    );
    assert!(!err.contains(wrong) && !err.contains(ACCESS_KEY), "{err}");
    wait_until("the door to see the signed retry", 5 * SECOND, || {
        door.seen.lock().unwrap().verdicts.len() >= 2
    });
    // No keys at all: one line saying where keys are read from.
    let out = run_quiet(
        &h,
        &[],
        &[
            "worker",
            "add",
            "agentcore",
            &url,
            "--aws-sigv4",
            "--aws-region",
            REGION,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("no AWS credentials: set AWS_ACCESS_KEY_ID"),
        "{err}"
    );
}

/// `doctor` signs its probe too and names the keys in use; without keys it names the fix.
#[test]
fn doctor_names_the_keys_it_signed_with_and_the_fix_without_them() {
    let h = TempHome::new();
    let door = Door::start(Expect {
        secret: SECRET,
        session_token: None,
    });
    let envs = ENV_KEYS;
    let url = door.url.clone();
    let add = [
        "worker",
        "add",
        "agentcore",
        &url,
        "--aws-sigv4",
        "--aws-region",
        REGION,
    ];
    assert!(run_quiet(&h, &envs, &add).status.success());
    let out = run_quiet(&h, &envs, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("worker \"agentcore\""))
        .unwrap_or_else(|| panic!("no worker line in {text}"));
    assert!(
        line.contains("auth working")
            && line.contains(
                "AWS SigV4 for bedrock-agentcore in us-west-2 with the keys in AWS_ACCESS_KEY_ID"
            ),
        "{line}"
    );
    assert!(
        !text.contains(SECRET) && !text.contains(ACCESS_KEY),
        "{text}"
    );
    let out = run_quiet(&h, &[], &["doctor"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.contains("worker \"agentcore\""))
        .unwrap_or_else(|| panic!("no worker line in {text}"));
    assert!(
        line.contains("no AWS credentials: set AWS_ACCESS_KEY_ID")
            && line.contains("fix the credentials of worker"),
        "{line}"
    );
    assert!(door.all_verified() >= 2);
}
