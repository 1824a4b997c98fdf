//! Answers over the 4 MiB an answer is read whole up to: a GetTask or send answer carrying a large
//! file part. Read as a stream (`struson`, in a blocking thread the body is fed to chunk by chunk),
//! each file part's bytes (v1 `raw`, v0.3 `file.bytes`, REST `fileWithBytes`) decoded from base64
//! into a file of its own as they arrive, and the rest kept as JSON, bounded like any answer. So
//! memory stays bounded however large the answer, and a part too large to keep is read past and
//! said so while the rest of the answer still arrives.
//!
//! In the JSON a spilled part's string becomes a marker that names the spill by its index and
//! carries a secret drawn once per process, so a worker cannot forge one: a worker's string that
//! looks like a marker is read as the base64 it claims to be. The spilled bytes live in unlinked
//! temporary files (no path, gone with the last handle), handed to the saving with the task
//! ([`Spills`]).

use serde_json::{Map, Value};
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt as _;
use std::sync::{Arc, OnceLock};

/// Decoded bytes kept from one answer's file parts, in all: a part past it is read past.
pub(crate) const MAX_SPILL: u64 = 1 << 30;
/// A file part's base64 shorter than this stays in the JSON, as every answer under 4 MiB has it.
const SPILL_AT: usize = 64 * 1024;
/// The JSON kept beside the spilled parts is bounded like a whole answer.
const MAX_KEPT: usize = a2a_mod_core::bounds::WIRE_BODY_BYTES;
/// Nesting past this is not an A2A answer (and would deepen the reader's recursion).
const MAX_DEPTH: usize = 64;

/// The spilled file parts of one answer. Cheap to clone: the files are shared; none (every
/// answer under 4 MiB, so every poll's) allocates nothing.
#[derive(Debug, Clone, Default)]
pub struct Spills(Option<Arc<Vec<std::fs::File>>>);

impl PartialEq for Spills {
    /// The same answer's spills (none are equal to none).
    fn eq(&self, other: &Spills) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Spills {
    /// The decoded bytes of spilled part `index`, from the start.
    pub fn reader(&self, index: usize) -> Option<impl Read + '_> {
        let file = self.0.as_ref()?.get(index)?;
        Some(At { file, pos: 0 })
    }
}

/// A reader over a shared file at its own position (`pread`), so two readers never move each
/// other.
struct At<'a> {
    file: &'a std::fs::File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// What a marker says of a spilled part.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Spilled {
    /// The part's index in [`Spills`], or why it was not kept.
    pub index: Result<usize, String>,
    /// Its decoded bytes, counted as they went by.
    pub bytes: u64,
}

fn secret() -> &'static str {
    static SECRET: OnceLock<String> = OnceLock::new();
    SECRET.get_or_init(a2a_mod_os::ids::uuid_v4)
}

const MARK: &str = "\u{0}a2a-mod-spill:";

fn marker(s: &Spilled) -> String {
    match &s.index {
        Ok(i) => format!("{MARK}{}:{}:{i}", secret(), s.bytes),
        Err(why) => format!("{MARK}{}:{}:-{why}", secret(), s.bytes),
    }
}

/// The spilled part a string stands for, if it is one of this process's markers.
pub(crate) fn spilled(s: &str) -> Option<Spilled> {
    let rest = s
        .strip_prefix(MARK)?
        .strip_prefix(secret())?
        .strip_prefix(':')?;
    let (bytes, what) = rest.split_once(':')?;
    let bytes = bytes.parse().ok()?;
    let index = match what.strip_prefix('-') {
        Some(why) => Err(why.to_string()),
        None => Ok(what.parse().ok()?),
    };
    Some(Spilled { index, bytes })
}

/// Reads an answer from its chunks (`rx`, the first of them already read), its file parts
/// spilled. Blocking: run it off the runtime.
pub(crate) fn read(
    rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
) -> Result<(Value, Spills), String> {
    use struson::reader::JsonReader as _;
    let mut reader = struson::reader::JsonStreamReader::new(Chunks {
        rx,
        cur: bytes::Bytes::new(),
    });
    let mut t = Transcoder {
        files: Vec::new(),
        kept: 0,
        spilled: 0,
    };
    let v = t.value(&mut reader, None, 0)?;
    reader
        .consume_trailing_whitespace()
        .map_err(|e| format!("not JSON after the answer: {e}"))?;
    let spills = (!t.files.is_empty()).then(|| Arc::new(t.files));
    Ok((v, Spills(spills)))
}

/// The body's chunks as a blocking reader; the sender's end (the body read, or its deadline) is
/// the end of the data.
struct Chunks {
    rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    cur: bytes::Bytes,
}

impl Read for Chunks {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.cur.is_empty() {
            match self.rx.blocking_recv() {
                Some(c) => self.cur = c,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len());
        buf[..n].copy_from_slice(&self.cur[..n]);
        bytes::Buf::advance(&mut self.cur, n);
        Ok(n)
    }
}

struct Transcoder {
    files: Vec<std::fs::File>,
    /// Bytes of the JSON kept in memory (names and strings).
    kept: usize,
    /// Decoded bytes spilled so far.
    spilled: u64,
}

type Json = struson::reader::JsonStreamReader<Chunks>;

impl Transcoder {
    fn keep(&mut self, n: usize) -> Result<(), String> {
        self.kept = self.kept.saturating_add(n);
        if self.kept > MAX_KEPT {
            return Err("answer larger than 4 MiB without its file parts".into());
        }
        Ok(())
    }

    fn value(&mut self, j: &mut Json, key: Option<&str>, depth: usize) -> Result<Value, String> {
        use struson::reader::{JsonReader as _, ValueType};
        let bad = |e: struson::reader::ReaderError| format!("not JSON: {e}");
        if depth > MAX_DEPTH {
            return Err("an answer nested too deep".into());
        }
        Ok(match j.peek().map_err(bad)? {
            ValueType::Object => {
                j.begin_object().map_err(bad)?;
                let mut m = Map::new();
                while j.has_next().map_err(bad)? {
                    let name = j.next_name_owned().map_err(bad)?;
                    self.keep(name.len())?;
                    let v = self.value(j, Some(&name), depth + 1)?;
                    m.insert(name, v);
                }
                j.end_object().map_err(bad)?;
                Value::Object(m)
            }
            ValueType::Array => {
                j.begin_array().map_err(bad)?;
                let mut a = Vec::new();
                while j.has_next().map_err(bad)? {
                    a.push(self.value(j, None, depth + 1)?);
                }
                j.end_array().map_err(bad)?;
                Value::Array(a)
            }
            ValueType::String if matches!(key, Some("raw" | "bytes" | "fileWithBytes")) => {
                self.file_bytes(j)?
            }
            ValueType::String => {
                // Read within what is left of the bound, never a whole string first.
                let room = MAX_KEPT.saturating_sub(self.kept) as u64;
                let mut s = String::new();
                let r = j.next_string_reader().map_err(bad)?;
                r.take(room + 1)
                    .read_to_string(&mut s)
                    .map_err(|e| format!("not JSON: {e}"))?;
                self.keep(s.len())?;
                Value::String(s)
            }
            ValueType::Number => {
                let n = j.next_number_as_string().map_err(bad)?;
                serde_json::from_str(&n).map_err(|e| format!("not JSON: {e}"))?
            }
            ValueType::Boolean => Value::Bool(j.next_bool().map_err(bad)?),
            ValueType::Null => {
                j.next_null().map_err(bad)?;
                Value::Null
            }
        })
    }

    /// A file part's base64: kept as it is when short, else decoded into a file of its own (or,
    /// past [`MAX_SPILL`] or not base64, read past and counted) and replaced by a marker.
    fn file_bytes(&mut self, j: &mut Json) -> Result<Value, String> {
        use struson::reader::JsonReader as _;
        let mut r = j
            .next_string_reader()
            .map_err(|e| format!("not JSON: {e}"))?;
        let mut head = Vec::new();
        (&mut r)
            .take(SPILL_AT as u64)
            .read_to_end(&mut head)
            .map_err(|e| format!("not JSON: {e}"))?;
        if head.len() < SPILL_AT {
            self.keep(head.len())?;
            return Ok(Value::String(String::from_utf8_lossy(&head).into_owned()));
        }
        // Standard or URL-safe alphabet (as the whole-answer path reads them), padded or not,
        // line breaks allowed: the alphabet told by the first 64 KiB.
        let url_safe = head.iter().any(|b| *b == b'-' || *b == b'_');
        let engine = base64::engine::GeneralPurpose::new(
            if url_safe {
                &base64::alphabet::URL_SAFE
            } else {
                &base64::alphabet::STANDARD
            },
            base64::engine::GeneralPurposeConfig::new()
                .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
        );
        let text = Plain {
            inner: std::io::Cursor::new(head).chain(&mut r),
        };
        let mut decoded = base64::read::DecoderReader::new(text, &engine);
        let room = MAX_SPILL.saturating_sub(self.spilled);
        let file = tempfile::tempfile().map_err(|e| format!("cannot keep a file part: {e}"))?;
        let mut out = BufWriter::new(&file);
        let copied = std::io::copy(&mut (&mut decoded).take(room + 1), &mut out);
        let flushed = out.flush();
        drop(out);
        let spilled = match (copied, flushed) {
            (Ok(n), Ok(())) if n <= room => {
                self.spilled += n;
                self.files.push(file);
                Spilled {
                    index: Ok(self.files.len() - 1),
                    bytes: n,
                }
            }
            (Ok(n), Ok(())) => {
                // Past the bound: the rest is read and counted, not kept.
                let rest = std::io::copy(&mut decoded, &mut std::io::sink()).unwrap_or(0);
                Spilled {
                    index: Err(format!(
                        "larger than the {} MiB an answer's files are read up to",
                        MAX_SPILL >> 20
                    )),
                    bytes: n + rest,
                }
            }
            (Err(_), _) | (_, Err(_)) => Spilled {
                index: Err("its bytes are not base64".into()),
                bytes: 0,
            },
        };
        drop(decoded);
        // The string must be read to its end before the next value.
        std::io::copy(&mut r, &mut std::io::sink()).map_err(|e| format!("not JSON: {e}"))?;
        let m = marker(&spilled);
        self.keep(m.len())?;
        Ok(Value::String(m))
    }
}

/// Base64 text without the line breaks and spaces some encoders put in it.
struct Plain<R> {
    inner: R,
}

impl<R: Read> Read for Plain<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            let mut kept = 0;
            for i in 0..n {
                if !buf[i].is_ascii_whitespace() {
                    buf[kept] = buf[i];
                    kept += 1;
                }
            }
            if kept > 0 {
                return Ok(kept);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn read_all(json: Vec<u8>) -> Result<(Value, Spills), String> {
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let feeder = std::thread::spawn(move || {
            for c in json.chunks(7777) {
                if tx.blocking_send(bytes::Bytes::copy_from_slice(c)).is_err() {
                    return;
                }
            }
        });
        let r = read(rx);
        feeder.join().unwrap();
        r
    }

    #[test]
    fn a_large_file_part_is_spilled_and_the_rest_kept() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 31 % 251) as u8).collect();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
        let json = serde_json::json!({"result": {"task": {"id": "t", "artifacts": [
            {"artifactId": "a", "parts": [{"text": "the answer"}, {"raw": b64, "filename": "f.bin"}, {"raw": "aGk="}]}
        ]}}});
        let (v, spills) = read_all(json.to_string().into_bytes()).unwrap();
        let parts = &v["result"]["task"]["artifacts"][0]["parts"];
        assert_eq!(parts[0]["text"], "the answer");
        assert_eq!(parts[2]["raw"], "aGk=", "a short part stays as it is");
        let s = spilled(parts[1]["raw"].as_str().unwrap()).expect("a marker");
        assert_eq!(s.bytes, bytes.len() as u64);
        let mut back = Vec::new();
        spills
            .reader(s.index.unwrap())
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, bytes);
    }

    #[test]
    fn a_marker_is_this_process_own() {
        let forged = format!("{MARK}not-the-secret:10:0");
        assert_eq!(spilled(&forged), None);
        let real = marker(&Spilled {
            index: Ok(3),
            bytes: 10,
        });
        assert_eq!(
            spilled(&real),
            Some(Spilled {
                index: Ok(3),
                bytes: 10
            })
        );
    }

    #[test]
    fn text_past_the_bound_and_bad_base64_say_so() {
        let big = "x".repeat(MAX_KEPT + 1);
        let json = serde_json::json!({"text": big}).to_string().into_bytes();
        assert!(read_all(json).unwrap_err().contains("larger than 4 MiB"));
        let junk = "!".repeat(SPILL_AT * 2);
        let json = serde_json::json!({"raw": junk, "after": 1})
            .to_string()
            .into_bytes();
        let (v, _) = read_all(json).unwrap();
        let s = spilled(v["raw"].as_str().unwrap()).unwrap();
        assert_eq!(s.index, Err("its bytes are not base64".into()));
        assert_eq!(v["after"], 1, "the answer goes on after it");
    }
}
