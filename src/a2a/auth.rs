//! Credentials per worker (INTERFACES.md config keys): a bearer token or API key from the
//! environment, read at each use; a token from `token_cmd`; an OAuth2 client-credentials token.
//! The last two are cached in memory only, as [`Secret`], behind a generation counter so that a
//! 401/403 clears exactly the token that failed and concurrent callers fetch one new token, not
//! one each.

use super::A2aError;
use super::card::Card;
use super::http::{Budget, Resend, fetch};
use crate::config::WorkerConfig;
use crate::core::text::one_line;
use crate::secret::Secret;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// What goes on one request: a header and its value.
pub(crate) struct Cred {
    pub header: String,
    pub value: Secret,
    /// Set for cached tokens: the generation to clear on a 401/403.
    pub generation: Option<u64>,
    /// The token came from the cache rather than being fetched for this request, so a 401/403
    /// may just mean it expired: worth one retry with a fresh one.
    pub cached: bool,
}

#[derive(Default)]
struct TokenState {
    token: Option<(Secret, Option<Instant>)>,
    /// Counts the tokens fetched: each fetch starts a new generation.
    generation: u64,
}

#[derive(Default)]
pub(crate) struct TokenCache {
    // tokio's Mutex: held across the fetch so concurrent callers wait for one token.
    state: tokio::sync::Mutex<TokenState>,
}

impl TokenCache {
    /// A rejected credential: its token is forgotten if it came from this cache and no newer
    /// one has replaced it already.
    pub async fn forget(&self, cred: &Cred) {
        let Some(g) = cred.generation else {
            return;
        };
        let mut st = self.state.lock().await;
        if st.generation == g {
            st.token = None;
        }
    }

    #[cfg(test)]
    pub async fn fetches(&self) -> u64 {
        self.state.lock().await.generation
    }
}

fn env_secret(var: &str, key: &str) -> Result<Secret, A2aError> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Secret::new(v.trim())),
        _ => Err(A2aError::Credentials(format!(
            "environment variable {var} (from {key}) is not set"
        ))),
    }
}

/// The credentials for one request, or `None` when the worker needs none. `card` is `None` only
/// while fetching the card itself.
pub(crate) async fn credentials(
    cfg: &WorkerConfig,
    card: Option<&Card>,
    cache: &TokenCache,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Option<Cred>, A2aError> {
    if let Some(var) = &cfg.bearer_env {
        let t = env_secret(var, "bearer_env")?;
        return Ok(Some(bearer(&t, None, false)));
    }
    if let Some(var) = &cfg.api_key_env {
        let header = cfg
            .api_key_header
            .clone()
            .or_else(|| card.and_then(Card::api_key_header))
            .unwrap_or_else(|| "X-API-Key".into());
        return Ok(Some(Cred {
            header,
            value: env_secret(var, "api_key_env")?,
            generation: None,
            cached: false,
        }));
    }
    if cfg.token_cmd.is_none() && cfg.oauth.is_none() {
        return Ok(None);
    }
    let mut st = budget.run(async { Ok(cache.state.lock().await) }).await?;
    if let Some((tok, until)) = &st.token {
        if until.is_none_or(|u| Instant::now() < u) {
            return Ok(Some(bearer(tok, Some(st.generation), true)));
        }
        st.token = None;
    }
    let (tok, until) = if let Some(cmd) = &cfg.token_cmd {
        (run_token_cmd(cmd, budget).await?, None)
    } else if let Some(o) = &cfg.oauth {
        let url = o
            .token_url
            .clone()
            .or_else(|| card.and_then(Card::token_url))
            .ok_or_else(|| {
                A2aError::Credentials(
                    "no oauth token url: set oauth.token_url or publish one in the agent card"
                        .into(),
                )
            })?;
        let secret = env_secret(&o.client_secret_env, "oauth.client_secret_env")?;
        fetch_oauth(
            http,
            &url,
            &o.client_id,
            &secret,
            o.scope.as_deref(),
            budget,
        )
        .await?
    } else {
        return Ok(None);
    };
    st.generation += 1;
    st.token = Some((tok.clone(), until));
    Ok(Some(bearer(&tok, Some(st.generation), false)))
}

fn bearer(tok: &Secret, generation: Option<u64>, cached: bool) -> Cred {
    Cred {
        header: "authorization".into(),
        value: Secret::new(format!("Bearer {}", tok.expose())),
        generation,
        cached,
    }
}

async fn run_token_cmd(cmd: &str, budget: &Budget) -> Result<Secret, A2aError> {
    let what = one_line(cmd, 60);
    let out = budget
        .run(async {
            tokio::process::Command::new("sh")
                .arg("-c")
                .arg(cmd)
                .stdin(std::process::Stdio::null())
                .kill_on_drop(true)
                .output()
                .await
                .map_err(|e| A2aError::Credentials(format!("cannot run token_cmd {what:?}: {e}")))
        })
        .await?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let code = out
            .status
            .code()
            .map(|c| format!("exit {c}"))
            .unwrap_or_else(|| "killed".into());
        let tail = if first.is_empty() {
            String::new()
        } else {
            format!(": {}", one_line(first, 120))
        };
        return Err(A2aError::Credentials(format!(
            "token_cmd {what:?} failed ({code}){tail}"
        )));
    }
    let tok = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if tok.is_empty() {
        return Err(A2aError::Credentials(format!(
            "token_cmd {what:?} printed no token"
        )));
    }
    Ok(Secret::new(tok))
}

/// How long a token with `expires_in` seconds is used: a margin before expiry, so a token is not
/// sent just as it runs out.
pub(crate) fn usable_for(expires_in: f64) -> Option<Duration> {
    if !expires_in.is_finite() || expires_in <= 0.0 {
        return None;
    }
    let secs = expires_in.min(1e9);
    let margin = (secs / 2.0).min(30.0);
    Some(crate::config::secs(secs - margin))
}

async fn fetch_oauth(
    http: &reqwest::Client,
    url: &str,
    client_id: &str,
    secret: &Secret,
    scope: Option<&str>,
    budget: &Budget,
) -> Result<(Secret, Option<Instant>), A2aError> {
    let mut form = vec![("grant_type", "client_credentials")];
    if let Some(s) = scope.filter(|s| !s.is_empty()) {
        form.push(("scope", s));
    }
    let req = http
        .post(url)
        .basic_auth(client_id, Some(secret.expose()))
        .header(reqwest::header::ACCEPT, "application/json")
        .form(&form);
    let ans = fetch(req, budget, Resend::IfDropped).await?;
    let body = ans.json();
    if !ans.ok() {
        let why = body
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map(|e| format!(" ({})", one_line(e, 80)))
            .unwrap_or_default();
        return Err(A2aError::Credentials(format!(
            "oauth token endpoint {url} answered HTTP {}{why}",
            ans.status
        )));
    }
    let body = body.ok_or_else(|| {
        A2aError::Credentials(format!("oauth token endpoint {url} answered non-JSON"))
    })?;
    let tok = body
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            A2aError::Credentials(format!("oauth token endpoint {url} sent no access_token"))
        })?;
    let expires_in = match body.get("expires_in") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    let until = expires_in.and_then(usable_for).map(|d| Instant::now() + d);
    Ok((Secret::new(tok), until))
}
