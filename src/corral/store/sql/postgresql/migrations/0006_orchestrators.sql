-- Version 6: several orchestrators per store (PostgreSQL), and ready tasks wake idle runners.

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
-- changes, recovered) notifies channel corral_ready with its queue, in its own
-- transaction: the notification is delivered at commit, or never if it rolls back.
CREATE FUNCTION tasks_notify_ready() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'ready' THEN
        PERFORM pg_notify('corral_ready', NEW.queue);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER tasks_ready_notify AFTER INSERT OR UPDATE OF status ON tasks
    FOR EACH ROW WHEN (NEW.status = 'ready') EXECUTE FUNCTION tasks_notify_ready();
