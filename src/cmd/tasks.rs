//! `a2a-mod tasks`: this session's tasks (or every session's, `--all`), read from the stores;
//! `--prune` removes old sessions' saved results (`artifacts.rs`).

use super::Run;
use super::shell::{out, out_json, user_command};
use crate::cli::TasksArgs;
use a2a_mod_store::{Reader, SessionPaths, TaskRecord, session};
use a2a_mod_sys::env::cli_session;
use anyhow::Result;

#[derive(serde::Serialize)]
struct Listed<'a> {
    session: &'a str,
    #[serde(flatten)]
    task: &'a TaskRecord,
}

impl Run for TasksArgs {
    fn run(self) -> Result<i32> {
        let ctx = user_command()?;
        if self.prune {
            prune(&ctx, self.json)?;
            return Ok(crate::error::EXIT_OK);
        }
        list(&ctx, self)?;
        Ok(crate::error::EXIT_OK)
    }
}

/// `tasks --prune`: the results of sessions idle past `[results] keep_days`, removed; live
/// sessions' kept whatever their age.
fn prune(ctx: &a2a_mod_sys::env::Ctx, json: bool) -> Result<()> {
    let keep = super::shell::load(ctx)?.results;
    let now = std::time::SystemTime::now();
    let live: Vec<_> = crate::results::artifacts::sessions(ctx, now)
        .into_iter()
        .filter(|s| s.live && s.idle_s >= keep.keep().as_secs())
        .collect();
    let gone = crate::results::artifacts::prune(ctx, keep.keep(), now)?;
    if json {
        return out_json(&serde_json::json!({ "removed": gone, "keptLive": live }));
    }
    let mut text = String::new();
    for s in &gone {
        text.push_str(&format!(
            "removed {} ({} bytes, idle {} days)\n",
            s.path.display(),
            s.bytes,
            s.idle_s / 86_400
        ));
    }
    for s in &live {
        text.push_str(&format!(
            "kept {}: session {} is live\n",
            s.path.display(),
            s.session
        ));
    }
    if text.is_empty() {
        text = format!(
            "nothing to prune: no session's results are older than {} days",
            keep.keep_days
        );
    }
    out(&text)
}

fn list(ctx: &a2a_mod_sys::env::Ctx, a: TasksArgs) -> Result<()> {
    let sessions = if a.all {
        session::list(ctx)
            .iter()
            .map(|id| SessionPaths::of_owner(ctx, id))
            .collect()
    } else {
        vec![SessionPaths::locate(
            ctx,
            &cli_session(a.session.as_deref())?,
        )]
    };
    let mut rows = Vec::new();
    for paths in &sessions {
        if let Some(store) = Reader::open_wait(&paths.db)? {
            rows.extend(store.all()?.into_iter().map(|t| (paths.owner.clone(), t)));
        }
    }
    if a.json {
        // The listing's result is the whole, as before the store kept only a long one's head.
        for (s, t) in &mut rows {
            t.result = crate::results::note::whole_result(ctx, s, t);
        }
        let listed: Vec<Listed<'_>> = rows
            .iter()
            .map(|(s, t)| Listed {
                session: s,
                task: t,
            })
            .collect();
        return out_json(&listed);
    }
    if rows.is_empty() {
        return out("no tasks");
    }
    let now = a2a_mod_sys::env::now_ms();
    let mut text = String::new();
    let (sessions, records): (Vec<String>, Vec<TaskRecord>) = rows.into_iter().unzip();
    let listed = crate::session::task_list(records, now, crate::session::Listing::All);
    for (s, l) in sessions.iter().zip(&listed) {
        let t = &l.task;
        let what = a2a_mod_core::text::one_line(&t.message, 41);
        let (status, age) = (l.ending.word, l.age_s);
        let prefix = if a.all {
            format!("{s}  ")
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{prefix}{}  {}  {:<17} {:>4}s  {}\n",
            t.worker, t.task_id, status, age, what,
        ));
    }
    out(&text)
}
