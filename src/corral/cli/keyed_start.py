"""Long-running commands that must be provable as corral's: started again with a key.

The environment a process started with is what proves it is a given worker or orchestrator
to another corral process about to signal it (corral.foundation.processes): its key, whose
hash it records in the store. `corral worker start` and `corral orchestrator start` run by
hand have none, and only `execve` sets a process's initial environment, so they start
again in the same process (same pid, same start time) with a fresh key added. Only when
this process is the `corral` command itself, never a program that called `main()`.
"""

from __future__ import annotations

import os
import sys

from corral.foundation.process_keys import new_key


def start_again_with_a_key(env_name: str) -> None:
    """Replace this process by itself with a fresh key in `env_name`, unless it has one."""
    if os.environ.get(env_name) or not _is_the_command():
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, {**os.environ, env_name: new_key()})  # noqa: S606


def _is_the_command() -> bool:
    """Whether this process runs `corral` (the console script or `-m corral.cli.main`)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    named = getattr(spec, "name", None) == "corral.cli.main"
    return named or os.path.basename(sys.argv[0]) == "corral"
