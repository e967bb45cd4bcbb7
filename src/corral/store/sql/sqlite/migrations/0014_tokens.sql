-- Version 14: API tokens for `corral serve` (model/tokens.py): the secret's SHA-256 only.
CREATE TABLE tokens (
    id           TEXT  PRIMARY KEY,
    name         TEXT  NOT NULL UNIQUE,
    role         TEXT  NOT NULL CHECK (role IN ('viewer', 'worker', 'operator')),
    queues       TEXT  NOT NULL DEFAULT '[]',
    secret_hash  TEXT  NOT NULL,
    created_at   REAL NOT NULL,
    expires_at   REAL,
    revoked_at   REAL
);
