-- Named queries of the PostgreSQL store: the same names as sql/sqlite/queries.sql, each
-- written for PostgreSQL. Parameters are :named (the driver binds them); parameters that
-- may be NULL or take part in arithmetic carry a cast, because the server infers no type
-- from a bare NULL. Status sets (:allowed and the filters) arrive as text[].
--
-- :now is the store clock. The driver binds it to the server's now() (the transaction's
-- start, one value for every statement of a transaction), or to an injected test clock.
--
-- Locking: these queries run in READ COMMITTED write transactions. A query that decides
-- a change locks the rows it read (FOR UPDATE / FOR SHARE), always in the order
-- task -> claim -> worker, so that two transactions never wait on each other in a circle
-- (postgres.py explains the order). Read transactions run the same text with every
-- locking clause removed, in one REPEATABLE READ READ ONLY snapshot.

-- name: insert_tasks
-- New tasks, one statement (Tx.send_rows: :rows, a JSON array of store/tasks.py
-- `task_row`s): enqueue's one and a scheduler pass's many, in their order. run_at (seconds
-- since the epoch) wins over run_after_s; a task goes to task_namespace when a row names
-- one (a fire's, its schedule's, whoever runs the pass), else to the handle's.
INSERT INTO tasks (id, title, description, queue, kind, priority, status, payload, labels,
                   assignee, parent_id, max_attempts, retry_base_s, timeout_s, run_after,
                   requires_review, created_at, updated_at, namespace)
SELECT r ->> 'id', r ->> 'title', r ->> 'description', r ->> 'queue', r ->> 'kind',
       (r ->> 'priority')::integer, r ->> 'status', r -> 'payload', r -> 'labels',
       r ->> 'assignee', r ->> 'parent_id', (r ->> 'max_attempts')::integer,
       (r ->> 'retry_base_s')::float8, (r ->> 'timeout_s')::float8,
       coalesce(to_timestamp((r ->> 'run_at')::float8),
                :now + (r ->> 'run_after_s')::float8 * interval '1 second'),
       (r ->> 'requires_review')::boolean, :now, :now,
       coalesce(r ->> 'task_namespace', :namespace)
FROM jsonb_array_elements(:rows::jsonb) WITH ORDINALITY AS x(r, n)
ORDER BY n;

-- name: insert_dependency
INSERT INTO task_deps (task_id, depends_on) VALUES (:task_id, :depends_on);

-- name: task_statuses
-- FOR SHARE: a dependency cannot complete until this enqueue commits, so its completion
-- sees the new dependent (or this enqueue sees it done).
SELECT id, status FROM tasks WHERE id = ANY(:ids::text[]) AND namespace = :namespace
ORDER BY id FOR SHARE;

-- name: get_task
-- Not the view: FOR UPDATE cannot reach into the view's outer join.
SELECT t.*, c.token, c.worker_id, c.lease_expires_at,
       ARRAY(SELECT d.depends_on FROM task_deps d WHERE d.task_id = t.id
             ORDER BY d.depends_on) AS depends_on
FROM tasks t
LEFT JOIN claims c ON c.task_id = t.id AND c.status = 'active'
WHERE t.id = :task_id AND (t.namespace = :namespace OR :namespace::text = '*')
FOR UPDATE OF t;

-- fragment: task_list_filters
-- `corral list`'s filters in the handle's namespace; each other one is off when NULL.
namespace = :namespace
  AND (:statuses::text[] IS NULL OR status = ANY(:statuses::text[]))
  AND (:queue::text IS NULL OR queue = :queue::text)
  AND (:kinds::text[] IS NULL OR kind = ANY(:kinds::text[]))
  AND (:worker_id::text IS NULL OR worker_id = :worker_id::text)

-- name: list_tasks
-- After the cursor :after_seq (a page's last task; 0: from the first), in the order tasks
-- were added. Each bound is a plain comparison, never `:x IS NULL OR`, so it starts the
-- index's range: a page far in reads what the first one reads.
SELECT * FROM task_view
WHERE /* fragment: task_list_filters */
  AND seq > :after_seq::bigint
ORDER BY seq
LIMIT :limit;

-- name: count_tasks
SELECT count(*) AS n FROM task_view
WHERE /* fragment: task_list_filters */
  AND (:parent_id::text IS NULL OR parent_id = :parent_id::text);

-- name: list_tasks_newest
-- list_tasks, newest first: what a client polling for what it just added reads
-- (seed 001's sessions), whatever the number of older tasks.
SELECT * FROM task_view
WHERE /* fragment: task_list_filters */
  AND seq < :after_seq::bigint
ORDER BY seq DESC
LIMIT :limit;

-- name: list_children
-- list_tasks of one parent's children, a page after :after_seq either way: found through
-- tasks_by_parent, not a scan.
SELECT * FROM task_view
WHERE parent_id = :parent_id AND /* fragment: task_list_filters */
  AND CASE WHEN :newest_first::boolean THEN seq < :after_seq ELSE seq > :after_seq END
ORDER BY CASE WHEN :newest_first::boolean THEN -seq ELSE seq END
LIMIT :limit;

-- name: tasks_with_payload
-- Tasks of :kind whose payload field :field is the string :value (not a number that
-- reads the same), newest first: a seed 001 session by its label. No index: a scan of
-- the tasks on the server, not rows sent to Python.
SELECT * FROM task_view
WHERE namespace = :namespace AND kind = :kind AND payload -> :field::text = to_jsonb(:value::text)
ORDER BY seq DESC
LIMIT :limit;

-- fragment: ready_filters
-- The tasks of the namespace claimable now, of a queue, of kinds, or that one worker may
-- claim.
namespace = :namespace AND status = 'ready' AND run_after <= :now
  AND (:queue::text IS NULL OR queue = :queue::text)
  AND (:kinds::text[] IS NULL OR kind = ANY(:kinds::text[]))
  AND (:queues::text[] IS NULL OR queue = ANY(:queues::text[]))
  AND (:worker_id::text IS NULL OR assignee IS NULL
       OR assignee IN (:worker_id::text, :worker_name::text))

-- name: ready_tasks
-- In claim order, those of a priority below :below_priority. A page after a cursor
-- (priority P, seq S) reads ready_tasks_tied (P, after S), then this below P: two ranges
-- of tasks_ready_order, where one `(priority, seq)` condition would read on from the
-- start of P's tasks.
SELECT * FROM task_view
WHERE /* fragment: ready_filters */
  AND priority < :below_priority::bigint
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: ready_tasks_tied
-- The ready tasks of priority :priority after seq :after_seq, oldest first.
SELECT * FROM task_view
WHERE /* fragment: ready_filters */
  AND priority = :priority::integer AND seq > :after_seq::bigint
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
WHERE d.task_id = :task_id AND (t.namespace = :namespace OR :namespace::text = '*')
ORDER BY d.depends_on;

-- name: count_ahead
SELECT count(*) FROM tasks o, tasks t
WHERE t.id = :task_id
  AND (t.namespace = :namespace OR :namespace::text = '*')
  AND o.namespace = t.namespace AND o.status = 'ready'
  AND o.queue = t.queue AND o.run_after <= :now
  AND (o.priority > t.priority OR (o.priority = t.priority AND o.seq < t.seq));

-- name: claim_by_token
SELECT * FROM claims WHERE token = :token
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                                 AND s.namespace = :namespace));

-- name: active_claim
-- Locks the task before its claim (the lock order).
WITH task AS (SELECT id FROM tasks WHERE id = :task_id
  AND (namespace = :namespace OR :namespace::text = '*')
  FOR UPDATE)
SELECT c.* FROM claims c JOIN task ON c.task_id = task.id
WHERE c.status = 'active'
FOR UPDATE OF c;

-- name: running_tasks
-- The oldest active claims with their task and the run each started (none yet, or a
-- Python job's without files, leaves the run columns empty): `corral status --watch`.
-- The active claims are read alone, through their partial index, and the oldest kept;
-- only those are joined, by key. Left to itself the planner walks claims_by_start through
-- every claim ever made for the ORDER BY (18 ms at 100,000 finished tasks), or hashes
-- every task for the join (64 ms).
WITH active AS MATERIALIZED (
    SELECT token, task_id, worker_id, claimed_at FROM claims WHERE status = 'active'
      AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                                     AND s.namespace = :namespace))
), oldest AS MATERIALIZED (
    SELECT * FROM active ORDER BY claimed_at, token LIMIT :limit
)
SELECT c.token, c.task_id, c.worker_id, c.claimed_at, t.title, t.queue,
       r.id AS run_id, r.transcript_path, r.stderr_path
FROM oldest c
JOIN tasks t ON t.id = c.task_id
LEFT JOIN runs r ON r.task_id = c.task_id AND r.token = c.token AND r.finished_at IS NULL
ORDER BY c.claimed_at, c.token;

-- name: renew_claim
UPDATE claims
SET lease_expires_at = least(:now + :lease_s::float8 * interval '1 second', deadline_at),
    lease_s = :lease_s,
    renewals = renewals + 1
WHERE token = :token AND status = 'active'
RETURNING *;

-- name: end_claim
-- Locks the claim's task first (the lock order), for callers that hold no lock on it yet.
WITH task AS (SELECT t.id FROM tasks t JOIN claims c ON c.task_id = t.id
              WHERE c.token = :token FOR UPDATE OF t)
UPDATE claims SET status = :status, ended_at = :now
WHERE token = :token AND status = 'active'
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                                 AND s.namespace = :namespace))
  AND task_id IN (SELECT id FROM task);

-- name: release_task
-- The caller ended its claim earlier in this transaction; a claim it did not see (another
-- worker's, committed meanwhile) keeps the task. Claimable again from now (run_after:
-- where its next queue wait starts).
UPDATE tasks SET status = 'ready', attempts = attempts - 1,
                 run_after = greatest(run_after, :now), updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[])
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = tasks.id AND c.status = 'active');

-- name: fail_task
UPDATE tasks
SET status = :to_status::text,
    crashes = crashes + :crash::integer,
    last_error = coalesce(:error::text, last_error),
    failure_reason = CASE WHEN :to_status::text = 'failed' THEN :reason::text END,
    run_after = :now + :delay_s::float8 * interval '1 second',
    updated_at = :now,
    finished_at = CASE WHEN :to_status::text = 'failed' THEN :now END
WHERE id = :task_id AND status = ANY(:allowed::text[]);

-- name: requeue_orphan
UPDATE tasks
SET status = :to_status::text,
    last_error = :error::text,
    failure_reason = CASE WHEN :to_status::text = 'failed' THEN :reason::text END,
    run_after = :now + :delay_s::float8 * interval '1 second',
    updated_at = :now,
    finished_at = CASE WHEN :to_status::text = 'failed' THEN :now END
WHERE id = :task_id
  AND (namespace = :namespace OR :namespace::text = '*')
  AND status = ANY(:allowed::text[])
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = tasks.id AND c.status = 'active');

-- name: unblock_dependents
-- :task_ids just became done; each task returned names the first of them it waited on.
UPDATE tasks SET status = 'ready', run_after = greatest(run_after, :now), updated_at = :now
WHERE status = ANY(:allowed::text[])
  AND id IN (SELECT task_id FROM task_deps WHERE depends_on = ANY(:task_ids::text[]))
  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                  WHERE d.task_id = tasks.id AND p.status != 'done')
RETURNING id, (SELECT min(d.depends_on) FROM task_deps d
               WHERE d.task_id = tasks.id
                 AND d.depends_on = ANY(:task_ids::text[])) AS unblocked_by;

-- name: lock_parent
-- The parent of a task being added, locked before anything else the enqueue reads: a
-- claim (SKIP LOCKED) passes it by, and two children added at once take turns.
SELECT id, status FROM tasks WHERE id = :task_id AND namespace = :namespace
FOR UPDATE;

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
    SELECT unnest(:ids::text[])
    UNION
    SELECT d.depends_on FROM task_deps d JOIN reach r ON d.task_id = r.id
)
SELECT EXISTS (SELECT 1 FROM reach WHERE id = :task_id) AS found;

-- name: block_parent
-- A parent that has not started waits for the child just added.
UPDATE tasks SET status = 'blocked', updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[]);

-- name: unfinished_descendants
-- Every unfinished task below :task_id, deepest first: cancel's cascade locks children
-- before their parents, the order a completing child takes (itself, then its waiting parent).
WITH RECURSIVE down(id, status, depth) AS (
    SELECT id, status, 1 FROM tasks WHERE parent_id = :task_id
      AND (namespace = :namespace OR :namespace::text = '*')
    UNION ALL
    SELECT t.id, t.status, down.depth + 1 FROM tasks t JOIN down ON t.parent_id = down.id
    WHERE down.depth < :max_depth
)
SELECT id FROM down WHERE down.status = ANY(:allowed::text[])
ORDER BY depth DESC, id;

-- name: release_parent
-- A cancelled child no longer holds its parent back.
DELETE FROM task_deps WHERE task_id = :parent_id AND depends_on = :task_id;

-- name: unblock_task
-- :task_id, blocked, becomes ready when nothing it depends on is left undone.
UPDATE tasks SET status = 'ready', run_after = greatest(run_after, :now), updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[])
  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                  WHERE d.task_id = tasks.id AND p.status != 'done');

-- name: cancel_task
-- The caller ended the claim it read with the task. A claim committed while get_task
-- waited for the task's lock is not in what get_task returned (a join reads the older
-- snapshot); this later statement sees it, and refuses rather than strand it.
UPDATE tasks SET status = 'cancelled', updated_at = :now, finished_at = :now,
                 last_error = coalesce(:reason::text, last_error), wait_reason = NULL
WHERE id = :task_id AND status = ANY(:allowed::text[])
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = tasks.id AND c.status = 'active');

-- name: retry_task
-- FOR SHARE on the dependencies: one completing now either finishes first (and is seen
-- done) or waits for this retry to commit (and then unblocks the task it sees blocked).
UPDATE tasks
SET status = CASE WHEN EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                               WHERE d.task_id = tasks.id AND p.status != 'done'
                               FOR SHARE OF p)
                  THEN 'blocked' ELSE 'ready' END,
    attempts = 0, crashes = 0, failure_reason = NULL, finished_at = NULL, wait_reason = NULL,
    run_after = :now, updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[])
RETURNING status;

-- name: answer_task
-- A waiting task, ready again with a person's :answer (NULL: none, carry on) and the reason
-- it answered, which its next runs are told (every SET reads the row as it was).
UPDATE tasks
SET status = 'ready', answer = :answer::text, answered_reason = wait_reason,
    wait_reason = NULL, run_after = :now, updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[])
RETURNING answered_reason;

-- name: raise_task_budget
-- A waiting task's budget cap (model/budgets.py, in its payload) raised by :cost dollars
-- or :tokens tokens, in `answer`'s transaction; no row: it waits no more, or lacks the cap.
UPDATE tasks
SET payload = CASE WHEN :cost::double precision IS NOT NULL
    THEN jsonb_set(payload, '{budget,max_cost_usd}', to_jsonb(
        (payload #>> '{budget,max_cost_usd}')::double precision + :cost::double precision))
    ELSE jsonb_set(payload, '{budget,max_tokens}', to_jsonb(
        (payload #>> '{budget,max_tokens}')::bigint + :tokens::bigint)) END
WHERE id = :task_id AND status = 'waiting'
  AND payload #> CASE WHEN :cost::double precision IS NOT NULL
                      THEN '{budget,max_cost_usd}'::text[]
                      ELSE '{budget,max_tokens}'::text[] END IS NOT NULL
RETURNING payload;

-- name: set_task_priority
-- A new priority for a task that is not final; its place in the claim order follows.
UPDATE tasks SET priority = :priority, updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[]);

-- name: insert_worker
-- Refused (no row returned) while a live worker has the same namespace, host and pid:
-- the partial unique index decides, so two registering at once cannot both win.
INSERT INTO workers (id, name, hostname, pid, version, queues, kinds, max_concurrent, labels,
                     status, registered_at, last_heartbeat_at, pid_started_at, provider,
                     namespace, site)
VALUES (:id, :name, :hostname, :pid, :version, :queues::text[], :kinds::text[],
        :max_concurrent, :labels, 'starting', :now, :now, :pid_started_at, :provider,
        :namespace, :site::text)
ON CONFLICT (namespace, hostname, pid)
    WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale')
    DO NOTHING
RETURNING id;

-- name: lock_slot
-- A slot's first calls take turns (store/workers.py: slot_worker): the lock, held to
-- commit, makes the second wait for the first, and its next statement (READ COMMITTED)
-- then sees the worker the first added.
SELECT pg_advisory_xact_lock(hashtext('corral.slot'), hashtext(:namespace || '/' || :name))
    AS turn;

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
-- No lock: a heartbeat reads its worker before it extends the leases (claims before
-- workers, the lock order); claiming_worker is the locking read.
SELECT * FROM worker_view WHERE id = :worker_id
  AND (namespace = :namespace OR :namespace::text = '*');

-- name: claiming_worker
-- Locks the worker for the claim's transaction, so its capacity holds until commit; and,
-- first, the rows of queues with a max_running or rate limit, so claims that could count
-- against one take turns and the claim statement that follows (a later statement, with
-- a fresh snapshot) counts what the claim before it committed. No limits, no turns.
WITH limited AS (
    SELECT queue FROM queue_limits
    WHERE max_running IS NOT NULL OR rate IS NOT NULL
    ORDER BY queue
    FOR UPDATE)
SELECT w.* FROM workers w WHERE w.id = :worker_id
  AND (w.namespace = :namespace OR :namespace::text = '*')
  AND (SELECT count(*) FROM limited) >= 0
FOR UPDATE OF w;

-- name: list_workers
SELECT * FROM worker_view
WHERE namespace = :namespace
  AND (:statuses::text[] IS NULL OR status = ANY(:statuses::text[]))
ORDER BY registered_at, id;

-- fragment: worker_filters
-- `worker list`'s filters, each off when NULL: a worker with no queues (kinds) serves
-- every queue (kind); :labels is an object every pair of which its labels must hold.
namespace = :namespace
  AND (:statuses::text[] IS NULL OR status = ANY(:statuses::text[]))
  AND (:queue::text IS NULL OR queues = '{}' OR :queue::text = ANY(queues))
  AND (:kind::text IS NULL OR kinds = '{}' OR :kind::text = ANY(kinds))
  AND (:host::text IS NULL OR hostname = :host::text)
  AND (:labels::jsonb IS NULL OR labels @> :labels::jsonb)

-- name: find_workers
-- In registration order (seq) after the cursor :after_seq; all without :limit.
SELECT * FROM worker_view
WHERE /* fragment: worker_filters */
  AND seq > :after_seq::bigint
ORDER BY seq
LIMIT :limit;

-- name: count_workers
SELECT count(*) AS n FROM workers WHERE /* fragment: worker_filters */;

-- name: heartbeat_worker
UPDATE workers
SET last_heartbeat_at = :now,
    offline_reason = NULL,
    cpu_percent = coalesce(:cpu_percent::float8, cpu_percent),
    rss_bytes = coalesce(:rss_bytes::bigint, rss_bytes),
    agent_cpu_percent = :agent_cpu_percent::float8,
    agent_rss_bytes = :agent_rss_bytes::bigint,
    reported_active = coalesce(:active::integer, reported_active),
    completed_delta = :completed::integer,
    failed_delta = :failed::integer,
    reported_completed_total = reported_completed_total + :completed::integer,
    reported_failed_total = reported_failed_total + :failed::integer,
    status = CASE WHEN status = 'draining' THEN 'draining'
                  WHEN active > 0 THEN 'busy' ELSE 'idle' END
WHERE id = :worker_id AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- name: extend_worker_leases
UPDATE claims
SET lease_expires_at = greatest(lease_expires_at,
                                least(:now + lease_s * interval '1 second', deadline_at))
WHERE worker_id = :worker_id AND status = 'active';

-- name: worker_after_claim
UPDATE workers
SET status = CASE WHEN status NOT IN ('starting', 'idle', 'busy') THEN status
                  WHEN active > 0 THEN 'busy' ELSE 'idle' END,
    completed_total = completed_total + :completed,
    failed_total = failed_total + :failed
WHERE id = :worker_id;

-- name: set_worker_status
UPDATE workers SET status = :to_status::text, offline_reason = :reason::text
WHERE id = :worker_id AND status = ANY(:allowed::text[]);

-- name: deregister_worker
UPDATE workers
SET status = 'offline', offline_reason = :reason::text, deregistered_at = :now::timestamptz
WHERE id = :worker_id AND status = ANY(:allowed::text[]);

-- name: mark_worker
UPDATE workers SET status = :to_status::text, offline_reason = :reason::text
WHERE id = :worker_id
  AND (namespace = :namespace OR :namespace::text = '*')
  AND status = :seen::text
  AND last_heartbeat_at = :seen_heartbeat_at::timestamptz;

-- name: active_claims_of_worker
SELECT * FROM claims WHERE worker_id = :worker_id AND status = 'active' ORDER BY token;

-- name: watched_workers
SELECT * FROM worker_view
WHERE (namespace = :namespace OR :namespace::text = '*')
  AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- name: active_claims_to_check
SELECT c.token, c.task_id, c.worker_id, w.status AS worker_status, c.lease_expires_at,
       t.status AS task_status, t.attempts, t.max_attempts, t.crashes, t.retry_base_s
FROM claims c
JOIN tasks t ON t.id = c.task_id
LEFT JOIN workers w ON w.id = c.worker_id
WHERE c.status = 'active' AND (t.namespace = :namespace OR :namespace::text = '*');

-- name: orphaned_tasks
SELECT t.id, t.attempts, t.max_attempts, t.retry_base_s
FROM tasks t
WHERE t.status = 'running' AND (t.namespace = :namespace OR :namespace::text = '*')
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active');

-- name: close_claim
WITH task AS (SELECT t.id FROM tasks t JOIN claims c ON c.task_id = t.id
              WHERE c.token = :token FOR UPDATE OF t)
UPDATE claims SET status = 'released', ended_at = :now
WHERE token = :token AND status = 'active'
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = claims.task_id
                                 AND s.namespace = :namespace))
  AND task_id IN (SELECT id FROM task)
  AND NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = claims.task_id AND t.status = 'running');

-- name: fix_worker_status
UPDATE workers SET status = :to_status::text
WHERE id = :worker_id
  AND (namespace = :namespace OR :namespace::text = '*')
  AND status = :seen::text
  AND (active > 0) = (:to_status::text = 'busy');

-- name: insert_event
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, reason,
                    data)
VALUES (:now, :name, :task_id::text, :worker_id::text, :token::bigint, :from_status::text,
        :to_status::text, :actor, :reason::text, :data);

-- fragment: event_filter
-- An event is its task's namespace's, else its worker's, else the default's (the
-- orchestrator's own): kept on the event as it is written (events_namespace).
events.namespace = :namespace
  AND (:task_id::text IS NULL OR task_id = :task_id::text)
  AND (:worker_id::text IS NULL OR worker_id = :worker_id::text)
  AND (:names::text[] IS NULL OR name = ANY(:names::text[]))
  AND (:since_at::timestamptz IS NULL OR at >= :since_at::timestamptz)

-- name: list_events
-- With :before_xid, only events of transactions older than it (a follower's first page).
-- With :before_id, only events older than it (`corral events --after`: the page before).
SELECT *, xid::text AS cursor_xid FROM events
WHERE /* fragment: event_filter */
  AND id > :after_id
  AND (:before_xid::text IS NULL OR xid < :before_xid::text::xid8)
  AND id < :before_id::bigint
ORDER BY id DESC
LIMIT :limit;

-- name: count_events
SELECT count(*) AS n FROM events WHERE /* fragment: event_filter */;

-- name: events_older
-- The events page, a keyset page of the log by id: the newest :limit events that match
-- below id :before_id, newest first (by an id index, whatever the log's length).
SELECT *, xid::text AS cursor_xid FROM events
WHERE /* fragment: event_filter */
  AND id < :before_id::bigint
ORDER BY id DESC
LIMIT :limit;

-- name: events_newer
-- events_older the other way: the oldest :limit events that match above id :after_id.
SELECT *, xid::text AS cursor_xid FROM events
WHERE /* fragment: event_filter */
  AND id > :after_id::bigint
ORDER BY id
LIMIT :limit;

-- name: event_horizon
-- The follower's horizon: the oldest transaction still running in this snapshot (its xip)
-- that may be this database's, or the snapshot's xmax when none is. Every transaction
-- below it has ended, or runs in another database (pg_stat_activity says so; one it
-- cannot place counts as this database's), so the events with a lower xid are all visible
-- and no more will appear among them. `pending`: committed events at or past it.
WITH snap AS (SELECT pg_current_snapshot() AS s),
elsewhere AS (
    SELECT a.backend_xid FROM pg_stat_activity a
    WHERE a.backend_xid IS NOT NULL
      AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
),
horizon AS (
    SELECT coalesce(
        (SELECT min(x) FROM snap, pg_snapshot_xip(snap.s) AS x
         WHERE x::xid NOT IN (SELECT backend_xid FROM elsewhere)),
        (SELECT pg_snapshot_xmax(snap.s) FROM snap)) AS xid
)
SELECT h.xid::text AS xid, 0::bigint AS id,
       coalesce((SELECT e.xid >= h.xid FROM events e ORDER BY e.xid DESC LIMIT 1), false)
           AS pending
FROM horizon h;

-- name: events_after
-- The events after a follower's cursor (xid, id), up to its horizon, in cursor order.
SELECT *, xid::text AS cursor_xid FROM events
WHERE (xid, id) > (:after_xid::text::xid8, :after_id::bigint)
  AND xid < :horizon_xid::text::xid8
  AND /* fragment: event_filter */
ORDER BY xid, id
LIMIT :limit;

-- name: event_tallies
-- What /metrics counts in the log, over the events after the cursor (:after_xid, :after_id)
-- up to the horizon (as events_after): task.completed and task.failed, the repairs of
-- :actor (the reconciler) named in :repairs, and the queue wait of each claim
-- (task.claimed: its claim's claimed_at - ready_at) and the duration of each finished run
-- (run.finished), each by its task's queue and kind. A measured event's bucket is the
-- number of its bounds (:wait_bounds or :run_bounds) below its seconds, NULL where the
-- claim has no ready_at (made before version 15). One row per group, not per event, so a
-- first read of a long log sends a few rows. The CTE is materialized: inlined, each
-- measured event's lookups ran again for its bucket (bench/metrics_scrape.py).
WITH fresh AS MATERIALIZED (
    SELECT e.name, e.task_id,
           (CASE e.name
                WHEN 'task.claimed'
                    THEN greatest(0, extract(epoch FROM c.claimed_at - c.ready_at))
                WHEN 'run.finished'
                    THEN greatest(0, extract(epoch FROM r.finished_at - r.started_at))
            END)::float8 AS seconds
    FROM events e
    LEFT JOIN claims c ON e.name = 'task.claimed' AND c.token = e.token
    LEFT JOIN runs r ON e.name = 'run.finished' AND r.id = e.data ->> 'run_id'
    WHERE (e.xid, e.id) > (:after_xid::text::xid8, :after_id::bigint)
      AND e.xid < :horizon_xid::text::xid8
      AND (e.name IN ('task.completed', 'task.failed', 'task.claimed', 'run.finished')
           OR (e.actor = :actor::text AND e.name = ANY(:repairs::text[])))
)
SELECT f.name, coalesce(t.queue, '') AS queue, coalesce(t.kind, '') AS kind,
       CASE WHEN f.seconds IS NULL THEN NULL
            WHEN f.name = 'task.claimed'
                THEN (SELECT count(*) FROM unnest(:wait_bounds::float8[]) AS b WHERE b < f.seconds)
            ELSE (SELECT count(*) FROM unnest(:run_bounds::float8[]) AS b WHERE b < f.seconds)
       END AS bucket,
       count(*) AS n, coalesce(sum(round(f.seconds * 1000000)), 0) AS micros
FROM fresh f LEFT JOIN tasks t ON t.id = f.task_id
GROUP BY 1, 2, 3, 4;

-- name: start_run
INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, prompt, command, cwd,
                  base_commit, transcript_path, stderr_path)
VALUES (:id, :task_id, :worker_id, :token, :attempt, :now, :prompt::text, :command, :cwd,
        :base_commit::text, :transcript_path::text, :stderr_path::text)
RETURNING *;

-- name: finish_run
UPDATE runs
SET finished_at = :now, outcome = :outcome, exit_code = :exit_code::integer,
    error = :error::text, usage = :usage, final_commit = :final_commit::text
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
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
                 WHEN last_progress_at IS NULL THEN :error::text || ', before its run started'
                 ELSE :error::text END
WHERE worker_id = :worker_id AND finished_at IS NULL
RETURNING id, task_id, token, outcome, error;

-- name: record_usage
-- The usage an agent's run has streamed so far, kept while its claim is active: what a
-- run that never reports (its runner killed) spent still counts toward its task's budget
-- and its day's caps. Its report, with the agent's own totals, replaces it.
UPDATE runs SET usage = :usage
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND EXISTS (SELECT 1 FROM claims c WHERE c.token = runs.token AND c.status = 'active');

-- name: launch_run
-- A run about to start its command (or function): allowed only while its claim is still
-- active, and recorded as its first sign of life (last_progress_at), in one compare-and-
-- set. A run never launched keeps last_progress_at NULL, which is how a reconciler that
-- declares its worker dead knows that nothing ran (finish_runs_of_worker).
UPDATE runs SET last_progress_at = :now
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND EXISTS (SELECT 1 FROM claims c WHERE c.token = runs.token AND c.status = 'active');

-- name: mark_waiting
-- Flagged once an episode: record_progress clears the flag.
UPDATE runs SET stalled_at = :now, waiting = :reason
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND stalled_at IS NULL
RETURNING task_id, worker_id, token, last_progress_at;

-- name: record_progress
UPDATE runs SET last_progress_at = :now, progress = coalesce(:progress::text, progress),
                stalled_at = NULL, waiting = NULL
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace));

-- name: get_run
SELECT * FROM runs WHERE id = :run_id
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace));

-- name: list_runs
-- Newest first, as they were opened (seq), before the cursor :before_seq.
SELECT * FROM runs
WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.id = runs.task_id AND t.namespace = :namespace)
  AND (:task_id::text IS NULL OR task_id = :task_id::text)
  AND (:worker_id::text IS NULL OR worker_id = :worker_id::text)
  AND seq < :before_seq::bigint
ORDER BY seq DESC
LIMIT :limit;

-- name: count_runs
SELECT count(*) AS n FROM runs
WHERE EXISTS (SELECT 1 FROM tasks t WHERE t.id = runs.task_id AND t.namespace = :namespace)
  AND (:task_id::text IS NULL OR task_id = :task_id::text)
  AND (:worker_id::text IS NULL OR worker_id = :worker_id::text);

-- name: record_agent_run
-- What an agent's run says of itself, each field kept when NULL; only while it runs.
UPDATE runs
SET agent = coalesce(:agent::text, agent),
    session_id = coalesce(:session_id::text, session_id),
    resumed_from = coalesce(:resumed_from::text, resumed_from),
    stop_reason = coalesce(:stop_reason::text, stop_reason)
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace));

-- name: last_session
-- The newest run of the task that recorded an agent session: what a new run may resume.
SELECT id, session_id, agent, cwd FROM runs
WHERE task_id = :task_id
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND session_id IS NOT NULL
ORDER BY started_at DESC, seq DESC
LIMIT 1;

-- name: unfinished_runs
SELECT * FROM runs WHERE worker_id = :worker_id
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND finished_at IS NULL
ORDER BY started_at, seq;

-- name: queue_room
-- How many tasks wait in a queue with a max_ready limit (no row: no limit), counted under
-- the lock of its limits row (corral_queue_room, schema.sql).
SELECT max_ready, waiting FROM corral_queue_room(:namespace, :queue);

-- name: set_queue_limits
-- Each limit is replaced when its keep_ flag is false, else kept; NULL removes a limit.
INSERT INTO queue_limits AS l (namespace, queue, max_ready, max_running, rate, updated_at)
VALUES (:namespace, :queue, :max_ready::integer, :max_running::integer, :rate::float8, :now)
ON CONFLICT (namespace, queue) DO UPDATE SET
    max_ready = CASE WHEN :keep_max_ready::boolean THEN l.max_ready ELSE excluded.max_ready END,
    max_running = CASE WHEN :keep_max_running::boolean THEN l.max_running
                       ELSE excluded.max_running END,
    rate = CASE WHEN :keep_rate::boolean THEN l.rate ELSE excluded.rate END,
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
       (SELECT count(*) FROM claims c JOIN tasks t ON t.id = c.task_id
        WHERE t.namespace = :namespace AND t.queue = n.queue
          AND c.claimed_at > :now - interval '60 seconds') AS started_last_minute,
       l.max_ready, l.max_running, l.rate
FROM names n LEFT JOIN queue_limits l ON l.namespace = :namespace AND l.queue = n.queue
WHERE :queue::text IS NULL OR n.queue = :queue::text
ORDER BY n.queue;

-- name: set_task_branch
UPDATE tasks SET branch = :branch WHERE id = :task_id;

-- name: get_review
SELECT * FROM reviews WHERE task_id = :task_id
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = reviews.task_id
                                 AND s.namespace = :namespace));

-- name: branched_tasks
-- Every task that ever had a branch (`corral branches`).
SELECT * FROM task_view WHERE branch IS NOT NULL
  AND (namespace = :namespace OR :namespace::text = '*')
  ORDER BY seq;

-- name: reviews_of
SELECT * FROM reviews
WHERE (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = reviews.task_id
                                         AND s.namespace = :namespace))
  AND task_id = ANY(:ids::text[]);

-- name: save_review
-- outcome_at: now when :stamp (the outcome was recorded now), else as it was.
INSERT INTO reviews (task_id, base_ref, worktree_path, note, pr_url, approved_commit,
                     approve_note, changes_note, conflict_files, merged_commit, outcome,
                     backup_refs, branch_deleted, pr_state, outcome_at, tests_disabled)
VALUES (:task_id, :base_ref::text, :worktree_path::text, :note::text, :pr_url::text,
        :approved_commit::text, :approve_note::text, :changes_note::text,
        :conflict_files::jsonb, :merged_commit::text, :outcome::text, :backup_refs::jsonb,
        :branch_deleted::boolean, :pr_state::text, CASE WHEN :stamp::boolean THEN :now END,
        :tests_disabled::jsonb)
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
SET status = :to_status::text, updated_at = :now,
    finished_at = CASE WHEN :to_status::text = 'done' THEN :now END
WHERE id = :task_id AND status = ANY(:allowed::text[]);

-- name: review_wait_task
-- A task in review waiting for a person (its pull request's checks failed past its verify
-- retries), with a fresh attempt budget as reopen_task gives: review rounds are not
-- failures; an earlier answer forgotten.
UPDATE tasks
SET status = 'waiting', attempts = 0, crashes = 0, wait_reason = :reason::text, answer = NULL,
    answered_reason = NULL, updated_at = :now
WHERE id = :task_id AND status = ANY(:allowed::text[]);

-- name: reopen_task
-- Back to work on the same branch (changes requested, a merge conflict), with a fresh
-- attempt budget: review rounds are not failures.
UPDATE tasks
SET status = 'ready', attempts = 0, crashes = 0, failure_reason = NULL,
    last_error = coalesce(:reason::text, last_error), run_after = :now, updated_at = :now,
    finished_at = NULL
WHERE id = :task_id AND status = ANY(:allowed::text[]);

-- name: any_unmarked_stale_review
-- Whether note_stale_reviews has anything to mark: read first, so that a pass with nothing
-- to mark takes no write lock.
SELECT EXISTS (
    SELECT 1 FROM tasks t LEFT JOIN reviews r ON r.task_id = t.id
    WHERE t.status IN ('in_review', 'approved') AND t.updated_at <= :now - :stale_after_s::float8 * interval '1 second'
      AND r.stale_noted_at IS NULL
) AS found;

-- name: note_stale_reviews
-- Marks each review waiting longer than :stale_after_s (its task in_review or approved,
-- unchanged since) that has no mark yet, and answers those just marked: the upsert's
-- compare-and-set (`stale_noted_at IS NULL`) lets one of two passes at once mark it.
-- A task that completed into review without a branch has no review row until now.
INSERT INTO reviews (task_id, stale_noted_at)
SELECT t.id, :now FROM tasks t
WHERE t.status IN ('in_review', 'approved') AND t.updated_at <= :now - :stale_after_s::float8 * interval '1 second'
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
-- Readers follow an inbox by id (`msg inbox --follow` asks for ids after the last it saw),
-- so ids must become visible in order: the lock, held to commit, makes senders take
-- turns, and a message's id is drawn only once the one before it has committed.
-- A key sent before: nothing inserted, no row returned (message_by_key finds that one).
INSERT INTO messages (at, sender, recipient, type, body, namespace, idempotency_key)
SELECT :now, :sender, :recipient, :type, :body, :namespace, :key
FROM (SELECT pg_advisory_xact_lock(hashtext('corral.model.messages'))) AS turn
ON CONFLICT (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id;

-- name: message_by_key
SELECT id FROM messages WHERE namespace = :namespace AND idempotency_key = :key;

-- name: list_messages
SELECT m.*, a.at AS acked_at, a.actor AS acked_by
FROM messages m LEFT JOIN message_acks a ON a.message_id = m.id
WHERE m.namespace = :namespace
  AND (:recipient::text IS NULL OR m.recipient = :recipient::text)
  AND m.id > :after_id
  AND (:unacked::integer = 0 OR a.message_id IS NULL)
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
       OR (pid IS NOT DISTINCT FROM :seen_pid::integer
           AND host IS NOT DISTINCT FROM :seen_host::text
           AND started_at IS NOT DISTINCT FROM :seen_started_at::timestamptz
           AND heartbeat_at IS NOT DISTINCT FROM :seen_heartbeat_at::timestamptz))
RETURNING *;

-- name: set_orchestrator_status
UPDATE orchestrator
SET status = :to_status::text,
    stopped_at = CASE WHEN :to_status::text = 'stopped' THEN :now ELSE stopped_at END
WHERE id = 1 AND pid = :pid AND host = :host
  AND status = ANY(:allowed::text[])
RETURNING *;

-- name: beat_orchestrator
UPDATE orchestrator
SET heartbeat_at = :now, slots = :slots,
    last_reconcile_at = CASE WHEN :reconciled::boolean THEN :now ELSE last_reconcile_at END
WHERE id = 1 AND pid = :pid AND host = :host
  AND status IN ('starting', 'running', 'stopping');

-- name: request_orchestrator_stop
UPDATE orchestrator
SET status = 'stopping', stop_timeout_s = :stop_timeout_s
WHERE id = 1 AND status = ANY(:allowed::text[])
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
   OR (orchestrators.pid = :seen_pid::integer
       AND orchestrators.started_at = :seen_started_at::timestamptz
       AND orchestrators.heartbeat_at = :seen_heartbeat_at::timestamptz)
RETURNING *;

-- name: beat_orchestrators
UPDATE orchestrators
SET heartbeat_at = :now, role = :role::text, status = :to_status::text,
    stopped_at = CASE WHEN :to_status::text = 'stopped' THEN :now ELSE NULL END
WHERE host = :host AND pid = :pid AND started_at = :started_at
  AND status IN ('running', 'stopping');

-- name: demote_orchestrators
UPDATE orchestrators SET role = 'standby' WHERE role = 'leader' AND host <> :host;

-- PostgreSQL only, each run on a connection of its own rather than in a transaction: the
-- listener of an idle runner, and the leader's session lock, held while that connection
-- lives and released by the server when it ends (a leader killed by SIGKILL included).

-- name: listen_ready
-- The channel of this session's schema (tasks_notify_ready); LISTEN takes no parameter.
DO $$ BEGIN EXECUTE 'LISTEN ' || quote_ident('corral_ready_' || md5(current_schema())); END $$;

-- name: listen_events
-- The channel of this session's schema (events_notify), the session listed as a follower
-- (and the followers that died without leaving struck off).
DO $$ BEGIN
    DELETE FROM event_followers WHERE pid NOT IN (SELECT a.pid FROM pg_stat_activity a);
    INSERT INTO event_followers (pid) VALUES (pg_backend_pid()) ON CONFLICT DO NOTHING;
    EXECUTE 'LISTEN ' || quote_ident('corral_events_' || md5(current_schema()));
END $$;

-- name: leave_events
DELETE FROM event_followers WHERE pid = pg_backend_pid();

-- name: try_leader_lock
SELECT pg_try_advisory_lock(hashtext('corral.leader'), hashtext(current_schema()));

-- Given up before the session closes, so that the lock is free when release() returns
-- (the server ends a closed session a moment later).
-- name: release_leader_lock
SELECT pg_advisory_unlock_all();

-- Runs whose details are known only after their claim (a worktree made outside it).

-- name: set_run_start
UPDATE runs
SET command = :command, cwd = :cwd, prompt = :prompt::text,
    transcript_path = :transcript_path::text, stderr_path = :stderr_path::text,
    base_commit = :base_commit::text
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace));

-- name: keep_task_at_site
-- The site of the worktree run :run_id entered (RunStart.site) is its task's, while that
-- run is unfinished (so its claim is held): the task is claimed there while it can be.
UPDATE tasks SET site = :site::text
WHERE (namespace = :namespace OR :namespace::text = '*')
  AND id = (SELECT r.task_id FROM runs r WHERE r.id = :run_id AND r.finished_at IS NULL);

-- name: set_run_paths
UPDATE runs SET transcript_path = :transcript_path::text, stderr_path = :stderr_path::text
WHERE id = :run_id AND finished_at IS NULL
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace));

-- name: insert_events
-- :rows holds one object per event (Tx.send_rows), with the columns of insert_event (data
-- as JSON); inserted in their order, so their ids are too.
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, reason,
                    data)
SELECT :now, e->>'name', e->>'task_id', e->>'worker_id', (e->>'token')::bigint,
       e->>'from_status', e->>'to_status', e->>'actor', e->>'reason',
       nullif(e->'data', 'null'::jsonb)
FROM jsonb_array_elements(:rows::jsonb) WITH ORDINALITY AS x(e, n)
ORDER BY n;

-- The exchange (store/exchange.py, store/postgres/exchange.py): every claim and every
-- reported outcome, one call of corral_exchange (functions.sql) in a transaction of its own.

-- name: exchange_on_server
SELECT * FROM corral_exchange(:worker_id::text, :reports::jsonb, :limit::integer,
                              :task_id::text, :kinds::text[], :queues::text[],
                              :lease_s::float8, :run::jsonb, :run_ids::text[],
                              :claiming::text[], :complete::text[], :fail::text[],
                              :defer::text[], :release::text[], :wait::text[],
                              :unblock::text[], :completed_to::text[], :return_tasks::boolean,
                              :now, :namespace::text);

-- name: describe_runs
-- What a runner knows of each new run only once its task is claimed (:runs: {run_id,
-- command, cwd, prompt, transcript_path, stderr_path, base_commit}).
UPDATE runs u
SET command = coalesce(r->'command', '[]'), cwd = r->>'cwd', prompt = r->>'prompt',
    transcript_path = r->>'transcript_path', stderr_path = r->>'stderr_path',
    base_commit = r->>'base_commit'
FROM jsonb_array_elements(:runs::jsonb) AS r
WHERE u.id = r->>'run_id' AND u.finished_at IS NULL;

-- name: claimable_task
-- Whether the worker may claim task :task_id now (a refused claim asks, to say why).
SELECT t.id FROM tasks t
WHERE t.id = :task_id
  AND t.namespace = (SELECT w.namespace FROM workers w WHERE w.id = :worker_id::text)
  AND corral_may_claim(t, :worker_id::text, :worker_name::text, :kinds::text[],
                       :queues::text[],
                       corral_held_queues((SELECT w.namespace FROM workers w
                                           WHERE w.id = :worker_id::text), :now), :now);

-- name: note_reported
-- What the task's command (or anyone with its token) reported of it, on the open run of
-- that claim: the run records it when it finishes, however its runner ends.
UPDATE runs SET reported = :reported::text
WHERE worker_id = :holder AND token = :token AND finished_at IS NULL;

-- Provider accounts (store/providers.py).

-- name: provider_states
-- Every provider account with a row or a live worker (or just :name), with its load.
WITH names AS (
    SELECT name FROM providers WHERE namespace = :namespace
    UNION SELECT provider FROM workers
    WHERE namespace = :namespace AND provider IS NOT NULL
      AND status IN ('starting', 'idle', 'busy', 'draining', 'stale')
)
SELECT n.name, p.max_running, coalesce(p.paused, false) AS paused, p.parked_until,
       p.parked_at, p.park_reason,
       (SELECT coalesce(sum(w.active), 0) FROM workers w
        WHERE w.namespace = :namespace AND w.provider = n.name)::integer AS running,
       (SELECT count(*) FROM workers w
        WHERE w.namespace = :namespace AND w.provider = n.name
          AND w.status IN ('starting', 'idle', 'busy', 'draining', 'stale'))::integer AS workers
FROM names n LEFT JOIN providers p ON p.namespace = :namespace AND p.name = n.name
WHERE :name::text IS NULL OR n.name = :name::text
ORDER BY n.name;

-- name: set_provider
-- max_running is replaced unless keep_max_running; paused, when not NULL; unpark clears a park.
INSERT INTO providers AS p (namespace, name, max_running, paused, updated_at)
VALUES (:namespace, :name, :max_running::integer, coalesce(:paused::boolean, false), :now)
ON CONFLICT (namespace, name) DO UPDATE SET
    max_running = CASE WHEN :keep_max_running::boolean THEN p.max_running
                       ELSE excluded.max_running END,
    paused = coalesce(:paused::boolean, p.paused),
    parked_until = CASE WHEN :unpark::boolean THEN NULL ELSE p.parked_until END,
    park_reason = CASE WHEN :unpark::boolean THEN NULL ELSE p.park_reason END,
    updated_at = :now;

-- name: park_provider
-- Parked until :until, unless already parked at least that long: a row only when it changed.
INSERT INTO providers AS p (namespace, name, parked_until, parked_at, park_reason, updated_at)
VALUES (:namespace, :name, :until, :now, :reason, :now)
ON CONFLICT (namespace, name) DO UPDATE SET
    parked_until = excluded.parked_until, parked_at = :now,
    park_reason = excluded.park_reason, updated_at = :now
WHERE p.parked_until IS NULL OR p.parked_until < excluded.parked_until
RETURNING name, parked_until;

-- name: usage_by
-- Runs started since :since (NULL: all), of task :task_id (NULL: any), grouped by :by:
-- how many, how many reported usage, the sums of the usage they reported (a key nobody
-- reported sums to NULL, never 0), wall time and attempts; 'total': one group of every
-- run. Largest cost first.
SELECT CASE :by::text WHEN 'task' THEN r.task_id WHEN 'queue' THEN t.queue WHEN 'kind' THEN t.kind
                 WHEN 'agent' THEN coalesce(r.agent, '-')
                 WHEN 'provider' THEN coalesce(w.provider, '-')
                 WHEN 'total' THEN 'total'
                 ELSE to_char(r.started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') END AS key,
       count(*) AS runs,
       count(r.usage) AS with_usage,
       sum(CASE WHEN jsonb_typeof(r.usage -> 'input_tokens') = 'number' THEN (r.usage ->> 'input_tokens')::numeric END)::bigint AS input_tokens,
       sum(CASE WHEN jsonb_typeof(r.usage -> 'output_tokens') = 'number' THEN (r.usage ->> 'output_tokens')::numeric END)::bigint AS output_tokens,
       sum(CASE WHEN jsonb_typeof(r.usage -> 'cache_read_tokens') = 'number' THEN (r.usage ->> 'cache_read_tokens')::numeric END)::bigint AS cache_read_tokens,
       sum(CASE WHEN jsonb_typeof(r.usage -> 'cache_write_tokens') = 'number' THEN (r.usage ->> 'cache_write_tokens')::numeric END)::bigint AS cache_write_tokens,
       sum(CASE WHEN jsonb_typeof(r.usage -> 'cost_usd') = 'number' THEN (r.usage ->> 'cost_usd')::numeric END)::float8 AS cost_usd,
       sum(extract(epoch FROM coalesce(r.finished_at, :now) - r.started_at))::float8 AS wall_s,
       count(DISTINCT r.task_id) AS tasks
FROM runs r JOIN tasks t ON t.id = r.task_id JOIN workers w ON w.id = r.worker_id
WHERE (t.namespace = :namespace OR :namespace::text = '*')
  AND (:since::timestamptz IS NULL OR r.started_at >= :since::timestamptz) AND (:task_id::text IS NULL OR r.task_id = :task_id::text)
GROUP BY 1
ORDER BY 8 DESC NULLS LAST, 1
LIMIT :limit;

-- name: waiting_runs
-- The unfinished runs flagged waiting for a person, oldest first.
SELECT id, task_id, worker_id, waiting, stalled_at FROM runs
WHERE (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = runs.task_id
                                 AND s.namespace = :namespace))
  AND waiting IS NOT NULL AND finished_at IS NULL
ORDER BY started_at;

-- API tokens (store/tokens.py).

-- name: insert_token
INSERT INTO tokens (id, name, role, queues, secret_hash, created_at, expires_at, namespace)
VALUES (:id, :name, :role, :queues, :secret_hash, :now,
        :now + :expires_s::float8 * interval '1 second', :namespace)
RETURNING *;

-- name: list_tokens
SELECT * FROM tokens WHERE namespace = :namespace ORDER BY created_at, name;

-- name: token_by_id
SELECT * FROM tokens WHERE id = :id;

-- name: revoke_token
UPDATE tokens SET revoked_at = :now WHERE name = :name
  AND (namespace = :namespace OR :namespace::text = '*')
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
VALUES (:id, :secret_hash, :token_id, :now, :now + :expires_s::float8 * interval '1 second');

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
-- The dashboard's filters of the task list (task_page_*); each is off when NULL.
namespace = :namespace
  AND (:statuses::text[] IS NULL OR status = ANY(:statuses::text[]))
  AND (:queue::text IS NULL OR queue = :queue::text)
  AND (:kind::text IS NULL OR kind = :kind::text)
  AND (:assignee::text IS NULL OR assignee = :assignee::text)
  AND (:label_key::text IS NULL OR labels ->> :label_key::text = :label_value::text)
  AND (:pattern::text IS NULL OR title ILIKE :pattern::text OR description ILIKE :pattern::text
       OR payload::text ILIKE :pattern::text)

-- name: task_page_newest
-- A page of the dashboard's task list, newest first, after the cursor :after_seq (none:
-- the first page): a keyset read on seq, as fast for the thousandth page as the first.
-- :pattern is a LIKE pattern ('%text%', its % and _ escaped with \).
SELECT * FROM task_view
WHERE /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR seq < :after_seq::bigint)
ORDER BY seq DESC
LIMIT :limit;

-- name: task_page_oldest
-- task_page_newest, oldest first.
SELECT * FROM task_view
WHERE /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR seq > :after_seq::bigint)
ORDER BY seq
LIMIT :limit;

-- name: task_page_priority
-- task_page_newest in claim order (priority, highest first, then oldest), after the
-- cursor (:after_priority, :after_seq).
SELECT * FROM task_view
WHERE /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR priority < :after_priority::bigint
       OR (priority = :after_priority::bigint AND seq > :after_seq::bigint))
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: task_page_priority_of_status
-- task_page_priority of the tasks of one status, :status: for ready tasks, read in the
-- claim order's partial index (tasks_ready_order) rather than sorted after a scan.
SELECT * FROM task_view
WHERE status = :status::text AND /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR priority < :after_priority::bigint
       OR (priority = :after_priority::bigint AND seq > :after_seq::bigint))
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: task_page_priority_back
-- task_page_priority read backwards from the cursor: the page before it, last row first
-- (the store turns it round).
SELECT * FROM task_view
WHERE /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR priority > :after_priority::bigint
       OR (priority = :after_priority::bigint AND seq < :after_seq::bigint))
ORDER BY priority, seq DESC
LIMIT :limit;

-- name: task_page_priority_of_status_back
-- task_page_priority_of_status read backwards from the cursor.
SELECT * FROM task_view
WHERE status = :status AND /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR priority > :after_priority::bigint
       OR (priority = :after_priority::bigint AND seq < :after_seq::bigint))
ORDER BY priority, seq DESC
LIMIT :limit;

-- fragment: task_text_match
-- The tasks whose title, description or payload holds the phrase (an ILIKE pattern of
-- the text, its wildcards escaped), found in task_text by its trigram index
-- task_text_trigrams (schema version 21) when pg_trgm could be created.
seq IN (SELECT seq FROM task_text WHERE body ILIKE :phrase::text)

-- name: task_search_newest
-- task_page_newest of the tasks that hold a text: the text index finds them, so a search
-- costs what its matches cost, not what the table holds.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR seq < :after_seq::bigint)
ORDER BY seq DESC
LIMIT :limit;

-- name: task_search_oldest
-- task_search_newest, oldest first.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR seq > :after_seq::bigint)
ORDER BY seq
LIMIT :limit;

-- name: task_search_priority
-- task_search_newest in claim order.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR priority < :after_priority::bigint
       OR (priority = :after_priority::bigint AND seq > :after_seq::bigint))
ORDER BY priority DESC, seq
LIMIT :limit;

-- name: task_search_priority_back
-- task_search_priority read backwards from the cursor.
SELECT * FROM task_view
WHERE /* fragment: task_text_match */
  AND /* fragment: task_page_filters */
  AND (:after_seq::bigint IS NULL OR priority > :after_priority::bigint
       OR (priority = :after_priority::bigint AND seq < :after_seq::bigint))
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
WHERE d.depends_on = :task_id AND (:namespace::text = '*' OR t.namespace = :namespace)
ORDER BY t.seq
LIMIT :limit;

-- name: task_timeline
-- The newest :limit events of task :task_id, newest first (events_by_task).
SELECT *, xid::text AS cursor_xid FROM events
WHERE task_id = :task_id
  AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = events.task_id
                                 AND s.namespace = :namespace))
ORDER BY id DESC
LIMIT :limit;

-- name: task_titles
-- The titles of the tasks of :ids (the events page's task column), in the namespace alone.
SELECT id, title FROM tasks
WHERE id = ANY(:ids::text[])
  AND (:namespace::text = '*' OR namespace = :namespace);

-- name: claim_holders
-- The workers that held the claims of :tokens (an actor `token:N`: the By columns), by
-- name; a claim whose worker is of another namespace is not named.
SELECT c.token, w.name FROM claims c JOIN workers w ON w.id = c.worker_id
WHERE c.token = ANY(:tokens::bigint[])
  AND (:namespace::text = '*' OR w.namespace = :namespace);

-- name: worker_names
-- The names of the workers of :ids (the By columns, the events page's worker column), in
-- the namespace alone.
SELECT id, name FROM workers
WHERE id = ANY(:ids::text[])
  AND (:namespace::text = '*' OR namespace = :namespace);

-- name: events_per_minute
-- How many events of each of :names were written in each minute from :since_at on (the
-- overview's chart), by events_by_name_at.
SELECT name, floor(extract(epoch FROM at - :since_at::timestamptz) / 60)::int AS minute, count(*) AS n
FROM events
WHERE namespace = :namespace
  AND name = ANY(:names::text[]) AND at >= :since_at::timestamptz
GROUP BY name, minute;

-- Retention (store/retention.py). Finished tasks last changed before :cutoff, newest
-- first (a dependent finishes after what it depends on, so it goes in an earlier batch),
-- none that a task still kept depends on.
-- name: prunable_tasks
SELECT t.id FROM tasks t
WHERE t.status = ANY(:final::text[]) AND t.updated_at < :cutoff::timestamptz
  AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks u ON u.id = d.task_id
                  WHERE d.depends_on = t.id
                    AND (u.status <> ALL(:final::text[]) OR u.updated_at >= :cutoff::timestamptz))
  AND (:unlanded::boolean OR NOT EXISTS (SELECT 1 FROM reviews r WHERE r.task_id = t.id
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
  WHERE t.status = ANY(:final::text[]) AND t.updated_at < :tasks_cutoff::timestamptz
    AND (:unlanded::boolean OR NOT EXISTS (SELECT 1 FROM reviews r WHERE r.task_id = t.id
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
SELECT token FROM claims WHERE task_id = ANY(:ids::text[]);

-- The batch's compare-and-set: still finished, still unchanged since before :cutoff.
-- name: still_prunable
SELECT id FROM tasks t
WHERE t.id = ANY(:ids::text[]) AND t.status = ANY(:final::text[])
  AND t.updated_at < :cutoff::timestamptz
  AND (:unlanded::boolean OR NOT EXISTS (SELECT 1 FROM reviews r WHERE r.task_id = t.id
                                   AND r.backup_refs IS NOT NULL
                                   AND coalesce(r.outcome, '') <> 'landed'))
FOR UPDATE OF t;

-- name: dependents_of
SELECT task_id, depends_on FROM task_deps WHERE depends_on = ANY(:ids::text[]);

-- name: run_files_of
SELECT id, transcript_path, stderr_path FROM runs WHERE task_id = ANY(:ids::text[]);

-- name: insert_artifact
-- Once per file of a run: a second record of the same path (a retried report) changes nothing.
INSERT INTO run_artifacts (run_id, path, size_bytes, sha256, skipped)
VALUES (:run_id, :path, :size_bytes, :sha256, :skipped)
ON CONFLICT (run_id, path) DO NOTHING;

-- name: artifacts_of_run
SELECT path, size_bytes, sha256, skipped FROM run_artifacts WHERE run_id = :run_id
  AND EXISTS (SELECT 1 FROM runs r WHERE r.id = run_artifacts.run_id
    AND (:namespace::text = '*' OR EXISTS (SELECT 1 FROM tasks s WHERE s.id = r.task_id
                                   AND s.namespace = :namespace))
    ) ORDER BY path;

-- name: delete_artifacts_of
DELETE FROM run_artifacts
WHERE run_id IN (SELECT id FROM runs WHERE task_id = ANY(:ids::text[]));

-- name: delete_runs_of
DELETE FROM runs WHERE task_id = ANY(:ids::text[]);

-- name: delete_claims_of
DELETE FROM claims WHERE token = ANY(:tokens::bigint[]) AND task_id = ANY(:ids::text[]);

-- The backup refs of tasks whose work never landed, read as retention deletes them (with
-- --with-unlanded-work): each is named in a `task.pruned_unlanded` event.
-- name: unlanded_backups_of
SELECT task_id, backup_refs FROM reviews
WHERE task_id = ANY(:ids::text[]) AND backup_refs IS NOT NULL
  AND coalesce(outcome, '') <> 'landed'
ORDER BY task_id;

-- name: delete_reviews_of
DELETE FROM reviews WHERE task_id = ANY(:ids::text[]);

-- name: delete_dependencies_of
DELETE FROM task_deps WHERE task_id = ANY(:ids::text[]);

-- name: delete_tasks
DELETE FROM tasks WHERE id = ANY(:ids::text[]);

-- The first event at or after :cutoff (read before the deletes: a scan of the older ones).
-- name: first_event_kept
SELECT id FROM events WHERE at >= :cutoff::timestamptz ORDER BY id LIMIT 1;

-- name: last_event_id
SELECT coalesce(max(id), 0) AS id FROM events;

-- Events by id, the log's order: the oldest :limit before id :boundary.
-- name: delete_events_before
DELETE FROM events
WHERE id IN (SELECT id FROM events WHERE id < :boundary ORDER BY id LIMIT :limit);

-- What delete_events_before deletes, batch after batch, up to :boundary.
-- name: count_events_before
SELECT count(*) AS n FROM events WHERE id < :boundary;

-- Workers gone (dead, offline) and silent since before :cutoff that no claim or run names
-- (read before the deletes: a gone worker never claims again).
-- name: prunable_workers
SELECT w.id FROM workers w
WHERE w.status IN ('dead', 'offline') AND w.last_heartbeat_at < :cutoff::timestamptz
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.worker_id = w.id)
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.worker_id = w.id);

-- The gone workers a pass deletes after its tasks: claims and runs of going tasks go first.
-- name: count_prunable_workers
/* fragment: going_tasks */
SELECT count(*) AS n FROM workers w
WHERE w.status IN ('dead', 'offline') AND w.last_heartbeat_at < :cutoff::timestamptz
  AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.worker_id = w.id
                    AND c.task_id NOT IN (SELECT id FROM going))
  AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.worker_id = w.id
                    AND r.task_id NOT IN (SELECT id FROM going));

-- name: delete_workers
DELETE FROM workers
WHERE id = ANY(:ids::text[]) AND status IN ('dead', 'offline')
  AND last_heartbeat_at < :cutoff::timestamptz;

-- Schedules (store/schedules.py). A schedule is read with its last fire's task's status.

-- fragment: schedule_columns
SELECT s.*, t.status AS last_task_status FROM schedules s LEFT JOIN tasks t ON t.id = s.last_task_id

-- name: insert_schedule
INSERT INTO schedules (id, cron, timezone, template, overlap, max_catchup, catchup_window_s,
                       next_fire_at, created_at, updated_at, namespace)
VALUES (:schedule_id, :cron, :timezone, :template, :overlap, :max_catchup,
        :catchup_window_s::float8, :next_fire_at::timestamptz, :now, :now, :namespace)
ON CONFLICT (id) DO NOTHING
RETURNING id;

-- name: get_schedule
/* fragment: schedule_columns */ WHERE s.id = :schedule_id
  AND (s.namespace = :namespace OR :namespace::text = '*');

-- name: list_schedules
/* fragment: schedule_columns */ WHERE s.namespace = :namespace ORDER BY s.id;

-- name: due_schedules
-- Walks schedules_due from the oldest due time: its cost is the due schedules', whatever
-- the number of schedules or of past fires.
/* fragment: schedule_columns */
WHERE NOT s.paused AND s.next_fire_at <= :now
  AND (s.namespace = :namespace OR :namespace::text = '*')
ORDER BY s.next_fire_at
LIMIT :limit;

-- name: lock_schedule
SELECT * FROM schedules WHERE id = :schedule_id
  AND (namespace = :namespace OR :namespace::text = '*')
  FOR UPDATE;

-- name: advance_schedules
-- The compare-and-set of a scheduler pass, for a batch of schedules at once (:plans, a JSON
-- array; instants in seconds since the epoch): a schedule is moved on only if no other
-- pass handled it since this one read it (one that waited on the row lock re-reads it),
-- and comes back with its last task's status.
UPDATE schedules s
SET next_fire_at = to_timestamp((p ->> 'next_fire_at')::float8),
    last_fire_at = coalesce(to_timestamp((p ->> 'last_fire_at')::float8), s.last_fire_at),
    updated_at = :now
FROM jsonb_array_elements(:plans::jsonb) AS p
WHERE s.id = p ->> 'schedule_id' AND s.next_fire_at = to_timestamp((p ->> 'seen')::float8)
  AND NOT s.paused AND (s.namespace = :namespace OR :namespace::text = '*')
RETURNING s.*, (SELECT status FROM tasks t WHERE t.id = s.last_task_id) AS last_task_status;

-- name: insert_fires
-- A fire happens once: a key already taken inserts nothing and is not returned. :fires is
-- a JSON array (fire_at in seconds since the epoch).
INSERT INTO schedule_fires (key, schedule_id, fire_at, outcome, task_id, note, recorded_at)
SELECT f ->> 'key', f ->> 'schedule_id', to_timestamp((f ->> 'fire_at')::float8),
       f ->> 'outcome', f ->> 'task_id', f ->> 'note', :now
FROM jsonb_array_elements(:fires::jsonb) AS f
ON CONFLICT (key) DO NOTHING
RETURNING key;

-- name: set_last_tasks
-- Each schedule's newest task, one statement (Tx.send_rows: :rows, a JSON array).
UPDATE schedules s SET last_task_id = r ->> 'task_id', updated_at = :now
FROM jsonb_array_elements(:rows::jsonb) AS r
WHERE s.id = r ->> 'schedule_id';

-- name: pause_schedule
UPDATE schedules SET paused = true, pause_note = :note::text, updated_at = :now
WHERE id = :schedule_id AND (namespace = :namespace OR :namespace::text = '*') AND NOT paused;

-- name: resume_schedule
UPDATE schedules
SET paused = false, pause_note = NULL,
    next_fire_at = coalesce(:next_fire_at::timestamptz, next_fire_at), updated_at = :now
WHERE id = :schedule_id AND (namespace = :namespace OR :namespace::text = '*') AND paused;

-- name: delete_schedule
DELETE FROM schedules WHERE id = :schedule_id
  AND (namespace = :namespace OR :namespace::text = '*');

-- name: delete_schedule_fires
DELETE FROM schedule_fires WHERE key >= :first_key AND key < :past_key;

-- name: schedule_fires
SELECT f.*, t.status AS task_status
FROM schedule_fires f LEFT JOIN tasks t ON t.id = f.task_id
WHERE f.key >= :first_key AND f.key < :past_key
  AND EXISTS (SELECT 1 FROM schedules s WHERE s.id = :schedule_id
    AND (s.namespace = :namespace OR :namespace::text = '*')
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
       count(*) FILTER (WHERE status IN ('starting', 'idle', 'busy', 'draining', 'stale')) AS n
FROM workers GROUP BY namespace
ORDER BY namespace, status;

-- Where tasks' work ended (`corral status`, `status --watch`): each read walks
-- reviews_by_outcome for a few rows, so it costs the same whatever the store's history.

-- name: work_counts_since
-- How many tasks' work reached each outcome at :since or later.
SELECT r.outcome, count(*) AS n
FROM reviews r JOIN tasks t ON t.id = r.task_id
WHERE r.outcome IN ('landed', 'in_review', 'kept', 'no_change', 'refused')
  AND r.outcome_at >= :since::timestamptz AND t.namespace = :namespace::text
GROUP BY r.outcome;

-- name: newest_landed
-- The tasks whose work landed most recently, newest first, with the commit it landed at.
SELECT t.id, t.title, r.merged_commit, r.pr_url, r.outcome_at
FROM reviews r JOIN tasks t ON t.id = r.task_id
WHERE r.outcome = 'landed' AND t.namespace = :namespace::text
ORDER BY r.outcome_at DESC
LIMIT :limit;

-- name: oldest_kept
-- The done tasks whose branch is kept for a person (`corral land ID`), oldest first.
SELECT t.id, t.title, t.branch, r.pr_url, r.outcome_at
FROM reviews r JOIN tasks t ON t.id = r.task_id
WHERE r.outcome = 'kept' AND t.status = 'done' AND t.namespace = :namespace::text
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
INSERT INTO day_caps AS d (namespace, scope, name, max_cost_usd, max_tokens, updated_at)
VALUES (:namespace, :scope, :name, :max_cost_usd::double precision, :max_tokens::bigint, :now)
ON CONFLICT (namespace, scope, name) DO UPDATE SET
    max_cost_usd = CASE WHEN :keep_max_cost_usd::boolean THEN d.max_cost_usd
                        ELSE excluded.max_cost_usd END,
    max_tokens = CASE WHEN :keep_max_tokens::boolean THEN d.max_tokens
                      ELSE excluded.max_tokens END,
    updated_at = :now
RETURNING scope, name, max_cost_usd, max_tokens;

-- name: drop_empty_day_cap
DELETE FROM day_caps
WHERE namespace = :namespace AND scope = :scope AND name = :name
  AND max_cost_usd IS NULL AND max_tokens IS NULL;

-- name: day_caps
-- The day caps of the namespace, of one scope or all (:scope NULL), by scope and name.
SELECT scope, name, max_cost_usd, max_tokens FROM day_caps
WHERE namespace = :namespace AND (:scope::text IS NULL OR scope = :scope::text)
ORDER BY scope, name;
