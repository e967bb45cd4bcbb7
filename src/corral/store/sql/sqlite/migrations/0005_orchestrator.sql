-- Version 5: the orchestrator's state row, one per store (the singleton).

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
    slots             TEXT    NOT NULL DEFAULT '[]'
);

INSERT INTO orchestrator (id) VALUES (1);
