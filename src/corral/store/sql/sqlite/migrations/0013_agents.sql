-- Version 13: agent profiles. A worker may spend one provider account (`claude:work`);
-- a provider account may be capped, paused, or parked until its usage limit resets, and
-- the claim counts against it on every host. A run records the agent it ran, its session
-- (and the run it resumed), why the agent stopped, and why it waits for a person.
ALTER TABLE workers ADD COLUMN provider TEXT;
ALTER TABLE runs ADD COLUMN agent TEXT;
ALTER TABLE runs ADD COLUMN session_id TEXT;
ALTER TABLE runs ADD COLUMN resumed_from TEXT;
ALTER TABLE runs ADD COLUMN stop_reason TEXT;
ALTER TABLE runs ADD COLUMN waiting TEXT;
CREATE TABLE providers (
    name         TEXT    PRIMARY KEY,
    max_running  INTEGER CHECK (max_running IS NULL OR max_running >= 0),
    paused       INTEGER NOT NULL DEFAULT 0,
    parked_until REAL,
    parked_at    REAL,
    park_reason  TEXT,
    updated_at   REAL    NOT NULL
);
CREATE INDEX workers_by_provider ON workers (provider) WHERE provider IS NOT NULL;
-- The runs waiting for a person now, as `status` lists them.
CREATE INDEX runs_waiting ON runs (started_at) WHERE waiting IS NOT NULL AND finished_at IS NULL;
