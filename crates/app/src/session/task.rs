//! `task`, `cancel` and `tasks`: one task looked up again, one canceled, the session's list.

use super::errors::{unknown_task, worker_error};
use super::{Budget, Outcome, Session};
use a2a_mod_a2a::{A2aError, TaskView};
use a2a_mod_core::fence;
use a2a_mod_core::lifecycle::TaskKey;
use a2a_mod_core::task::EndReason;
use a2a_mod_os::env::now_ms;
use a2a_mod_results::overflow::for_row;
use a2a_mod_store::TaskRecord;
use anyhow::{Result, anyhow};

impl Session {
    /// `task`: GetTask now. Claude gets the outcome, so it is marked told; a live task that was
    /// dropped (lost contact) is tracked again.
    pub async fn task(&self, task_id: &str, budget: Budget) -> Result<Outcome> {
        let rec = self.find(task_id)?;
        let worker = self.worker(&rec.worker)?;
        let view = match worker
            .get_task(&rec.task_id, budget.request_deadline(self.poll_timeout()))
            .await
        {
            Ok(v) => v,
            Err(A2aError::TaskNotFound) => {
                return Err(anyhow!(
                    "worker {:?} no longer knows task {} (it may have restarted) — send the work again",
                    rec.worker,
                    fence::shown(task_id)
                ));
            }
            Err(e) => return Err(worker_error(&rec.worker, &worker.config.url, &e)),
        };
        self.seen(&rec, &view)
    }

    /// `cancel`: CancelTask. A task that already ended is reported as it is.
    pub async fn cancel(&self, task_id: &str, budget: Budget) -> Result<Outcome> {
        let rec = self.find(task_id)?;
        let worker = self.worker(&rec.worker)?;
        let deadline = budget.request_deadline(self.poll_timeout());
        let view = match worker.cancel(&rec.task_id, deadline).await {
            Ok(v) => v,
            Err(A2aError::NotCancelable) => {
                let v = worker
                    .get_task(&rec.task_id, budget.request_deadline(self.poll_timeout()))
                    .await
                    .map_err(|e| worker_error(&rec.worker, &worker.config.url, &e))?;
                let mut o = self.seen(&rec, &v)?;
                o.note = format!(
                    "{} task {task_id} had already ended ({}); nothing to cancel. {}",
                    rec.worker, v.state, o.note
                );
                return Ok(o);
            }
            Err(A2aError::TaskNotFound) => {
                return Err(anyhow!(
                    "worker {:?} no longer knows task {} (it may have restarted) — nothing to cancel",
                    rec.worker,
                    fence::shown(task_id)
                ));
            }
            Err(e) => return Err(worker_error(&rec.worker, &worker.config.url, &e)),
        };
        self.seen(&rec, &view)
    }

    fn seen(&self, rec: &TaskRecord, view: &TaskView) -> Result<Outcome> {
        if rec.end_reason == Some(EndReason::Moved) && view.state.is_waiting() {
            return self.moved(rec, view);
        }
        let now = now_ms();
        let next = now + self.config.timing.poll_interval().as_millis() as i64;
        let key = TaskKey::new(&rec.worker, &view.task_id);
        let (text, text_chars) = for_row(&self.ctx, &self.id, &key, view.text.as_deref());
        let seen = a2a_mod_core::task::Seen {
            task_id: &view.task_id,
            state: view.state,
            text,
            text_chars,
            question: view.question.as_deref(),
        };
        self.store(|s| s.record_seen(&rec.worker, seen, next, now))?;
        let live = view.state.is_live();
        if live {
            crate::poller::ensure(&self.ctx, &self.id);
        }
        Ok(self.outcome(view, &rec.worker, live))
    }

    /// A question whose answer the worker took up on a new task (it ignores `taskId`): the
    /// worker may show it waiting for good, but it waits for nothing; say where the answer went,
    /// never how to answer it again.
    fn moved(&self, rec: &TaskRecord, view: &TaskView) -> Result<Outcome> {
        // The task that took the answer: the next one sent to that worker in the same context.
        let to = self
            .tasks()?
            .into_iter()
            .filter(|t| t.seq > rec.seq && t.worker == rec.worker)
            .find(|t| t.context_id.is_some() && t.context_id == rec.context_id);
        let where_ = match &to {
            Some(t) => format!(
                "its answer went to task {}; use the task tool on that one",
                fence::shown(&t.task_id)
            ),
            None => "its answer went to a new task of the same conversation".to_string(),
        };
        Ok(Outcome {
            note: format!(
                "{} task {} waits for nothing: {where_} (the worker still shows this one {}).",
                rec.worker,
                fence::shown(&rec.task_id),
                view.state
            ),
            worker: rec.worker.clone(),
            task_id: rec.task_id.clone(),
            context_id: view.context_id.clone(),
            state: view.state,
            text: None,
            question: None,
            tracked: false,
            artifacts: Vec::new(),
        })
    }

    fn find(&self, task_id: &str) -> Result<TaskRecord> {
        let task_id = task_id.trim();
        if task_id.is_empty() {
            return Err(anyhow!(
                "the taskId is empty — pass the id that send returned"
            ));
        }
        self.store(|s| s.find(task_id))?
            .ok_or_else(|| unknown_task(task_id, None))
    }

    /// This session's tasks, oldest first.
    pub fn tasks(&self) -> Result<Vec<TaskRecord>> {
        self.store(|s| s.all())
    }
}

/// Ended tasks younger than this are in the `tasks` tool's list.
const RECENT_MS: i64 = 15 * 60 * 1000;
/// The `tasks` tool lists at most this many tasks (the newest), so a long session stays compact.
const MAX_LISTED: usize = 30;

/// Which tasks a list holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// The `tasks` tool's: live, waiting, not yet told, or ended in the last 15 minutes; the
    /// newest 30 of them.
    Recent,
    /// Every task (`a2a-mod tasks`).
    All,
}

/// One task as a task list shows it.
#[derive(Debug, Clone)]
pub struct Listed {
    pub task: TaskRecord,
    /// How it stands and what each surface calls that (`core::ending`).
    pub ending: a2a_mod_core::ending::Ending,
    /// Seconds since it was sent, to its end for an ended task.
    pub age_s: i64,
}

/// The task list behind both the `tasks` tool and `a2a-mod tasks`, in store order.
pub fn task_list(all: Vec<TaskRecord>, now: i64, which: Listing) -> Vec<Listed> {
    let mut shown: Vec<TaskRecord> = match which {
        Listing::All => all,
        Listing::Recent => all
            .into_iter()
            .filter(|t| {
                t.is_live()
                    || t.state.is_waiting()
                    || t.delivered_ms.is_none()
                    || t.ended_ms.is_some_and(|e| now - e < RECENT_MS)
            })
            .collect(),
    };
    if which == Listing::Recent && shown.len() > MAX_LISTED {
        shown.drain(..shown.len() - MAX_LISTED);
    }
    shown
        .into_iter()
        .map(|t| Listed {
            ending: a2a_mod_core::ending::of(t.state, t.end_reason, t.is_live()),
            age_s: (t.ended_ms.unwrap_or(now) - t.started_ms).max(0) / 1000,
            task: t,
        })
        .collect()
}
