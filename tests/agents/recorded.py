"""What tests check of the invocations the stand-in agents record (tests/agents/fakes)."""

from __future__ import annotations

from typing import Any


def assert_resumed(first: dict[str, Any], later: dict[str, Any]) -> None:
    """The `later` invocation resumed the `first` one's session, in the same folder."""
    assert (first["cwd"], first["session_id"], True) == (
        later["cwd"],
        later["session_id"],
        later["resumed"],
    )
