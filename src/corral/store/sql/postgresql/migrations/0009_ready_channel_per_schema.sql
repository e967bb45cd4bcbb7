-- Version 9: each schema's own ready channel. Until now every store of a database notified
-- channel corral_ready, so an enqueue in one schema woke the idle runners of every other
-- schema, each of which then asked for work it did not have. Runners of the old version
-- keep listening on corral_ready and fall back on polling until they are restarted.
CREATE OR REPLACE FUNCTION tasks_notify_ready() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.status IS DISTINCT FROM 'ready' THEN
        PERFORM pg_notify('corral_ready_' || md5(TG_TABLE_SCHEMA), NEW.queue);
    END IF;
    RETURN NULL;
END $$;
