-- Version 30: a token may be an admin's (model/api_tokens.py, Role), the one role that acts
-- across namespaces. SQLite cannot change a CHECK in place: the table is made again under
-- its own name, and each row put back. dashboard_sessions refers to it: the foreign keys
-- are checked at the commit, once every token is back.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE tokens_v29 AS SELECT * FROM tokens;
DROP TABLE tokens;
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
INSERT INTO tokens (id, name, role, queues, secret_hash, created_at, expires_at, revoked_at,
                    namespace)
SELECT id, name, role, queues, secret_hash, created_at, expires_at, revoked_at, namespace
FROM tokens_v29;
DROP TABLE tokens_v29;

-- A provider account's cap, pause and park are its namespace's: one team's park stops its
-- own agents, not every team's. Each account's row is kept for every namespace that has a
-- worker or a task (and `default`), so no team loses a cap or a pause it had.
CREATE TABLE providers_v29 AS SELECT * FROM providers;
DROP TABLE providers;
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
INSERT INTO providers (name, max_running, paused, parked_until, parked_at, park_reason,
                       updated_at, namespace)
SELECT p.name, p.max_running, p.paused, p.parked_until, p.parked_at, p.park_reason,
       p.updated_at, n.namespace
FROM providers_v29 p
CROSS JOIN (SELECT 'default' AS namespace UNION SELECT namespace FROM workers
            UNION SELECT namespace FROM tasks) n;
DROP TABLE providers_v29;
