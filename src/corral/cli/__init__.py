"""The `corral` command line: one module per command group; `run` is the console script."""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False  # typing itself is imported after gc.disable(): see run()
if TYPE_CHECKING:
    from typing import NoReturn


def run() -> NoReturn:
    """Run one command, then leave at once.

    A command lives for milliseconds, so collecting garbage during its imports and tearing
    down a hundred modules at exit only cost start-up time (bench/cli_latency.py). The
    collector goes off before the first import that allocates much (`typing`, which the
    `corral` package and this one leave to the modules below); the store is closed and
    stdout flushed before `os._exit`.
    """
    gc.disable()
    from corral.cli.main import main  # every CLI import after gc.disable()

    os._exit(_flushed(main()))


def _flushed(code: int) -> int:
    """`code` once stdout and stderr are flushed: 141 when the reader of stdout left; an
    error `main` already reported (stderr full or closed, stdout closed) leaves it as is."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        return 141
    except (OSError, AttributeError):
        return code
    return code
