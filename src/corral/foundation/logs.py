"""Structured log lines with stable event names: `worker.started worker_id=w-… name=w1`.

Only the runtime logs (a CLI command reports through its output and exit code). Lines
go to stderr, which the pool supervisor (later) captures into per-worker log files.
"""

from __future__ import annotations

import logging
import os
import sys

from corral.foundation.errors import InvalidInput

_FORMAT = "%(asctime)s %(levelname)s %(message)s"
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LEVEL_ENV = "CORRAL_LOG_LEVEL"  # DEBUG adds a line per task started and per task done


def logger(name: str) -> logging.Logger:
    """A logger writing `time LEVEL event key=value ...` lines to stderr, at the level
    CORRAL_LOG_LEVEL names (INFO when unset)."""
    log = logging.getLogger(name)
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(_FORMAT))
        log.addHandler(handler)
        log.setLevel(_level(os.environ.get(LEVEL_ENV)))
        log.propagate = False
    return log


def _level(raw: str | None) -> int:
    if raw is None or not raw.strip():
        return logging.INFO
    if raw.strip().upper() not in LEVELS:
        raise InvalidInput(LEVEL_ENV, "one of " + ", ".join(LEVELS), raw)
    return int(getattr(logging, raw.strip().upper()))


def event(log: logging.Logger, name: str, /, level: int = logging.INFO, **fields: object) -> None:
    """Log event `name` with its fields as key=value pairs (values with spaces are quoted)."""
    if not log.isEnabledFor(level):
        return  # per-task DEBUG lines cost nothing when nobody reads them
    pairs = " ".join(f"{k}={_value(v)}" for k, v in fields.items() if v is not None)
    log.log(level, "%s %s", name, pairs)


def _value(value: object) -> str:
    text = str(value)
    return repr(text) if (" " in text or not text) else text
