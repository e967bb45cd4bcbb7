-- Version 6: the table of orchestrators, one row per host (numbered with PostgreSQL's).

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
