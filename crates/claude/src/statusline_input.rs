//! Claude Code's status-line stdin (docs/claude-code.md "Status line"), read tolerantly as
//! starship's `utils/statusline.rs` does: unknown fields are ignored, explicit `null`s, wrong types
//! and missing fields become `None` (the shared reader,
//! [`hook_input::tolerant`](crate::hook_input::tolerant)), and input that is not JSON at
//! all gives an empty value. Never an error: the status line renders what it can.
//!
//! Hot path: one small struct, no [`serde_json::Value`] of the whole payload.

use super::hook_input::tolerant;
use serde::Deserialize;

/// The one field a2a-mod reads; the payload carries many more (model, cost, cwd, ...), skipped
/// unparsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WireStatuslineInput {
    #[serde(deserialize_with = "tolerant")]
    pub session_id: Option<String>,
}

impl WireStatuslineInput {
    /// Parses stdin; anything unreadable yields the empty input.
    pub fn parse(bytes: &[u8]) -> WireStatuslineInput {
        serde_json::from_slice(bytes).unwrap_or_default()
    }

    /// The session id, when there is a non-empty one.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_payload_nulls_and_garbage() {
        let real = br#"{"session_id":"b42c70ee-1f2a","transcript_path":"/t.jsonl","cwd":"/w",
            "effort":{"level":"medium"},"model":{"id":"claude-opus-5-5","display_name":"Opus 5.5"},
            "version":"2.1.332","context_window":{"current_usage":null,"used_percentage":null},
            "exceeds_200k_tokens":false}"#;
        let w = WireStatuslineInput::parse(real);
        assert_eq!(w.session_id(), Some("b42c70ee-1f2a"));
        for odd in [
            &br#"{"session_id":null,"cwd":null}"#[..],
            br#"{"session_id":42}"#,
            br#"{"session_id":{"a":[1,2]},"cwd":[null]}"#,
            br#"{"session_id":"  "}"#,
            b"not json",
            b"",
            b"[1,2,3]",
            b"null",
            b"\xff\xfe",
        ] {
            assert_eq!(
                WireStatuslineInput::parse(odd).session_id(),
                None,
                "{odd:?}"
            );
        }
        // Odd values in the fields it skips cost nothing.
        let w = WireStatuslineInput::parse(br#"{"session_id":"s","cwd":7,"version":null}"#);
        assert_eq!(w.session_id(), Some("s"));
    }
}
