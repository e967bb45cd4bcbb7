-- Version 20: what a worker's heartbeat says of the agent, not only of the runner, and a
-- key to page the worker and run lists by.
-- agent_*: the running tasks' whole process trees (the agent and every descendant);
-- cpu_percent and rss_bytes stay the runner's own. reported_active is the number of
-- tasks the worker says it runs; *_delta what it says it completed and failed since its
-- beat before, and reported_*_total their sums (completed_total and failed_total stay the
-- store's own count of the claims it ended).
ALTER TABLE workers ADD COLUMN agent_cpu_percent double precision;
ALTER TABLE workers ADD COLUMN agent_rss_bytes bigint;
ALTER TABLE workers ADD COLUMN reported_active integer;
ALTER TABLE workers ADD COLUMN completed_delta integer NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN failed_delta integer NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN reported_completed_total bigint NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN reported_failed_total bigint NOT NULL DEFAULT 0;
-- seq orders the workers as they registered: the keyset of `worker list --after`.
ALTER TABLE workers ADD COLUMN seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE;

-- A view's * was expanded when it was made: made again, it has the new columns.
CREATE OR REPLACE VIEW worker_view AS
SELECT w.* FROM workers w;

-- `runs --worker W` reads the worker's runs newest first.
CREATE INDEX runs_by_worker ON runs (worker_id, seq);
