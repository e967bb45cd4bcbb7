-- Version 32: when each worker was deregistered (went offline: seed 002's deregistered_at),
-- NULL while it is registered, dead ones too (a dead worker stays in the registry until
-- it is deregistered). A worker offline before this version takes the time of its
-- `worker.offline` event, or its last heartbeat if retention deleted that event.
-- worker_view is made again so that it shows the new column.
DROP VIEW worker_view;

ALTER TABLE workers ADD COLUMN deregistered_at timestamptz;
UPDATE workers
SET deregistered_at = coalesce((SELECT max(e.at) FROM events e
                                WHERE e.worker_id = workers.id AND e.name = 'worker.offline'),
                               last_heartbeat_at)
WHERE status = 'offline';

CREATE VIEW worker_view AS
SELECT w.* FROM workers w;
