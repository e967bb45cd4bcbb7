"""The tools a worker requires, looked for at its start (seed 003 FR-052..055).

Each requirement (model/tools.py) is found on PATH and asked its version with
`NAME --version`; a tool that is missing, too old, or whose version cannot be read when a
minimum is asked for stops the start with exit 3 and one line naming it, as a missing git
does: the machine, not the user's input, lacks something. What was found is logged with
its version and path, so that a run's log says which tools it had.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from dataclasses import dataclass

from corral.foundation.errors import CorralError
from corral.foundation.logs import event
from corral.model.tools import ToolRequirement, older, shown, version_in

VERSION_TIMEOUT_S = 10.0
ANSWER_CHARS = 4000  # of a `--version` answer, read for its version


class ToolUnavailable(CorralError):
    """A tool the worker requires is missing or too old."""

    exit_code = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class FoundTool:
    """A required tool as found: where, and its version when it said one."""

    name: str
    path: str
    version: tuple[int, ...] | None


def find_tools(required: tuple[ToolRequirement, ...]) -> tuple[FoundTool, ...]:
    """Each required tool found and new enough; ToolUnavailable for the first that is not."""
    return tuple(_find(requirement) for requirement in required)


def log_tools(log: logging.Logger, tools: tuple[FoundTool, ...]) -> None:
    """One `tool.found` line per required tool."""
    for tool in tools:
        version = shown(tool.version) if tool.version else None
        event(log, "tool.found", tool=tool.name, version=version, path=tool.path)


def _find(requirement: ToolRequirement) -> FoundTool:
    name = requirement.name
    path = shutil.which(name)
    if path is None:
        raise ToolUnavailable(f"required tool {name}: not found on PATH")
    path = os.path.abspath(path)
    version = _version_of(name, path, needed=requirement.minimum is not None)
    minimum = requirement.minimum
    if minimum is not None and version is not None and older(version, minimum):
        raise ToolUnavailable(
            f"required tool {name} {shown(version)} is too old: the worker needs {requirement}"
        )
    return FoundTool(name=name, path=path, version=version)


def _version_of(name: str, path: str, *, needed: bool) -> tuple[int, ...] | None:
    """The version `NAME --version` says; when a minimum is `needed`, ToolUnavailable if
    it says none (or does not answer)."""
    try:
        answer = version_answer(path)
    except OSError as exc:
        raise ToolUnavailable(f"required tool {name}: cannot run it: {exc.strerror}") from None
    if answer is TIMED_OUT:
        raise ToolUnavailable(
            f"required tool {name}: `{name} --version` did not answer within "
            f"{VERSION_TIMEOUT_S:g} s"
        )
    status, text = answer
    version = version_in(text) if status == 0 else None
    if version is None and needed:
        raise ToolUnavailable(
            f"required tool {name}: cannot read its version from `{name} --version` "
            f"(exit status {status})"
        )
    return version


TIMED_OUT = (-1, "")


def version_answer(path: str) -> tuple[int, str]:
    """(exit status, answer) of `PATH --version`: its stdout, else its stderr (some tools
    answer there), cut to ANSWER_CHARS; TIMED_OUT after VERSION_TIMEOUT_S. OSError when
    it cannot be run."""
    try:
        # S603: a program on PATH the user named, asked only its version.
        proc = subprocess.run(  # noqa: S603
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return TIMED_OUT
    answer = (proc.stdout or proc.stderr)[:ANSWER_CHARS].decode("utf-8", "replace")
    return proc.returncode, answer
