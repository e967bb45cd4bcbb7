-- Version 12: a worker records when its process started, so that a signal reaches only
-- that process (corral.processes); workers registered before have none (NULL).
ALTER TABLE workers ADD COLUMN pid_started_at REAL;
