//! Claude Code hooks (`a2a-mod hook <event>`): JSON on stdin, JSON on stdout, exit codes from
//! `error.rs`. They run on every prompt and tool call, so: no runtime, no network, a read-only
//! look first, and silence with exit 0 when there is nothing to say or anything goes wrong —
//! a hook of ours must never block the user's turn. The one deliberate non-zero exit is `wake`
//! (asyncRewake: exit 2 wakes Claude with stderr); the one that may wait is `stop`, and only in a
//! session nobody attends (`mode.rs`).

pub mod mode;
mod rewake;
mod stop;

use crate::error::EXIT_OK;
pub use crate::hook_input::Entry;
use crate::hook_input::{HookEvent, HookInput, SessionSource, WireHookInput};
use a2a_mod_os::env::{Ctx, now_ms, valid_session_id};
use a2a_mod_store::{Reader, SessionPaths, Store, pids, session};
use std::io::{Read, Write};

/// Reads the hook's stdin: at most 4 MiB (a PostToolUse payload carries the tool's whole output).
fn read_input() -> WireHookInput {
    let mut buf = Vec::new();
    let _ = std::io::stdin().take(4 << 20).read_to_end(&mut buf);
    WireHookInput::parse(&buf)
}

pub fn run(hook: Entry) -> i32 {
    let input = HookInput::from((hook, read_input()));
    let Ok(ctx) = Ctx::from_env() else {
        return EXIT_OK;
    };
    let id = &input.session_id;
    if !valid_session_id(id) {
        return EXIT_OK;
    }
    match input.event {
        HookEvent::SessionStart { source } => {
            session_start(&ctx, id, source);
            record_mode(&ctx, id);
            emit(&ctx, id, "SessionStart")
        }
        HookEvent::UserPromptSubmit => emit(&ctx, id, "UserPromptSubmit"),
        HookEvent::PostToolUse => emit(&ctx, id, "PostToolUse"),
        HookEvent::Wake => rewake::run(&ctx, id),
        // Our own block answer makes Claude Code run Stop again with `stop_hook_active`; the
        // wait already never loops (nothing live and nothing undelivered exits at once), so the
        // flag changes nothing.
        HookEvent::Stop { .. } => stop::run(&ctx, id),
    }
}

/// `/clear` starts a new session id in the same Claude Code process: link it to the store the
/// MCP server and monitor keep using. Startup and resume record who owns this process's store.
/// First, a plugin updated since the last session moves `install`'s link on to its binary.
fn session_start(ctx: &Ctx, session_id: &str, source: SessionSource) {
    follow_update(ctx);
    let Some(pid) = pids::claude_pid_from_env() else {
        return;
    };
    if source == SessionSource::Clear {
        if let Some(owner) = pids::lookup(ctx, pid) {
            let _ = session::link(ctx, session_id, &owner);
        }
    } else {
        let paths = SessionPaths::locate(ctx, session_id);
        pids::record(ctx, pid, &paths.owner);
        // Resumed with tasks still live: make sure they are polled.
        if let Ok(Some(s)) = Reader::open(&paths.db) {
            crate::poller::ensure_if_live(ctx, &paths.owner, &s);
        }
    }
}

/// Moves `install`'s link ([`Ctx::bin_link`](a2a_mod_os::env::Ctx::bin_link)) on to this binary when the link names another
/// binary in the plugin cache and this one is there too: the plugin was updated, Claude Code
/// installed the new version in a folder of its own and will remove the old one, and the status
/// line and the recorded binary (which name the link) must go on running. Run by the session
/// start hook, which the new version's launcher starts with its own binary. Nothing happens
/// without a link (install made none: the binary was elsewhere) or with one to elsewhere.
fn follow_update(ctx: &Ctx) {
    let link = ctx.bin_link();
    let Ok(target) = std::fs::read_link(&link) else {
        return;
    };
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    if exe != target
        && crate::plugin::in_plugin_cache(&exe)
        && crate::plugin::in_plugin_cache(&target)
    {
        let _ = a2a_mod_os::fsx::link_atomic(&link, &exe);
    }
}

/// For the MCP server, which cannot tell a terminal from `claude -p` by its own environment: the
/// mode under the hook's id and under the store owner it resolves to (after `/clear`'s link).
fn record_mode(ctx: &Ctx, session_id: &str) {
    let m = mode::from_env();
    mode::record(ctx, session_id, m);
    let owner = SessionPaths::locate(ctx, session_id).owner;
    if owner != session_id {
        mode::record(ctx, &owner, m);
    }
}

/// Attaches, as `additionalContext`, every ended task's outcome Claude has not been given, and
/// (not after each tool call) that the state folder takes no writes while tasks are in flight.
fn emit(ctx: &Ctx, session_id: &str, event: &str) -> i32 {
    let SessionPaths {
        owner, db: path, ..
    } = SessionPaths::locate(ctx, session_id);
    // The common case, nothing to say, costs one read-only query, two system calls and no write.
    let Ok(Some(reader)) = Reader::open(&path) else {
        return EXIT_OK;
    };
    let mut parts = Vec::new();
    if reader.has_undelivered().unwrap_or(false) {
        parts.extend(undelivered(ctx, &owner, &path));
    }
    if event != "PostToolUse" {
        parts.extend(cannot_save(&path, &reader));
    }
    if parts.is_empty() {
        return EXIT_OK;
    }
    let out = serde_json::json!({
        "hookSpecificOutput": {"hookEventName": event, "additionalContext": parts.join("\n\n")}
    });
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{out}");
    let _ = o.flush();
    EXIT_OK
}

/// The outcomes not given yet, taken (marked given) in one write; `None` when the write fails.
fn undelivered(ctx: &Ctx, owner: &str, path: &std::path::Path) -> Option<String> {
    let store = Store::open(path).ok()?;
    let batch = store.take_undelivered(now_ms()).ok()?;
    if batch.is_empty() {
        return None;
    }
    let left = store.count_undelivered().unwrap_or(0);
    Some(crate::wake::context(ctx, owner, &batch, left))
}

/// While the state folder takes no writes (a full disk, a read-only folder) and tasks are in
/// flight, nothing Claude delegated can move on or be told, which only the status line would
/// otherwise say. Told at each prompt (and session start) while it lasts: a hook can record
/// nothing then, so it cannot tell only once, and after every tool call it would be noise.
fn cannot_save(path: &std::path::Path, reader: &Reader) -> Option<String> {
    let dir = path.parent()?;
    let why = a2a_mod_os::fsx::unwritable(dir)?;
    let live = reader.live_count().ok().filter(|n| *n > 0)?;
    let (what, fix) = (why.what(), why.fix());
    let tasks = if live == 1 {
        "The 1 delegated task still running is".to_owned()
    } else {
        format!("The {live} delegated tasks still running are")
    };
    Some(format!(
        "[a2a-mod] cannot save to \"{}\": {what}. {tasks} kept, but nothing about them can be \
         recorded or told until it can save again: tell the user to {fix}. A new send fails \
         until then.",
        dir.display()
    ))
}
