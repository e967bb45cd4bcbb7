-- Version 23: a task may wait for a person (status `waiting`, model/waiting.py): a run
-- that changed nothing, an agent refused a permission or asking a question ends so. The
-- task keeps why (wait_reason) while it waits; `corral answer` sends it back to ready
-- with the person's answer, and the reason it answered, for its next runs' prompts. A
-- run may end `waiting` too, or be reported so from outside it.
-- The wider checks go in through writable_schema, as in migrations/0004_review.sql:
-- every existing row meets them and nothing on disk changes. RESET reads the edited
-- definitions back at once, before ALTER TABLE edits the same text again (it would edit
-- at the offsets of the text it last read); the ALTER statements change the schema
-- cookie, so every other connection reads them too.

PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(sql, '''running'', ''in_review''', '''running'', ''waiting'', ''in_review''')
WHERE type = 'table' AND name = 'tasks';
UPDATE sqlite_schema
SET sql = replace(replace(sql, '''shutdown'', ''stalled'')', '''shutdown'', ''stalled'', ''waiting'')'),
                  '''failed'', ''deferred'')', '''failed'', ''deferred'', ''waiting'')')
WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = RESET;
PRAGMA writable_schema = OFF;

ALTER TABLE tasks ADD COLUMN wait_reason TEXT;
ALTER TABLE tasks ADD COLUMN answer TEXT;
ALTER TABLE tasks ADD COLUMN answered_reason TEXT;
