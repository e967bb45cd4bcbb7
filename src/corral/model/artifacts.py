"""Run artifacts (seed 003 FR-066): files a run left in its working directory, kept.

A runner started with `--artifacts GLOB` copies, after each run of a command ends (success
or failure), the files matching its globs from the task's working directory (its worktree
when it has one) into the run's folder, and records each on the run: its path relative to
the working directory, size and SHA-256, or why it was skipped (past the run's size cap,
or a name that is not UTF-8). Globs are relative and stay inside the working directory:
an absolute one, or one with a `..` part, is refused when the runner starts.
"""

from __future__ import annotations

import os
from typing import Any

from corral.foundation.errors import InvalidInput
from corral.foundation.records import record

MB = 1024 * 1024


@record(frozen=True, slots=True, kw_only=True)
class Artifact:
    """One file a run left: copied (`sha256` set), or skipped (`skipped` says why)."""

    path: str  # relative to the run's working directory
    size_bytes: int
    sha256: str | None = None
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "path": self.path,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "skipped": self.skipped,
        }


def artifacts_dir(transcript_path: str | None) -> str | None:
    """Where a run's artifacts are copied: beside its output, `<run>.artifacts/` (on the
    runner's host), or None for a run with no output files."""
    return None if transcript_path is None else os.path.splitext(transcript_path)[0] + ".artifacts"


def check_pattern(pattern: str) -> str:
    """`pattern`, a glob relative to a task's working directory that cannot leave it."""
    if not pattern or not pattern.isprintable():
        raise InvalidInput("artifacts", "a glob of printable characters", pattern)
    parts = pattern.replace(os.sep, "/").split("/")
    if os.path.isabs(pattern) or ".." in parts:
        raise InvalidInput(
            "artifacts", "a glob relative to the task's working directory, without '..'", pattern
        )
    return pattern
