-- Version 27: sites. A worktree worker registers the site where it makes worktrees
-- (`<hostname>:<clone>`), and a task's run in a worktree records that site on the task:
-- its worktree and its agent's session are there. A task kept at a site is claimed there
-- alone while a live worker of that site can run it (corral_may_claim), so a task that
-- runs again resumes where its work is; when none is left, any worker may claim it.
-- task_view and worker_view are made again so that they show the new columns;
-- corral_exchange, which returns a task's columns, is dropped (functions.sql makes it
-- again).
DROP FUNCTION IF EXISTS corral_exchange(text, jsonb, integer, text, text[], text[], double precision,
                              jsonb, text[], text[], text[], text[], text[], text[], text[],
                              text[], boolean, timestamptz);
DROP VIEW task_view;
DROP VIEW worker_view;

ALTER TABLE workers ADD COLUMN site text;
ALTER TABLE tasks ADD COLUMN site text;
CREATE INDEX workers_by_site ON workers (site, namespace) WHERE site IS NOT NULL;

CREATE VIEW task_view AS
SELECT t.*,
       c.token AS token,
       c.worker_id AS worker_id,
       c.lease_expires_at AS lease_expires_at,
       ARRAY(SELECT d.depends_on FROM task_deps d WHERE d.task_id = t.id
             ORDER BY d.depends_on) AS depends_on
FROM tasks t
LEFT JOIN claims c ON c.task_id = t.id AND c.status = 'active';

CREATE VIEW worker_view AS
SELECT w.* FROM workers w;
