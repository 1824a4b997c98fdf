//! The tasks `a2a-mod serve` runs for its clients: one SQLite file per server
//! (`state/serve/<name>.db`, WAL), so GetTask and ListTasks answer after a restart and a finished
//! result is never lost. Nothing here knows the A2A wire: a task is its key columns plus the
//! server's own JSON (`body`), written whole at each change the server makes durable (a state,
//! a status message, the end), never per streamed chunk.
//!
//! A process crash (kill -9) loses nothing committed: WAL with `synchronous = NORMAL` is
//! durable against a crash of the process, only an OS crash may lose the last commits.

use anyhow::{Context as _, Result};
use rusqlite::{Connection, OptionalExtension as _, params};
use std::path::Path;
use std::time::Duration;

/// Append-only, on `PRAGMA user_version` like the session store's.
const MIGRATIONS: &[&str] = &[
    // 1: tasks and the contexts (a context is one Claude Code conversation, resumed by each
    // follow-up in it).
    "CREATE TABLE tasks (
        id          TEXT PRIMARY KEY,
        agent       TEXT NOT NULL,
        context_id  TEXT NOT NULL,
        owner       TEXT NOT NULL,
        state       TEXT NOT NULL,
        live        INTEGER NOT NULL,
        created_ms  INTEGER NOT NULL,
        updated_ms  INTEGER NOT NULL,
        body        TEXT NOT NULL
    );
    CREATE INDEX tasks_context ON tasks (context_id, created_ms);
    CREATE INDEX tasks_agent ON tasks (agent, created_ms);
    CREATE INDEX tasks_live ON tasks (live) WHERE live = 1;
    CREATE TABLE contexts (
        id          TEXT PRIMARY KEY,
        agent       TEXT NOT NULL,
        owner       TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        created_ms  INTEGER NOT NULL
    );",
    // 2: what a context's client allowed for good ("allow always": Claude Code permission rules,
    // a JSON array), and the tasks by owner (a token's live tasks, its day's cost).
    "ALTER TABLE contexts ADD COLUMN allowed TEXT NOT NULL DEFAULT '[]';
    CREATE INDEX tasks_owner ON tasks (owner, updated_ms);",
    // 3: a context belongs to its owner: the same id from another token (or for another agent)
    // names another conversation, so no token can probe or squat on another's.
    "CREATE TABLE contexts_owned (
        owner       TEXT NOT NULL,
        agent       TEXT NOT NULL,
        id          TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        created_ms  INTEGER NOT NULL,
        allowed     TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (owner, agent, id)
    );
    INSERT INTO contexts_owned (owner, agent, id, session_id, created_ms, allowed)
        SELECT owner, agent, id, session_id, created_ms, allowed FROM contexts;
    DROP TABLE contexts;
    ALTER TABLE contexts_owned RENAME TO contexts;",
    // 4: the folders a context's client allowed its runs for good (Claude Code's
    // `addDirectories`, a JSON array), beside its rules.
    "ALTER TABLE contexts ADD COLUMN dirs TEXT NOT NULL DEFAULT '[]';",
    // 5: push notifications: where a task's changes are POSTed (a client's webhooks), and what
    // is still to POST, in order per webhook, so a restart resumes delivery.
    "CREATE TABLE push_configs (
        task_id     TEXT NOT NULL,
        id          TEXT NOT NULL,
        dialect     TEXT NOT NULL,
        url         TEXT NOT NULL,
        token       TEXT,
        scheme      TEXT,
        credentials TEXT,
        created_ms  INTEGER NOT NULL,
        PRIMARY KEY (task_id, id)
    );
    CREATE TABLE push_outbox (
        seq         INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id     TEXT NOT NULL,
        config_id   TEXT NOT NULL,
        body        TEXT NOT NULL
    );
    CREATE INDEX push_outbox_lane ON push_outbox (task_id, config_id, seq);",
];

/// Which of an agent's tasks a page of ListTasks holds.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListFilter<'a> {
    pub context_id: Option<&'a str>,
    /// The state as the store keeps it (`TaskState::as_str`).
    pub state: Option<&'a str>,
    pub updated_after_ms: Option<i64>,
    /// The page starts after this task (its `updated_ms` and id): the last of the page before.
    pub after: Option<(i64, &'a str)>,
}

/// One served task as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedTask {
    pub id: String,
    pub agent: String,
    pub context_id: String,
    /// Who may see it: a digest naming the token that made it (never the token), or `local`.
    pub owner: String,
    /// The A2A state, v1 spelling without the prefix (`working`, `completed`, …).
    pub state: String,
    /// Whether a run may still change it (submitted or working).
    pub live: bool,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// The server's JSON for the rest (messages, the answer, metadata).
    pub body: String,
}

/// One conversation: the Claude Code session its tasks resume. Keyed by its owner, agent and
/// id together: the id is only the client's name for it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedContext {
    pub id: String,
    pub agent: String,
    pub owner: String,
    pub session_id: String,
    pub created_ms: i64,
    /// The permission rules its client allowed for good, each run of it starts with them.
    pub allowed: Vec<String>,
    /// The folders its client allowed its runs for good (`--add-dir` of each run).
    pub dirs: Vec<String>,
}

/// A webhook a task's changes are POSTed to (a push notification config).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushConfig {
    pub task_id: String,
    /// The client's name for it, unique per task.
    pub id: String,
    /// The A2A version its client spoke (`1.0`, `0.3`): what its POSTs carry.
    pub dialect: String,
    pub url: String,
    /// Secrets the client chose for its webhook: sent to it only, never answered or logged.
    pub token: Option<String>,
    pub scheme: Option<String>,
    pub credentials: Option<String>,
    pub created_ms: i64,
}

/// One POST still to make: the next of its webhook's, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub seq: i64,
    pub config: PushConfig,
    pub body: String,
}

/// The server's store: one connection, used under the server's own lock.
pub struct ServedStore {
    conn: Connection,
}

const COLUMNS: &str = "id, agent, context_id, owner, state, live, created_ms, updated_ms, body";

fn task_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<ServedTask> {
    Ok(ServedTask {
        id: r.get(0)?,
        agent: r.get(1)?,
        context_id: r.get(2)?,
        owner: r.get(3)?,
        state: r.get(4)?,
        live: r.get(5)?,
        created_ms: r.get(6)?,
        updated_ms: r.get(7)?,
        body: r.get(8)?,
    })
}

impl ServedStore {
    /// Opens (creating and migrating) the store, private to the user.
    pub fn open(path: &Path) -> Result<ServedStore> {
        crate::store::make_private(path, "serve store")?;
        let conn = Connection::open(path)
            .with_context(|| format!("cannot open serve store \"{}\"", path.display()))?;
        conn.busy_timeout(Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .with_context(|| format!("cannot use WAL for \"{}\"", path.display()))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let done = usize::try_from(version).unwrap_or(0);
        if done > MIGRATIONS.len() {
            anyhow::bail!(
                "serve store \"{}\" was written by a newer a2a-mod (schema {version}) — upgrade a2a-mod, or move the file aside",
                path.display()
            );
        }
        for (i, step) in MIGRATIONS.iter().enumerate().skip(done) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(step)?;
            tx.pragma_update(None, "user_version", i as i64 + 1)?;
            tx.commit()?;
        }
        Ok(ServedStore { conn })
    }

    /// Writes the task whole (insert or replace).
    pub fn put(&self, t: &ServedTask) -> Result<()> {
        self.conn
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO tasks ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                t.id,
                t.agent,
                t.context_id,
                t.owner,
                t.state,
                t.live,
                t.created_ms,
                t.updated_ms,
                t.body
            ])?;
        Ok(())
    }

    pub fn get(&self, id: &str) -> Result<Option<ServedTask>> {
        Ok(self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))?
            .query_row([id], task_of)
            .optional()?)
    }

    /// A page of an agent's tasks for one owner (ListTasks): the most recently changed first,
    /// at most `limit`, after the cursor when there is one; and how many match in all.
    pub fn list(
        &self,
        agent: &str,
        owner: &str,
        f: &ListFilter<'_>,
        limit: usize,
    ) -> Result<(Vec<ServedTask>, usize)> {
        const MATCH: &str = "agent = ?1 AND owner = ?2 AND (?3 IS NULL OR context_id = ?3)
               AND (?4 IS NULL OR state = ?4) AND (?5 IS NULL OR updated_ms >= ?5)";
        let total: i64 = self
            .conn
            .prepare_cached(&format!("SELECT COUNT(*) FROM tasks WHERE {MATCH}"))?
            .query_row(
                params![agent, owner, f.context_id, f.state, f.updated_after_ms],
                |r| r.get(0),
            )?;
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM tasks WHERE {MATCH}
               AND (?6 IS NULL OR updated_ms < ?6 OR (updated_ms = ?6 AND id < ?7))
             ORDER BY updated_ms DESC, id DESC LIMIT ?8"
        ))?;
        let (before_ms, before_id) = f
            .after
            .map_or((None, None), |(ms, id)| (Some(ms), Some(id)));
        let rows = st.query_map(
            params![
                agent,
                owner,
                f.context_id,
                f.state,
                f.updated_after_ms,
                before_ms,
                before_id,
                i64::try_from(limit).unwrap_or(i64::MAX)
            ],
            task_of,
        )?;
        let tasks = rows.collect::<rusqlite::Result<_>>()?;
        Ok((tasks, usize::try_from(total).unwrap_or(0)))
    }

    /// The tasks a run was changing when the server stopped.
    pub fn live(&self) -> Result<Vec<ServedTask>> {
        let mut st = self
            .conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE live = 1"))?;
        let rows = st.query_map([], task_of)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The context `id` of `owner` at `agent`; another owner's of the same id is not it.
    pub fn context(&self, owner: &str, agent: &str, id: &str) -> Result<Option<ServedContext>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT id, agent, owner, session_id, created_ms, allowed, dirs FROM contexts
                 WHERE owner = ?1 AND agent = ?2 AND id = ?3",
            )?
            .query_row([owner, agent, id], |r| {
                let allowed: String = r.get(5)?;
                Ok(ServedContext {
                    id: r.get(0)?,
                    agent: r.get(1)?,
                    owner: r.get(2)?,
                    session_id: r.get(3)?,
                    created_ms: r.get(4)?,
                    // Written only by `grant` below; anything else reads as nothing allowed.
                    allowed: serde_json::from_str(&allowed).unwrap_or_default(),
                    dirs: serde_json::from_str(&r.get::<_, String>(6)?).unwrap_or_default(),
                })
            })
            .optional()?)
    }

    pub fn put_context(&self, c: &ServedContext) -> Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR REPLACE INTO contexts (id, agent, owner, session_id, created_ms, allowed, dirs)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                c.id,
                c.agent,
                c.owner,
                c.session_id,
                c.created_ms,
                serde_json::to_string(&c.allowed)?,
                serde_json::to_string(&c.dirs)?
            ])?;
        Ok(())
    }

    /// Adds permission rules and folders to what a context allows for good (each once).
    pub fn grant(
        &self,
        owner: &str,
        agent: &str,
        context_id: &str,
        rules: &[String],
        dirs: &[String],
    ) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        if let Some(mut c) = self.context(owner, agent, context_id)? {
            for (have, add) in [(&mut c.allowed, rules), (&mut c.dirs, dirs)] {
                for a in add {
                    if !have.contains(a) {
                        have.push(a.clone());
                    }
                }
            }
            self.put_context(&c)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Forgets a task the server took but could not start (its files could not be saved), and
    /// its webhooks.
    pub fn delete(&self, id: &str) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for sql in [
            "DELETE FROM tasks WHERE id = ?1",
            "DELETE FROM push_configs WHERE task_id = ?1",
            "DELETE FROM push_outbox WHERE task_id = ?1",
        ] {
            self.conn.prepare_cached(sql)?.execute([id])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// How many of an owner's tasks are live (running or waiting).
    pub fn live_of(&self, owner: &str) -> Result<usize> {
        let n: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM tasks WHERE owner = ?1 AND live = 1")?
            .query_row([owner], |r| r.get(0))?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// What an owner's runs that changed since `since_ms` cost, in USD (each run's own cost,
    /// `metadata.claudeCode.costUsd` of the task's body).
    pub fn spent_since(&self, owner: &str, since_ms: i64) -> Result<f64> {
        let usd: Option<f64> = self
            .conn
            .prepare_cached(
                "SELECT SUM(json_extract(body, '$.metadata.claudeCode.costUsd')) FROM tasks
                 WHERE owner = ?1 AND updated_ms >= ?2",
            )?
            .query_row(params![owner, since_ms], |r| r.get(0))?;
        Ok(usd.unwrap_or(0.0))
    }
}

const PUSH_COLUMNS: &str = "task_id, id, dialect, url, token, scheme, credentials, created_ms";

/// A config from a row whose first columns are [`PUSH_COLUMNS`].
fn push_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<PushConfig> {
    Ok(PushConfig {
        task_id: r.get(0)?,
        id: r.get(1)?,
        dialect: r.get(2)?,
        url: r.get(3)?,
        token: r.get(4)?,
        scheme: r.get(5)?,
        credentials: r.get(6)?,
        created_ms: r.get(7)?,
    })
}

/// Push notifications: a task's webhooks and the POSTs still to make to them.
impl ServedStore {
    /// Writes the task and queues what its webhooks are told of the change, in one step: a
    /// crash keeps both or neither. `bodies(dialect)` gives the POSTs for a webhook of that
    /// dialect, asked once per dialect and only when the task has a webhook of it. Returns how
    /// many POSTs were queued.
    pub fn put_telling(
        &self,
        t: &ServedTask,
        mut bodies: impl FnMut(&str) -> Vec<String>,
    ) -> Result<usize> {
        let tx = self.conn.unchecked_transaction()?;
        self.put(t)?;
        let mut made: Vec<(String, Vec<String>)> = Vec::new();
        let mut queued = 0;
        for (id, dialect) in self.push_ids(&t.id)? {
            let i = match made.iter().position(|(d, _)| *d == dialect) {
                Some(i) => i,
                None => {
                    made.push((dialect.clone(), bodies(&dialect)));
                    made.len() - 1
                }
            };
            for body in &made[i].1 {
                self.conn
                    .prepare_cached(
                        "INSERT INTO push_outbox (task_id, config_id, body) VALUES (?1, ?2, ?3)",
                    )?
                    .execute(params![t.id, id, body])?;
                queued += 1;
            }
        }
        tx.commit()?;
        Ok(queued)
    }

    fn push_ids(&self, task_id: &str) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT id, dialect FROM push_configs WHERE task_id = ?1")?;
        let rows = st.query_map([task_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Adds a webhook to a task, or replaces the one of that id; `false` (and nothing written)
    /// when the task has `max` others already.
    pub fn put_push(&self, c: &PushConfig, max: usize) -> Result<bool> {
        let tx = self.conn.unchecked_transaction()?;
        let others: i64 = self
            .conn
            .prepare_cached("SELECT COUNT(*) FROM push_configs WHERE task_id = ?1 AND id != ?2")?
            .query_row([&c.task_id, &c.id], |r| r.get(0))?;
        if usize::try_from(others).unwrap_or(usize::MAX) >= max {
            return Ok(false);
        }
        self.conn
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO push_configs ({PUSH_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
            ))?
            .execute(params![
                c.task_id,
                c.id,
                c.dialect,
                c.url,
                c.token,
                c.scheme,
                c.credentials,
                c.created_ms
            ])?;
        tx.commit()?;
        Ok(true)
    }

    /// A task's webhooks, in the order they were added.
    pub fn pushes(&self, task_id: &str) -> Result<Vec<PushConfig>> {
        let mut st = self.conn.prepare_cached(&format!(
            "SELECT {PUSH_COLUMNS} FROM push_configs WHERE task_id = ?1 ORDER BY created_ms, id"
        ))?;
        let rows = st.query_map([task_id], push_of)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Removes a webhook and what was still to POST to it; whether there was one.
    pub fn delete_push(&self, task_id: &str, id: &str) -> Result<bool> {
        let tx = self.conn.unchecked_transaction()?;
        let n = self
            .conn
            .prepare_cached("DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2")?
            .execute([task_id, id])?;
        self.drop_lane(task_id, id)?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Forgets what is still to POST to one webhook (its delivery given up).
    pub fn drop_lane(&self, task_id: &str, id: &str) -> Result<usize> {
        Ok(self
            .conn
            .prepare_cached("DELETE FROM push_outbox WHERE task_id = ?1 AND config_id = ?2")?
            .execute([task_id, id])?)
    }

    /// The webhooks with POSTs waiting: (task, config) pairs.
    pub fn lanes(&self) -> Result<Vec<(String, String)>> {
        let mut st = self
            .conn
            .prepare_cached("SELECT DISTINCT task_id, config_id FROM push_outbox")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The next POST to one webhook, the oldest first.
    pub fn next_push(&self, task_id: &str, id: &str) -> Result<Option<Pending>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT c.task_id, c.id, c.dialect, c.url, c.token, c.scheme, c.credentials,
                        c.created_ms, o.seq, o.body
                 FROM push_outbox o JOIN push_configs c ON c.task_id = o.task_id AND c.id = o.config_id
                 WHERE o.task_id = ?1 AND o.config_id = ?2 ORDER BY o.seq LIMIT 1",
            )?
            .query_row([task_id, id], |r| {
                Ok(Pending {
                    config: push_of(r)?,
                    seq: r.get(8)?,
                    body: r.get(9)?,
                })
            })
            .optional()?)
    }

    /// A POST made: it leaves the queue.
    pub fn pushed(&self, seq: i64) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM push_outbox WHERE seq = ?1")?
            .execute([seq])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, ctx: &str, at: i64, live: bool) -> ServedTask {
        ServedTask {
            id: id.into(),
            agent: "build".into(),
            context_id: ctx.into(),
            owner: "local".into(),
            state: if live { "working" } else { "completed" }.into(),
            live,
            created_ms: at,
            updated_ms: at,
            body: "{}".into(),
        }
    }

    /// ListTasks' page: the most recently changed first, after the cursor, by context, state and
    /// time, with the count of all that match.
    #[test]
    fn a_page_of_tasks_by_cursor_context_state_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let s = ServedStore::open(&dir.path().join("build.db")).unwrap();
        s.put(&task("a", "c1", 1, false)).unwrap();
        s.put(&task("b", "c1", 2, true)).unwrap();
        s.put(&task("c", "c2", 3, false)).unwrap();
        let ids =
            |v: (Vec<ServedTask>, usize)| (v.0.into_iter().map(|t| t.id).collect::<Vec<_>>(), v.1);
        let all = ListFilter::default();
        let c1 = ListFilter {
            context_id: Some("c1"),
            ..all
        };
        assert_eq!(
            ids(s.list("build", "local", &all, 10).unwrap()),
            (vec!["c".to_string(), "b".into(), "a".into()], 3)
        );
        assert_eq!(
            ids(s.list("build", "local", &c1, 1).unwrap()),
            (vec!["b".into()], 2)
        );
        // The next page starts after the last one's (updated_ms, id).
        let next = ListFilter {
            after: Some((2, "b")),
            ..c1
        };
        assert_eq!(
            ids(s.list("build", "local", &next, 1).unwrap()),
            (vec!["a".into()], 2)
        );
        let working = ListFilter {
            state: Some("working"),
            ..all
        };
        assert_eq!(
            ids(s.list("build", "local", &working, 10).unwrap()),
            (vec!["b".into()], 1)
        );
        let since = ListFilter {
            updated_after_ms: Some(2),
            ..all
        };
        assert_eq!(
            ids(s.list("build", "local", &since, 10).unwrap()),
            (vec!["c".into(), "b".into()], 2)
        );
        assert!(s.list("build", "other", &all, 10).unwrap().0.is_empty());
    }

    #[test]
    fn tasks_and_contexts_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("serve/x.db");
        {
            let s = ServedStore::open(&path).unwrap();
            s.put(&task("a", "c1", 1, false)).unwrap();
            s.put(&task("b", "c1", 2, true)).unwrap();
            s.put(&task("c", "c2", 3, false)).unwrap();
            s.put_context(&ServedContext {
                id: "c1".into(),
                agent: "build".into(),
                owner: "local".into(),
                session_id: "s1".into(),
                created_ms: 1,
                allowed: Vec::new(),
                dirs: Vec::new(),
            })
            .unwrap();
            let rule = ["Bash(rm -rf build)".to_string()];
            let dir = ["/srv/notes".to_string()];
            s.grant("local", "build", "c1", &rule, &[]).unwrap();
            s.grant("local", "build", "c1", &rule, &dir).unwrap();
            s.grant("local", "build", "nope", &rule, &[]).unwrap();
            s.grant("other", "build", "c1", &rule, &[]).unwrap();
        }
        let s = ServedStore::open(&path).unwrap();
        assert_eq!(s.get("b").unwrap(), Some(task("b", "c1", 2, true)));
        assert_eq!(s.get("nope").unwrap(), None);
        let all = ListFilter::default();
        let listed = s.list("build", "local", &all, 10).unwrap().0;
        assert_eq!(
            listed.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["c", "b", "a"]
        );
        assert_eq!(
            s.live()
                .unwrap()
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        let c1 = s.context("local", "build", "c1").unwrap().unwrap();
        assert_eq!(c1.session_id, "s1");
        assert_eq!(c1.allowed, ["Bash(rm -rf build)"]);
        assert_eq!(c1.dirs, ["/srv/notes"]);
        assert_eq!(s.context("local", "build", "nope").unwrap(), None);
        // Another owner's (or agent's) context of the same name is another one.
        assert_eq!(s.context("other", "build", "c1").unwrap(), None);
        assert_eq!(s.context("local", "docs", "c1").unwrap(), None);
        s.put_context(&ServedContext {
            owner: "other".into(),
            session_id: "s2".into(),
            ..c1.clone()
        })
        .unwrap();
        assert_eq!(
            s.context("other", "build", "c1")
                .unwrap()
                .unwrap()
                .session_id,
            "s2"
        );
        assert_eq!(s.context("local", "build", "c1").unwrap().unwrap(), c1);
        s.delete("a").unwrap();
        assert_eq!(s.get("a").unwrap(), None);
        assert_eq!(s.live_of("local").unwrap(), 1);
        let mut paid = task("p", "c2", 10, false);
        paid.body = r#"{"metadata":{"claudeCode":{"costUsd":0.25}}}"#.into();
        s.put(&paid).unwrap();
        s.put(&ServedTask {
            id: "q".into(),
            ..paid.clone()
        })
        .unwrap();
        assert_eq!(s.spent_since("local", 10).unwrap(), 0.5);
        assert_eq!(s.spent_since("local", 11).unwrap(), 0.0);
        assert_eq!(s.spent_since("other", 0).unwrap(), 0.0);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "the store is private");
        }
    }

    /// A task's webhooks are told of a change with it, in one step, per dialect; their POSTs
    /// come out oldest first, per webhook, and survive a reopen; deleting a webhook drops its
    /// queue; a task takes at most `max` webhooks.
    #[test]
    fn webhooks_are_told_in_order_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("build.db");
        let hook = |id: &str, dialect: &str| PushConfig {
            task_id: "a".into(),
            id: id.into(),
            dialect: dialect.into(),
            url: format!("https://hooks.example/{id}"),
            token: None,
            scheme: Some("Bearer".into()),
            credentials: Some("s3".into()),
            created_ms: 1,
        };
        {
            let s = ServedStore::open(&path).unwrap();
            s.put(&task("a", "c1", 1, true)).unwrap();
            assert!(s.put_push(&hook("h1", "1.0"), 2).unwrap());
            assert!(s.put_push(&hook("h2", "0.3"), 2).unwrap());
            assert!(!s.put_push(&hook("h3", "1.0"), 2).unwrap(), "over the cap");
            assert!(s.put_push(&hook("h1", "1.0"), 2).unwrap(), "a replacement");
            let mut asked = Vec::new();
            let n = s
                .put_telling(&task("a", "c1", 2, true), |d| {
                    asked.push(d.to_string());
                    vec![format!("{d}-first"), format!("{d}-second")]
                })
                .unwrap();
            assert_eq!((n, asked.len()), (4, 2));
            // No webhook: nothing asked, nothing queued.
            s.put(&task("b", "c1", 1, true)).unwrap();
            let n = s
                .put_telling(&task("b", "c1", 2, false), |_| unreachable!())
                .unwrap();
            assert_eq!(n, 0);
            assert_eq!(s.get("b").unwrap().unwrap().updated_ms, 2);
        }
        let s = ServedStore::open(&path).unwrap();
        let mut lanes = s.lanes().unwrap();
        lanes.sort();
        assert_eq!(
            lanes,
            [
                ("a".to_string(), "h1".to_string()),
                ("a".into(), "h2".into())
            ]
        );
        let first = s.next_push("a", "h1").unwrap().unwrap();
        assert_eq!(
            (first.body.as_str(), first.config),
            ("1.0-first", hook("h1", "1.0"))
        );
        s.pushed(first.seq).unwrap();
        assert_eq!(s.next_push("a", "h1").unwrap().unwrap().body, "1.0-second");
        assert_eq!(s.pushes("a").unwrap().len(), 2);
        assert!(s.delete_push("a", "h2").unwrap());
        assert!(
            !s.delete_push("a", "h2").unwrap(),
            "deleting twice is no error"
        );
        assert_eq!(s.next_push("a", "h2").unwrap(), None);
        assert_eq!(s.lanes().unwrap(), [("a".to_string(), "h1".to_string())]);
    }

    /// A store written before contexts had owners keeps each conversation, now its owner's.
    #[test]
    fn contexts_of_an_earlier_store_are_kept_as_their_owners() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..2] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 2).unwrap();
            conn.execute(
                "INSERT INTO contexts (id, agent, owner, session_id, created_ms, allowed)
                 VALUES ('c1', 'build', 'TOKEN_A', 's1', 5, '[\"Bash\"]')",
                [],
            )
            .unwrap();
        }
        let s = ServedStore::open(&path).unwrap();
        let c = s.context("TOKEN_A", "build", "c1").unwrap().unwrap();
        assert_eq!(
            (c.session_id.as_str(), c.allowed.as_slice()),
            ("s1", &["Bash".to_string()][..])
        );
        assert_eq!(s.context("TOKEN_B", "build", "c1").unwrap(), None);
    }
}
