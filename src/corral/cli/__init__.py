"""The `corral` command line: one module per command group; `run` is the console script."""

from __future__ import annotations

import gc
import os
import sys
from typing import NoReturn


def run() -> NoReturn:
    """Run one command, then leave at once.

    A command lives for milliseconds, so collecting garbage during imports, importing
    `inspect` for `dataclasses` (corral.cli.deferred) and tearing down a hundred modules
    at exit only cost start-up time (bench/cli_latency.py); the store is closed and
    stdout flushed before `os._exit`.
    """
    gc.disable()
    # The CLI's imports come after gc.disable() and the stand-ins, so both apply to them.
    from corral.cli.deferred import CLI_DEFERRED, defer  # noqa: PLC0415

    defer(*CLI_DEFERRED)
    from corral.cli.main import main  # noqa: PLC0415

    code = main()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        code = 141
    os._exit(code)
