"""`corral worker start`: parse the flags into a worker spec and run what the assembly builds.

The options are the pool's flags (cli/worker_flags.py), parsed as the `[pool]` keys are;
the runner is assembled as every runner is (runtime/worker/assembly.py), so a pool's
worker, a hand-started one and `run_worker` refuse and run alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.cli import parsing
from corral.cli.worker_flags import given
from corral.policies import WorkerSpec
from corral.runtime.worker.assembly import parse_options, prepare
from corral.store.location import path_component
from corral.worker_options import START

if TYPE_CHECKING:
    from corral.cli.context import Args, Context

SHUTDOWN_TIMEOUT_S = next(o.default for o in START if o.field == "shutdown_timeout_s")


def start_worker(ctx: Context) -> int:
    """Build the runner from the flags and run it; returns its exit code."""
    ctx.long_running()
    assembly = prepare(worker_spec(ctx.args), settings=ctx.settings, db=ctx.db)
    with assembly.runner(ctx.store) as runner:
        return runner.run()


def worker_spec(a: Args) -> WorkerSpec:
    """The worker the flags describe; InvalidInput (exit 2) naming the first bad one."""
    path_component("name", a.name)  # its temporary directory and log are named after it
    options = parse_options(given(a))
    shutdown_s = parsing.duration("shutdown_timeout", a.shutdown_timeout)
    return WorkerSpec(
        name=a.name,
        options=options,
        once=a.once,
        shutdown_timeout_s=SHUTDOWN_TIMEOUT_S if shutdown_s is None else shutdown_s,
    )
