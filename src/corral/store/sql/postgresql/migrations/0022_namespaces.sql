-- Version 19: namespaces (docs/concepts.md, Namespaces). Tasks, workers, queue limits,
-- schedules and tokens belong to one; every row there before belongs to 'default'.
-- Queue limits are per namespace, so two teams may each have a queue `default` with
-- limits of their own; a worker is live at most once per (namespace, host, pid).
-- task_view is made again so that it shows the namespace, and corral_exchange, which
-- returns its columns, is dropped (functions.sql makes it again) as are the functions
-- whose arguments gain the namespace.
DROP FUNCTION IF EXISTS corral_exchange(text, jsonb, integer, text, text[], text[], double precision,
                              jsonb, text[], text[], text[], text[], text[], text[], text[],
                              boolean, timestamptz);
DROP FUNCTION IF EXISTS corral_held_queues(timestamptz);
DROP FUNCTION IF EXISTS corral_queue_room(text);
DROP VIEW task_view;

ALTER TABLE tasks ADD COLUMN namespace text NOT NULL DEFAULT 'default';
ALTER TABLE workers ADD COLUMN namespace text NOT NULL DEFAULT 'default';
ALTER TABLE schedules ADD COLUMN namespace text NOT NULL DEFAULT 'default';
ALTER TABLE tokens ADD COLUMN namespace text NOT NULL DEFAULT 'default';
-- worker_view shows the new column (CREATE OR REPLACE may add one at the end).
CREATE OR REPLACE VIEW worker_view AS
SELECT w.* FROM workers w;

ALTER TABLE queue_limits ADD COLUMN namespace text NOT NULL DEFAULT 'default';
ALTER TABLE queue_limits DROP CONSTRAINT queue_limits_pkey;
ALTER TABLE queue_limits ADD PRIMARY KEY (namespace, queue);

CREATE VIEW task_view AS
SELECT t.*,
       c.token AS token,
       c.worker_id AS worker_id,
       c.lease_expires_at AS lease_expires_at,
       ARRAY(SELECT d.depends_on FROM task_deps d WHERE d.task_id = t.id
             ORDER BY d.depends_on) AS depends_on
FROM tasks t
LEFT JOIN claims c ON c.task_id = t.id AND c.status = 'active';

-- The claim walks one namespace's ready tasks in claim order.
DROP INDEX tasks_ready_order;
CREATE INDEX tasks_ready_order ON tasks (namespace, priority DESC, seq) WHERE status = 'ready';

CREATE FUNCTION corral_queue_room(p_namespace text, wanted text)
RETURNS TABLE (max_ready integer, waiting bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM queue_limits l
    WHERE l.namespace = p_namespace AND l.queue = wanted AND l.max_ready IS NOT NULL
    FOR UPDATE;
    RETURN QUERY
    SELECT l.max_ready,
           (SELECT count(*) FROM tasks t
            WHERE t.namespace = p_namespace AND t.queue = l.queue
              AND t.status IN ('ready', 'blocked'))
    FROM queue_limits l
    WHERE l.namespace = p_namespace AND l.queue = wanted AND l.max_ready IS NOT NULL;
END;
$$;

-- Live twins made before this version: all but the newest go offline, so the index holds.
UPDATE workers w SET status = 'offline',
                     offline_reason = 'a newer live worker has the same host and pid'
WHERE w.pid IS NOT NULL AND w.status IN ('starting', 'idle', 'busy', 'draining', 'stale')
  AND EXISTS (SELECT 1 FROM workers n
              WHERE n.namespace = w.namespace AND n.hostname = w.hostname
                AND n.pid = w.pid AND n.id <> w.id
                AND n.status IN ('starting', 'idle', 'busy', 'draining', 'stale')
                AND (n.registered_at, n.id) > (w.registered_at, w.id));

-- One live worker per (namespace, host, pid): a second registration is refused by the
-- database while the first is not dead or offline (store/workers.py).
CREATE UNIQUE INDEX workers_one_live_per_process ON workers (namespace, hostname, pid)
    WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- An event's namespace, kept on the event: its task's, else its worker's, else the default
-- (the orchestrator's own), set as it is written. Read from its task and worker instead,
-- a page of the log would pay two lookups per event, more the bigger the tables (the
-- dashboard's events page: 2.8x slower at 100,000 tasks than at 1,000). SQLite reads it
-- that way still: its lookups are cheap enough there.
ALTER TABLE events ADD COLUMN namespace text NOT NULL DEFAULT 'default';

CREATE FUNCTION corral_event_namespace() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.namespace := coalesce((SELECT t.namespace FROM tasks t WHERE t.id = NEW.task_id),
                              (SELECT w.namespace FROM workers w WHERE w.id = NEW.worker_id),
                              'default');
    RETURN NEW;
END
$$;

CREATE TRIGGER events_namespace BEFORE INSERT ON events
FOR EACH ROW EXECUTE FUNCTION corral_event_namespace();
