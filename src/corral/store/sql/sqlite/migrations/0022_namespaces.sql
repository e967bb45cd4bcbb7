-- Version 19: namespaces (docs/concepts.md, Namespaces). Tasks, workers, queue limits,
-- schedules and tokens belong to one; every row there before belongs to 'default'.
-- Queue limits are per namespace, so two teams may each have a queue `default` with
-- limits of their own; a worker is live at most once per (namespace, host, pid).
ALTER TABLE tasks ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE workers ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE schedules ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
ALTER TABLE tokens ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';

-- The claim walks one namespace's ready tasks in claim order.
DROP INDEX tasks_claim_order;
CREATE INDEX tasks_claim_order ON tasks (namespace, status, priority DESC, seq);

ALTER TABLE queue_limits RENAME TO queue_limits_v18;
CREATE TABLE queue_limits (
    namespace   TEXT    NOT NULL DEFAULT 'default',
    queue       TEXT    NOT NULL,
    max_ready   INTEGER CHECK (max_ready IS NULL OR max_ready > 0),
    max_running INTEGER CHECK (max_running IS NULL OR max_running > 0),
    rate        REAL    CHECK (rate IS NULL OR rate > 0),  -- claims started per minute
    updated_at  REAL    NOT NULL,
    PRIMARY KEY (namespace, queue)
) WITHOUT ROWID;
INSERT INTO queue_limits (namespace, queue, max_ready, max_running, rate, updated_at)
SELECT 'default', queue, max_ready, max_running, rate, updated_at FROM queue_limits_v18;
DROP TABLE queue_limits_v18;

-- Live twins made before this version: all but the newest go offline, so the index holds.
UPDATE workers SET status = 'offline',
                   offline_reason = 'a newer live worker has the same host and pid'
WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale')
  AND EXISTS (SELECT 1 FROM workers n
              WHERE n.namespace = workers.namespace AND n.hostname = workers.hostname
                AND n.pid = workers.pid AND n.id <> workers.id
                AND n.status IN ('starting', 'idle', 'busy', 'draining', 'stale')
                AND (n.registered_at, n.id) > (workers.registered_at, workers.id));

-- One live worker per (namespace, host, pid): a second registration is refused by the
-- database while the first is not dead or offline (store/workers.py).
CREATE UNIQUE INDEX workers_one_live_per_process ON workers (namespace, hostname, pid)
    WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');
