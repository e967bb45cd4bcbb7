-- Version 19: subtasks, run artifacts, and a review's one stale event.
-- A parent's children are read by parent_id (`corral show`, `list --parent`, cancel's cascade).
CREATE INDEX tasks_by_parent ON tasks (parent_id) WHERE parent_id IS NOT NULL;

-- The files a runner copied out of a task's working directory after one of its runs
-- (`[worker] artifacts`), or skipped: `skipped` says why (past the run's size cap), and
-- then no copy exists and sha256 is NULL. `path` is relative to the working directory.
CREATE TABLE run_artifacts (
    run_id     text   NOT NULL REFERENCES runs (id),
    path       text   NOT NULL,
    size_bytes bigint NOT NULL,
    sha256     text,
    skipped    text,
    PRIMARY KEY (run_id, path)
);

-- When the review's `review.stale` event was raised: set once, by compare-and-set with the
-- event; a new submit clears it (that is a new review, which may go stale again).
ALTER TABLE reviews ADD COLUMN stale_noted_at timestamptz;
