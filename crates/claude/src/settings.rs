//! What `a2a-mod install` writes into a Claude Code `settings.json`, as pure functions over
//! [`serde_json::Value`] (with `preserve_order`, so the user's key order survives). The IO shell is
//! `cmd/install.rs`; `cmd/doctor.rs` reads the same markers.
//!
//! Our entries, and how each is recognised without comparing exact command text
//! (CONTRIBUTING.md, "Atomic writes, surgical edits"), so a moved binary updates them instead of
//! adding a second copy:
//! - `extraKnownMarketplaces["a2a-mod"]` and `enabledPlugins["a2a-mod@a2a-mod"]`: ours by key.
//! - `statusLine`: ours when its command's first word is a file named `a2a-mod` and the second is
//!   `statusline`. A status line the user had before is kept as the `--then` argument, so the
//!   command itself records what `--uninstall` restores.
//! - `permissions.allow`: every rule naming our plugin's MCP server (`mcp__plugin_a2a-mod_a2a`,
//!   alone or with `__<tool>`): no other plugin or server can produce that name.
//! - `env.A2A_MOD_BIN`: ours by key; the plugin's launcher runs the binary it names.
//!
//! Edits touch only those entries; an object we emptied by removing our entry is removed too.

use serde_json::{Map, Value, json};

pub const MARKETPLACE: &str = "a2a-mod";
pub const PLUGIN_ID: &str = "a2a-mod@a2a-mod";
/// The MCP server of the plugin as permission rules and tool names see it.
pub const PERMISSION_RULE: &str = "mcp__plugin_a2a-mod_a2a";
pub const BIN_ENV: &str = "A2A_MOD_BIN";
/// Claude Code runs the status line every second with this (docs/claude-code.md "Status line").
pub const REFRESH_INTERVAL: u64 = 1;

/// What one entry went through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Added,
    Updated,
    Unchanged,
    Removed,
    /// Uninstall: nothing of ours was there.
    Absent,
}

impl Action {
    pub fn word(self) -> &'static str {
        match self {
            Action::Added => "added",
            Action::Updated => "updated",
            Action::Unchanged => "unchanged",
            Action::Removed => "removed",
            Action::Absent => "absent",
        }
    }

    pub fn changes(self) -> bool {
        matches!(self, Action::Added | Action::Updated | Action::Removed)
    }
}

/// One entry's outcome, for the per-entry report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub entry: &'static str,
    pub action: Action,
    pub detail: String,
}

impl Change {
    fn new(entry: &'static str, action: Action, detail: impl Into<String>) -> Change {
        Change {
            entry,
            action,
            detail: detail.into(),
        }
    }
}

/// Where things are on this machine, as absolute paths.
#[derive(Debug, Clone)]
pub struct InstallOpts {
    /// The `a2a-mod` binary the status line and the plugin run.
    pub exe: String,
    /// The folder holding the plugin and its one-plugin marketplace.
    pub plugin_dir: String,
}

#[derive(Debug)]
pub struct Installed {
    pub settings: Value,
    pub changes: Vec<Change>,
    /// The user's own status line we now run through `--then`, to save for `--uninstall`.
    pub wrapped: Option<Value>,
}

/// Adds or updates our entries. Fails (one line, naming the key) when a key we must edit holds
/// something of the wrong type, so nothing of the user's is overwritten.
pub fn install(settings: Value, opts: &InstallOpts) -> Result<Installed, Refused> {
    let mut root = into_object(settings)?;
    let mut changes = Vec::new();

    let market = json!({"source": {"source": "directory", "path": opts.plugin_dir}});
    let markets = object_at(&mut root, "extraKnownMarketplaces")?;
    // A marketplace the user added for the plugin (`/plugin marketplace add <owner>/a2a-mod`, a
    // clone) is theirs: kept as it is, the plugin then comes from there. Ours is a folder named
    // `plugin` (`…/a2a-mod/plugin`, `$A2A_MOD_HOME/plugin`), updated when it moved.
    let ours = |s: &Value| {
        s.get("source").and_then(Value::as_str) == Some("directory")
            && s.get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.trim_end_matches('/').ends_with("/plugin"))
    };
    let theirs = markets
        .get(MARKETPLACE)
        .and_then(|m| m.get("source"))
        .filter(|s| !ours(s))
        .map(|s| {
            let kind = s.get("source").and_then(Value::as_str).unwrap_or("?");
            let place = ["repo", "url", "path", "package"]
                .iter()
                .find_map(|k| s.get(*k).and_then(Value::as_str))
                .unwrap_or("");
            format!("kept: yours, {kind} {place}")
        });
    changes.push(match theirs {
        Some(detail) => Change::new("plugin marketplace", Action::Unchanged, detail),
        None => set(
            markets,
            MARKETPLACE,
            market,
            "plugin marketplace",
            &opts.plugin_dir,
        ),
    });
    let enabled = object_at(&mut root, "enabledPlugins")?;
    changes.push(set(
        enabled,
        PLUGIN_ID,
        Value::Bool(true),
        "plugin enabled",
        PLUGIN_ID,
    ));

    let (change, wrapped) = install_statusline(&mut root, &opts.exe)?;
    changes.push(change);

    let permissions = object_at(&mut root, "permissions")?;
    let allow = match permissions
        .entry("allow")
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        Value::Array(a) => a,
        _ => return Err(Refused::AllowNotAList),
    };
    let action = if allow.iter().any(|r| r.as_str() == Some(PERMISSION_RULE)) {
        Action::Unchanged
    } else {
        allow.push(Value::String(PERMISSION_RULE.into()));
        Action::Added
    };
    changes.push(Change::new("permissions", action, PERMISSION_RULE));

    let env = object_at(&mut root, "env")?;
    changes.push(set(
        env,
        BIN_ENV,
        Value::String(opts.exe.clone()),
        "binary (env A2A_MOD_BIN)",
        &opts.exe,
    ));

    Ok(Installed {
        settings: Value::Object(root),
        changes,
        wrapped,
    })
}

/// Removes our entries. `saved` is the status line `install` wrapped, as saved then; it is
/// restored whole when it is the one our `--then` still names (else just its command comes back).
pub fn uninstall(settings: Value, saved: Option<&Value>) -> Result<(Value, Vec<Change>), Refused> {
    let mut root = into_object(settings)?;
    let mut changes = vec![
        remove_key(
            &mut root,
            "extraKnownMarketplaces",
            MARKETPLACE,
            "plugin marketplace",
        ),
        remove_key(&mut root, "enabledPlugins", PLUGIN_ID, "plugin enabled"),
    ];

    let ours = root
        .get("statusLine")
        .and_then(|s| s.get("command"))
        .and_then(Value::as_str)
        .and_then(parse_statusline);
    changes.push(match ours {
        None => Change::new("status line", Action::Absent, ""),
        Some(None) => {
            root.shift_remove("statusLine");
            Change::new("status line", Action::Removed, "")
        }
        Some(Some(then)) => {
            let restored = match saved {
                Some(s) if s.get("command").and_then(Value::as_str) == Some(then.as_str()) => {
                    s.clone()
                }
                _ => {
                    let mut s = root["statusLine"].clone();
                    s["command"] = Value::String(then.clone());
                    if let Some(o) = s.as_object_mut() {
                        o.shift_remove("refreshInterval");
                    }
                    s
                }
            };
            root.insert("statusLine".into(), restored);
            Change::new("status line", Action::Removed, format!("restored: {then}"))
        }
    });

    let mut action = Action::Absent;
    if let Some(Value::Object(p)) = root.get_mut("permissions") {
        if let Some(Value::Array(allow)) = p.get_mut("allow") {
            let before = allow.len();
            allow.retain(|r| !r.as_str().is_some_and(is_our_rule));
            if allow.len() != before {
                action = Action::Removed;
                if allow.is_empty() {
                    p.shift_remove("allow");
                }
            }
        }
        if action == Action::Removed && p.is_empty() {
            root.shift_remove("permissions");
        }
    }
    changes.push(Change::new("permissions", action, PERMISSION_RULE));
    changes.push(remove_key(
        &mut root,
        "env",
        BIN_ENV,
        "binary (env A2A_MOD_BIN)",
    ));
    Ok((Value::Object(root), changes))
}

/// Our status-line command: the binary, `statusline`, and the user's previous one after `--then`.
pub fn statusline_command(exe: &str, then: Option<&str>) -> String {
    let mut cmd = format!("{} statusline", shell_quote(exe));
    if let Some(t) = then {
        cmd.push_str(" --then ");
        cmd.push_str(&shell_quote(t));
    }
    cmd
}

/// `Some(then)` when `cmd` is our status line (whatever path the binary had), else `None`.
pub fn parse_statusline(cmd: &str) -> Option<Option<String>> {
    // As `sh` reads it (quotes, escapes, a `#` comment); `None` when the quotes do not close.
    let words = shlex::split(cmd)?;
    let first = words.first()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    if name != "a2a-mod" || words.get(1).map(String::as_str) != Some("statusline") {
        return None;
    }
    match words.get(2).map(String::as_str) {
        Some("--then") => Some(words.get(3).cloned()),
        Some(w) => Some(w.strip_prefix("--then=").map(str::to_string)),
        None => Some(None),
    }
}

/// Whether a permission rule names our plugin's MCP server.
pub fn is_our_rule(rule: &str) -> bool {
    rule == PERMISSION_RULE
        || rule
            .strip_prefix(PERMISSION_RULE)
            .is_some_and(|rest| rest.starts_with("__"))
}

/// Quotes for POSIX `sh` only when needed, so plain paths stay readable in settings.json.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A settings file whose shape we must not write over: `install`/`uninstall` change nothing
/// and the caller names the key for the user to fix by hand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the file is not a JSON object")]
    NotAnObject,
    #[error("`{0}` is not an object")]
    KeyNotAnObject(String),
    #[error("`permissions.allow` is not a list")]
    AllowNotAList,
    #[error("`statusLine` has no command string")]
    NoStatusLineCommand,
}

fn install_statusline(
    root: &mut Map<String, Value>,
    exe: &str,
) -> Result<(Change, Option<Value>), Refused> {
    let entry = "status line";
    let Some(current) = root.get("statusLine").cloned() else {
        let cmd = statusline_command(exe, None);
        root.insert(
            "statusLine".into(),
            json!({"type": "command", "command": cmd, "refreshInterval": REFRESH_INTERVAL}),
        );
        return Ok((Change::new(entry, Action::Added, cmd), None));
    };
    let Some(command) = current.get("command").and_then(Value::as_str) else {
        return Err(Refused::NoStatusLineCommand);
    };
    let (then, wrapped) = match parse_statusline(command) {
        Some(then) => (then, None),
        None => (Some(command.to_string()), Some(current.clone())),
    };
    let cmd = statusline_command(exe, then.as_deref());
    let mut next = current.clone();
    next["type"] = json!("command");
    next["command"] = json!(cmd);
    next["refreshInterval"] = json!(REFRESH_INTERVAL);
    let action = if next == current {
        Action::Unchanged
    } else {
        Action::Updated
    };
    let detail = match (&wrapped, action) {
        (Some(_), _) => format!("{cmd} (runs your status line first)"),
        _ => cmd,
    };
    root.insert("statusLine".into(), next);
    Ok((Change::new(entry, action, detail), wrapped))
}

fn into_object(v: Value) -> Result<Map<String, Value>, Refused> {
    match v {
        Value::Object(m) => Ok(m),
        _ => Err(Refused::NotAnObject),
    }
}

fn object_at<'a>(
    root: &'a mut Map<String, Value>,
    key: &str,
) -> Result<&'a mut Map<String, Value>, Refused> {
    match root.entry(key).or_insert_with(|| Value::Object(Map::new())) {
        Value::Object(m) => Ok(m),
        _ => Err(Refused::KeyNotAnObject(key.to_string())),
    }
}

fn set(
    map: &mut Map<String, Value>,
    key: &str,
    value: Value,
    entry: &'static str,
    detail: &str,
) -> Change {
    let action = match map.get(key) {
        Some(v) if *v == value => Action::Unchanged,
        Some(_) => Action::Updated,
        None => Action::Added,
    };
    map.insert(key.to_string(), value);
    Change::new(entry, action, detail)
}

fn remove_key(
    root: &mut Map<String, Value>,
    parent: &str,
    key: &str,
    entry: &'static str,
) -> Change {
    let Some(Value::Object(m)) = root.get_mut(parent) else {
        return Change::new(entry, Action::Absent, "");
    };
    if m.shift_remove(key).is_none() {
        return Change::new(entry, Action::Absent, "");
    }
    if m.is_empty() {
        root.shift_remove(parent);
    }
    Change::new(entry, Action::Removed, key)
}

/// `v` with its object keys in `like`'s order where `like` has them (recursively); keys only `v`
/// has follow in their own order. Undoes the re-ordering of a tool that rewrote the file (the
/// `claude plugin` commands do), so our edit stays surgical.
pub fn reorder_like(v: Value, like: &Value) -> Value {
    match (v, like) {
        (Value::Object(mut m), Value::Object(l)) => {
            let mut out = Map::new();
            for (k, lv) in l {
                if let Some(x) = m.shift_remove(k) {
                    out.insert(k.clone(), reorder_like(x, lv));
                }
            }
            out.extend(m);
            Value::Object(out)
        }
        (v, _) => v,
    }
}

/// A line diff of two texts (LCS), with `context` unchanged lines around each change and `…`
/// where lines are left out before a change; empty when they are equal. For `--dry-run` over
/// settings files of a few hundred lines at most.
pub fn diff(old: &str, new: &str, context: usize) -> String {
    use similar::{Algorithm, ChangeTag, capture_diff_slices, group_diff_ops};
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out = String::new();
    // The first old line not shown yet: a group starting past it leaves lines out.
    let mut shown_to = 0;
    for group in group_diff_ops(capture_diff_slices(Algorithm::Lcs, &a, &b), context) {
        for op in &group {
            if op.old_range().start > shown_to {
                out.push_str("  …\n");
            }
            shown_to = op.old_range().end;
            for c in op.iter_changes(&a, &b) {
                let sign = match c.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                out.push_str(&format!("{sign} {}\n", c.value()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(exe: &str) -> InstallOpts {
        InstallOpts {
            exe: exe.into(),
            plugin_dir: "/home/u/.local/share/a2a-mod/plugin".into(),
        }
    }

    #[test]
    fn empty_settings_get_every_entry() {
        let out = install(json!({}), &opts("/usr/local/bin/a2a-mod")).unwrap();
        assert!(out.changes.iter().all(|c| c.action == Action::Added));
        assert_eq!(
            out.settings["statusLine"],
            json!({"type": "command", "command": "/usr/local/bin/a2a-mod statusline", "refreshInterval": 1})
        );
        assert_eq!(out.settings["enabledPlugins"][PLUGIN_ID], json!(true));
        assert_eq!(
            out.settings["permissions"]["allow"],
            json!([PERMISSION_RULE])
        );
        assert_eq!(
            out.settings["env"][BIN_ENV],
            json!("/usr/local/bin/a2a-mod")
        );
    }

    /// A marketplace the user added for the plugin stays theirs; ours moves with the plugin folder.
    #[test]
    fn the_users_own_marketplace_for_the_plugin_is_kept() {
        for source in [
            json!({"source": "github", "repo": "someone/a2a-mod"}),
            json!({"source": "directory", "path": "/home/u/src/a2a-mod"}),
        ] {
            let before = json!({"extraKnownMarketplaces": {MARKETPLACE: {"source": source}}});
            let out = install(before.clone(), &opts("/x/a2a-mod")).unwrap();
            assert_eq!(
                out.settings["extraKnownMarketplaces"],
                before["extraKnownMarketplaces"]
            );
            assert_eq!(out.changes[0].action, Action::Unchanged, "{source}");
            assert!(out.changes[0].detail.starts_with("kept: yours"), "{source}");
        }
        let old = json!({"extraKnownMarketplaces": {MARKETPLACE: {"source":
            {"source": "directory", "path": "/old/a2a/plugin"}}}});
        let out = install(old, &opts("/x/a2a-mod")).unwrap();
        assert_eq!(out.changes[0].action, Action::Updated);
        assert_eq!(
            out.settings["extraKnownMarketplaces"][MARKETPLACE]["source"]["path"],
            "/home/u/.local/share/a2a-mod/plugin"
        );
    }

    #[test]
    fn a_second_install_changes_nothing() {
        let once = install(json!({}), &opts("/x/a2a-mod")).unwrap().settings;
        let twice = install(once.clone(), &opts("/x/a2a-mod")).unwrap();
        assert_eq!(twice.settings, once);
        assert!(twice.changes.iter().all(|c| c.action == Action::Unchanged));
    }

    /// A moved binary must update our entries in place, never add a second status line or rule.
    #[test]
    fn a_moved_binary_updates_in_place() {
        let user =
            json!({"statusLine": {"type": "command", "command": "starship prompt", "padding": 2}});
        let once = install(user, &opts("/old dir/a2a-mod")).unwrap();
        assert!(once.wrapped.is_some());
        let moved = install(once.settings, &opts("/new/a2a-mod")).unwrap();
        assert!(moved.wrapped.is_none());
        assert_eq!(
            moved.settings["statusLine"]["command"],
            json!("/new/a2a-mod statusline --then 'starship prompt'")
        );
        assert_eq!(moved.settings["statusLine"]["padding"], json!(2));
        assert_eq!(
            moved.settings["permissions"]["allow"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn uninstall_restores_the_users_status_line_and_keys() {
        let user = json!({
            "model": "opus",
            "statusLine": {"type": "command", "command": "echo 'it''s me'", "refreshInterval": 5},
            "permissions": {"allow": ["Bash(ls)"], "deny": []},
            "hooks": {"Stop": []},
        });
        let inst = install(user.clone(), &opts("/x/a2a-mod")).unwrap();
        let (back, _) = uninstall(inst.settings.clone(), inst.wrapped.as_ref()).unwrap();
        assert_eq!(back, user);
        // Without the saved copy the command still comes back, from `--then`.
        let (back, _) = uninstall(inst.settings, None).unwrap();
        assert_eq!(back["statusLine"]["command"], user["statusLine"]["command"]);
    }

    #[test]
    fn wrong_types_are_refused() {
        for bad in [
            json!([]),
            json!({"permissions": {"allow": "all"}}),
            json!({"env": []}),
            json!({"statusLine": {"type": "command"}}),
        ] {
            assert!(install(bad, &opts("/x/a2a-mod")).is_err());
        }
    }

    #[test]
    fn our_status_line_is_recognised_by_shape() {
        for (cmd, then) in [
            ("a2a-mod statusline", None),
            ("/opt/x/a2a-mod statusline --then 'a b'", Some("a b")),
            ("'/p q/a2a-mod' statusline --then=x", Some("x")),
        ] {
            assert_eq!(parse_statusline(cmd), Some(then.map(String::from)), "{cmd}");
        }
        for cmd in [
            "a2a-modx statusline",
            "a2a-mod watch",
            "echo a2a-mod statusline",
        ] {
            assert_eq!(parse_statusline(cmd), None, "{cmd}");
        }
        let q = statusline_command("/a b/a2a-mod", Some("printf '%s' \"$x\""));
        assert_eq!(
            parse_statusline(&q),
            Some(Some("printf '%s' \"$x\"".to_string()))
        );
    }

    #[test]
    fn rules_of_our_server_only() {
        assert!(is_our_rule("mcp__plugin_a2a-mod_a2a"));
        assert!(is_our_rule("mcp__plugin_a2a-mod_a2a__send"));
        assert!(!is_our_rule("mcp__plugin_a2a-mod_a2ab"));
        assert!(!is_our_rule("mcp__a2a__send"));
    }

    #[test]
    fn reorder_restores_the_users_key_order() {
        let user = json!({"b": 1, "a": {"y": 1, "x": 2}});
        let rewritten = json!({"a": {"x": 2, "y": 1, "z": 3}, "new": 0, "b": 1});
        let back = reorder_like(rewritten, &user);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            r#"{"b":1,"a":{"y":1,"x":2,"z":3},"new":0}"#
        );
    }

    #[test]
    fn diff_shows_only_changed_lines_with_context() {
        let d = diff("a\nb\nc\nd\ne\nf\n", "a\nb\nc\nX\ne\nf\n", 1);
        assert_eq!(d, "  …\n  c\n- d\n+ X\n  e\n");
        assert_eq!(diff("same\n", "same\n", 2), "");
    }
}
