"""The runtime: the processes and threads that run tasks under a lease, and keep them run.

worker/  one worker process: built by assembly.py (for `worker start` and `run_worker`),
         the runner (runner.py), its lanes (lanes.py, batches.py), its jobs
         (jobs.py: command_job, worktree_job, python_job), heartbeat, executor
pool/    the orchestrator (orchestrator.py), its role (roles.py, leadership.py), its pool
         of worker processes (supervisor.py, worker_process.py)
maintenance.py  the maintenance pass (`run_once`): the orchestrator's upkeep and `corral
         reconcile` both run it
follow.py  following the event log (`corral events --follow`)
attach.py  following a worker's runs' transcripts (`corral worker attach`)

Processes
---------
    CLI command (`corral ...`)        one per command, short-lived; it talks to the store,
       │                              and signals a runner or an orchestrator by pid
       ├─ `corral worker start` ───► a runner (or `corral.run_worker()` in a program)
       │      └─ task commands ─────  one per running task, each in a session and process
       │                              group of its own; the runner is their subreaper
       └─ `corral orchestrator start` ─► an orchestrator (foreground, or `--daemon`)
              └─ pool workers ──────  runners (`python -m corral.cli.main worker start
                                      --name slot-N`), each in a session of its own, so
                                      neither a terminal's signals nor the orchestrator's
                                      death reaches them; each with its task commands

Processes share nothing but the store and signals. A kill -9 anywhere leaves rows the
reconciler repairs (worker heartbeats, claims under leases and fencing tokens), and
processes marked CORRAL_RUN_ID that the next runner or orchestrator ends (leftovers.py).

Threads of a runner
-------------------
    main            signals (runtime/signals.py), register, deregister; otherwise it joins
                    the lanes in short joins, so handlers run at once. A handler only asks
                    the stop (worker/stopping.py).
    corral-lane-N   a lane (`concurrency` of them): exchange with the store, then
                    each task run by the job. A Python job's function runs right here; a
                    command is watched here (waitid, a pidfd), its process apart.
    corral-heartbeat  beats, extends leases, finds lost claims, sets drain and dead.
    corral-spares   command jobs: makes the next run's empty output files ahead.
    (feeder)        per command whose prompt exceeds a pipe's capacity: writes its stdin.
    corral-listen   PostgreSQL store: LISTENs for ready tasks.
    corral-checkpoint  SQLite store: passive WAL checkpoints, off the writers' path.
    (psycopg_pool)  PostgreSQL store: the connection pool's maintenance workers.

Threads of an orchestrator
--------------------------
    main            the loop: tick the pool, the role's interval (reconcile, or try to
                    lead), beats, the drain; every change to the pool happens here.
                    Signal handlers only record the stop's grace and wake it.
    corral-reap-PID / corral-watch-PID  one per pool worker: waits for its exit (waitpid
                    on a child, a pidfd on an adopted worker), queues it, wakes the loop.
    corral-checkpoint / psycopg_pool's workers  as in a runner, for its own store.

Who touches what
----------------
- The store: every thread may call it; each call is one transaction (the SQLite driver
  serialises its one connection under a mutex, PostgreSQL checks a connection out of a pool).
- A runner's shared state has one writer each and a lock where two write: the stop
  (main; lanes read), drain / dead / lost claims (heartbeat; lanes read), the claims to
  watch (lanes hold and drop under the heartbeat's lock), the task budget and counts
  (lanes, under locks), the spare files (spares thread makes, lanes take, under a lock).
  What a claim's transaction prepared for a run travels with it (jobs.Opened), unshared.
- An orchestrator's pool (supervisor slots) is touched by its main thread only; watcher
  threads hand exits over through a queue.

How they wake each other
------------------------
Nothing polls where it can wait, and every timed wait goes through a `Clock`:
- runner: an idle lane waits on the `ready` event, which the ready listener (NOTIFY) and
  a stop set; the heartbeat waits on its `stopping` event; the spares and checkpoint
  threads wait on their own request events; a lane watching a command waits on its pidfd
  and looks at `stop()` every poll.
- orchestrator: the loop waits on `wake` until its next due time (every.py); watcher
  threads and signal handlers set it.
- across processes: signals (`worker stop`, `orchestrator stop`; the orchestrator's
  SIGTERM, then SIGQUIT, then SIGKILL to its workers by pidfd; a runner's to its
  commands' process groups) and rows (`worker drain`, seen at the worker's next
  heartbeat; `orchestrator stop --timeout`, read as the orchestrator starts to stop;
  PostgreSQL's NOTIFY of ready tasks, to every listening runner of the store).
"""
