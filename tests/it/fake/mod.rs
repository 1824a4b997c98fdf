//! In-process fakes the integration tests run against: real servers on 127.0.0.1:0 that stop on
//! drop. `model_api` stands in for the Anthropic Messages API behind the real Claude Code CLI;
//! `webhook` is where serve POSTs its push notifications; `npm_registry` serves our npm packages.

pub mod model_api;
pub mod npm_registry;
pub mod webhook;

/// An axum app served on 127.0.0.1 (an OS-picked port) from a thread and runtime of its own, so
/// plain `#[test]` functions can use it; stopped on drop. Dropping the runtime cancels requests
/// in flight (slow streams, held requests) too: a graceful shutdown would wait for clients'
/// keep-alive connections.
pub struct Background {
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    pub fn start(name: &str, app: axum::Router) -> Background {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a fake");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("local addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a fake's runtime");
                rt.block_on(async move {
                    let listener =
                        tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                    tokio::select! {
                        r = axum::serve(listener, app) => r.expect("a fake's server"),
                        _ = stopped => {}
                    }
                });
            })
            .expect("spawn a fake");
        Background {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
