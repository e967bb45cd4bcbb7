-- Version 33: a message may carry an idempotency key, unique in its namespace: sent again
-- under the same key (its sender's reply lost after COMMIT, and the send tried again), it
-- is the message already there, not a second one. A run's outbox (seed 004) keys each
-- message line by its task, run and byte offset (runtime/worker/outbox.py).
ALTER TABLE messages ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX messages_by_key ON messages (namespace, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
