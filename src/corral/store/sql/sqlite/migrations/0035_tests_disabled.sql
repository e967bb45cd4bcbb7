-- Version 35: what a task's run disabled of its tests (git/disabled_tests.py): a skip or
-- xfail marker its diff added, a test file it deleted, one line each (a JSON list), as the
-- last run that disabled any recorded it; NULL when none did. `show` and `review show`
-- flag the task with it.
ALTER TABLE reviews ADD COLUMN tests_disabled TEXT;
