//! Claude Code's status line, what `a2a-mod statusline` ([`command`], which reads stdin, runs
//! `--then` and prints) shows: stdin JSON → the session's status snapshot
//! ([`a2a_mod_store::snapshot`]; the store itself, read-only, when the snapshot is missing or
//! stale) → [`a2a_mod_core::status::render_snapshot`] → one line.
//!
//! HOT PATH: Claude Code runs this every second for the whole session, and a run slower than the
//! interval is never shown (docs/claude-code.md "Status line"). So: no tokio runtime, no network,
//! no writes (a warning reaches the log only when `A2A_MOD_LOG` is set), no config parsing beyond
//! `[statusline]` and `timing.done_display_s`, and an early exit before reading config when the
//! session has no store. No SQLite either while the snapshot is fresh: one small file read and two
//! stats, because SQLite's first read of a file costs more than the whole process may. No theme is
//! loaded when nothing is shown. Every failure degrades to printing less; it always exits 0.
//!
//! The environment it reads (all optional):
//! - `A2A_MOD_NOW_MS`: the clock, unix ms. For tests only: it fixes `now` so output is exact.
//! - `NO_COLOR` (non-empty, no-color.org): the `plain` theme whatever the config says.
//! - `A2A_MOD_REDUCE_MOTION` or `REDUCE_MOTION` (non-empty, not `0`/`false`/`no`): a still `●`
//!   instead of the spinner, like `[statusline] animations = false`. There is no cross-tool
//!   convention for reduced motion in terminals (unlike NO_COLOR); tools use their own prefixed
//!   variables, so we honour ours and the bare, unprefixed name.
//! - `A2A_MOD_ASCII` (same truthiness), or `TERM=linux` / `TERM=vt*`: ASCII glyphs, for consoles
//!   and fonts without braille or check marks.
//! - `A2A_MOD_THEN_TIMEOUT_MS`: the `--then` deadline (default [`THEN_DEADLINE`]).
//! - `CLAUDE_CODE_SESSION_ID`: the session when stdin names none (Claude Code sets it here too).

mod command;
pub mod theme;

pub use command::{fast_args, run};

use crate::statusline_input::WireStatuslineInput;
use a2a_mod_core::status::{self, Snapshot};
use a2a_mod_os::env::{Ctx, valid_session_id};
use a2a_mod_os::fsx::Unwritable;
use a2a_mod_store::snapshot::{self, Loaded};
use a2a_mod_store::{Reader, SessionPaths};
use std::path::Path;
use std::time::Duration;
use theme::Theme;

/// How long `--then`'s command may take; well under Claude Code's one-second interval, so the
/// whole run still fits with our own line.
pub const THEN_DEADLINE: Duration = Duration::from_millis(300);

/// What the status line reads from the environment, read once.
#[derive(Debug, Clone, Default)]
pub struct Env {
    pub ctx: Option<Ctx>,
    pub now_ms: i64,
    pub no_color: bool,
    pub reduce_motion: bool,
    pub ascii: bool,
    pub session_fallback: Option<String>,
    pub log: bool,
    pub then_deadline: Duration,
}

impl Env {
    pub fn from_process() -> Env {
        use a2a_mod_os::env;
        let term = env::term();
        Env {
            ctx: Ctx::from_env().ok(),
            now_ms: env::now_override_ms().unwrap_or_else(env::now_ms),
            no_color: env::no_color(),
            reduce_motion: env::reduce_motion(),
            ascii: env::ascii() || term == "linux" || term.starts_with("vt"),
            session_fallback: env::claude_session_id(),
            log: env::log_filter().is_some_and(|v| v != "off"),
            then_deadline: env::then_timeout_ms().map_or(THEN_DEADLINE, Duration::from_millis),
        }
    }
}

/// Our line for this stdin, or empty when there is nothing to show. Problems worth a look
/// (a bad theme, a broken config, an unreadable store) are pushed to `warnings`.
pub fn line_for(input: &[u8], env: &Env, warnings: &mut Vec<String>) -> String {
    let wire = WireStatuslineInput::parse(input);
    let Some(session) = wire
        .session_id()
        .or(env.session_fallback.as_deref())
        .filter(|s| valid_session_id(s))
    else {
        return String::new();
    };
    let Some(ctx) = &env.ctx else {
        return String::new();
    };
    let path = SessionPaths::locate(ctx, session).db;
    let loaded = snapshot::load(&path);
    // The common case for a session that never sent anything: done before reading config.
    if matches!(loaded, Loaded::Missing) && std::fs::symlink_metadata(&path).is_err() {
        return String::new();
    }
    let cfg = HotConfig::load(&ctx.config_path(), warnings);
    let snap = match loaded {
        Loaded::Fresh(snap) => snap,
        // A store from before snapshots, or one changed since its snapshot (a writer that died
        // between COMMIT and publishing, an older a2a-mod): SQLite tells the truth, slower.
        Loaded::Missing | Loaded::Stale => match read_store(&path, warnings) {
            Some(snap) => snap,
            None => return String::new(),
        },
    };
    if !snap.shows_anything(env.now_ms, cfg.done_ms) {
        return String::new();
    }
    let theme = pick_theme(&cfg.theme, env, &ctx.config_dir, warnings);
    let mut line = status::render_snapshot(
        &snap,
        env.now_ms,
        cfg.done_ms,
        &theme,
        cfg.animations && !env.reduce_motion,
    );
    // What the line shows cannot move on while the state folder takes no writes: say so, since
    // nothing else the user sees would (docs/troubleshooting.md).
    if let Some(why) = path.parent().and_then(a2a_mod_os::fsx::unwritable) {
        let mark = if env.ascii { "!" } else { "⚠" };
        let why = match why {
            Unwritable::Full => "disk full",
            Unwritable::ReadOnly => "state folder read-only",
        };
        let end = line.trim_end_matches('\n').len();
        line.insert_str(end, &format!(" · {mark} cannot save: {why}"));
    }
    line
}

/// The slow path: the store itself, read-only, summarized as a writer would have.
fn read_store(path: &Path, warnings: &mut Vec<String>) -> Option<Snapshot> {
    let store = match Reader::open(path) {
        Ok(s) => s?,
        Err(e) => {
            warnings.push(format!("statusline: {e:#}"));
            return None;
        }
    };
    match store.summarize() {
        Ok(snap) => Some(snap),
        Err(e) => {
            // Busy past the short timeout, or a store from a newer version: skip this tick.
            warnings.push(format!(
                "statusline: cannot read \"{}\": {e:#}",
                path.display()
            ));
            None
        }
    }
}

fn pick_theme(name: &str, env: &Env, config_dir: &Path, warnings: &mut Vec<String>) -> Theme {
    let name = if env.no_color { "plain" } else { name };
    let (theme, warning) = theme::load(name, config_dir);
    warnings.extend(warning);
    if env.ascii { theme.into_ascii() } else { theme }
}

/// The few settings the status line needs, read leniently: config.toml may hold any other
/// tables, and a broken file or a bad value costs only that value (with a warning), never the
/// line. The strict reader (`config::Config::load`) is for the commands that own the file.
#[derive(Debug, Clone, PartialEq)]
pub struct HotConfig {
    pub theme: String,
    pub animations: bool,
    pub done_ms: i64,
}

impl Default for HotConfig {
    fn default() -> Self {
        let d = a2a_mod_config::Config::default();
        HotConfig {
            theme: d.statusline.theme,
            animations: d.statusline.animations,
            done_ms: d.timing.done_display_ms(),
        }
    }
}

impl HotConfig {
    pub fn load(path: &Path, warnings: &mut Vec<String>) -> HotConfig {
        match std::fs::read_to_string(path) {
            Ok(text) => HotConfig::parse(&text, warnings),
            Err(_) => HotConfig::default(),
        }
    }

    pub fn parse(text: &str, warnings: &mut Vec<String>) -> HotConfig {
        let mut c = HotConfig::default();
        let doc = match text.parse::<toml_edit::DocumentMut>() {
            Ok(d) => d,
            Err(e) => {
                let why = a2a_mod_config::toml_error_line(&e.to_string());
                warnings.push(format!(
                    "statusline: config.toml does not parse ({why}); using defaults"
                ));
                return c;
            }
        };
        let sl = doc.get("statusline");
        if let Some(v) = sl.and_then(|t| t.get("theme")) {
            match v.as_str() {
                Some(s) => c.theme = s.to_string(),
                None => warnings.push("statusline: statusline.theme is not a string".into()),
            }
        }
        if let Some(v) = sl.and_then(|t| t.get("animations")) {
            match v.as_bool() {
                Some(b) => c.animations = b,
                None => warnings.push("statusline: statusline.animations is not true/false".into()),
            }
        }
        if let Some(v) = doc.get("timing").and_then(|t| t.get("done_display_s")) {
            match v.as_float().or_else(|| v.as_integer().map(|i| i as f64)) {
                Some(s) if (0.0..=86_400.0).contains(&s) => c.done_ms = (s * 1000.0) as i64,
                _ => warnings.push(
                    "statusline: timing.done_display_s is not a number of seconds from 0 to 86400"
                        .into(),
                ),
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hot_config_is_lenient() {
        let mut w = Vec::new();
        let c = HotConfig::parse(
            "[workers.fake]\nurl = \"http://x\"\n[statusline]\ntheme = \"plain\"\nanimations = false\n[timing]\ndone_display_s = 2\npoll_interval_s = 1\n[future]\nx = 1\n",
            &mut w,
        );
        assert_eq!(
            c,
            HotConfig {
                theme: "plain".into(),
                animations: false,
                done_ms: 2000
            }
        );
        assert!(w.is_empty(), "{w:?}");
        let c = HotConfig::parse("[statusline]\nanimations = \"yes\"\ntheme = 3\n", &mut w);
        assert_eq!(c, HotConfig::default());
        assert_eq!(w.len(), 2);
        w.clear();
        assert_eq!(HotConfig::parse("[[[ broken", &mut w), HotConfig::default());
        assert_eq!(w.len(), 1);
        assert!(!w[0].contains('\n'));
    }
}
