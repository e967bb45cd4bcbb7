-- Version 31: process keys. corral signals a process of this host only once it has proved
-- the process is its own, which no row can prove: a worker's runner is started with a
-- random key in its environment (CORRAL_WORKER_KEY), its runs' processes with another
-- (CORRAL_RUN_KEY), and the worker records the SHA-256 of each (never the key); an
-- orchestrator holds CORRAL_ORCHESTRATOR_KEY and its row records the hash. A process
-- is the worker's (the orchestrator), or a leftover of its runs, only if its environment as it started holds
-- the key whose hash the row records (foundation/processes.py).
-- worker_view is made again so that it shows the new columns.
DROP VIEW worker_view;

ALTER TABLE workers ADD COLUMN key_hash text;
ALTER TABLE workers ADD COLUMN runs_key_hash text;

CREATE VIEW worker_view AS
SELECT w.* FROM workers w;
ALTER TABLE orchestrator ADD COLUMN key_hash text;
