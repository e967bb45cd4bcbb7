-- Version 29: every lookup by id acts in its handle's namespace (docs/operations.md,
-- Namespaces). Messages, which had none, take their sender's: an inbox is a worker name
-- within one namespace. Messages sent before are the default namespace's.
-- corral_exchange takes the namespace its reports and its worker must be in, so its
-- arguments change: it is dropped (functions.sql makes it again).
ALTER TABLE messages ADD COLUMN namespace text NOT NULL DEFAULT 'default';
DROP FUNCTION IF EXISTS corral_exchange(text, jsonb, integer, text, text[], text[], double precision,
                              jsonb, text[], text[], text[], text[], text[], text[], text[],
                              text[], text[], boolean, timestamptz);
