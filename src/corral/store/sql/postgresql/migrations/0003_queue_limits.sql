-- Version 3: per-queue backpressure (ARCHITECTURE.md 4.8).

-- Limits of one queue; NULL is no limit. The claim queries pass a queue by while it is at
-- max_running or has started `rate` claims in the last 60 s; enqueue refuses a task while
-- max_ready tasks wait. A queue with no row has no limits.
CREATE TABLE queue_limits (
    queue       text             PRIMARY KEY,
    max_ready   integer          CHECK (max_ready IS NULL OR max_ready > 0),
    max_running integer          CHECK (max_running IS NULL OR max_running > 0),
    rate        double precision CHECK (rate IS NULL OR rate > 0),  -- claims per minute
    updated_at  timestamptz      NOT NULL
);

-- The rate limit counts the claims started in the last minute.
CREATE INDEX claims_by_start ON claims (claimed_at);

-- The room left in a queue with a max_ready limit, counted after locking its limits row:
-- enqueues into one limited queue take turns, and each counts the tasks the previous one
-- committed (a function, because only a later statement sees what a lock waited for).
CREATE FUNCTION corral_queue_room(wanted text)
RETURNS TABLE (max_ready integer, waiting bigint)
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM queue_limits l WHERE l.queue = wanted AND l.max_ready IS NOT NULL
    FOR UPDATE;
    RETURN QUERY
    SELECT l.max_ready,
           (SELECT count(*) FROM tasks t
            WHERE t.queue = l.queue AND t.status IN ('ready', 'blocked'))
    FROM queue_limits l
    WHERE l.queue = wanted AND l.max_ready IS NOT NULL;
END;
$$;
