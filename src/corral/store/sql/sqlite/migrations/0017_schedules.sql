-- Version 17: cron schedules (model/schedules.py). A schedule's next_fire_at is the oldest
-- scheduled time it has not handled; the scheduler finds due schedules by it alone
-- (schedules_due), never by reading past fires. Each fire is a row keyed by
-- `schedule:{id}:{fire time}`: the key's uniqueness is what makes a fire happen once.
CREATE TABLE schedules (
    id               TEXT    PRIMARY KEY,
    cron             TEXT    NOT NULL,
    timezone         TEXT    NOT NULL,
    template         TEXT    NOT NULL,  -- the fields of the task each fire creates (JSON)
    overlap          TEXT    NOT NULL CHECK (overlap IN ('skip', 'buffer-one', 'allow')),
    max_catchup      INTEGER NOT NULL CHECK (max_catchup > 0),
    catchup_window_s REAL,
    paused           INTEGER NOT NULL DEFAULT 0,
    pause_note       TEXT,
    next_fire_at     REAL,
    last_fire_at     REAL,
    last_task_id     TEXT,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL
);

CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = 0;

-- A schedule's fires are read by key range: `schedule:{id}:` then the time, in RFC 3339
-- UTC, which sorts as time does; a pass inserts into this one index only.
CREATE TABLE schedule_fires (
    key         TEXT PRIMARY KEY,
    schedule_id TEXT NOT NULL,
    fire_at     REAL NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('created', 'skipped', 'missed')),
    task_id     TEXT,
    note        TEXT,
    recorded_at REAL NOT NULL
) WITHOUT ROWID;
