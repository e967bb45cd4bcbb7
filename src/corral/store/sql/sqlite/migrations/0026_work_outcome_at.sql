-- Version 26: when each task's work outcome (landed, in_review, kept, no_change, refused)
-- was last recorded, so that `corral status` and `status --watch` read the newest landed
-- and the oldest kept through an index, at the same cost whatever the store's history.
-- Outcomes recorded before it take their task's last change.
ALTER TABLE reviews ADD COLUMN outcome_at REAL;
UPDATE reviews SET outcome_at = (SELECT t.updated_at FROM tasks t WHERE t.id = reviews.task_id)
WHERE outcome IS NOT NULL;
CREATE INDEX reviews_by_outcome ON reviews (outcome, outcome_at) WHERE outcome IS NOT NULL;
