//! Credentials per worker (docs/commands-and-tools.md config keys): a bearer token or API key from
//! the environment, read at each use; AWS SigV4 keys, read at each use; a token from `token_cmd`;
//! an OAuth2 client-credentials token; an ID or access token from Google's Application Default
//! Credentials. The last three are cached in memory only, as [`Secret`], behind a generation
//! counter so that a 401/403 clears exactly the token that failed and concurrent callers fetch one
//! new token, not one each.

use super::aws::Signer;
use super::card::{Card, Untrusted, is_trusted, shown, trusted};
use super::google::{self, Want};
use super::http::{Budget, Resend, Size, fetch};
use crate::error::A2aError;
use a2a_mod_config::WorkerConfig;
use a2a_mod_core::text::one_line;
use a2a_mod_os::secret::Secret;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// What goes on one request: a header and its value, or a signature over the whole request.
pub(crate) struct Cred {
    pub apply: Apply,
    /// Which credentials these are, as a refusal names them (never their value).
    pub source: String,
    /// Set for cached tokens: the generation to clear on a 401/403.
    pub generation: Option<u64>,
    /// The token came from the cache rather than being fetched for this request, so a 401/403
    /// may just mean it expired: worth one retry with a fresh one.
    pub cached: bool,
}

pub(crate) enum Apply {
    Header { name: String, value: Secret },
    Sign(Box<Signer>),
}

impl Cred {
    /// `req` carrying these credentials: the last change made to a request, since a signature
    /// covers its headers and body.
    pub fn on(&self, req: reqwest::RequestBuilder) -> Result<reqwest::RequestBuilder, A2aError> {
        match &self.apply {
            Apply::Header { name, value } => {
                let mut v =
                    reqwest::header::HeaderValue::from_str(value.expose()).map_err(|_| {
                        A2aError::Credentials(
                            "the token has characters not allowed in an HTTP header".into(),
                        )
                    })?;
                v.set_sensitive(true);
                let name =
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                        A2aError::Credentials(format!("{name:?} is not a valid HTTP header name"))
                    })?;
                Ok(req.header(name, v))
            }
            Apply::Sign(signer) => {
                let (client, built) = req.build_split();
                let built = built.map_err(|e| {
                    A2aError::Credentials(format!("cannot build the request to sign: {e}"))
                })?;
                Ok(reqwest::RequestBuilder::from_parts(
                    client,
                    signer.sign(built)?,
                ))
            }
        }
    }
}

/// A 401/403 to a request that carried `cred`, naming the credentials refused (if any).
pub(crate) fn refusal(cred: Option<&Cred>, status: u16) -> A2aError {
    A2aError::Auth {
        status,
        by: cred.map(|c| c.source.clone()),
    }
}

/// A cached token: its value, until when it is used, which credentials made it.
struct Held {
    token: Secret,
    until: Option<Instant>,
    source: String,
}

#[derive(Default)]
struct TokenState {
    token: Option<Held>,
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

    /// Seconds the cached token is still used for, if it has an end.
    pub async fn left(&self) -> Option<f64> {
        let st = self.state.lock().await;
        let until = st.token.as_ref()?.until?;
        Some(
            until
                .saturating_duration_since(Instant::now())
                .as_secs_f64(),
        )
    }

    #[cfg(test)]
    pub async fn fetches(&self) -> u64 {
        self.state.lock().await.generation
    }
}

fn env_secret(var: &str, key: &str) -> Result<Secret, A2aError> {
    match a2a_mod_os::env::secret(var) {
        Some(v) => Ok(Secret::new(v)),
        None => Err(A2aError::Credentials(format!(
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
        return Ok(Some(bearer(
            &t,
            format!("the bearer token in {var}"),
            None,
            false,
        )));
    }
    if let Some(a) = &cfg.aws_sigv4 {
        let signer = Signer::new(a, &cfg.url)?;
        return Ok(Some(Cred {
            source: signer.source(),
            apply: Apply::Sign(Box::new(signer)),
            generation: None,
            cached: false,
        }));
    }
    if let Some(var) = &cfg.api_key_env {
        let header = cfg
            .api_key_header
            .clone()
            .or_else(|| card.and_then(Card::api_key_header))
            .unwrap_or_else(|| "X-API-Key".into());
        return Ok(Some(Cred {
            source: format!("the API key in {var}"),
            apply: Apply::Header {
                name: header,
                value: env_secret(var, "api_key_env")?,
            },
            generation: None,
            cached: false,
        }));
    }
    if cfg.token_cmd.is_none() && cfg.oauth.is_none() && cfg.google.is_none() {
        return Ok(None);
    }
    let mut st = budget.run(async { Ok(cache.state.lock().await) }).await?;
    if let Some(h) = &st.token {
        if h.until.is_none_or(|u| Instant::now() < u) {
            return Ok(Some(bearer(
                &h.token,
                h.source.clone(),
                Some(st.generation),
                true,
            )));
        }
        st.token = None;
    }
    let Some(held) = fetch_token(cfg, card, http, budget).await? else {
        return Ok(None);
    };
    st.generation += 1;
    let cred = bearer(&held.token, held.source.clone(), Some(st.generation), false);
    st.token = Some(held);
    Ok(Some(cred))
}

/// A fresh token from the source the worker's config names (`token_cmd`, Google, OAuth), or
/// `None` when it names none.
async fn fetch_token(
    cfg: &WorkerConfig,
    card: Option<&Card>,
    http: &reqwest::Client,
    budget: &Budget,
) -> Result<Option<Held>, A2aError> {
    let held = if let Some(cmd) = &cfg.token_cmd {
        Held {
            token: run_token_cmd(cmd, budget).await?,
            until: None,
            source: "the token from token_cmd".into(),
        }
    } else if let Some(g) = &cfg.google {
        let m = google::mint(&Want::of(g, &cfg.url), http, budget).await?;
        Held {
            token: m.token,
            // A token sent already expired is used for this one request, not kept.
            until: m
                .expires_in
                .map(|e| Instant::now() + usable_for(e).unwrap_or_default()),
            source: m.source,
        }
    } else if let Some(o) = &cfg.oauth {
        // The user's own token URL is confirmed by being given; the card's only when it is on
        // an origin the user trusts (discovery refuses such a card already, this keeps the
        // secret home whoever calls).
        let url = match (&o.token_url, card.and_then(Card::token_url)) {
            (Some(u), _) => u.clone(),
            (None, Some(u)) if is_trusted(&trusted(cfg), &u) => u,
            (None, Some(u)) => {
                return Err(
                    Untrusted::new("the card sends the oauth client secret to", &u, true).into(),
                );
            }
            (None, None) => {
                return Err(A2aError::Credentials(
                    "no oauth token url: set oauth.token_url or publish one in the agent card"
                        .into(),
                ));
            }
        };
        let secret = env_secret(&o.client_secret_env, "oauth.client_secret_env")?;
        let (token, until) = fetch_oauth(
            http,
            &url,
            &o.client_id,
            &secret,
            o.scope.as_deref(),
            budget,
        )
        .await?;
        Held {
            token,
            until,
            source: format!("the oauth token of client {:?}", o.client_id),
        }
    } else {
        return Ok(None);
    };
    Ok(Some(held))
}

fn bearer(tok: &Secret, source: String, generation: Option<u64>, cached: bool) -> Cred {
    Cred {
        apply: Apply::Header {
            name: "authorization".into(),
            value: Secret::new(format!("Bearer {}", tok.expose())),
        },
        source,
        generation,
        cached,
    }
}

/// The longest a token command may run, however long the request could wait: a command that
/// needs more is waiting for something that will not come (a prompt, with stdin closed).
const TOKEN_CMD_MAX: Duration = Duration::from_secs(10);

/// Nothing a token command prints is read past this (a token is a few KiB at most).
const TOKEN_CMD_OUTPUT: u64 = 64 * 1024;

/// Runs `token_cmd` in a process group of its own, given the request's time left capped at
/// [`TOKEN_CMD_MAX`]. Cut at that budget (or dropped with the request), the whole group is killed,
/// so no child it started in the background lives on; the error names the command, not the
/// worker, which was never asked.
async fn run_token_cmd(cmd: &str, budget: &Budget) -> Result<Secret, A2aError> {
    use tokio::io::AsyncReadExt;
    let what = one_line(cmd, 60);
    let start = Instant::now();
    let deadline = budget.deadline.min(start + TOKEN_CMD_MAX);
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| A2aError::Credentials(format!("cannot run token_cmd {what:?}: {e}")))?;
    // Declared after `child`, so dropped before it: the group dies while `sh`, its leader, is
    // not yet reaped and the group id cannot name anyone else.
    let mut group = Group(child.id());
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let run = async {
        let read_out = async {
            if let Some(s) = stdout {
                let _ = s.take(TOKEN_CMD_OUTPUT).read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr {
                let _ = s.take(TOKEN_CMD_OUTPUT).read_to_end(&mut err).await;
            }
        };
        let (status, (), ()) = tokio::join!(child.wait(), read_out, read_err);
        status
    };
    let status = match tokio::time::timeout_at(deadline, run).await {
        Ok(Ok(status)) => {
            group.0 = None;
            status
        }
        Ok(Err(e)) => {
            group.kill();
            return Err(A2aError::Credentials(format!(
                "cannot wait for token_cmd {what:?}: {e}"
            )));
        }
        Err(_) => {
            group.kill();
            let _ = child.wait().await;
            let secs = deadline.saturating_duration_since(start).as_secs_f64();
            return Err(A2aError::Credentials(format!(
                "token command {what:?} did not finish within {} s (the request's time left, \
                 at most {} s), so it was stopped with every process it started; run it by hand \
                 to see what it waits for",
                short_secs(secs),
                TOKEN_CMD_MAX.as_secs()
            )));
        }
    };
    if !status.success() {
        let err = String::from_utf8_lossy(&err);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let code = status
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
    let tok = String::from_utf8_lossy(&out).trim().to_string();
    if tok.is_empty() {
        return Err(A2aError::Credentials(format!(
            "token_cmd {what:?} printed no token"
        )));
    }
    Ok(Secret::new(tok))
}

/// A running token command's process group (its id is the leader's pid); killed on drop unless
/// the command ended by itself.
struct Group(Option<u32>);

impl Group {
    fn kill(&mut self) {
        // `process_group(0)` made the group for this command alone.
        if let Some(id) = self.0.take() {
            a2a_mod_os::process::signal_group(id, a2a_mod_os::process::Signal::Kill);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `3`, `2.5`: seconds as a person writes them.
fn short_secs(s: f64) -> String {
    let r = (s * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// How long a token with `expires_in` seconds is used: a margin before expiry, so a token is not
/// sent just as it runs out.
pub(crate) fn usable_for(expires_in: f64) -> Option<Duration> {
    if !expires_in.is_finite() || expires_in <= 0.0 {
        return None;
    }
    let secs = expires_in.min(1e9);
    let margin = (secs / 2.0).min(30.0);
    Some(a2a_mod_config::secs(secs - margin))
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
    let ans = fetch(req, budget, Resend::IfDropped, Size::Whole).await?;
    let body = ans.json();
    if !ans.ok() {
        let why = body
            .as_ref()
            .and_then(|v| v.get("error"))
            .and_then(Value::as_str)
            .map(|e| format!(" ({})", one_line(e, 80)))
            .unwrap_or_default();
        let redirect = if ans.redirect().is_some() {
            " (a redirect, not followed: the client secret goes only to the token url given)"
        } else {
            ""
        };
        return Err(A2aError::Credentials(format!(
            "oauth token endpoint {} answered HTTP {}{redirect}{why}",
            shown(url),
            ans.status
        )));
    }
    let body = body.ok_or_else(|| {
        A2aError::Credentials(format!(
            "oauth token endpoint {} answered non-JSON",
            shown(url)
        ))
    })?;
    let tok = body
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            A2aError::Credentials(format!(
                "oauth token endpoint {} sent no access_token",
                shown(url)
            ))
        })?;
    let expires_in = match body.get("expires_in") {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    let until = expires_in.and_then(usable_for).map(|d| Instant::now() + d);
    Ok((Secret::new(tok), until))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|st| st != "Z" && st != "X")
        })
    }

    /// A token command dropped with its request (the caller's own deadline, a cancelled tool
    /// call) takes its background children with it, as one cut at its budget does.
    #[tokio::test]
    async fn a_dropped_token_cmd_leaves_no_process() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let cmd = format!(
            "sleep 300 & echo $! >> {p}; echo $$ >> {p}; wait",
            p = pids.display()
        );
        let budget = Budget::start(Instant::now() + Duration::from_secs(30)).unwrap();
        let run = run_token_cmd(&cmd, &budget);
        let wrote = async {
            while std::fs::read_to_string(&pids).map_or(0, |s| s.lines().count()) < 2 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            r = run => panic!("the command ended: {:?}", r.map(|_| ())),
            () = wrote => {}
        }
        let text = std::fs::read_to_string(&pids).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while text.lines().any(alive) {
            assert!(std::time::Instant::now() < deadline, "still alive: {text}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[test]
    fn seconds_read_as_written() {
        assert_eq!(short_secs(2.97), "3");
        assert_eq!(short_secs(2.5), "2.5");
        assert_eq!(short_secs(10.0), "10");
    }
}
