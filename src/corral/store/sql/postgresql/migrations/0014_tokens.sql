-- Version 14: API tokens for `corral serve` (model/tokens.py): the secret's SHA-256 only.
CREATE TABLE tokens (
    id           text  PRIMARY KEY,
    name         text  NOT NULL UNIQUE,
    role         text  NOT NULL CHECK (role IN ('viewer', 'worker', 'operator')),
    queues       jsonb  NOT NULL DEFAULT '[]',
    secret_hash  text  NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz
);
