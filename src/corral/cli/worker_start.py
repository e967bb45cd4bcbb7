"""`corral worker start`: parse the flags into a worker spec and run what the assembly builds.

The options are the pool's flags (cli/worker_flags.py), parsed as the `[pool]` keys are;
the runner is assembled as every runner is (runtime/worker/assembly.py), so a pool's
worker, a hand-started one and `run_worker` refuse and run alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.cli import parsing
from corral.cli.keyed_start import start_again_with_a_key
from corral.cli.worker_flags import given
from corral.foundation.policies import WorkerSpec
from corral.foundation.process_keys import WORKER_KEY_ENV
from corral.foundation.worker_options import START
from corral.runtime.worker.assembly import parse_options, prepare
from corral.store.location import path_component

if TYPE_CHECKING:
    from corral.cli.context import Args, Context

SHUTDOWN_TIMEOUT_S = next(o.default for o in START if o.field == "shutdown_timeout_s")


def start_worker(ctx: Context) -> int:
    """Build the runner from the flags and run it; returns its exit code."""
    start_again_with_a_key(WORKER_KEY_ENV)
    assembly = prepare(worker_spec(ctx.args), settings=ctx.settings, db=ctx.db)
    ctx.long_running()  # every flag checked: from here on it runs
    ctx.keep_state_out_of_git()  # once the flags are known good: nothing written before
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
