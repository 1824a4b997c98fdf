//! Google credentials (`worker add --google`): one loopback stand-in plays Google's token
//! endpoint, the metadata server, the IAM Credentials API and the worker. The token endpoint
//! checks each service-account assertion's RS256 signature against the key's public half and
//! its claims, then mints short-lived ID tokens for the audience asked for; the worker takes
//! only a token minted for its own origin and not yet expired. A 12 s background task outlives
//! several tokens without presenting an expired one; a revoked token is replaced after its 401;
//! an access token goes to a `*.googleapis.com` host (reached through the stand-in as an HTTP
//! proxy); wrong keys and missing credentials are one line each; `doctor` names the credentials
//! and how long the token has left; no key, secret or token reaches a file, a log or a listing.

use crate::util::{SECOND, Served, TempHome, ended_row, fast_timing};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const KEY_PEM: &str = include_str!("../fixtures/google/service-account.pem");
const KEY_PUB: &[u8] = include_bytes!("../fixtures/google/service-account.pub.der");
const OTHER_PEM: &str = include_str!("../fixtures/google/other.pem");
const EMAIL: &str = "a2a-test@proj.iam.gserviceaccount.com";
const KEY_ID: &str = "0123456789abcdef";
const CLIENT_SECRET: &str = "client-secret-never-in-a-file";
const REFRESH_TOKEN: &str = "1//refresh-token-never-in-a-file";
const IMPERSONATED: &str = "agent-caller@proj.iam.gserviceaccount.com";
/// A Vertex AI Agent Engine endpoint: a `*.googleapis.com` host, so an access token.
const VERTEX: &str = "http://us-central1-aiplatform.googleapis.com/v1/projects/proj/locations/us-central1/reasoningEngines/42/a2a";
/// Every variable through which the machine's own Google set-up or proxy could reach a run.
const VARS: [&str; 9] = [
    "GOOGLE_APPLICATION_CREDENTIALS",
    "CLOUDSDK_CONFIG",
    "GCE_METADATA_HOST",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn jwt_part(v: &Value) -> String {
    B64.encode(v.to_string())
}

fn jwt_claims(token: &str) -> Option<Value> {
    let p = token.split('.').nth(1)?;
    serde_json::from_slice(&B64.decode(p).ok()?).ok()
}

/// What the stand-in does.
#[derive(Clone)]
struct Plan {
    /// Seconds an ID or access token lives.
    life: u64,
    /// Milliseconds after the send at which the task completes.
    task_ms: u64,
    /// The GetTask (counted from 1) whose token is revoked as it arrives, answered 401.
    revoke_at_get: Option<u32>,
}

#[derive(Default)]
struct Seen {
    /// The claims of each verified service-account assertion.
    assertions: Vec<Value>,
    /// Each token minted: what it is for (an audience, or "access").
    minted: HashMap<String, (String, u64)>,
    revoked: Vec<String>,
    /// Why a request to the worker was turned away, per request (the card's first, unauthenticated
    /// ask is the one expected).
    refused: Vec<String>,
    /// Requests to the worker that carried a token past its `exp`.
    expired: u32,
    /// Requests to the worker that were let in.
    served: u32,
    metadata: u32,
    gets: u32,
    sent_at: Option<Instant>,
}

type Shared = (Plan, Arc<Mutex<Seen>>, String);

fn reply(status: u16, v: Value) -> Response {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

fn form(body: &[u8]) -> HashMap<String, String> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

/// Checks a service-account assertion as Google's token endpoint does: RS256 over the key's
/// public half, issued by the key's account, for this token URL, fresh, at most an hour long.
fn check_assertion(jwt: &str, token_url: &str) -> Result<Value, String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [h, c, s] = parts[..] else {
        return Err("not a JWT".into());
    };
    let header: Value = serde_json::from_slice(&B64.decode(h).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    if header["alg"] != "RS256" || header["kid"] != KEY_ID {
        return Err(format!("header {header}"));
    }
    let sig = B64.decode(s).map_err(|e| e.to_string())?;
    ring::signature::UnparsedPublicKey::new(&ring::signature::RSA_PKCS1_2048_8192_SHA256, KEY_PUB)
        .verify(format!("{h}.{c}").as_bytes(), &sig)
        .map_err(|_| "Invalid JWT Signature.".to_string())?;
    let claims = jwt_claims(jwt).ok_or("claims not JSON")?;
    let iat = claims["iat"].as_u64().ok_or("no iat")?;
    let exp = claims["exp"].as_u64().ok_or("no exp")?;
    if claims["iss"] != EMAIL
        || claims["aud"] != token_url
        || iat.abs_diff(now()) > 60
        || exp <= iat
        || exp - iat > 3600
    {
        return Err(format!("claims {claims}"));
    }
    if claims.get("target_audience").is_none() && claims.get("scope").is_none() {
        return Err("neither target_audience nor scope".into());
    }
    Ok(claims)
}

impl Seen {
    /// A fresh token for `aud` ("access" for an access token): an ID token is a JWT with `aud`
    /// and `exp`, as Google's are (its signature is the stand-in's own word).
    fn mint(&mut self, aud: &str, life: u64) -> String {
        let n = self.minted.len();
        let exp = now() + life;
        let token = if aud == "access" {
            format!("ya29.access-{n}")
        } else {
            let header = jwt_part(&json!({"alg": "RS256", "typ": "JWT"}));
            let claims = jwt_part(&json!({"aud": aud, "exp": exp, "iat": now(),
                "iss": "https://accounts.google.com", "n": n}));
            format!("{header}.{claims}.minted-{n}")
        };
        self.minted.insert(token.clone(), (aud.to_string(), exp));
        token
    }
}

async fn stand_in(
    State((plan, seen, base)): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut s = seen.lock().unwrap();
    let path = uri.path().to_string();
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let token_url = format!("{base}/token");
    // Google's token endpoint: a service-account assertion or a user's refresh token.
    if path == "/token" && method == Method::POST {
        let f = form(&body);
        let want = match f.get("grant_type").map(String::as_str) {
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
                match check_assertion(f.get("assertion").map_or("", |a| a), &token_url) {
                    Ok(claims) => {
                        let want = claims["target_audience"]
                            .as_str()
                            .unwrap_or("access")
                            .to_string();
                        s.assertions.push(claims);
                        want
                    }
                    Err(why) => {
                        return reply(
                            400,
                            json!({"error": "invalid_grant", "error_description": why}),
                        );
                    }
                }
            }
            Some("refresh_token")
                if f.get("client_secret").map(String::as_str) == Some(CLIENT_SECRET)
                    && f.get("refresh_token").map(String::as_str) == Some(REFRESH_TOKEN) =>
            {
                "access".to_string()
            }
            _ => {
                return reply(
                    400,
                    json!({"error": "invalid_grant", "error_description": "Bad Request"}),
                );
            }
        };
        let token = s.mint(&want, plan.life);
        return if want == "access" {
            reply(
                200,
                json!({"access_token": token, "expires_in": plan.life, "token_type": "Bearer"}),
            )
        } else {
            reply(200, json!({"id_token": token}))
        };
    }
    // The metadata server of a Google Cloud machine.
    if let Some(what) = path.strip_prefix("/computeMetadata/v1/instance/service-accounts/default/")
    {
        if headers.get("metadata-flavor").and_then(|v| v.to_str().ok()) != Some("Google") {
            return reply(403, json!({"error": "Missing Metadata-Flavor header"}));
        }
        s.metadata += 1;
        let q: HashMap<String, String> =
            url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                .into_owned()
                .collect();
        return match what {
            "identity" if q.get("format").map(String::as_str) == Some("full") => {
                let aud = q.get("audience").cloned().unwrap_or_default();
                Response::new(Body::from(s.mint(&aud, plan.life)))
            }
            "token" => {
                let t = s.mint("access", plan.life);
                reply(
                    200,
                    json!({"access_token": t, "expires_in": plan.life, "token_type": "Bearer"}),
                )
            }
            _ => reply(404, json!({})),
        };
    }
    // The IAM Credentials API, for an impersonated service account: asked with an access token.
    if let Some(rest) = path.strip_prefix("/v1/projects/-/serviceAccounts/") {
        let ok = bearer
            .as_ref()
            .and_then(|b| s.minted.get(b))
            .is_some_and(|(aud, exp)| aud == "access" && *exp > now());
        if !ok {
            return reply(
                401,
                json!({"error": {"code": 401, "message": "Request had invalid authentication credentials."}}),
            );
        }
        let req: Value = serde_json::from_slice(&body).unwrap_or_default();
        return match rest.split_once(':') {
            Some((sa, "generateIdToken")) if sa == IMPERSONATED => {
                let aud = req["audience"].as_str().unwrap_or_default().to_string();
                reply(200, json!({"token": s.mint(&aud, plan.life)}))
            }
            _ => reply(404, json!({"error": {"code": 404, "message": "Not found"}})),
        };
    }
    // The worker: its own origin is the audience an ID token must name; a googleapis.com host
    // (reached through this stand-in as a proxy) takes an access token.
    let host = headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let vertex = host.ends_with(".googleapis.com");
    let (audience, root) = if vertex {
        ("access".to_string(), VERTEX.to_string())
    } else {
        (base.clone(), base.clone())
    };
    let verdict = match bearer.as_ref().map(|b| (b, s.minted.get(b).cloned())) {
        None => Err("no token".to_string()),
        Some((_, None)) => Err("not a token we minted".into()),
        Some((b, Some((aud, exp)))) => {
            if s.revoked.contains(b) {
                Err("revoked".into())
            } else if exp <= now() {
                s.expired += 1;
                Err("expired".into())
            } else if aud != audience {
                Err(format!("audience {aud}"))
            } else {
                Ok(b.clone())
            }
        }
    };
    let rpc: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let verdict = verdict.and_then(|b| {
        if rpc["method"] == "GetTask" {
            s.gets += 1;
            if plan.revoke_at_get == Some(s.gets) {
                s.revoked.push(b);
                return Err("revoked".into());
            }
        }
        Ok(())
    });
    if let Err(why) = verdict {
        s.refused.push(format!("{path}: {why}"));
        return Response::builder()
            .status(401)
            .header("www-authenticate", "Bearer")
            .body(Body::from("unauthorized"))
            .unwrap();
    }
    s.served += 1;
    if path.ends_with("/.well-known/agent-card.json") {
        return reply(
            200,
            json!({"name": "Cloud Run agent", "description": "behind Google auth", "version": "1",
                "supportedInterfaces": [{"url": format!("{root}/rpc"),
                    "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
                "capabilities": {}, "skills": []}),
        );
    }
    if rpc["method"] == "GetTask" && rpc["params"]["id"] != "t-g" {
        return reply(
            200,
            json!({"jsonrpc": "2.0", "id": rpc["id"], "error": {"code": -32001, "message": "task not found"}}),
        );
    }
    let done = match rpc["method"].as_str() {
        Some("SendMessage") => {
            s.sent_at = Some(Instant::now());
            false
        }
        _ => s
            .sent_at
            .is_some_and(|t| t.elapsed() >= Duration::from_millis(plan.task_ms)),
    };
    let mut task = json!({"id": "t-g", "contextId": "c1", "status": {"state":
        if done { "TASK_STATE_COMPLETED" } else { "TASK_STATE_WORKING" }}});
    if done {
        task["artifacts"] = json!([{"artifactId": "a", "parts": [{"text": "google work done"}]}]);
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

/// The stand-in on 127.0.0.1:0 ([`Served`]); stops on drop.
struct Google {
    url: String,
    seen: Arc<Mutex<Seen>>,
    _served: Served,
}

impl Google {
    fn start(plan: Plan) -> Google {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let state = seen.clone();
        let served = Served::start(|url| {
            axum::Router::new()
                .fallback(stand_in)
                .with_state((plan, state, url.to_string()))
        });
        Google {
            url: served.url.clone(),
            seen,
            _served: served,
        }
    }

    fn host(&self) -> &str {
        self.url.trim_start_matches("http://")
    }

    /// Every token minted so far, every secret the files in this test hold.
    fn secrets(&self) -> Vec<String> {
        let mut all: Vec<String> = self.seen.lock().unwrap().minted.keys().cloned().collect();
        all.extend([CLIENT_SECRET.into(), REFRESH_TOKEN.into()]);
        // A line from the middle of each private key stands for the key.
        all.extend([KEY_PEM, OTHER_PEM].map(|k| k.lines().nth(5).unwrap().to_string()));
        all
    }
}

/// A service account key file (as the console issues one) whose `token_uri` is the stand-in.
fn key_file(h: &TempHome, g: &Google, pem: &str) -> String {
    let path = h.root().join("key.json");
    let key = json!({"type": "service_account", "project_id": "proj", "private_key_id": KEY_ID,
        "private_key": pem, "client_email": EMAIL, "client_id": "1",
        "token_uri": format!("{}/token", g.url)});
    std::fs::write(&path, key.to_string()).unwrap();
    path.display().to_string()
}

/// gcloud's ADC file in a config folder of its own (`CLOUDSDK_CONFIG`), holding `v`.
fn gcloud_adc(h: &TempHome, v: &Value) -> String {
    let dir = h.root().join("gcloud");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("application_default_credentials.json"),
        v.to_string(),
    )
    .unwrap();
    dir.display().to_string()
}

fn user_creds(g: &Google) -> Value {
    json!({"type": "authorized_user", "client_id": "cid.apps.googleusercontent.com",
        "client_secret": CLIENT_SECRET, "refresh_token": REFRESH_TOKEN,
        "token_uri": format!("{}/token", g.url)})
}

/// `a2a-mod` in `h` with only the Google variables given (none of the machine's), logging at
/// trace unless `quiet`; a metadata server nobody answers on unless one is given, so a run never
/// waits on the real one.
fn run(h: &TempHome, envs: &[(&str, &str)], quiet: bool, args: &[&str]) -> std::process::Output {
    let mut c = h.command();
    for v in VARS {
        c.env_remove(v);
    }
    if quiet {
        c.env_remove("A2A_MOD_LOG");
    } else {
        c.env("A2A_MOD_LOG", "trace");
    }
    c.env("GCE_METADATA_HOST", "127.0.0.1:1")
        .envs(envs.iter().copied())
        .args(args)
        .output()
}

fn ok(h: &TempHome, envs: &[(&str, &str)], args: &[&str]) -> String {
    let out = run(h, envs, false, args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    err + &String::from_utf8_lossy(&out.stdout)
}

/// The one line a failing command printed.
fn one_line(h: &TempHome, envs: &[(&str, &str)], args: &[&str]) -> String {
    let out = run(h, envs, true, args);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

/// None of `secrets` in any file under `dir` (config, state, logs, results) or in `also`.
fn no_secret(dir: &Path, secrets: &[String], also: &str) {
    fn walk(dir: &Path, secrets: &[String], found: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, secrets, found);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let text = String::from_utf8_lossy(&bytes);
                for s in secrets {
                    if text.contains(s.as_str()) {
                        found.push(format!("{} holds {s}", p.display()));
                    }
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(dir, secrets, &mut found);
    for s in secrets {
        if also.contains(s.as_str()) {
            found.push(format!("output holds {s}"));
        }
    }
    assert!(found.is_empty(), "{found:?}");
}

/// Sends a task to `alias` and waits for its end in the store; returns what the send printed.
fn task_ends(h: &TempHome, envs: &[(&str, &str)], alias: &str) -> String {
    let out = run(
        h,
        envs,
        false,
        &["send", alias, "do it", "--session", "g", "--json"],
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    assert!(err.contains("TRACE"), "no trace log: {err}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("send --json");
    let id = v["taskId"].as_str().expect("a task id").to_string();
    let row = ended_row(&h.a2a_home(), "g", &id, 40 * SECOND);
    assert_eq!(row.result.as_deref(), Some("google work done"), "{row:?}");
    err
}

#[test]
fn a_service_account_key_mints_id_tokens_for_the_origin_and_a_12s_task_outlives_them() {
    let h = TempHome::new();
    let g = Google::start(Plan {
        life: 4,
        task_ms: 12_000,
        revoke_at_get: None,
    });
    let key = key_file(&h, &g, KEY_PEM);
    let envs = [("GOOGLE_APPLICATION_CREDENTIALS", key.as_str())];
    // The card is behind the same auth: asked without a token first, then with one.
    let mut out = ok(&h, &envs, &["worker", "add", "run", &g.url, "--google"]);
    fast_timing(&h, "[0.1]", 0.3, 6);
    out += &task_ends(&h, &envs, "run");
    let s = g.seen.lock().unwrap();
    // Each token lives 4 s and is renewed at half its life: the send, then the poller's ~12 s.
    assert!(s.assertions.len() >= 4, "{} assertions", s.assertions.len());
    for c in &s.assertions {
        assert_eq!(c["target_audience"], g.url.as_str(), "{c}");
    }
    assert_eq!(s.expired, 0, "an expired token was presented");
    assert!(
        s.refused
            .iter()
            .all(|r| r == "/.well-known/agent-card.json: no token"),
        "{:?}",
        s.refused
    );
    assert!(s.served >= 10, "{} requests served", s.served);
    drop(s);
    out += &ok(&h, &envs, &["worker", "list", "--json"]);
    assert!(
        out.contains(&format!("google id token (audience {})", g.url)),
        "{out}"
    );
    let doctor = run(&h, &envs, true, &["doctor"]);
    let doctor = String::from_utf8_lossy(&doctor.stdout).into_owned();
    let line = doctor
        .lines()
        .find(|l| l.contains("worker \"run\""))
        .unwrap_or_else(|| panic!("no worker line in {doctor}"));
    assert!(
        line.starts_with("✓")
            && line.contains("auth working")
            && line.contains(&format!("the Google service account {EMAIL} (key {key})"))
            && line.contains("the token expires in ")
            && line.contains("renewed before it does"),
        "{line}"
    );
    no_secret(&h.a2a_home(), &g.secrets(), &(out + &doctor));
}

#[test]
fn a_revoked_token_is_replaced_after_its_401() {
    let h = TempHome::new();
    let g = Google::start(Plan {
        life: 3600,
        task_ms: 3_000,
        revoke_at_get: Some(3),
    });
    let key = key_file(&h, &g, KEY_PEM);
    let envs = [("GOOGLE_APPLICATION_CREDENTIALS", key.as_str())];
    ok(&h, &envs, &["worker", "add", "run", &g.url, "--google"]);
    fast_timing(&h, "[0.1]", 0.3, 6);
    task_ends(&h, &envs, "run");
    let s = g.seen.lock().unwrap();
    assert_eq!(s.revoked.len(), 1);
    assert!(
        s.refused.contains(&"/rpc: revoked".to_string()),
        "{:?}",
        s.refused
    );
    // The send's token, the poller's, and the poller's after the revocation.
    assert!(s.assertions.len() >= 3, "{} assertions", s.assertions.len());
}

#[test]
fn a_googleapis_host_gets_an_access_token_from_user_credentials() {
    let h = TempHome::new();
    let g = Google::start(Plan {
        life: 3600,
        task_ms: 1_000,
        revoke_at_get: None,
    });
    let adc = gcloud_adc(&h, &user_creds(&g));
    // The googleapis.com host is reached through the stand-in as an HTTP proxy; the token
    // endpoint, on loopback, directly.
    let envs = [
        ("CLOUDSDK_CONFIG", adc.as_str()),
        ("HTTP_PROXY", g.url.as_str()),
        ("NO_PROXY", "127.0.0.1"),
    ];
    let mut out = ok(&h, &envs, &["worker", "add", "vertex", VERTEX, "--google"]);
    fast_timing(&h, "[0.1]", 0.3, 6);
    out += &task_ends(&h, &envs, "vertex");
    assert!(g.seen.lock().unwrap().served >= 3);
    out += &ok(&h, &envs, &["worker", "list"]);
    assert!(
        out.contains("google access token (cloud-platform)"),
        "{out}"
    );
    // The same user credentials cannot mint an ID token: one line saying what can.
    let err = one_line(&h, &envs, &["worker", "add", "run", &g.url, "--google"]);
    assert!(
        err.contains("the Google user credentials in")
            && err.contains("cannot mint an ID token")
            && err.contains("--impersonate-service-account"),
        "{err}"
    );
    no_secret(&h.a2a_home(), &g.secrets(), &(out + &err));
}

#[test]
fn an_impersonated_service_account_and_the_metadata_server_mint_id_tokens() {
    let h = TempHome::new();
    let g = Google::start(Plan {
        life: 3600,
        task_ms: 1_000,
        revoke_at_get: None,
    });
    let adc = gcloud_adc(
        &h,
        &json!({"type": "impersonated_service_account",
            "service_account_impersonation_url": format!(
                "{}/v1/projects/-/serviceAccounts/{IMPERSONATED}:generateAccessToken", g.url),
            "source_credentials": user_creds(&g)}),
    );
    let envs = [("CLOUDSDK_CONFIG", adc.as_str())];
    let mut out = ok(&h, &envs, &["worker", "add", "run", &g.url, "--google"]);
    fast_timing(&h, "[0.1]", 0.3, 6);
    out += &task_ends(&h, &envs, "run");
    // No ADC file: the metadata server, with the audience the user gave.
    let meta = [("GCE_METADATA_HOST", g.host())];
    let aud = "https://agent.example/custom-audience";
    let err = one_line(
        &h,
        &meta,
        &[
            "worker",
            "add",
            "meta",
            &g.url,
            "--google",
            "--google-audience",
            aud,
        ],
    );
    // The worker takes tokens for its own origin only: the custom audience is refused, which
    // shows the audience given is the one asked for.
    assert!(
        err.contains("refused our credentials (HTTP 401)") && err.contains("metadata server"),
        "{err}"
    );
    assert!(
        g.seen
            .lock()
            .unwrap()
            .minted
            .values()
            .any(|(a, _)| a == aud)
    );
    out += &ok(&h, &meta, &["worker", "add", "meta", &g.url, "--google"]);
    assert!(g.seen.lock().unwrap().metadata >= 2);
    no_secret(&h.a2a_home(), &g.secrets(), &(out + &err));
}

#[test]
fn wrong_keys_and_missing_credentials_are_one_line_each() {
    let h = TempHome::new();
    let g = Google::start(Plan {
        life: 3600,
        task_ms: 1_000,
        revoke_at_get: None,
    });
    let key = key_file(&h, &g, OTHER_PEM);
    let err = one_line(
        &h,
        &[("GOOGLE_APPLICATION_CREDENTIALS", key.as_str())],
        &["worker", "add", "run", &g.url, "--google"],
    );
    assert!(
        err.contains("answered HTTP 400 (invalid_grant: Invalid JWT Signature.)"),
        "{err}"
    );
    let err = one_line(
        &h,
        &[("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")],
        &["worker", "add", "run", &g.url, "--google"],
    );
    assert!(
        err.contains(
            "GOOGLE_APPLICATION_CREDENTIALS names \"/nonexistent/key.json\", which is not a file"
        ),
        "{err}"
    );
    // Nothing anywhere: the metadata server does not answer either.
    let err = one_line(&h, &[], &["worker", "add", "run", &g.url, "--google"]);
    assert!(
        err.contains("no Google credentials")
            && err.contains("gcloud auth application-default login"),
        "{err}"
    );
    let err = one_line(
        &h,
        &[],
        &[
            "worker",
            "add",
            "run",
            &g.url,
            "--google",
            "--google-audience",
            "two words",
        ],
    );
    assert!(err.contains("--google-audience"), "{err}");
    no_secret(&h.a2a_home(), &g.secrets(), &err);
}

#[test]
fn doctor_fails_a_token_in_the_environment_that_is_about_to_expire() {
    let h = TempHome::new();
    let g = Google::start(Plan {
        life: 120,
        task_ms: 1_000,
        revoke_at_get: None,
    });
    // A token the user got once (`gcloud auth print-identity-token`) and put in a variable.
    let token = g.seen.lock().unwrap().mint(&g.url, 120);
    let envs = [("RUN_TOKEN", token.as_str())];
    ok(
        &h,
        &envs,
        &["worker", "add", "run", &g.url, "--bearer-env", "RUN_TOKEN"],
    );
    let out = run(&h, &envs, true, &["doctor"]);
    let doctor = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1));
    let at = doctor
        .find("✕ worker \"run\": the token in RUN_TOKEN expires in 2 min")
        .unwrap_or_else(|| panic!("no failing worker line in {doctor}"));
    assert!(
        doctor[at..].contains("put a fresh token in RUN_TOKEN, or add the worker with --token-cmd"),
        "{doctor}"
    );
    assert!(
        g.seen.lock().unwrap().served >= 1,
        "the doctor did not ask the worker"
    );
    no_secret(&h.a2a_home(), &[token], &doctor);
}
