-- The current schema of a corral SQLite database, version 10.
-- A new database gets this file; an older one gets migrations/NNNN_*.sql in order.
-- tests/store/test_sql_files.py checks that both roads end at the same schema.
-- Instants are REAL seconds since the Unix epoch (UTC); durations are REAL seconds.

CREATE TABLE tasks (
    seq             INTEGER PRIMARY KEY,  -- insertion order: FIFO among equal priorities
    id              TEXT    NOT NULL UNIQUE,
    title           TEXT    NOT NULL,
    description     TEXT    NOT NULL DEFAULT '',
    queue           TEXT    NOT NULL,
    kind            TEXT    NOT NULL,
    priority        INTEGER NOT NULL DEFAULT 0,
    status          TEXT    NOT NULL CHECK (status IN
                        ('blocked', 'ready', 'running', 'waiting', 'in_review', 'approved', 'done',
                         'failed', 'cancelled')),
    payload         TEXT    NOT NULL DEFAULT '{}',
    labels          TEXT    NOT NULL DEFAULT '{}',
    assignee        TEXT,
    parent_id       TEXT,
    attempts        INTEGER NOT NULL DEFAULT 0,
    max_attempts    INTEGER NOT NULL,
    crashes         INTEGER NOT NULL DEFAULT 0,
    retry_base_s    REAL    NOT NULL,
    timeout_s       REAL,
    run_after       REAL    NOT NULL,
    requires_review INTEGER NOT NULL DEFAULT 0,
    branch          TEXT,
    result          TEXT,
    last_error      TEXT,
    failure_reason  TEXT,
    created_at      REAL    NOT NULL,
    updated_at      REAL    NOT NULL,
    finished_at     REAL,
    namespace       TEXT    NOT NULL DEFAULT 'default',  -- see migrations/0019_namespaces.sql
    -- Why the task waits for a person (model/waiting.py), while it is `waiting`; then the
    -- person's answer and the reason it answered, which the task's next runs are told
    -- (runtime/worker/prompts.py) until it waits again. See migrations/0023_waiting.sql.
    wait_reason     TEXT,
    answer          TEXT,
    answered_reason TEXT,
    -- The site holding its worktree and its agent's session, `<hostname>:<clone>`, as its
    -- last run in a worktree entered it: while a live worker at that site can run it, it is
    -- claimed there alone (the claimable filter). See migrations/0027_sites.sql.
    site            TEXT
);

-- The claim query seeks namespace and status = 'ready' here and walks in claim order (priority, then
-- age), stopping at the first task that matches: no sort, whatever the queue's depth.
CREATE INDEX tasks_claim_order ON tasks (namespace, status, priority DESC, seq);

CREATE TABLE task_deps (
    task_id    TEXT NOT NULL REFERENCES tasks (id),
    depends_on TEXT NOT NULL REFERENCES tasks (id),
    PRIMARY KEY (task_id, depends_on)
) WITHOUT ROWID;

CREATE INDEX task_deps_by_dependency ON task_deps (depends_on);

CREATE TABLE workers (
    id                TEXT    PRIMARY KEY,
    name              TEXT    NOT NULL,
    hostname          TEXT    NOT NULL,
    pid               INTEGER,
    version           TEXT    NOT NULL DEFAULT '',
    queues            TEXT    NOT NULL DEFAULT '[]',
    kinds             TEXT    NOT NULL DEFAULT '[]',
    max_concurrent    INTEGER NOT NULL DEFAULT 1,
    labels            TEXT    NOT NULL DEFAULT '{}',
    status            TEXT    NOT NULL CHECK (status IN
                          ('starting', 'idle', 'busy', 'draining', 'stale', 'dead', 'offline')),
    registered_at     REAL    NOT NULL,
    last_heartbeat_at REAL    NOT NULL,
    completed_total   INTEGER NOT NULL DEFAULT 0,
    failed_total      INTEGER NOT NULL DEFAULT 0,
    offline_reason    TEXT,
    cpu_percent       REAL,
    rss_bytes         INTEGER,
    -- When its process started (seconds since the epoch), as it registered: with the
    -- process's mark, what proves a pid is still this worker before a signal.
    pid_started_at    REAL,
    -- The provider account its agents spend (`claude:work`), if any: claims count
    -- against that account's cap and stop while it is parked.
    provider          TEXT,
    -- The heartbeat's figures of the running tasks' whole process trees (the agent and
    -- every descendant); cpu_percent and rss_bytes above are the runner's own.
    agent_cpu_percent REAL,
    agent_rss_bytes   INTEGER,
    -- What the worker says: the tasks it runs, and what it completed and failed since
    -- its beat before (the deltas) and in all (their sums); completed_total and
    -- failed_total are the store's own count of the claims it ended.
    reported_active   INTEGER,
    completed_delta   INTEGER NOT NULL DEFAULT 0,
    failed_delta      INTEGER NOT NULL DEFAULT 0,
    reported_completed_total INTEGER NOT NULL DEFAULT 0,
    reported_failed_total    INTEGER NOT NULL DEFAULT 0,
    namespace         TEXT    NOT NULL DEFAULT 'default',
    -- Where a worker runs tasks in worktrees, `<hostname>:<clone>` (NULL: not in
    -- worktrees): tasks kept at that site wait for it while it lives.
    site              TEXT,
    -- The SHA-256 of the key in its runner's environment as it started (CORRAL_WORKER_KEY),
    -- and of the key its runs' processes are given (CORRAL_RUN_KEY): what proves a process
    -- is this worker's before corral signals it (foundation/processes.py). NULL: none.
    key_hash          TEXT,
    runs_key_hash     TEXT,
    -- When it was deregistered (went offline); NULL while it is registered, dead too.
    deregistered_at   REAL
);

-- One live worker per (namespace, host, pid): a second registration is refused by the
-- database while the first is not dead or offline (store/workers.py).
CREATE UNIQUE INDEX workers_one_live_per_process ON workers (namespace, hostname, pid)
    WHERE pid IS NOT NULL AND status IN ('starting', 'idle', 'busy', 'draining', 'stale');

CREATE INDEX workers_watched ON workers (status)
    WHERE status IN ('starting', 'idle', 'busy', 'draining', 'stale');

-- The live workers of a site, for the claimable filter's test of a kept task.
CREATE INDEX workers_by_site ON workers (site, namespace) WHERE site IS NOT NULL;

-- token is the fencing token: AUTOINCREMENT never reuses a value, so tokens only grow.
CREATE TABLE claims (
    token            INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id          TEXT    NOT NULL REFERENCES tasks (id),
    worker_id        TEXT    NOT NULL REFERENCES workers (id),
    status           TEXT    NOT NULL CHECK (status IN ('active', 'released', 'expired', 'completed')),
    lease_s          REAL    NOT NULL,
    claimed_at       REAL    NOT NULL,
    lease_expires_at REAL    NOT NULL,
    deadline_at      REAL,
    renewals         INTEGER NOT NULL DEFAULT 0,
    ended_at         REAL,
    -- When its task became claimable (its run_after as it was claimed): the queue wait
    -- /metrics reports is claimed_at - ready_at. NULL for claims made before version 15.
    ready_at         REAL
);

-- At most one active claim per task, enforced by the database.
CREATE UNIQUE INDEX claims_one_active_per_task ON claims (task_id) WHERE status = 'active';
CREATE INDEX claims_active_by_worker ON claims (worker_id) WHERE status = 'active';

CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          REAL    NOT NULL,
    name        TEXT    NOT NULL,
    task_id     TEXT,
    worker_id   TEXT,
    token       INTEGER,
    from_status TEXT,
    to_status   TEXT,
    actor       TEXT    NOT NULL,
    reason      TEXT,
    data        TEXT
);
CREATE INDEX events_by_task ON events (task_id, id) WHERE task_id IS NOT NULL;
CREATE INDEX events_by_name_at ON events (name, at);

-- One row per attempt at a task: what ran, where, and how it ended. `outcome` and
-- `finished_at` are set together, once; after that the row never changes (the trigger
-- below refuses it even to a query that forgets `WHERE finished_at IS NULL`).
CREATE TABLE runs (
    id               TEXT    PRIMARY KEY,
    task_id          TEXT    NOT NULL REFERENCES tasks (id),
    worker_id        TEXT    NOT NULL REFERENCES workers (id),
    token            INTEGER NOT NULL,
    attempt          INTEGER NOT NULL,
    started_at       REAL    NOT NULL,
    finished_at      REAL,
    exit_code        INTEGER,
    outcome          TEXT    CHECK (outcome IN ('done', 'failed', 'timeout', 'killed',
                                                'lease_lost', 'deferred', 'shutdown', 'stalled',
                                                'waiting')),
    error            TEXT,
    prompt           TEXT,
    command          TEXT    NOT NULL DEFAULT '[]',
    cwd              TEXT    NOT NULL,
    base_commit      TEXT,
    final_commit     TEXT,
    transcript_path  TEXT,
    stderr_path      TEXT,
    usage            TEXT,
    stalled_at       REAL,
    last_progress_at REAL,
    progress         TEXT,
    -- What was reported of its task under its token from outside the runner (the task's
    -- own command ran `corral done`, `fail`, `defer` or `submit`): the run ends as that,
    -- whoever finishes it.
    reported         TEXT    CHECK (reported IN ('done', 'failed', 'deferred', 'waiting')),
    -- The agent profile that ran, the agent's own session (and the run whose session it
    -- resumed), why the agent said it stopped, and why it waits for a person.
    agent            TEXT,
    session_id       TEXT,
    resumed_from     TEXT,
    stop_reason      TEXT,
    waiting          TEXT,
    CHECK ((finished_at IS NULL) = (outcome IS NULL))
);

CREATE INDEX runs_by_task ON runs (task_id, started_at);
CREATE INDEX runs_by_worker ON runs (worker_id);
-- The runs waiting for a person now, as `status` lists them.
CREATE INDEX runs_waiting ON runs (started_at) WHERE waiting IS NOT NULL AND finished_at IS NULL;
CREATE INDEX runs_unfinished_by_worker ON runs (worker_id) WHERE finished_at IS NULL;

-- The files a runner copied out of a task's working directory after one of its runs
-- (`[worker] artifacts`), or skipped: `skipped` says why (past the run's size cap), and
-- then no copy exists and sha256 is NULL. `path` is relative to the working directory.
CREATE TABLE run_artifacts (
    run_id     TEXT    NOT NULL REFERENCES runs (id),
    path       TEXT    NOT NULL,
    size_bytes INTEGER NOT NULL,
    sha256     TEXT,
    skipped    TEXT,
    PRIMARY KEY (run_id, path)
) WITHOUT ROWID;

CREATE TRIGGER runs_immutable_once_finished BEFORE UPDATE ON runs
WHEN OLD.finished_at IS NOT NULL
BEGIN
    SELECT RAISE(ABORT, 'run is finished');
END;

-- Limits of one queue; NULL is no limit. The claim queries pass a queue by while it is at
-- max_running or has started `rate` claims in the last 60 s; enqueue refuses a task while
-- max_ready tasks wait. A queue with no row has no limits.
CREATE TABLE queue_limits (
    namespace   TEXT    NOT NULL DEFAULT 'default',
    queue       TEXT    NOT NULL,
    max_ready   INTEGER CHECK (max_ready IS NULL OR max_ready > 0),
    max_running INTEGER CHECK (max_running IS NULL OR max_running > 0),
    rate        REAL    CHECK (rate IS NULL OR rate > 0),  -- claims started per minute
    updated_at  REAL    NOT NULL,
    PRIMARY KEY (namespace, queue)
) WITHOUT ROWID;

-- A provider account agents spend (`claude`, `claude:work`): capped at max_running agents
-- at once across hosts (NULL: no cap), paused by an operator, or parked until its usage
-- limit resets, each in one namespace. The claim reads the claimant's provider row in the
-- claimant's namespace; one with no row is free.
CREATE TABLE providers (
    name         TEXT    NOT NULL,
    max_running  INTEGER CHECK (max_running IS NULL OR max_running >= 0),
    paused       INTEGER NOT NULL DEFAULT 0,
    parked_until REAL,
    parked_at    REAL,
    park_reason  TEXT,
    updated_at   REAL NOT NULL,
    namespace    TEXT    NOT NULL DEFAULT 'default',  -- the one whose agents it holds back
    PRIMARY KEY (namespace, name)
);

CREATE INDEX workers_by_provider ON workers (provider) WHERE provider IS NOT NULL;

-- The rate limit counts the claims started in the last minute.
CREATE INDEX claims_by_start ON claims (claimed_at);

-- Retention deletes finished tasks; the check that no claim still names one reads this.
CREATE INDEX claims_by_task ON claims (task_id);

-- A task with its active claim (if any) and its dependencies, as every read wants it.
CREATE VIEW task_view AS
SELECT t.*,
       c.token AS token,
       c.worker_id AS worker_id,
       c.lease_expires_at AS lease_expires_at,
       (SELECT json_group_array(d.depends_on) FROM task_deps d WHERE d.task_id = t.id)
           AS depends_on
FROM tasks t
LEFT JOIN claims c ON c.task_id = t.id AND c.status = 'active';

-- A worker with the number of its active claims.
CREATE VIEW worker_view AS
-- seq, the rowid, orders the workers as they registered (`worker list --after`).
SELECT w.*, w.rowid AS seq,
       (SELECT count(*) FROM claims c WHERE c.worker_id = w.id AND c.status = 'active') AS active
FROM workers w;

-- The review of a task's branch: where it came from, what was said, what was approved.
-- The task's status says where the review stands; this row keeps the details.
CREATE TABLE reviews (
    task_id         TEXT    PRIMARY KEY REFERENCES tasks (id),
    base_ref        TEXT,
    worktree_path   TEXT,
    note            TEXT,
    pr_url          TEXT,
    approved_commit TEXT,
    approve_note    TEXT,
    changes_note    TEXT,
    conflict_files  TEXT,
    merged_commit   TEXT,
    -- When its `review.stale` event was raised (once; a new submit clears it).
    stale_noted_at  REAL,
    -- Where the work ended (landed, in_review, kept, no_change, refused), the backup refs
    -- corral wrote (a JSON list, oldest first), whether corral deleted the branch itself.
    outcome         TEXT,
    backup_refs     TEXT,
    branch_deleted  INTEGER NOT NULL DEFAULT 0,
    -- Where the pull request at pr_url stands: open (or unset), merged, closed.
    pr_state        TEXT,
    -- When the outcome was last recorded: `status` reads the newest and oldest by it.
    outcome_at      REAL,
    -- What its last run that disabled tests disabled (a JSON list): migrations/0035.
    tests_disabled  TEXT
) WITHOUT ROWID;
CREATE INDEX reviews_by_outcome ON reviews (outcome, outcome_at) WHERE outcome IS NOT NULL;

-- Inboxes of workers (by name) and of the orchestrator, one set per namespace: appended,
-- never rewritten, read in id order. An acknowledgement is a row of its own, so a message
-- never changes.
CREATE TABLE messages (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        REAL    NOT NULL,
    sender    TEXT    NOT NULL,
    recipient TEXT    NOT NULL,
    type      TEXT    NOT NULL,
    body      TEXT,
    namespace TEXT    NOT NULL DEFAULT 'default',  -- its sender's; read there alone
    -- Sent again under the same key, it is this message, not a second one (an outbox's).
    idempotency_key TEXT
);

CREATE INDEX messages_by_recipient ON messages (recipient, id);
CREATE UNIQUE INDEX messages_by_key ON messages (namespace, idempotency_key)
    WHERE idempotency_key IS NOT NULL;

CREATE TRIGGER messages_never_change BEFORE UPDATE ON messages
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only');
END;

CREATE TRIGGER messages_never_go BEFORE DELETE ON messages
BEGIN
    SELECT RAISE(ABORT, 'messages are append-only');
END;

CREATE TABLE message_acks (
    message_id INTEGER PRIMARY KEY REFERENCES messages (id),
    at         REAL    NOT NULL,
    actor      TEXT    NOT NULL
);

-- The orchestrator in charge of this store, or the last one that was. Starting takes the
-- row by compare-and-set (stopped, or the observed dead holder); heartbeat_at lets an
-- orchestrator on another host see that the holder died. `slots` is the pool as the
-- holder last wrote it (JSON list), `config` the settings it runs with (JSON object).
CREATE TABLE orchestrator (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    status            TEXT    NOT NULL DEFAULT 'stopped'
                          CHECK (status IN ('stopped', 'starting', 'running', 'stopping')),
    pid               INTEGER,
    host              TEXT,
    started_at        REAL,
    heartbeat_at      REAL,
    last_reconcile_at REAL,
    stopped_at        REAL,
    stop_timeout_s    REAL,
    config            TEXT    NOT NULL DEFAULT '{}',
    slots             TEXT    NOT NULL DEFAULT '[]',
    -- The SHA-256 of the key in its holder's environment as it started
    -- (CORRAL_ORCHESTRATOR_KEY): what proves the pid is that orchestrator before
    -- `orchestrator stop` signals it (foundation/processes.py). NULL: none.
    key_hash          TEXT
);

INSERT INTO orchestrator (id) VALUES (1);

-- On PostgreSQL several orchestrators share a store, one leading and the others standing
-- by, each with a row here. SQLite keeps its single orchestrator in the `orchestrator`
-- row and leaves this table empty; it exists so both stores have one schema version.
CREATE TABLE orchestrators (
    host         TEXT    PRIMARY KEY,
    pid          INTEGER NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('leader', 'standby')),
    status       TEXT    NOT NULL CHECK (status IN ('running', 'stopping', 'stopped')),
    started_at   REAL    NOT NULL,
    heartbeat_at REAL    NOT NULL,
    stopped_at   REAL
);

-- API tokens for `corral serve` (model/tokens.py): a token's secret is never stored, only
-- its SHA-256; a revoked or expired token is kept, so `token list` can say so.
CREATE TABLE tokens (
    id           TEXT  PRIMARY KEY,
    name         TEXT  NOT NULL UNIQUE,
    role         TEXT  NOT NULL CHECK (role IN ('viewer', 'worker', 'operator', 'admin')),
    queues       TEXT  NOT NULL DEFAULT '[]',
    secret_hash  TEXT  NOT NULL,
    created_at   REAL NOT NULL,
    expires_at   REAL,
    revoked_at   REAL,
    namespace    TEXT  NOT NULL DEFAULT 'default'  -- the one its holder acts in
);

-- Cron schedules (model/schedules.py): due ones are found by next_fire_at alone
-- (schedules_due); a fire happens once because its key is unique.
CREATE TABLE schedules (
    id               TEXT    PRIMARY KEY,
    cron             TEXT    NOT NULL,
    timezone         TEXT    NOT NULL,
    template         TEXT    NOT NULL,  -- the fields of the task each fire creates (JSON)
    overlap          TEXT    NOT NULL CHECK (overlap IN ('skip', 'buffer-one', 'allow')),
    max_catchup      INTEGER NOT NULL CHECK (max_catchup > 0),
    catchup_window_s REAL,
    paused           INTEGER NOT NULL DEFAULT 0,
    pause_note       TEXT,
    next_fire_at     REAL,
    last_fire_at     REAL,
    last_task_id     TEXT,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    namespace        TEXT    NOT NULL DEFAULT 'default'  -- where its fires' tasks go
);

CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE paused = 0;

-- A schedule's fires are read by key range: `schedule:{id}:` then the time, in RFC 3339
-- UTC, which sorts as time does; a pass inserts into this one index only.
CREATE TABLE schedule_fires (
    key         TEXT PRIMARY KEY,
    schedule_id TEXT NOT NULL,
    fire_at     REAL NOT NULL,
    outcome     TEXT NOT NULL CHECK (outcome IN ('created', 'skipped', 'missed')),
    task_id     TEXT,
    note        TEXT,
    recorded_at REAL NOT NULL
) WITHOUT ROWID;

-- A parent's children are read by parent_id (`corral show`, `list --parent`, cancel's cascade).
CREATE INDEX tasks_by_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;

-- Version 21: the dashboard's text search over the tasks' title, description and payload
-- reads an index, not every task: an FTS5 table of trigrams (a substring of three
-- characters or more is found by its trigrams, case-insensitively), its content read from
-- the tasks themselves, kept by triggers in the transaction that writes the task. A claim
-- or any other change of state does not touch it: only a new, deleted or retitled task.
CREATE VIRTUAL TABLE task_text USING fts5(
    title, description, payload, content='tasks', content_rowid='seq', tokenize='trigram',
    columnsize=0
);

CREATE TRIGGER task_text_added AFTER INSERT ON tasks BEGIN
    INSERT INTO task_text (rowid, title, description, payload)
    VALUES (new.seq, new.title, new.description, new.payload);
END;

CREATE TRIGGER task_text_removed AFTER DELETE ON tasks BEGIN
    INSERT INTO task_text (task_text, rowid, title, description, payload)
    VALUES ('delete', old.seq, old.title, old.description, old.payload);
END;

CREATE TRIGGER task_text_changed AFTER UPDATE OF title, description, payload ON tasks BEGIN
    INSERT INTO task_text (task_text, rowid, title, description, payload)
    VALUES ('delete', old.seq, old.title, old.description, old.payload);
    INSERT INTO task_text (rowid, title, description, payload)
    VALUES (new.seq, new.title, new.description, new.payload);
END;

-- A dashboard sign-in (corral/dashboard_sessions.py): the session cookie holds this row's
-- id and a secret whose hash is kept here, never the API token it was opened with, so
-- signing out (ended_at, set once) makes the cookie useless for good. The token is
-- checked again on every request: revoking it ends its sessions too.
CREATE TABLE dashboard_sessions (
    id          TEXT PRIMARY KEY,
    secret_hash TEXT NOT NULL,
    token_id    TEXT NOT NULL REFERENCES tokens (id),
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    ended_at    REAL
);

-- Version 34: day caps on what agents spend (issue 31), per queue and per provider account
-- of a namespace: dollars and billed tokens a day (model/budgets.py). A run that reaches
-- one is stopped and its task deferred to the next day, when the cap lifts itself.
CREATE TABLE day_caps (
    namespace    TEXT    NOT NULL DEFAULT 'default',
    scope        TEXT    NOT NULL CHECK (scope IN ('queue', 'provider')),
    name         TEXT    NOT NULL,
    max_cost_usd REAL    CHECK (max_cost_usd IS NULL OR max_cost_usd > 0),
    max_tokens   INTEGER CHECK (max_tokens IS NULL OR max_tokens > 0),
    updated_at   REAL    NOT NULL,
    PRIMARY KEY (namespace, scope, name)
);
