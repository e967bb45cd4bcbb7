-- Version 3: per-queue backpressure (ARCHITECTURE.md 4.8).

-- Limits of one queue; NULL is no limit. The claim queries pass a queue by while it is at
-- max_running or has started `rate` claims in the last 60 s; enqueue refuses a task while
-- max_ready tasks wait. A queue with no row has no limits.
CREATE TABLE queue_limits (
    queue       TEXT    PRIMARY KEY,
    max_ready   INTEGER CHECK (max_ready IS NULL OR max_ready > 0),
    max_running INTEGER CHECK (max_running IS NULL OR max_running > 0),
    rate        REAL    CHECK (rate IS NULL OR rate > 0),  -- claims started per minute
    updated_at  REAL    NOT NULL
);

-- The rate limit counts the claims started in the last minute.
CREATE INDEX claims_by_start ON claims (claimed_at);
