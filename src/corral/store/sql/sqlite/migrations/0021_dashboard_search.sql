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
INSERT INTO task_text (task_text) VALUES ('rebuild');

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
