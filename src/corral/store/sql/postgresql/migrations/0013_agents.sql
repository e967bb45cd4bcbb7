-- Version 13: agent profiles. A worker may spend one provider account (`claude:work`);
-- a provider account may be capped, paused, or parked until its usage limit resets, and
-- the claim counts against it on every host (corral_exchange, functions.sql, locks its
-- row). A run records the agent it ran, its session (and the run it resumed), why the
-- agent stopped, and why it waits for a person. The view is made again for the new column.
ALTER TABLE workers ADD COLUMN provider text;
ALTER TABLE runs ADD COLUMN agent text;
ALTER TABLE runs ADD COLUMN session_id text;
ALTER TABLE runs ADD COLUMN resumed_from text;
ALTER TABLE runs ADD COLUMN stop_reason text;
ALTER TABLE runs ADD COLUMN waiting text;
CREATE TABLE providers (
    name         text        PRIMARY KEY,
    max_running  integer     CHECK (max_running IS NULL OR max_running >= 0),
    paused       boolean     NOT NULL DEFAULT false,
    parked_until timestamptz,
    parked_at    timestamptz,
    park_reason  text,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX workers_by_provider ON workers (provider) WHERE provider IS NOT NULL;
CREATE OR REPLACE VIEW worker_view AS
SELECT w.* FROM workers w;
-- The runs waiting for a person now, as `status` lists them.
CREATE INDEX runs_waiting ON runs (started_at) WHERE waiting IS NOT NULL AND finished_at IS NULL;
