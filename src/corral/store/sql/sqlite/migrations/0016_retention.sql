-- Version 16: retention (store/retention.py) deletes finished tasks, and each deleted
-- task has the database check that no claim still names it: without an index that check
-- read every claim, once per task, inside the delete's write transaction.
CREATE INDEX claims_by_task ON claims (task_id);
