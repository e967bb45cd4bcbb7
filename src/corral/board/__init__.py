"""The board: seed 001's task board, agent sessions and slot heartbeats, in its words.

Workers written for seed 001 poll a board of tasks, spawn agent sessions and publish
heartbeats; corral serves them over its own use cases (docs/http-api.md). Everything
of that surface lives here, one subpackage per layer it spans, each a sibling of that
layer in the import contract: `model/` (the seed's shapes as views of corral's
records), `usecases/`, `routes/` (mounted by the server) and `status_file.py` (the
orchestrator's heartbeat file).
"""
