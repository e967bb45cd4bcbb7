"""The tools a worker needs (`[pool] require`, `--require`): `NAME` or `NAME>=VERSION`.

A requirement is parsed once, with the settings, so that a bad one is refused (exit 2)
before anything starts; runtime/worker/tools.py then looks for each tool on PATH and
reads its version from `NAME --version`. Only a minimum is expressed: a worker needs a
tool new enough for what it asks of it, and a maximum would refuse tomorrow's release.
"""

from __future__ import annotations

import re

from corral.foundation.errors import InvalidInput
from corral.foundation.records import record

_SPEC = re.compile(r"(?P<name>[^\s<>=!~]+)(?:>=(?P<minimum>\d+(?:\.\d+)*))?")
_VERSION = re.compile(r"\d+(?:\.\d+)+|\d+")
MAX_SPEC_CHARS = 200


@record(frozen=True, slots=True, kw_only=True)
class ToolRequirement:
    """A program that must be on PATH, and the least version it may have."""

    name: str
    minimum: tuple[int, ...] | None = None

    def __str__(self) -> str:
        return self.name if self.minimum is None else f"{self.name}>={shown(self.minimum)}"


def parse_requirement(field: str, text: str) -> ToolRequirement:
    """`git>=2.38` -> ToolRequirement("git", (2, 38)); InvalidInput naming `field`."""
    found = _SPEC.fullmatch(text) if len(text) <= MAX_SPEC_CHARS else None
    if found is None:
        raise InvalidInput(field, "a program NAME or NAME>=VERSION (e.g. git>=2.38)", text)
    minimum = found["minimum"]
    return ToolRequirement(
        name=found["name"],
        minimum=tuple(int(n) for n in minimum.split(".")) if minimum else None,
    )


def version_in(text: str) -> tuple[int, ...] | None:
    """The first version number in a `--version` answer (`v20.1.0`, `git version 2.39.5`,
    `2.0.5 (Claude Code)`), or None."""
    found = _VERSION.search(text)
    return None if found is None else tuple(int(n) for n in found.group().split("."))


def older(version: tuple[int, ...], minimum: tuple[int, ...]) -> bool:
    """Whether `version` is below `minimum`, missing parts counting as 0 (2.38 == 2.38.0)."""
    width = max(len(version), len(minimum))
    return version + (0,) * (width - len(version)) < minimum + (0,) * (width - len(minimum))


def shown(version: tuple[int, ...]) -> str:
    """(2, 38) -> "2.38"."""
    return ".".join(map(str, version))
