"""Runs: one attempt at a task, recorded from start to finish and immutable once finished.

    start_run ──► running ──finish_run(outcome)──► finished   (no change after this)
                    │  ▲
        mark_waiting│  │record_progress (clears the flag)
                    ▼  │
                  waiting   (silent for the stall timeout, or the agent asked a question)

A run belongs to the claim it started under (`token`): the store refuses to start one
whose token is not the task's active claim. Finishing is a compare-and-set on
`finished_at IS NULL`, so a run is finished exactly once, and the database refuses any
later change. `outcome` says why it ended; the task's own state is the claim operations'
business (done, fail, release, defer), not the run's.
"""

from __future__ import annotations

import os
from datetime import datetime
from enum import StrEnum
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.errors import InvalidInput
from corral.foundation.records import record


class RunOutcome(StrEnum):
    """Why a run ended."""

    DONE = "done"  # the command exited 0 (or the agent reported done itself)
    FAILED = "failed"  # a non-zero exit or an exception
    TIMEOUT = "timeout"  # killed at the task's timeout
    KILLED = "killed"  # killed from outside (a signal, an operator)
    LEASE_LOST = "lease_lost"  # its claim was taken back while it ran
    DEFERRED = "deferred"  # the task stepped aside (`corral defer`, exit code 75)
    SHUTDOWN = "shutdown"  # the worker shut down before it finished
    STALLED = "stalled"  # killed after printing nothing for the stall timeout
    WAITING = "waiting"  # ended needing a person: no change, refused, a question


@record(frozen=True, slots=True, kw_only=True)
class NewRun:
    """What `start_run` needs. Paths are made absolute against the caller's working directory,
    so `corral logs` finds them from anywhere."""

    task_id: str
    worker_id: str
    token: int
    attempt: int
    prompt: str | None
    command: tuple[str, ...]
    cwd: str
    transcript_path: str | None
    stderr_path: str | None
    base_commit: str | None = None

    def __post_init__(self) -> None:
        for name in ("token", "attempt"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidInput(name, "a whole number of at least 1", value)
        if not isinstance(self.command, tuple) or not all(isinstance(a, str) for a in self.command):
            raise InvalidInput("command", "a tuple of strings", self.command)
        if not self.cwd:
            raise InvalidInput("cwd", "a directory")
        # Frozen: set through object.__setattr__, once, before anyone can see the record.
        for name in ("cwd", "transcript_path", "stderr_path"):
            path = getattr(self, name)
            if path is not None:
                object.__setattr__(self, name, os.path.abspath(path))


@record(frozen=True, slots=True, kw_only=True)
class Run:
    """A run as the store last saw it; `outcome` and `finished_at` are None while it runs."""

    id: str
    task_id: str
    worker_id: str
    token: int
    attempt: int
    prompt: str | None
    command: tuple[str, ...]
    cwd: str
    transcript_path: str | None
    stderr_path: str | None
    base_commit: str | None
    final_commit: str | None
    started_at: datetime
    finished_at: datetime | None
    exit_code: int | None
    outcome: RunOutcome | None
    error: str | None
    usage: dict[str, Any] | None
    stalled_at: datetime | None
    last_progress_at: datetime | None
    progress: str | None
    agent: str | None = None  # the agent profile that ran (None: a plain command or function)
    session_id: str | None = None  # the agent's own session, once its stream named it
    resumed_from: str | None = None  # the run whose session this one resumed
    stop_reason: str | None = None  # why the agent said it stopped (`success`, `usage_limit` ...)
    waiting: str | None = None  # why it waits for a person, while it does
    seq: int = 0  # its place in the order runs were opened: the key `runs` pages by

    @property
    def finished(self) -> bool:
        """Whether the run has ended (and so can no longer change)."""
        return self.finished_at is not None

    @property
    def duration_s(self) -> float | None:
        """Seconds from start to finish, or None while it runs."""
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.id,
            "task_id": self.task_id,
            "worker_id": self.worker_id,
            "token": self.token,
            "attempt": self.attempt,
            "outcome": None if self.outcome is None else str(self.outcome),
            "exit_code": self.exit_code,
            "error": self.error,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "duration_s": self.duration_s,
            "cwd": self.cwd,
            "command": list(self.command),
            "prompt": self.prompt,
            "base_commit": self.base_commit,
            "final_commit": self.final_commit,
            "transcript_path": self.transcript_path,
            "stderr_path": self.stderr_path,
            "usage": self.usage,
            "stalled_at": iso(self.stalled_at),
            "last_progress_at": iso(self.last_progress_at),
            "progress": self.progress,
            "agent": self.agent,
            "session_id": self.session_id,
            "resumed_from": self.resumed_from,
            "stop_reason": self.stop_reason,
            "waiting": self.waiting,
        }
