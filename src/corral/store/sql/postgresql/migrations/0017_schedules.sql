-- Version 17: cron schedules (model/schedules.py). A schedule's next_fire_at is the oldest
-- scheduled time it has not handled; the scheduler finds due schedules by it alone
-- (schedules_due), never by reading past fires. Each fire is a row keyed by
-- `schedule:{id}:{fire time}`: the key's uniqueness is what makes a fire happen once.
CREATE TABLE schedules (
    id               text             PRIMARY KEY,
    cron             text             NOT NULL,
    timezone         text             NOT NULL,
    template         jsonb            NOT NULL,  -- the fields of the task each fire creates
    overlap          text             NOT NULL CHECK (overlap IN ('skip', 'buffer-one', 'allow')),
    max_catchup      integer          NOT NULL CHECK (max_catchup > 0),
    catchup_window_s double precision,
    paused           boolean          NOT NULL DEFAULT false,
    pause_note       text,
    next_fire_at     timestamptz,
    last_fire_at     timestamptz,
    last_task_id     text,
    created_at       timestamptz      NOT NULL,
    updated_at       timestamptz      NOT NULL
);

CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;

-- A schedule's fires are read by key range: `schedule:{id}:` then the time, in RFC 3339
-- UTC, which sorts as time does; a pass inserts into this one index only.
CREATE TABLE schedule_fires (
    key         text        COLLATE "C" PRIMARY KEY,  -- byte order: ranges by prefix
    schedule_id text        NOT NULL,
    fire_at     timestamptz NOT NULL,
    outcome     text        NOT NULL CHECK (outcome IN ('created', 'skipped', 'missed')),
    task_id     text,
    note        text,
    recorded_at timestamptz NOT NULL
);
