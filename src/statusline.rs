//! `a2a-mod statusline`: Claude Code's status-line command. stdin JSON → the session's status
//! snapshot (`state::snapshot`; the store itself, read-only, when the snapshot is missing or stale)
//! → [`crate::core::status::render_snapshot`] → one line on stdout.
//!
//! HOT PATH: Claude Code runs this every second for the whole session, and a run slower than the
//! interval is never shown (claude-code-facts.md, E1). So: no tokio runtime, no network, no writes
//! (a warning reaches the log only when `A2A_MOD_LOG` is set), no config parsing beyond
//! `[statusline]` and `timing.done_display_s`, and an early exit before reading config when the
//! session has no store. No SQLite either while the snapshot is fresh: one small file read and two
//! stats, because SQLite's first read of a file costs more than the whole process may (issue 4).
//! No theme is loaded when nothing is shown. Every failure degrades to printing less; it always
//! exits 0.
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

use crate::claude::statusline_input::WireStatuslineInput;
use crate::core::status::{self, Row, Snapshot};
use crate::env::{Ctx, valid_session_id};
use crate::state::snapshot::{self, Loaded};
use crate::state::{Store, TaskRecord, session};
use crate::theme::{self, Theme};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long `--then`'s command may take; well under Claude Code's one-second interval, so the
/// whole run still fits with our own line.
pub const THEN_DEADLINE: Duration = Duration::from_millis(300);
/// Claude Code's payload is a few kB; anything past this is not a status-line payload.
const MAX_STDIN: u64 = 1 << 20;

/// Runs the command: reads stdin, prints the other status line (`then`) and ours. Returns the
/// exit code, always 0: a status line that fails loudly helps no one.
pub fn run(then: Option<&str>) -> i32 {
    let mut input = Vec::new();
    let _ = std::io::stdin().take(MAX_STDIN).read_to_end(&mut input);
    let env = Env::from_process();
    // Theirs runs while we render ours.
    let other = then.and_then(|cmd| Then::spawn(cmd, &input));
    let mut warnings = Vec::new();
    let line = line_for(&input, &env, &mut warnings);
    let mut out = Vec::with_capacity(256);
    if let Some(other) = other {
        out = other.collect(env.then_deadline);
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    if !line.is_empty() {
        out.extend_from_slice(line.as_bytes());
        out.push(b'\n');
    }
    // A closed stdout (EPIPE) is not our failure; nothing else to do about it.
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(&out).and_then(|()| stdout.flush());
    if !warnings.is_empty() {
        log_warnings(&env, &warnings);
    }
    0
}

/// `statusline`, `statusline --then CMD` or `statusline --then=CMD` without clap: `Some(then)`
/// for those exact shapes, `None` for anything else (clap then parses it and reports errors).
pub fn fast_args(mut args: impl Iterator<Item = std::ffi::OsString>) -> Option<Option<String>> {
    if args.next()? != "statusline" {
        return None;
    }
    let rest: Vec<_> = args.take(3).collect();
    match rest.as_slice() {
        [] => Some(None),
        [flag, cmd] if flag == "--then" => cmd.to_str().map(|c| Some(c.to_string())),
        [one] => one
            .to_str()
            .and_then(|s| s.strip_prefix("--then="))
            .map(|c| Some(c.to_string())),
        _ => None,
    }
}

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
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let truthy = |k: &str| {
            var(k).is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false" | "no"))
        };
        let term = var("TERM").unwrap_or_default();
        Env {
            ctx: Ctx::from_env().ok(),
            now_ms: var("A2A_MOD_NOW_MS")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(crate::env::now_ms),
            no_color: var("NO_COLOR").is_some(),
            reduce_motion: truthy("A2A_MOD_REDUCE_MOTION") || truthy("REDUCE_MOTION"),
            ascii: truthy("A2A_MOD_ASCII") || term == "linux" || term.starts_with("vt"),
            session_fallback: var("CLAUDE_CODE_SESSION_ID"),
            log: var("A2A_MOD_LOG").is_some_and(|v| v != "off"),
            then_deadline: var("A2A_MOD_THEN_TIMEOUT_MS")
                .and_then(|v| v.trim().parse().ok())
                .map_or(THEN_DEADLINE, Duration::from_millis),
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
    let path = session::db_path(ctx, &session::resolve(ctx, session));
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
    status::render_snapshot(
        &snap,
        env.now_ms,
        cfg.done_ms,
        &theme,
        cfg.animations && !env.reduce_motion,
    )
}

/// The slow path: the store itself, read-only, summarized as a writer would have.
fn read_store(path: &Path, warnings: &mut Vec<String>) -> Option<Snapshot> {
    let store = match Store::open_read(path) {
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

pub fn to_row(r: &TaskRecord) -> Row<'_> {
    Row {
        worker: &r.worker,
        text: &r.message,
        state: r.state,
        started_ms: r.started_ms,
        ended_ms: r.ended_ms,
        end: r.end_reason(),
        question: r.question.as_deref(),
    }
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
        let d = crate::config::Config::default();
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
                let why = crate::config::toml_error_line(&e.to_string());
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

/// Appends warnings to the log, only when logging is on: off, the status line writes nothing.
fn log_warnings(env: &Env, warnings: &[String]) {
    if !env.log {
        return;
    }
    let Some(ctx) = &env.ctx else { return };
    let mut text = String::new();
    for w in warnings {
        let one = crate::core::text::sanitize(w);
        text.push_str(&format!("{} WARN a2a_mod::statusline: {one}\n", env.now_ms));
    }
    if let Some(mut f) = crate::log::open_append(ctx) {
        let _ = f.write_all(text.as_bytes());
    }
}

/// The user's other status-line command (`--then`), run with the same stdin while ours renders.
struct Then {
    pid: u32,
    chunks: mpsc::Receiver<Vec<u8>>,
}

impl Then {
    fn spawn(cmd: &str, input: &[u8]) -> Option<Then> {
        use std::process::{Command, Stdio};
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // Its own process group, so a late command is killed with everything it started.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        let mut child = c.spawn().ok()?;
        if let Some(mut stdin) = child.stdin.take() {
            let input = input.to_vec();
            // A thread: a command that never reads stdin must not block us on a full pipe.
            std::thread::spawn(move || {
                let _ = stdin.write_all(&input);
            });
        }
        let mut stdout = child.stdout.take()?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match stdout.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        // Not waited for: it is reaped by init after we exit, and waiting would cost time.
        Some(Then {
            pid: child.id(),
            chunks: rx,
        })
    }

    /// Its output, read until it closes stdout or the deadline passes. A late command is killed
    /// and only its complete lines are kept, so a half-drawn escape sequence never reaches the
    /// terminal before our line.
    fn collect(self, deadline: Duration) -> Vec<u8> {
        let end = Instant::now() + deadline;
        let mut out = Vec::new();
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.chunks.recv_timeout(left) {
                Ok(chunk) => {
                    out.extend_from_slice(&chunk);
                    if out.len() > 64 * 1024 {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => return out,
                Err(mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
        self.kill();
        match out.iter().rposition(|b| *b == b'\n') {
            Some(i) => out.truncate(i + 1),
            None => out.clear(),
        }
        out
    }

    fn kill(&self) {
        #[cfg(unix)]
        if let Ok(pid) = i32::try_from(self.pid) {
            // SAFETY: kill(2) on the process group we created for the child; no memory involved.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_args_take_only_the_plain_shapes() {
        let f = |a: &[&str]| fast_args(a.iter().map(std::ffi::OsString::from));
        assert_eq!(f(&["statusline"]), Some(None));
        assert_eq!(
            f(&["statusline", "--then", "x y"]),
            Some(Some("x y".into()))
        );
        assert_eq!(f(&["statusline", "--then=x"]), Some(Some("x".into())));
        assert_eq!(f(&["statusline", "--help"]), None);
        assert_eq!(f(&["statusline", "--then"]), None);
        assert_eq!(f(&["statusline", "--then", "a", "b"]), None);
        assert_eq!(f(&["tasks"]), None);
        assert_eq!(f(&[]), None);
    }

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
