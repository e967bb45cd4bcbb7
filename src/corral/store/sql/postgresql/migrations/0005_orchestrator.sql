-- Version 5: the orchestrator's state row, one per store (the singleton).

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
