-- Version 18: the dashboard reads a task's timeline (its events, newest first) and counts
-- the last hour's events of a few names by minute; on a log of a million events neither
-- may scan it (PostgreSQL had events_by_task already).
CREATE INDEX events_by_task ON events (task_id, id) WHERE task_id IS NOT NULL;
CREATE INDEX events_by_name_at ON events (name, at);
