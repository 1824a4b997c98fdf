//! The embedded scripted A2A worker (docs/commands-and-tools.md "The embedded fake worker"): a real A2A agent
//! on 127.0.0.1 speaking v1 and v0.3 JSON-RPC, whose message text is a script (`slow N <words>`,
//! `ask <question>`, `fail <why>`, `reject`, `auth`, `silent`, `parts` (describes the parts it
//! received, `echo.rs`), anything else echoes).
//!
//! Used in process by tests and `a2a-mod demo` ([`FakeWorker::start`]), and as the
//! `a2a-mod fake-worker` command (`src/cmd/fake_worker.rs`). Every request is recorded as a
//! [`RequestEvent`] (and appended as a JSON line to the `log` file) so tests can check what the
//! client did and when.
//!
//! Behaviour worth knowing, beyond docs/commands-and-tools.md:
//! - A non-blocking send (`returnImmediately: true` / `blocking: false`) answers the task in its
//!   first state, `submitted`, like the Python and JS SDKs. A blocking send does not wait either:
//!   it answers the task's state at that instant (`completed` for an echo, `working` for `slow`).
//!   A follow-up on an `ask`/`auth` task answers the task already `completed`, blocking or not
//!   (docs/a2a.md: clients must handle any state in a send response).
//! - `silent`: the send is answered (`submitted`); every GetTask/CancelTask on that task is held
//!   open until the worker stops, then answered HTTP 503. Such requests are recorded with status 0
//!   when they start hanging.
//! - OAuth (`oauth_ttl`): `POST /oauth/token` accepts any client id and secret, sent by HTTP Basic
//!   or in the form body, but refuses a request with neither (401 `invalid_client`).
//!   `expires_in` is the ttl rounded up to whole seconds (at least 1), while the server expires the
//!   token after the exact ttl.
//! - When both a bearer token and OAuth are set, either credential is accepted.
//! - Streaming ([`StreamMode`], off by default so the seed's tests see plain calls): a stream
//!   send answers the task `submitted`, then its artifact in two appended chunks and its status
//!   updates the moment the clock or a follow-up changes them; a subscription starts with the
//!   whole task and is refused (-32004) for an ended one. `subscribe_faults_only` keeps a fault
//!   to subscriptions.

mod echo;
mod script;
mod server;
mod wire;

#[cfg(test)]
mod tests;

pub use script::token_text;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How to run the fake worker. `Default` = OS-chosen port, no auth, hybrid v1 + v0.3, no log.
#[derive(Debug, Clone, Default)]
pub struct FakeWorkerOptions {
    /// Port on 127.0.0.1; `None` lets the OS choose.
    pub port: Option<u16>,
    /// Require `Authorization: Bearer <token>` on every JSON-RPC call (the card stays public).
    pub bearer_token: Option<String>,
    /// Serve a pure v0.3 card, and answer v1 method names with `-32601`.
    pub v03_only: bool,
    /// Issue OAuth2 client-credentials tokens at `/oauth/token` valid this long, and require them.
    pub oauth_ttl: Option<Duration>,
    /// What `expires_in` claims, in seconds (default: `oauth_ttl` rounded up). Longer than the
    /// real ttl = a worker that revokes tokens early.
    pub oauth_claimed_ttl: Option<u64>,
    /// Append one JSON line per request to this file.
    pub log: Option<PathBuf>,
    /// Whether the card offers streaming, and how the stream calls behave.
    pub stream: StreamMode,
    /// `stream`'s fault applies to subscriptions only; streamed sends are served as `On` (tests
    /// of the poller's subscriptions, whose tasks must first be sent and tracked).
    pub subscribe_faults_only: bool,
    /// Cancel a task when the stream of the send that made it closes before it ends (as some
    /// framework servers do).
    pub cancel_on_disconnect: bool,
}

/// The fake worker's streaming: off (the seed's behaviour, the card says
/// `streaming: false`), served, or one of the faults a real worker shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum StreamMode {
    #[default]
    Off,
    /// `SendStreamingMessage` / `message/stream` and `SubscribeToTask` / `tasks/resubscribe`:
    /// the whole task first, then artifact (in two appended chunks) and status updates as they
    /// happen; closed when the task ends or waits.
    On,
    /// The first event, then the stream is closed (the task goes on).
    Drop,
    /// The response starts, and no event ever comes.
    Mute,
    /// The first event, then an event that is not JSON.
    Garbage,
    /// The card claims streaming; the stream calls answer HTTP 404.
    Http404,
    /// The card claims streaming; the stream calls answer JSON-RPC -32004 (unsupported).
    RpcError,
}

/// One request the worker received. Serialized as one JSON line, e.g.
/// `{"at_ms":1764500000123,"since_start_ms":412,"method":"GetTask","task_id":"…","auth":"none","status":200}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestEvent {
    /// When the request arrived, unix milliseconds.
    pub at_ms: i64,
    /// When the request arrived, milliseconds since the worker started (monotonic).
    pub since_start_ms: u64,
    /// The JSON-RPC method as sent (`SendMessage`, `message/send`, `GetTask`, `tasks/get`,
    /// `CancelTask`, `tasks/cancel`, or anything else a client sent), `invalid` for a body without
    /// one, `card` for an agent-card fetch, `token` for an OAuth token request.
    pub method: String,
    /// The task the request was about; for a send, the task it created or resumed.
    pub task_id: Option<String>,
    /// The credential kind the request carried: `bearer`, `basic`, `other` or `none`. Never the
    /// credential itself.
    pub auth: Option<String>,
    /// The HTTP status answered; 0 for a `silent` request that was never answered.
    pub status: u16,
    /// The JSON-RPC error code answered, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_error: Option<i64>,
}

/// A running fake worker. Dropping it stops the server (and releases hung `silent` requests).
pub struct FakeWorker {
    /// The base URL, `http://127.0.0.1:<port>`; the agent card is under it.
    pub url: String,
    shared: Arc<server::Shared>,
    shutdown: watch::Sender<bool>,
    server: Option<JoinHandle<()>>,
}

impl FakeWorker {
    /// Binds 127.0.0.1 and starts serving in the current tokio runtime.
    pub async fn start(opts: FakeWorkerOptions) -> anyhow::Result<FakeWorker> {
        let port = opts.port.unwrap_or(0);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{port}"))?;
        let addr = listener
            .local_addr()
            .context("cannot read the listening address")?;
        let url = format!("http://127.0.0.1:{}", addr.port());
        let log = match &opts.log {
            Some(path) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("cannot open log file \"{}\"", path.display()))?,
            ),
            None => None,
        };
        let (shutdown, shutdown_rx) = watch::channel(false);
        let shared = Arc::new(server::Shared::new(&url, &opts, log, shutdown_rx.clone()));
        let app = server::router(shared.clone());
        let mut signal = shutdown_rx;
        let server = tokio::spawn(async move {
            let stopped = async move {
                // Err = the sender is gone, which also means stop.
                let _ = signal.wait_for(|stop| *stop).await;
            };
            // Serving only ends on shutdown; an accept error is retried inside axum.
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped)
                .await;
        });
        Ok(FakeWorker {
            url,
            shared,
            shutdown,
            server: Some(server),
        })
    }

    /// How many `flood` updates its streams have sent.
    pub fn flooded(&self) -> usize {
        self.shared.flooded()
    }

    /// Every request received so far, in order.
    pub fn events(&self) -> Vec<RequestEvent> {
        self.shared.events()
    }

    /// Stops serving: hung `silent` requests are released, open connections closed. Waits up to
    /// two seconds for a graceful end, then aborts.
    pub async fn stop(mut self) {
        self.shutdown.send_replace(true);
        if let Some(mut server) = self.server.take()
            && tokio::time::timeout(Duration::from_secs(2), &mut server)
                .await
                .is_err()
        {
            server.abort();
        }
    }
}

impl Drop for FakeWorker {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}
