"""The worker runtime: processes and threads that run tasks under a lease.

runner.py     the worker loop: register, heartbeat, claim, run, report, shut down
heartbeat.py  the heartbeat thread: proves the runner lives, whatever the task does
executor.py   one task command: its own process group, captured output, timeout
prompts.py    a task's prompt, rendered from a template file
"""
