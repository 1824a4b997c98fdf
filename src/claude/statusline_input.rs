//! Claude Code's status-line stdin (claude-code-facts.md, E1), read tolerantly as starship's
//! `utils/statusline.rs` does: unknown fields are ignored, explicit `null`s, wrong types and
//! missing fields become `None`, and input that is not JSON at all gives an empty value. Never an
//! error: the status line renders what it can.
//!
//! Hot path: one small struct, no `serde_json::Value` of the whole payload.

use serde::{Deserialize, Deserializer};

/// The one field a2a-mod reads; the payload carries many more (model, cost, cwd, ...), skipped
/// unparsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct WireStatuslineInput {
    #[serde(deserialize_with = "lenient_string")]
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

/// A string, or `None` for `null`, numbers, objects or anything else: one odd field must not
/// cost the others.
fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct V;
    impl<'de> serde::de::Visitor<'de> for V {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("anything")
        }
        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            Ok(Some(v.to_string()))
        }
        fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
            Ok(Some(v))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(V)
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut a: A,
        ) -> Result<Self::Value, A::Error> {
            while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut a: A,
        ) -> Result<Self::Value, A::Error> {
            while a
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            Ok(None)
        }
    }
    d.deserialize_any(V)
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
