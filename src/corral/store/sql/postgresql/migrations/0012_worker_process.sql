-- Version 12: a worker records when its process started, so that a signal reaches only
-- that process (corral.processes); workers registered before have none (NULL). The view
-- lists the table's columns as they were when it was made: it is made again.
ALTER TABLE workers ADD COLUMN pid_started_at double precision;
CREATE OR REPLACE VIEW worker_view AS
SELECT w.* FROM workers w;
