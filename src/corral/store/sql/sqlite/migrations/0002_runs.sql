-- Version 2: runs, one record per attempt at a task (the worker runtime).

-- One row per attempt at a task: what ran, where, and how it ended. `outcome` and
-- `finished_at` are set together, once; after that the row never changes (the trigger
-- below refuses it even to a query that forgets `WHERE finished_at IS NULL`).
CREATE TABLE runs (
    id               TEXT    PRIMARY KEY,
    task_id          TEXT    NOT NULL REFERENCES tasks (id),
    worker_id        TEXT    NOT NULL REFERENCES workers (id),
    token            INTEGER NOT NULL,
    attempt          INTEGER NOT NULL,
    started_at       REAL    NOT NULL,
    finished_at      REAL,
    exit_code        INTEGER,
    outcome          TEXT    CHECK (outcome IN ('done', 'failed', 'timeout', 'killed',
                                                'lease_lost', 'deferred', 'shutdown', 'stalled')),
    error            TEXT,
    prompt           TEXT,
    command          TEXT    NOT NULL DEFAULT '[]',
    cwd              TEXT    NOT NULL,
    base_commit      TEXT,
    final_commit     TEXT,
    transcript_path  TEXT,
    stderr_path      TEXT,
    usage            TEXT,
    stalled_at       REAL,
    last_progress_at REAL,
    progress         TEXT,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

CREATE INDEX runs_by_task ON runs (task_id, started_at);
CREATE INDEX runs_unfinished_by_worker ON runs (worker_id) WHERE finished_at IS NULL;

CREATE TRIGGER runs_immutable_once_finished BEFORE UPDATE ON runs
WHEN OLD.finished_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'run is finished');
END;
