//! `a2a-mod install [--scope user|project] [--dry-run] [--uninstall]`: the IO shell around
//! [`claude::settings`](a2a_mod_claude::settings) (pure). It writes the plugin folder, registers and
//! enables the plugin (through the `claude` CLI when it is on PATH, which also fills Claude Code's
//! plugin records; otherwise by writing the same settings keys), then writes our status line,
//! permission rule and binary path, with a backup, atomically, and reports each entry.
//!
//! A settings file that is not valid JSON (or holds a wrong type where we must write) is refused
//! before anything is touched. The status line it replaces is remembered in
//! `state/install.json` so `--uninstall` restores it exactly (its command is also kept in our
//! command's `--then`, the fallback when that record is gone).

use super::Run;
use super::setup::{read_settings_or_empty, scope_name, settings_path, which};
use super::shell::{out, run_with_deadline, user_command};
use crate::cli::InstallArgs;
use a2a_mod_claude::settings::{self, Action, Change, InstallOpts, MARKETPLACE, PLUGIN_ID};
use a2a_mod_os::env::Ctx;
use anyhow::{Context, Result, anyhow};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `claude` CLI answers offline in well under a second; this only guards against a hang.
const CLAUDE_CLI_DEADLINE: Duration = Duration::from_secs(60);

fn pretty(v: &Value) -> String {
    // invariant: a Value always serialises.
    let mut s = serde_json::to_string_pretty(v).unwrap_or_default();
    s.push('\n');
    s
}

fn this_exe() -> Result<String> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("cannot find the running a2a-mod binary")?;
    exe.to_str().map(str::to_string).ok_or_else(|| {
        anyhow!(
            "the binary's path \"{}\" is not UTF-8 — move a2a-mod to a plain path",
            exe.display()
        )
    })
}

/// What writing the plugin folder would do.
fn plugin_files_action(dir: &Path, exe: &str) -> Action {
    let mut any_missing = false;
    let mut any_diff = false;
    for (rel, text, _) in a2a_mod_claude::plugin::installed_files(exe) {
        match std::fs::read_to_string(dir.join(rel)) {
            Ok(t) if t == text => {}
            Ok(_) => any_diff = true,
            Err(_) => any_missing = true,
        }
    }
    match (any_missing, any_diff) {
        (false, false) => Action::Unchanged,
        (true, false) if !dir.join(".claude-plugin").exists() => Action::Added,
        _ => Action::Updated,
    }
}

/// The plugin files with the hooks, monitor and MCP server naming `exe` directly.
fn write_plugin_files(dir: &Path, exe: &str) -> Result<()> {
    for (rel, text, mode) in a2a_mod_claude::plugin::installed_files(exe) {
        let p = dir.join(rel);
        if std::fs::read_to_string(&p).is_ok_and(|t| t == text) {
            continue;
        }
        a2a_mod_os::fsx::write_atomic(&p, text.as_bytes(), Some(mode))
            .with_context(|| format!("cannot write the plugin file \"{}\"", p.display()))?;
    }
    Ok(())
}

/// Runs `claude <args>`; its last output line on success, else why not.
fn run_claude(claude: &Path, args: &[&str]) -> Result<String> {
    let (out, _) = run_with_deadline(Command::new(claude).args(args), &[], CLAUDE_CLI_DEADLINE)
        .map_err(|e| anyhow!("cannot run \"{}\": {e}", claude.display()))?;
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("")
        .to_string();
    if out.status.success() {
        Ok(last)
    } else {
        Err(anyhow!(last))
    }
}

fn claude_cmd_text(args: &[&str]) -> String {
    let words: Vec<String> = args.iter().map(|a| settings::shell_quote(a)).collect();
    format!("claude {}", words.join(" "))
}

/// The install record: settings path → the user's status line we wrapped.
fn load_record(ctx: &Ctx) -> Map<String, Value> {
    std::fs::read(ctx.install_record_path())
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        })
        .unwrap_or_default()
}

fn save_record(ctx: &Ctx, record: &Map<String, Value>) -> Result<()> {
    let path = ctx.install_record_path();
    a2a_mod_os::fsx::write_atomic(
        &path,
        pretty(&Value::Object(record.clone())).as_bytes(),
        // In the state folder, private like the rest of it.
        Some(a2a_mod_os::fsx::PRIVATE_FILE),
    )
    .with_context(|| format!("cannot write \"{}\"", path.display()))
}

fn backup(path: &Path) -> Result<Option<PathBuf>> {
    if !path.exists() {
        return Ok(None);
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".a2a-mod.bak");
    let bak = path.with_file_name(name);
    let bytes =
        std::fs::read(path).with_context(|| format!("cannot read \"{}\"", path.display()))?;
    a2a_mod_os::fsx::write_atomic(&bak, &bytes, None)
        .with_context(|| format!("cannot write the backup \"{}\"", bak.display()))?;
    Ok(Some(bak))
}

fn report_line(c: &Change, dry_run: bool) -> String {
    let word = if dry_run && c.action.changes() {
        format!("would be {}", c.action.word())
    } else {
        c.action.word().to_string()
    };
    if c.detail.is_empty() {
        format!("  {word:<10} {}", c.entry)
    } else {
        format!("  {word:<10} {}: {}", c.entry, c.detail)
    }
}

impl Run for InstallArgs {
    fn run(self) -> Result<i32> {
        let ctx = user_command()?;
        install(&ctx, &self)?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

/// The settings file `install` edits, as it is before, and the Claude Code CLI if there is one.
struct Target {
    path: PathBuf,
    before: Value,
    /// The file's path as the record of wrapped status lines keys it.
    key: String,
    scope: &'static str,
    claude: Option<PathBuf>,
}

impl Target {
    /// A settings key we must write but cannot (a wrong type): nothing is changed.
    fn refuse(&self, e: settings::Refused) -> anyhow::Error {
        anyhow!(
            "cannot edit \"{}\": {e} — fix that key by hand, then run again; nothing was changed",
            self.path.display()
        )
    }

    fn write(&self, settings: &Value) -> Result<()> {
        a2a_mod_os::fsx::write_atomic(&self.path, pretty(settings).as_bytes(), None)
            .with_context(|| format!("cannot write \"{}\"", self.path.display()))
    }
}

fn install(ctx: &Ctx, args: &InstallArgs) -> Result<()> {
    let path = settings_path(args.scope)?;
    let t = Target {
        before: read_settings_or_empty(&path)?,
        key: path.to_string_lossy().into_owned(),
        path,
        scope: scope_name(args.scope),
        claude: which("claude"),
    };
    if args.uninstall {
        uninstall(ctx, args, &t)
    } else {
        install_into(ctx, args, &t)
    }
}

fn uninstall(ctx: &Ctx, args: &InstallArgs, t: &Target) -> Result<()> {
    let (path, before, scope) = (&t.path, &t.before, t.scope);
    let mut record = load_record(ctx);
    let (after, changes) =
        settings::uninstall(before.clone(), record.get(&t.key)).map_err(|e| t.refuse(e))?;
    let mut lines = vec![format!(
        "a2a-mod install --uninstall ({scope} scope): {}",
        path.display()
    )];
    lines.extend(changes.iter().map(|c| report_line(c, args.dry_run)));
    let changed = changes.iter().any(|c| c.action.changes());
    if args.dry_run {
        lines.push(dry_run_tail(before, &after, changed));
        return out(&lines.join("\n"));
    }
    if !changed {
        lines.push("Nothing to remove: a2a-mod is not installed there.".into());
        return out(&lines.join("\n"));
    }
    let bak = backup(path)?;
    let mut after = after;
    let plugin_was_on = changes[1].action == Action::Removed;
    if let (Some(claude), true) = (&t.claude, plugin_was_on) {
        // Lets Claude Code drop its own records of the plugin too (installed_plugins.json,
        // the cached copy); the settings keys are then removed below whatever it did.
        for a in [
            &["plugin", "uninstall", PLUGIN_ID, "--scope", scope][..],
            &[
                "plugin",
                "marketplace",
                "remove",
                MARKETPLACE,
                "--scope",
                scope,
            ][..],
        ] {
            if let Err(e) = run_claude(claude, a) {
                lines.push(format!("  note: `{}` said: {e}", claude_cmd_text(a)));
            }
        }
        let now = read_settings_or_empty(path)?;
        let (cleaned, _) = settings::uninstall(now, record.get(&t.key)).map_err(|e| t.refuse(e))?;
        after = settings::reorder_like(prune_emptied(cleaned, before), before);
    }
    t.write(&after)?;
    if record.shift_remove(&t.key).is_some() {
        save_record(ctx, &record)?;
    }
    if let Some(b) = bak {
        lines.push(format!("Backup of the previous file: {}", b.display()));
    }
    lines.push("Removed. Restart Claude Code sessions for it to take effect.".into());
    out(&lines.join("\n"))
}

/// The path the settings name for the binary at `real`: itself, or for a binary in Claude Code's
/// plugin cache (the plugin from npm brought it) our link to it, since the cache folder is per
/// plugin version and goes away after an update (the session start hook moves the link on).
fn settings_exe(ctx: &Ctx, real: &str) -> Result<String> {
    if !a2a_mod_claude::plugin::in_plugin_cache(Path::new(real)) {
        return Ok(real.to_owned());
    }
    let link = ctx.bin_link();
    link.to_str().map(str::to_owned).ok_or_else(|| {
        anyhow!(
            "the link's path \"{}\" is not UTF-8 — set A2A_MOD_HOME or XDG_DATA_HOME to a plain path",
            link.display()
        )
    })
}

fn install_into(ctx: &Ctx, args: &InstallArgs, t: &Target) -> Result<()> {
    let (path, before, scope) = (&t.path, &t.before, t.scope);
    let real = this_exe()?;
    let exe = settings_exe(ctx, &real)?;
    let plugin_dir = ctx.plugin_dir();
    let plugin_dir_s = plugin_dir
        .to_str()
        .ok_or_else(|| anyhow!("the plugin folder \"{}\" is not UTF-8 — set A2A_MOD_HOME or XDG_DATA_HOME to a plain path", plugin_dir.display()))?
        .to_string();
    let opts = InstallOpts {
        exe: exe.clone(),
        plugin_dir: plugin_dir_s.clone(),
    };
    let plan = settings::install(before.clone(), &opts).map_err(|e| t.refuse(e))?;
    let files = Change {
        entry: "plugin files",
        action: plugin_files_action(&plugin_dir, &exe),
        detail: plugin_dir_s.clone(),
    };
    let mut changes = vec![files];
    changes.extend(plan.changes.iter().cloned());
    let plugin_changes = plan.changes[..2].iter().any(|c| c.action.changes());
    let cli_steps: Vec<Vec<&str>> = match (&t.claude, plugin_changes) {
        (Some(_), true) => vec![
            vec![
                "plugin",
                "marketplace",
                "add",
                &plugin_dir_s,
                "--scope",
                scope,
            ],
            vec!["plugin", "install", PLUGIN_ID, "--scope", scope],
        ],
        _ => Vec::new(),
    };
    let mut lines = vec![format!(
        "a2a-mod install ({scope} scope): {}",
        path.display()
    )];
    if exe != real {
        lines.push(format!(
            "  the binary: {exe}, a link to {real} in Claude Code's plugin cache (it follows plugin updates)"
        ));
    }
    lines.extend(changes.iter().map(|c| report_line(c, args.dry_run)));
    let changed = changes.iter().any(|c| c.action.changes());

    if args.dry_run {
        for s in &cli_steps {
            lines.push(format!("  would run: {}", claude_cmd_text(s)));
        }
        lines.push(dry_run_tail(before, &plan.settings, changed));
        return out(&lines.join("\n"));
    }
    if exe != real {
        a2a_mod_os::fsx::link_atomic(Path::new(&exe), Path::new(&real))?;
    }
    if !changed {
        lines.push("Nothing to change: a2a-mod is already installed there.".into());
        return out(&lines.join("\n"));
    }

    write_plugin_files(&plugin_dir, &exe)?;
    let settings_changed = plan.changes.iter().any(|c| c.action.changes());
    let bak = if settings_changed {
        backup(path)?
    } else {
        None
    };
    let mut final_settings = plan.settings.clone();
    if let Some(claude) = &t.claude
        && run_cli_steps(claude, &cli_steps, &mut lines)
    {
        // The CLI rewrote the file; apply our entries to what it wrote.
        let now = read_settings_or_empty(path)?;
        let redone = settings::install(now, &opts)
            .map_err(|e| t.refuse(e))?
            .settings;
        final_settings = settings::reorder_like(redone, &plan.settings);
    }
    if settings_changed {
        t.write(&final_settings)?;
    }
    if let Some(w) = plan.wrapped {
        let mut record = load_record(ctx);
        record.insert(t.key.clone(), w);
        save_record(ctx, &record)?;
    }
    if let Some(b) = bak {
        lines.push(format!("Backup of the previous file: {}", b.display()));
    }
    if t.claude.is_none() {
        lines.push(
            "Claude Code (`claude`) is not on PATH: the settings keys were written directly."
                .into(),
        );
    }
    lines.push(
        "Next: start `claude` in a project (restart running sessions); check the set-up with `a2a-mod doctor`."
            .into(),
    );
    out(&lines.join("\n"))
}

/// Runs the Claude Code CLI's plugin steps in order, each reported in `lines`; stops at the
/// first that fails (the settings keys are then written directly). Whether there were steps and
/// all ran, so the file the CLI rewrote is the one to add our entries to.
fn run_cli_steps(claude: &Path, steps: &[Vec<&str>], lines: &mut Vec<String>) -> bool {
    for s in steps {
        match run_claude(claude, s) {
            Ok(msg) => lines.push(format!("  ran: {} → {msg}", claude_cmd_text(s))),
            Err(e) => {
                lines.push(format!(
                    "  note: `{}` failed ({e}); writing the same settings keys directly",
                    claude_cmd_text(s)
                ));
                return false;
            }
        }
    }
    !steps.is_empty()
}

fn dry_run_tail(before: &Value, after: &Value, changed: bool) -> String {
    if !changed {
        return "Dry run: nothing would change.".into();
    }
    // Both sides in the form we would write, so the diff shows content, not re-indentation.
    let d = settings::diff(&pretty(before), &pretty(after), 2);
    format!("Dry run, nothing written. The settings would change like this:\n{d}")
}

/// After `claude plugin uninstall`/`marketplace remove`, which leave `{}` behind: drop those
/// objects when all they held before was ours.
fn prune_emptied(after: Value, before: &Value) -> Value {
    let Value::Object(mut m) = after else {
        return after;
    };
    for (parent, ours) in [
        ("enabledPlugins", PLUGIN_ID),
        ("extraKnownMarketplaces", MARKETPLACE),
    ] {
        let emptied = m
            .get(parent)
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty);
        let only_ours = before
            .get(parent)
            .and_then(Value::as_object)
            .is_some_and(|o| o.len() == 1 && o.contains_key(ours));
        if emptied && only_ours {
            m.shift_remove(parent);
        }
    }
    Value::Object(m)
}
