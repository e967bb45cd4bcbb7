-- Version 15: when a claim's task became claimable (its run_after as it was claimed), so
-- /metrics can report the queue wait of every claim (claimed_at - ready_at).
ALTER TABLE claims ADD COLUMN ready_at REAL;
