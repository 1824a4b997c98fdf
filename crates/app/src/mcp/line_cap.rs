//! The MCP server's stdin, with a cap on one request line that answers instead of going silent.
//!
//! rmcp's stdio transport drops a line longer than its limit (16 MiB) with a log line and reads
//! on, so the request is never answered and Claude Code waits for its tool timeout (by default
//! 1e8 ms). [`LineCap`] sits between stdin and rmcp: it passes lines through unchanged, and one
//! that outgrows [`LIMIT`] is cut (rmcp is handed `\0\n`, which ends the cut line as unparsable
//! input, which rmcp ignores) and read to its end without being kept, while a small scanner notes
//! its top-level `"id"`. In its place rmcp then reads a one-line request for
//! [`TOO_LONG_METHOD`] with that id, which the server answers with a JSON-RPC error saying what to
//! do: the call fails at once and the connection stays up for the next one. (Closing the
//! connection would also end the wait, but would take every a2a tool away for the rest of the
//! session.) A line with no id is a notification: nobody waits for it, so it is dropped, logged.
//!
//! The scan is O(1) in memory and runs over every byte, since the id of a request sent by Claude
//! Code comes last (the TypeScript SDK writes `{...request, jsonrpc, id}`), after the params.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// The longest request line accepted, newline excluded: rmcp's own default, so what was accepted
/// before still is. rmcp is given two bytes more, so it never drops a line itself.
pub const LIMIT: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// The method of the stand-in request for a line cut at [`LIMIT`]; `params` carry `bytes` (the
/// line's length) and `limit`.
pub const TOO_LONG_METHOD: &str = "a2a-mod/request-too-long";

/// An id longer than this is not one a client sends; the line is treated as having none.
const MAX_ID: usize = 256;

/// Bytes read from stdin at a time. Small on purpose: the buffer is zeroed before the first
/// request, on the path of the `initialize` reply, and 64 KiB of it cost page faults there
/// (benches/mcp_start.rs); a long request simply takes more reads.
const READ_CHUNK: usize = 16 * 1024;

pub struct LineCap<R> {
    inner: R,
    limit: usize,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
    /// Bytes of the current line so far, newline excluded.
    line: usize,
    scan: IdScan,
    /// The current line is over the limit: read on to its newline, handing nothing to rmcp.
    discarding: bool,
    /// Bytes to hand out before any more input: the cut line's end and the stand-in request.
    out: VecDeque<u8>,
}

impl<R> LineCap<R> {
    pub fn new(inner: R) -> LineCap<R> {
        LineCap::with_limit(inner, LIMIT)
    }

    pub fn with_limit(inner: R, limit: usize) -> LineCap<R> {
        LineCap {
            inner,
            limit,
            buf: vec![0; READ_CHUNK].into_boxed_slice(),
            pos: 0,
            len: 0,
            line: 0,
            scan: IdScan::default(),
            discarding: false,
            out: VecDeque::new(),
        }
    }

    /// Moves buffered input to `dst` (or past it, when discarding) up to a line's end, the limit,
    /// or the room in `dst`.
    fn process(&mut self, dst: &mut ReadBuf<'_>) {
        let rest = &self.buf[self.pos..self.len];
        let newline = rest.iter().position(|b| *b == b'\n');
        if self.discarding {
            let take = newline.map_or(rest.len(), |i| i + 1);
            for &b in &rest[..newline.unwrap_or(take)] {
                self.scan.feed(b);
            }
            self.line += newline.unwrap_or(take);
            self.pos += take;
            if newline.is_some() {
                self.finish_cut();
            }
            return;
        }
        let room = rest.len().min(dst.remaining());
        let take = newline.filter(|i| *i < room).map_or(room, |i| i + 1);
        let content = if newline.is_some_and(|i| i < room) {
            take - 1
        } else {
            take
        };
        if self.line + content > self.limit {
            let allowed = self.limit - self.line;
            for &b in &rest[..allowed] {
                self.scan.feed(b);
            }
            dst.put_slice(&rest[..allowed]);
            self.pos += allowed;
            self.line += allowed;
            self.discarding = true;
            self.out.extend(b"\0\n");
            return;
        }
        for &b in &rest[..take] {
            self.scan.feed(b);
        }
        dst.put_slice(&rest[..take]);
        self.pos += take;
        if content < take {
            self.line = 0;
            self.scan = IdScan::default();
        } else {
            self.line += take;
        }
    }

    /// The cut line has ended: queue the stand-in request (or log the drop) and start afresh.
    fn finish_cut(&mut self) {
        match self.scan.id() {
            Some(id) => {
                tracing::warn!(
                    "mcp: request {id} is {} bytes, over the {}-byte limit of one message: \
                     answered with an error",
                    self.line,
                    self.limit
                );
                let stand_in = serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "method": TOO_LONG_METHOD,
                    "params": {"bytes": self.line, "limit": self.limit},
                });
                self.out.extend(stand_in.to_string().as_bytes());
                self.out.push_back(b'\n');
            }
            None => tracing::warn!(
                "mcp: dropped a message of {} bytes, over the {}-byte limit of one message, \
                 with no id to answer",
                self.line,
                self.limit
            ),
        }
        self.line = 0;
        self.scan = IdScan::default();
        self.discarding = false;
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        dst: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let start = dst.filled().len();
        loop {
            while dst.remaining() > 0 && !this.out.is_empty() {
                let (front, _) = this.out.as_slices();
                let n = front.len().min(dst.remaining());
                dst.put_slice(&front[..n]);
                this.out.drain(..n);
            }
            if dst.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            if this.pos < this.len {
                this.process(dst);
                continue;
            }
            if dst.filled().len() > start {
                return Poll::Ready(Ok(()));
            }
            let mut rb = ReadBuf::new(&mut this.buf);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut rb))?;
            let n = rb.filled().len();
            if n == 0 {
                // EOF. An unterminated over-long tail is dropped, as rmcp drops any unterminated
                // last line.
                return Poll::Ready(Ok(()));
            }
            this.pos = 0;
            this.len = n;
        }
    }
}

/// Finds the top-level `"id"` of one JSON text fed a byte at a time, keeping only the id's bytes.
/// Keys written with escapes are not recognised (no client writes `"\u0069d"`).
#[derive(Default)]
struct IdScan {
    depth: u32,
    in_string: bool,
    escape: bool,
    /// At depth 1 of an object, the next string is a key.
    expect_key: bool,
    reading_key: bool,
    /// The key read so far, while it can still be `id`.
    key: Vec<u8>,
    key_is_id: bool,
    capture: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    gave_up: bool,
}

impl IdScan {
    fn feed(&mut self, b: u8) {
        if self.in_string {
            if let Some(c) = &mut self.capture {
                c.push(b);
            }
            if self.escape {
                self.escape = false;
                self.key.push(0);
            } else if b == b'\\' {
                self.escape = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.key_is_id = self.key == b"id";
                }
            } else if self.reading_key && self.key.len() <= 2 {
                self.key.push(b);
            }
            self.bound();
            return;
        }
        if self.capture.is_some() {
            if self.depth == 1 && matches!(b, b',' | b'}') {
                self.id = self.capture.take();
            } else if let Some(c) = &mut self.capture {
                c.push(b);
            }
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.reading_key = true;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                self.expect_key = self.depth == 1 && b == b'{';
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b':' if self.depth == 1 => {
                let after_id = std::mem::take(&mut self.key_is_id);
                if after_id && self.id.is_none() && !self.gave_up {
                    self.capture = Some(Vec::new());
                }
            }
            b',' if self.depth == 1 => self.expect_key = true,
            _ => {}
        }
        self.bound();
    }

    fn bound(&mut self) {
        if self.capture.as_ref().is_some_and(|c| c.len() > MAX_ID) {
            self.capture = None;
            self.gave_up = true;
        }
    }

    /// The id, if the line had a usable one (a number or a string).
    fn id(&self) -> Option<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(self.id.as_deref()?).ok()?;
        (v.is_number() || v.is_string()).then_some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn id_of(line: &str) -> Option<serde_json::Value> {
        let mut s = IdScan::default();
        line.bytes().for_each(|b| s.feed(b));
        s.id()
    }

    #[test]
    fn finds_the_top_level_id_wherever_it_is() {
        assert_eq!(
            id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#),
            Some(7.into())
        );
        assert_eq!(
            id_of(
                r#"{"method":"x","params":{"id":1,"a":["}",{"id":2}]},"jsonrpc":"2.0","id":"a\"b"}"#
            ),
            Some("a\"b".into())
        );
        assert_eq!(id_of(r#"{ "id" : 12 }"#), Some(12.into()));
        assert_eq!(
            id_of(r#"{"method":"notifications/x","params":{"id":3}}"#),
            None
        );
        assert_eq!(id_of(r#"{"idx":1,"xid":2}"#), None);
        assert_eq!(id_of(r#"{"id":{"nested":1}}"#), None);
        assert_eq!(id_of(&format!(r#"{{"id":"{}"}}"#, "x".repeat(300))), None);
        assert_eq!(id_of(r#"[{"id":1}]"#), None);
    }

    async fn through(input: &[u8], limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        LineCap::with_limit(input, limit)
            .read_to_end(&mut out)
            .await
            .unwrap();
        out
    }

    #[tokio::test]
    async fn short_lines_pass_unchanged_and_a_long_one_becomes_a_stand_in() {
        let ok = b"{\"id\":1}\n{\"id\":2}\n";
        assert_eq!(through(ok, 8).await, ok);
        let long = format!(
            "{{\"id\":1}}\n{{\"method\":\"m\",\"params\":\"{}\",\"id\":9}}\n{{\"id\":3}}\n",
            "x".repeat(100)
        );
        let out = String::from_utf8(through(long.as_bytes(), 32).await).unwrap();
        let lines: Vec<&str> = out.split('\n').collect();
        assert_eq!(lines[0], "{\"id\":1}");
        assert!(lines[1].ends_with('\0') && lines[1].len() == 33, "{out:?}");
        let stand_in: serde_json::Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(stand_in["id"], 9);
        assert_eq!(stand_in["method"], TOO_LONG_METHOD);
        assert_eq!(
            stand_in["params"]["bytes"],
            long.lines().nth(1).unwrap().len()
        );
        assert_eq!(lines[3], "{\"id\":3}");
        // A line exactly at the limit is kept.
        let exact = format!("{{\"id\":\"{}\"}}\n", "y".repeat(23));
        assert_eq!(through(exact.as_bytes(), 32).await, exact.as_bytes());
    }
}
