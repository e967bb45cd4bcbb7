-- Version 10: the one exchange (store/exchange.py). Every claim and every reported outcome
-- is one call of corral_exchange (functions.sql, which the driver applies after this
-- file), so the two functions of the claim cycle go; and a run records what was reported
-- of its task under its token from outside the runner, so its outcome is known when it
-- ends, not read back from the events.
ALTER TABLE runs ADD COLUMN reported text CHECK (reported IN ('done', 'failed', 'deferred'));
DROP FUNCTION corral_claim_next(text, text[], text[], text[], double precision, text,
                                timestamptz);
DROP FUNCTION corral_complete(text, bigint, jsonb, text[], text[], text, timestamptz);

-- A report of the exchange as corral_exchange reads it (functions.sql): the fields of
-- corral.model.batches.Report, with a failure's retry decided (retry_delay_s or give_up).
CREATE TYPE corral_report AS (
    task_id       text,
    token         bigint,
    holder        text,
    action        text,
    actor         text,
    run_id        text,
    outcome       text,
    exit_code     integer,
    error         text,
    usage         jsonb,
    final_commit  text,
    result        jsonb,
    delay_s       double precision,
    run_at        timestamptz,
    reason        text,
    retry_delay_s double precision,
    give_up       text
);
