"""Run records: NewRun validation and paths, a run's duration and state."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from corral import InvalidInput, NewRun, Run, RunOutcome

STARTED = datetime(2030, 1, 1, tzinfo=UTC)


def spec(**fields: Any) -> NewRun:
    """A valid NewRun; keyword arguments override its fields."""
    base: dict[str, Any] = {
        "task_id": "t-1",
        "worker_id": "w-1",
        "token": 1,
        "attempt": 1,
        "prompt": None,
        "command": ("true",),
        "cwd": "/work",
        "transcript_path": None,
        "stderr_path": None,
    }
    return NewRun(**{**base, **fields})


def record(**fields: Any) -> Run:
    """An unfinished Run; keyword arguments override its fields."""
    base = Run(
        id="r-1",
        task_id="t-1",
        worker_id="w-1",
        token=1,
        attempt=1,
        prompt=None,
        command=(),
        cwd="/work",
        transcript_path=None,
        stderr_path=None,
        base_commit=None,
        final_commit=None,
        started_at=STARTED,
        finished_at=None,
        exit_code=None,
        outcome=None,
        error=None,
        usage=None,
        stalled_at=None,
        last_progress_at=None,
        progress=None,
    )
    return dataclasses.replace(base, **fields)


@pytest.mark.parametrize("field", ["token", "attempt"])
@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_token_and_attempt_are_whole_numbers_of_at_least_one(field: str, value: object) -> None:
    """A token or attempt below 1, or not an int, is invalid input naming the field."""
    with pytest.raises(InvalidInput, match=field):
        spec(**{field: value})


def test_the_command_is_a_tuple_of_strings() -> None:
    """A list, or a tuple holding a non-string, is refused: the command is never a shell line."""
    for command in (["true"], ("echo", 1)):
        with pytest.raises(InvalidInput, match="command"):
            spec(command=command)


def test_relative_paths_become_absolute_against_the_callers_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cwd and the capture paths are made absolute so `corral logs` finds them from anywhere."""
    monkeypatch.chdir(tmp_path)
    made = spec(cwd="tree", transcript_path=".corral/runs/r.jsonl", stderr_path="/abs/r.stderr")
    assert (str(tmp_path / "tree"), str(tmp_path / ".corral/runs/r.jsonl"), "/abs/r.stderr") == (
        made.cwd,
        made.transcript_path,
        made.stderr_path,
    )
    assert os.path.isabs(made.cwd)


def test_an_empty_cwd_is_refused() -> None:
    """A run always has a working directory."""
    with pytest.raises(InvalidInput, match="cwd"):
        spec(cwd="")


def test_a_running_run_has_no_duration_and_a_finished_one_has_its_length() -> None:
    """duration_s is None until the run finishes, then finished_at - started_at in seconds."""
    assert (None, False) == (record().duration_s, record().finished)
    ended = record(finished_at=datetime(2030, 1, 1, 0, 1, 30, tzinfo=UTC), outcome=RunOutcome.DONE)
    assert (90.0, True) == (ended.duration_s, ended.finished)


def test_outcomes_are_the_documented_reasons() -> None:
    """The outcomes are the termination reasons of the issue, plus stalled."""
    assert [
        "done",
        "failed",
        "timeout",
        "killed",
        "lease_lost",
        "deferred",
        "shutdown",
        "stalled",
        "waiting",
    ] == [str(o) for o in RunOutcome]
