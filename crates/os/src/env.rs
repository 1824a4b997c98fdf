//! The process environment, read here and nowhere else (`tests/it/arch.rs` holds the rest of
//! the code to it): where a2a-mod keeps its files (`A2A_MOD_HOME`, when set, holds everything,
//! `config.toml` and `state/`; otherwise XDG config and state dirs, docs/commands-and-tools.md),
//! read once at start-up into [`Ctx`] and passed down, and one named accessor per variable
//! anything else needs: what Claude Code tells its entry points, a2a-mod's own knobs and test
//! seams, and the variables a user names for a worker's secrets.

use anyhow::{Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A variable's value, unless unset, empty, or not Unicode.
fn text(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A variable's value as the OS has it, unless unset or empty.
fn os(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// A variable set to anything but `0`, `false` or `no`.
fn truthy(name: &str) -> bool {
    text(name).is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "0" | "false" | "no"))
}

fn number(name: &str) -> Option<u64> {
    text(name)?.trim().parse().ok()
}

/// `CLAUDE_CODE_SESSION_ID`: the session Claude Code started this process for (the MCP server,
/// the monitor, hooks, the status line; stale after `/clear` in the first two).
pub fn claude_session_id() -> Option<String> {
    text("CLAUDE_CODE_SESSION_ID")
}

/// `CLAUDE_PID`: the Claude Code process (monitor, hooks and status line have it).
pub fn claude_pid() -> Option<u32> {
    text("CLAUDE_PID")?.trim().parse().ok()
}

/// `CLAUDE_PROJECT_DIR`: the project Claude Code runs in (relative file paths start there).
pub fn project_dir() -> Option<PathBuf> {
    os("CLAUDE_PROJECT_DIR").map(PathBuf::from)
}

/// `CLAUDE_CODE_SESSION_ATTENDED` and `CLAUDE_CODE_ENTRYPOINT`, as a hook reads its mode
/// (`hook::mode`).
pub fn session_mode_vars() -> (Option<String>, Option<String>) {
    (
        text("CLAUDE_CODE_SESSION_ATTENDED"),
        text("CLAUDE_CODE_ENTRYPOINT"),
    )
}

/// `A2A_MOD_CLAUDE_BIN`: the Claude Code `serve` runs instead of `claude` on `PATH`.
pub fn claude_bin() -> Option<PathBuf> {
    os("A2A_MOD_CLAUDE_BIN").map(PathBuf::from)
}

/// `CLAUDE_CONFIG_DIR`: where Claude Code keeps its settings, when not `~/.claude`.
pub fn claude_config_dir() -> Option<PathBuf> {
    os("CLAUDE_CONFIG_DIR").map(PathBuf::from)
}

/// `HOME`.
pub fn home_dir() -> Option<PathBuf> {
    os("HOME").map(PathBuf::from)
}

/// A variable holding a file's path (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`).
pub fn os_path(name: &str) -> Option<PathBuf> {
    os(name).map(PathBuf::from)
}

/// `PATH`, to find a program as a shell would.
pub fn search_path() -> Option<OsString> {
    os("PATH")
}

/// `NO_COLOR` (no-color.org): set at all means no colour.
pub fn no_color() -> bool {
    os("NO_COLOR").is_some()
}

/// `TERM`, empty when unset.
pub fn term() -> String {
    text("TERM").unwrap_or_default()
}

/// `A2A_MOD_REDUCE_MOTION` or `REDUCE_MOTION`: a still spinner.
pub fn reduce_motion() -> bool {
    truthy("A2A_MOD_REDUCE_MOTION") || truthy("REDUCE_MOTION")
}

/// `A2A_MOD_ASCII`: ASCII symbols in the status line.
pub fn ascii() -> bool {
    truthy("A2A_MOD_ASCII")
}

/// `A2A_MOD_LOG`: the log filter (a level, or `target=level` pairs).
pub fn log_filter() -> Option<String> {
    text("A2A_MOD_LOG")
}

/// `A2A_MOD_NOW_MS`: the status line's clock, for tests and screenshots.
pub fn now_override_ms() -> Option<i64> {
    text("A2A_MOD_NOW_MS")?.trim().parse().ok()
}

/// `A2A_MOD_THEN_TIMEOUT_MS`: how long `statusline --then` waits for the user's own command.
pub fn then_timeout_ms() -> Option<u64> {
    number("A2A_MOD_THEN_TIMEOUT_MS")
}

/// `A2A_MOD_TOOL_TIMEOUT_MS` (the per-server timeout `.mcp.json` passes) and `MCP_TOOL_TIMEOUT`
/// (Claude Code's own), in ms, where set to a positive number.
pub fn tool_timeouts_ms() -> [Option<u64>; 2] {
    ["A2A_MOD_TOOL_TIMEOUT_MS", "MCP_TOOL_TIMEOUT"].map(|k| number(k).filter(|v| *v > 0))
}

/// The waiters' fallback tick, in ms (tests stretch it so only the notification can deliver).
pub const WAKE_TICK: &str = "A2A_MOD_WAKE_TICK_MS";

pub fn wake_tick_ms() -> Option<u64> {
    number(WAKE_TICK)
}

/// A variable the user named for a secret (`bearer_env`, `api_key_env`, `client_secret_env`,
/// `fake-worker --bearer-env`), read at each use so a changed value is picked up: its value
/// trimmed, unless unset or blank.
pub fn secret(name: &str) -> Option<String> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    (!v.is_empty()).then(|| v.to_string())
}

#[derive(Debug, Clone)]
pub struct Ctx {
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
    /// Files a2a-mod installs for Claude Code (the plugin folder): `$XDG_DATA_HOME/a2a-mod`.
    pub data_dir: PathBuf,
}

impl Ctx {
    pub fn from_env() -> Result<Ctx> {
        let var = |k: &str| os(k).map(PathBuf::from);
        if let Some(home) = var("A2A_MOD_HOME") {
            return Ok(Ctx::at(&home));
        }
        let Some(home) = var("HOME") else {
            bail!(
                "neither A2A_MOD_HOME nor HOME is set — set A2A_MOD_HOME to a folder a2a-mod may use"
            );
        };
        let config = var("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
        let state = var("XDG_STATE_HOME").unwrap_or_else(|| home.join(".local/state"));
        let data = var("XDG_DATA_HOME").unwrap_or_else(|| home.join(".local/share"));
        Ok(Ctx {
            config_dir: config.join("a2a-mod"),
            state_dir: state.join("a2a-mod"),
            data_dir: data.join("a2a-mod"),
        })
    }

    /// Everything under one folder, as `A2A_MOD_HOME` asks.
    pub fn at(home: &Path) -> Ctx {
        Ctx {
            config_dir: home.to_path_buf(),
            state_dir: home.join("state"),
            data_dir: home.to_path_buf(),
        }
    }

    /// The plugin and one-plugin marketplace `a2a-mod install` writes and registers.
    pub fn plugin_dir(&self) -> PathBuf {
        self.data_dir.join("plugin")
    }

    /// The link `install` names in the settings for a binary in Claude Code's plugin cache, whose
    /// own path changes with each plugin update (moved on by the session start hook, `a2a_mod_claude::hook`).
    pub fn bin_link(&self) -> PathBuf {
        self.data_dir.join("bin/a2a-mod")
    }

    /// What `install` remembers per settings file (the status line it wrapped).
    pub fn install_record_path(&self) -> PathBuf {
        self.state_dir.join("install.json")
    }

    pub fn config_path(&self) -> PathBuf {
        self.config_dir.join("config.toml")
    }

    pub fn sessions_dir(&self) -> PathBuf {
        self.state_dir.join("sessions")
    }

    pub fn log_path(&self) -> PathBuf {
        self.state_dir.join("a2a-mod.log")
    }
}

/// Session ids come from Claude Code's stdin and env and name files, so only a safe alphabet is
/// accepted: a hostile `session_id` must never reach outside `state/sessions/`.
pub fn valid_session_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// The session of a user command: `--session`, else `CLAUDE_CODE_SESSION_ID`, else `cli`.
pub fn cli_session(flag: Option<&str>) -> Result<String> {
    let id = match flag {
        Some(s) => s.to_string(),
        None => claude_session_id().unwrap_or_else(|| "cli".to_string()),
    };
    if !valid_session_id(&id) {
        bail!(
            "session id {id:?} is not valid — use letters, digits, '-', '_' and '.' only (at most 128)"
        );
    }
    Ok(id)
}

/// Milliseconds since the Unix epoch: the store's clock. Read here, at the IO edge, and passed into
/// `core` as `now`.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Milliseconds since boot, time asleep included (`CLOCK_BOOTTIME`): the clock nobody sets, read
/// beside [`now_ms`] to tell a step of the wall clock from time going by
/// (`core::clock::step`).
pub fn boot_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Linux's CLOCK_MONOTONIC stops while the machine sleeps, CLOCK_BOOTTIME (every Linux since
    // 2.6.39) does not; macOS's CLOCK_MONOTONIC already counts sleep.
    #[cfg(target_os = "linux")]
    let clock = libc::CLOCK_BOOTTIME;
    #[cfg(not(target_os = "linux"))]
    let clock = libc::CLOCK_MONOTONIC;
    // SAFETY: `ts` is a valid timespec for the call to fill.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec.saturating_mul(1000) + ts.tv_nsec / 1_000_000
}

/// Raises this process's soft limit on open files to `want` (at most the hard limit), so a
/// server bounded at `want` connections meets its own bound before the system's. Quietly
/// leaves it where it cannot.
pub fn raise_open_files(want: usize) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for getrlimit to fill, and setrlimit only reads it.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return;
        }
        let want = libc::rlim_t::try_from(want).unwrap_or(libc::rlim_t::MAX);
        if lim.rlim_cur < want {
            lim.rlim_cur = want.min(lim.rlim_max);
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// This machine's host name (`gethostname`), unless it has none or not in UTF-8.
pub fn host_name() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname(2) writes at most `buf.len()` bytes into the buffer we own.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    std::str::from_utf8(&buf[..end]).ok().map(str::to_string)
}

/// This boot's id, read once: what [`boot_ms`] counts from (Linux's
/// `/proc/sys/kernel/random/boot_id`, macOS's `kern.bootsessionuuid`; empty where the kernel
/// does not say).
pub fn boot_id() -> &'static str {
    static ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    ID.get_or_init(read_boot_id)
}

#[cfg(not(target_os = "macos"))]
fn read_boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

#[cfg(target_os = "macos")]
fn read_boot_id() -> String {
    let mut buf = [0u8; 64];
    let mut len = buf.len();
    // SAFETY: the name is NUL-terminated, `buf` holds `len` bytes for sysctl to fill and `len`
    // is updated with what it wrote; nothing is set (no new value).
    let rc = unsafe {
        libc::sysctlbyname(
            c"kern.bootsessionuuid".as_ptr(),
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null_mut(),
            0,
        )
    };
    if rc != 0 {
        return String::new();
    }
    let id = buf.get(..len).unwrap_or_default();
    String::from_utf8_lossy(id)
        .trim_end_matches('\0')
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_cannot_escape() {
        assert!(valid_session_id("b42c70ee-1f2a-4c1e-9b7e-0a1b2c3d4e5f"));
        assert!(valid_session_id("cli"));
        for bad in ["", "../x", "a/b", ".hidden", "a b", "x\0y"] {
            assert!(!valid_session_id(bad), "{bad:?}");
        }
    }
}
