"""One worker process: the runner and its parts (runtime/__init__.py draws its threads).

runner.py       lifecycle: recover, register, heartbeat, signals, lanes, deregister
lanes.py        the lanes: claim, run, report, until stopped or out of budget
batches.py      one exchange with the store per claim, and settling its reports
jobs.py         the Job protocol: open, perform and close a run
command_job.py, worktree_job.py, python_job.py   the jobs
heartbeat.py, spares.py   the runner's background threads
stopping.py, retries.py, incarnations.py, config.py   a stop, store retries, dead
                predecessors, what a runner is told
executor.py, spawn.py, proctree.py, prompts.py, reports.py, tmp.py   one task command
assembly.py     a WorkerSpec checked and built into a ready runner and its job
api.py          run_worker, the Python way to run a worker
"""
