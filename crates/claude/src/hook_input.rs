//! Claude Code's hook stdin (docs/claude-code.md), read tolerantly and reduced to the few domain
//! events `src/hook/` acts on. Also the one
//! null-tolerant field reader, `tolerant`, that every wire type of Claude Code's stdin uses
//! (the status line's too, `statusline_input.rs`).
//!
//! Hot path: one small struct parsed straight from the bytes already read; the fields we do not
//! read (a PostToolUse payload's whole tool output) are skipped unparsed. No IO here.

use serde::{Deserialize, Deserializer};

/// The one field reader for Claude Code's stdin: an explicit `null` (which Claude Code sends), a
/// missing field or a value of the wrong type becomes `T::default()`, so one odd field costs
/// neither the others nor the payload. Only the field's own value is buffered, never the whole
/// payload.
pub(crate) fn tolerant<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + serde::de::DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(T::deserialize(v).unwrap_or_default())
}

/// The fields we use of every hook's stdin, as Claude Code sends them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct WireHookInput {
    #[serde(deserialize_with = "tolerant")]
    pub session_id: String,
    /// SessionStart only.
    #[serde(deserialize_with = "tolerant")]
    pub source: WireSessionSource,
    /// Stop only: Claude Code is already continuing because of a Stop hook.
    #[serde(deserialize_with = "tolerant")]
    pub stop_hook_active: bool,
}

/// SessionStart's `source`; a value Claude Code adds later reads as `Other`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireSessionSource {
    Startup,
    Resume,
    Clear,
    Compact,
    #[default]
    #[serde(other)]
    Other,
}

impl WireHookInput {
    /// Parses stdin; anything unreadable (not JSON, not an object) yields the empty input.
    pub fn parse(bytes: &[u8]) -> WireHookInput {
        serde_json::from_slice(bytes).unwrap_or_default()
    }
}

/// Why a session started: only `Clear` starts a new id in the same Claude Code process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSource {
    Startup,
    Resume,
    Clear,
    Compact,
    /// Missing, null, or a value we do not know.
    Other,
}

impl From<WireSessionSource> for SessionSource {
    fn from(w: WireSessionSource) -> SessionSource {
        match w {
            WireSessionSource::Startup => SessionSource::Startup,
            WireSessionSource::Resume => SessionSource::Resume,
            WireSessionSource::Clear => SessionSource::Clear,
            WireSessionSource::Compact => SessionSource::Compact,
            WireSessionSource::Other => SessionSource::Other,
        }
    }
}

/// The hook Claude Code runs, as our command line names it (`a2a-mod hook <entry>`, the entries
/// `install` writes).
#[derive(Debug, Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum Entry {
    SessionStart,
    UserPromptSubmit,
    PostToolUse,
    Wake,
    /// The Stop hook: in a headless or SDK run, waits for live tasks and hands their results over
    Stop,
}

/// What a hook call is about. The hook is named by our command line (`a2a-mod hook <event>`, the
/// entry we installed), not by stdin's `hook_event_name`, so a payload without it is served the
/// same.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    SessionStart {
        source: SessionSource,
    },
    UserPromptSubmit,
    PostToolUse,
    /// Our asyncRewake waiter (`hook wake`), whichever of Claude Code's hooks ran it.
    Wake,
    Stop {
        stop_hook_active: bool,
    },
}

/// One hook call: whose session, and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookInput {
    /// As sent (possibly empty); the caller checks it before using it in a path.
    pub session_id: String,
    pub event: HookEvent,
}

impl From<(Entry, WireHookInput)> for HookInput {
    fn from((hook, w): (Entry, WireHookInput)) -> HookInput {
        let event = match hook {
            Entry::SessionStart => HookEvent::SessionStart {
                source: w.source.into(),
            },
            Entry::UserPromptSubmit => HookEvent::UserPromptSubmit,
            Entry::PostToolUse => HookEvent::PostToolUse,
            Entry::Wake => HookEvent::Wake,
            Entry::Stop => HookEvent::Stop {
                stop_hook_active: w.stop_hook_active,
            },
        };
        HookInput {
            session_id: w.session_id,
            event,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(hook: Entry, stdin: &[u8]) -> HookInput {
        (hook, WireHookInput::parse(stdin)).into()
    }

    fn start(stdin: &[u8]) -> HookInput {
        input(Entry::SessionStart, stdin)
    }

    fn event(session_id: &str, event: HookEvent) -> HookInput {
        HookInput {
            session_id: session_id.into(),
            event,
        }
    }

    #[test]
    fn session_start_sources() {
        for (wire, want) in [
            ("startup", SessionSource::Startup),
            ("resume", SessionSource::Resume),
            ("clear", SessionSource::Clear),
            ("compact", SessionSource::Compact),
            // Unknown, or spelt differently: not a `/clear`.
            ("reload", SessionSource::Other),
            ("Clear", SessionSource::Other),
            ("", SessionSource::Other),
        ] {
            let stdin = format!(
                r#"{{"session_id":"s1","transcript_path":"/t.jsonl","cwd":"/w",
                    "hook_event_name":"SessionStart","source":"{wire}"}}"#
            );
            assert_eq!(
                start(stdin.as_bytes()),
                event("s1", HookEvent::SessionStart { source: want }),
                "{wire}"
            );
        }
    }

    #[test]
    fn nulls_missing_fields_and_wrong_types_default() {
        let other = HookEvent::SessionStart {
            source: SessionSource::Other,
        };
        for stdin in [
            &br#"{"session_id":"s1"}"#[..],
            br#"{"session_id":"s1","source":null}"#,
            br#"{"session_id":"s1","source":7}"#,
            br#"{"session_id":"s1","source":{"a":[1]},"cwd":null,"model":null}"#,
        ] {
            assert_eq!(start(stdin), event("s1", other), "{stdin:?}");
        }
        // A null or odd session id is empty, and does not cost the source.
        for stdin in [
            &br#"{"session_id":null,"source":"clear"}"#[..],
            br#"{"session_id":42,"source":"clear"}"#,
            br#"{"source":"clear"}"#,
        ] {
            assert_eq!(
                start(stdin),
                event(
                    "",
                    HookEvent::SessionStart {
                        source: SessionSource::Clear
                    }
                ),
                "{stdin:?}"
            );
        }
        for (stdin, active) in [
            (&br#"{"session_id":"s","stop_hook_active":true}"#[..], true),
            (br#"{"session_id":"s","stop_hook_active":false}"#, false),
            (br#"{"session_id":"s","stop_hook_active":null}"#, false),
            (br#"{"session_id":"s","stop_hook_active":"yes"}"#, false),
            (br#"{"session_id":"s"}"#, false),
        ] {
            assert_eq!(
                input(Entry::Stop, stdin),
                event(
                    "s",
                    HookEvent::Stop {
                        stop_hook_active: active
                    }
                ),
                "{stdin:?}"
            );
        }
    }

    #[test]
    fn garbage_is_the_empty_input() {
        for stdin in [
            &b""[..],
            b"not json",
            b"null",
            b"[1,2,3]",
            b"\"s1\"",
            b"\xff\xfe",
            br#"{"session_id":"s1""#,
        ] {
            assert_eq!(
                input(Entry::UserPromptSubmit, stdin),
                event("", HookEvent::UserPromptSubmit),
                "{stdin:?}"
            );
        }
    }

    #[test]
    fn every_hook_keeps_the_session_and_skips_what_it_does_not_read() {
        let post = br#"{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash",
            "tool_input":{"command":"ls"},"tool_response":{"stdout":"a\nb","exitCode":0}}"#;
        assert_eq!(
            input(Entry::PostToolUse, post),
            event("s1", HookEvent::PostToolUse)
        );
        assert_eq!(input(Entry::Wake, post), event("s1", HookEvent::Wake));
        let prompt = br#"{"session_id":"s1","prompt":"hi","source":"clear"}"#;
        assert_eq!(
            input(Entry::UserPromptSubmit, prompt),
            event("s1", HookEvent::UserPromptSubmit)
        );
    }
}
