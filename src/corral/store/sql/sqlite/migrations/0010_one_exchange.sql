-- The one exchange (store/exchange.py): a run records what was reported of its task under
-- its token from outside the runner, so its outcome is known when it ends, not read back
-- from the events.
ALTER TABLE runs ADD COLUMN reported TEXT CHECK (reported IN ('done', 'failed', 'deferred'));
