//! `a2a-mod tasks`: this session's tasks (or every session's, `--all`), read from the stores;
//! `--prune` removes old sessions' saved results (`artifacts.rs`); `--remote` lists a worker's
//! own tasks (its ListTasks).

use super::Run;
use super::shell::{out, out_json, user_command};
use crate::cli::TasksArgs;
use a2a_mod_os::env::cli_session;
use a2a_mod_store::{Reader, SessionPaths, TaskRecord, session};
use anyhow::Result;

#[derive(serde::Serialize)]
struct Listed<'a> {
    session: &'a str,
    #[serde(flatten)]
    task: &'a TaskRecord,
    /// The poller owns it (live); a column of its own in stores before schema step 8.
    tracked: bool,
}

impl Run for TasksArgs {
    fn run(self) -> Result<i32> {
        let ctx = user_command()?;
        if self.prune {
            prune(&ctx, self.json)?;
            return Ok(a2a_mod_claude::error::EXIT_OK);
        }
        if let Some(alias) = &self.remote {
            remote(&ctx, alias, self.context_id.as_deref(), self.json)?;
            return Ok(a2a_mod_claude::error::EXIT_OK);
        }
        list(&ctx, self)?;
        Ok(a2a_mod_claude::error::EXIT_OK)
    }
}

/// How long `tasks --remote` waits for the worker.
const REMOTE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(15);

/// `tasks --remote ALIAS`: the worker's own tasks, newest first as it lists them, one line each
/// (the worker's words cleaned and cut), or the JSON of them.
fn remote(
    ctx: &a2a_mod_os::env::Ctx,
    alias: &str,
    context_id: Option<&str>,
    json: bool,
) -> Result<()> {
    use a2a_mod_core::text::one_line;
    let cfg = super::shell::load(ctx)?;
    let w = cfg.worker(alias)?;
    let worker = a2a_mod_a2a::Worker::new(alias, w.clone(), a2a_mod_a2a::http_client());
    let deadline = tokio::time::Instant::now() + REMOTE_TIMEOUT;
    let listed = super::shell::runtime()?
        .block_on(worker.list_tasks(context_id, deadline))
        .map_err(|e| a2a_mod_app::session::worker_error(alias, &w.url, &e))?;
    let Some(mut listed) = listed else {
        return out(&format!(
            "worker {alias:?} speaks A2A 0.3, which has no ListTasks: it lists no tasks of its own \
             (`a2a-mod tasks` lists the ones this session sent)"
        ));
    };
    // The worker's text, as bounded as anywhere else it is shown.
    for t in &mut listed.tasks {
        t.text = t.text.as_deref().map(|x| {
            let clean = a2a_mod_core::fence::clean_multiline(x);
            a2a_mod_core::fence::bound(&clean, a2a_mod_core::bounds::LISTED_TEXT_CHARS)
                .0
                .to_string()
        });
        t.question = t.question.as_deref().map(|q| one_line(q, 200));
    }
    if json {
        return out_json(&listed);
    }
    if listed.tasks.is_empty() {
        return out(&format!("worker {alias:?} lists no tasks"));
    }
    let mut text = String::new();
    for t in &listed.tasks {
        let words = t.question.as_deref().or(t.text.as_deref()).unwrap_or("");
        text.push_str(&format!(
            "{}  {}  context {}  {}\n",
            t.task_id,
            t.state,
            t.context_id.as_deref().unwrap_or("-"),
            one_line(words, 80)
        ));
    }
    if listed.left_out > 0 {
        text.push_str(&format!(
            "({} more the worker listed are not shown)\n",
            listed.left_out
        ));
    }
    out(&text)
}

/// `tasks --prune`: the results of sessions idle past `[results] keep_days`, removed; live
/// sessions' kept whatever their age.
fn prune(ctx: &a2a_mod_os::env::Ctx, json: bool) -> Result<()> {
    let keep = super::shell::load(ctx)?.results;
    let now = std::time::SystemTime::now();
    let live: Vec<_> = a2a_mod_results::artifacts::sessions(ctx, now)
        .into_iter()
        .filter(|s| s.live && s.idle_s >= keep.keep().as_secs())
        .collect();
    let gone = a2a_mod_results::artifacts::prune(ctx, keep.keep(), now)?;
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

fn list(ctx: &a2a_mod_os::env::Ctx, a: TasksArgs) -> Result<()> {
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
            t.life.result = a2a_mod_results::note::whole_result(ctx, s, t);
        }
        let listed: Vec<Listed<'_>> = rows
            .iter()
            .map(|(s, t)| Listed {
                session: s,
                task: t,
                tracked: t.is_live(),
            })
            .collect();
        return out_json(&listed);
    }
    if rows.is_empty() {
        return out("no tasks");
    }
    let now = a2a_mod_os::env::now_ms();
    let mut text = String::new();
    let (sessions, records): (Vec<String>, Vec<TaskRecord>) = rows.into_iter().unzip();
    let listed = a2a_mod_app::session::task_list(records, now, a2a_mod_app::session::Listing::All);
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
