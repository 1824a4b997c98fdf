//! Google Application Default Credentials for `google` workers (Cloud Run, Vertex AI Agent Engine,
//! Gemini Enterprise): an ID token whose audience is the worker's origin (or the one configured)
//! for hosts outside `*.googleapis.com`, an access token (cloud-platform scope) for those.
//!
//! The credentials are found as Google's client libraries find them: the file in
//! `GOOGLE_APPLICATION_CREDENTIALS`, else gcloud's `application_default_credentials.json`, else
//! the metadata server (`GCE_METADATA_HOST` or `metadata.google.internal`). A file is a service
//! account key (a JWT assertion signed with its key, RS256, exchanged at the key's `token_uri`),
//! user credentials (a refresh token; access tokens only) or an impersonated service account
//! (the IAM Credentials API mints for it, with the source credentials' access token).
//!
//! Written here rather than taken from a crate: `google-cloud-auth` sends a key's assertion to a
//! fixed token URL whatever the key says (so no stand-in can check it), `gcp_auth` mints no ID
//! tokens, and `gcloud-auth` needs a JWT crate with a second crypto backend. This is the JWT
//! bearer flow of RFC 7523 over `ring`, already in the tree for TLS. Tokens are cached by the
//! caller ([`super::auth::TokenCache`]) in memory only, and never logged.

use super::card::shown;
use super::http::{Budget, Resend, Size, fetch};
use crate::error::A2aError;
use a2a_mod_config::GoogleConfig;
use a2a_mod_core::text::one_line;
use a2a_mod_os::secret::Secret;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::time::Instant;

/// The scope of an access token for `*.googleapis.com`: what gcloud asks for.
const CLOUD_PLATFORM: &str = "https://www.googleapis.com/auth/cloud-platform";
/// Where a key or user credentials are exchanged when the file names no `token_uri`.
const TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
const METADATA_HOST: &str = "metadata.google.internal";
/// A key file is a few KiB; anything past this is not one.
const FILE_MAX: u64 = 64 * 1024;
/// How long a metadata server gets to answer: off Google Cloud there is none, and the error
/// should come before the request's whole budget is spent on it.
const METADATA_WAIT: Duration = Duration::from_secs(3);

/// Which token a worker takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Want {
    /// An ID token for this audience.
    Id(String),
    /// An access token, cloud-platform scope.
    Access,
}

impl Want {
    pub fn of(cfg: &GoogleConfig, url: &str) -> Want {
        let u = url::Url::parse(url).ok();
        let host = u.as_ref().and_then(|u| u.host_str()).unwrap_or("");
        if host == "googleapis.com" || host.ends_with(".googleapis.com") {
            return Want::Access;
        }
        Want::Id(cfg.audience.clone().unwrap_or_else(|| {
            u.map(|u| u.origin().ascii_serialization())
                .unwrap_or_default()
        }))
    }
}

/// The audience of the ID token a `google` worker at `url` is sent, or `None` when it takes an
/// access token (`worker list` shows which).
pub fn google_token_kind(cfg: &GoogleConfig, url: &str) -> Option<String> {
    match Want::of(cfg, url) {
        Want::Id(aud) => Some(aud),
        Want::Access => None,
    }
}

/// A token just minted: the bearer value, how long it lives, and which credentials made it (as a
/// refusal names them).
pub(crate) struct Minted {
    pub token: Secret,
    pub expires_in: Option<f64>,
    pub source: String,
}

/// Mints the token `want` asks for from the Application Default Credentials found now.
pub(crate) async fn mint(
    want: &Want,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Minted, A2aError> {
    match adc_file()? {
        Some(path) => from_file(&path, want, http, budget).await,
        None => from_metadata(want, http, budget).await,
    }
}

/// The ADC file: `GOOGLE_APPLICATION_CREDENTIALS` (which must exist if set), else gcloud's.
fn adc_file() -> Result<Option<PathBuf>, A2aError> {
    if let Some(p) = a2a_mod_os::env::os_path("GOOGLE_APPLICATION_CREDENTIALS") {
        if !p.is_file() {
            return Err(A2aError::Credentials(format!(
                "GOOGLE_APPLICATION_CREDENTIALS names \"{}\", which is not a file: point it at a key \
                 file, or unset it to use gcloud's credentials",
                p.display()
            )));
        }
        return Ok(Some(p));
    }
    let gcloud = a2a_mod_os::env::os_path("CLOUDSDK_CONFIG")
        .or_else(|| a2a_mod_os::env::home_dir().map(|h| h.join(".config").join("gcloud")));
    Ok(gcloud
        .map(|d| d.join("application_default_credentials.json"))
        .filter(|p| p.is_file()))
}

fn read_file(path: &Path) -> Result<Value, A2aError> {
    use std::io::Read;
    let cant = |e: &dyn std::fmt::Display| {
        A2aError::Credentials(format!("cannot read \"{}\": {e}", path.display()))
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(FILE_MAX).read_to_string(&mut text))
        .map_err(|e| cant(&e))?;
    // serde_json's message names a line and column, never the text.
    serde_json::from_str(&text).map_err(|e| cant(&format!("not JSON ({e})")))
}

fn field<'a>(v: &'a Value, key: &str, path: &Path) -> Result<&'a str, A2aError> {
    v.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            A2aError::Credentials(format!(
                "\"{}\" has no {key:?}: it is not a Google credentials file",
                path.display()
            ))
        })
}

async fn from_file(
    path: &Path,
    want: &Want,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Minted, A2aError> {
    let v = read_file(path)?;
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "service_account" => {
            let email = field(&v, "client_email", path)?;
            let source = format!(
                "the Google service account {email} (key {})",
                path.display()
            );
            let token = service_account(&v, path, want, http, budget).await?;
            Ok(Minted { source, ..token })
        }
        "authorized_user" => {
            let source = format!("the Google user credentials in {}", path.display());
            if let Want::Id(aud) = want {
                return Err(A2aError::Credentials(format!(
                    "{source} cannot mint an ID token for {aud:?}: use a service account \
                     (`gcloud auth application-default login --impersonate-service-account SA`, \
                     or GOOGLE_APPLICATION_CREDENTIALS=KEY.json), or `--token-cmd 'gcloud auth \
                     print-identity-token'`"
                )));
            }
            let token = user(&v, path, http, budget).await?;
            Ok(Minted { source, ..token })
        }
        "impersonated_service_account" => impersonated(&v, path, want, http, budget).await,
        other => Err(A2aError::Credentials(format!(
            "\"{}\" holds {} credentials, which a2a-mod cannot use: give a service account key or \
             user credentials, or use `--token-cmd` with gcloud",
            path.display(),
            if other.is_empty() {
                "untyped".to_string()
            } else {
                format!("{:?}", one_line(other, 40))
            }
        ))),
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A service account key: a JWT assertion signed with its private key, exchanged at its
/// `token_uri` for an ID token (`target_audience`) or an access token (`scope`).
async fn service_account(
    key: &Value,
    path: &Path,
    want: &Want,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Minted, A2aError> {
    let email = field(key, "client_email", path)?;
    let pem = field(key, "private_key", path)?;
    let token_uri = key
        .get("token_uri")
        .and_then(Value::as_str)
        .unwrap_or(TOKEN_URI);
    let now = now_secs();
    let mut header = json!({"alg": "RS256", "typ": "JWT"});
    if let Some(kid) = key.get("private_key_id").and_then(Value::as_str) {
        header["kid"] = kid.into();
    }
    let mut claims = json!({"iss": email, "aud": token_uri, "iat": now, "exp": now + 3600});
    match want {
        Want::Id(aud) => claims["target_audience"] = aud.as_str().into(),
        Want::Access => claims["scope"] = CLOUD_PLATFORM.into(),
    }
    let assertion = sign_rs256(&header, &claims, pem).map_err(|why| {
        A2aError::Credentials(format!(
            "the private_key of \"{}\" cannot sign: {why}",
            path.display()
        ))
    })?;
    let form = [
        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
        ("assertion", assertion.expose()),
    ];
    let body = post_form(http, token_uri, &form, budget).await?;
    token_from(&body, want, token_uri)
}

/// `header.claims.signature`, RS256, with the key in `pem` (PKCS#8, as Google issues keys).
fn sign_rs256(header: &Value, claims: &Value, pem: &str) -> Result<Secret, String> {
    use rustls::pki_types::PrivatePkcs8KeyDer;
    use rustls::pki_types::pem::PemObject;
    let der = PrivatePkcs8KeyDer::from_pem_slice(pem.as_bytes())
        .map_err(|_| "not a PEM PKCS#8 private key".to_string())?;
    let pair = ring::signature::RsaKeyPair::from_pkcs8(der.secret_pkcs8_der())
        .map_err(|e| format!("not an RSA key ({e})"))?;
    let input = format!(
        "{}.{}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    );
    let mut sig = vec![0; pair.public().modulus_len()];
    pair.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        input.as_bytes(),
        &mut sig,
    )
    .map_err(|_| "signing failed".to_string())?;
    Ok(Secret::new(format!("{input}.{}", B64.encode(sig))))
}

/// User credentials (`gcloud auth application-default login`): the refresh token exchanged
/// for an access token.
async fn user(
    v: &Value,
    path: &Path,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Minted, A2aError> {
    let token_uri = v
        .get("token_uri")
        .and_then(Value::as_str)
        .unwrap_or(TOKEN_URI);
    let form = [
        ("grant_type", "refresh_token"),
        ("client_id", field(v, "client_id", path)?),
        ("client_secret", field(v, "client_secret", path)?),
        ("refresh_token", field(v, "refresh_token", path)?),
    ];
    let body = post_form(http, token_uri, &form, budget).await?;
    token_from(&body, &Want::Access, token_uri)
}

/// An impersonated service account (`gcloud auth application-default login
/// --impersonate-service-account SA`): the source credentials' access token asks the IAM
/// Credentials API for the service account's token.
async fn impersonated(
    v: &Value,
    path: &Path,
    want: &Want,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Minted, A2aError> {
    let url = field(v, "service_account_impersonation_url", path)?;
    let src = v.get("source_credentials").cloned().unwrap_or_default();
    let source_token = match src.get("type").and_then(Value::as_str) {
        Some("authorized_user") => user(&src, path, http, budget).await?,
        Some("service_account") => service_account(&src, path, &Want::Access, http, budget).await?,
        _ => {
            return Err(A2aError::Credentials(format!(
                "\"{}\": source_credentials must be user credentials or a service account key",
                path.display()
            )));
        }
    };
    let sa = url
        .rsplit_once("serviceAccounts/")
        .map(|(_, rest)| rest.split(':').next().unwrap_or(rest))
        .unwrap_or("?");
    let source = format!(
        "the Google service account {} impersonated with {}",
        one_line(sa, 120),
        path.display()
    );
    // The file names the access-token method; an ID token comes from its sibling.
    let (url, body) = match want {
        Want::Access => (
            url.to_string(),
            json!({"scope": [CLOUD_PLATFORM], "lifetime": "3600s"}),
        ),
        Want::Id(aud) => (
            url.replace(":generateAccessToken", ":generateIdToken"),
            json!({"audience": aud, "includeEmail": true}),
        ),
    };
    let req = http
        .post(&url)
        .bearer_auth(source_token.token.expose())
        .header(reqwest::header::ACCEPT, "application/json")
        .json(&body);
    let ans = fetch(req, budget, Resend::IfDropped, Size::Whole).await?;
    let answer = answer_json(&ans, &url)?;
    let (key, expires_in) = match want {
        Want::Access => ("accessToken", Some(3600.0)),
        Want::Id(_) => ("token", None),
    };
    let token = answer
        .get(key)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| A2aError::Credentials(format!("{} sent no {key}", shown(&url))))?;
    Ok(Minted {
        expires_in: expires_in.or_else(|| jwt_expires_in(token)),
        token: Secret::new(token),
        source,
    })
}

/// The metadata server of the Google Cloud machine a2a-mod runs on (Cloud Run, GKE, GCE).
async fn from_metadata(
    want: &Want,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Minted, A2aError> {
    let host = a2a_mod_os::env::secret("GCE_METADATA_HOST").unwrap_or_else(|| METADATA_HOST.into());
    let base = format!("http://{host}/computeMetadata/v1/instance/service-accounts/default");
    let req = match want {
        Want::Id(aud) => http
            .get(format!("{base}/identity"))
            .query(&[("audience", aud.as_str()), ("format", "full")]),
        Want::Access => http.get(format!("{base}/token")),
    }
    .header("Metadata-Flavor", "Google");
    let short = Budget::start(budget.deadline.min(Instant::now() + METADATA_WAIT))?;
    let none = |why: String| {
        A2aError::Credentials(format!(
            "no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set, gcloud has no \
             application_default_credentials.json, and the metadata server ({host}) {why} — run \
             `gcloud auth application-default login`, or set GOOGLE_APPLICATION_CREDENTIALS to a \
             service account key file"
        ))
    };
    let ans = match fetch(req, &short, Resend::IfDropped, Size::Whole).await {
        Ok(a) => a,
        Err(A2aError::Unreachable(_) | A2aError::Timeout(_)) => {
            return Err(none("did not answer".into()));
        }
        Err(e) => return Err(e),
    };
    if !ans.ok() {
        return Err(none(format!("answered HTTP {}", ans.status)));
    }
    let source = format!("the service account of the metadata server ({host})");
    match want {
        Want::Id(_) => {
            let token = String::from_utf8_lossy(&ans.body).trim().to_string();
            let expires_in = jwt_expires_in(&token);
            if expires_in.is_none() {
                return Err(none("sent no ID token".into()));
            }
            Ok(Minted {
                token: Secret::new(token),
                expires_in,
                source,
            })
        }
        Want::Access => {
            let body = ans.json().ok_or_else(|| none("answered non-JSON".into()))?;
            Ok(Minted {
                source,
                ..token_from(&body, want, &format!("http://{host}"))?
            })
        }
    }
}

async fn post_form(
    http: &reqwest::Client,
    url: &str,
    form: &[(&str, &str)],
    budget: &Budget,
) -> Result<Value, A2aError> {
    let req = http
        .post(url)
        .header(reqwest::header::ACCEPT, "application/json")
        .form(form);
    let ans = fetch(req, budget, Resend::IfDropped, Size::Whole).await?;
    answer_json(&ans, url)
}

/// A token endpoint's JSON answer, or one line with its status and its `error` words.
fn answer_json(ans: &super::http::Answer, url: &str) -> Result<Value, A2aError> {
    let body = ans.json();
    if !ans.ok() {
        // OAuth's `error`/`error_description`, or Google APIs' `error.message`.
        let e = body.as_ref().and_then(|b| b.get("error"));
        let words: Vec<&str> = [
            e.and_then(Value::as_str),
            body.as_ref()
                .and_then(|b| b.get("error_description"))
                .and_then(Value::as_str),
            e.and_then(|e| e.get("message")).and_then(Value::as_str),
        ]
        .into_iter()
        .flatten()
        .collect();
        let why = if words.is_empty() {
            String::new()
        } else {
            format!(" ({})", one_line(&words.join(": "), 160))
        };
        return Err(A2aError::Credentials(format!(
            "Google token endpoint {} answered HTTP {}{why}",
            shown(url),
            ans.status
        )));
    }
    body.ok_or_else(|| {
        A2aError::Credentials(format!(
            "Google token endpoint {} answered non-JSON",
            shown(url)
        ))
    })
}

/// The token a token endpoint sent: `id_token` (its lifetime read from its `exp`) or
/// `access_token` with `expires_in`.
fn token_from(body: &Value, want: &Want, url: &str) -> Result<Minted, A2aError> {
    let key = match want {
        Want::Id(_) => "id_token",
        Want::Access => "access_token",
    };
    let token = body
        .get(key)
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            A2aError::Credentials(format!(
                "Google token endpoint {} sent no {key}",
                shown(url)
            ))
        })?;
    let expires_in = match want {
        Want::Id(_) => jwt_expires_in(token),
        Want::Access => match body.get("expires_in") {
            Some(Value::Number(n)) => n.as_f64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        },
    };
    Ok(Minted {
        token: Secret::new(token),
        expires_in,
        source: String::new(),
    })
}

/// Seconds until a JWT's `exp`, read without checking its signature (the worker checks it; this
/// only says when to mint the next one). `None` when it is not a JWT with an `exp`.
pub(crate) fn jwt_expires_in(token: &str) -> Option<f64> {
    let payload = token.split('.').nth(1)?;
    let bytes = super::signature::unb64url(payload)?;
    let exp = serde_json::from_slice::<Value>(&bytes)
        .ok()?
        .get("exp")?
        .as_f64()?;
    Some(exp - now_secs() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn googleapis_hosts_take_access_tokens_and_others_id_tokens_for_their_origin() {
        let none = GoogleConfig::default();
        assert_eq!(
            Want::of(
                &none,
                "https://us-central1-aiplatform.googleapis.com/v1/projects/p/x"
            ),
            Want::Access
        );
        assert_eq!(
            Want::of(&none, "https://agent-abc-uc.a.run.app/a2a/"),
            Want::Id("https://agent-abc-uc.a.run.app".into())
        );
        assert_eq!(
            Want::of(&none, "http://127.0.0.1:8080/rpc"),
            Want::Id("http://127.0.0.1:8080".into())
        );
        // A host that only ends like one is not one.
        assert_eq!(
            Want::of(&none, "https://evilgoogleapis.com/"),
            Want::Id("https://evilgoogleapis.com".into())
        );
        let aud = GoogleConfig {
            audience: Some("my-audience".into()),
        };
        assert_eq!(
            Want::of(&aud, "https://agent.example/"),
            Want::Id("my-audience".into())
        );
    }

    #[test]
    fn a_jwt_says_when_it_expires() {
        let p = B64.encode(json!({"exp": now_secs() + 100}).to_string());
        let left = jwt_expires_in(&format!("h.{p}.s")).unwrap();
        assert!((98.0..=100.0).contains(&left), "{left}");
        assert_eq!(jwt_expires_in("opaque-token"), None);
        assert_eq!(jwt_expires_in("a.!!.c"), None);
    }
}
