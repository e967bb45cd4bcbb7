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
    from corral.cli.main import main  # noqa: PLC0415 - every CLI import after gc.disable()

    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = 141
    except (OSError, AttributeError):  # main reported it: stderr full or closed, stdout closed
        pass
    os._exit(code)
