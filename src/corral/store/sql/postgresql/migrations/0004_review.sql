-- Version 4: the review flow (status `approved`, the reviews table) and message inboxes.

ALTER TABLE tasks DROP CONSTRAINT tasks_status_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check CHECK (status IN
    ('blocked', 'ready', 'running', 'in_review', 'approved', 'done', 'failed', 'cancelled'));

-- The review of a task's branch: where it came from, what was said, what was approved.
-- The task's status says where the review stands; this row keeps the details. Every
-- change to it is made under the lock of its task's row.
CREATE TABLE reviews (
    task_id         text  PRIMARY KEY REFERENCES tasks (id),
    base_ref        text,
    worktree_path   text,
    note            text,
    pr_url          text,
    approved_commit text,
    approve_note    text,
    changes_note    text,
    conflict_files  jsonb,
    merged_commit   text
);

-- Inboxes of workers (by name) and of the orchestrator: appended, never rewritten, read
-- in id order. An acknowledgement is a row of its own, so a message never changes.
CREATE TABLE messages (
    id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at        timestamptz NOT NULL,
    sender    text        NOT NULL,
    recipient text        NOT NULL,
    type      text        NOT NULL,
    body      jsonb
);

CREATE INDEX messages_by_recipient ON messages (recipient, id);

CREATE FUNCTION messages_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'messages are append-only' USING ERRCODE = 'integrity_constraint_violation';
END;
$$;

CREATE TRIGGER messages_never_change BEFORE UPDATE ON messages
FOR EACH ROW EXECUTE FUNCTION messages_refuse_change();

CREATE TRIGGER messages_never_go BEFORE DELETE ON messages
FOR EACH ROW EXECUTE FUNCTION messages_refuse_change();

CREATE TABLE message_acks (
    message_id bigint      PRIMARY KEY REFERENCES messages (id),
    at         timestamptz NOT NULL,
    actor      text        NOT NULL
);
