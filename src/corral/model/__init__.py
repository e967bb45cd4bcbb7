"""corral's records, state tables and pure decisions: no I/O, no store, no clock.

Each module names one concept, as its use cases (`corral.<concept>`) and its store
operations (`corral.store.<concept>`) do: states, tasks, claims, workers, runs, events,
messages, reviews, queues, batches, backoff, restarts, recovery, orchestrators.
"""
