//! Queries over one session's SQLite file. Every change to a task is a
//! [`core::lifecycle`](a2a_mod_core::lifecycle) event: read, applied and written back (one
//! `UPDATE`, [`persist`]) inside one `BEGIN IMMEDIATE` transaction, so the poller, the MCP server,
//! the monitor and the hooks, writing at once, each apply their event to what the one before them
//! committed.
//!
//! [`Store::write`] is the one place every write transaction goes through, so it is also where the
//! status snapshot is published ([`super::snapshot`]): summarized inside the transaction, written
//! after COMMIT under the publish lock. A store opened for writing also brings a missing or stale
//! snapshot up to date, and re-stamps it when closing the connection checkpoints the WAL.

use super::schema::MIGRATIONS;
use super::snapshot::{self, PublishLock, Stamp};
use a2a_mod_core::clock;
use a2a_mod_core::lifecycle::{self, Event, Life, NewTask, TaskKey};
use a2a_mod_core::status::{self, Snapshot};
use a2a_mod_core::task::{EndReason, PollUpdate, Seen, TaskState};
use a2a_mod_os::fsx::Unwritable;
use anyhow::{Context, Result};
use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, params};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Why a claim (`Store::claim_unannounced_with`, `Store::take_undelivered_with`) did not commit.
/// Either way nothing was marked: the batch is offered again to the next claim.
#[derive(Debug, thiserror::Error)]
pub enum ClaimError {
    /// The store failed (SQLite, a corrupt file): worth reporting, and retrying next tick.
    #[error(transparent)]
    Store(anyhow::Error),
    /// The caller's `deliver` failed (the wake line or the Stop answer could not be written,
    /// e.g. Claude Code closed our stdout).
    #[error("could not hand the claimed tasks over: {0}")]
    Deliver(std::io::Error),
}

impl From<rusqlite::Error> for ClaimError {
    fn from(e: rusqlite::Error) -> ClaimError {
        ClaimError::Store(e.into())
    }
}

impl ClaimError {
    /// For the claims without a `deliver` step, whose callers only report the error: the store's
    /// own error as it was (so `Corrupt` still downcasts).
    fn into_anyhow(self) -> anyhow::Error {
        match self {
            ClaimError::Store(e) => e,
            ClaimError::Deliver(e) => anyhow::Error::new(e),
        }
    }
}

/// Which mark a claim sets.
#[derive(Clone, Copy)]
enum Claim {
    Announce,
    Deliver,
}

/// Writers wait this long for another writer instead of failing with `database is locked`.
const WRITE_BUSY: Duration = Duration::from_secs(10);
/// The status line would rather show nothing than be late.
const READ_BUSY: Duration = Duration::from_millis(50);

/// A task's row: its [`Life`] (what `lifecycle::apply` changes) and what only the store has (its
/// row id and version, its identity, the message). Reading `row.state`
/// reads the life (`Deref`): a row is that life, as the store keeps it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TaskRecord {
    pub seq: i64,
    pub worker: String,
    pub task_id: String,
    pub message: String,
    /// Bumped by every change (`persist`): whether a row read earlier is still the row.
    #[serde(skip)]
    pub version: i64,
    #[serde(flatten)]
    pub life: Life,
}

impl std::ops::Deref for TaskRecord {
    type Target = Life;
    fn deref(&self) -> &Life {
        &self.life
    }
}

impl TaskRecord {
    pub fn key(&self) -> TaskKey {
        TaskKey::new(&self.worker, &self.task_id)
    }

    /// What the status line draws of it.
    pub fn status_row(&self) -> status::Row<'_> {
        status::Row {
            worker: &self.worker,
            text: &self.message,
            state: self.state,
            started_ms: self.started_ms,
            ended_ms: self.ended_ms,
            end: self.end_reason,
            question: self.question.as_deref(),
        }
    }
}

/// A session's store, read only: what the hot paths (the status line, a hook with nothing to
/// say) and the listings open (`Reader::open`). It has no way to write; the writer, [`Store`],
/// reads through one (`Deref`).
pub struct Reader {
    conn: Connection,
    path: PathBuf,
}

/// A session's store, for writing: every write is one transaction that publishes the status
/// snapshot of what it committed.
pub struct Store {
    // Field order matters: `reader` (its connection) is dropped (closed) before `publisher`,
    // whose `Drop` re-stamps the snapshot after the close; see `impl Drop for Store`.
    reader: Reader,
    publisher: Publisher,
}

impl std::ops::Deref for Store {
    type Target = Reader;
    fn deref(&self) -> &Reader {
        &self.reader
    }
}

/// A writer's side of the status snapshot.
struct Publisher {
    db: PathBuf,
    lock: PublishLock,
    /// Set by `Store::drop` (lock held): the stamp before the close and the snapshot, if it was
    /// fresh; `Publisher::drop` re-stamps it once the connection is closed.
    closing: Option<(Stamp, Option<Snapshot>)>,
}

impl Drop for Store {
    /// Closing the last connection checkpoints the WAL into the db and deletes it: the tasks are
    /// the same, but the files (and so the stamp) change. Without a re-stamp the status line would
    /// fall back to SQLite on every tick until the next write, which is the whole idle time of a
    /// session whose tasks ended.
    fn drop(&mut self) {
        let p = &mut self.publisher;
        if !p.lock.lock() {
            return;
        }
        let before = snapshot::stamp(&p.db);
        let fresh = snapshot::read_locked(&p.db)
            .filter(|(stamp, _)| *stamp == before)
            .map(|(_, snap)| snap);
        p.closing = Some((before, fresh));
        // `reader` (the connection) closes after this, then `publisher` drops (declaration order).
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        let Some((before, fresh)) = self.closing.take() else {
            return;
        };
        let after = snapshot::stamp(&self.db);
        if after != before
            && let Some(snap) = fresh
        {
            let _ = snapshot::publish(&self.db, after, snap);
        }
        self.lock.unlock();
    }
}

/// The columns of a [`Life`], in its fields' order: read by [`read_life`], written by
/// [`persist`] from [`life_params`] (a new lifecycle field is a column here, its read and its
/// parameter, beside its migration).
const LIFE: &str = "started_ms, state, context_id, result, result_chars, question, updated_ms, \
    ended_ms, end_reason, next_poll_ms, held_until_ms, stream_lease_ms, failed_polls, last_error, \
    announced_ms, delivered_ms, native_ms";

/// A row's columns: its identity, then [`LIFE`] ([`row_to_record`]).
static COLUMNS: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| format!("seq, version, worker, task_id, message, {LIFE}"));

/// A life from the row's columns from `at` on ([`LIFE`]'s order).
fn read_life(r: &Row<'_>, at: usize) -> rusqlite::Result<Life> {
    let text = |i: usize| -> rusqlite::Result<Option<String>> {
        Ok(lossy(r.get_ref(at + i)?).map(|c| c.into_owned()))
    };
    Ok(Life {
        started_ms: r.get(at)?,
        state: TaskState::parse(&text(1)?.unwrap_or_default()),
        context_id: text(2)?,
        result: text(3)?,
        result_chars: chars(r.get(at + 4)?),
        question: text(5)?,
        updated_ms: r.get(at + 6)?,
        ended_ms: r.get(at + 7)?,
        end_reason: text(8)?.as_deref().and_then(EndReason::parse),
        next_poll_ms: r.get(at + 9)?,
        held_until_ms: r.get(at + 10)?,
        stream_lease_ms: r.get(at + 11)?,
        failed_polls: r.get::<_, i64>(at + 12)?.clamp(0, u32::MAX as i64) as u32,
        last_error: text(13)?,
        announced_ms: r.get(at + 14)?,
        delivered_ms: r.get(at + 15)?,
        native_ms: r.get(at + 16)?,
    })
}

/// What a write sets: [`LIFE`] and `tracked`.
const WRITTEN: usize = 18;

/// The placeholders of [`life_params`] in a statement whose earlier parameters end before `first`.
fn written_from(first: usize) -> String {
    let values: Vec<String> = (first..first + WRITTEN).map(|i| format!("?{i}")).collect();
    values.join(", ")
}

/// A life as [`persist`]'s parameters ([`LIFE`]'s order, then `tracked`), borrowed: the poller
/// writes a burst of these, and a result may be long.
///
/// `tracked` is read by nothing in this version: it only ever repeated `ended_ms IS NULL`. It is
/// still written, because an upgrade leaves the older a2a-mod running beside the new one (the MCP
/// servers and pollers of open sessions) on the same store, and those read it: dropping it would
/// break them mid-task. It can go in the step that makes the older versions refuse the store.
fn life_params(t: &Life) -> [ToSqlOutput<'_>; WRITTEN] {
    fn text(s: Option<&str>) -> ToSqlOutput<'_> {
        ToSqlOutput::Borrowed(s.map_or(ValueRef::Null, |s| ValueRef::Text(s.as_bytes())))
    }
    fn int(n: Option<i64>) -> ToSqlOutput<'static> {
        n.map_or(ToSqlOutput::Borrowed(ValueRef::Null), |n| {
            ToSqlOutput::Owned(Value::Integer(n))
        })
    }
    [
        int(Some(t.started_ms)),
        text(Some(t.state.as_str())),
        text(t.context_id.as_deref()),
        text(t.result.as_deref()),
        int(t.result_chars.map(|n| n as i64)),
        text(t.question.as_deref()),
        int(Some(t.updated_ms)),
        int(t.ended_ms),
        text(t.end_reason.map(EndReason::as_str)),
        int(t.next_poll_ms),
        int(t.held_until_ms),
        int(t.stream_lease_ms),
        int(Some(t.failed_polls.into())),
        text(t.last_error.as_deref()),
        int(t.announced_ms),
        int(t.delivered_ms),
        int(t.native_ms),
        int(Some(t.is_live().into())),
    ]
}

/// A text column read lossily: it may hold bytes that are not UTF-8 if a file was tampered with,
/// and that must not fail the whole render.
fn lossy(v: rusqlite::types::ValueRef<'_>) -> Option<std::borrow::Cow<'_, str>> {
    match v {
        rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
            Some(String::from_utf8_lossy(b))
        }
        rusqlite::types::ValueRef::Null => None,
        other => Some(format!("{other:?}").into()),
    }
}

/// Whole rows matching `where_` (with its ORDER BY), on any connection: a store's own or a write
/// transaction's.
fn select(
    c: &Connection,
    where_: &str,
    p: impl rusqlite::Params,
) -> rusqlite::Result<Vec<TaskRecord>> {
    let mut stmt = c.prepare_cached(&format!("SELECT {} FROM tasks {where_}", *COLUMNS))?;
    stmt.query_map(p, row_to_record)?.collect()
}

fn row_to_record(r: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let text = |i: usize| -> rusqlite::Result<String> {
        Ok(lossy(r.get_ref(i)?)
            .map(|c| c.into_owned())
            .unwrap_or_default())
    };
    Ok(TaskRecord {
        seq: r.get(0)?,
        version: r.get(1)?,
        worker: text(2)?,
        task_id: text(3)?,
        message: text(4)?,
        life: read_life(r, 5)?,
    })
}

/// A character count as stored: SQLite has no unsigned integers, and a tampered file may hold
/// anything.
fn chars(v: Option<i64>) -> Option<u64> {
    v.and_then(|n| u64::try_from(n).ok())
}

/// How many tasks the poller owns: one indexed count, no rows read.
fn count_live(c: &Connection) -> rusqlite::Result<i64> {
    c.query_row(
        "SELECT COUNT(*) FROM tasks WHERE ended_ms IS NULL",
        [],
        |r| r.get(0),
    )
}

/// Switches a new file to WAL. The switch needs an exclusive lock and SQLite does not run the
/// busy handler for it, so two processes creating the same store at once would see
/// `database is locked`: retry until the writers' busy timeout. On a store already in WAL (the
/// mode persists in the file) this is a no-op.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && start.elapsed() < WRITE_BUSY =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

/// Makes a writer's store private before SQLite touches it (it holds task messages and
/// results). SQLite creates a new db 0644 less the umask, and its `-wal` and `-shm` with the db's
/// mode, so creating the db 0600 first makes all three private. Files and folders an older
/// a2a-mod (or a loose umask) left readable are tightened: the sessions folder, the state folder
/// holding it, the db, its WAL, shared memory and snapshot. Writers only: the hot path's
/// read-only open never chmods. `what` names the store in an error (session or serve store).
pub(crate) fn make_private(db: &Path, what: &str) -> Result<()> {
    if let Some(dir) = db.parent().filter(|d| !d.as_os_str().is_empty()) {
        a2a_mod_os::fsx::create_private_dir(dir)
            .with_context(|| format!("cannot create state folder \"{}\"", dir.display()))?;
        a2a_mod_os::fsx::tighten(dir);
        if dir.file_name().is_some_and(|n| n == "sessions")
            && let Some(state) = dir.parent()
        {
            a2a_mod_os::fsx::tighten(state);
        }
    }
    a2a_mod_os::fsx::open_private(db)
        .with_context(|| format!("cannot open {what} \"{}\"", db.display()))?;
    for p in snapshot::companions(db) {
        a2a_mod_os::fsx::tighten(&p);
    }
    Ok(())
}

/// A read-only open that never mistakes a store being created for an error. The open fails when
/// there is no file; a writer may create it right after (`tasks` once failed with
/// "unable to open database file" because the existence check that followed found the new file).
/// So: a failed open with no file now is "no store"; with a file now, open again. a2a-mod never
/// deletes a store, so the second open finds the file and fails only for a real reason
/// (permissions, not a file); a file the user moved aside in between is "no store" again.
fn open_existing(
    path: &Path,
    mut open: impl FnMut() -> rusqlite::Result<Connection>,
) -> rusqlite::Result<Option<Connection>> {
    let first = match open() {
        Ok(c) => return Ok(Some(c)),
        Err(e) => e,
    };
    if !path.exists() {
        return Ok(None);
    }
    match open() {
        Ok(c) => Ok(Some(c)),
        Err(_) if !path.exists() => Ok(None),
        Err(e) => {
            tracing::debug!("store open failed twice: {first}; {e}");
            Err(e)
        }
    }
}

/// A store SQLite cannot read as a database (not one, or damaged).
#[derive(Debug)]
struct Corrupt {
    path: PathBuf,
    cause: String,
}

impl std::fmt::Display for Corrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "session store \"{}\" is corrupt: {} — move it aside; tasks in it are lost",
            self.path.display(),
            self.cause
        )
    }
}

impl std::error::Error for Corrupt {}

/// A store that cannot take a write: its disk is full, or its folder read-only. Nothing in it
/// is lost: the write is tried again when the writer next has something to write.
#[derive(Debug)]
struct CannotSave {
    path: PathBuf,
    why: Unwritable,
}

impl std::fmt::Display for CannotSave {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.path.parent().unwrap_or(&self.path).display();
        let (what, fix) = (self.why.what(), self.why.fix());
        write!(f, "cannot save to \"{dir}\": {what} — {fix}")
    }
}

impl std::error::Error for CannotSave {}

/// Names the file and the fix when SQLite says the store is not a database or is damaged, so
/// `tasks` says what to do instead of "file is not a database" (the status line and hooks only
/// log it), and the folder and the fix when it cannot write (a full disk, a read-only folder).
/// Other errors pass unchanged.
fn explain(e: anyhow::Error, path: &Path) -> anyhow::Error {
    if e.downcast_ref::<Corrupt>().is_some() || e.downcast_ref::<CannotSave>().is_some() {
        return e;
    }
    let code = e
        .chain()
        .filter_map(|c| c.downcast_ref::<rusqlite::Error>())
        .find_map(|r| Some((r, r.sqlite_error_code()?)));
    let path = path.to_path_buf();
    let io = e
        .chain()
        .filter_map(|c| c.downcast_ref::<std::io::Error>())
        .find_map(|io| match io.kind() {
            std::io::ErrorKind::StorageFull => Some(Unwritable::Full),
            std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied => {
                Some(Unwritable::ReadOnly)
            }
            _ => None,
        });
    if let Some(why) = io {
        return anyhow::Error::new(CannotSave { path, why });
    }
    match code {
        Some((r, rusqlite::ErrorCode::NotADatabase | rusqlite::ErrorCode::DatabaseCorrupt)) => {
            anyhow::Error::new(Corrupt {
                path,
                cause: r.to_string(),
            })
        }
        Some((_, rusqlite::ErrorCode::DiskFull)) => anyhow::Error::new(CannotSave {
            path,
            why: Unwritable::Full,
        }),
        Some((_, rusqlite::ErrorCode::ReadOnly | rusqlite::ErrorCode::CannotOpen)) => {
            anyhow::Error::new(CannotSave {
                path,
                why: Unwritable::ReadOnly,
            })
        }
        _ => e,
    }
}

/// The wall clock and the boot clock as they read now: what the store's times are kept on
/// ([`keep_clock`]), and what the poller watches for steps.
pub fn clock_now() -> clock::Reading {
    clock::Reading {
        wall_ms: a2a_mod_os::env::now_ms(),
        boot_ms: a2a_mod_os::env::boot_ms(),
    }
}

/// Brings the store's times onto the wall clock as it reads now, first thing in every write
/// transaction. The store's times are Unix ms on the wall clock, which NTP, the user or a VM
/// restored may set; the meta row `clock` keeps the clock they were read on, as this boot's id
/// and `wall - boot` ms (`core::clock::Reading::offset`: the boot clock runs through sleep and
/// nobody sets it). When that differs by a step from the clock now, every time of every task
/// moves by the step (`Event::ClockSet`) in the same transaction as the write, so no writer
/// mixes times from both sides of a step, and each poll, hold and lease falls due when it would
/// have (a clock set back an hour would otherwise stop the polls for an hour) while the status
/// line counts from the send. A reboot starts the boot clock afresh: the times are then taken as
/// they are. How many tasks moved.
fn keep_clock(c: &Connection) -> rusqlite::Result<usize> {
    let boot = a2a_mod_os::env::boot_id();
    let now = clock_now();
    let stored: Option<String> = c
        .prepare_cached("SELECT value FROM meta WHERE key = 'clock'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    let kept = stored.as_deref().and_then(|v| {
        let (id, offset) = v.split_once(' ')?;
        Some((id == boot).then_some(offset.parse::<i64>().ok()?))
    });
    let moved = match kept {
        // This boot, no step since: nothing to write (the common case, one indexed read).
        Some(Some(offset)) if clock::step_of(offset, now.offset()).is_none() => return Ok(0),
        Some(Some(offset)) => {
            let by = now.offset() - offset;
            let rows = select(c, "", [])?;
            for t in &rows {
                transition(
                    c,
                    (t.seq, t.version),
                    &t.life,
                    Event::ClockSet(by),
                    now.wall_ms,
                )?;
            }
            rows.len()
        }
        // First write, another boot, or a value not ours: the times are taken as they are.
        _ => 0,
    };
    c.prepare_cached(
        "INSERT INTO meta (key, value) VALUES ('clock', ?1)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute([format!("{boot} {}", now.offset())])?;
    Ok(moved)
}

/// The one statement that changes a task: its row as `lifecycle::apply` left it, written over
/// the version it was applied to; false (nothing written) when another writer changed the row
/// since it was read.
fn persist(c: &Connection, (seq, version): (i64, i64), t: &Life) -> rusqlite::Result<bool> {
    static UPDATE: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!(
            "UPDATE tasks SET ({LIFE}, tracked) = ({}), version = version + 1
             WHERE seq = ?1 AND version = ?2",
            written_from(3)
        )
    });
    let life = life_params(t);
    let mut p: Vec<&dyn rusqlite::ToSql> = vec![&seq, &version];
    p.extend(life.iter().map(|v| v as &dyn rusqlite::ToSql));
    let n = c.prepare_cached(&UPDATE)?.execute(p.as_slice())?;
    Ok(n == 1)
}

/// What [`transition`] did.
enum Applied {
    /// The event does not apply to the task.
    No,
    /// Written; whether it wakes the waiters.
    Yes(bool),
    /// Not written: the row changed since it was read (read it again).
    Stale,
}

/// One event for one task read at `row` (its seq and version), inside the caller's write
/// transaction.
fn transition(
    c: &Connection,
    row: (i64, i64),
    before: &Life,
    event: Event<'_>,
    now: i64,
) -> rusqlite::Result<Applied> {
    let Some(after) = lifecycle::apply(Some(before), event, now) else {
        return Ok(Applied::No);
    };
    Ok(match persist(c, row, &after)? {
        true => Applied::Yes(after.wakes_waiters(Some(before))),
        false => Applied::Stale,
    })
}

/// [`transition`] for a task read whole, in this transaction or before it (the poller's row of
/// a poll that went out seconds ago): `None` when the event does not apply, else whether it wakes
/// the waiters. A row read before the transaction may have changed since: written only if not,
/// else (and whenever the old row says the event does not apply) read again and decided afresh.
fn transition_row(
    c: &Connection,
    t: &TaskRecord,
    event: Event<'_>,
    now: i64,
) -> rusqlite::Result<Option<bool>> {
    match transition(c, (t.seq, t.version), &t.life, event, now)? {
        Applied::Yes(wakes) => Ok(Some(wakes)),
        Applied::No | Applied::Stale => transition_key(c, &t.key(), event, now),
    }
}

/// A task's row id and life, for an event: only the columns `lifecycle::apply` reads, so the
/// poller's burst of answers (a thousand a second at a 0.5 s cadence) decodes no message.
fn select_life(c: &Connection, key: &TaskKey) -> rusqlite::Result<Option<((i64, i64), Life)>> {
    static SELECT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        format!("SELECT seq, version, {LIFE} FROM tasks WHERE worker = ?1 AND task_id = ?2")
    });
    c.prepare_cached(&SELECT)?
        .query_row(params![key.worker, key.task_id], |r| {
            Ok(((r.get(0)?, r.get(1)?), read_life(r, 2)?))
        })
        .optional()
}

/// [`transition_row`] for a task by its key.
fn transition_key(
    c: &Connection,
    key: &TaskKey,
    event: Event<'_>,
    now: i64,
) -> rusqlite::Result<Option<bool>> {
    let Some((row, before)) = select_life(c, key)? else {
        return Ok(None);
    };
    // Read in this transaction: never stale.
    match transition(c, row, &before, event, now)? {
        Applied::Yes(wakes) => Ok(Some(wakes)),
        Applied::No | Applied::Stale => Ok(None),
    }
}

impl Reader {
    /// The status snapshot of the store as this connection sees it (inside a write transaction:
    /// including its own writes). What `core::status::summarize` needs, cheaply, because the
    /// poller writes after every poll: the live tasks as a count and the first one (SQL counts
    /// them rather than reading every row per write), then every waiting-state task and the
    /// newest endings, in store order; indexed lookups and only the columns the line draws.
    pub fn summarize(&self) -> rusqlite::Result<Snapshot> {
        let mut snap = Snapshot::default();
        let live = count_live(&self.conn)?;
        if live > 0 {
            self.push_rows(
                &mut snap,
                "WHERE ended_ms IS NULL ORDER BY started_ms, seq LIMIT 1",
            )?;
            snap.push_more_running(u32::try_from(live - 1).unwrap_or(u32::MAX));
        }
        // The waiting states come from `core::ending`, the table the line itself draws by.
        static WAITING_AND_NEWEST: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            let waiting = a2a_mod_core::ending::waiting_states_sql();
            let by_state = a2a_mod_core::ending::ENDED_BY_STATE_SQL;
            format!(
                "WHERE seq IN (
                    SELECT seq FROM tasks WHERE state IN ({waiting}) AND ended_ms IS NOT NULL
                        AND {by_state}
                    UNION SELECT seq FROM tasks WHERE ended_ms = (
                        SELECT ended_ms FROM tasks WHERE ended_ms IS NOT NULL
                            AND NOT (state IN ({waiting}) AND {by_state})
                        ORDER BY ended_ms DESC LIMIT 1)
                 ) ORDER BY started_ms, seq"
            )
        });
        self.push_rows(&mut snap, &WAITING_AND_NEWEST)?;
        Ok(snap)
    }

    fn push_rows(&self, snap: &mut Snapshot, where_: &str) -> rusqlite::Result<()> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT worker, message, state, started_ms, ended_ms, end_reason, question
             FROM tasks {where_}"
        ))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let worker = lossy(r.get_ref(0)?).unwrap_or_default();
            let message = lossy(r.get_ref(1)?).unwrap_or_default();
            let state = lossy(r.get_ref(2)?).unwrap_or_default();
            let end = lossy(r.get_ref(5)?);
            let question = lossy(r.get_ref(6)?);
            snap.push(&status::Row {
                worker: &worker,
                text: &message,
                state: TaskState::parse(&state),
                started_ms: r.get(3)?,
                ended_ms: r.get(4)?,
                end: end.as_deref().and_then(EndReason::parse),
                question: question.as_deref(),
            });
        }
        Ok(())
    }

    /// Opens a store for the hot path: `None` when the session has none, never creates or writes,
    /// and does not checkpoint on close (the last reader closing would otherwise write).
    pub fn open(path: &Path) -> Result<Option<Reader>> {
        Reader::open_with(path, READ_BUSY)
    }

    /// A read-only open for commands a user waits on (`tasks`): same guarantees, but it waits for
    /// a busy writer as long as a writer would, rather than failing.
    pub fn open_wait(path: &Path) -> Result<Option<Reader>> {
        Reader::open_with(path, WRITE_BUSY)
    }

    fn open_with(path: &Path, busy: Duration) -> Result<Option<Reader>> {
        let open = || {
            Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
        };
        let Some(conn) = open_existing(path, open)
            .with_context(|| format!("cannot open \"{}\"", path.display()))?
        else {
            return Ok(None);
        };
        Reader::read_only(conn, path, busy).map_err(|e| explain(e, path))
    }

    fn read_only(conn: Connection, path: &Path, busy: Duration) -> Result<Option<Reader>> {
        conn.busy_timeout(busy)?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        conn.pragma_update(None, "query_only", true)?;
        // A writer may have just created the file and not yet migrated it: nothing to read yet.
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version < 1 {
            return Ok(None);
        }
        Ok(Some(Reader {
            conn,
            path: path.to_path_buf(),
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn query(&self, where_: &str, p: impl rusqlite::Params) -> Result<Vec<TaskRecord>> {
        select(&self.conn, where_, p).map_err(|e| explain(e.into(), &self.path))
    }

    /// Whether another process reads the task's stream now (its lease runs past `now`).
    pub fn stream_leased(&self, key: &TaskKey, now: i64) -> Result<bool> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT 1 FROM tasks WHERE worker = ?1 AND task_id = ?2 AND stream_lease_ms > ?3",
            )?
            .query_row(params![key.worker, key.task_id, now], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Live tasks the poller should poll now, most overdue first, at most `limit` of them.
    pub fn due_tasks(&self, now: i64, limit: usize) -> Result<Vec<TaskRecord>> {
        // Two range lookups on the partial index `tasks_due` (a NULL time means due now).
        self.query(
            "WHERE seq IN (
                SELECT seq FROM tasks
                 WHERE ended_ms IS NULL AND next_poll_ms <= ?1
                UNION ALL SELECT seq FROM tasks
                 WHERE ended_ms IS NULL AND next_poll_ms IS NULL
             ) ORDER BY next_poll_ms LIMIT ?2",
            params![now, limit as i64],
        )
    }

    /// The live tasks the poller must not subscribe to now: held (`lifecycle::Life::held_until_ms`)
    /// or streamed by another process (a stream lease past `now`), each with when that ends. Two
    /// range lookups on partial indexes; outside windows, deferrals and leases, nothing.
    pub fn held_tasks(&self, now: i64) -> Result<Vec<(i64, TaskKey, i64)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, worker, task_id,
                MAX(COALESCE(held_until_ms, 0), COALESCE(stream_lease_ms, 0))
             FROM tasks WHERE seq IN (
                SELECT seq FROM tasks WHERE ended_ms IS NULL AND held_until_ms > ?1
                UNION SELECT seq FROM tasks WHERE ended_ms IS NULL AND stream_lease_ms > ?1
             )",
        )?;
        let rows = stmt.query_map(params![now], |r| {
            let key = TaskKey {
                worker: r.get(1)?,
                task_id: r.get(2)?,
            };
            Ok((r.get(0)?, key, r.get(3)?))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every task the poller owns.
    pub fn live_tasks(&self) -> Result<Vec<TaskRecord>> {
        self.query("WHERE ended_ms IS NULL ORDER BY seq", [])
    }

    /// The live tasks recorded after row `seq` (rows only grow; an upsert keeps its row).
    pub fn live_tasks_after(&self, seq: i64) -> Result<Vec<TaskRecord>> {
        self.query("WHERE ended_ms IS NULL AND seq > ?1 ORDER BY seq", [seq])
    }

    /// How many tasks the poller owns (one indexed count, no rows decoded).
    pub fn live_count(&self) -> Result<usize> {
        Ok(count_live(&self.conn)?.max(0) as usize)
    }

    /// When the next poll falls due after `now` (the poller sleeps until then). Tasks due at or
    /// before `now` are left out: the poller has either sent their poll already (their row still
    /// looks due until the answer is applied) or has no room for it yet.
    pub fn next_due_after(&self, now: i64) -> Result<Option<i64>> {
        Ok(self.conn.query_row(
            "SELECT MIN(next_poll_ms) FROM tasks
             WHERE ended_ms IS NULL AND next_poll_ms > ?1",
            [now],
            |r| r.get(0),
        )?)
    }

    pub fn get(&self, key: &TaskKey) -> Result<Option<TaskRecord>> {
        Ok(self
            .query(
                "WHERE worker = ?1 AND task_id = ?2",
                params![key.worker, key.task_id],
            )?
            .into_iter()
            .next())
    }

    /// A task by its row id, which names the MCP task Claude Code follows for it.
    pub fn by_seq(&self, seq: i64) -> Result<Option<TaskRecord>> {
        Ok(self.query("WHERE seq = ?1", [seq])?.into_iter().next())
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

    /// How many ended tasks' outcomes have not reached Claude (what a hook holds back).
    pub fn count_undelivered(&self) -> Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM tasks WHERE ended_ms IS NOT NULL AND delivered_ms IS NULL",
            [],
            |r| r.get(0),
        )?;
        Ok(n.max(0) as usize)
    }

    /// Whether any ended task's outcome has not reached Claude (cheap check for the hooks).
    pub fn has_undelivered(&self) -> Result<bool> {
        self.has_unclaimed("delivered_ms")
    }

    /// Whether any ended task is not yet claimed for `column` (one indexed probe, no rows read).
    fn has_unclaimed(&self, column: &'static str) -> Result<bool> {
        let sql =
            format!("SELECT 1 FROM tasks WHERE ended_ms IS NOT NULL AND {column} IS NULL LIMIT 1");
        Ok(self
            .conn
            .prepare_cached(&sql)?
            .query_row([], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Whether any ended task is waiting to be announced (cheap check for the monitor).
    pub fn has_unannounced(&self) -> Result<bool> {
        self.has_unclaimed("announced_ms")
    }

    pub fn meta_get(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }
}

impl Store {
    /// Opens (creating and migrating) a session's store for writing.
    pub fn open(path: &Path) -> Result<Store> {
        let open = || {
            make_private(path, "session store")?;
            let conn = Connection::open(path)
                .with_context(|| format!("cannot open session store \"{}\"", path.display()))?;
            Store::prepare(conn, path)
        };
        open().map_err(|e| explain(e, path))
    }

    fn prepare(conn: Connection, path: &Path) -> Result<Store> {
        conn.busy_timeout(WRITE_BUSY)?;
        // The last connection to close would checkpoint and delete the WAL under an exclusive
        // lock, and a reader opening at that moment gets SQLITE_BUSY: with short-lived writers
        // (every CLI command, hook and tool call) that happens all the time. Commits checkpoint
        // passively instead (wal_autocheckpoint), which never blocks readers.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )?;
        set_wal(&conn).with_context(|| format!("cannot use WAL for \"{}\"", path.display()))?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // A step this a2a-mod does not know: a newer one wrote the store, and rows written here
        // would lack what it keeps. Refused before anything is written.
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if usize::try_from(version).is_ok_and(|v| v > MIGRATIONS.len()) {
            anyhow::bail!(
                "session store \"{}\" was written by a newer a2a-mod (schema step {version}; this one knows {}) — upgrade a2a-mod, or move the file aside",
                path.display(),
                MIGRATIONS.len()
            );
        }
        let store = Store {
            reader: Reader {
                conn,
                path: path.to_path_buf(),
            },
            publisher: Publisher {
                db: path.to_path_buf(),
                lock: PublishLock::open(path),
                closing: None,
            },
        };
        store
            .migrate(version)
            .with_context(|| format!("cannot prepare session store \"{}\"", path.display()))?;
        store.refresh_snapshot();
        Ok(store)
    }

    /// Publishes the snapshot when it is missing or stale: a store from before snapshots, or a
    /// writer that died between COMMIT and publishing. Best effort: the status line falls back to
    /// SQLite meanwhile.
    fn refresh_snapshot(&self) {
        let p = &self.publisher;
        if !p.lock.lock() {
            return;
        }
        let now = snapshot::stamp(&p.db);
        let fresh = snapshot::read_locked(&p.db).is_some_and(|(stamp, _)| stamp == now);
        if !fresh {
            // No transaction needed: under the lock no a2a-mod writer commits.
            match self.summarize() {
                Ok(snap) => {
                    let _ = snapshot::publish(&p.db, now, snap);
                }
                Err(_) => snapshot::withdraw(&p.db),
            }
        }
        p.lock.unlock();
    }

    /// Brings a store at step `version` (as read when it was opened) to this version's last.
    fn migrate(&self, version: i64) -> Result<()> {
        if version as usize >= MIGRATIONS.len() {
            return Ok(());
        }
        self.transaction(false, |tx| {
            // Re-read inside the write lock: another process may have migrated meanwhile.
            let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            for (i, step) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
                tx.execute_batch(step)?;
                tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            }
            Ok::<_, rusqlite::Error>(())
        })
        .map_err(|e| explain(e.into(), &self.path))
    }

    /// One write transaction, then the status snapshot of what it committed. The snapshot is
    /// summarized inside the transaction (so it is exactly this commit's state) and published
    /// after COMMIT with the publish lock held from before COMMIT: the next writer cannot publish
    /// until this one has, so publications land in commit order.
    fn write<T>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> Result<T> {
        self.write_tx(f)
            .map_err(|e: rusqlite::Error| explain(e.into(), &self.path))
    }

    /// [`Store::write`] for a body that can fail on its own terms too (`E`, e.g. a claim whose
    /// delivery failed): any error of the body rolls the transaction back and comes out as is.
    fn write_tx<T, E: From<rusqlite::Error>>(
        &self,
        f: impl FnOnce(&Connection) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.transaction(true, f)
    }

    /// [`Store::write_tx`]; `on_clock`: first bring the store's times onto the clock as it reads
    /// now ([`keep_clock`]), which every write does but the migration (the tables may not be
    /// there yet).
    fn transaction<T, E: From<rusqlite::Error>>(
        &self,
        on_clock: bool,
        f: impl FnOnce(&Connection) -> std::result::Result<T, E>,
    ) -> std::result::Result<T, E> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let v = match (if on_clock {
            keep_clock(&self.conn).map(drop)
        } else {
            Ok(())
        })
        .map_err(E::from)
        .and_then(|()| f(&self.conn))
        {
            Ok(v) => v,
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        };
        let p = &self.publisher;
        // Before the lock: a query error must not leave us holding it. The migration's own
        // transaction may run before the table exists; then there is nothing to show.
        let snap = self.summarize();
        let locked = p.lock.lock();
        let committed = self.conn.execute_batch("COMMIT");
        if committed.is_ok() {
            match (locked, snap) {
                (true, Ok(snap)) => {
                    let _ = snapshot::publish(&p.db, snapshot::stamp(&p.db), snap);
                }
                _ => snapshot::withdraw(&p.db),
            }
        }
        if locked {
            p.lock.unlock();
        }
        committed?;
        Ok(v)
    }

    /// One event for one task (`lifecycle::Event`), in one write transaction: whether it
    /// applied. The writes below are this for their own events, or for many tasks at once.
    pub fn transition(&self, key: &TaskKey, event: Event<'_>, now: i64) -> Result<bool> {
        let applied = self.write(|c| transition_key(c, key, event, now))?;
        if applied == Some(true) {
            self.ended();
        }
        Ok(applied.is_some())
    }

    /// Records a task as a send left it: a new row, or the same task again after a follow-up
    /// (input-required answered), which makes it live and unannounced again.
    pub fn record_sent(&self, t: &NewTask<'_>, now: i64) -> Result<()> {
        let key = TaskKey::new(t.worker, t.task_id);
        let wakes = self.write(|c| {
            if let Some((row, before)) = select_life(c, &key)? {
                let applied = transition(c, row, &before, Event::Sent(t), now)?;
                return Ok(matches!(applied, Applied::Yes(true)));
            }
            let Some(n) = lifecycle::apply(None, Event::Sent(t), now) else {
                return Ok(false);
            };
            static INSERT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
                format!(
                    "INSERT INTO tasks (worker, task_id, message, {LIFE}, tracked)
                     VALUES (?1, ?2, ?3, {})",
                    written_from(4)
                )
            });
            let life = life_params(&n);
            let mut p: Vec<&dyn rusqlite::ToSql> = vec![&t.worker, &t.task_id, &t.message];
            p.extend(life.iter().map(|v| v as &dyn rusqlite::ToSql));
            c.prepare_cached(&INSERT)?.execute(p.as_slice())?;
            Ok(n.wakes_waiters(None))
        })?;
        if wakes {
            self.ended();
        }
        Ok(())
    }

    /// Applies one poll's outcome to a task that is still live (`Event::Polled`). A task that
    /// ended meanwhile (by another writer) is left alone. `told`: Claude gets this outcome right
    /// now (inline window). Returns whether the row changed.
    pub fn apply_poll(
        &self,
        key: &TaskKey,
        update: &PollUpdate,
        told: bool,
        now: i64,
    ) -> Result<bool> {
        self.transition(key, Event::Polled { update, told }, now)
    }

    /// [`Store::apply_poll`] for many answers in one transaction (the background poller's burst).
    pub fn apply_polls<'a>(
        &self,
        polls: impl IntoIterator<Item = (&'a TaskRecord, &'a PollUpdate)>,
        now: i64,
    ) -> Result<()> {
        self.apply_polls_and_events(polls, std::iter::empty(), now)
    }

    /// The background poller's pass: the polls' answers and the events its subscriptions
    /// streamed (`Event::Streamed`), in one transaction and one snapshot refresh, as
    /// [`Store::apply_polls`] alone would be. Nothing is lost by an event a hold drops: the polls
    /// and the stream go on once the hold is over. Each poll's answer is applied to the row the
    /// poller read when the poll went out, read again only if it changed since.
    pub fn apply_polls_and_events<'a>(
        &self,
        polls: impl IntoIterator<Item = (&'a TaskRecord, &'a PollUpdate)>,
        events: impl IntoIterator<Item = (&'a TaskKey, &'a PollUpdate)>,
        now: i64,
    ) -> Result<()> {
        let wakes = self.write(|c| {
            let mut wakes = false;
            // Events first: a streamed ending in hand beats the sixth failed poll (or a "not
            // found") of the same pass; the polls then find the task ended and change nothing.
            for (key, u) in events {
                wakes |= transition_key(c, key, Event::Streamed(u), now)? == Some(true);
            }
            for (t, update) in polls {
                let event = Event::Polled {
                    update,
                    told: false,
                };
                wakes |= transition_row(c, t, event, now)? == Some(true);
            }
            Ok(wakes)
        })?;
        if wakes {
            self.ended();
        }
        Ok(())
    }

    /// Updates a task from a fresh look at it outside the poller (the `task` tool, `cancel`):
    /// Claude gets this outcome now, so it is marked told; a live task is (re-)tracked.
    pub fn record_seen(
        &self,
        worker: &str,
        seen: Seen<'_>,
        next_poll_ms: i64,
        now: i64,
    ) -> Result<()> {
        let event = Event::Seen { seen, next_poll_ms };
        self.transition(&TaskKey::new(worker, seen.task_id), event, now)?;
        Ok(())
    }

    /// Renews (`Some`) or gives up (`None`) the stream lease of a live task: while it runs, the
    /// poller polls the task but does not subscribe to it. False when the task is no longer live
    /// (ended by a poll, a cancel): the stream has nothing left to tell.
    pub fn set_stream_lease(&self, key: &TaskKey, until_ms: Option<i64>, now: i64) -> Result<bool> {
        self.transition(key, Event::Leased(until_ms), now)
    }

    /// Claims every ended task not yet announced and marks it announced, in one transaction, so
    /// no task is announced twice by two monitors or skipped across restarts.
    pub fn claim_unannounced(&self, now: i64) -> Result<Vec<TaskRecord>> {
        self.claim(Claim::Announce, now, None, |_| Ok(()))
            .map_err(ClaimError::into_anyhow)
    }

    /// Like [`Store::claim_unannounced`], running `deliver` (e.g. printing the wake line) before
    /// the claim commits: if it fails, nothing is marked and the batch is offered again, so a line
    /// that could not be written is never counted as announced.
    pub fn claim_unannounced_with(
        &self,
        now: i64,
        deliver: impl FnOnce(&[TaskRecord]) -> std::io::Result<()>,
    ) -> Result<Vec<TaskRecord>, ClaimError> {
        self.claim(Claim::Announce, now, None, deliver)
    }

    /// Claims every ended task whose outcome Claude has not been given, marking it given.
    pub fn take_undelivered(&self, now: i64) -> Result<Vec<TaskRecord>> {
        // Only as many as one hook's context can show (`core::bounds::NOTES_PER_HOOK`): the rest
        // stay undelivered for the next hook, so no outcome is claimed and then left unshown.
        self.claim(
            Claim::Deliver,
            now,
            Some(a2a_mod_core::bounds::NOTES_PER_HOOK),
            |_| Ok(()),
        )
        .map_err(ClaimError::into_anyhow)
    }

    /// Like [`Store::take_undelivered`], running `deliver` (the Stop hook printing its answer)
    /// before the claim commits, so outcomes that could not be handed over stay undelivered.
    pub fn take_undelivered_with(
        &self,
        now: i64,
        deliver: impl FnOnce(&[TaskRecord]) -> std::io::Result<()>,
    ) -> Result<Vec<TaskRecord>, ClaimError> {
        self.claim(
            Claim::Deliver,
            now,
            Some(a2a_mod_core::bounds::NOTES_PER_HOOK),
            deliver,
        )
    }

    fn claim(
        &self,
        claim: Claim,
        now: i64,
        limit: Option<usize>,
        deliver: impl FnOnce(&[TaskRecord]) -> std::io::Result<()>,
    ) -> Result<Vec<TaskRecord>, ClaimError> {
        let (column, event) = match claim {
            Claim::Announce => ("announced_ms", Event::Announced),
            Claim::Deliver => ("delivered_ms", Event::Delivered),
        };
        // The oldest endings first; past `limit`, rows stay unclaimed for the next claim.
        let unclaimed = format!(
            "WHERE ended_ms IS NOT NULL AND {column} IS NULL ORDER BY ended_ms, seq LIMIT ?1"
        );
        // SQLite reads a negative LIMIT as none.
        let limit = limit.map_or(-1, |n| n as i64);
        let rows = self
            .write_tx(|c| {
                let rows = select(c, &unclaimed, [limit])?;
                if !rows.is_empty() {
                    deliver(&rows).map_err(ClaimError::Deliver)?;
                    for t in &rows {
                        transition_row(c, t, event, now)?;
                    }
                }
                Ok(rows)
            })
            .map_err(|e| match e {
                ClaimError::Store(e) => ClaimError::Store(explain(e, &self.path)),
                deliver => deliver,
            })?;
        // The other waiters of this session may have nothing left to wait for (the monitor
        // announced what the asyncRewake waiter was holding on to): let them look now.
        if !rows.is_empty() {
            self.ended();
        }
        Ok(rows)
    }

    /// Claude has these tasks' outcomes (returned by a tool): neither announce nor deliver them
    /// again. One transaction for the lot.
    pub fn mark_told<'a>(
        &self,
        tasks: impl IntoIterator<Item = &'a TaskKey>,
        now: i64,
    ) -> Result<()> {
        self.write(|c| {
            for key in tasks {
                transition_key(c, key, Event::Told, now)?;
            }
            Ok(())
        })
    }

    /// A worker was removed: its live tasks stop being tracked, to be announced as such.
    pub fn end_removed(&self, worker: &str, now: i64) -> Result<usize> {
        let n = self.write(|c| {
            let live = select(c, "WHERE worker = ?1 AND ended_ms IS NULL", [worker])?;
            for t in &live {
                transition_row(c, t, Event::Removed, now)?;
            }
            Ok(live.len())
        })?;
        if n > 0 {
            self.ended();
        }
        Ok(n)
    }

    /// Brings the store's times onto the wall clock as it reads now ([`keep_clock`]), in a
    /// write of its own: what the poller does as soon as it sees the clock set, so the status
    /// line counts on at once. How many tasks' times moved.
    pub fn keep_clock(&self) -> Result<usize> {
        self.transaction(false, keep_clock)
            .map_err(|e| explain(e.into(), &self.path))
    }

    /// A committed write ended a task (or claimed ended ones): wake the session's waiters now
    /// (`super::notify`), not at their next tick. After COMMIT and the snapshot, so what they
    /// look at is already there.
    fn ended(&self) {
        super::notify::notify(&self.path);
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
            result_chars: None,
            question: None,
            next_poll_ms: Some(100),
            held_until_ms: None,
            told: false,
            native_ms: None,
        }
    }

    /// The store's times were read on a clock an hour ahead of the one now (the wall clock was
    /// set back an hour since): the next write moves every task's times back an hour before its
    /// own, once; a mark of another boot (a reboot) moves nothing.
    #[test]
    fn a_write_after_the_clock_was_set_moves_every_time_once() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        const HOUR: i64 = 3_600_000;
        s.record_sent(&sent("w", "old", TaskState::Working), 10 * HOUR)
            .unwrap();
        let mark = s.meta_get("clock").unwrap().unwrap();
        let (boot, offset) = mark.split_once(' ').unwrap();
        let offset: i64 = offset.parse().unwrap();
        assert_eq!(boot, a2a_mod_os::env::boot_id());
        // A write itself: it keeps the clock first (no step), then sets the mark an hour ahead.
        s.meta_set("clock", &format!("{boot} {}", offset + HOUR))
            .unwrap();
        let old = |s: &Store| s.get(&TaskKey::new("w", "old")).unwrap().unwrap();
        assert_eq!(old(&s).started_ms, 10 * HOUR);
        assert_eq!(s.keep_clock().unwrap(), 1);
        let moved = old(&s);
        // The two clocks are read apart: the step is an hour within a few ms.
        assert!((moved.started_ms - 9 * HOUR).abs() < 1_000, "{moved:?}");
        assert!((moved.next_poll_ms.unwrap() - (100 - HOUR)).abs() < 1_000);
        assert_eq!(s.keep_clock().unwrap(), 0, "moved once");
        s.meta_set("clock", "another-boot 5").unwrap();
        assert_eq!(s.keep_clock().unwrap(), 0, "another boot");
        assert_eq!(old(&s), moved);
    }

    /// A store written before step 8 (when `tracked` was read beside `ended_ms`), with a live
    /// task and an ended one not yet announced: opened now, it is migrated once, the live task is
    /// due to the poller and the ended one still waits to be told; and what this version writes
    /// keeps `tracked` true to liveness, for the older processes an upgrade leaves running.
    #[test]
    fn a_store_from_before_step_8_keeps_its_live_and_undelivered_tasks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        {
            let c = Connection::open(&path).unwrap();
            for step in &MIGRATIONS[..7] {
                c.execute_batch(step).unwrap();
            }
            c.pragma_update(None, "user_version", 7).unwrap();
            c.execute_batch(
                "INSERT INTO tasks (worker, task_id, message, state, started_ms, updated_ms,
                    tracked, next_poll_ms) VALUES ('w', 'live', 'm', 'working', 1, 1, 1, 50);
                 INSERT INTO tasks (worker, task_id, message, state, started_ms, updated_ms,
                    ended_ms, end_reason, tracked, result)
                    VALUES ('w', 'done', 'm', 'completed', 1, 2, 2, 'state', 0, 'the answer');",
            )
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        let version: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version as usize, MIGRATIONS.len());
        let due: Vec<String> = s
            .due_tasks(100, 10)
            .unwrap()
            .into_iter()
            .map(|t| t.task_id)
            .collect();
        assert_eq!(due, ["live"]);
        assert_eq!(s.next_due_after(10).unwrap(), Some(50));
        let done = s.get(&TaskKey::new("w", "done")).unwrap().unwrap();
        assert_eq!(done.end_reason, Some(EndReason::State));
        assert_eq!(done.result.as_deref(), Some("the answer"));
        let claimed = s.claim_unannounced(10).unwrap();
        assert_eq!(claimed.len(), 1);
        assert_eq!(claimed[0].task_id, "done");
        s.record_sent(&sent("w", "new", TaskState::Working), 20)
            .unwrap();
        let done = upd(TaskState::Completed, Some(EndReason::State));
        s.apply_poll(&TaskKey::new("w", "live"), &done, false, 30)
            .unwrap();
        let mirrored: Vec<(String, bool, bool)> = s
            .conn
            .prepare("SELECT task_id, tracked, ended_ms IS NULL FROM tasks ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            mirrored,
            [
                ("live".to_string(), false, false),
                ("done".to_string(), false, false),
                ("new".to_string(), true, true)
            ]
        );
        assert_eq!(LIFE.split(',').count() + 1, WRITTEN);
        drop(s);
        // Opened again: nothing to migrate, nothing changed.
        let s = Store::open(&path).unwrap();
        assert_eq!(s.live_count().unwrap(), 1);
    }

    fn upd(state: TaskState, end: Option<EndReason>) -> PollUpdate {
        PollUpdate {
            state,
            text: Some("done".into()),
            text_chars: None,
            question: None,
            context_id: None,
            failed_polls: 0,
            last_error: None,
            end,
            next_poll_ms: end.is_none().then_some(200),
            held_until_ms: None,
        }
    }

    fn k(id: &str) -> TaskKey {
        TaskKey::new("fake", id)
    }

    /// The row as the poller reads it when a poll goes out.
    fn row(s: &Store, id: &str) -> TaskRecord {
        s.get(&k(id)).unwrap().unwrap()
    }

    /// A poll's answer applies to the row the poller read when the poll went out; a row changed
    /// since (a stream lease renewed, an event) is read again, so neither change is lost.
    #[test]
    fn a_poll_answer_over_a_row_changed_since_it_was_read_keeps_both() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Submitted), 0)
            .unwrap();
        let read = row(&s, "t1");
        assert!(s.set_stream_lease(&k("t1"), Some(9_000), 5).unwrap());
        let mut working = upd(TaskState::Working, None);
        working.text = Some("half".into());
        s.apply_polls([(&read, &working)], 10).unwrap();
        let t = row(&s, "t1");
        assert_eq!(
            (t.state, t.stream_lease_ms, t.result.as_deref(), t.version),
            (
                TaskState::Working,
                Some(9_000),
                Some("half"),
                read.version + 2
            )
        );
        // The row as read, unchanged since: written at once.
        s.apply_polls(
            [(&t, &upd(TaskState::Completed, Some(EndReason::State)))],
            20,
        )
        .unwrap();
        assert_eq!(row(&s, "t1").ended_ms, Some(20));
    }

    /// The row holds what it is handed: a result's head and the whole's length (the caller saved
    /// the whole first), through later changes too; a text handed whole stays whole, whatever
    /// its length (the caller could not save it: a result is never lost).
    #[test]
    fn a_long_result_is_held_as_handed_head_and_length_or_whole() {
        let max = a2a_mod_core::bounds::STORED_TEXT_CHARS;
        let long: String = "é".repeat(max + 5);
        let (head, chars) = a2a_mod_core::bounds::row_keeps(&long).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        for (id, text, text_chars) in [("t1", head, Some(chars)), ("unsaved", &long[..], None)] {
            let mut done = upd(TaskState::Completed, Some(EndReason::State));
            (done.text, done.text_chars) = (Some(text.to_string()), text_chars);
            s.record_sent(&sent("fake", id, TaskState::Working), 0)
                .unwrap();
            s.apply_poll(&k(id), &done, false, 10).unwrap();
            assert_eq!(s.claim_unannounced(20).unwrap().len(), 1);
        }
        let t = row(&s, "t1");
        assert_eq!(
            (t.result.as_deref(), t.result_chars),
            (Some(head), Some(chars))
        );
        assert_eq!(chars, (max + 5) as u64);
        assert_eq!(t.announced_ms, Some(20), "a later change keeps the head");
        let unsaved = row(&s, "unsaved");
        assert_eq!(
            (unsaved.life.result, unsaved.life.result_chars),
            (Some(long.clone()), None)
        );

        // A send that ends at once is held the same way.
        let mut at_once = sent("fake", "t2", TaskState::Completed);
        (at_once.result, at_once.result_chars) = (Some(head), Some(chars));
        s.record_sent(&at_once, 30).unwrap();
        assert_eq!(row(&s, "t2").result_chars, Some(chars));
    }

    /// A store a newer a2a-mod wrote (a schema step this one does not know) is refused in one
    /// line that names the file and what to do, and is left as it was.
    #[test]
    fn a_store_from_a_newer_a2a_mod_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        let newer = MIGRATIONS.len() as i64 + 1;
        {
            let s = Store::open(&p).unwrap();
            s.record_sent(&sent("fake", "t1", TaskState::Working), 0)
                .unwrap();
            s.conn.pragma_update(None, "user_version", newer).unwrap();
        }
        let files = || ["", "-wal"].map(|ext| std::fs::read(format!("{}{ext}", p.display())).ok());
        let before = files();
        let e = Store::open(&p).err().expect("refused");
        assert_eq!(
            format!("{e:#}"),
            format!(
                "session store \"{}\" was written by a newer a2a-mod (schema step {newer}; this one knows {}) — upgrade a2a-mod, or move the file aside",
                p.display(),
                MIGRATIONS.len()
            )
        );
        assert_eq!(files(), before, "the store changed");
    }

    /// A delivery that fails comes out as `ClaimError::Deliver` (the monitor's "stdout gone"),
    /// not as a store error, and rolls the claim back so the batch is offered again.
    #[test]
    fn a_failed_delivery_is_its_own_error_and_claims_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Completed), 0)
            .unwrap();
        let gone = || std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        let e = s.claim_unannounced_with(1, |_| Err(gone())).unwrap_err();
        assert!(
            matches!(&e, ClaimError::Deliver(io) if io.kind() == std::io::ErrorKind::BrokenPipe),
            "{e:?}"
        );
        let e = s.take_undelivered_with(2, |_| Err(gone())).unwrap_err();
        assert!(matches!(e, ClaimError::Deliver(_)), "{e:?}");
        assert!(s.has_unannounced().unwrap() && s.has_undelivered().unwrap());
        let mut seen = 0;
        let claimed = s.claim_unannounced_with(3, |b| {
            seen = b.len();
            Ok(())
        });
        assert_eq!((claimed.unwrap().len(), seen), (1, 1));
        assert!(s.take_undelivered_with(4, |_| Ok(())).unwrap().len() == 1);
    }

    /// A streamed event on a live task keeps the poll rhythm and the failed-check count
    /// (a stream is not a check); one that ends the task ends it, and a poll after it changes
    /// nothing.
    #[test]
    fn events_keep_the_poll_rhythm_and_end_like_polls() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Submitted), 0)
            .unwrap();
        let mut failed = upd(TaskState::Submitted, None);
        (failed.failed_polls, failed.last_error, failed.text) = (2, Some("timeout".into()), None);
        s.apply_polls([(&row(&s, "t1"), &failed)], 10).unwrap();
        let mut working = upd(TaskState::Working, None);
        (working.failed_polls, working.next_poll_ms) = (0, Some(999_999));
        s.apply_polls_and_events([], [(&k("t1"), &working)], 20)
            .unwrap();
        let t = s.get(&k("t1")).unwrap().unwrap();
        assert_eq!(
            (
                t.state,
                t.failed_polls,
                t.next_poll_ms,
                t.last_error.as_deref()
            ),
            (TaskState::Working, 2, Some(200), Some("timeout"))
        );
        assert_eq!(t.result.as_deref(), Some("done"));
        let done = upd(TaskState::Completed, Some(EndReason::State));
        s.apply_polls_and_events([(&row(&s, "t1"), &failed)], [(&k("t1"), &done)], 30)
            .unwrap();
        let t = s.get(&k("t1")).unwrap().unwrap();
        assert_eq!(
            (t.state, t.ended_ms, t.is_live(), t.next_poll_ms),
            (TaskState::Completed, Some(30), false, None)
        );
        s.apply_polls([(&row(&s, "t1"), &failed)], 40).unwrap();
        assert_eq!(s.get(&k("t1")).unwrap().unwrap().ended_ms, Some(30));
        assert_eq!(s.claim_unannounced(50).unwrap().len(), 1);
    }

    /// While an inline window holds a task (its next poll past the hold bound), the
    /// poller's stream events are dropped and `held_tasks` names it; once the hold is over they
    /// apply. Were a held task's end applied, it would be announced beside the tool result.
    #[test]
    fn events_for_a_task_held_by_a_window_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Submitted), 0)
            .unwrap();
        let window = Event::HandedOver {
            next_poll_ms: 13_500,
            held_until_ms: Some(8_500),
            lease_until_ms: None,
        };
        assert!(s.transition(&k("t1"), window, 0).unwrap());
        let done = upd(TaskState::Completed, Some(EndReason::State));
        assert_eq!(s.held_tasks(3_000).unwrap().len(), 1);
        s.apply_polls_and_events([], [(&k("t1"), &done)], 3_000)
            .unwrap();
        let t = s.get(&k("t1")).unwrap().unwrap();
        assert_eq!((t.state, t.ended_ms), (TaskState::Submitted, None));
        assert!(s.held_tasks(8_500).unwrap().is_empty());
        s.apply_polls_and_events([], [(&k("t1"), &done)], 8_500)
            .unwrap();
        let t = s.get(&k("t1")).unwrap().unwrap();
        assert_eq!((t.state, t.ended_ms), (TaskState::Completed, Some(8_500)));
    }

    /// A task whose stream another process reads (its lease) is named by `held_tasks` until the
    /// lease runs out, polls or no polls; without it, the poller would open a second stream.
    #[test]
    fn a_stream_lease_holds_a_task_from_the_pollers_streams_until_it_lapses() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("s.db")).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Submitted), 0)
            .unwrap();
        let handed = Event::HandedOver {
            next_poll_ms: 8_000,
            held_until_ms: None,
            lease_until_ms: Some(9_000),
        };
        assert!(s.transition(&k("t1"), handed, 3_000).unwrap());
        let held = s.held_tasks(3_000).unwrap();
        assert_eq!(held.len(), 1);
        assert_eq!(held[0].2, 9_000, "held until the lease ends");
        assert!(s.stream_leased(&k("t1"), 8_999).unwrap());
        assert!(s.held_tasks(9_000).unwrap().is_empty());
        assert!(s.set_stream_lease(&k("t1"), None, 9_000).unwrap());
        assert!(!s.stream_leased(&k("t1"), 0).unwrap());
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
        s.apply_polls([(&row(&s, "t1"), &live), (&row(&s, "t2"), &live)], 150)
            .unwrap();
        assert_eq!(s.next_due_after(150).unwrap(), Some(200));
        assert!(s.due_tasks(150, 10).unwrap().is_empty());
        assert!(
            s.apply_poll(
                &TaskKey::new("fake", "t1"),
                &upd(TaskState::Working, None),
                false,
                100
            )
            .unwrap()
        );
        assert!(
            s.apply_poll(
                &TaskKey::new("fake", "t1"),
                &upd(TaskState::Completed, Some(EndReason::State)),
                false,
                300
            )
            .unwrap()
        );
        // Ended rows are not touched again.
        assert!(
            !s.apply_poll(
                &TaskKey::new("fake", "t1"),
                &upd(TaskState::Failed, Some(EndReason::State)),
                false,
                400
            )
            .unwrap()
        );
        let t1 = s.get(&k("t1")).unwrap().unwrap();
        assert_eq!(
            (t1.state, t1.ended_ms, t1.is_live()),
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
        let t2 = s.get(&k("t2")).unwrap().unwrap();
        assert_eq!(t2.end_reason, Some(EndReason::Removed));
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
        let r = s.get(&k("t1")).unwrap().unwrap();
        assert!(r.is_live() && r.announced_ms.is_none());
        assert_eq!(r.message, "slow 20 build");
    }

    #[test]
    fn reader_sees_writes_and_never_writes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        assert!(Reader::open(&p).unwrap().is_none());
        assert!(!p.exists());
        let w = Store::open(&p).unwrap();
        w.record_sent(&sent("fake", "t", TaskState::Working), 0)
            .unwrap();
        let r = Reader::open(&p).unwrap().unwrap();
        assert_eq!(r.live_tasks().unwrap().len(), 1);
        // A `Reader` has no write method at all; its connection refuses one too (`query_only`).
        assert!(
            r.conn
                .execute_batch("INSERT INTO meta (key, value) VALUES ('k', 'v')")
                .is_err()
        );
    }

    fn fresh(p: &Path) -> Snapshot {
        match super::snapshot::load(p) {
            super::snapshot::Loaded::Fresh(s) => s,
            other => panic!("snapshot not fresh: {other:?}"),
        }
    }

    fn truth(p: &Path) -> Snapshot {
        let all = Reader::open(p).unwrap().unwrap().all().unwrap();
        let rows: Vec<_> = all.iter().map(TaskRecord::status_row).collect();
        status::summarize(&rows)
    }

    /// The snapshot is published in commit order: with writers racing, the last one on disk is the
    /// store's final state, not whichever writer renamed its file last.
    #[test]
    fn snapshot_follows_concurrent_writers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        let keep = Store::open(&p).unwrap();
        let mut handles = Vec::new();
        for w in 0..4 {
            let p = p.clone();
            handles.push(std::thread::spawn(move || {
                let s = Store::open(&p).unwrap();
                for i in 0..60 {
                    let id = format!("t{w}-{i}");
                    s.record_sent(&sent("fake", &id, TaskState::Working), i)
                        .unwrap();
                    if i % 3 != 0 {
                        s.apply_poll(
                            &TaskKey::new("fake", &id),
                            &upd(TaskState::Completed, Some(EndReason::State)),
                            false,
                            i + w,
                        )
                        .unwrap();
                    }
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(fresh(&p), truth(&p));
        assert_eq!(fresh(&p).running, 4 * 20);
        // Closing the last connection leaves the snapshot fresh (connections do not checkpoint on
        // close; if a close ever changes the files, the store's Drop re-stamps the snapshot).
        drop(keep);
        assert_eq!(fresh(&p), truth(&p));
    }

    #[test]
    fn a_missing_or_stale_snapshot_is_rebuilt_by_the_next_open() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        let s = Store::open(&p).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Working), 0)
            .unwrap();
        drop(s);
        // A store from before snapshots.
        std::fs::remove_file(super::snapshot::path_for(&p)).unwrap();
        assert_eq!(super::snapshot::load(&p), super::snapshot::Loaded::Missing);
        drop(Store::open(&p).unwrap());
        assert_eq!(fresh(&p).running, 1);
        // A commit nobody published (a writer killed after COMMIT, or another tool).
        let c = Connection::open(&p).unwrap();
        c.execute("UPDATE tasks SET ended_ms = 5, end_reason = 'state'", [])
            .unwrap();
        assert_eq!(super::snapshot::load(&p), super::snapshot::Loaded::Stale);
        drop(c);
        assert_eq!(super::snapshot::load(&p), super::snapshot::Loaded::Stale);
        drop(Store::open(&p).unwrap());
        assert_eq!(fresh(&p), truth(&p));
        assert_eq!(fresh(&p).running, 0);
        // A reader (the hooks, the status line's fallback) changes nothing.
        let r = Reader::open(&p).unwrap().unwrap();
        r.all().unwrap();
        assert_eq!(fresh(&p), truth(&p));
        drop(r);
        assert_eq!(fresh(&p), truth(&p));
    }

    /// A writer creating the store between a reader's failed open and its existence check once
    /// made the reader fail with "unable to open database file". The opener here
    /// creates the file (as the writer would) and then fails, exactly that interleaving.
    #[test]
    fn a_store_created_after_a_failed_open_reads_as_empty() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        let mut calls = 0;
        let conn = open_existing(&p, || {
            calls += 1;
            if calls == 1 {
                let e = Connection::open_with_flags(&p, OpenFlags::SQLITE_OPEN_READ_WRITE);
                drop(Store::open(&p).unwrap());
                return e;
            }
            Connection::open_with_flags(&p, OpenFlags::SQLITE_OPEN_READ_WRITE)
        })
        .unwrap();
        assert!(conn.is_some());
        assert_eq!(calls, 2);
        // No file before or after: no store, one open.
        let q = dir.path().join("none.db");
        let mut calls = 0;
        let none = open_existing(&q, || {
            calls += 1;
            Connection::open_with_flags(&q, OpenFlags::SQLITE_OPEN_READ_WRITE)
        })
        .unwrap();
        assert!(none.is_none() && calls == 1 && !q.exists());
        // A file that cannot be opened stays an error.
        std::fs::create_dir(dir.path().join("dir.db")).unwrap();
        assert!(Reader::open(&dir.path().join("dir.db")).is_err());
    }

    #[test]
    fn a_corrupt_store_names_the_file_and_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.db");
        std::fs::write(&p, b"not sqlite at all ".repeat(300)).unwrap();
        for e in [
            Reader::open(&p).err().unwrap(),
            Store::open(&p).err().unwrap(),
        ] {
            let line = format!("{e:#}");
            assert!(line.contains(&format!("{}", p.display())), "{line}");
            assert!(
                line.ends_with("move it aside; tasks in it are lost"),
                "{line}"
            );
        }
    }

    /// The store and everything SQLite makes next to it are private under a
    /// loose umask; a looser one from before is tightened by the next writer.
    #[test]
    fn store_files_are_private_and_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sessions = dir.path().join("sessions");
        let p = sessions.join("s.db");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let s = Store::open(&p).unwrap();
        s.record_sent(&sent("fake", "t1", TaskState::Working), 0)
            .unwrap();
        for f in std::fs::read_dir(&sessions).unwrap() {
            let f = f.unwrap().path();
            assert_eq!(mode(&f), 0o600, "{}", f.display());
        }
        assert_eq!(mode(&sessions), 0o700);
        drop(s);
        for (f, m) in [
            (&p, 0o644),
            (&super::snapshot::path_for(&p), 0o666),
            (&sessions, 0o755),
        ] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(m)).unwrap();
        }
        drop(Store::open(&p).unwrap());
        assert_eq!(mode(&p), 0o600);
        assert_eq!(mode(&super::snapshot::path_for(&p)), 0o600);
        assert_eq!(mode(&sessions), 0o700);
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
                        &TaskKey::new("fake", &id),
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
                    let r = Reader::open(&p).unwrap().unwrap();
                    r.summarize().unwrap();
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
