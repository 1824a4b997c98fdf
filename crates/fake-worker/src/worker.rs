//! [`FakeWorker`]: a running fake worker, started in process and stopped when dropped.

use crate::options::{FakeWorkerOptions, RequestEvent};
use crate::server;
use anyhow::Context as _;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

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
