-- Version 29: every lookup by id acts in its handle's namespace (docs/operations.md,
-- Namespaces). Messages, which had none, take their sender's: an inbox is a worker name
-- within one namespace. Messages sent before are the default namespace's.
ALTER TABLE messages ADD COLUMN namespace TEXT NOT NULL DEFAULT 'default';
