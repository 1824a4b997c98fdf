//! A webhook of the tests' own: what `serve` POSTs its push notifications to. Records each
//! request (its headers and body) and answers as the test says: up (200), down (503), or holding
//! each request unanswered until told otherwise (a slow webhook, or one mid-delivery when serve is
//! killed). On 127.0.0.1, its own thread and runtime (`fake::Background`).

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How the webhook answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Up,
    /// 503 to each request.
    Down,
    /// Each request waits, unanswered, until the mode changes.
    Hold,
}

/// One request as it came.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub authorization: Option<String>,
    pub token: Option<String>,
    pub content_length: Option<String>,
    pub chunked: bool,
    pub body: Value,
    /// What it was answered: 200, 503, or 0 while (or if ever) held.
    pub answered: u16,
}

struct Shared {
    received: Mutex<Vec<Received>>,
    mode: tokio::sync::watch::Sender<Mode>,
}

pub struct Webhook {
    pub url: String,
    shared: Arc<Shared>,
    _server: super::Background,
}

impl Webhook {
    pub fn start(mode: Mode) -> Webhook {
        let shared = Arc::new(Shared {
            received: Mutex::new(Vec::new()),
            mode: tokio::sync::watch::channel(mode).0,
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let server = super::Background::start("fake-webhook", app);
        Webhook {
            url: format!("http://{}", server.addr),
            shared,
            _server: server,
        }
    }

    pub fn set(&self, mode: Mode) {
        self.shared.mode.send_replace(mode);
    }

    /// Every request so far, in the order they came.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until `pred` holds of the requests so far; panics after `within`.
    pub fn wait_for(
        &self,
        what: &str,
        within: Duration,
        mut pred: impl FnMut(&[Received]) -> bool,
    ) -> Vec<Received> {
        let mut got = Vec::new();
        crate::util::wait_until(what, within, || {
            got = self.received();
            pred(&got)
        });
        got
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |k: &str| Some(headers.get(k)?.to_str().ok()?.to_string());
    let i = {
        let mut all = shared.received.lock().unwrap();
        all.push(Received {
            path: uri.path().to_string(),
            authorization: header("authorization"),
            token: header("x-a2a-notification-token"),
            content_length: header("content-length"),
            chunked: header("transfer-encoding").is_some_and(|t| t.contains("chunked")),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            answered: 0,
        });
        all.len() - 1
    };
    let mut mode = shared.mode.subscribe();
    let _ = mode.wait_for(|m| *m != Mode::Hold).await;
    let status = match *mode.borrow() {
        Mode::Down => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::OK,
    };
    shared.received.lock().unwrap()[i].answered = status.as_u16();
    status
}
