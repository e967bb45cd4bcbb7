-- Version 34: day caps on what agents spend (issue 31), per queue and per provider account
-- of a namespace: dollars and billed tokens a day (model/budgets.py). A run that reaches
-- one is stopped and its task deferred to the next day, when the cap lifts itself.
CREATE TABLE day_caps (
    namespace    TEXT    NOT NULL DEFAULT 'default',
    scope        TEXT    NOT NULL CHECK (scope IN ('queue', 'provider')),
    name         TEXT    NOT NULL,
    max_cost_usd REAL    CHECK (max_cost_usd IS NULL OR max_cost_usd > 0),
    max_tokens   INTEGER CHECK (max_tokens IS NULL OR max_tokens > 0),
    updated_at   REAL    NOT NULL,
    PRIMARY KEY (namespace, scope, name)
);
