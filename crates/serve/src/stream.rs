//! A task's events as Server-Sent Events, for a streaming send and SubscribeToTask: the task as
//! it is, then each change to its end (or its question). Called by [`crate::http`].
//!
//! Every reader reads the task's one event log ([`Live`]): nothing is copied per reader but its
//! place in the log and the few bytes of its own frames. The first event, the task with its
//! answer so far, is written around the answer's shared JSON blocks, so a late reader of a
//! 4 MiB answer holds references to it, not a copy. A reader is pulled from, never pushed to:
//! one that stops reading stops costing, and the connection's send timeout (`conn.rs`) closes
//! it; the run never waits for it. Readers are bounded per task and in all.

use crate::engine::Live;
use crate::wire::{self, A2aError, Wire};
use axum::body::Body;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse as _, Response};
use bytes::Bytes;
use serde_json::Value;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// A comment line this often keeps a quiet stream's proxies from closing it.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The bounds on open streams, and the count of them.
pub struct Streams {
    per_task: usize,
    all: usize,
    open: AtomicUsize,
}

/// One open stream: counted while it lives.
pub struct Reader {
    streams: Arc<Streams>,
    live: Arc<Live>,
    /// The stream of the send that made the task (else a subscription).
    first: bool,
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.live.readers.fetch_sub(1, Ordering::SeqCst);
        self.streams.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Adds one to `n` unless it is at `max`.
fn take(n: &AtomicUsize, max: usize) -> bool {
    n.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
        (v < max).then_some(v + 1)
    })
    .is_ok()
}

impl Streams {
    pub fn new(per_task: usize, all: usize) -> Streams {
        Streams {
            per_task,
            all,
            open: AtomicUsize::new(0),
        }
    }

    fn all_taken(&self) -> A2aError {
        A2aError::new(
            crate::engine::SERVER_BUSY,
            format!(
                "Too many streams: the server has {} open (serve.max_streams) — poll GetTask instead, or stream later",
                self.all
            ),
        )
    }

    /// A place among the open streams, held until it becomes a task's reader (or is dropped):
    /// a streaming send takes it before it makes its task, so a task is never made for a
    /// stream that cannot open.
    pub fn reserve(self: &Arc<Self>) -> Result<Ticket, A2aError> {
        if !take(&self.open, self.all) {
            return Err(self.all_taken());
        }
        Ok(Ticket {
            streams: self.clone(),
            held: true,
        })
    }
}

/// A place among the open streams, not yet a task's.
pub struct Ticket {
    streams: Arc<Streams>,
    /// Still this ticket's to give back (not yet a reader's).
    held: bool,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.held {
            self.streams.open.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Ticket {
    /// The place as a reader of `live`, unless the task has all the readers it may; `first`, the
    /// stream of the send that made the task, always fits.
    pub fn reader(mut self, live: &Arc<Live>, first: bool) -> Result<Reader, A2aError> {
        let per_task = self.streams.per_task;
        if first {
            live.readers.fetch_add(1, Ordering::SeqCst);
        } else if !take(&live.readers, per_task) {
            return Err(A2aError::new(
                crate::engine::SERVER_BUSY,
                format!(
                    "Too many streams: this task has {per_task} readers (serve.max_streams_per_task) — poll GetTask instead, or stream later"
                ),
            ));
        }
        self.held = false;
        Ok(Reader {
            streams: self.streams.clone(),
            live: live.clone(),
            first,
        })
    }
}

/// What is left to write before the next events.
enum Piece {
    Bytes(Bytes),
    /// Blocks of the answer's shared JSON, from the first to the end.
    Blocks(usize, usize),
}

struct State {
    reader: Reader,
    w: Wire,
    rpc_id: Option<Value>,
    rx: tokio::sync::watch::Receiver<usize>,
    from: usize,
    queue: VecDeque<Piece>,
    done: bool,
}

/// The stand-in for the answer while the first event is serialized: the text that replaces it
/// is the answer's shared JSON. A client cannot guess it, so no text of theirs is taken for it.
fn marker() -> &'static str {
    static MARKER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARKER.get_or_init(|| format!("\u{1}{}\u{1}", a2a_mod_os::ids::uuid_v4()))
}

/// `data: <json>\n\n`, the JSON wrapped as the JSON-RPC result of `rpc_id` when there is one.
fn frame(v: Value, rpc_id: Option<&Value>) -> String {
    let v = match rpc_id {
        Some(id) => wire::rpc_result(id, v),
        None => v,
    };
    format!("data: {v}\n\n")
}

/// The SSE response for `reader`'s task.
pub fn response(reader: Reader, w: Wire, rpc_id: Option<Value>) -> Response {
    let start = reader.live.start();
    let mut task = start.task;
    if start.has_answer {
        task.answer = marker().to_string();
    }
    // A send's stream ends where the task ends or waits; a subscription to a task that waits
    // for an answer goes on through the answer (it asked to follow the task on from there).
    let done = if reader.first {
        !task.state.is_live()
    } else {
        !crate::task::running(task.state)
    };
    let head = frame(
        wire::send_result(w, wire::task(w, &task, Some(0))),
        rpc_id.as_ref(),
    );
    let mut queue = VecDeque::new();
    let quoted = serde_json::to_string(marker()).unwrap_or_default();
    let escaped = quoted.get(1..quoted.len() - 1).unwrap_or_default();
    match head.split_once(escaped).filter(|_| start.has_answer) {
        Some((before, after)) => {
            queue.push_back(Piece::Bytes(Bytes::from(before.to_string())));
            queue.push_back(Piece::Blocks(0, start.blocks));
            queue.push_back(Piece::Bytes(start.tail));
            queue.push_back(Piece::Bytes(Bytes::from(after.to_string())));
        }
        None => queue.push_back(Piece::Bytes(Bytes::from(head))),
    }
    let state = State {
        reader,
        w,
        rpc_id,
        rx: start.rx,
        from: start.from,
        queue,
        done,
    };
    let body = futures::stream::unfold(state, next);
    let mut r = Body::from_stream(body).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

/// The next bytes to write: what is queued, else the next events once there are some.
async fn next(mut st: State) -> Option<(Result<Bytes, Infallible>, State)> {
    loop {
        match st.queue.pop_front() {
            Some(Piece::Bytes(b)) if b.is_empty() => continue,
            Some(Piece::Bytes(b)) => return Some((Ok(b), st)),
            Some(Piece::Blocks(i, end)) if i < end => {
                let b = st.reader.live.answer_block(i)?;
                st.queue.push_front(Piece::Blocks(i + 1, end));
                return Some((Ok(b), st));
            }
            Some(Piece::Blocks(..)) => continue,
            None if st.done => return None,
            None => {}
        }
        let from = st.from;
        let news = tokio::select! {
            // Err: the task has left the engine (the server stops); end the stream.
            r = st.rx.wait_for(|n| *n > from) => { r.ok()?; true }
            () = tokio::time::sleep(KEEP_ALIVE) => false,
        };
        if !news {
            return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), st));
        }
        let (events, t) = st.reader.live.since(from);
        st.from += events.len();
        let mut out = String::new();
        for e in &events {
            out.push_str(&frame(wire::update(st.w, &t, e), st.rpc_id.as_ref()));
            if !e.state.is_live() {
                st.done = true;
                break;
            }
        }
        st.queue.push_back(Piece::Bytes(Bytes::from(out)));
    }
}
