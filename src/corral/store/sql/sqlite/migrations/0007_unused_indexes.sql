-- Version 7: three indexes that no query uses, dropped; each was written by every claim
-- (and the events ones by every event), inside the write lock (bench/claim_cycle.py).
-- list_events filters with `(:task_id IS NULL OR task_id = :task_id)`, a form SQLite's
-- planner serves from the events' rowid, never from events_by_task or events_by_worker;
-- claims are looked up by task only while active (claims_one_active_per_task).
DROP INDEX claims_by_task;
DROP INDEX events_by_task;
DROP INDEX events_by_worker;
