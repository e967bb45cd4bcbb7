-- Version 28: the last decisions corral_exchange made itself are made in Python and handed
-- to it, as a failure's retry already was: a completion's review or done, as the table of
-- that decision (p_completed_to, indexed by requires_review: model/batches.py,
-- completed_to), and what a report from outside a run notes on its open run (the
-- report's new `reported`: model/batches.py, REPORTED). corral_exchange, whose arguments
-- change, is dropped (functions.sql makes it again).
DROP FUNCTION IF EXISTS corral_exchange(text, jsonb, integer, text, text[], text[], double precision,
                              jsonb, text[], text[], text[], text[], text[], text[], text[],
                              text[], boolean, timestamptz);
ALTER TYPE corral_report ADD ATTRIBUTE reported text;
