//! serve's connections: the accept loop under a bound on open connections, hyper's HTTP/1 with a
//! header timeout (which also closes a kept-alive connection idle that long), and a send timeout
//! on every socket: a response whose reader takes no bytes for that long is closed (a stream
//! reader that stopped reading, a slow client holding a big answer). Called by [`crate::Serving`].
//!
//! Each request learns the address its client reached ([`Reached`]), which the browser guard
//! (`guard.rs`) takes as one of serve's own names on a wildcard listen.

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tower_service::Service as _;

/// The bounds on connections.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub header_timeout: Duration,
    pub send_timeout: Duration,
}

/// The address the client reached, and its own (a request extension).
#[derive(Debug, Clone, Copy)]
pub struct Reached {
    pub local: SocketAddr,
    pub peer: SocketAddr,
}

/// A socket whose writes fail once they have made no progress for `timeout`.
struct SendTimeout {
    io: TcpStream,
    timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl SendTimeout {
    /// After a write that could not proceed: pending until the timer runs out, then the error.
    fn stall<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let timeout = self.timeout;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client took nothing within the send timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn progress<T>(&mut self, p: Poll<io::Result<T>>, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        match p {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.stall(cx),
        }
    }
}

impl AsyncRead for SendTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for SendTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.io).poll_write(cx, buf);
        self.progress(p, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let p = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.progress(p, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.io).poll_flush(cx);
        self.progress(p, cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let p = Pin::new(&mut self.io).poll_shutdown(cx);
        self.progress(p, cx)
    }
}

/// Accepts and serves connections with `app` until `stop` turns true; then each connection
/// finishes what it is answering (a stream runs to its end) and closes. Returns once all have,
/// or `drain` after the stop.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
    drain: Duration,
) {
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    loop {
        // At the bound, new connections wait in the listen queue until one closes.
        let permit = tokio::select! {
            p = open.clone().acquire_owned() => p.ok(),
            () = stopped(&mut stop) => None,
        };
        let Some(permit) = permit else { break };
        let (tcp, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors or the like: a pause, not a spin.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = stopped(&mut stop) => break,
        };
        let _ = tcp.set_nodelay(true);
        let Ok(local) = tcp.local_addr() else {
            continue;
        };
        let reached = Reached { local, peer };
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(reached);
            let mut app = app.clone();
            async move { app.call(req).await }
        });
        let io = TokioIo::new(SendTimeout {
            io: tcp,
            timeout: limits.send_timeout,
            stalled: None,
        });
        let conn = http.serve_connection(io, service);
        let mut stop = stop.clone();
        tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            let stopping = tokio::select! {
                r = conn.as_mut() => { log_end(r, peer); false }
                () = stopped(&mut stop) => true,
            };
            if stopping {
                conn.as_mut().graceful_shutdown();
                log_end(conn.await, peer);
            }
            drop(permit);
        });
    }
    drop(listener);
    // Every connection hands its permit back when it closes.
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    let closed = open.acquire_many(all);
    if tokio::time::timeout(drain, closed).await.is_err() {
        tracing::info!(
            "connections still open {} s after the stop are cut",
            drain.as_secs()
        );
    }
}

/// Returns once `stop` turns true, or its sender is gone.
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

fn log_end(r: Result<(), hyper::Error>, peer: SocketAddr) {
    if let Err(e) = r {
        tracing::debug!("connection from {peer} closed: {e}");
    }
}
