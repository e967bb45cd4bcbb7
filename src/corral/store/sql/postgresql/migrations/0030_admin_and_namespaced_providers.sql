-- Version 30: a token may be an admin's (model/api_tokens.py, Role), the one role that acts
-- across namespaces.
ALTER TABLE tokens DROP CONSTRAINT tokens_role_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_role_check
    CHECK (role IN ('viewer', 'worker', 'operator', 'admin'));

-- A provider account's cap, pause and park are its namespace's: one team's park stops its
-- own agents, not every team's. Each account's row is kept for every namespace that has a
-- worker or a task (and `default`), so no team loses a cap or a pause it had.
ALTER TABLE providers ADD COLUMN namespace text NOT NULL DEFAULT 'default';
ALTER TABLE providers DROP CONSTRAINT providers_pkey;
INSERT INTO providers (name, max_running, paused, parked_until, parked_at, park_reason,
                       updated_at, namespace)
SELECT p.name, p.max_running, p.paused, p.parked_until, p.parked_at, p.park_reason,
       p.updated_at, n.namespace
FROM providers p
CROSS JOIN (SELECT namespace FROM workers UNION SELECT namespace FROM tasks) n
WHERE n.namespace <> 'default';
ALTER TABLE providers ADD PRIMARY KEY (namespace, name);
