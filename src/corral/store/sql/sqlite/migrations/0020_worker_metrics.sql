-- Version 20: what a worker's heartbeat says of the agent, not only of the runner, and a
-- key to page the worker and run lists by.
-- agent_*: the running tasks' whole process trees (the agent and every descendant);
-- cpu_percent and rss_bytes stay the runner's own. reported_active is the number of
-- tasks the worker says it runs; *_delta what it says it completed and failed since its
-- beat before, and reported_*_total their sums (completed_total and failed_total stay the
-- store's own count of the claims it ended).
ALTER TABLE workers ADD COLUMN agent_cpu_percent REAL;
ALTER TABLE workers ADD COLUMN agent_rss_bytes INTEGER;
ALTER TABLE workers ADD COLUMN reported_active INTEGER;
ALTER TABLE workers ADD COLUMN completed_delta INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN failed_delta INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN reported_completed_total INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workers ADD COLUMN reported_failed_total INTEGER NOT NULL DEFAULT 0;

-- seq, the worker's rowid, orders the workers as they registered: the keyset of
-- `worker list --after`.
DROP VIEW worker_view;
CREATE VIEW worker_view AS
SELECT w.*, w.rowid AS seq,
       (SELECT count(*) FROM claims c WHERE c.worker_id = w.id AND c.status = 'active') AS active
FROM workers w;

-- `runs --worker W` reads the worker's runs newest first (the rowid is in the index).
CREATE INDEX runs_by_worker ON runs (worker_id);
