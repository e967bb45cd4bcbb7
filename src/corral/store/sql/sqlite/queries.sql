-- Named queries of the SQLite store. Each block starts with `-- name: NAME`; the store
-- runs them by name and nowhere else holds SQL. Parameters are :named. Status sets
-- arrive as JSON arrays (:allowed) built from corral.model.tasks.ALLOWED_FROM, the one copy of
-- the state machine. :now is the store clock, in seconds since the epoch.

-- name: insert_tasks
-- New tasks, run once per row (Tx.send_rows: executemany), the rows of store/tasks.py
-- `task_row`: enqueue's one and a scheduler pass's many. :run_at (seconds since the epoch)
-- wins over :run_after_s; a task goes to :task_namespace when a row names one (a fire's,
-- its schedule's, whoever runs the pass), else to the handle's.
INSERT INTO tasks (id, title, description, queue, kind, priority, status, payload, labels,
                   assignee, parent_id, max_attempts, retry_base_s, timeout_s, run_after,
                   requires_review, created_at, updated_at, namespace)
VALUES (:id, :title, :description, :queue, :kind, :priority, :status, :payload, :labels,
        :assignee, :parent_id, :max_attempts, :retry_base_s, :timeout_s,
        coalesce(:run_at, :now + :run_after_s), :requires_review, :now, :now,
        coalesce(:task_namespace, :namespace));

-- name: insert_dependency
INSERT INTO task_deps (task_id, depends_on) VALUES (:task_id, :depends_on);

-- name: task_statuses
SELECT id, status FROM tasks WHERE id IN (SELECT value FROM json_each(:ids))
  AND namespace = :namespace;

-- name: get_task
SELECT * FROM task_view WHERE id = :task_id AND (namespace = :namespace OR :namespace = '*');

-- fragment: task_list_filters
-- `corral list`'s filters in the handle's namespace; each other one is off when NULL.
namespace = :namespace
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
  AND (:queue IS NULL OR queue = :queue)
  AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
  AND (:worker_id IS NULL OR worker_id = :worker_id)

-- name: list_tasks
-- After the cursor :after_seq (a page's last task; 0: from the first), in the order tasks
-- were added. Each bound is a plain comparison, never `:x IS NULL OR`, so it starts the
-- index's range: a page far in reads what the first one reads.
SELECT * FROM task_view
WHERE /* fragment: task_list_filters */
  AND seq > :after_seq
ORDER BY seq
LIMIT :limit;

-- name: count_tasks
SELECT count(*) AS n FROM task_view
WHERE /* fragment: task_list_filters */ AND (:parent_id IS NULL OR parent_id = :parent_id);

-- name: list_tasks_newest
-- list_tasks, newest first: what a client polling for what it just added reads
-- (seed 001's sessions), whatever the number of older tasks.
SELECT * FROM task_view
WHERE /* fragment: task_list_filters */
  AND seq < :after_seq
ORDER BY seq DESC
LIMIT :limit;

-- name: list_children
-- list_tasks of one parent's children, a page after :after_seq either way: found through
-- tasks_by_parent, not a scan.
SELECT * FROM task_view
WHERE parent_id = :parent_id AND /* fragment: task_list_filters */
  AND CASE WHEN :newest_first THEN seq < :after_seq ELSE seq > :after_seq END
ORDER BY CASE WHEN :newest_first THEN -seq ELSE seq END
LIMIT :limit;

-- name: tasks_with_payload
-- Tasks of :kind whose payload field :path ('$."name"') is the string :value (not a
-- number that reads the same), newest first: a seed 001 session by its label. No index:
-- a scan of the tasks in C, not rows read into Python.
SELECT * FROM task_view
WHERE namespace = :namespace AND kind = :kind AND json_type(payload, :path) = 'text'
  AND json_extract(payload, :path) = :value
ORDER BY seq DESC
LIMIT :limit;

-- fragment: ready_filters
-- The tasks of the namespace claimable now, of a queue, of kinds, or that one worker may
-- claim.
namespace = :namespace AND status = 'ready' AND run_after <= :now
  AND (:queue IS NULL OR queue = :queue)
  AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds)))
  AND (:queues IS NULL OR queue IN (SELECT value FROM json_each(:queues)))
  AND (:worker_id IS NULL OR assignee IS NULL OR assignee IN (:worker_id, :worker_name))

-- name: ready_tasks
-- In claim order, those of a priority below :below_priority. A page after a cursor
-- (priority P, seq S) reads ready_tasks_tied (P, after S), then this below P: two ranges
-- of tasks_claim_order, where one `(priority, seq)` condition would read on from the
-- start of P's tasks.
SELECT * FROM task_view
WHERE /* fragment: ready_filters */
  AND priority < :below_priority
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: ready_tasks_tied
-- The ready tasks of priority :priority after seq :after_seq, oldest first.
SELECT * FROM task_view
WHERE /* fragment: ready_filters */
  AND priority = :priority AND seq > :after_seq
ORDER BY seq
LIMIT :limit;

-- name: count_ready
SELECT count(*) AS n FROM task_view WHERE /* fragment: ready_filters */;

-- name: count_tasks_by_status
SELECT status, count(*) AS n FROM tasks WHERE namespace = :namespace
GROUP BY status ORDER BY status;

-- name: dependency_statuses
SELECT d.depends_on AS id, t.status AS status
FROM task_deps d JOIN tasks t ON t.id = d.depends_on
WHERE d.task_id = :task_id AND (t.namespace = :namespace OR :namespace = '*')
ORDER BY d.depends_on;

-- name: count_ahead
SELECT count(*) FROM tasks o, tasks t
WHERE t.id = :task_id
  AND (t.namespace = :namespace OR :namespace = '*')
  AND o.namespace = t.namespace AND o.status = 'ready'
  AND o.queue = t.queue AND o.run_after <= :now
  AND (o.priority > t.priority OR (o.priority = t.priority AND o.seq < t.seq));

-- name: claim_by_token
SELECT * FROM claims WHERE token = :token
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                           AND s.namespace = :namespace));

-- name: active_claim
SELECT * FROM claims WHERE task_id = :task_id AND status = 'active'
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                           AND s.namespace = :namespace));

-- name: running_tasks
-- The oldest active claims with their task and the run each started (none yet, or a
-- Python job's without files, leaves the run columns empty): `corral status --watch`.
-- The active claims are read through their partial index, named: for the ORDER BY SQLite
-- would rather walk claims_by_start through every claim ever made (15 ms at 100,000
-- finished tasks, bench/status_watch.py). Only the oldest are joined, by key.
WITH oldest AS (
    SELECT token, task_id, worker_id, claimed_at
    FROM claims INDEXED BY claims_one_active_per_task
    WHERE status = 'active'
      AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                               AND s.namespace = :namespace))
    ORDER BY claimed_at, token
    LIMIT :limit
)
SELECT c.token, c.task_id, c.worker_id, c.claimed_at, t.title, t.queue,
       r.id AS run_id, r.transcript_path, r.stderr_path
FROM oldest c
JOIN tasks t ON t.id = c.task_id
LEFT JOIN runs r ON r.task_id = c.task_id AND r.token = c.token AND r.finished_at IS NULL
ORDER BY c.claimed_at, c.token;

-- name: renew_claim
UPDATE claims
SET lease_expires_at = min(:now + :lease_s, coalesce(deadline_at, :now + :lease_s)),
    lease_s = :lease_s,
    renewals = renewals + 1
WHERE token = :token AND status = 'active'
RETURNING *;

-- name: end_claim
UPDATE claims SET status = :status, ended_at = :now
WHERE token = :token AND status = 'active'
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                           AND s.namespace = :namespace));

-- name: release_task
-- Claimable again from now (run_after: where its next queue wait starts).
UPDATE tasks SET status = 'ready', attempts = attempts - 1, run_after = max(run_after, :now),
                 updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: defer_task
UPDATE tasks
SET status = 'ready', attempts = attempts - 1,
    run_after = coalesce(:run_at, :now + :delay_s), updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed))
RETURNING run_after;

-- name: wait_task
-- Waiting for a person, for :reason: the attempt is given back, an earlier answer forgotten.
UPDATE tasks
SET status = 'waiting', attempts = attempts - 1, wait_reason = :reason, answer = NULL,
    answered_reason = NULL, updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: fail_task
UPDATE tasks
SET status = :to_status,
    crashes = crashes + :crash,
    last_error = coalesce(:error, last_error),
    failure_reason = CASE WHEN :to_status = 'failed' THEN :reason END,
    run_after = :now + :delay_s,
    updated_at = :now,
    finished_at = CASE WHEN :to_status = 'failed' THEN :now END
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: requeue_orphan
UPDATE tasks
SET status = :to_status,
    last_error = :error,
    failure_reason = CASE WHEN :to_status = 'failed' THEN :reason END,
    run_after = :now + :delay_s,
    updated_at = :now,
    finished_at = CASE WHEN :to_status = 'failed' THEN :now END
WHERE id = :task_id
  AND (namespace = :namespace OR :namespace = '*')
  AND status IN (SELECT value FROM json_each(:allowed))
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = tasks.id AND c.status = 'active');

-- name: unblock_dependents
-- :task_ids just became done; each task returned names the first of them it waited on.
UPDATE tasks SET status = 'ready', run_after = max(run_after, :now), updated_at = :now
WHERE status IN (SELECT value FROM json_each(:allowed))
  AND id IN (SELECT task_id FROM task_deps
             WHERE depends_on IN (SELECT value FROM json_each(:task_ids)))
  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                  WHERE d.task_id = tasks.id AND p.status != 'done')
RETURNING id, (SELECT min(d.depends_on) FROM task_deps d
               WHERE d.task_id = tasks.id
                 AND d.depends_on IN (SELECT value FROM json_each(:task_ids))) AS unblocked_by;

-- name: lock_parent
-- The parent of a task being added, locked before anything else the enqueue reads: a
-- claim (SKIP LOCKED) passes it by, and two children added at once take turns.
SELECT id, status FROM tasks WHERE id = :task_id AND namespace = :namespace;

-- name: parent_standing
-- How many ancestors :task_id has (0 for a task with no parent), and how many children.
WITH RECURSIVE up(id, depth) AS (
    SELECT parent_id, 1 FROM tasks WHERE id = :task_id AND parent_id IS NOT NULL
    UNION ALL
    SELECT t.parent_id, up.depth + 1 FROM tasks t JOIN up ON t.id = up.id
    WHERE t.parent_id IS NOT NULL AND up.depth < :max_depth
)
SELECT (SELECT coalesce(max(depth), 0) FROM up) AS depth,
       (SELECT count(*) FROM tasks WHERE parent_id = :task_id) AS children;

-- name: dependency_reaches
-- Whether :task_id is among :ids or what they depend on, however far down: a new edge
-- from :task_id to a task that reaches it would close a circle.
WITH RECURSIVE reach(id) AS (
    SELECT value FROM json_each(:ids)
    UNION
    SELECT d.depends_on FROM task_deps d JOIN reach r ON d.task_id = r.id
)
SELECT EXISTS (SELECT 1 FROM reach WHERE id = :task_id) AS found;

-- name: block_parent
-- A parent that has not started waits for the child just added.
UPDATE tasks SET status = 'blocked', updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: unfinished_descendants
-- Every unfinished task below :task_id, deepest first: cancel's cascade locks children
-- before their parents, the order a completing child takes (itself, then its waiting parent).
WITH RECURSIVE down(id, status, depth) AS (
    SELECT id, status, 1 FROM tasks WHERE parent_id = :task_id
      AND (namespace = :namespace OR :namespace = '*')
    UNION ALL
    SELECT t.id, t.status, down.depth + 1 FROM tasks t JOIN down ON t.parent_id = down.id
    WHERE down.depth < :max_depth
)
SELECT id FROM down WHERE down.status IN (SELECT value FROM json_each(:allowed))
ORDER BY depth DESC, id;

-- name: release_parent
-- A cancelled child no longer holds its parent back.
DELETE FROM task_deps WHERE task_id = :parent_id AND depends_on = :task_id;

-- name: unblock_task
-- :task_id, blocked, becomes ready when nothing it depends on is left undone.
UPDATE tasks SET status = 'ready', run_after = max(run_after, :now), updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed))
  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                  WHERE d.task_id = tasks.id AND p.status != 'done');

-- name: cancel_task
UPDATE tasks SET status = 'cancelled', updated_at = :now, finished_at = :now,
                 last_error = coalesce(:reason, last_error), wait_reason = NULL
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: retry_task
UPDATE tasks
SET status = CASE WHEN EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                               WHERE d.task_id = tasks.id AND p.status != 'done')
                  THEN 'blocked' ELSE 'ready' END,
    attempts = 0, crashes = 0, failure_reason = NULL, finished_at = NULL, wait_reason = NULL,
    run_after = :now, updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed))
RETURNING status;

-- name: answer_task
-- A waiting task, ready again with a person's :answer (NULL: none, carry on) and the reason
-- it answered, which its next runs are told (every SET reads the row as it was).
UPDATE tasks
SET status = 'ready', answer = :answer, answered_reason = wait_reason, wait_reason = NULL,
    run_after = :now, updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed))
RETURNING answered_reason;

-- name: raise_task_budget
-- A waiting task's budget cap (model/budgets.py, in its payload) raised by :cost dollars
-- or :tokens tokens, in `answer`'s transaction; no row: it waits no more, or lacks the cap.
UPDATE tasks
SET payload = CASE WHEN :cost IS NOT NULL
    THEN json_set(payload, '$.budget.max_cost_usd',
                  json_extract(payload, '$.budget.max_cost_usd') + :cost)
    ELSE json_set(payload, '$.budget.max_tokens',
                  json_extract(payload, '$.budget.max_tokens') + :tokens) END
WHERE id = :task_id AND status = 'waiting'
  AND json_extract(payload, CASE WHEN :cost IS NOT NULL THEN '$.budget.max_cost_usd'
                                 ELSE '$.budget.max_tokens' END) IS NOT NULL
RETURNING payload;

-- name: set_task_priority
-- A new priority for a task that is not final; its place in the claim order follows.
UPDATE tasks SET priority = :priority, updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: insert_worker
-- Refused (no row returned) while a live worker has the same namespace, host and pid:
-- the partial unique index decides, so two registering at once cannot both win.
INSERT INTO workers (id, name, hostname, pid, version, queues, kinds, max_concurrent, labels,
                     status, registered_at, last_heartbeat_at, pid_started_at, provider,
                     namespace, site)
VALUES (:id, :name, :hostname, :pid, :version, :queues, :kinds, :max_concurrent, :labels,
        'starting', :now, :now, :pid_started_at, :provider, :namespace, :site)
ON CONFLICT (namespace, hostname, pid)
    WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale')
    DO NOTHING
RETURNING id;

-- name: lock_slot
-- A slot's first calls take turns (store/workers.py: slot_worker): BEGIN IMMEDIATE holds
-- the database's write lock already, so there is nothing more to take.
SELECT 1 AS turn;

-- name: live_worker_named
-- The newest live worker named :name: the one a seed slot's name stands for (board/).
SELECT * FROM worker_view
WHERE namespace = :namespace AND name = :name
  AND status IN ('starting', 'idle', 'busy', 'draining', 'stale')
ORDER BY registered_at DESC, id DESC
LIMIT 1;

-- name: live_twin
-- The live worker with this namespace, host and pid (why a registration was refused).
SELECT id, name FROM workers
WHERE namespace = :namespace AND hostname = :hostname AND pid = :pid
  AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- name: get_worker
SELECT * FROM worker_view WHERE id = :worker_id
  AND (namespace = :namespace OR :namespace = '*');

-- name: claiming_worker
-- The same row; PostgreSQL locks it here (BEGIN IMMEDIATE already holds SQLite's lock).
SELECT * FROM worker_view WHERE id = :worker_id
  AND (namespace = :namespace OR :namespace = '*');

-- name: list_workers
SELECT * FROM worker_view
WHERE namespace = :namespace
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
ORDER BY registered_at, id;

-- fragment: worker_filters
-- `worker list`'s filters, each off when NULL: a worker with no queues (kinds) serves
-- every queue (kind); :labels is an object every pair of which its labels must hold.
namespace = :namespace
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
  AND (:queue IS NULL OR queues = '[]'
       OR EXISTS (SELECT 1 FROM json_each(queues) WHERE value = :queue))
  AND (:kind IS NULL OR kinds = '[]'
       OR EXISTS (SELECT 1 FROM json_each(kinds) WHERE value = :kind))
  AND (:host IS NULL OR hostname = :host)
  AND (:labels IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:labels) AS wanted
        WHERE NOT EXISTS (SELECT 1 FROM json_each(labels) AS has
                          WHERE has.key = wanted.key AND has.value = wanted.value)))

-- name: find_workers
-- In registration order (seq: the rowid) after the cursor :after_seq; all without :limit.
SELECT * FROM worker_view
WHERE /* fragment: worker_filters */
  AND seq > :after_seq
ORDER BY seq
LIMIT coalesce(:limit, -1);

-- name: count_workers
SELECT count(*) AS n FROM workers WHERE /* fragment: worker_filters */;

-- name: heartbeat_worker
UPDATE workers
SET last_heartbeat_at = :now,
    offline_reason = NULL,
    cpu_percent = coalesce(:cpu_percent, cpu_percent),
    rss_bytes = coalesce(:rss_bytes, rss_bytes),
    agent_cpu_percent = :agent_cpu_percent,
    agent_rss_bytes = :agent_rss_bytes,
    reported_active = coalesce(:active, reported_active),
    completed_delta = :completed,
    failed_delta = :failed,
    reported_completed_total = reported_completed_total + :completed,
    reported_failed_total = reported_failed_total + :failed,
    status = CASE WHEN status = 'draining' THEN 'draining'
                  WHEN EXISTS (SELECT 1 FROM claims c
                               WHERE c.worker_id = workers.id AND c.status = 'active')
                  THEN 'busy' ELSE 'idle' END
WHERE id = :worker_id AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- name: extend_worker_leases
UPDATE claims
SET lease_expires_at = max(lease_expires_at,
                           min(:now + lease_s, coalesce(deadline_at, :now + lease_s)))
WHERE worker_id = :worker_id AND status = 'active';

-- name: worker_after_claim
UPDATE workers
SET status = CASE WHEN status NOT IN ('starting', 'idle', 'busy') THEN status
                  WHEN EXISTS (SELECT 1 FROM claims c
                               WHERE c.worker_id = workers.id AND c.status = 'active')
                  THEN 'busy' ELSE 'idle' END,
    completed_total = completed_total + :completed,
    failed_total = failed_total + :failed
WHERE id = :worker_id;

-- name: set_worker_status
UPDATE workers SET status = :to_status, offline_reason = :reason
WHERE id = :worker_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: deregister_worker
UPDATE workers SET status = 'offline', offline_reason = :reason, deregistered_at = :now
WHERE id = :worker_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: mark_worker
UPDATE workers SET status = :to_status, offline_reason = :reason
WHERE id = :worker_id
  AND (namespace = :namespace OR :namespace = '*')
  AND status = :seen AND last_heartbeat_at = :seen_heartbeat_at;

-- name: active_claims_of_worker
SELECT * FROM claims WHERE worker_id = :worker_id AND status = 'active' ORDER BY token;

-- name: watched_workers
SELECT * FROM worker_view
WHERE (namespace = :namespace OR :namespace = '*')
  AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- name: active_claims_to_check
SELECT c.token, c.task_id, c.worker_id, w.status AS worker_status, c.lease_expires_at,
       t.status AS task_status, t.attempts, t.max_attempts, t.crashes, t.retry_base_s
FROM claims c
JOIN tasks t ON t.id = c.task_id
LEFT JOIN workers w ON w.id = c.worker_id
WHERE c.status = 'active' AND (t.namespace = :namespace OR :namespace = '*');

-- name: orphaned_tasks
SELECT t.id, t.attempts, t.max_attempts, t.retry_base_s
FROM tasks t
WHERE t.status = 'running' AND (t.namespace = :namespace OR :namespace = '*')
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active');

-- name: close_claim
UPDATE claims SET status = 'released', ended_at = :now
WHERE token = :token AND status = 'active'
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                           AND s.namespace = :namespace))
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = claims.task_id AND t.status = 'running');

-- name: fix_worker_status
UPDATE workers SET status = :to_status
WHERE id = :worker_id AND (namespace = :namespace OR :namespace = '*') AND status = :seen
  AND EXISTS (SELECT 1 FROM claims c WHERE c.worker_id = workers.id AND c.status = 'active')
      = (:to_status = 'busy');

-- name: insert_event
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, reason,
                    data)
VALUES (:now, :name, :task_id, :worker_id, :token, :from_status, :to_status, :actor, :reason,
        :data);

-- fragment: event_filter
-- An event is its task's namespace's, else its worker's, else the default's (the
-- orchestrator's own, and those of tasks since pruned): read here, not stored, so writing
-- an event costs nothing more.
coalesce((SELECT t.namespace FROM tasks t WHERE t.id = events.task_id),
         (SELECT w.namespace FROM workers w WHERE w.id = events.worker_id),
         'default') = :namespace
  AND (:task_id IS NULL OR task_id = :task_id)
  AND (:worker_id IS NULL OR worker_id = :worker_id)
  AND (:names IS NULL OR name IN (SELECT value FROM json_each(:names)))
  AND (:since_at IS NULL OR at >= :since_at)

-- name: list_events
-- With :before_id, only events older than it (`corral events --after`: the page before).
SELECT *, 0 AS cursor_xid FROM events
WHERE /* fragment: event_filter */
  AND id > :after_id
  AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- name: count_events
SELECT count(*) AS n FROM events WHERE /* fragment: event_filter */;

-- name: events_older
-- The events page, a keyset page of the log by id: the newest :limit events that match
-- below id :before_id, newest first (by an id index, whatever the log's length).
SELECT *, 0 AS cursor_xid FROM events
WHERE /* fragment: event_filter */
  AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- name: events_newer
-- events_older the other way: the oldest :limit events that match above id :after_id.
SELECT *, 0 AS cursor_xid FROM events
WHERE /* fragment: event_filter */
  AND id > :after_id
ORDER BY id
LIMIT :limit;

-- name: event_horizon
-- Writers take turns, so ids become visible in order: the newest one is the horizon.
SELECT 0 AS xid, coalesce(max(id), 0) AS id, 0 AS pending FROM events;

-- name: events_after
-- The events after a follower's cursor, up to its horizon, in id order (xid is always 0).
SELECT *, 0 AS cursor_xid FROM events
WHERE id > :after_id AND id <= :horizon_id
  AND /* fragment: event_filter */
ORDER BY id
LIMIT :limit;

-- name: event_tallies
-- What /metrics counts in the log, over the events after :after_id up to :horizon_id (a
-- follower's range, as events_after): task.completed and task.failed, the repairs of
-- :actor (the reconciler) named in :repairs, and the queue wait of each claim
-- (task.claimed: its claim's claimed_at - ready_at) and the duration of each finished run
-- (run.finished), each by its task's queue and kind. A measured event's bucket is the
-- number of its bounds (:wait_bounds or :run_bounds) below its seconds, NULL where the
-- claim has no ready_at (made before version 15). One row per group, not per event, so a
-- first read of a long log sends a few rows. The CTEs are materialized: inlined, each
-- measured event's lookups ran again for its bucket (3x slower, bench/metrics_scrape.py).
WITH fresh AS MATERIALIZED (
    SELECT e.name, e.task_id,
           CASE e.name
               WHEN 'task.claimed' THEN max(0.0, c.claimed_at - c.ready_at)
               WHEN 'run.finished' THEN max(0.0, r.finished_at - r.started_at)
           END AS seconds
    FROM events e
    LEFT JOIN claims c ON e.name = 'task.claimed' AND c.token = e.token
    LEFT JOIN runs r ON e.name = 'run.finished' AND r.id = json_extract(e.data, '$.run_id')
    WHERE e.id > :after_id AND e.id <= :horizon_id
      AND (e.name IN ('task.completed', 'task.failed', 'task.claimed', 'run.finished')
           OR (e.actor = :actor AND e.name IN (SELECT value FROM json_each(:repairs))))
),
wait_bounds (bound) AS MATERIALIZED (SELECT value FROM json_each(:wait_bounds)),
run_bounds (bound) AS MATERIALIZED (SELECT value FROM json_each(:run_bounds))
SELECT f.name, coalesce(t.queue, '') AS queue, coalesce(t.kind, '') AS kind,
       CASE WHEN f.seconds IS NULL THEN NULL
            WHEN f.name = 'task.claimed'
                THEN (SELECT count(*) FROM wait_bounds WHERE bound < f.seconds)
            ELSE (SELECT count(*) FROM run_bounds WHERE bound < f.seconds) END AS bucket,
       count(*) AS n, coalesce(sum(round(f.seconds * 1000000)), 0) AS micros
FROM fresh f LEFT JOIN tasks t ON t.id = f.task_id
GROUP BY 1, 2, 3, 4;

-- name: start_run
INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, prompt, command, cwd,
                  base_commit, transcript_path, stderr_path)
VALUES (:id, :task_id, :worker_id, :token, :attempt, :now, :prompt, :command, :cwd,
        :base_commit, :transcript_path, :stderr_path)
RETURNING *;

-- name: finish_run
UPDATE runs
SET finished_at = :now, outcome = :outcome, exit_code = :exit_code, error = :error,
    usage = :usage, final_commit = :final_commit
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace))
RETURNING *;

-- name: finish_runs_of_worker
-- As killed, unless the task's own command reported under the run's token before; a run
-- that never started (not launched: launch_run) as lease_lost, since nothing was killed.
UPDATE runs
SET finished_at = :now,
    outcome = coalesce(reported, CASE WHEN last_progress_at IS NULL THEN 'lease_lost'
                                      ELSE 'killed' END),
    error = CASE WHEN reported IS NOT NULL THEN NULL
                 WHEN last_progress_at IS NULL THEN :error || ', before its run started'
                 ELSE :error END
WHERE worker_id = :worker_id AND finished_at IS NULL
RETURNING id, task_id, token, outcome, error;

-- name: record_usage
-- The usage an agent's run has streamed so far, kept while its claim is active: what a
-- run that never reports (its runner killed) spent still counts toward its task's budget
-- and its day's caps. Its report, with the agent's own totals, replaces it.
UPDATE runs SET usage = :usage
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND EXISTS (SELECT 1 FROM claims c WHERE c.token = runs.token AND c.status = 'active');

-- name: launch_run
-- A run about to start its command (or function): allowed only while its claim is still
-- active, and recorded as its first sign of life (last_progress_at), in one compare-and-
-- set. A run never launched keeps last_progress_at NULL, which is how a reconciler that
-- declares its worker dead knows that nothing ran (finish_runs_of_worker).
UPDATE runs SET last_progress_at = :now
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace))
  AND EXISTS (SELECT 1 FROM claims c WHERE c.token = runs.token AND c.status = 'active');

-- name: mark_waiting
-- Flagged once an episode: record_progress clears the flag.
UPDATE runs SET stalled_at = :now, waiting = :reason
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace))
  AND stalled_at IS NULL
RETURNING task_id, worker_id, token, last_progress_at;

-- name: record_progress
UPDATE runs SET last_progress_at = :now, progress = coalesce(:progress, progress),
                stalled_at = NULL, waiting = NULL
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace));

-- name: get_run
SELECT * FROM runs WHERE id = :run_id
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace));

-- name: list_runs
-- Newest first, as they were opened (the rowid, read as seq), before the cursor :before_seq.
SELECT *, rowid AS seq FROM runs
WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.id = runs.task_id AND t.namespace = :namespace)
  AND (:task_id IS NULL OR task_id = :task_id)
  AND (:worker_id IS NULL OR worker_id = :worker_id)
  AND rowid < :before_seq
ORDER BY rowid DESC
LIMIT :limit;

-- name: count_runs
SELECT count(*) AS n FROM runs
WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.id = runs.task_id AND t.namespace = :namespace)
  AND (:task_id IS NULL OR task_id = :task_id)
  AND (:worker_id IS NULL OR worker_id = :worker_id);

-- name: record_agent_run
-- What an agent's run says of itself, each field kept when NULL; only while it runs.
UPDATE runs
SET agent = coalesce(:agent, agent),
    session_id = coalesce(:session_id, session_id),
    resumed_from = coalesce(:resumed_from, resumed_from),
    stop_reason = coalesce(:stop_reason, stop_reason)
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace));

-- name: last_session
-- The newest run of the task that recorded an agent session: what a new run may resume.
SELECT id, session_id, agent, cwd FROM runs
WHERE task_id = :task_id
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace))
  AND session_id IS NOT NULL
ORDER BY started_at DESC, rowid DESC
LIMIT 1;

-- name: unfinished_runs
SELECT * FROM runs WHERE worker_id = :worker_id
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace))
  AND finished_at IS NULL
ORDER BY started_at, rowid;

-- name: queue_room
-- How many tasks wait in a queue with a max_ready limit (no row: no limit).
SELECT l.max_ready,
       (SELECT count(*) FROM tasks t
        WHERE t.namespace = l.namespace AND t.queue = l.queue
          AND t.status IN ('ready', 'blocked')) AS waiting
FROM queue_limits l
WHERE l.namespace = :namespace AND l.queue = :queue AND l.max_ready IS NOT NULL;

-- name: set_queue_limits
-- Each limit is replaced when its keep_ flag is false, else kept; NULL removes a limit.
INSERT INTO queue_limits (namespace, queue, max_ready, max_running, rate, updated_at)
VALUES (:namespace, :queue, :max_ready, :max_running, :rate, :now)
ON CONFLICT (namespace, queue) DO UPDATE SET
    max_ready = CASE WHEN :keep_max_ready THEN max_ready ELSE excluded.max_ready END,
    max_running = CASE WHEN :keep_max_running THEN max_running ELSE excluded.max_running END,
    rate = CASE WHEN :keep_rate THEN rate ELSE excluded.rate END,
    updated_at = :now
RETURNING queue, max_ready, max_running, rate;

-- name: drop_empty_queue_limits
DELETE FROM queue_limits
WHERE namespace = :namespace AND queue = :queue AND max_ready IS NULL AND max_running IS NULL AND rate IS NULL;

-- name: queue_stats
-- Depth, load and limits of every queue that has unfinished tasks or limits.
WITH names AS (
    SELECT DISTINCT queue FROM tasks
    WHERE namespace = :namespace AND status IN ('blocked', 'ready', 'running')
    UNION SELECT queue FROM queue_limits WHERE namespace = :namespace
)
SELECT n.queue,
       (SELECT count(*) FROM tasks t
        WHERE t.namespace = :namespace AND t.queue = n.queue AND t.status = 'ready'
          AND t.run_after <= :now) AS ready,
       (SELECT count(*) FROM tasks t
        WHERE t.namespace = :namespace AND t.queue = n.queue AND t.status = 'ready'
          AND t.run_after > :now) AS delayed,
       (SELECT count(*) FROM tasks t
        WHERE t.namespace = :namespace AND t.queue = n.queue AND t.status = 'blocked') AS blocked,
       (SELECT count(*) FROM tasks t
        WHERE t.namespace = :namespace AND t.queue = n.queue AND t.status = 'running') AS running,
       -- CROSS JOIN: the last minute's claims first (claims_by_start), never every task
       -- of the namespace with its claims (bench/status_watch.py: 90 ms at 100,000).
       (SELECT count(*) FROM claims c CROSS JOIN tasks t
        WHERE t.id = c.task_id AND t.namespace = :namespace AND t.queue = n.queue
          AND c.claimed_at > :now - 60) AS started_last_minute,
       l.max_ready, l.max_running, l.rate
FROM names n LEFT JOIN queue_limits l ON l.namespace = :namespace AND l.queue = n.queue
WHERE :queue IS NULL OR n.queue = :queue
ORDER BY n.queue;

-- name: set_task_branch
UPDATE tasks SET branch = :branch WHERE id = :task_id;

-- name: get_review
SELECT * FROM reviews WHERE task_id = :task_id
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = reviews.task_id
                           AND s.namespace = :namespace));

-- name: branched_tasks
-- Every task that ever had a branch (`corral branches`).
SELECT * FROM task_view WHERE branch IS NOT NULL
  AND (namespace = :namespace OR :namespace = '*')
  ORDER BY seq;

-- name: reviews_of
SELECT * FROM reviews
WHERE (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = reviews.task_id
                                         AND s.namespace = :namespace))
  AND task_id IN (SELECT value FROM json_each(:ids));

-- name: save_review
-- outcome_at: now when :stamp (the outcome was recorded now), else as it was.
INSERT INTO reviews (task_id, base_ref, worktree_path, note, pr_url, approved_commit,
                     approve_note, changes_note, conflict_files, merged_commit, outcome,
                     backup_refs, branch_deleted, pr_state, outcome_at, tests_disabled)
VALUES (:task_id, :base_ref, :worktree_path, :note, :pr_url, :approved_commit,
        :approve_note, :changes_note, :conflict_files, :merged_commit, :outcome,
        :backup_refs, :branch_deleted, :pr_state, CASE WHEN :stamp THEN :now END,
        :tests_disabled)
ON CONFLICT (task_id) DO UPDATE
SET base_ref = excluded.base_ref, worktree_path = excluded.worktree_path,
    note = excluded.note, pr_url = excluded.pr_url, approved_commit = excluded.approved_commit,
    approve_note = excluded.approve_note, changes_note = excluded.changes_note,
    conflict_files = excluded.conflict_files, merged_commit = excluded.merged_commit,
    outcome = excluded.outcome, backup_refs = excluded.backup_refs,
    branch_deleted = excluded.branch_deleted, pr_state = excluded.pr_state,
    outcome_at = coalesce(excluded.outcome_at, reviews.outcome_at),
    tests_disabled = excluded.tests_disabled;

-- name: move_reviewed_task
-- in_review, approved and done along the review flow; finished_at only when done.
UPDATE tasks
SET status = :to_status, updated_at = :now,
    finished_at = CASE WHEN :to_status = 'done' THEN :now END
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: review_wait_task
-- A task in review waiting for a person (its pull request's checks failed past its verify
-- retries), with a fresh attempt budget as reopen_task gives: review rounds are not
-- failures; an earlier answer forgotten.
UPDATE tasks
SET status = 'waiting', attempts = 0, crashes = 0, wait_reason = :reason, answer = NULL,
    answered_reason = NULL, updated_at = :now
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: reopen_task
-- Back to work on the same branch (changes requested, a merge conflict), with a fresh
-- attempt budget: review rounds are not failures.
UPDATE tasks
SET status = 'ready', attempts = 0, crashes = 0, failure_reason = NULL,
    last_error = coalesce(:reason, last_error), run_after = :now, updated_at = :now,
    finished_at = NULL
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed));

-- name: any_unmarked_stale_review
-- Whether note_stale_reviews has anything to mark: read first, so that a pass with nothing
-- to mark takes no write lock.
SELECT EXISTS (
    SELECT 1 FROM tasks t LEFT JOIN reviews r ON r.task_id = t.id
    WHERE t.status IN ('in_review', 'approved') AND t.updated_at <= :now - :stale_after_s
      AND r.stale_noted_at IS NULL
) AS found;

-- name: note_stale_reviews
-- Marks each review waiting longer than :stale_after_s (its task in_review or approved,
-- unchanged since) that has no mark yet, and answers those just marked: the upsert's
-- compare-and-set (`stale_noted_at IS NULL`) lets one of two passes at once mark it.
-- A task that completed into review without a branch has no review row until now.
INSERT INTO reviews (task_id, stale_noted_at)
SELECT t.id, :now FROM tasks t
WHERE t.status IN ('in_review', 'approved') AND t.updated_at <= :now - :stale_after_s
ORDER BY t.id
ON CONFLICT (task_id) DO UPDATE SET stale_noted_at = excluded.stale_noted_at
WHERE reviews.stale_noted_at IS NULL
RETURNING task_id;

-- name: clear_stale_mark
-- Back to work: the next submission is a new review, which may go stale again.
UPDATE reviews SET stale_noted_at = NULL WHERE task_id = :task_id AND stale_noted_at IS NOT NULL;

-- name: inbox_owner
-- A worker's inbox is its name, so it outlives the worker's restarts (new ids).
SELECT name FROM workers
WHERE (id = :recipient OR name = :recipient) AND namespace = :namespace
LIMIT 1;

-- name: insert_message
-- A key sent before: nothing inserted, no row returned (message_by_key finds that one).
INSERT INTO messages (at, sender, recipient, type, body, namespace, idempotency_key)
VALUES (:now, :sender, :recipient, :type, :body, :namespace, :key)
ON CONFLICT (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: message_by_key
SELECT id FROM messages WHERE namespace = :namespace AND idempotency_key = :key;

-- name: list_messages
SELECT m.*, a.at AS acked_at, a.actor AS acked_by
FROM messages m LEFT JOIN message_acks a ON a.message_id = m.id
WHERE m.namespace = :namespace
  AND (:recipient IS NULL OR m.recipient = :recipient)
  AND m.id > :after_id
  AND (:unacked = 0 OR a.message_id IS NULL)
ORDER BY m.id
LIMIT :limit;

-- name: get_message
SELECT m.*, a.at AS acked_at, a.actor AS acked_by
FROM messages m LEFT JOIN message_acks a ON a.message_id = m.id
WHERE m.id = :message_id AND m.namespace = :namespace;

-- name: ack_message
INSERT INTO message_acks (message_id, at, actor) VALUES (:message_id, :now, :actor)
ON CONFLICT (message_id) DO NOTHING;

-- The orchestrator's state row (id 1). Taking it is one compare-and-set: the row is
-- stopped, or still exactly as the caller saw it when it judged the holder dead.

-- name: get_orchestrator
SELECT * FROM orchestrator WHERE id = 1;

-- name: acquire_orchestrator
UPDATE orchestrator
SET status = 'starting', pid = :pid, host = :host, started_at = :now, heartbeat_at = :now,
    last_reconcile_at = NULL, stopped_at = NULL, stop_timeout_s = NULL, config = :config,
    slots = '[]'
WHERE id = 1
  AND (status = 'stopped'
       OR (pid IS :seen_pid AND host IS :seen_host AND started_at IS :seen_started_at
           AND heartbeat_at IS :seen_heartbeat_at))
RETURNING *;

-- name: set_orchestrator_status
UPDATE orchestrator
SET status = :to_status,
    stopped_at = CASE WHEN :to_status = 'stopped' THEN :now ELSE stopped_at END
WHERE id = 1 AND pid = :pid AND host = :host
  AND status IN (SELECT value FROM json_each(:allowed))
RETURNING *;

-- name: beat_orchestrator
UPDATE orchestrator
SET heartbeat_at = :now, slots = :slots,
    last_reconcile_at = CASE WHEN :reconciled THEN :now ELSE last_reconcile_at END
WHERE id = 1 AND pid = :pid AND host = :host
  AND status IN ('starting', 'running', 'stopping');

-- name: request_orchestrator_stop
UPDATE orchestrator
SET status = 'stopping', stop_timeout_s = :stop_timeout_s
WHERE id = 1 AND status IN (SELECT value FROM json_each(:allowed))
RETURNING *;

-- The orchestrators of a store, one row per host (PostgreSQL runs several; SQLite's
-- single orchestrator never joins). Joining is one compare-and-set: the host's row is
-- absent or stopped, or still exactly as the joiner saw it when it judged its holder dead.

-- name: list_orchestrators
SELECT * FROM orchestrators ORDER BY host;

-- name: join_orchestrators
INSERT INTO orchestrators (host, pid, role, status, started_at, heartbeat_at)
VALUES (:host, :pid, 'standby', 'running', :now, :now)
ON CONFLICT (host) DO UPDATE
SET pid = excluded.pid, role = 'standby', status = 'running', started_at = excluded.started_at,
    heartbeat_at = excluded.heartbeat_at, stopped_at = NULL
WHERE orchestrators.status = 'stopped'
   OR (orchestrators.pid IS :seen_pid AND orchestrators.started_at IS :seen_started_at
       AND orchestrators.heartbeat_at IS :seen_heartbeat_at)
RETURNING *;

-- name: beat_orchestrators
UPDATE orchestrators
SET heartbeat_at = :now, role = :role, status = :to_status,
    stopped_at = CASE WHEN :to_status = 'stopped' THEN :now ELSE NULL END
WHERE host = :host AND pid = :pid AND started_at = :started_at
  AND status IN ('running', 'stopping');

-- name: demote_orchestrators
UPDATE orchestrators SET role = 'standby' WHERE role = 'leader' AND host <> :host;

-- The exchange (store/exchange.py): every claim and every reported outcome, one write
-- transaction for any number of each. Reports and claims arrive as JSON arrays; what is
-- recorded about them (events, runs) is copied from the rows the statements just wrote,
-- so a batch of k tasks costs a fixed number of statements whatever k.

-- The claim statements below filter with the `claimable` fragment: which tasks a worker may
-- claim now, written once for both dialects in store/claimable.py (store/queries.py puts
-- its text in place).

-- name: claim_tasks
-- Up to :limit tasks the worker may claim, in claim order. The queue limits are read once,
-- before the UPDATE: a batch (:limit > 1) could pass one, so the exchange claims one at a
-- time while any queue has limits (any_queue_limits).
UPDATE tasks SET status = 'running', attempts = attempts + 1, updated_at = :now
WHERE seq IN (
    SELECT seq FROM tasks WHERE /* fragment: claimable */
    ORDER BY priority DESC, seq
    LIMIT :limit)
RETURNING *;

-- name: claim_task
-- Task :task_id, if the worker may claim it now.
UPDATE tasks SET status = 'running', attempts = attempts + 1, updated_at = :now
WHERE id = :task_id AND /* fragment: claimable */
RETURNING *;

-- name: claimable_task
-- Whether the worker may claim task :task_id now (a refused claim asks, to say why).
SELECT id FROM tasks WHERE id = :task_id AND /* fragment: claimable */;

-- name: any_queue_limits
-- Whether the claiming worker's namespace has queue limits.
SELECT EXISTS (SELECT 1 FROM queue_limits l
               WHERE l.namespace = (SELECT w.namespace FROM workers w WHERE w.id = :worker_id))
       AS limited;

-- name: dependencies_of
-- (Not a subquery of RETURNING above: there SQLite scans task_deps instead of seeking.)
SELECT d.task_id, json_group_array(d.depends_on) AS depends_on
FROM json_each(:task_ids) AS j JOIN task_deps d ON d.task_id = j.value
GROUP BY d.task_id;

-- name: insert_claim
-- insert_claims for one task, :task_id, whose timeout is :timeout_s.
INSERT INTO claims (task_id, worker_id, status, lease_s, claimed_at, lease_expires_at,
                    deadline_at, ready_at)
VALUES (:task_id, :worker_id, 'active', :lease_s, :now,
        min(:now + :lease_s, coalesce(:now + :timeout_s, :now + :lease_s)),
        :now + :timeout_s, (SELECT run_after FROM tasks WHERE id = :task_id))
RETURNING *;

-- name: insert_claims
INSERT INTO claims (task_id, worker_id, status, lease_s, claimed_at, lease_expires_at,
                    deadline_at, ready_at)
SELECT t.id, :worker_id, 'active', :lease_s, :now,
       min(:now + :lease_s, coalesce(:now + t.timeout_s, :now + :lease_s)),
       :now + t.timeout_s, t.run_after
FROM json_each(:task_ids) AS j JOIN tasks t ON t.id = j.value
RETURNING *;

-- name: record_claimed
-- task.claimed for each claim from token :first on (the claims this exchange just made:
-- tokens only grow, AUTOINCREMENT), each followed by run.started for its run, if it has
-- one. task.claimed's data keeps lease_expires_at as Python's datetime.isoformat() writes
-- it (corral.durations.iso): whole seconds, then the microseconds rounded half to even as
-- datetime.fromtimestamp does, unless they are 0.
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, data)
SELECT :now, name, task_id, worker_id, token, from_status, to_status, actor, data
FROM (SELECT 0 AS step, 'task.claimed' AS name, task_id, worker_id, token,
             'ready' AS from_status, 'running' AS to_status, :actor AS actor,
             json_object('lease_expires_at',
                         strftime('%Y-%m-%dT%H:%M:%S', whole, 'unixepoch')
                         || CASE WHEN us = 0 THEN '' ELSE printf('.%06d', us) END
                         || '+00:00') AS data
      FROM (SELECT task_id, worker_id, token, whole + (us6 = 1000000) AS whole,
                   CASE WHEN us6 = 1000000 THEN 0 ELSE us6 END AS us
            FROM (SELECT task_id, worker_id, token, whole,
                         cast(frac6 AS INTEGER)
                         + (frac6 - cast(frac6 AS INTEGER) > 0.5
                            OR (frac6 - cast(frac6 AS INTEGER) = 0.5
                                AND cast(frac6 AS INTEGER) % 2 = 1)) AS us6
                  FROM (SELECT task_id, worker_id, token,
                               cast(lease_expires_at AS INTEGER) AS whole,
                               (lease_expires_at - cast(lease_expires_at AS INTEGER))
                                   * 1000000.0 AS frac6
                        FROM claims WHERE token >= :first)))
      UNION ALL
      SELECT 1, 'run.started', r.task_id, r.worker_id, r.token, NULL, NULL, r.worker_id,
             json_object('run_id', r.id, 'attempt', r.attempt)
      FROM claims c JOIN runs r ON r.task_id = c.task_id AND r.token = c.token
      WHERE c.token >= :first)
ORDER BY token, step;

-- name: insert_runs
-- One run of a batch's claims, run once per row (Tx.send_rows: executemany).
INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, prompt, command, cwd,
                  base_commit, transcript_path, stderr_path)
VALUES (:id, :task_id, :worker_id, :token, :attempt, :now, :prompt, :command, :cwd,
        :base_commit, :transcript_path, :stderr_path);

-- name: insert_alike_runs
-- A run for each claim of :runs ([[run id, token], ...]), all described alike (a runner
-- whose runs differ by their ids only: a Python function's).
INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, prompt, command, cwd,
                  base_commit, transcript_path, stderr_path)
SELECT json_extract(j.value, '$[0]'), c.task_id, c.worker_id, c.token, t.attempts, :now,
       :prompt, :command, :cwd, :base_commit, :transcript_path, :stderr_path
FROM json_each(:runs) AS j
JOIN claims c ON c.token = json_extract(j.value, '$[1]')
JOIN tasks t ON t.id = c.task_id;

-- name: set_run_start
UPDATE runs
SET command = :command, cwd = :cwd, prompt = :prompt, transcript_path = :transcript_path,
    stderr_path = :stderr_path, base_commit = :base_commit
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace));

-- name: keep_task_at_site
-- The site of the worktree run :run_id entered (RunStart.site) is its task's, while that
-- run is unfinished (so its claim is held): the task is claimed there while it can be.
UPDATE tasks SET site = :site
WHERE (namespace = :namespace OR :namespace = '*')
  AND id = (SELECT r.task_id FROM runs r WHERE r.id = :run_id AND r.finished_at IS NULL);

-- name: set_run_paths
UPDATE runs SET transcript_path = :transcript_path, stderr_path = :stderr_path
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace));

-- name: end_reported_claim
-- end_claims for one report, by its task's id: ends the task's active claim if :token
-- (NULL: whatever claim is active) and :holder (NULL: any) still name it.
UPDATE claims
SET status = CASE WHEN :released THEN 'released' ELSE 'completed' END, ended_at = :now
WHERE task_id = :task_id AND status = 'active'
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                                        AND s.namespace = :namespace))
  AND coalesce(:token, token) = token AND coalesce(:holder, worker_id) = worker_id
RETURNING token, task_id, worker_id;

-- name: end_claims
-- Ends the active claim named by each of :claims ({task_id, token, holder, released}) that
-- it still names: its token (NULL: whatever claim is active) and its holder (NULL: any).
-- The claims it ended, each once.
UPDATE claims
SET status = CASE WHEN json_extract(j.value, '$.released') THEN 'released' ELSE 'completed' END,
    ended_at = :now
FROM json_each(:claims) AS j
WHERE claims.task_id = json_extract(j.value, '$.task_id') AND claims.status = 'active'
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                                        AND s.namespace = :namespace))
  AND coalesce(json_extract(j.value, '$.token'), claims.token) = claims.token
  AND coalesce(json_extract(j.value, '$.holder'), claims.worker_id) = claims.worker_id
RETURNING claims.token, claims.task_id, claims.worker_id;

-- name: complete_tasks
-- Each task of :ids, now done (or in_review when it requires review), with no result.
-- :completed_to is that decision (model/batches.py, COMPLETED_TO): the status to take,
-- indexed by requires_review; done finishes the task.
UPDATE tasks
SET status = json_extract(:completed_to, '$[' || requires_review || ']'),
    result = NULL,
    updated_at = :now,
    finished_at = CASE WHEN json_extract(:completed_to, '$[' || requires_review || ']') = 'done'
                       THEN :now END
FROM json_each(:ids) AS j
WHERE tasks.id = j.value AND tasks.status IN (SELECT value FROM json_each(:allowed))
RETURNING tasks.id, tasks.status;

-- name: complete_task
-- Task :task_id, done (or in_review: :completed_to, as in complete_tasks) with :result,
-- returned as get_task would read it after COMMIT (its claim has just ended, so it has
-- none): what `corral done` prints, at no second transaction. Writers take turns, so no dependent can appear before COMMIT: with
-- none, the exchange skips unblock_dependents. (:task_id, not tasks.id: in RETURNING,
-- SQLite would scan task_deps instead of seeking.)
UPDATE tasks
SET status = json_extract(:completed_to, '$[' || requires_review || ']'),
    result = :result,
    updated_at = :now,
    finished_at = CASE WHEN json_extract(:completed_to, '$[' || requires_review || ']') = 'done'
                       THEN :now END
WHERE id = :task_id AND status IN (SELECT value FROM json_each(:allowed))
RETURNING *, NULL AS token, NULL AS worker_id, NULL AS lease_expires_at,
          (SELECT json_group_array(d.depends_on) FROM task_deps d WHERE d.task_id = :task_id)
              AS depends_on,
          EXISTS (SELECT 1 FROM task_deps d WHERE d.depends_on = :task_id) AS has_dependents;

-- name: record_finished
-- task.completed for each claim of :tokens, whose task the exchange just completed, by
-- :actor (NULL: the claim's own token, a runner reporting its own), then run.finished for
-- each run of :run_ids (finished in this transaction; NULL: none), in token order.
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, reason,
                    data)
SELECT :now, name, task_id, worker_id, token, from_status, to_status, actor, reason, data
FROM (SELECT 0 AS step, 'task.completed' AS name, c.task_id, c.worker_id, c.token,
             'running' AS from_status, t.status AS to_status,
             coalesce(:actor, 'token:' || c.token) AS actor, NULL AS reason, NULL AS data
      FROM json_each(:tokens) AS j
      JOIN claims c ON c.token = j.value
      JOIN tasks t ON t.id = c.task_id
      UNION ALL
      SELECT 1, 'run.finished', r.task_id, r.worker_id, r.token, NULL, NULL, r.worker_id,
             r.error, json_object('run_id', r.id, 'outcome', r.outcome, 'exit_code', r.exit_code)
      FROM json_each(:run_ids) AS j JOIN runs r ON r.id = j.value)
ORDER BY token, step;

-- name: finish_runs
-- Each run of :runs ({id, outcome, exit_code, error, usage, final_commit}, the usage as
-- JSON text) that has not finished, as it says.
UPDATE runs
SET finished_at = :now, outcome = json_extract(j.value, '$.outcome'),
    exit_code = json_extract(j.value, '$.exit_code'), error = json_extract(j.value, '$.error'),
    usage = json_extract(j.value, '$.usage'),
    final_commit = json_extract(j.value, '$.final_commit')
FROM json_each(:runs) AS j
WHERE runs.id = json_extract(j.value, '$.id') AND runs.finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                        AND s.namespace = :namespace))
RETURNING runs.id;

-- name: finish_plain_runs
-- Each run of :ids that has not finished, ended with :outcome and :exit_code, and nothing
-- else to record (the common case of a batch: a runner's tasks that succeeded).
UPDATE runs SET finished_at = :now, outcome = :outcome, exit_code = :exit_code
FROM json_each(:ids) AS j
WHERE runs.id = j.value AND runs.finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                        AND s.namespace = :namespace))
RETURNING runs.id;

-- name: finish_stale_runs
-- Each run of :runs ({id, exit_code, usage}) whose claim ended elsewhere, finished as what
-- was reported under its token (`reported`), else lease_lost with the task's state.
UPDATE runs
SET finished_at = :now, outcome = coalesce(reported, 'lease_lost'),
    exit_code = json_extract(j.value, '$.exit_code'), usage = json_extract(j.value, '$.usage'),
    error = CASE WHEN reported IS NULL THEN 'the claim ended while running (task is '
                 || (SELECT t.status FROM tasks t WHERE t.id = runs.task_id) || ')' END
FROM json_each(:runs) AS j
WHERE runs.id = json_extract(j.value, '$.id') AND runs.finished_at IS NULL
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                        AND s.namespace = :namespace))
RETURNING runs.id;

-- name: run_outcomes
SELECT r.id, r.outcome FROM json_each(:ids) AS j JOIN runs r ON r.id = j.value
WHERE (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = r.task_id
                                        AND s.namespace = :namespace));

-- name: note_reported
-- What the task's command (or anyone with its token) reported of it, on the open run of
-- that claim: the run records it when it finishes, however its runner ends.
UPDATE runs SET reported = :reported
WHERE worker_id = :holder AND token = :token AND finished_at IS NULL;

-- name: insert_events
-- One event of many, run once per row (Tx.send_rows: executemany); insert_event's statement.
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, reason,
                    data)
VALUES (:now, :name, :task_id, :worker_id, :token, :from_status, :to_status, :actor, :reason,
        :data);

-- Provider accounts (store/providers.py).

-- name: provider_states
-- Every provider account with a row or a live worker (or just :name), with its load.
WITH names AS (
    SELECT name FROM providers WHERE namespace = :namespace
    UNION SELECT provider FROM workers
    WHERE namespace = :namespace AND provider IS NOT NULL
      AND status IN ('starting', 'idle', 'busy', 'draining', 'stale')
)
SELECT n.name, p.max_running, coalesce(p.paused, 0) AS paused, p.parked_until, p.parked_at,
       p.park_reason,
       (SELECT count(*) FROM workers w JOIN claims c ON c.worker_id = w.id
        WHERE w.namespace = :namespace AND w.provider = n.name
          AND c.status = 'active') AS running,
       (SELECT count(*) FROM workers w
        WHERE w.namespace = :namespace AND w.provider = n.name
          AND w.status IN ('starting', 'idle', 'busy', 'draining', 'stale')) AS workers
FROM names n LEFT JOIN providers p ON p.namespace = :namespace AND p.name = n.name
WHERE :name IS NULL OR n.name = :name
ORDER BY n.name;

-- name: provider_allowance
-- What the claim reads of the claimant's provider account in its namespace (no row: no
-- limit).
SELECT p.paused, p.parked_until > :now AS parked, p.max_running,
       (SELECT count(*) FROM workers w JOIN claims c ON c.worker_id = w.id
        WHERE w.namespace = p.namespace AND w.provider = p.name
          AND c.status = 'active') AS running
FROM providers p WHERE p.namespace = :namespace AND p.name = :provider;

-- name: set_provider
-- max_running is replaced unless keep_max_running; paused, when not NULL; unpark clears a park.
INSERT INTO providers (namespace, name, max_running, paused, updated_at)
VALUES (:namespace, :name, :max_running, coalesce(:paused, 0), :now)
ON CONFLICT (namespace, name) DO UPDATE SET
    max_running = CASE WHEN :keep_max_running THEN max_running ELSE excluded.max_running END,
    paused = coalesce(:paused, paused),
    parked_until = CASE WHEN :unpark THEN NULL ELSE parked_until END,
    park_reason = CASE WHEN :unpark THEN NULL ELSE park_reason END,
    updated_at = :now;

-- name: park_provider
-- Parked until :until, unless already parked at least that long: a row only when it changed.
INSERT INTO providers (namespace, name, parked_until, parked_at, park_reason, updated_at)
VALUES (:namespace, :name, :until, :now, :reason, :now)
ON CONFLICT (namespace, name) DO UPDATE SET
    parked_until = excluded.parked_until, parked_at = :now,
    park_reason = excluded.park_reason, updated_at = :now
WHERE providers.parked_until IS NULL OR providers.parked_until < excluded.parked_until
RETURNING name, parked_until;

-- name: usage_by
-- Runs started since :since (NULL: all), of task :task_id (NULL: any), grouped by :by:
-- how many, how many reported usage, the sums of the usage they reported (a key nobody
-- reported sums to NULL, never 0), wall time and attempts; 'total': one group of every
-- run. Largest cost first.
SELECT CASE :by WHEN 'task' THEN r.task_id WHEN 'queue' THEN t.queue WHEN 'kind' THEN t.kind
                 WHEN 'agent' THEN coalesce(r.agent, '-')
                 WHEN 'provider' THEN coalesce(w.provider, '-')
                 WHEN 'total' THEN 'total'
                 ELSE strftime('%Y-%m-%d', r.started_at, 'unixepoch') END AS key,
       count(*) AS runs,
       count(r.usage) AS with_usage,
       sum(CASE WHEN json_type(r.usage, '$.input_tokens') IN ('integer', 'real') THEN json_extract(r.usage, '$.input_tokens') END) AS input_tokens,
       sum(CASE WHEN json_type(r.usage, '$.output_tokens') IN ('integer', 'real') THEN json_extract(r.usage, '$.output_tokens') END) AS output_tokens,
       sum(CASE WHEN json_type(r.usage, '$.cache_read_tokens') IN ('integer', 'real') THEN json_extract(r.usage, '$.cache_read_tokens') END) AS cache_read_tokens,
       sum(CASE WHEN json_type(r.usage, '$.cache_write_tokens') IN ('integer', 'real') THEN json_extract(r.usage, '$.cache_write_tokens') END) AS cache_write_tokens,
       sum(CASE WHEN json_type(r.usage, '$.cost_usd') IN ('integer', 'real') THEN json_extract(r.usage, '$.cost_usd') END) AS cost_usd,
       sum(coalesce(r.finished_at, :now) - r.started_at) AS wall_s,
       count(DISTINCT r.task_id) AS tasks
FROM runs r JOIN tasks t ON t.id = r.task_id JOIN workers w ON w.id = r.worker_id
WHERE (t.namespace = :namespace OR :namespace = '*')
  AND (:since IS NULL OR r.started_at >= :since) AND (:task_id IS NULL OR r.task_id = :task_id)
GROUP BY 1
ORDER BY 8 DESC NULLS LAST, 1
LIMIT :limit;

-- name: waiting_runs
-- The unfinished runs flagged waiting for a person, oldest first.
SELECT id, task_id, worker_id, waiting, stalled_at FROM runs
WHERE (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                           AND s.namespace = :namespace))
  AND waiting IS NOT NULL AND finished_at IS NULL
ORDER BY started_at;

-- API tokens (store/tokens.py).

-- name: insert_token
INSERT INTO tokens (id, name, role, queues, secret_hash, created_at, expires_at, namespace)
VALUES (:id, :name, :role, :queues, :secret_hash, :now, :now + :expires_s, :namespace)
RETURNING *;

-- name: list_tokens
SELECT * FROM tokens WHERE namespace = :namespace ORDER BY created_at, name;

-- name: token_by_id
SELECT * FROM tokens WHERE id = :id;

-- name: revoke_token
UPDATE tokens SET revoked_at = :now WHERE name = :name
  AND (namespace = :namespace OR :namespace = '*')
  AND revoked_at IS NULL RETURNING *;

-- name: token_by_name
SELECT * FROM tokens WHERE name = :name AND namespace = :namespace;

-- name: token_name_taken
-- Token names are unique across the store (docs/operations.md, Namespaces).
SELECT 1 FROM tokens WHERE name = :name;

-- name: any_usable_token
SELECT EXISTS (SELECT 1 FROM tokens WHERE revoked_at IS NULL
               AND (expires_at IS NULL OR expires_at > :now)) AS found;

-- name: forget_dashboard_sessions
-- The sessions that can sign nobody in any more (ended, or expired): a sign-in clears
-- them, so the table holds about as many rows as there are live sessions.
DELETE FROM dashboard_sessions WHERE ended_at IS NOT NULL OR expires_at <= :now;

-- name: insert_dashboard_session
INSERT INTO dashboard_sessions (id, secret_hash, token_id, created_at, expires_at)
VALUES (:id, :secret_hash, :token_id, :now, :now + :expires_s);

-- name: dashboard_session
-- A session neither ended nor expired, by id.
SELECT token_id, secret_hash FROM dashboard_sessions
WHERE id = :id AND ended_at IS NULL AND expires_at > :now;

-- name: end_dashboard_session
UPDATE dashboard_sessions SET ended_at = :now WHERE id = :id AND ended_at IS NULL
RETURNING id;

-- name: count_tasks_by_queue_kind_status
-- What /metrics shows as corral_tasks{namespace,queue,kind,status}: the namespace's.
SELECT queue, kind, status, count(*) AS n FROM tasks WHERE namespace = :namespace
GROUP BY queue, kind, status
ORDER BY queue, kind, status;

-- fragment: task_page_filters
-- The dashboard's filters of the task list (task_page_*); each is off when NULL. The
-- namespace term is written `+namespace` so that it never picks an index: a page in seq
-- order walks the rowid's range (an index led by the namespace would read every task of
-- the namespace and sort them); the priority pages name the namespace again, plainly, to
-- walk tasks_claim_order.
+namespace = :namespace
  AND (:statuses IS NULL OR status IN (SELECT value FROM json_each(:statuses)))
  AND (:queue IS NULL OR queue = :queue)
  AND (:kind IS NULL OR kind = :kind)
  AND (:assignee IS NULL OR assignee = :assignee)
  AND (:label_path IS NULL OR json_extract(labels, :label_path) = :label_value)
  AND (:pattern IS NULL OR title LIKE :pattern ESCAPE '\' OR description LIKE :pattern ESCAPE '\'
       OR payload LIKE :pattern ESCAPE '\')

-- name: task_page_newest
-- A page of the dashboard's task list, newest first, after the cursor :after_seq (none:
-- the first page): a keyset read on seq, as fast for the thousandth page as the first
-- (the cursor is a bound of the rowid's range, not an OR that SQLite could only filter by).
-- :pattern is a LIKE pattern ('%text%', its % and _ escaped with \).
SELECT * FROM task_view
WHERE /* fragment: task_page_filters */
  AND seq < coalesce(:after_seq, 9223372036854775807)
ORDER BY seq DESC
LIMIT :limit;

-- name: task_page_oldest
-- task_page_newest, oldest first.
SELECT * FROM task_view
WHERE /* fragment: task_page_filters */
  AND seq > coalesce(:after_seq, 0)
ORDER BY seq
LIMIT :limit;

-- name: task_page_priority
-- task_page_newest in claim order (priority, highest first, then oldest), after the
-- cursor (:after_priority, :after_seq).
SELECT * FROM task_view
WHERE namespace = :namespace AND /* fragment: task_page_filters */
  AND (:after_seq IS NULL OR priority < :after_priority
       OR (priority = :after_priority AND seq > :after_seq))
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: task_page_priority_of_status
-- task_page_priority of the tasks of one status, :status: read in the claim order's
-- index (tasks_claim_order), not sorted after a scan.
SELECT * FROM task_view
WHERE namespace = :namespace AND status = :status AND /* fragment: task_page_filters */
  AND (:after_seq IS NULL OR priority < :after_priority
       OR (priority = :after_priority AND seq > :after_seq))
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: task_page_priority_back
-- task_page_priority read backwards from the cursor: the page before it, last row first
-- (the store turns it round).
SELECT * FROM task_view
WHERE namespace = :namespace AND /* fragment: task_page_filters */
  AND (:after_seq IS NULL OR priority > :after_priority
       OR (priority = :after_priority AND seq < :after_seq))
ORDER BY priority, seq DESC
LIMIT :limit;

-- name: task_page_priority_of_status_back
-- task_page_priority_of_status read backwards from the cursor.
SELECT * FROM task_view
WHERE namespace = :namespace AND status = :status AND /* fragment: task_page_filters */
  AND (:after_seq IS NULL OR priority > :after_priority
       OR (priority = :after_priority AND seq < :after_seq))
ORDER BY priority, seq DESC
LIMIT :limit;

-- fragment: task_text_match
-- The tasks whose title, description or payload holds the phrase (an FTS5 phrase: the text
-- in double quotes), found by the trigram index task_text (schema version 21).
seq IN (SELECT rowid FROM task_text WHERE task_text MATCH :phrase)

-- name: task_search_newest
-- task_page_newest of the tasks that hold a text: the text index finds them, so a search
-- costs what its matches cost, not what the table holds.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND seq < coalesce(:after_seq, 9223372036854775807)
ORDER BY seq DESC
LIMIT :limit;

-- name: task_search_oldest
-- task_search_newest, oldest first.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND seq > coalesce(:after_seq, 0)
ORDER BY seq
LIMIT :limit;

-- name: task_search_priority
-- task_search_newest in claim order.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND (:after_seq IS NULL OR priority < :after_priority
       OR (priority = :after_priority AND seq > :after_seq))
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: task_search_priority_back
-- task_search_priority read backwards from the cursor.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND (:after_seq IS NULL OR priority > :after_priority
       OR (priority = :after_priority AND seq < :after_seq))
ORDER BY priority, seq DESC
LIMIT :limit;

-- name: count_task_search
-- count_task_page of the tasks that hold a text, by the text index.
SELECT count(*) AS n FROM (SELECT 1 FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
LIMIT :cap) AS matched;

-- name: count_task_page
-- How many tasks the dashboard's filters match, up to :cap (a bulk action's bound).
SELECT count(*) AS n FROM (SELECT 1 FROM task_view
WHERE /* fragment: task_page_filters */
LIMIT :cap) AS matched;

-- name: task_dependents
-- The tasks that wait on :task_id (the task page's "blocking"), oldest first.
SELECT t.id, t.title, t.status FROM task_deps d JOIN tasks t ON t.id = d.task_id
WHERE d.depends_on = :task_id AND (:namespace = '*' OR t.namespace = :namespace)
ORDER BY t.seq
LIMIT :limit;

-- name: task_timeline
-- The newest :limit events of task :task_id, newest first (events_by_task).
SELECT *, 0 AS cursor_xid FROM events
WHERE task_id = :task_id
  AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = events.task_id
                           AND s.namespace = :namespace))
ORDER BY id DESC
LIMIT :limit;

-- name: task_titles
-- The titles of the tasks of :ids (the events page's task column), in the namespace alone.
SELECT id, title FROM tasks
WHERE id IN (SELECT value FROM json_each(:ids))
  AND (:namespace = '*' OR namespace = :namespace);

-- name: claim_holders
-- The workers that held the claims of :tokens (an actor `token:N`: the By columns), by
-- name; a claim whose worker is of another namespace is not named.
SELECT c.token, w.name FROM claims c JOIN workers w ON w.id = c.worker_id
WHERE c.token IN (SELECT value FROM json_each(:tokens))
  AND (:namespace = '*' OR w.namespace = :namespace);

-- name: worker_names
-- The names of the workers of :ids (the By columns, the events page's worker column), in
-- the namespace alone.
SELECT id, name FROM workers
WHERE id IN (SELECT value FROM json_each(:ids))
  AND (:namespace = '*' OR namespace = :namespace);

-- name: events_per_minute
-- How many events of each of :names were written in each minute from :since_at on (the
-- overview's chart), by events_by_name_at.
SELECT name, CAST((at - :since_at) / 60 AS INTEGER) AS minute, count(*) AS n
FROM events
WHERE coalesce((SELECT t.namespace FROM tasks t WHERE t.id = events.task_id),
               (SELECT w.namespace FROM workers w WHERE w.id = events.worker_id),
               'default') = :namespace
  AND name IN (SELECT value FROM json_each(:names)) AND at >= :since_at
GROUP BY name, minute;

-- Retention (store/retention.py). Finished tasks last changed before :cutoff, newest
-- first (a dependent finishes after what it depends on, so it goes in an earlier batch),
-- none that a task still kept depends on.
-- name: prunable_tasks
SELECT t.id FROM tasks t
WHERE t.status IN (SELECT value FROM json_each(:final)) AND t.updated_at < :cutoff
  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks u ON u.id = d.task_id
                  WHERE d.depends_on = t.id
                    AND (u.status NOT IN (SELECT value FROM json_each(:final))
                         OR u.updated_at >= :cutoff))
  AND (:unlanded OR NOT EXISTS (SELECT 1 FROM reviews r WHERE r.task_id = t.id
                                   AND r.backup_refs IS NOT NULL
                                   AND coalesce(r.outcome, '') <> 'landed'))
ORDER BY t.updated_at DESC
LIMIT :limit;

-- What a retention pass deletes, for its dry run to count (store/retention.py): the
-- finished tasks old enough (`old`), less every one that a task staying depends on, at
-- any distance (`held`: a pass deletes a task only with all its dependents), is `going`.
-- fragment: going_tasks
WITH RECURSIVE
old(id) AS (
  SELECT t.id FROM tasks t
  WHERE t.status IN (SELECT value FROM json_each(:final)) AND t.updated_at < :tasks_cutoff
    AND (:unlanded OR NOT EXISTS (SELECT 1 FROM reviews r WHERE r.task_id = t.id
                                     AND r.backup_refs IS NOT NULL
                                     AND coalesce(r.outcome, '') <> 'landed'))),
held(id) AS (
  SELECT d.depends_on FROM task_deps d WHERE d.task_id NOT IN (SELECT id FROM old)
  UNION
  SELECT d.depends_on FROM task_deps d JOIN held h ON d.task_id = h.id),
going(id) AS (SELECT id FROM old WHERE id NOT IN (SELECT id FROM held))

-- name: count_prunable_tasks
/* fragment: going_tasks */
SELECT count(*) AS n FROM going;

-- The claims of those tasks, read before the batch's write (a finished task claims no more).
-- name: prunable_claims
SELECT token FROM claims WHERE task_id IN (SELECT value FROM json_each(:ids));

-- The batch's compare-and-set: still finished, still unchanged since before :cutoff.
-- name: still_prunable
SELECT id FROM tasks t
WHERE t.id IN (SELECT value FROM json_each(:ids))
  AND t.status IN (SELECT value FROM json_each(:final)) AND t.updated_at < :cutoff
  AND (:unlanded OR NOT EXISTS (SELECT 1 FROM reviews r WHERE r.task_id = t.id
                                   AND r.backup_refs IS NOT NULL
                                   AND coalesce(r.outcome, '') <> 'landed'));

-- name: dependents_of
SELECT task_id, depends_on FROM task_deps
WHERE depends_on IN (SELECT value FROM json_each(:ids));

-- name: run_files_of
SELECT id, transcript_path, stderr_path FROM runs
WHERE task_id IN (SELECT value FROM json_each(:ids));

-- name: insert_artifact
-- Once per file of a run: a second record of the same path (a retried report) changes nothing.
INSERT INTO run_artifacts (run_id, path, size_bytes, sha256, skipped)
VALUES (:run_id, :path, :size_bytes, :sha256, :skipped)
ON CONFLICT (run_id, path) DO NOTHING;

-- name: artifacts_of_run
SELECT path, size_bytes, sha256, skipped FROM run_artifacts WHERE run_id = :run_id
  AND EXISTS (SELECT 1 FROM runs r WHERE r.id = run_artifacts.run_id
    AND (:namespace = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = r.task_id
                             AND s.namespace = :namespace))
    ) ORDER BY path;

-- name: delete_artifacts_of
DELETE FROM run_artifacts
WHERE run_id IN (SELECT id FROM runs WHERE task_id IN (SELECT value FROM json_each(:ids)));

-- name: delete_runs_of
DELETE FROM runs WHERE task_id IN (SELECT value FROM json_each(:ids));

-- name: delete_claims_of
DELETE FROM claims
WHERE token IN (SELECT value FROM json_each(:tokens))
  AND task_id IN (SELECT value FROM json_each(:ids));

-- The backup refs of tasks whose work never landed, read as retention deletes them (with
-- --with-unlanded-work): each is named in a `task.pruned_unlanded` event.
-- name: unlanded_backups_of
SELECT task_id, backup_refs FROM reviews
WHERE task_id IN (SELECT value FROM json_each(:ids)) AND backup_refs IS NOT NULL
  AND coalesce(outcome, '') <> 'landed'
ORDER BY task_id;

-- name: delete_reviews_of
DELETE FROM reviews WHERE task_id IN (SELECT value FROM json_each(:ids));

-- name: delete_dependencies_of
DELETE FROM task_deps WHERE task_id IN (SELECT value FROM json_each(:ids));

-- name: delete_tasks
DELETE FROM tasks WHERE id IN (SELECT value FROM json_each(:ids));

-- The first event at or after :cutoff (read before the deletes: a scan of the older ones).
-- name: first_event_kept
SELECT id FROM events WHERE at >= :cutoff ORDER BY id LIMIT 1;

-- name: last_event_id
SELECT coalesce(max(id), 0) AS id FROM events;

-- Events by id, the log's order: the oldest :limit before id :boundary.
-- name: delete_events_before
DELETE FROM events WHERE id IN (SELECT id FROM events WHERE id < :boundary ORDER BY id LIMIT :limit);

-- What delete_events_before deletes, batch after batch, up to :boundary.
-- name: count_events_before
SELECT count(*) AS n FROM events WHERE id < :boundary;

-- Workers gone (dead, offline) and silent since before :cutoff that no claim or run names
-- (read before the deletes: a gone worker never claims again).
-- name: prunable_workers
SELECT w.id FROM workers w
WHERE w.status IN ('dead', 'offline') AND w.last_heartbeat_at < :cutoff
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.worker_id = w.id)
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.worker_id = w.id);

-- The gone workers a pass deletes after its tasks: claims and runs of going tasks go first.
-- name: count_prunable_workers
/* fragment: going_tasks */
SELECT count(*) AS n FROM workers w
WHERE w.status IN ('dead', 'offline') AND w.last_heartbeat_at < :cutoff
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.worker_id = w.id
                    AND c.task_id NOT IN (SELECT id FROM going))
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.worker_id = w.id
                    AND r.task_id NOT IN (SELECT id FROM going));

-- name: delete_workers
DELETE FROM workers
WHERE id IN (SELECT value FROM json_each(:ids))
  AND status IN ('dead', 'offline') AND last_heartbeat_at < :cutoff;

-- Schedules (store/schedules.py). A schedule is read with its last fire's task's status.

-- fragment: schedule_columns
SELECT s.*, t.status AS last_task_status FROM schedules s LEFT JOIN tasks t ON t.id = s.last_task_id

-- name: insert_schedule
INSERT INTO schedules (id, cron, timezone, template, overlap, max_catchup, catchup_window_s,
                       next_fire_at, created_at, updated_at, namespace)
VALUES (:schedule_id, :cron, :timezone, :template, :overlap, :max_catchup, :catchup_window_s,
        :next_fire_at, :now, :now, :namespace)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: get_schedule
/* fragment: schedule_columns */ WHERE s.id = :schedule_id
  AND (s.namespace = :namespace OR :namespace = '*');

-- name: list_schedules
/* fragment: schedule_columns */ WHERE s.namespace = :namespace ORDER BY s.id;

-- name: due_schedules
-- Walks schedules_due from the oldest due time: its cost is the due schedules', whatever
-- the number of schedules or of past fires.
/* fragment: schedule_columns */
WHERE s.paused = 0 AND s.next_fire_at <= :now AND (s.namespace = :namespace OR :namespace = '*')
ORDER BY s.next_fire_at
LIMIT :limit;

-- name: lock_schedule
SELECT * FROM schedules WHERE id = :schedule_id
  AND (namespace = :namespace OR :namespace = '*');

-- name: advance_schedules
-- The compare-and-set of a scheduler pass, for a batch of schedules at once (:plans, a JSON
-- array; instants in seconds since the epoch): a schedule is moved on only if no other
-- pass handled it since this one read it, and comes back with its last task's status.
UPDATE schedules
SET next_fire_at = p.next_at, last_fire_at = coalesce(p.last_at, schedules.last_fire_at),
    updated_at = :now
FROM (SELECT value ->> '$.schedule_id' AS plan_id, value ->> '$.seen' AS seen_at,
             value ->> '$.next_fire_at' AS next_at, value ->> '$.last_fire_at' AS last_at
      FROM json_each(:plans)) AS p
WHERE schedules.id = p.plan_id AND schedules.next_fire_at = p.seen_at AND schedules.paused = 0
  AND (schedules.namespace = :namespace OR :namespace = '*')
RETURNING id, cron, timezone, template, overlap, max_catchup, catchup_window_s, paused,
          pause_note, next_fire_at, last_fire_at, last_task_id, created_at, updated_at,
          namespace, (SELECT status FROM tasks t WHERE t.id = last_task_id) AS last_task_status;

-- name: insert_fires
-- A fire happens once: a key already taken inserts nothing and is not returned. :fires is
-- a JSON array (fire_at in seconds since the epoch).
INSERT INTO schedule_fires (key, schedule_id, fire_at, outcome, task_id, note, recorded_at)
SELECT value ->> '$.key', value ->> '$.schedule_id', value ->> '$.fire_at', value ->> '$.outcome',
       value ->> '$.task_id', value ->> '$.note', :now
FROM json_each(:fires) WHERE true
ON CONFLICT (key) DO NOTHING
RETURNING key;

-- name: set_last_tasks
-- Each schedule's newest task, run once per row (Tx.send_rows: executemany).
UPDATE schedules SET last_task_id = :task_id, updated_at = :now WHERE id = :schedule_id;

-- name: pause_schedule
UPDATE schedules SET paused = 1, pause_note = :note, updated_at = :now
WHERE id = :schedule_id AND (namespace = :namespace OR :namespace = '*') AND paused = 0;

-- name: resume_schedule
UPDATE schedules
SET paused = 0, pause_note = NULL, next_fire_at = coalesce(:next_fire_at, next_fire_at),
    updated_at = :now
WHERE id = :schedule_id AND (namespace = :namespace OR :namespace = '*') AND paused = 1;

-- name: delete_schedule
DELETE FROM schedules WHERE id = :schedule_id AND (namespace = :namespace OR :namespace = '*');

-- name: delete_schedule_fires
DELETE FROM schedule_fires WHERE key >= :first_key AND key < :past_key;

-- name: schedule_fires
SELECT f.*, t.status AS task_status
FROM schedule_fires f LEFT JOIN tasks t ON t.id = f.task_id
WHERE f.key >= :first_key AND f.key < :past_key
  AND EXISTS (SELECT 1 FROM schedules s WHERE s.id = :schedule_id
    AND (s.namespace = :namespace OR :namespace = '*')
    )
ORDER BY f.key DESC
LIMIT :limit;

-- name: next_run_after
SELECT min(run_after) AS at FROM tasks WHERE status = 'ready' AND run_after > :now;

-- name: namespace_counts
-- Every namespace with a task or a worker, its tasks by status and its live workers
-- (`corral namespace list`): one row per (namespace, status), status NULL for the workers.
SELECT namespace, status, count(*) AS n FROM tasks GROUP BY namespace, status
UNION ALL
SELECT namespace, NULL AS status,
       sum(status IN ('starting', 'idle', 'busy', 'draining', 'stale')) AS n
FROM workers GROUP BY namespace
ORDER BY namespace, status;

-- Where tasks' work ended (`corral status`, `status --watch`): each read walks
-- reviews_by_outcome for a few rows, so it costs the same whatever the store's history.

-- name: work_counts_since
-- How many tasks' work reached each outcome at :since or later.
SELECT r.outcome, count(*) AS n
FROM reviews r JOIN tasks t ON t.id = r.task_id
WHERE r.outcome IN ('landed', 'in_review', 'kept', 'no_change', 'refused')
  AND r.outcome_at >= :since AND t.namespace = :namespace
GROUP BY r.outcome;

-- name: newest_landed
-- The tasks whose work landed most recently, newest first, with the commit it landed at.
SELECT t.id, t.title, r.merged_commit, r.pr_url, r.outcome_at
FROM reviews r JOIN tasks t ON t.id = r.task_id
WHERE r.outcome = 'landed' AND t.namespace = :namespace
ORDER BY r.outcome_at DESC
LIMIT :limit;

-- name: oldest_kept
-- The done tasks whose branch is kept for a person (`corral land ID`), oldest first.
SELECT t.id, t.title, t.branch, r.pr_url, r.outcome_at
FROM reviews r JOIN tasks t ON t.id = r.task_id
WHERE r.outcome = 'kept' AND t.status = 'done' AND t.namespace = :namespace
ORDER BY r.outcome_at
LIMIT :limit;

-- The keys that prove a worker's processes (foundation/processes.py): set once, as the
-- worker registers, in the same transaction.

-- name: set_worker_keys
UPDATE workers SET key_hash = :key_hash, runs_key_hash = :runs_key_hash WHERE id = :worker_id;

-- name: set_orchestrator_key
-- The key hash of the orchestrator that has just taken the row (NULL: it has none).
UPDATE orchestrator SET key_hash = :key_hash WHERE id = 1 RETURNING *;

-- name: set_day_cap
-- A queue's or provider account's day caps: each replaced unless keep_NAME; a row left
-- with no cap is dropped (drop_empty_day_cap).
INSERT INTO day_caps (namespace, scope, name, max_cost_usd, max_tokens, updated_at)
VALUES (:namespace, :scope, :name, :max_cost_usd, :max_tokens, :now)
ON CONFLICT (namespace, scope, name) DO UPDATE SET
    max_cost_usd = CASE WHEN :keep_max_cost_usd THEN max_cost_usd ELSE excluded.max_cost_usd END,
    max_tokens = CASE WHEN :keep_max_tokens THEN max_tokens ELSE excluded.max_tokens END,
    updated_at = :now
RETURNING scope, name, max_cost_usd, max_tokens;

-- name: drop_empty_day_cap
DELETE FROM day_caps
WHERE namespace = :namespace AND scope = :scope AND name = :name
  AND max_cost_usd IS NULL AND max_tokens IS NULL;

-- name: day_caps
-- The day caps of the namespace, of one scope or all (:scope NULL), by scope and name.
SELECT scope, name, max_cost_usd, max_tokens FROM day_caps
WHERE namespace = :namespace AND (:scope IS NULL OR scope = :scope)
ORDER BY scope, name;
