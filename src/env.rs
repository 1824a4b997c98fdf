//! Where a2a-mod keeps its files. `A2A_MOD_HOME`, when set, holds everything (`config.toml`,
//! `state/`); otherwise XDG config and state dirs (docs/commands-and-tools.md). Read once at start-up and passed
//! down, so nothing else reads the environment for paths (starship's `Env`).

use anyhow::{Result, bail};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Ctx {
    pub config_dir: PathBuf,
    pub state_dir: PathBuf,
    /// Files a2a-mod installs for Claude Code (the plugin folder): `$XDG_DATA_HOME/a2a-mod`.
    pub data_dir: PathBuf,
}

impl Ctx {
    pub fn from_env() -> Result<Ctx> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
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
        None => std::env::var("CLAUDE_CODE_SESSION_ID")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "cli".to_string()),
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
