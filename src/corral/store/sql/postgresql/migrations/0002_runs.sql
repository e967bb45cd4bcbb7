-- Version 2: runs, one record per attempt at a task (the worker runtime).

-- One row per attempt at a task: what ran, where, and how it ended. `outcome` and
-- `finished_at` are set together, once; after that the row never changes (the trigger
-- below refuses it even to a query that forgets `WHERE finished_at IS NULL`).
-- seq orders runs started in the same instant (SQLite uses its rowid).
CREATE TABLE runs (
    seq              bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id               text        PRIMARY KEY,
    task_id          text        NOT NULL REFERENCES tasks (id),
    worker_id        text        NOT NULL REFERENCES workers (id),
    token            bigint      NOT NULL,
    attempt          integer     NOT NULL,
    started_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    exit_code        integer,
    outcome          text        CHECK (outcome IN ('done', 'failed', 'timeout', 'killed',
                                                    'lease_lost', 'deferred', 'shutdown', 'stalled')),
    error            text,
    prompt           text,
    command          jsonb       NOT NULL DEFAULT '[]',
    cwd              text        NOT NULL,
    base_commit      text,
    final_commit     text,
    transcript_path  text,
    stderr_path      text,
    usage            jsonb,
    stalled_at       timestamptz,
    last_progress_at timestamptz,
    progress         text,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

CREATE INDEX runs_by_task ON runs (task_id, started_at);
CREATE INDEX runs_unfinished_by_worker ON runs (worker_id) WHERE finished_at IS NULL;

CREATE FUNCTION runs_refuse_change_once_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'run is finished' USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER runs_immutable_once_finished BEFORE UPDATE ON runs
FOR EACH ROW WHEN (OLD.finished_at IS NOT NULL)
EXECUTE FUNCTION runs_refuse_change_once_finished();
