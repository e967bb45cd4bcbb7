-- Version 23: a task may wait for a person (status `waiting`, model/waiting.py): a run
-- that changed nothing, an agent refused a permission or asking a question ends so. The
-- task keeps why (wait_reason) while it waits; `corral answer` sends it back to ready
-- with the person's answer, and the reason it answered, for its next runs' prompts. A
-- run may end `waiting` too, or be reported so from outside it.
-- task_view is made again so that it shows the new columns; corral_exchange, which
-- returns its columns and takes the statuses a wait may start from, and
-- corral_step_aside, which applies the wait, are dropped (functions.sql makes them again).
DROP FUNCTION IF EXISTS corral_exchange(text, jsonb, integer, text, text[], text[], double precision,
                              jsonb, text[], text[], text[], text[], text[], text[], text[],
                              boolean, timestamptz);
DROP FUNCTION IF EXISTS corral_step_aside(corral_report, text[], text[], text[], timestamptz);
DROP VIEW task_view;

ALTER TABLE tasks DROP CONSTRAINT tasks_status_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check CHECK (status IN
    ('blocked', 'ready', 'running', 'waiting', 'in_review', 'approved', 'done', 'failed',
     'cancelled'));
ALTER TABLE tasks ADD COLUMN wait_reason text;
ALTER TABLE tasks ADD COLUMN answer text;
ALTER TABLE tasks ADD COLUMN answered_reason text;

ALTER TABLE runs DROP CONSTRAINT runs_outcome_check;
ALTER TABLE runs ADD CONSTRAINT runs_outcome_check CHECK (outcome IN
    ('done', 'failed', 'timeout', 'killed', 'lease_lost', 'deferred', 'shutdown', 'stalled',
     'waiting'));
ALTER TABLE runs DROP CONSTRAINT runs_reported_check;
ALTER TABLE runs ADD CONSTRAINT runs_reported_check CHECK (reported IN
    ('done', 'failed', 'deferred', 'waiting'));

CREATE VIEW task_view AS
SELECT t.*,
       c.token AS token,
       c.worker_id AS worker_id,
       c.lease_expires_at AS lease_expires_at,
       ARRAY(SELECT d.depends_on FROM task_deps d WHERE d.task_id = t.id
             ORDER BY d.depends_on) AS depends_on
FROM tasks t
LEFT JOIN claims c ON c.task_id = t.id AND c.status = 'active';
