-- Version 11: what `events --follow` needs (docs/state-machines.md, Following events).
-- Each event records its transaction's id; a follower reads only the events of
-- transactions that have ended, in (xid, id) order, so an event whose transaction commits
-- after one with a higher id is never skipped. Events written before this version take
-- xid 1, older than any transaction after it: a constant default adds the column without
-- rewriting the table, and the real default follows.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT '1';
ALTER TABLE events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX events_by_xid ON events (xid, id);

-- Every statement that appends events notifies its schema's events channel, corral_events_
-- and the md5 of the schema's name, with no payload: the server folds a transaction's
-- notifications into one, delivered at commit. It wakes `events --follow`, which then reads.
CREATE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('corral_events_' || md5(TG_TABLE_SCHEMA), '');
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
