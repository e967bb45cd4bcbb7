-- Version 8: the claim cycle as server-side functions (store/postgres/cycle.py explains why):
-- corral_claim_next and corral_complete, with their helpers corral_iso and corral_narrow;
-- and each worker's count of active claims kept on its row by triggers, counted once here.
-- The functions and triggers are the same text as the end of schema.sql.

-- Runners of the old version may still claim while this runs: no claim changes from here
-- to COMMIT, so the count below is exact and the triggers (created below, in the same
-- transaction) see every change after it. A runner caught between its worker row and its
-- claim may deadlock with this; the server then aborts one of the two, and that one is
-- retried (the runner by its backoff, the migration by the next `corral db migrate`).
LOCK TABLE claims IN SHARE ROW EXCLUSIVE MODE;
ALTER TABLE workers ADD COLUMN active integer NOT NULL DEFAULT 0;
UPDATE workers w
SET active = (SELECT count(*) FROM claims c WHERE c.worker_id = w.id AND c.status = 'active');
CREATE OR REPLACE VIEW worker_view AS
SELECT w.* FROM workers w;

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
