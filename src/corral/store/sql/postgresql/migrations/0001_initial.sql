-- Version 1: tasks, dependencies, workers, claims (leases) and events.
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
                        ('blocked', 'ready', 'running', 'in_review', 'done', 'failed', 'cancelled')),
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
    rss_bytes         bigint
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
CREATE INDEX claims_by_task ON claims (task_id, token);

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

-- A worker with the number of its active claims.
CREATE VIEW worker_view AS
SELECT w.*,
       (SELECT count(*) FROM claims c WHERE c.worker_id = w.id AND c.status = 'active')::integer
           AS active
FROM workers w;
