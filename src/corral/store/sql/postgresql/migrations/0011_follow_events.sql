-- Version 11: what `events --follow` needs (docs/state-machines.md, Following events).
-- Each event records its transaction's id; a follower reads only the events of
-- transactions that have ended, in (xid, id) order, so an event whose transaction commits
-- after one with a higher id is never skipped. Events written before this version take
-- xid 1, older than any transaction after it: a constant default adds the column without
-- rewriting the table, and the real default follows.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT '1';
ALTER TABLE events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();
CREATE INDEX events_by_xid ON events (xid, id);

-- The sessions listening on this schema's events channel (`events --follow`), by backend
-- pid: each adds itself when it listens and removes itself when it stops; one that died
-- is removed by the next to listen. A statement that appends events notifies the channel,
-- corral_events_ and the md5 of the schema's name, only while a listed follower lives: a
-- transaction that notifies takes a lock that serializes every such commit on the server
-- (at 4 and 8 claiming processes, bench/pg_claim_cycle.py lost a third of its cycles when
-- every exchange notified). The server folds a transaction's notifications into one,
-- delivered at commit.
CREATE TABLE event_followers (
    pid integer PRIMARY KEY
);

CREATE FUNCTION events_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    -- An empty table first: reading pg_stat_activity costs more than the insert.
    IF EXISTS (SELECT 1 FROM event_followers)
       AND EXISTS (SELECT 1 FROM event_followers f JOIN pg_stat_activity a ON a.pid = f.pid)
    THEN
        PERFORM pg_notify('corral_events_' || md5(TG_TABLE_SCHEMA), '');
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER events_notify AFTER INSERT ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_notify();
