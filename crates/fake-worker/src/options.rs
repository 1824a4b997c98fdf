//! What a fake worker is asked to be ([`FakeWorkerOptions`], [`StreamMode`]) and what it records
//! of each request ([`RequestEvent`]).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

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
