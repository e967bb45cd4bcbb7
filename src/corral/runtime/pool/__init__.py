"""The pool: the orchestrator, its role among its store's orchestrators, its worker processes.

orchestrator.py    the loop: run the pool, the role's intervals and beats, stop in order
roles.py           the role protocol, and SQLite's sole holder of the state row
leadership.py      PostgreSQL: one of several, leader or standby
state_row.py       the orchestrator state row, as its holder takes, moves and beats it
upkeep.py          which parts of the maintenance pass are due (runtime/maintenance.py)
every.py           one schedule of the loops, on the injected clock
supervisor.py, worker_process.py   the pool's worker processes: spawn, watch, restart, stop
leftovers.py       processes a finished run left behind
"""
