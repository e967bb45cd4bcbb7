-- The server-side functions of a corral PostgreSQL database: the one copy of their text.
-- The driver applies this file after schema.sql on a new database, and after the
-- migrations on an older one, in the same transaction (store/postgres/driver.py), so the
-- schema test and every road to the newest version run this same text. A change here
-- comes with a new migration number (it may be a file with a comment only), so that
-- every database is brought to it; a function whose arguments or result change is dropped
-- by that migration first (CREATE OR REPLACE cannot change them).
--
-- The exchange (store/exchange.py says what it does and in which order; SQLite runs the
-- same steps as named queries) decides nothing the store has not handed it: the statuses a
-- worker claims in and the transitions each report may make arrive as parameters from
-- corral.model.states, failures arrive with their retry decided, a completion's review or
-- done as that decision's table (p_completed_to) and a report from outside a run with
-- what its run notes (model/batches.py), and a refusal comes back as data for the store
-- to raise its own error from. :now arrives as a parameter too (the
-- server's now() or a test clock).

-- An instant as Python's datetime.isoformat() writes an aware UTC one (corral.durations.iso):
-- the form event data keeps instants in. STABLE as to_char is: an IMMUTABLE function
-- calling it would not be inlined, and a SQL function not inlined is planned at every call.
CREATE OR REPLACE FUNCTION corral_iso(instant timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT to_char(instant AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS')
        || CASE WHEN extract(microseconds FROM instant)::bigint % 1000000 = 0 THEN ''
                ELSE to_char(instant AT TIME ZONE 'UTC', '.US') END
        || '+00:00'
$$;

-- The claimable filter (corral_may_claim, corral_site_open, corral_held_queues) is written
-- once for both dialects in corral/store/claimable.py: each fragment comment in their
-- bodies stands for its text there, put in place by the driver before the file is applied.

-- Functions with a query inside are PL/pgSQL: a SQL function that the planner cannot
-- inline is planned again at every call, and PL/pgSQL keeps its plans for the session.

-- The names a worker may be handed (corral.store.capabilities): what it declared, narrowed
-- by what it asks for; NULL is any name, an empty array none.
CREATE OR REPLACE FUNCTION corral_narrow(declared text[], asked text[]) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN CASE WHEN cardinality(declared) = 0 THEN nullif(asked, '{}')
                WHEN cardinality(asked) = 0 THEN declared
                ELSE ARRAY(SELECT n FROM unnest(declared) AS n WHERE n = ANY(asked)) END;
END;
$$;

-- The queues claims pass by now: at max_running, or at their rate of claims a minute.
CREATE OR REPLACE FUNCTION corral_held_queues(p_namespace text, p_now timestamptz)
RETURNS text[]
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN ARRAY(/* fragment: held_queues */);
END;
$$;

-- Whether worker p_worker_id may claim task t, kept at its site (tasks.site): it works at
-- that site, or no live worker there can run t (its kinds and queues; draining, stale and
-- dead workers claim nothing), so that a task that runs again resumes where its worktree
-- and its agent's session are, unless that site is gone. PL/pgSQL, called only for a
-- task kept at a site: corral_may_claim stays one expression the planner inlines.
CREATE OR REPLACE FUNCTION corral_site_open(t tasks, p_worker_id text) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN /* fragment: site_open */;
END;
$$;

-- Whether a worker may claim task t now: ready, due, assigned to nobody or to the worker
-- (by id or name), of its kinds and queues (narrowed; NULL is any) and in no queue held
-- back (`p_held`, corral_held_queues, computed once per statement by the caller), and not
-- kept at another site (corral_site_open). One expression without a sub-select, so the
-- planner inlines it into the statements that claim and into claimable_task.
CREATE OR REPLACE FUNCTION corral_may_claim(t tasks, p_worker_id text, p_worker_name text,
                                            p_kinds text[], p_queues text[], p_held text[],
                                            p_now timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT /* fragment: may_claim */
$$;

-- The exchange. p_reports holds one object per report (the fields of corral_report,
-- schema.sql: task_id, token and holder (NULL: any), action (complete, fail, defer,
-- release), actor, the run it finishes and how, the result, a deferral's delay_s or run_at,
-- the reason, and a failure's retry_delay_s or give_up). p_limit > 0 asks for claims by
-- worker p_worker_id (task p_task_id alone, when given), each opening a run from p_run
-- (NULL: none) with the next id of p_run_ids. p_complete ... p_unblock are the statuses
-- each step may start from (corral.model.states.ALLOWED_FROM). p_namespace is the store
-- handle's ('*': the maintenance handle's, every namespace): a report on a task of another
-- namespace is stale and a worker of another does not exist, as for an unknown id.
--
-- Rows come back by row_kind: 'stale' (a report whose claim had ended: its task id, and its
-- run with the outcome the run has now), 'applied' (with p_return_tasks: a report that
-- applied, its task as it is now), 'held' (a task claimed: the task with its new claim,
-- claimed_at, deadline_at, run_id), 'worker' (nothing claimed: the worker's status, active
-- claims and max_concurrent), 'no_worker' (a claim by a worker that does not exist: then
-- nothing at all was done).
--
-- Reports and claims are applied one task at a time, by statements of one row each: their
-- plans are made once a session and fit any exchange, where statements over the whole
-- batch would be planned again at every call (bench/pg_claim_cycle.py). Only the choice of
-- a batch of tasks to claim is planned for its values each time (see below).
--
-- Every statement here reaches its rows by a key or an index; none should ever scan a
-- table. With statistics taken while a store was young (claims and runs empty, then tens
-- of thousands of rows within minutes, long before autovacuum analyzes them again), the
-- planner judged claims too small to need its index, and the plan, kept for the session,
-- scanned all of claims at every claim: 4.6 ms an exchange at 20,000 tasks instead of
-- 1.7 (bench/pg_runner_throughput.py). Hence enable_seqscan off inside the function.
CREATE OR REPLACE FUNCTION corral_exchange(
    p_worker_id text, p_reports jsonb, p_limit integer, p_task_id text, p_kinds text[],
    p_queues text[], p_lease_s double precision, p_run jsonb, p_run_ids text[],
    p_claiming text[], p_complete text[], p_fail text[], p_defer text[], p_release text[],
    p_wait text[], p_unblock text[], p_completed_to text[], p_return_tasks boolean,
    p_now timestamptz, p_namespace text)
RETURNS TABLE (row_kind text, report_task text, run_id text, outcome text,
               worker_status text, active integer, max_concurrent integer,
               claimed_at timestamptz, deadline_at timestamptz,
               seq bigint, id text, title text, description text, queue text, kind text,
               priority integer, status text, payload jsonb, labels jsonb, assignee text,
               parent_id text, attempts integer, max_attempts integer, crashes integer,
               retry_base_s double precision, timeout_s double precision,
               run_after timestamptz, requires_review boolean, branch text, result jsonb,
               last_error text, failure_reason text, created_at timestamptz,
               updated_at timestamptz, finished_at timestamptz, namespace text,
               wait_reason text, answer text, answered_reason text, site text, token bigint,
               worker_id text, lease_expires_at timestamptz, depends_on text[])
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan SET enable_seqscan = off AS $$
#variable_conflict use_column
DECLARE
    r corral_report;
    v_token bigint;
    v_holder text;
    v_status text;
    v_applied text[] := '{}';
    v_holders text[] := '{}';  -- the holder of each claim ended or made, with what it did
    v_done integer[] := '{}';
    v_failed integer[] := '{}';
    v_worker workers%ROWTYPE;
    v_provider providers%ROWTYPE;
    v_limit integer;
    v_kinds text[];
    v_queues text[];
    v_held text[] := '{}';
    v_claimed text[];
    v_claim claims%ROWTYPE;
    v_task text;
    v_i integer;
    v_finished text[] := '{}';  -- the tasks done now, whose dependents may be unblocked
    v_actor text;
    v_namespace text;  -- the claiming worker's: it claims there alone
    v_scoped boolean;  -- the report's task is in p_namespace ('*': the maintenance handle's)
BEGIN
    IF p_limit > 0 AND jsonb_array_length(p_reports) > 0 THEN
        -- Before any report is applied: a claim by no worker does nothing at all.
        PERFORM 1 FROM workers w
        WHERE w.id = p_worker_id AND (w.namespace = p_namespace OR p_namespace = '*');
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'no_worker'::text, NULL::text, NULL::text, NULL::text,
                                NULL::text, NULL::integer, NULL::integer, NULL::timestamptz,
                                NULL::timestamptz, (NULL::task_view).*;
            RETURN;
        END IF;
    END IF;

    -- 1-3. The reports, in task id order (the lock order: a task, its claim, workers last).
    FOR r IN SELECT * FROM jsonb_populate_recordset(NULL::corral_report, p_reports) AS x
             ORDER BY x.task_id LOOP
        -- Another namespace's task is as unknown as one that never was: its report is stale
        -- and touches nothing, its run's included.
        PERFORM 1 FROM tasks t
        WHERE t.id = r.task_id AND (t.namespace = p_namespace OR p_namespace = '*') FOR UPDATE;
        v_scoped := FOUND;
        UPDATE claims c
        SET status = CASE WHEN r.action IN ('defer', 'release', 'wait') THEN 'released'
                          ELSE 'completed' END,
            ended_at = p_now
        WHERE c.task_id = r.task_id AND c.status = 'active'
          AND (r.token IS NULL OR c.token = r.token)
          AND (r.holder IS NULL OR c.worker_id = r.holder) AND v_scoped
        RETURNING c.token, c.worker_id INTO v_token, v_holder;
        IF NOT FOUND THEN
            -- Stale: the claim ended elsewhere. Its run ends as what was reported under its
            -- token meanwhile, else lease_lost.
            IF r.run_id IS NOT NULL THEN
                UPDATE runs u
                SET finished_at = p_now, outcome = coalesce(u.reported, 'lease_lost'),
                    exit_code = r.exit_code, usage = r.usage,
                    error = CASE WHEN u.reported IS NULL
                                 THEN 'the claim ended while running (task is '
                                      || (SELECT t.status FROM tasks t WHERE t.id = u.task_id)
                                      || ')' END
                WHERE u.id = r.run_id AND u.task_id = r.task_id AND u.finished_at IS NULL
                  AND v_scoped;
                IF FOUND THEN
                    PERFORM corral_run_finished(r.run_id, p_now);
                END IF;
            END IF;
            RETURN QUERY
            SELECT 'stale'::text, r.task_id, u.id, u.outcome, NULL::text, NULL::integer,
                   NULL::integer, NULL::timestamptz, NULL::timestamptz, (NULL::task_view).*
            FROM (SELECT 1) AS one
            LEFT JOIN runs u ON u.id = r.run_id AND u.task_id = r.task_id AND v_scoped;
            CONTINUE;
        END IF;
        r.token := v_token;
        r.holder := v_holder;
        v_applied := v_applied || r.task_id;
        v_holders := v_holders || v_holder;
        v_done := v_done || (r.action = 'complete')::integer;
        v_failed := v_failed || (r.action = 'fail')::integer;
        IF r.action = 'complete' THEN
            -- The blocked dependents locked first: a dependent's other dependency completing
            -- at once then waits for this one.
            PERFORM 1 FROM tasks t JOIN task_deps d ON d.task_id = t.id
            WHERE d.depends_on = r.task_id AND t.status = 'blocked'
            ORDER BY t.id FOR UPDATE OF t;
            -- Review or done, as decided in Python (p_completed_to: model/batches.py,
            -- COMPLETED_TO, indexed by requires_review); done finishes the task.
            UPDATE tasks t
            SET status = p_completed_to[t.requires_review::integer + 1],
                result = r.result, updated_at = p_now,
                finished_at = CASE WHEN p_completed_to[t.requires_review::integer + 1] = 'done'
                                   THEN p_now END
            WHERE t.id = r.task_id AND t.status = ANY(p_complete)
            RETURNING t.status INTO v_status;
            INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status,
                                actor)
            VALUES (p_now, 'task.completed', r.task_id, v_holder, v_token, 'running',
                    v_status, r.actor);
            IF v_status = 'done' THEN
                v_finished := v_finished || r.task_id;
                v_actor := coalesce(v_actor, r.actor);
            END IF;
        ELSE
            PERFORM corral_step_aside(r, p_fail, p_defer, p_release, p_wait, p_now);
        END IF;
        IF r.run_id IS NOT NULL THEN
            UPDATE runs u
            SET finished_at = p_now, outcome = r.outcome, exit_code = r.exit_code,
                error = r.error, usage = r.usage, final_commit = r.final_commit
            WHERE u.id = r.run_id AND u.task_id = r.task_id AND u.finished_at IS NULL;
            IF FOUND THEN
                PERFORM corral_run_finished(r.run_id, p_now);
            END IF;
        ELSIF r.reported IS NOT NULL THEN
            -- From outside the run (the task's own command): noted on the claim's open
            -- run, which ends as that whoever finishes it (model/batches.py, REPORTED).
            UPDATE runs u
            SET reported = r.reported
            WHERE u.worker_id = v_holder AND u.token = v_token AND u.finished_at IS NULL;
        END IF;
    END LOOP;
    IF cardinality(v_finished) > 0
       AND EXISTS (SELECT 1 FROM task_deps d WHERE d.depends_on = ANY(v_finished)) THEN
        -- Each dependent now free names the first of these tasks it waited on.
        WITH unblocked AS (
            UPDATE tasks t SET status = 'ready', run_after = greatest(t.run_after, p_now),
                               updated_at = p_now
            WHERE t.status = ANY(p_unblock)
              AND t.id IN (SELECT d.task_id FROM task_deps d
                           WHERE d.depends_on = ANY(v_finished))
              AND NOT EXISTS (SELECT 1 FROM task_deps d JOIN tasks p ON p.id = d.depends_on
                              WHERE d.task_id = t.id AND p.status != 'done')
            RETURNING t.id, (SELECT min(d.depends_on) FROM task_deps d
                             WHERE d.task_id = t.id AND d.depends_on = ANY(v_finished)) AS by)
        INSERT INTO events (at, name, task_id, from_status, to_status, actor, reason)
        SELECT p_now, 'task.unblocked', u.id, 'blocked', 'ready', v_actor, u.by || ' done'
        FROM unblocked u ORDER BY u.id;
    END IF;

    -- 4. Claims: the rows of limited queues first, then the worker (claimants take turns,
    -- and each later statement here counts what the one before committed).
    IF p_limit > 0 THEN
        SELECT w.namespace INTO v_namespace FROM workers w
        WHERE w.id = p_worker_id AND (w.namespace = p_namespace OR p_namespace = '*');
        PERFORM 1 FROM queue_limits l
        WHERE l.namespace = v_namespace AND (l.max_running IS NOT NULL OR l.rate IS NOT NULL)
        ORDER BY l.queue FOR UPDATE;
        IF FOUND THEN
            v_held := corral_held_queues(v_namespace, p_now);
            v_limit := 1;  -- the filter reads the limits once: a batch could pass one
        END IF;
        SELECT * INTO v_worker FROM workers w
        WHERE w.id = p_worker_id AND (w.namespace = p_namespace OR p_namespace = '*') FOR UPDATE;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'no_worker'::text, NULL::text, NULL::text, NULL::text,
                                NULL::text, NULL::integer, NULL::integer, NULL::timestamptz,
                                NULL::timestamptz, (NULL::task_view).*;
            RETURN;
        END IF;
        v_limit := least(p_limit, coalesce(v_limit, p_limit),
                         v_worker.max_concurrent - v_worker.active);
        -- The worker's provider account, locked last (claimants of one account take turns,
        -- so its cap holds across hosts): nothing while it is paused or parked until its
        -- usage limit resets, and no more than its max_running agents at once.
        IF v_worker.provider IS NOT NULL THEN
            SELECT * INTO v_provider FROM providers p
            WHERE p.namespace = v_worker.namespace AND p.name = v_worker.provider FOR UPDATE;
            IF FOUND THEN
                IF v_provider.paused OR v_provider.parked_until > p_now THEN
                    v_limit := 0;
                ELSIF v_provider.max_running IS NOT NULL THEN
                    v_limit := least(v_limit, v_provider.max_running
                                     - (SELECT coalesce(sum(w.active), 0)::integer
                                        FROM workers w WHERE w.provider = v_worker.provider
                                          AND w.namespace = v_worker.namespace));
                END IF;
            END IF;
        END IF;
        v_kinds := corral_narrow(v_worker.kinds, p_kinds);
        v_queues := corral_narrow(v_worker.queues, p_queues);
        IF v_worker.status = ANY(p_claiming) AND v_limit > 0
           AND v_kinds IS DISTINCT FROM '{}' AND v_queues IS DISTINCT FROM '{}' THEN
            IF p_task_id IS NOT NULL THEN
                -- A named task: its row is waited for and the filter checked again on it
                -- as it is then.
                WITH claimed AS (
                    UPDATE tasks t SET status = 'running', attempts = t.attempts + 1,
                                       updated_at = p_now
                    WHERE t.id = p_task_id AND t.namespace = v_worker.namespace
                      AND corral_may_claim(t, v_worker.id, v_worker.name, v_kinds, v_queues,
                                           v_held, p_now)
                    RETURNING t.id)
                SELECT array_agg(c.id) INTO v_claimed FROM claimed c;
            ELSE
                -- The next ones in claim order. SKIP LOCKED: concurrent claimers each take
                -- different tasks instead of queueing on the same rows. The plan is made
                -- once a session, for any kinds, queues and limit, and the planner cannot
                -- tell how many ready tasks those let through: without sorts it walks the
                -- claim-order index and stops at the first tasks that pass, as it must.
                PERFORM set_config('enable_sort', 'off', true);
                WITH claimed AS (
                    UPDATE tasks t SET status = 'running', attempts = t.attempts + 1,
                                       updated_at = p_now
                    WHERE t.seq IN (
                        SELECT c.seq FROM tasks c
                        WHERE c.namespace = v_worker.namespace AND c.status = 'ready'
                          AND corral_may_claim(c, v_worker.id, v_worker.name, v_kinds,
                                               v_queues, v_held, p_now)
                        ORDER BY c.priority DESC, c.seq
                        LIMIT v_limit
                        FOR UPDATE SKIP LOCKED)
                    RETURNING t.id, t.priority, t.seq)
                SELECT array_agg(c.id ORDER BY c.priority DESC, c.seq) INTO v_claimed
                FROM claimed c;
                PERFORM set_config('enable_sort', 'on', true);
            END IF;
        END IF;
        IF v_claimed IS NULL THEN
            RETURN QUERY
            SELECT 'worker'::text, NULL::text, NULL::text, NULL::text, v_worker.status,
                   v_worker.active, v_worker.max_concurrent, NULL::timestamptz,
                   NULL::timestamptz, (NULL::task_view).*;
        ELSE
            -- Each claim and its event, then each run and its event (the events of a batch
            -- in that order, as SQLite writes them); runs take their ids from p_run_ids in
            -- claim order.
            FOREACH v_task IN ARRAY v_claimed LOOP
                INSERT INTO claims (task_id, worker_id, status, lease_s, claimed_at,
                                    lease_expires_at, deadline_at, ready_at)
                SELECT t.id, v_worker.id, 'active', p_lease_s, p_now,
                       least(p_now + p_lease_s * interval '1 second',
                             p_now + t.timeout_s * interval '1 second'),
                       p_now + t.timeout_s * interval '1 second', t.run_after
                FROM tasks t WHERE t.id = v_task
                RETURNING * INTO v_claim;
                INSERT INTO events (at, name, task_id, worker_id, token, from_status,
                                    to_status, actor, data)
                VALUES (p_now, 'task.claimed', v_task, v_worker.id, v_claim.token, 'ready',
                        'running', v_worker.id,
                        jsonb_build_object('lease_expires_at',
                                           corral_iso(v_claim.lease_expires_at)));
            END LOOP;
            IF p_run IS NOT NULL THEN
                v_i := 0;
                FOREACH v_task IN ARRAY v_claimed LOOP
                    v_i := v_i + 1;
                    INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at,
                                      prompt, command, cwd, base_commit, transcript_path,
                                      stderr_path)
                    SELECT p_run_ids[v_i], c.task_id, c.worker_id, c.token, t.attempts, p_now,
                           p_run->>'prompt', coalesce(p_run->'command', '[]'), p_run->>'cwd',
                           p_run->>'base_commit', p_run->>'transcript_path',
                           p_run->>'stderr_path'
                    FROM claims c JOIN tasks t ON t.id = c.task_id
                    WHERE c.task_id = v_task AND c.status = 'active';
                    INSERT INTO events (at, name, task_id, worker_id, token, actor, data)
                    SELECT p_now, 'run.started', u.task_id, v_worker.id, u.token, v_worker.id,
                           jsonb_build_object('run_id', u.id, 'attempt', u.attempt)
                    FROM runs u WHERE u.id = p_run_ids[v_i];
                END LOOP;
            END IF;
            RETURN QUERY
            SELECT 'held'::text, NULL::text,
                   CASE WHEN p_run IS NOT NULL THEN p_run_ids[n.i] END,
                   NULL::text, NULL::text, NULL::integer, NULL::integer, c.claimed_at,
                   c.deadline_at, t.*, c.token, c.worker_id, c.lease_expires_at,
                   ARRAY(SELECT d.depends_on FROM task_deps d WHERE d.task_id = t.id
                         ORDER BY d.depends_on)
            FROM unnest(v_claimed) WITH ORDINALITY AS n(id, i)
            JOIN tasks t ON t.id = n.id
            JOIN claims c ON c.task_id = n.id AND c.status = 'active';
            v_holders := v_holders || v_worker.id;
            v_done := v_done || 0;
            v_failed := v_failed || 0;
        END IF;
    END IF;

    -- 5. Each holder's idle/busy and counters, once, locked in id order.
    IF cardinality(v_holders) = 1 THEN  -- one task reported or claimed: one worker
        UPDATE workers w
        SET status = CASE WHEN w.status NOT IN ('starting', 'idle', 'busy') THEN w.status
                          WHEN w.active > 0 THEN 'busy' ELSE 'idle' END,
            completed_total = w.completed_total + v_done[1],
            failed_total = w.failed_total + v_failed[1]
        WHERE w.id = v_holders[1];
    ELSIF cardinality(v_holders) > 1 THEN
        UPDATE workers w
        SET status = CASE WHEN w.status NOT IN ('starting', 'idle', 'busy') THEN w.status
                          WHEN w.active > 0 THEN 'busy' ELSE 'idle' END,
            completed_total = w.completed_total + per.done,
            failed_total = w.failed_total + per.failed
        FROM (SELECT u.holder, sum(u.done)::integer AS done, sum(u.failed)::integer AS failed
              FROM unnest(v_holders, v_done, v_failed) AS u(holder, done, failed)
              GROUP BY u.holder ORDER BY u.holder) AS per
        WHERE w.id = per.holder;
    END IF;

    IF p_return_tasks AND cardinality(v_applied) > 0 THEN
        RETURN QUERY
        SELECT 'applied'::text, v.id, NULL::text, NULL::text, NULL::text, NULL::integer,
               NULL::integer, NULL::timestamptz, NULL::timestamptz, v.*
        FROM task_view v WHERE v.id = ANY(v_applied);
    END IF;
END;
$$;

-- The run.finished event of run p_run_id, finished just now.
CREATE OR REPLACE FUNCTION corral_run_finished(p_run_id text, p_now timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (at, name, task_id, worker_id, token, actor, reason, data)
    SELECT p_now, 'run.finished', u.task_id, u.worker_id, u.token, u.worker_id, u.error,
           jsonb_build_object('run_id', u.id, 'outcome', u.outcome, 'exit_code', u.exit_code)
    FROM runs u WHERE u.id = p_run_id;
END;
$$;

-- A failure, deferral, wait or release of exchange report p_report (with the token and
-- holder whose claim it ended): its task's change and its event.
CREATE OR REPLACE FUNCTION corral_step_aside(p_report corral_report, p_fail text[],
                                             p_defer text[], p_release text[],
                                             p_wait text[], p_now timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_error text := coalesce(p_report.error, 'failed');
    v_run_after timestamptz;
BEGIN
    IF p_report.action = 'fail' THEN
        UPDATE tasks t
        SET status = CASE WHEN p_report.give_up IS NULL THEN 'ready' ELSE 'failed' END,
            last_error = v_error,
            failure_reason = p_report.give_up,
            run_after = p_now + coalesce(p_report.retry_delay_s, 0) * interval '1 second',
            updated_at = p_now,
            finished_at = CASE WHEN p_report.give_up IS NULL THEN NULL ELSE p_now END
        WHERE t.id = p_report.task_id AND t.status = ANY(p_fail);
        INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor,
                            reason, data)
        VALUES (p_now,
                CASE WHEN p_report.give_up IS NULL THEN 'task.retry_scheduled'
                     ELSE 'task.failed' END,
                p_report.task_id, p_report.holder, p_report.token, 'running',
                CASE WHEN p_report.give_up IS NULL THEN 'ready' ELSE 'failed' END,
                p_report.actor, v_error,
                CASE WHEN p_report.give_up IS NULL
                     THEN jsonb_build_object('delay_s', p_report.retry_delay_s)
                     ELSE jsonb_build_object('failure_reason', p_report.give_up) END);
    ELSIF p_report.action = 'defer' THEN
        UPDATE tasks t
        SET status = 'ready', attempts = t.attempts - 1,
            run_after = coalesce(p_report.run_at,
                                 p_now + p_report.delay_s * interval '1 second'),
            updated_at = p_now
        WHERE t.id = p_report.task_id AND t.status = ANY(p_defer)
        RETURNING t.run_after INTO v_run_after;
        INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor,
                            reason, data)
        VALUES (p_now, 'task.deferred', p_report.task_id, p_report.holder, p_report.token,
                'running', 'ready', p_report.actor, p_report.reason,
                jsonb_build_object('run_after', corral_iso(v_run_after)));
    ELSIF p_report.action = 'wait' THEN
        -- A person must act: the attempt is given back, an earlier answer forgotten.
        UPDATE tasks t
        SET status = 'waiting', attempts = t.attempts - 1, wait_reason = p_report.reason,
            answer = NULL, answered_reason = NULL, updated_at = p_now
        WHERE t.id = p_report.task_id AND t.status = ANY(p_wait);
        INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor,
                            reason)
        VALUES (p_now, 'task.waiting', p_report.task_id, p_report.holder, p_report.token,
                'running', 'waiting', p_report.actor, p_report.reason);
    ELSE
        -- A claim another worker committed meanwhile keeps the task.
        UPDATE tasks t SET status = 'ready', attempts = t.attempts - 1,
                           run_after = greatest(t.run_after, p_now), updated_at = p_now
        WHERE t.id = p_report.task_id AND t.status = ANY(p_release)
          AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.task_id = t.id AND c.status = 'active');
        INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor,
                            reason)
        VALUES (p_now, 'task.released', p_report.task_id, p_report.holder, p_report.token,
                'running', 'ready', p_report.actor, p_report.reason);
    END IF;
END;
$$;
