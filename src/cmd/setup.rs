//! Where Claude Code keeps its settings and how a2a-mod reads them, and where a program is on
//! PATH: what `install` writes through and `doctor` checks through, shared here rather than one
//! command borrowing the other's insides.

use crate::cli::Scope;
use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

pub fn scope_name(scope: Scope) -> &'static str {
    match scope {
        Scope::User => "user",
        Scope::Project => "project",
    }
}

/// The settings file of a scope: `~/.claude/settings.json` (`$CLAUDE_CONFIG_DIR` when set, as
/// Claude Code does), or `.claude/settings.json` in the current folder.
pub fn settings_path(scope: Scope) -> Result<PathBuf> {
    match scope {
        Scope::User => Ok(claude_config_dir()?.join("settings.json")),
        Scope::Project => Ok(std::env::current_dir()
            .context("cannot read the current folder")?
            .join(".claude/settings.json")),
    }
}

pub fn claude_config_dir() -> Result<PathBuf> {
    if let Some(d) = a2a_mod_os::env::claude_config_dir() {
        return Ok(d);
    }
    let home = a2a_mod_os::env::home_dir()
        .ok_or_else(|| anyhow!("HOME is not set — set HOME to your home folder"))?;
    Ok(home.join(".claude"))
}

/// The file's value: `None` when it does not exist; an empty file reads as `{}`.
pub fn read_settings(path: &Path) -> Result<Option<Value>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read \"{}\"", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(Some(Value::Object(Map::new())));
    }
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        anyhow!(
            "\"{}\" is not valid JSON ({e}) — fix it or move it away, then run again; nothing was changed",
            path.display()
        )
    })?;
    if !value.is_object() {
        bail!(
            "\"{}\" is not a JSON object — fix it or move it away, then run again; nothing was changed",
            path.display()
        );
    }
    Ok(Some(value))
}

/// [`read_settings`], a missing file read as `{}`.
pub fn read_settings_or_empty(path: &Path) -> Result<Value> {
    Ok(read_settings(path)?.unwrap_or_else(|| Value::Object(Map::new())))
}

/// `name` on `PATH`, as a shell finds it.
pub fn which(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = a2a_mod_os::env::search_path()?;
    std::env::split_paths(&path)
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}
