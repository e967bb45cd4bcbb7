-- The current schema of a corral PostgreSQL database, version 10. Its functions are in
-- functions.sql, which the driver applies after this file.
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
                        ('blocked', 'ready', 'running', 'waiting', 'in_review', 'approved', 'done',
                         'failed', 'cancelled')),
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
    finished_at     timestamptz,
    namespace       text             NOT NULL DEFAULT 'default',  -- migrations/0019
    -- Why the task waits for a person (model/waiting.py), while it is `waiting`; then the
    -- person's answer and the reason it answered, which the task's next runs are told
    -- (runtime/worker/prompts.py) until it waits again. See migrations/0023_waiting.sql.
    wait_reason     text,
    answer          text,
    answered_reason text,
    -- The site holding its worktree and its agent's session, `<hostname>:<clone>`, as its
    -- last run in a worktree entered it: while a live worker at that site can run it, it is
    -- claimed there alone (the claimable filter). See migrations/0027_sites.sql.
    site            text
);

-- The claim query walks one namespace's ready tasks in claim order (priority, then age) and stops at the
-- first one that matches and is not locked by another claimer (SKIP LOCKED).
CREATE INDEX tasks_ready_order ON tasks (namespace, priority DESC, seq) WHERE status = 'ready';
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
    active            integer          NOT NULL DEFAULT 0,
    -- When its process started (seconds since the epoch), as it registered: with the
    -- process's mark, what proves a pid is still this worker before a signal.
    pid_started_at    double precision,
    -- The provider account its agents spend (`claude:work`), if any: claims count
    -- against that account's cap and stop while it is parked.
    provider          text,
    -- The heartbeat's figures of the running tasks' whole process trees (the agent and
    -- every descendant); cpu_percent and rss_bytes above are the runner's own.
    agent_cpu_percent double precision,
    agent_rss_bytes   bigint,
    -- What the worker says: the tasks it runs, and what it completed and failed since
    -- its beat before (the deltas) and in all (their sums); completed_total and
    -- failed_total are the store's own count of the claims it ended.
    reported_active   integer,
    completed_delta   integer          NOT NULL DEFAULT 0,
    failed_delta      integer          NOT NULL DEFAULT 0,
    reported_completed_total bigint    NOT NULL DEFAULT 0,
    reported_failed_total    bigint    NOT NULL DEFAULT 0,
    -- Orders the workers as they registered: the keyset of `worker list --after`.
    seq               bigint           GENERATED ALWAYS AS IDENTITY UNIQUE,
    namespace         text             NOT NULL DEFAULT 'default',
    -- Where a worker runs tasks in worktrees, `<hostname>:<clone>` (NULL: not in
    -- worktrees): tasks kept at that site wait for it while it lives.
    site              text,
    -- The SHA-256 of the key in its runner's environment as it started (CORRAL_WORKER_KEY),
    -- and of the key its runs' processes are given (CORRAL_RUN_KEY): what proves a process
    -- is this worker's before corral signals it (foundation/processes.py). NULL: none.
    key_hash          text,
    runs_key_hash     text,
    -- When it was deregistered (went offline); NULL while it is registered, dead too.
    deregistered_at   timestamptz
);

-- One live worker per (namespace, host, pid): a second registration is refused by the
-- database while the first is not dead or offline (store/workers.py).
CREATE UNIQUE INDEX workers_one_live_per_process ON workers (namespace, hostname, pid)
    WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

CREATE INDEX workers_watched ON workers (status)
    WHERE status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- The live workers of a site, for the claimable filter's test of a kept task.
CREATE INDEX workers_by_site ON workers (site, namespace) WHERE site IS NOT NULL;

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
    ended_at         timestamptz,
    -- When its task became claimable (its run_after as it was claimed): the queue wait
    -- /metrics reports is claimed_at - ready_at. NULL for claims made before version 15.
    ready_at         timestamptz
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
    data        jsonb,
    -- The writing transaction's id: a follower reads only events of transactions that
    -- have ended, in (xid, id) order (docs/state-machines.md, Following events).
    xid         xid8        NOT NULL DEFAULT pg_current_xact_id(),
    -- Its task's namespace, else its worker's, else the default (the orchestrator's own):
    -- set as it is written (events_namespace), so a page of the log reads no other table.
    namespace   text        NOT NULL DEFAULT 'default'
);

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

CREATE INDEX events_by_task ON events (task_id, id) WHERE task_id IS NOT NULL;
CREATE INDEX events_by_worker ON events (worker_id, id) WHERE worker_id IS NOT NULL;
CREATE INDEX events_by_xid ON events (xid, id);
CREATE INDEX events_by_name_at ON events (name, at);

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
                                                    'lease_lost', 'deferred', 'shutdown', 'stalled',
                                                    'waiting')),
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
    -- What was reported of its task under its token from outside the runner (the task's
    -- own command ran `corral done`, `fail`, `defer` or `submit`): the run ends as that,
    -- whoever finishes it.
    reported         text        CHECK (reported IN ('done', 'failed', 'deferred', 'waiting')),
    -- The agent profile that ran, the agent's own session (and the run whose session it
    -- resumed), why the agent said it stopped, and why it waits for a person.
    agent            text,
    session_id       text,
    resumed_from     text,
    stop_reason      text,
    waiting          text,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

CREATE INDEX runs_by_task ON runs (task_id, started_at);
CREATE INDEX runs_by_worker ON runs (worker_id, seq);
-- The runs waiting for a person now, as `status` lists them.
CREATE INDEX runs_waiting ON runs (started_at) WHERE waiting IS NOT NULL AND finished_at IS NULL;
CREATE INDEX runs_unfinished_by_worker ON runs (worker_id) WHERE finished_at IS NULL;

-- The files a runner copied out of a task's working directory after one of its runs
-- (`[worker] artifacts`), or skipped: `skipped` says why (past the run's size cap), and
-- then no copy exists and sha256 is NULL. `path` is relative to the working directory.
CREATE TABLE run_artifacts (
    run_id     text   NOT NULL REFERENCES runs (id),
    path       text   NOT NULL,
    size_bytes bigint NOT NULL,
    sha256     text,
    skipped    text,
    PRIMARY KEY (run_id, path)
);

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
    namespace   text             NOT NULL DEFAULT 'default',
    queue       text             NOT NULL,
    max_ready   integer          CHECK (max_ready IS NULL OR max_ready > 0),
    max_running integer          CHECK (max_running IS NULL OR max_running > 0),
    rate        double precision CHECK (rate IS NULL OR rate > 0),  -- claims per minute
    updated_at  timestamptz      NOT NULL,
    PRIMARY KEY (namespace, queue)
);

-- A provider account agents spend (`claude`, `claude:work`): capped at max_running agents
-- at once across hosts (NULL: no cap), paused by an operator, or parked until its usage
-- limit resets, each in one namespace. The claim reads the claimant's provider row in the
-- claimant's namespace; one with no row is free.
CREATE TABLE providers (
    name         text    NOT NULL,
    max_running  integer CHECK (max_running IS NULL OR max_running >= 0),
    paused       boolean     NOT NULL DEFAULT false,
    parked_until timestamptz,
    parked_at    timestamptz,
    park_reason  text,
    updated_at   timestamptz NOT NULL,
    namespace    text    NOT NULL DEFAULT 'default',  -- the one whose agents it holds back
    PRIMARY KEY (namespace, name)
);

CREATE INDEX workers_by_provider ON workers (provider) WHERE provider IS NOT NULL;

-- The rate limit counts the claims started in the last minute.
CREATE INDEX claims_by_start ON claims (claimed_at);

-- Retention deletes finished tasks; the check that no claim still names one reads this.
CREATE INDEX claims_by_task ON claims (task_id);

-- The room left in a queue with a max_ready limit, counted after locking its limits row:
-- enqueues into one limited queue take turns, and each counts the tasks the previous one
-- committed (a function, because only a later statement sees what a lock waited for).
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
    merged_commit   text,
    -- When its `review.stale` event was raised (once; a new submit clears it).
    stale_noted_at  timestamptz,
    -- Where the work ended (landed, in_review, kept, no_change, refused), the backup refs
    -- corral wrote (a JSON list, oldest first), whether corral deleted the branch itself.
    outcome         text,
    backup_refs     jsonb,
    branch_deleted  boolean NOT NULL DEFAULT false,
    -- Where the pull request at pr_url stands: open (or unset), merged, closed.
    pr_state        text,
    -- When the outcome was last recorded: `status` reads the newest and oldest by it.
    outcome_at      timestamptz,
    -- What its last run that disabled tests disabled (a JSON list): migrations/0035.
    tests_disabled  jsonb
);
CREATE INDEX reviews_by_outcome ON reviews (outcome, outcome_at) WHERE outcome IS NOT NULL;

-- Inboxes of workers (by name) and of the orchestrator, one set per namespace: appended,
-- never rewritten, read in id order. An acknowledgement is a row of its own, so a message
-- never changes.
CREATE TABLE messages (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL,
    sender    text        NOT NULL,
    recipient text        NOT NULL,
    type      text        NOT NULL,
    body      jsonb,
    namespace text        NOT NULL DEFAULT 'default',  -- its sender's; read there alone
    -- Sent again under the same key, it is this message, not a second one (an outbox's).
    idempotency_key text
);

CREATE INDEX messages_by_recipient ON messages (recipient, id);
CREATE UNIQUE INDEX messages_by_key ON messages (namespace, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

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
    slots             jsonb            NOT NULL DEFAULT '[]',
    -- The SHA-256 of the key in its holder's environment as it started
    -- (CORRAL_ORCHESTRATOR_KEY): what proves the pid is that orchestrator before
    -- `orchestrator stop` signals it (foundation/processes.py). NULL: none.
    key_hash          text
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

-- The sessions listening on this schema's events channel (`events --follow`), by backend
-- pid: each adds itself when it listens and removes itself when it stops; one that died
-- is removed by the next to listen. A statement that appends events notifies the channel,
-- corral_events_ and the md5 of the schema's name, only while a listed follower lives: a
-- transaction that notifies takes a lock that serializes every such commit on the server
-- (at 4 and 8 claiming processes, bench/pg_claim_cycle.py lost a third of its cycles when
-- every exchange notified). The server folds a transaction's notifications into one,
-- delivered at commit.
CREATE TABLE event_followers (
    pid integer PRIMARY KEY
);

CREATE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- An empty table first: reading pg_stat_activity costs more than the insert.
    IF EXISTS (SELECT 1 FROM event_followers)
       AND EXISTS (SELECT 1 FROM event_followers f JOIN pg_stat_activity a ON a.pid = f.pid)
    THEN
        PERFORM pg_notify('corral_events_' || md5(TG_TABLE_SCHEMA), '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();

-- A report of the exchange as corral_exchange reads it (functions.sql): the fields of
-- corral.model.batches.Report, with a failure's retry decided (retry_delay_s or give_up)
-- and, for a report from outside a run, what its run notes (reported).
CREATE TYPE corral_report AS (
    task_id       text,
    token         bigint,
    holder        text,
    action        text,
    actor         text,
    run_id        text,
    outcome       text,
    exit_code     integer,
    error         text,
    usage         jsonb,
    final_commit  text,
    result        jsonb,
    delay_s       double precision,
    run_at        timestamptz,
    reason        text,
    retry_delay_s double precision,
    give_up       text,
    reported      text
);

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

-- API tokens for `corral serve` (model/tokens.py): a token's secret is never stored, only
-- its SHA-256; a revoked or expired token is kept, so `token list` can say so.
CREATE TABLE tokens (
    id           text  PRIMARY KEY,
    name         text  NOT NULL UNIQUE,
    role         text  NOT NULL CHECK (role IN ('viewer', 'worker', 'operator', 'admin')),
    queues       jsonb  NOT NULL DEFAULT '[]',
    secret_hash  text  NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    namespace    text  NOT NULL DEFAULT 'default'  -- the one its holder acts in
);

-- Cron schedules (model/schedules.py): due ones are found by next_fire_at alone
-- (schedules_due); a fire happens once because its key is unique.
CREATE TABLE schedules (
    id               text             PRIMARY KEY,
    cron             text             NOT NULL,
    timezone         text             NOT NULL,
    template         jsonb            NOT NULL,  -- the fields of the task each fire creates
    overlap          text             NOT NULL CHECK (overlap IN ('skip', 'buffer-one', 'allow')),
    max_catchup      integer          NOT NULL CHECK (max_catchup > 0),
    catchup_window_s double precision,
    paused           boolean          NOT NULL DEFAULT false,
    pause_note       text,
    next_fire_at     timestamptz,
    last_fire_at     timestamptz,
    last_task_id     text,
    created_at       timestamptz      NOT NULL,
    updated_at       timestamptz      NOT NULL,
    namespace        text             NOT NULL DEFAULT 'default'  -- where its fires' tasks go
);

CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE NOT paused;

-- A schedule's fires are read by key range: `schedule:{id}:` then the time, in RFC 3339
-- UTC, which sorts as time does; a pass inserts into this one index only.
CREATE TABLE schedule_fires (
    key         text        COLLATE "C" PRIMARY KEY,  -- byte order: ranges by prefix
    schedule_id text        NOT NULL,
    fire_at     timestamptz NOT NULL,
    outcome     text        NOT NULL CHECK (outcome IN ('created', 'skipped', 'missed')),
    task_id     text,
    note        text,
    recorded_at timestamptz NOT NULL
);

-- A parent's children are read by parent_id (`corral show`, `list --parent`, cancel's cascade).
CREATE INDEX tasks_by_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;

-- Version 21: the dashboard's text search over the tasks' title, description and payload
-- reads a trigram index (pg_trgm), not every task: an ILIKE '%text%' of three characters
-- or more is answered from the trigrams of the searched text, the same substring match
-- SQLite's FTS5 trigram table gives.
--
-- The searched text lives in a table of its own, task_text, kept by a trigger in the
-- transaction that adds, deletes or retitles a task. An index on `tasks` itself would be
-- written by every claim and completion: a change of status is never a HOT update
-- (status is indexed), so each would add a new version's few hundred trigrams to the GIN
-- index. Claims do not touch task_text.
CREATE TABLE task_text (
    seq  bigint PRIMARY KEY,  -- the task's
    body text   NOT NULL      -- title, description and payload's JSON text, one per line
);

CREATE FUNCTION corral_keep_task_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM task_text WHERE seq = OLD.seq;
        RETURN OLD;
    END IF;
    INSERT INTO task_text (seq, body)
    VALUES (NEW.seq, NEW.title || E'\n' || NEW.description || E'\n' || NEW.payload::text)
    ON CONFLICT (seq) DO UPDATE SET body = EXCLUDED.body;
    RETURN NEW;
END
$$;

CREATE TRIGGER task_text_kept AFTER INSERT OR DELETE OR UPDATE OF title, description, payload
ON tasks FOR EACH ROW EXECUTE FUNCTION corral_keep_task_text();

-- The extension is database-wide, so it goes in `public` (a store per schema shares it;
-- dropping one schema must not drop it). Where it cannot be created (no privilege, not
-- installed) the index is left out and a search scans task_text: say so and go on.
DO $$
DECLARE
    home text;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
    EXCEPTION
        WHEN unique_violation OR duplicate_object THEN
            NULL;  -- another store's migration created it meanwhile
        WHEN insufficient_privilege OR undefined_file OR invalid_schema_name THEN
            RAISE NOTICE 'pg_trgm is not available (%): the task search scans', SQLERRM;
            RETURN;
    END;
    SELECT extnamespace::regnamespace::text INTO home FROM pg_extension WHERE extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX task_text_trigrams ON task_text USING gin (body %s.gin_trgm_ops)', home);
END
$$;

-- A dashboard sign-in (corral/dashboard_sessions.py): the session cookie holds this row's
-- id and a secret whose hash is kept here, never the API token it was opened with, so
-- signing out (ended_at, set once) makes the cookie useless for good. The token is
-- checked again on every request: revoking it ends its sessions too.
CREATE TABLE dashboard_sessions (
    id          text        PRIMARY KEY,
    secret_hash text        NOT NULL,
    token_id    text        NOT NULL REFERENCES tokens (id),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    ended_at    timestamptz
);

-- Version 34: day caps on what agents spend (issue 31), per queue and per provider account
-- of a namespace: dollars and billed tokens a day (model/budgets.py). A run that reaches
-- one is stopped and its task deferred to the next day, when the cap lifts itself.
CREATE TABLE day_caps (
    namespace    text             NOT NULL DEFAULT 'default',
    scope        text             NOT NULL CHECK (scope IN ('queue', 'provider')),
    name         text             NOT NULL,
    max_cost_usd double precision CHECK (max_cost_usd IS NULL OR max_cost_usd > 0),
    max_tokens   bigint           CHECK (max_tokens IS NULL OR max_tokens > 0),
    updated_at   timestamptz      NOT NULL,
    PRIMARY KEY (namespace, scope, name)
);
