-- Version 21: the dashboard's text search over the tasks' title, description and payload
-- reads a trigram index (pg_trgm), not every task: an ILIKE '%text%' of three characters
-- or more is answered from the trigrams of the searched text, the same substring match
-- SQLite's FTS5 trigram table gives.
--
-- The searched text lives in a table of its own, task_text, kept by a trigger in the
-- transaction that adds, deletes or retitles a task. An index on `tasks` itself would be
-- written by every claim and completion: a change of status is never a HOT update
-- (status is indexed), so each would add a new version's few hundred trigrams to the GIN
-- index. Claims do not touch task_text.
CREATE TABLE task_text (
    seq  bigint PRIMARY KEY,  -- the task's
    body text   NOT NULL      -- title, description and payload's JSON text, one per line
);

CREATE FUNCTION corral_keep_task_text() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM task_text WHERE seq = OLD.seq;
        RETURN OLD;
    END IF;
    INSERT INTO task_text (seq, body)
    VALUES (NEW.seq, NEW.title || E'\n' || NEW.description || E'\n' || NEW.payload::text)
    ON CONFLICT (seq) DO UPDATE SET body = EXCLUDED.body;
    RETURN NEW;
END
$$;

CREATE TRIGGER task_text_kept AFTER INSERT OR DELETE OR UPDATE OF title, description, payload
ON tasks FOR EACH ROW EXECUTE FUNCTION corral_keep_task_text();

INSERT INTO task_text (seq, body)
SELECT seq, title || E'\n' || description || E'\n' || payload::text FROM tasks;

-- The extension is database-wide, so it goes in `public` (a store per schema shares it;
-- dropping one schema must not drop it). Where it cannot be created (no privilege, not
-- installed) the index is left out and a search scans task_text: say so and go on.
DO $$
DECLARE
    home text;
BEGIN
    BEGIN
        CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
    EXCEPTION
        WHEN unique_violation OR duplicate_object THEN
            NULL;  -- another store's migration created it meanwhile
        WHEN insufficient_privilege OR undefined_file OR invalid_schema_name THEN
            RAISE NOTICE 'pg_trgm is not available (%): the task search scans', SQLERRM;
            RETURN;
    END;
    SELECT extnamespace::regnamespace::text INTO home FROM pg_extension WHERE extname = 'pg_trgm';
    EXECUTE format('CREATE INDEX task_text_trigrams ON task_text USING gin (body %s.gin_trgm_ops)', home);
END
$$;

-- A dashboard sign-in (corral/dashboard_sessions.py): the session cookie holds this row's
-- id and a secret whose hash is kept here, never the API token it was opened with, so
-- signing out (ended_at, set once) makes the cookie useless for good. The token is
-- checked again on every request: revoking it ends its sessions too.
CREATE TABLE dashboard_sessions (
    id          text        PRIMARY KEY,
    secret_hash text        NOT NULL,
    token_id    text        NOT NULL REFERENCES tokens (id),
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    ended_at    timestamptz
);
