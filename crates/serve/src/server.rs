//! A server bound and running: the routes behind the guard on the accept loop, the webhook
//! deliveries beside them, and how both stop.

use crate::{conn, deliver, engine, guard, http, push, stream};
use anyhow::{Context as _, Result};
use std::net::SocketAddr;
use std::sync::Arc;

/// This machine's host name (`localhost` when it has none that fits a URL).
fn host_name() -> String {
    a2a_mod_os::env::host_name()
        .filter(|name| {
            !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-'))
        })
        .unwrap_or_else(|| "localhost".into())
}

/// How a server is reached and bounded (`[serve]` of config.toml).
#[derive(Debug, Clone)]
pub struct Options {
    pub max_body: usize,
    /// Host names a request may name besides serve's own (`guard.rs`).
    pub allowed_hosts: Vec<String>,
    /// Web origins allowed to call.
    pub allowed_origins: Vec<String>,
    pub conn: conn::Limits,
    pub max_streams_per_task: usize,
    pub max_streams: usize,
    /// Webhooks may be on loopback, private and link-local addresses (`push.rs`).
    pub push_allow_private: bool,
}

/// A server bound and running until [`Serving::stop`] (or its drop).
pub struct Serving {
    pub addr: SocketAddr,
    pub server: Arc<http::Server>,
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    pusher: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Binds `listener` and serves. The cards name the server by the bound address, or the
    /// machine's name when every address is bound.
    pub async fn start(
        listener: tokio::net::TcpListener,
        engine: Arc<engine::Engine>,
        agents: Vec<Arc<engine::Agent>>,
        tokens: Vec<http::Token>,
        options: Options,
    ) -> Result<Serving> {
        let addr = listener.local_addr().context("serve: no local address")?;
        let machine = host_name();
        // Bound to every address: the machine's name, which other machines can use.
        let origin = if addr.ip().is_unspecified() {
            format!("http://{machine}:{}", addr.port())
        } else {
            format!("http://{addr}")
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let push = push::Policy::new(addr, &machine, options.push_allow_private);
        let pusher = deliver::Pusher::start(engine.clone(), push.clone(), stopped.clone());
        let server = Arc::new(http::Server {
            engine,
            push,
            agents,
            tokens,
            origin,
            started: httpdate::fmt_http_date(std::time::SystemTime::now()),
            max_body: options.max_body,
            body_stall: options.conn.header_timeout,
            guard: guard::Guard::new(
                addr,
                &machine,
                &options.allowed_hosts,
                &options.allowed_origins,
            ),
            streams: Arc::new(stream::Streams::new(
                options.max_streams_per_task,
                options.max_streams,
            )),
        });
        let app = http::router(server.clone());
        let task = tokio::spawn(conn::serve(listener, app, options.conn, stopped, DRAIN));
        Ok(Serving {
            addr,
            server,
            stop,
            task,
            pusher,
        })
    }

    /// Stops accepting; each open connection finishes what it is answering (within [`DRAIN`])
    /// and closes. Webhook deliveries stop too: what is left is sent after a restart.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
        let _ = self.pusher.await;
    }
}

/// How long connections get to finish their answers once the server stops.
pub const DRAIN: std::time::Duration = std::time::Duration::from_secs(5);
