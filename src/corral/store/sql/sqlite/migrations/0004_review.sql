-- Version 4: the review flow (status `approved`, the reviews table) and message inboxes.
-- SQLite cannot ALTER a CHECK constraint, and rebuilding `tasks` would trip the foreign
-- keys of every table that references it. Widening the list of allowed statuses is the
-- change SQLite's documentation permits through writable_schema: every existing row meets
-- the wider check and nothing on disk changes. The CREATE statements that follow change
-- the schema cookie, so every connection reads the edited definition again.

PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, '''in_review'', ''done''', '''in_review'', ''approved'', ''done''')
WHERE type = 'table' AND name = 'tasks';
PRAGMA writable_schema = OFF;

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
    merged_commit   TEXT
) WITHOUT ROWID;

-- Inboxes of workers (by name) and of the orchestrator: appended, never rewritten, read
-- in id order. An acknowledgement is a row of its own, so a message never changes.
CREATE TABLE messages (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        REAL    NOT NULL,
    sender    TEXT    NOT NULL,
    recipient TEXT    NOT NULL,
    type      TEXT    NOT NULL,
    body      TEXT
);

CREATE INDEX messages_by_recipient ON messages (recipient, id);

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
