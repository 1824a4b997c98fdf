//! `a2a-mod serve`: this machine as an A2A worker whose tasks are headless Claude Code runs.
//!
//! - [`http`]: the routes (JSON-RPC, HTTP+JSON, SSE, the cards), the token check, the body bound;
//! - [`wire`]: the A2A JSON in its four forms, pure;
//! - [`engine`]: the tasks, the queue, the [`engine::Executor`] trait, the store;
//! - [`task`]: a task and what a run reports, pure;
//! - [`inbox`]: the files a message brings, written where the run finds them; [`changes`], what
//!   a run changed in a git work tree, as a patch;
//! - [`claude`]: the Claude Code executor; `exec.rs`, an agent's own command in its place;
//!   [`ask`], its permission prompts and questions as the client's `input-required`.

pub mod ask;
pub mod changes;
pub mod claude;
pub mod engine;
mod exec;
pub mod http;
pub mod inbox;
mod process;
pub mod task;
pub mod wire;

use anyhow::{Context as _, Result};
use std::net::SocketAddr;
use std::sync::Arc;

/// This machine's host name (`localhost` when it has none that fits a URL).
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `buf.len()` bytes into the buffer we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    let name = std::str::from_utf8(&buf[..end]).unwrap_or_default();
    if rc == 0
        && !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
    {
        name.to_string()
    } else {
        "localhost".into()
    }
}

/// A server bound and running until [`Serving::stop`] (or its drop).
pub struct Serving {
    pub addr: SocketAddr,
    pub server: Arc<http::Server>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Binds `listener` and serves. `origin_host` is how the cards name the server (the bound
    /// address unless a wildcard was bound).
    pub async fn start(
        listener: tokio::net::TcpListener,
        engine: Arc<engine::Engine>,
        agents: Vec<Arc<engine::Agent>>,
        tokens: Vec<http::Token>,
        max_body: usize,
    ) -> Result<Serving> {
        let addr = listener.local_addr().context("serve: no local address")?;
        // Bound to every address: the machine's name, which other machines can use.
        let origin = if addr.ip().is_unspecified() {
            format!("http://{}:{}", host_name(), addr.port())
        } else {
            format!("http://{addr}")
        };
        let server = Arc::new(http::Server {
            engine,
            agents,
            tokens,
            origin,
            max_body,
        });
        let app = http::router(server.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stopped.await;
            });
            if let Err(e) = serving.await {
                tracing::error!("serve: {e}");
            }
        });
        Ok(Serving {
            addr,
            server,
            stop: Some(stop),
            task,
        })
    }

    /// Stops accepting; open streams end with the process.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.task.abort();
        let _ = (&mut self.task).await;
    }
}
