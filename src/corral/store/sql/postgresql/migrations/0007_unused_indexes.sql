-- Version 7: claims_by_task, which no query uses (claims are looked up by task only while
-- active, through claims_one_active_per_task), dropped; every claim wrote it. The events
-- indexes stay here, unlike SQLite: PostgreSQL plans list_events with the values bound
-- and reads them.
DROP INDEX claims_by_task;
