//! Signed agent cards (A2A v1 §8.4): cards signed by a2a-sdk's own signer (and served the way
//! its server serves them, v0.3 fields merged in after signing) and by a plain JWS over the
//! RFC 8785 form (PyJWT + rfc8785), run by `tests/peers/sign_card.py` in the a2a-sdk 1.x venv.
//! `worker show` gives each verdict: verified with a key from the card's own `jku` or pinned
//! with `--card-key` (PEM or JWK; ES256, RS256, EdDSA), invalid for a card changed after signing
//! or checked with the wrong key, unverifiable without a key or with a `jku` elsewhere, none for
//! an unsigned card; `--require-signed-card` refuses all but the first with one line. The
//! canonical bytes themselves are checked against the TCK's RFC 8785 vectors (the a2a crate's
//! unit tests, `tests/fixtures/jcs`).

use crate::util::{Served, TempHome, skip};
use crate::workers::{peers_dir, repo};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

fn fixture(name: &str) -> String {
    repo()
        .join("tests/fixtures/signed-cards")
        .join(name)
        .display()
        .to_string()
}

/// The card and the JWK set a stand-in worker serves; set after it starts (the card names its
/// URL, and the URL is known only then).
#[derive(Default)]
struct Serves {
    card: Value,
    jwks: Value,
}

async fn serve(State((s, path)): State<(Arc<Mutex<Serves>>, String)>) -> Response {
    let s = s.lock().unwrap();
    let v = match path.as_str() {
        "card" => s.card.clone(),
        _ => s.jwks.clone(),
    };
    axum::Json(v).into_response()
}

struct Agent {
    url: String,
    serves: Arc<Mutex<Serves>>,
    _served: Served,
}

impl Agent {
    fn start() -> Agent {
        let serves = Arc::new(Mutex::new(Serves::default()));
        let st = serves.clone();
        let served = Served::start(|_| {
            axum::Router::new()
                .route(
                    "/.well-known/agent-card.json",
                    axum::routing::get(serve).with_state((st.clone(), "card".to_string())),
                )
                .route(
                    "/jwks.json",
                    axum::routing::get(serve).with_state((st, "jwks".to_string())),
                )
        });
        Agent {
            url: served.url.clone(),
            serves,
            _served: served,
        }
    }

    /// The card this agent would publish, v1 with a v0.3 interface beside (so a2a-sdk's server
    /// merges v0.3 fields into what it serves), an extension and a security scheme.
    fn card(&self) -> Value {
        json!({
            "name": "Signed agent", "description": "signs its card", "version": "1.0",
            "supportedInterfaces": [
                {"url": format!("{}/rpc", self.url), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                {"url": format!("{}/rpc", self.url), "protocolBinding": "JSONRPC", "protocolVersion": "0.3.0"}
            ],
            "capabilities": {"streaming": false, "extensions": [{"uri": "https://example.com/ext", "required": false}]},
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "s", "name": "Summaries", "description": "summarises", "tags": ["text"]}]
        })
    }

    fn publish(&self, card: Value, jwks: Value) {
        *self.serves.lock().unwrap() = Serves { card, jwks };
    }
}

/// The a2a-sdk 1.x venv's Python, which has the SDK's signer, PyJWT and rfc8785; `None` (after
/// a SKIPPED line) when `tests/peers/setup.sh` has not made it.
fn signer_python() -> Option<PathBuf> {
    let python = peers_dir().join("venv-v1/bin/python");
    if python.exists() {
        Some(python)
    } else {
        skip(&format!(
            "signed cards: the a2a-sdk 1.x venv is not set up ({} missing) — run tests/peers/setup.sh",
            python.display()
        ));
        None
    }
}

/// `card` signed by `tests/peers/sign_card.py` (`mode` sdk or spec).
fn sign(
    python: &PathBuf,
    mode: &str,
    alg: &str,
    key: &str,
    kid: &str,
    jku: Option<&str>,
    card: &Value,
) -> Value {
    let mut c = std::process::Command::new(python);
    c.arg(repo().join("tests/peers/sign_card.py"))
        .args([mode, alg, &fixture(key), kid])
        .args(jku)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("run sign_card.py");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(card.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "sign_card.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a signed card")
}

fn jwks(names: &[&str]) -> Value {
    let keys: Vec<Value> = names
        .iter()
        .map(|n| {
            serde_json::from_str(
                &std::fs::read_to_string(fixture(&format!("{n}.jwk.json"))).unwrap(),
            )
            .unwrap()
        })
        .collect();
    json!({ "keys": keys })
}

/// `worker add ALIAS URL ARGS…` then `worker show`: the `signature:` line.
fn verdict(h: &TempHome, alias: &str, url: &str, args: &[&str]) -> String {
    let mut add = vec!["worker", "add", alias, url];
    add.extend_from_slice(args);
    h.command().args(&add).ok();
    let shown = h.command().args(["worker", "show", alias]).ok();
    let line = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("signature: "))
        .unwrap_or_else(|| panic!("no signature line in {shown}"))
        .to_string();
    let json = h.command().args(["worker", "show", alias, "--json"]).json();
    assert_eq!(json["signature"], line.as_str());
    line
}

#[test]
fn sdk_signed_cards_verify_with_the_key_their_own_origin_serves() {
    let Some(py) = signer_python() else { return };
    let a = Agent::start();
    let jku = format!("{}/jwks.json", a.url);
    let card = sign(
        &py,
        "sdk",
        "ES256",
        "ec.key.pem",
        "ec-1",
        Some(&jku),
        &a.card(),
    );
    // The SDK's server merged v0.3 fields in after signing: the served card is not what was
    // signed, the card as the SDK's type holds it is.
    assert!(
        card.get("url").is_some() && card.get("preferredTransport").is_some(),
        "{card}"
    );
    a.publish(card.clone(), jwks(&["rsa", "ec"]));
    let h = TempHome::new();
    assert_eq!(verdict(&h, "sdk", &a.url, &[]), "verified (kid ec-1)");
    // Required: the same card is accepted.
    assert_eq!(
        verdict(&h, "sdk", &a.url, &["--require-signed-card"]),
        "verified (kid ec-1)"
    );

    // Changed after signing: no longer what was signed.
    let mut changed = card.clone();
    changed["description"] = json!("now does something else");
    a.publish(changed, jwks(&["ec"]));
    assert_eq!(
        verdict(&h, "sdk", &a.url, &[]),
        "invalid: the ES256 signature (kid ec-1) does not match the card"
    );
    let err = h
        .command()
        .args(["worker", "add", "sdk2", &a.url, "--require-signed-card"])
        .fails();
    assert!(
        err.contains(
            "its agent card is not verified (signature: invalid: the ES256 signature (kid ec-1) does not match the card), and the worker requires a signed card — pin the worker's key with"
        ),
        "{err}"
    );

    // The jku serves only other keys under that kid: unverifiable, not invalid.
    a.publish(card.clone(), jwks(&["rsa"]));
    assert_eq!(
        verdict(&h, "sdk", &a.url, &[]),
        "unverifiable: no P-256 key ec-1 among 1 key(s) its jku serves"
    );
}

#[test]
fn spec_signed_cards_verify_with_pinned_pem_and_jwk_keys() {
    let Some(py) = signer_python() else { return };
    let a = Agent::start();
    let h = TempHome::new();
    for (alg, key, kid, pinned) in [
        ("RS256", "rsa.key.pem", "rsa-1", "rsa.pub.pem"),
        ("EdDSA", "ed.key.pem", "ed-1", "ed.jwk.json"),
        ("ES256", "ec.key.pem", "ec-1", "ec.pub.pem"),
    ] {
        a.publish(sign(&py, "spec", alg, key, kid, None, &a.card()), json!({}));
        // Without a key and without a jku there is nothing to check with.
        assert_eq!(
            verdict(&h, "spec", &a.url, &[]),
            "unverifiable: no key: pin the worker's key with --card-key (the signature names no jku)"
        );
        assert_eq!(
            verdict(&h, "spec", &a.url, &["--card-key", &fixture(pinned)]),
            format!("verified (kid {kid})")
        );
    }
    // The wrong key, pinned: the signature does not hold under it.
    assert_eq!(
        verdict(
            &h,
            "spec",
            &a.url,
            &["--card-key", &fixture("other-ec.pub.pem")]
        ),
        "invalid: the ES256 signature (kid ec-1) does not match the card"
    );
}

#[test]
fn unsigned_cards_and_foreign_jkus_are_said_and_refused_when_required() {
    let Some(py) = signer_python() else { return };
    let a = Agent::start();
    let h = TempHome::new();
    a.publish(a.card(), json!({}));
    assert_eq!(verdict(&h, "plain", &a.url, &[]), "none");
    let err = h
        .command()
        .args(["worker", "add", "plain2", &a.url, "--require-signed-card"])
        .fails();
    assert!(
        err.contains("its agent card is not verified (signature: none), and the worker requires a signed card"),
        "{err}"
    );
    // A jku on another origin proves only that someone signed: the key is not fetched.
    let elsewhere = Agent::start();
    elsewhere.publish(json!({}), jwks(&["ec"]));
    let jku = format!("{}/jwks.json", elsewhere.url);
    a.publish(
        sign(
            &py,
            "spec",
            "ES256",
            "ec.key.pem",
            "ec-1",
            Some(&jku),
            &a.card(),
        ),
        json!({}),
    );
    assert_eq!(
        verdict(&h, "plain", &a.url, &[]),
        format!(
            "unverifiable: its jku {jku} is not on the card's own https origin: pin the worker's key with --card-key"
        )
    );
    // Not a key: one line at `worker add`, saying what to give.
    let err = h
        .command()
        .args([
            "worker",
            "add",
            "k",
            &a.url,
            "--card-key",
            &fixture("ec.key.pem"),
        ])
        .fails();
    assert!(
        err.contains("holds no public key (BEGIN PUBLIC KEY)"),
        "{err}"
    );
}
