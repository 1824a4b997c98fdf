//! Append-only migrations on `PRAGMA user_version` (atuin AGENTS.md): never edit a shipped step,
//! add the next one.

pub const MIGRATIONS: &[&str] = &[
    // 1: the tasks of one session.
    "CREATE TABLE tasks (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        worker       TEXT NOT NULL,
        task_id      TEXT NOT NULL,
        context_id   TEXT,
        message      TEXT NOT NULL,
        state        TEXT NOT NULL,
        started_ms   INTEGER NOT NULL,
        updated_ms   INTEGER NOT NULL,
        ended_ms     INTEGER,
        end_reason   TEXT,
        tracked      INTEGER NOT NULL DEFAULT 0,
        next_poll_ms INTEGER,
        failed_polls INTEGER NOT NULL DEFAULT 0,
        last_error   TEXT,
        result       TEXT,
        question     TEXT,
        announced_ms INTEGER,
        delivered_ms INTEGER,
        UNIQUE (worker, task_id)
    );
    CREATE INDEX tasks_ended ON tasks (ended_ms);
    CREATE INDEX tasks_state ON tasks (state);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);",
    // 2: the poller asks "what is due now" and "when is the next one" on every wake-up; with
    // 500 live tasks a scan of each made it the poller's main cost (benches/poller.rs).
    "CREATE INDEX tasks_due ON tasks (next_poll_ms) WHERE ended_ms IS NULL AND tracked = 1;",
    // 3: a task whose stream a long-lived process (the MCP server) keeps reading after the
    // inline window: until this time the poller polls it but opens no stream of its own (a
    // second stream would double what some servers store, and a gap at the hand-over loses
    // chunks). Renewed while the stream lives; a crash lets it lapse within seconds.
    "ALTER TABLE tasks ADD COLUMN stream_lease_ms INTEGER;
    CREATE INDEX tasks_leased ON tasks (stream_lease_ms)
        WHERE ended_ms IS NULL AND stream_lease_ms IS NOT NULL;",
    // 4: the hold as its own column (`core::lifecycle::Life::held_until_ms`): until then the
    // poller leaves a task alone. Before, a next poll more than one interval away meant the
    // same; a store of that time keeps its holds, read with the default 5 s interval.
    "ALTER TABLE tasks ADD COLUMN held_until_ms INTEGER;
    UPDATE tasks SET held_until_ms = next_poll_ms - 5000
        WHERE ended_ms IS NULL AND next_poll_ms IS NOT NULL;
    CREATE INDEX tasks_held ON tasks (held_until_ms)
        WHERE ended_ms IS NULL AND held_until_ms IS NOT NULL;",
    // 5: a task's version, bumped by every change: the poller applies a poll's answer to the row
    // it read when the poll went out, and writes it only if the row is still that one (else it
    // reads it again), so the common case is one statement, as before the state machine.
    "ALTER TABLE tasks ADD COLUMN version INTEGER NOT NULL DEFAULT 0;",
    // 6: a result longer than a row keeps (`core::lifecycle::Life::result_chars`): the row holds
    // its head and this many characters in all, the whole saved as a file before the row was written.
    "ALTER TABLE tasks ADD COLUMN result_chars INTEGER;",
    // 7: a task Claude Code follows as its own MCP task (`core::lifecycle::Life::native_ms`).
    "ALTER TABLE tasks ADD COLUMN native_ms INTEGER;",
    // 8: `tracked` only ever repeated `ended_ms IS NULL` (a live task is the poller's); it is no
    // longer read, so the due index takes the condition it meant. The column and the old index
    // stay for the older a2a-mod processes an upgrade leaves running on the store
    // (`store::life_params`); a migration only adds, so they keep working.
    "CREATE INDEX tasks_live_due ON tasks (next_poll_ms) WHERE ended_ms IS NULL;",
];
