//! HTTP plumbing shared by card discovery, token fetches and RPC calls: the one process-wide
//! reqwest client, requests cut off at the caller's deadline with a 4 MiB cap on what is read, and
//! the mapping of transport failures onto [`A2aError`]. One place, so no request path can forget
//! the deadline or read an unbounded body from an untrusted worker.

use crate::error::A2aError;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::time::Instant;

/// Nothing a worker or token endpoint sends is read past this.
pub(crate) const MAX_BODY: usize = a2a_mod_core::bounds::WIRE_BODY_BYTES;

/// How long an idle connection is kept for reuse; see [`builder`].
const POOL_IDLE: Duration = Duration::from_millis(4500);

const USER_AGENT: &str = concat!("a2a-mod/", env!("CARGO_PKG_VERSION"));

/// The process-wide client: built once, cloned cheaply (reqwest's client is an `Arc` inside), so
/// every worker shares one connection pool.
pub fn http_client() -> reqwest::Client {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    CLIENT.get_or_init(build_client).clone()
}

fn builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .user_agent(USER_AGENT)
        .connect_timeout(Duration::from_secs(10))
        // Under the 5 s after which uvicorn (the Python SDK) and Node close an idle connection:
        // the poll interval is also 5 s, and a connection reused just as the worker closes it
        // loses the request (CI saw a GetTask vanish that way). Polls then open a new one.
        .pool_idle_timeout(POOL_IDLE)
        // Redirects are never followed here: reqwest's default policy keeps custom headers (an
        // API key) on a hop to another host. Card discovery follows them itself, within the
        // worker's trusted origins and without credentials (`Worker::get_card`); an A2A call or
        // a token request that is redirected fails, naming the status.
        .redirect(reqwest::redirect::Policy::none())
}

fn build_client() -> reqwest::Client {
    // reqwest is built with `rustls-no-provider` (ring keeps the cold build short, Cargo.toml), so a
    // provider must be installed before the first client. Err means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    match builder().build() {
        Ok(c) => c,
        Err(e) => {
            // The platform verifier fails when the system has no CA certificates (minimal
            // containers). Plain http workers must still work; https then fails at the handshake
            // with a certificate error that names the problem.
            tracing::warn!("no system CA certificates, https workers will fail: {e}");
            let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .map(|b| {
                b.with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            });
            let fallback = match tls {
                Ok(tls) => builder().tls_backend_preconfigured(tls).build(),
                Err(_) => builder().build(),
            };
            // invariant: a preconfigured rustls config skips the platform verifier, the only part
            // of the builder that depends on the machine; the rest is fixed at compile time.
            fallback.expect("http client with preconfigured tls")
        }
    }
}

/// One request's budget: the deadline, and how long it was when the call began (the number a
/// `Timeout` reports).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub deadline: Instant,
    pub secs: f64,
}

impl Budget {
    /// An already-passed deadline is a timeout before anything is sent.
    pub fn start(deadline: Instant) -> Result<Budget, A2aError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(A2aError::Timeout(0.0));
        }
        Ok(Budget {
            deadline,
            secs: left.as_secs_f64(),
        })
    }

    pub fn timeout(&self) -> A2aError {
        A2aError::Timeout((self.secs * 10.0).round() / 10.0)
    }

    /// Runs `fut` until the deadline; past it, the future is dropped (which cancels it).
    pub async fn run<T>(
        &self,
        fut: impl Future<Output = Result<T, A2aError>>,
    ) -> Result<T, A2aError> {
        if Instant::now() >= self.deadline {
            return Err(self.timeout());
        }
        match tokio::time::timeout_at(self.deadline, fut).await {
            Ok(r) => r,
            Err(_) => Err(self.timeout()),
        }
    }
}

/// A complete, bounded HTTP answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub content_type: String,
    /// `Retry-After`, as a wait from now (seconds or an HTTP date), when the worker sent one.
    pub retry_after: Option<Duration>,
    /// The `Location` header, as sent (a redirect's target, relative or not).
    pub location: Option<String>,
    pub body: Vec<u8>,
    /// An answer over [`MAX_BODY`] to a call that allows it ([`Size::Spill`]): read as a stream,
    /// its file parts spilled (`spill.rs`), the rest as JSON; `body` is then empty.
    pub big: Option<(serde_json::Value, super::spill::Spills)>,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }
    /// A redirect with somewhere to go: its `Location`.
    pub fn redirect(&self) -> Option<&str> {
        match self.status {
            301 | 302 | 303 | 307 | 308 => self.location.as_deref(),
            _ => None,
        }
    }
    pub fn is_auth_failure(&self) -> bool {
        self.status == 401 || self.status == 403
    }
    /// 429 Too Many Requests or 503 Service Unavailable: the worker asks us to come back later.
    pub fn is_overloaded(&self) -> bool {
        self.status == 429 || self.status == 503
    }
    pub fn looks_html(&self) -> bool {
        if self.content_type.contains("html") {
            return true;
        }
        let head: Vec<u8> = self
            .body
            .iter()
            .skip_while(|b| b.is_ascii_whitespace())
            .take(15)
            .map(u8::to_ascii_lowercase)
            .collect();
        head.starts_with(b"<!doctype html") || head.starts_with(b"<html")
    }
    pub fn json(&self) -> Option<serde_json::Value> {
        match &self.big {
            Some((v, _)) => Some(v.clone()),
            None => serde_json::from_slice(&self.body).ok(),
        }
    }

    /// The file parts spilled while it was read (none for an answer read whole).
    pub fn spills(&self) -> super::spill::Spills {
        self.big
            .as_ref()
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }
}

/// What an answer over [`MAX_BODY`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    /// An error: cards, tokens, anything that is never that large.
    Whole,
    /// Read as a stream, file parts spilled: the answers about a task, which may carry files.
    Spill,
}

/// Whether a request may go out a second time when its connection dies under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resend {
    /// A SendMessage: the worker may have started the task, and a second one would run it twice.
    Never,
    /// Card, token, GetTask, CancelTask: asking twice changes nothing. A pooled connection the
    /// worker closed as the request went out fails it with nothing learnt, and one more try on a
    /// new connection answers it.
    IfDropped,
}

/// Sends `req` and reads the whole answer, both within the budget and the size cap.
pub(crate) async fn fetch(
    req: reqwest::RequestBuilder,
    budget: &Budget,
    resend: Resend,
    size: Size,
) -> Result<Answer, A2aError> {
    budget
        .run(async {
            let again = match resend {
                Resend::IfDropped => req.try_clone(),
                Resend::Never => None,
            };
            match (fetch_once(req, size).await, again) {
                (Err(Fetch::Transport(e)), Some(again)) if dropped(&e) => {
                    tracing::debug!("connection dropped under a request, sending it again: {e}");
                    fetch_once(again, size).await
                }
                (r, _) => r,
            }
            .map_err(|e| match e {
                Fetch::Transport(e) => transport_error(&e, budget),
                Fetch::TooLarge => too_large(),
                Fetch::Unreadable(why) => A2aError::Protocol(why),
            })
        })
        .await
}

enum Fetch {
    Transport(reqwest::Error),
    TooLarge,
    /// A large answer that could not be read as one (not JSON, its text alone over the bound).
    Unreadable(String),
}

/// The connection failed after it was made and before any answer came: what a pooled connection
/// closed by the worker at that moment looks like. Refused connections and our own deadline are
/// not it.
fn dropped(e: &reqwest::Error) -> bool {
    e.is_request() && !e.is_connect() && !e.is_timeout()
}

async fn fetch_once(req: reqwest::RequestBuilder, size: Size) -> Result<Answer, Fetch> {
    let mut resp = req.send().await.map_err(Fetch::Transport)?;
    let status = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, std::time::SystemTime::now()));
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let mut answer = Answer {
        status,
        content_type,
        retry_after,
        location,
        body: Vec::new(),
        big: None,
    };
    if size == Size::Whole && resp.content_length().is_some_and(|n| n > MAX_BODY as u64) {
        return Err(Fetch::TooLarge);
    }
    while let Some(chunk) = resp.chunk().await.map_err(Fetch::Transport)? {
        if answer.body.len() + chunk.len() <= MAX_BODY {
            answer.body.extend_from_slice(&chunk);
            continue;
        }
        if size == Size::Whole {
            return Err(Fetch::TooLarge);
        }
        answer.body.extend_from_slice(&chunk);
        break;
    }
    if answer.body.len() > MAX_BODY {
        // Only an answer that starts as a JSON object is read on: anything else that large is
        // not an A2A answer.
        let first_byte = answer.body.iter().find(|b| !b.is_ascii_whitespace());
        if first_byte != Some(&b'{') {
            return Err(Fetch::TooLarge);
        }
        let first = std::mem::take(&mut answer.body);
        // Boxed: every answer's future would otherwise carry this rare path's state inline, and
        // the poller spawns one a poll (docs/design.md, "A stream costs its bytes").
        answer.big = Some(Box::pin(read_spilling(first, resp)).await?);
    }
    Ok(answer)
}

/// The most of a large answer read: the base64 of `spill::MAX_SPILL` of files and the 4 MiB
/// beside them. Past it the answer is refused, however it goes on.
const MAX_READ: u64 = super::spill::MAX_SPILL / 3 * 4 + MAX_BODY as u64;

/// The rest of a large answer, read as a stream in a blocking thread (`spill::read`) that the
/// body's chunks are handed to as they come, at most a few at a time: memory stays bounded. Cut
/// short (the budget's deadline drops this future), the reader sees the end and stops.
async fn read_spilling(
    first: Vec<u8>,
    mut resp: reqwest::Response,
) -> Result<(serde_json::Value, super::spill::Spills), Fetch> {
    let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(8);
    let reader = tokio::task::spawn_blocking(move || super::spill::read(rx));
    let pump = async move {
        let mut total = first.len() as u64;
        if tx.send(first.into()).await.is_err() {
            return Ok(());
        }
        while let Some(c) = resp.chunk().await.map_err(Fetch::Transport)? {
            total += c.len() as u64;
            if total > MAX_READ {
                return Err(Fetch::Unreadable(format!(
                    "answer larger than {} MiB",
                    MAX_READ >> 20
                )));
            }
            // The reader stopped (the answer is unreadable): its error says why.
            if tx.send(c).await.is_err() {
                break;
            }
        }
        Ok(())
    };
    let (pumped, read) = tokio::join!(pump, reader);
    pumped?;
    match read {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(why)) => Err(Fetch::Unreadable(format!("a large answer: {why}"))),
        Err(_) => Err(Fetch::Unreadable("a large answer could not be read".into())),
    }
}

/// `Retry-After` (RFC 9110 §10.2.3): delay-seconds or an HTTP date, as a wait from `now`. A date
/// in the past is no wait; anything unreadable is as if the header were absent.
pub(crate) fn parse_retry_after(v: &str, now: std::time::SystemTime) -> Option<Duration> {
    let v = v.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        // Longer than any cap a caller applies; saturates instead of failing on huge numbers.
        return Some(Duration::from_secs(v.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(v).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

fn too_large() -> A2aError {
    A2aError::Protocol("answer larger than 4 MiB".into())
}

/// Transport failures by what the poller should make of them: refused, DNS, reset and TLS are
/// "cannot reach"; only our own deadline is a timeout.
pub(crate) fn transport_error(e: &reqwest::Error, budget: &Budget) -> A2aError {
    let target = e
        .url()
        .map(|u| {
            let mut u = u.clone();
            u.set_query(None);
            u.set_fragment(None);
            a2a_mod_config::without_userinfo(&u)
        })
        .unwrap_or_else(|| "the worker".into());
    let cause = a2a_mod_core::text::one_line(&root_cause(e), 160);
    if e.is_connect() {
        A2aError::Unreachable(format!("cannot connect to {target}: {cause}"))
    } else if e.is_timeout() {
        budget.timeout()
    } else if e.is_redirect() {
        A2aError::Protocol(format!("{target} redirects too often"))
    } else if e.is_builder() {
        A2aError::Protocol(format!("cannot build a request for {target}: {cause}"))
    } else {
        A2aError::Unreachable(format!("connection to {target} failed: {cause}"))
    }
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}
