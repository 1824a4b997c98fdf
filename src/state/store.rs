//! Queries over one session's SQLite file. Every write is one `BEGIN IMMEDIATE` transaction and
//! touches only the columns its writer owns, so the poller, the MCP server, the monitor and the
//! hooks never clobber each other's fields.

use super::schema::MIGRATIONS;
use crate::core::task::{EndReason, PollUpdate, TaskState};
use anyhow::{Context, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Writers wait this long for another writer instead of failing with `database is locked`.
const WRITE_BUSY: Duration = Duration::from_secs(10);
/// The status line would rather show nothing than be late.
const READ_BUSY: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskRecord {
    pub seq: i64,
    pub worker: String,
    pub task_id: String,
    pub context_id: Option<String>,
    pub message: String,
    pub state: TaskState,
    pub started_ms: i64,
    pub updated_ms: i64,
    pub ended_ms: Option<i64>,
    pub end_reason: Option<String>,
    pub tracked: bool,
    pub next_poll_ms: Option<i64>,
    pub failed_polls: u32,
    pub last_error: Option<String>,
    pub result: Option<String>,
    pub question: Option<String>,
    pub announced_ms: Option<i64>,
    pub delivered_ms: Option<i64>,
}

impl TaskRecord {
    pub fn end_reason(&self) -> Option<EndReason> {
        self.end_reason.as_deref().and_then(EndReason::parse)
    }
    /// Live = the background poller owns it.
    pub fn is_live(&self) -> bool {
        self.ended_ms.is_none()
    }
}

/// A task as a send left it.
#[derive(Debug, Clone)]
pub struct NewTask<'a> {
    pub worker: &'a str,
    pub task_id: &'a str,
    pub context_id: Option<&'a str>,
    pub message: &'a str,
    pub state: TaskState,
    pub result: Option<&'a str>,
    pub question: Option<&'a str>,
    /// When the background poller may first poll it (live tasks).
    pub next_poll_ms: Option<i64>,
    /// Claude already has the outcome (it came back in the tool result).
    pub told: bool,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

const COLUMNS: &str = "seq, worker, task_id, context_id, message, state, started_ms, updated_ms, \
    ended_ms, end_reason, tracked, next_poll_ms, failed_polls, last_error, result, question, \
    announced_ms, delivered_ms";

fn row_to_record(r: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    // Text columns may hold bytes that are not UTF-8 if a file was tampered with; read them lossily
    // rather than failing the whole render.
    let text = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(match r.get_ref(i)? {
            rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                Some(String::from_utf8_lossy(b).into_owned())
            }
            rusqlite::types::ValueRef::Null => None,
            other => Some(format!("{other:?}")),
        })
    };
    Ok(TaskRecord {
        seq: r.get(0)?,
        worker: text(1)?.unwrap_or_default(),
        task_id: text(2)?.unwrap_or_default(),
        context_id: text(3)?,
        message: text(4)?.unwrap_or_default(),
        state: TaskState::parse(&text(5)?.unwrap_or_default()),
        started_ms: r.get(6)?,
        updated_ms: r.get(7)?,
        ended_ms: r.get(8)?,
        end_reason: text(9)?,
        tracked: r.get::<_, i64>(10)? != 0,
        next_poll_ms: r.get(11)?,
        failed_polls: r.get::<_, i64>(12)?.clamp(0, u32::MAX as i64) as u32,
        last_error: text(13)?,
        result: text(14)?,
        question: text(15)?,
        announced_ms: r.get(16)?,
        delivered_ms: r.get(17)?,
    })
}

fn update_polled(
    c: &Connection,
    worker: &str,
    task_id: &str,
    u: &PollUpdate,
    told: bool,
    now: i64,
) -> rusqlite::Result<usize> {
    let ended = u.end.map(|_| now);
    let told = (told && u.end.is_some()).then_some(now);
    let mut stmt = c.prepare_cached(
        "UPDATE tasks SET state = ?3, result = COALESCE(?4, result),
            question = ?5, context_id = COALESCE(?6, context_id),
            failed_polls = ?7, last_error = ?8, ended_ms = ?9, end_reason = ?10,
            tracked = ?11, next_poll_ms = ?12, updated_ms = ?13,
            announced_ms = COALESCE(announced_ms, ?14),
            delivered_ms = COALESCE(delivered_ms, ?14)
         WHERE worker = ?1 AND task_id = ?2 AND ended_ms IS NULL",
    )?;
    stmt.execute(params![
        worker,
        task_id,
        u.state.as_str(),
        u.text,
        u.question,
        u.context_id,
        u.failed_polls as i64,
        u.last_error,
        ended,
        u.end.map(EndReason::as_str),
        u.end.is_none() as i64,
        u.next_poll_ms,
        now,
        told,
    ])
}

impl Store {
    /// Opens (creating and migrating) a session's store for writing.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create state folder \"{}\"", dir.display()))?;
        }
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open session store \"{}\"", path.display()))?;
        conn.busy_timeout(WRITE_BUSY)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .with_context(|| format!("cannot use WAL for \"{}\"", path.display()))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let store = Store {
            conn,
            path: path.to_path_buf(),
        };
        store
            .migrate()
            .with_context(|| format!("cannot prepare session store \"{}\"", path.display()))?;
        Ok(store)
    }

    /// Opens a store for the hot path: `None` when the session has none, never creates or writes,
    /// and does not checkpoint on close (the last reader closing would otherwise write).
    pub fn open_read(path: &Path) -> Result<Option<Store>> {
        let conn = match Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        ) {
            Ok(c) => c,
            Err(_) if !path.exists() => return Ok(None),
            Err(e) => {
                return Err(e).with_context(|| format!("cannot open \"{}\"", path.display()));
            }
        };
        conn.busy_timeout(READ_BUSY)?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        conn.pragma_update(None, "query_only", true)?;
        Ok(Some(Store {
            conn,
            path: path.to_path_buf(),
        }))
    }

    /// [`Store::open_read`] for user commands, which may wait for a writer (or for the recovery
    /// that follows a crashed writer) as long as writers do, rather than fail.
    pub fn open_read_waiting(path: &Path) -> Result<Option<Store>> {
        let store = Store::open_read(path)?;
        if let Some(s) = &store {
            s.conn.busy_timeout(WRITE_BUSY)?;
        }
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&self) -> Result<()> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version as usize >= MIGRATIONS.len() {
            return Ok(());
        }
        self.write(|tx| {
            // Re-read inside the write lock: another process may have migrated meanwhile.
            let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            for (i, step) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
                tx.execute_batch(step)?;
                tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            }
            Ok(())
        })
    }

    fn write<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        match f(&self.conn) {
            Ok(v) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e.into())
            }
        }
    }

    fn query(&self, where_: &str, p: impl rusqlite::Params) -> Result<Vec<TaskRecord>> {
        let sql = format!("SELECT {COLUMNS} FROM tasks {where_}");
        let mut stmt = self.conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(p, row_to_record)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Records a task as a send left it: a new row, or the same task again after a follow-up
    /// (input-required answered), which makes it live and unannounced again.
    pub fn record_sent(&self, t: &NewTask<'_>, now: i64) -> Result<()> {
        let live = t.state.is_live();
        let ended = (!live).then_some(now);
        let told = t.told.then_some(now);
        self.write(|c| {
            c.execute(
                "INSERT INTO tasks (worker, task_id, context_id, message, state, started_ms,
                    updated_ms, ended_ms, end_reason, tracked, next_poll_ms, result, question,
                    announced_ms, delivered_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13)
                 ON CONFLICT (worker, task_id) DO UPDATE SET
                    context_id = COALESCE(excluded.context_id, context_id),
                    state = excluded.state, updated_ms = excluded.updated_ms,
                    ended_ms = excluded.ended_ms, end_reason = excluded.end_reason,
                    tracked = excluded.tracked, next_poll_ms = excluded.next_poll_ms,
                    failed_polls = 0, last_error = NULL,
                    result = excluded.result, question = excluded.question,
                    announced_ms = excluded.announced_ms, delivered_ms = excluded.delivered_ms",
                params![
                    t.worker,
                    t.task_id,
                    t.context_id,
                    t.message,
                    t.state.as_str(),
                    now,
                    ended,
                    ended.map(|_| EndReason::State.as_str()),
                    live as i64,
                    if live { t.next_poll_ms } else { None },
                    t.result,
                    t.question,
                    told,
                ],
            )
        })?;
        Ok(())
    }

    /// Applies one poll's outcome to a task that is still live. A task that ended meanwhile (by
    /// another writer) is left alone. `told`: Claude gets this outcome right now (inline window).
    /// Returns whether the row changed.
    pub fn apply_poll(
        &self,
        worker: &str,
        task_id: &str,
        u: &PollUpdate,
        told: bool,
        now: i64,
    ) -> Result<bool> {
        Ok(self.write(|c| update_polled(c, worker, task_id, u, told, now))? > 0)
    }

    /// [`Store::apply_poll`] for many answers in one transaction (the background poller's burst).
    pub fn apply_polls<'a>(
        &self,
        polls: impl IntoIterator<Item = (&'a str, &'a str, &'a PollUpdate)>,
        now: i64,
    ) -> Result<()> {
        self.write(|c| {
            for (worker, task_id, u) in polls {
                update_polled(c, worker, task_id, u, false, now)?;
            }
            Ok(())
        })
    }

    /// Updates a task from a fresh look at it outside the poller (the `task` tool, `cancel`):
    /// Claude gets this outcome now, so it is marked told; a live task is (re-)tracked.
    pub fn record_seen(
        &self,
        worker: &str,
        view: &crate::a2a::TaskView,
        next_poll_ms: i64,
        now: i64,
    ) -> Result<()> {
        let live = view.state.is_live();
        self.write(|c| {
            c.execute(
                "UPDATE tasks SET state = ?3, result = COALESCE(?4, result), question = ?5,
                    updated_ms = ?6, failed_polls = 0, last_error = NULL,
                    tracked = ?7, next_poll_ms = ?8,
                    ended_ms = CASE WHEN ?7 THEN NULL ELSE COALESCE(ended_ms, ?6) END,
                    end_reason = CASE WHEN ?7 THEN NULL
                                      WHEN ended_ms IS NULL THEN 'state' ELSE end_reason END,
                    announced_ms = CASE WHEN ?7 THEN NULL ELSE COALESCE(announced_ms, ?6) END,
                    delivered_ms = CASE WHEN ?7 THEN NULL ELSE COALESCE(delivered_ms, ?6) END
                 WHERE worker = ?1 AND task_id = ?2",
                params![
                    worker,
                    view.task_id,
                    view.state.as_str(),
                    view.text,
                    view.question,
                    now,
                    live,
                    live.then_some(next_poll_ms),
                ],
            )
        })?;
        Ok(())
    }

    /// Puts off the next background poll of a live task (e.g. while an inline window polls it).
    pub fn set_next_poll(&self, worker: &str, task_id: &str, at_ms: i64) -> Result<()> {
        self.write(|c| {
            c.execute(
                "UPDATE tasks SET next_poll_ms = ?3
                 WHERE worker = ?1 AND task_id = ?2 AND ended_ms IS NULL",
                params![worker, task_id, at_ms],
            )
        })?;
        Ok(())
    }

    /// Live tasks the poller should poll now, most overdue first, at most `limit` of them.
    pub fn due_tasks(&self, now: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        // Two range lookups on the partial index `tasks_due` (a NULL time means due now).
        self.query(
            "WHERE seq IN (
                SELECT seq FROM tasks
                 WHERE ended_ms IS NULL AND tracked = 1 AND next_poll_ms <= ?1
                UNION ALL SELECT seq FROM tasks
                 WHERE ended_ms IS NULL AND tracked = 1 AND next_poll_ms IS NULL
             ) ORDER BY next_poll_ms LIMIT ?2",
            params![now, limit as i64],
        )
    }

    /// Every task the poller owns.
    pub fn live_tasks(&self) -> Result<Vec<TaskRecord>> {
        self.query("WHERE ended_ms IS NULL ORDER BY seq", [])
    }

    /// How many tasks the poller owns (one indexed count, no rows decoded).
    pub fn live_count(&self) -> Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM tasks WHERE ended_ms IS NULL",
            [],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as usize)
    }

    /// When the next poll falls due after `now` (the poller sleeps until then). Tasks due at or
    /// before `now` are left out: the poller has either sent their poll already (their row still
    /// looks due until the answer is applied) or has no room for it yet.
    pub fn next_due_after(&self, now: i64) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(next_poll_ms) FROM tasks
             WHERE ended_ms IS NULL AND tracked = 1 AND next_poll_ms > ?1",
            [now],
            |r| r.get(0),
        )?)
    }

    pub fn get(&self, worker: &str, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self
            .query(
                "WHERE worker = ?1 AND task_id = ?2",
                params![worker, task_id],
            )?
            .into_iter()
            .next())
    }

    /// A task by id alone (ids are unique per worker; the newest wins if two workers reuse one).
    pub fn find(&self, task_id: &str) -> Result<Option<TaskRecord>> {
        Ok(self
            .query("WHERE task_id = ?1 ORDER BY seq DESC LIMIT 1", [task_id])?
            .into_iter()
            .next())
    }

    /// Every task of the session, oldest first.
    pub fn all(&self) -> Result<Vec<TaskRecord>> {
        self.query("ORDER BY seq", [])
    }

    /// What the status line needs: live tasks, tasks waiting for input, and tasks that ended in
    /// the last `done_ms`. Three indexed lookups, so it stays cheap however long the session runs.
    pub fn status_rows(&self, now: i64, done_ms: i64) -> Result<Vec<TaskRecord>> {
        self.query(
            "WHERE seq IN (
                SELECT seq FROM tasks WHERE ended_ms IS NULL
                UNION SELECT seq FROM tasks WHERE ended_ms >= ?1
                UNION SELECT seq FROM tasks WHERE state IN ('input-required', 'auth-required')
             ) ORDER BY started_ms, seq",
            [now.saturating_sub(done_ms)],
        )
    }

    /// Claims every ended task not yet announced and marks it announced, in one transaction, so
    /// no task is announced twice by two monitors or skipped across restarts.
    pub fn claim_unannounced(&self, now: i64) -> Result<Vec<TaskRecord>> {
        self.claim("announced_ms", now, |_| Ok(()))
    }

    /// Like [`Store::claim_unannounced`], running `deliver` (e.g. printing the wake line) before
    /// the claim commits: if it fails, nothing is marked and the batch is offered again, so a line
    /// that could not be written is never counted as announced.
    pub fn claim_unannounced_with(
        &self,
        now: i64,
        deliver: impl FnOnce(&[TaskRecord]) -> std::io::Result<()>,
    ) -> Result<Vec<TaskRecord>> {
        self.claim("announced_ms", now, deliver)
    }

    /// Claims every ended task whose outcome Claude has not been given, marking it given.
    pub fn take_undelivered(&self, now: i64) -> Result<Vec<TaskRecord>> {
        self.claim("delivered_ms", now, |_| Ok(()))
    }

    /// Whether any ended task's outcome has not reached Claude (cheap check for the hooks).
    pub fn has_undelivered(&self) -> Result<bool> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM tasks WHERE ended_ms IS NOT NULL AND delivered_ms IS NULL LIMIT 1",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    fn claim(
        &self,
        column: &'static str,
        now: i64,
        deliver: impl FnOnce(&[TaskRecord]) -> std::io::Result<()>,
    ) -> Result<Vec<TaskRecord>> {
        let sql_sel = format!(
            "SELECT {COLUMNS} FROM tasks WHERE ended_ms IS NOT NULL AND {column} IS NULL ORDER BY ended_ms, seq"
        );
        let sql_upd = format!(
            "UPDATE tasks SET {column} = ?1 WHERE ended_ms IS NOT NULL AND {column} IS NULL"
        );
        self.write(|c| {
            let rows = {
                let mut stmt = c.prepare_cached(&sql_sel)?;
                stmt.query_map([], row_to_record)?
                    .collect::<rusqlite::Result<Vec<_>>>()?
            };
            if !rows.is_empty() {
                deliver(&rows).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
                c.execute(&sql_upd, [now])?;
            }
            Ok(rows)
        })
    }

    /// Whether any ended task is waiting to be announced (cheap check for the monitor).
    pub fn has_unannounced(&self) -> Result<bool> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM tasks WHERE ended_ms IS NOT NULL AND announced_ms IS NULL LIMIT 1",
                [],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Claude has the outcome (returned by a tool): neither announce nor deliver it again.
    pub fn mark_told(&self, worker: &str, task_id: &str, now: i64) -> Result<()> {
        self.write(|c| {
            c.execute(
                "UPDATE tasks SET announced_ms = COALESCE(announced_ms, ?3),
                    delivered_ms = COALESCE(delivered_ms, ?3)
                 WHERE worker = ?1 AND task_id = ?2 AND ended_ms IS NOT NULL",
                params![worker, task_id, now],
            )
        })?;
        Ok(())
    }

    /// A worker was removed: its live tasks stop being tracked, to be announced as such.
    pub fn end_removed(&self, worker: &str, now: i64) -> Result<usize> {
        self.write(|c| {
            c.execute(
                "UPDATE tasks SET ended_ms = ?2, end_reason = 'removed', tracked = 0,
                    next_poll_ms = NULL, updated_ms = ?2
                 WHERE worker = ?1 AND ended_ms IS NULL",
                params![worker, now],
            )
        })
    }

    pub fn meta_get(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn meta_set(&self, key: &str, value: &str) -> Result<()> {
        self.write(|c| {
            c.execute(
                "INSERT INTO meta (key, value) VALUES (?1, ?2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent<'a>(worker: &'a str, id: &'a str, state: TaskState) -> NewTask<'a> {
        NewTask {
            worker,
            task_id: id,
            context_id: Some("ctx"),
            message: "slow 20 build",
            state,
            result: None,
            question: None,
            next_poll_ms: Some(100),
            told: false,
        }
    }

    fn upd(state: TaskState, end: Option<EndReason>) -> PollUpdate {
        PollUpdate {
            state,
            text: Some("done".into()),
            question: None,
            context_id: None,
            failed_polls: 0,
            last_error: None,
            end,
            next_poll_ms: end.is_none().then_some(200),
        }
    }

    #[test]
    fn lifecycle_and_exactly_once_claims() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Submitted), 0)
            .unwrap();
        s.record_sent(&sent("fake", "t2", TaskState::Working), 0)
            .unwrap();
        assert_eq!(s.due_tasks(50, 10).unwrap().len(), 0);
        assert_eq!(s.due_tasks(100, 10).unwrap().len(), 2);
        assert_eq!(s.due_tasks(100, 1).unwrap().len(), 1);
        assert_eq!(s.next_due_after(50).unwrap(), Some(100));
        assert_eq!(s.next_due_after(100).unwrap(), None);
        assert_eq!(s.live_count().unwrap(), 2);
        // A burst of answers in one transaction; the poll times move on.
        let live = upd(TaskState::Working, None);
        s.apply_polls([("fake", "t1", &live), ("fake", "t2", &live)], 150)
            .unwrap();
        assert_eq!(s.next_due_after(150).unwrap(), Some(200));
        assert!(s.due_tasks(150, 10).unwrap().is_empty());
        assert!(
            s.apply_poll("fake", "t1", &upd(TaskState::Working, None), false, 100)
                .unwrap()
        );
        assert!(
            s.apply_poll(
                "fake",
                "t1",
                &upd(TaskState::Completed, Some(EndReason::State)),
                false,
                300
            )
            .unwrap()
        );
        // Ended rows are not touched again.
        assert!(
            !s.apply_poll(
                "fake",
                "t1",
                &upd(TaskState::Failed, Some(EndReason::State)),
                false,
                400
            )
            .unwrap()
        );
        let t1 = s.get("fake", "t1").unwrap().unwrap();
        assert_eq!(
            (t1.state, t1.ended_ms, t1.tracked),
            (TaskState::Completed, Some(300), false)
        );
        assert!(s.has_unannounced().unwrap());
        let claimed = s.claim_unannounced(500).unwrap();
        assert_eq!(claimed.len(), 1);
        assert!(s.claim_unannounced(501).unwrap().is_empty());
        assert_eq!(s.take_undelivered(502).unwrap().len(), 1);
        assert!(s.take_undelivered(503).unwrap().is_empty());
        // Removing the worker ends t2 as "removed".
        assert_eq!(s.end_removed("fake", 600).unwrap(), 1);
        let t2 = s.get("fake", "t2").unwrap().unwrap();
        assert_eq!(t2.end_reason(), Some(EndReason::Removed));
        assert_eq!(s.claim_unannounced(700).unwrap().len(), 1);
    }

    #[test]
    fn follow_up_makes_a_waiting_task_live_again() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        let mut t = sent("fake", "t1", TaskState::InputRequired);
        t.question = Some("Which colour?");
        s.record_sent(&t, 0).unwrap();
        assert_eq!(s.claim_unannounced(1).unwrap().len(), 1);
        s.record_sent(&sent("fake", "t1", TaskState::Working), 10)
            .unwrap();
        let r = s.get("fake", "t1").unwrap().unwrap();
        assert!(r.is_live() && r.tracked && r.announced_ms.is_none());
        assert_eq!(r.message, "slow 20 build");
    }

    #[test]
    fn status_rows_pick_live_waiting_and_recent() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "live", TaskState::Working), 0)
            .unwrap();
        s.record_sent(&sent("fake", "wait", TaskState::InputRequired), 0)
            .unwrap();
        s.record_sent(&sent("fake", "old", TaskState::Completed), 0)
            .unwrap();
        s.record_sent(&sent("fake", "new", TaskState::Completed), 9_000)
            .unwrap();
        let ids: Vec<_> = s
            .status_rows(10_000, 5_000)
            .unwrap()
            .into_iter()
            .map(|r| r.task_id)
            .collect();
        assert_eq!(ids, ["live", "wait", "new"]);
    }

    #[test]
    fn reader_sees_writes_and_never_writes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        assert!(Store::open_read(&p).unwrap().is_none());
        assert!(!p.exists());
        let w = Store::open(&p).unwrap();
        w.record_sent(&sent("fake", "t", TaskState::Working), 0)
            .unwrap();
        let r = Store::open_read(&p).unwrap().unwrap();
        assert_eq!(r.live_tasks().unwrap().len(), 1);
        assert!(r.meta_set("k", "v").is_err());
    }

    /// Many writers and readers at once must never surface `database is locked`.
    #[test]
    fn concurrent_writers_and_readers_never_fail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        Store::open(&p).unwrap();
        let mut handles = Vec::new();
        for w in 0..4 {
            let p = p.clone();
            handles.push(std::thread::spawn(move || {
                let s = Store::open(&p).unwrap();
                for i in 0..100 {
                    let id = format!("t{w}-{i}");
                    s.record_sent(&sent("fake", &id, TaskState::Working), i)
                        .unwrap();
                    s.apply_poll(
                        "fake",
                        &id,
                        &upd(TaskState::Completed, Some(EndReason::State)),
                        false,
                        i + 1,
                    )
                    .unwrap();
                    s.claim_unannounced(i + 2).unwrap();
                }
            }));
        }
        for _ in 0..4 {
            let p = p.clone();
            handles.push(std::thread::spawn(move || {
                for _ in 0..200 {
                    let r = Store::open_read(&p).unwrap().unwrap();
                    r.status_rows(0, 5000).unwrap();
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        let s = Store::open(&p).unwrap();
        assert_eq!(s.all().unwrap().len(), 400);
        assert!(s.claim_unannounced(10_000).unwrap().is_empty());
    }
}
