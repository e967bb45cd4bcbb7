-- The current schema of a corral PostgreSQL database, version 8.
-- A new database gets this file; an older one gets migrations/NNNN_*.sql in order.
-- tests/store/test_sql_files.py checks that both roads end at the same schema.
-- Instants are timestamptz read from the server's clock (now()); durations are seconds
-- as double precision; documents are jsonb; name lists are text[].

CREATE TABLE tasks (
    seq             bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- FIFO order
    id              text             NOT NULL UNIQUE,
    title           text             NOT NULL,
    description     text             NOT NULL DEFAULT '',
    queue           text             NOT NULL,
    kind            text             NOT NULL,
    priority        integer          NOT NULL DEFAULT 0,
    status          text             NOT NULL CHECK (status IN
                        ('blocked', 'ready', 'running', 'in_review', 'approved', 'done', 'failed',
                         'cancelled')),
    payload         jsonb            NOT NULL DEFAULT '{}',
    labels          jsonb            NOT NULL DEFAULT '{}',
    assignee        text,
    parent_id       text,
    attempts        integer          NOT NULL DEFAULT 0,
    max_attempts    integer          NOT NULL,
    crashes         integer          NOT NULL DEFAULT 0,
    retry_base_s    double precision NOT NULL,
    timeout_s       double precision,
    run_after       timestamptz      NOT NULL,
    requires_review boolean          NOT NULL DEFAULT false,
    branch          text,
    result          jsonb,
    last_error      text,
    failure_reason  text,
    created_at      timestamptz      NOT NULL,
    updated_at      timestamptz      NOT NULL,
    finished_at     timestamptz
);

-- The claim query walks ready tasks in claim order (priority, then age) and stops at the
-- first one that matches and is not locked by another claimer (SKIP LOCKED).
CREATE INDEX tasks_ready_order ON tasks (priority DESC, seq) WHERE status = 'ready';
CREATE INDEX tasks_by_status ON tasks (status);

CREATE TABLE task_deps (
    task_id    text NOT NULL REFERENCES tasks (id),
    depends_on text NOT NULL REFERENCES tasks (id),
    PRIMARY KEY (task_id, depends_on)
);

CREATE INDEX task_deps_by_dependency ON task_deps (depends_on);

CREATE TABLE workers (
    id                text             PRIMARY KEY,
    name              text             NOT NULL,
    hostname          text             NOT NULL,
    pid               integer,
    version           text             NOT NULL DEFAULT '',
    queues            text[]           NOT NULL DEFAULT '{}',
    kinds             text[]           NOT NULL DEFAULT '{}',
    max_concurrent    integer          NOT NULL DEFAULT 1,
    labels            jsonb            NOT NULL DEFAULT '{}',
    status            text             NOT NULL CHECK (status IN
                          ('starting', 'idle', 'busy', 'draining', 'stale', 'dead', 'offline')),
    registered_at     timestamptz      NOT NULL,
    last_heartbeat_at timestamptz      NOT NULL,
    completed_total   integer          NOT NULL DEFAULT 0,
    failed_total      integer          NOT NULL DEFAULT 0,
    offline_reason    text,
    cpu_percent       double precision,
    rss_bytes         bigint,
    -- Its active claims, kept by the triggers on claims (below): a count through
    -- claims_active_by_worker reads every claim ended since the last VACUUM.
    active            integer          NOT NULL DEFAULT 0
);

CREATE INDEX workers_watched ON workers (status)
    WHERE status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- token is the fencing token: an identity never hands out a value twice, so tokens only grow.
CREATE TABLE claims (
    token            bigint           GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id          text             NOT NULL REFERENCES tasks (id),
    worker_id        text             NOT NULL REFERENCES workers (id),
    status           text             NOT NULL CHECK (status IN
                         ('active', 'released', 'expired', 'completed')),
    lease_s          double precision NOT NULL,
    claimed_at       timestamptz      NOT NULL,
    lease_expires_at timestamptz      NOT NULL,
    deadline_at      timestamptz,
    renewals         integer          NOT NULL DEFAULT 0,
    ended_at         timestamptz
);

-- At most one active claim per task, enforced by the database.
CREATE UNIQUE INDEX claims_one_active_per_task ON claims (task_id) WHERE status = 'active';
CREATE INDEX claims_active_by_worker ON claims (worker_id) WHERE status = 'active';

CREATE TABLE events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    name        text        NOT NULL,
    task_id     text,
    worker_id   text,
    token       bigint,
    from_status text,
    to_status   text,
    actor       text        NOT NULL,
    reason      text,
    data        jsonb
);

CREATE INDEX events_by_task ON events (task_id, id) WHERE task_id IS NOT NULL;
CREATE INDEX events_by_worker ON events (worker_id, id) WHERE worker_id IS NOT NULL;

-- A task with its active claim (if any) and its dependencies, as every read wants it.
CREATE VIEW task_view AS
SELECT t.*,
       c.token AS token,
       c.worker_id AS worker_id,
       c.lease_expires_at AS lease_expires_at,
       ARRAY(SELECT d.depends_on FROM task_deps d WHERE d.task_id = t.id
             ORDER BY d.depends_on) AS depends_on
FROM tasks t
LEFT JOIN claims c ON c.task_id = t.id AND c.status = 'active';

-- A worker with the number of its active claims (a column of its own, kept by triggers).
CREATE VIEW worker_view AS
SELECT w.* FROM workers w;

-- One row per attempt at a task: what ran, where, and how it ended. `outcome` and
-- `finished_at` are set together, once; after that the row never changes (the trigger
-- below refuses it even to a query that forgets `WHERE finished_at IS NULL`).
-- seq orders runs started in the same instant (SQLite uses its rowid).
CREATE TABLE runs (
    seq              bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    id               text        PRIMARY KEY,
    task_id          text        NOT NULL REFERENCES tasks (id),
    worker_id        text        NOT NULL REFERENCES workers (id),
    token            bigint      NOT NULL,
    attempt          integer     NOT NULL,
    started_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    exit_code        integer,
    outcome          text        CHECK (outcome IN ('done', 'failed', 'timeout', 'killed',
                                                    'lease_lost', 'deferred', 'shutdown', 'stalled')),
    error            text,
    prompt           text,
    command          jsonb       NOT NULL DEFAULT '[]',
    cwd              text        NOT NULL,
    base_commit      text,
    final_commit     text,
    transcript_path  text,
    stderr_path      text,
    usage            jsonb,
    stalled_at       timestamptz,
    last_progress_at timestamptz,
    progress         text,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

CREATE INDEX runs_by_task ON runs (task_id, started_at);
CREATE INDEX runs_unfinished_by_worker ON runs (worker_id) WHERE finished_at IS NULL;

CREATE FUNCTION runs_refuse_change_once_finished() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'run is finished' USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER runs_immutable_once_finished BEFORE UPDATE ON runs
FOR EACH ROW WHEN (OLD.finished_at IS NOT NULL)
EXECUTE FUNCTION runs_refuse_change_once_finished();

-- Limits of one queue; NULL is no limit. The claim queries pass a queue by while it is at
-- max_running or has started `rate` claims in the last 60 s; enqueue refuses a task while
-- max_ready tasks wait. A queue with no row has no limits.
CREATE TABLE queue_limits (
    queue       text             PRIMARY KEY,
    max_ready   integer          CHECK (max_ready IS NULL OR max_ready > 0),
    max_running integer          CHECK (max_running IS NULL OR max_running > 0),
    rate        double precision CHECK (rate IS NULL OR rate > 0),  -- claims per minute
    updated_at  timestamptz      NOT NULL
);

-- The rate limit counts the claims started in the last minute.
CREATE INDEX claims_by_start ON claims (claimed_at);

-- The room left in a queue with a max_ready limit, counted after locking its limits row:
-- enqueues into one limited queue take turns, and each counts the tasks the previous one
-- committed (a function, because only a later statement sees what a lock waited for).
CREATE FUNCTION corral_queue_room(wanted text)
RETURNS TABLE (max_ready integer, waiting bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM queue_limits l WHERE l.queue = wanted AND l.max_ready IS NOT NULL
    FOR UPDATE;
    RETURN QUERY
    SELECT l.max_ready,
           (SELECT count(*) FROM tasks t
            WHERE t.queue = l.queue AND t.status IN ('ready', 'blocked'))
    FROM queue_limits l
    WHERE l.queue = wanted AND l.max_ready IS NOT NULL;
END;
$$;

-- The review of a task's branch: where it came from, what was said, what was approved.
-- The task's status says where the review stands; this row keeps the details. Every
-- change to it is made under the lock of its task's row.
CREATE TABLE reviews (
    task_id         text  PRIMARY KEY REFERENCES tasks (id),
    base_ref        text,
    worktree_path   text,
    note            text,
    pr_url          text,
    approved_commit text,
    approve_note    text,
    changes_note    text,
    conflict_files  jsonb,
    merged_commit   text
);

-- Inboxes of workers (by name) and of the orchestrator: appended, never rewritten, read
-- in id order. An acknowledgement is a row of its own, so a message never changes.
CREATE TABLE messages (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL,
    sender    text        NOT NULL,
    recipient text        NOT NULL,
    type      text        NOT NULL,
    body      jsonb
);

CREATE INDEX messages_by_recipient ON messages (recipient, id);

CREATE FUNCTION messages_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'messages are append-only' USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER messages_never_change BEFORE UPDATE ON messages
FOR EACH ROW EXECUTE FUNCTION messages_refuse_change();

CREATE TRIGGER messages_never_go BEFORE DELETE ON messages
FOR EACH ROW EXECUTE FUNCTION messages_refuse_change();

CREATE TABLE message_acks (
    message_id bigint      PRIMARY KEY REFERENCES messages (id),
    at         timestamptz NOT NULL,
    actor      text        NOT NULL
);

-- The orchestrator in charge of this store, or the last one that was. Starting takes the
-- row by compare-and-set (stopped, or the observed dead holder); heartbeat_at lets an
-- orchestrator on another host see that the holder died. `slots` is the pool as the
-- holder last wrote it (JSON list), `config` the settings it runs with (JSON object).
CREATE TABLE orchestrator (
    id                integer          PRIMARY KEY CHECK (id = 1),
    status            text             NOT NULL DEFAULT 'stopped'
                          CHECK (status IN ('stopped', 'starting', 'running', 'stopping')),
    pid               integer,
    host              text,
    started_at        timestamptz,
    heartbeat_at      timestamptz,
    last_reconcile_at timestamptz,
    stopped_at        timestamptz,
    stop_timeout_s    double precision,
    config            jsonb            NOT NULL DEFAULT '{}',
    slots             jsonb            NOT NULL DEFAULT '[]'
);

INSERT INTO orchestrator (id) VALUES (1);

-- One row per orchestrator host. On PostgreSQL every orchestrator joins here by
-- compare-and-set (the host's row is stopped, or still exactly what the joiner saw when it
-- judged its holder dead); the one holding the session advisory lock 'corral.leader' leads
-- (role 'leader', and it holds the `orchestrator` row), the others stand by. SQLite keeps
-- its single orchestrator in the `orchestrator` row and leaves this table empty.
CREATE TABLE orchestrators (
    host         text        PRIMARY KEY,
    pid          integer     NOT NULL,
    role         text        NOT NULL CHECK (role IN ('leader', 'standby')),
    status       text        NOT NULL CHECK (status IN ('running', 'stopping', 'stopped')),
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    stopped_at   timestamptz
);

-- A task that becomes ready (enqueued, retried, released, unblocked, sent back for
-- changes, recovered) notifies its schema's channel, corral_ready_ and the md5 of the
-- schema's name (so that it always fits in a channel name), with its queue, in its own
-- transaction: the notification is delivered at commit, or never if it rolls back. Stores
-- that share a database in separate schemas wake only their own runners (listen_ready).
CREATE FUNCTION tasks_notify_ready() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'ready' THEN
        PERFORM pg_notify('corral_ready_' || md5(TG_TABLE_SCHEMA), NEW.queue);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tasks_ready_notify AFTER INSERT OR UPDATE OF status ON tasks
    FOR EACH ROW WHEN (NEW.status = 'ready') EXECUTE FUNCTION tasks_notify_ready();

-- The claim cycle as server-side functions: claim_next and complete, one statement each,
-- the same steps as the store's named queries run one by one on SQLite (store/claims.py,
-- store/postgres/cycle.py). They decide nothing the store has not handed them: the statuses
-- a worker claims in and a task completes from arrive as parameters (corral.model.states), and
-- a refusal comes back as data for the store to raise its own error from. :now arrives as
-- a parameter too (the server's now() or a test clock).

-- An instant as Python's datetime.isoformat() writes an aware UTC one (corral.durations.iso):
-- the form event data keeps instants in.
CREATE FUNCTION corral_iso(instant timestamptz) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_char(instant AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
        || CASE WHEN extract(microseconds FROM instant)::bigint % 1000000 = 0 THEN ''
                ELSE to_char(instant AT TIME ZONE 'UTC', '.US') END
        || '+00:00'
$$;

-- The names a worker may be handed (corral.store.capabilities): what it declared, narrowed
-- by what it asks for; NULL is any name, an empty array none.
CREATE FUNCTION corral_narrow(declared text[], asked text[]) RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN cardinality(declared) = 0 THEN nullif(asked, '{}')
                WHEN cardinality(asked) = 0 THEN declared
                ELSE ARRAY(SELECT n FROM unnest(declared) AS n WHERE n = ANY(asked)) END
$$;

-- Claim the first ready task worker p_worker_id may run: the steps of claiming_worker,
-- claim_next_tasks (one task), insert_claim, worker_after_claim and the task.claimed event.
-- No row: no such worker. A row with a NULL token: nothing claimed, and the worker's status
-- and load say whether that is a refusal (not in p_claiming, or at capacity).
CREATE FUNCTION corral_claim_next(p_worker_id text, p_kinds text[], p_queues text[],
                                  p_claiming text[], p_lease_s double precision,
                                  p_actor text, p_now timestamptz)
RETURNS TABLE (worker_status text, active integer, max_concurrent integer, token bigint,
               task_id text, worker_id text, status text, lease_s double precision,
               claimed_at timestamptz, lease_expires_at timestamptz,
               deadline_at timestamptz, renewals integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_worker workers%ROWTYPE;
    v_active integer;
    v_kinds text[];
    v_queues text[];
    v_task record;
    v_claim claims%ROWTYPE;
BEGIN
    -- The rows of limited queues first, then the worker: claimants take turns as with
    -- claiming_worker, and each later statement here counts what the one before committed.
    PERFORM 1 FROM queue_limits l WHERE l.max_running IS NOT NULL OR l.rate IS NOT NULL
    ORDER BY l.queue FOR UPDATE;
    SELECT * INTO v_worker FROM workers w WHERE w.id = p_worker_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    v_active := v_worker.active;
    v_kinds := corral_narrow(v_worker.kinds, p_kinds);
    v_queues := corral_narrow(v_worker.queues, p_queues);
    IF v_worker.status = ANY(p_claiming) AND v_active < v_worker.max_concurrent
       AND v_kinds IS DISTINCT FROM '{}' AND v_queues IS DISTINCT FROM '{}' THEN
        UPDATE tasks SET status = 'running', attempts = attempts + 1, updated_at = p_now
        WHERE seq IN (
            SELECT t.seq FROM tasks t
            WHERE t.status = 'ready' AND t.run_after <= p_now
              AND (t.assignee IS NULL OR t.assignee IN (v_worker.id, v_worker.name))
              AND (v_kinds IS NULL OR t.kind = ANY(v_kinds))
              AND (v_queues IS NULL OR t.queue = ANY(v_queues))
              AND t.queue NOT IN (  -- backpressure, as claim_next_tasks
                  SELECT l.queue FROM queue_limits l
                  WHERE l.max_running <= (SELECT count(*) FROM tasks r
                                          WHERE r.queue = l.queue AND r.status = 'running')
                     OR l.rate <= (SELECT count(*) FROM claims c
                                   JOIN tasks ct ON ct.id = c.task_id
                                   WHERE ct.queue = l.queue
                                     AND c.claimed_at > p_now - interval '60 seconds'))
            ORDER BY t.priority DESC, t.seq
            LIMIT 1
            FOR UPDATE SKIP LOCKED)
        RETURNING id, timeout_s INTO v_task;
        IF FOUND THEN
            INSERT INTO claims (task_id, worker_id, status, lease_s, claimed_at,
                                lease_expires_at, deadline_at)
            VALUES (v_task.id, v_worker.id, 'active', p_lease_s, p_now,
                    least(p_now + p_lease_s * interval '1 second',
                          p_now + v_task.timeout_s * interval '1 second'),
                    p_now + v_task.timeout_s * interval '1 second')
            RETURNING * INTO v_claim;
            -- worker_after_claim: the worker, claiming, now holds an active claim.
            UPDATE workers SET status = 'busy' WHERE id = v_worker.id;
            INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status,
                                actor, data)
            VALUES (p_now, 'task.claimed', v_task.id, v_worker.id, v_claim.token, 'ready',
                    'running', p_actor,
                    jsonb_build_object('lease_expires_at', corral_iso(v_claim.lease_expires_at)));
        END IF;
    END IF;
    RETURN QUERY SELECT v_worker.status, v_active, v_worker.max_concurrent, v_claim.token,
                        v_claim.task_id, v_claim.worker_id, v_claim.status, v_claim.lease_s,
                        v_claim.claimed_at, v_claim.lease_expires_at, v_claim.deadline_at,
                        v_claim.renewals;
END;
$$;

-- Complete task p_task_id under claim p_token (NULL: whatever claim is active): the steps
-- of end_held_claim, worker_after_claim, complete_task, the task.completed event,
-- unblock_dependents and their task.unblocked events; the task as get_task reads it. No
-- row: the task has no active claim under p_token, and nothing changed.
CREATE FUNCTION corral_complete(p_task_id text, p_token bigint, p_result jsonb,
                                p_allowed text[], p_unblock text[], p_actor text,
                                p_now timestamptz)
RETURNS SETOF task_view
LANGUAGE plpgsql AS $$
DECLARE
    v_held record;
    v_status text;
BEGIN
    -- The lock order: the task, its claim, the claim's worker, then the blocked dependents
    -- (a dependent's other dependency completing at once then waits for this one).
    PERFORM 1 FROM tasks t WHERE t.id = p_task_id FOR UPDATE;
    UPDATE claims c SET status = 'completed', ended_at = p_now
    WHERE c.task_id = p_task_id AND c.status = 'active'
      AND (p_token IS NULL OR c.token = p_token)
    RETURNING c.token, c.worker_id INTO v_held;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE workers w
    SET status = CASE WHEN w.status NOT IN ('starting', 'idle', 'busy') THEN w.status
                      WHEN w.active > 0 THEN 'busy' ELSE 'idle' END,
        completed_total = w.completed_total + 1
    WHERE w.id = v_held.worker_id;
    PERFORM 1 FROM tasks t JOIN task_deps d ON d.task_id = t.id
    WHERE d.depends_on = p_task_id AND t.status = 'blocked'
    ORDER BY t.id FOR UPDATE OF t;
    UPDATE tasks t
    SET status = CASE WHEN t.requires_review THEN 'in_review' ELSE 'done' END,
        result = p_result,
        updated_at = p_now,
        finished_at = CASE WHEN t.requires_review THEN NULL ELSE p_now END
    WHERE t.id = p_task_id AND t.status = ANY(p_allowed)
    RETURNING t.status INTO v_status;
    IF NOT FOUND THEN  -- an active claim implies a running task
        RAISE EXCEPTION 'task % has an active claim but cannot complete', p_task_id;
    END IF;
    INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor)
    VALUES (p_now, 'task.completed', p_task_id, v_held.worker_id, v_held.token, 'running',
            v_status, p_actor);
    IF v_status = 'done' THEN
        WITH unblocked AS (
            UPDATE tasks t SET status = 'ready', run_after = greatest(t.run_after, p_now),
                               updated_at = p_now
            WHERE t.status = ANY(p_unblock)
              AND t.id IN (SELECT d.task_id FROM task_deps d WHERE d.depends_on = p_task_id)
              AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                              WHERE d.task_id = t.id AND p.status != 'done')
            RETURNING t.id)
        INSERT INTO events (at, name, task_id, from_status, to_status, actor, reason)
        SELECT p_now, 'task.unblocked', u.id, 'blocked', 'ready', p_actor, p_task_id || ' done'
        FROM unblocked u;
    END IF;
    RETURN QUERY SELECT * FROM task_view v WHERE v.id = p_task_id;
END;
$$;

-- workers.active follows the worker's active claims in the transaction that changes them,
-- whatever statement does (a claim, a batch, an end, a recovery).
CREATE FUNCTION claims_count_active() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE workers SET active = active + 1 WHERE id = NEW.worker_id;
    ELSE
        UPDATE workers SET active = active - 1 WHERE id = OLD.worker_id;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER claims_active_opened AFTER INSERT ON claims
    FOR EACH ROW WHEN (NEW.status = 'active') EXECUTE FUNCTION claims_count_active();

CREATE TRIGGER claims_active_ended AFTER UPDATE OF status ON claims
    FOR EACH ROW WHEN (OLD.status = 'active' AND NEW.status <> 'active')
    EXECUTE FUNCTION claims_count_active();
