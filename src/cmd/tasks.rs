//! `send`, `task`, `cancel`, `tasks`: the tools, from the command line. Same code path as Claude's
//! tools (`ops::Session`), so a user can reproduce exactly what Claude saw.

use super::{load, out, out_json, runtime};
use crate::cli::{SendArgs, TaskArgs, TasksArgs};
use crate::env::{Ctx, cli_session};
use crate::ops::{Budget, DEFAULT_BUDGET, Outcome, Session};
use crate::state::{Store, TaskRecord, session};
use anyhow::Result;

fn print_outcome(o: &Outcome, json: bool) -> Result<()> {
    if json { out_json(o) } else { out(&o.note) }
}

pub fn send(ctx: &Ctx, a: SendArgs) -> Result<()> {
    let s = Session::open(ctx, load(ctx)?, &cli_session(a.session.session.as_deref())?)?;
    let message = a.message.join(" ");
    let o = runtime()?.block_on(s.send(
        &a.alias,
        &message,
        a.task_id.as_deref(),
        Budget::new(DEFAULT_BUDGET),
        &|_| {},
    ))?;
    print_outcome(&o, a.json)
}

pub fn task(ctx: &Ctx, a: TaskArgs) -> Result<()> {
    let s = Session::open(ctx, load(ctx)?, &cli_session(a.session.session.as_deref())?)?;
    let o = runtime()?.block_on(s.task(&a.task_id, Budget::new(DEFAULT_BUDGET)))?;
    print_outcome(&o, a.json)
}

pub fn cancel(ctx: &Ctx, a: TaskArgs) -> Result<()> {
    let s = Session::open(ctx, load(ctx)?, &cli_session(a.session.session.as_deref())?)?;
    let o = runtime()?.block_on(s.cancel(&a.task_id, Budget::new(DEFAULT_BUDGET)))?;
    print_outcome(&o, a.json)
}

#[derive(serde::Serialize)]
struct Listed<'a> {
    session: &'a str,
    #[serde(flatten)]
    task: &'a TaskRecord,
}

pub fn tasks(ctx: &Ctx, a: TasksArgs) -> Result<()> {
    let sessions = if a.all {
        session::list(ctx)
    } else {
        vec![session::resolve(ctx, &cli_session(a.session.as_deref())?)]
    };
    let mut rows = Vec::new();
    for id in &sessions {
        if let Some(store) = Store::open_read_wait(&session::db_path(ctx, id))? {
            rows.extend(store.all()?.into_iter().map(|t| (id.clone(), t)));
        }
    }
    if a.json {
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
    let now = crate::env::now_ms();
    let mut text = String::new();
    for (s, t) in &rows {
        let what = crate::core::text::one_line(&t.message, 41);
        let status = crate::core::wake::outcome_word(&crate::wake::facts(t));
        let age = (t.ended_ms.unwrap_or(now) - t.started_ms).max(0) / 1000;
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
