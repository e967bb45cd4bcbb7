"""Tool requirements: their spec, the version in a `--version` answer, and the order."""

from __future__ import annotations

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.tools import ToolRequirement, older, parse_requirement, version_in


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("git", ToolRequirement(name="git")),
        ("git>=2.38", ToolRequirement(name="git", minimum=(2, 38))),
        ("node>=20", ToolRequirement(name="node", minimum=(20,))),
        ("/usr/bin/python3>=3.11.2", ToolRequirement(name="/usr/bin/python3", minimum=(3, 11, 2))),
    ],
)
def test_a_spec_is_a_name_and_perhaps_a_minimum(spec: str, expected: ToolRequirement) -> None:
    assert expected == parse_requirement("require", spec)
    assert spec == str(expected)


@pytest.mark.parametrize(
    "spec",
    ["", "node>20", "node >= 20", "node>=", "node>=v20", "node==20", ">=2", "a b", "x" * 201],
)
def test_a_spec_of_another_shape_names_the_field(spec: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_requirement("require", spec)
    assert caught.value.message.startswith("require: expected a program NAME or NAME>=VERSION")


@pytest.mark.parametrize(
    ("answer", "version"),
    [
        ("v20.20.2\n", (20, 20, 2)),
        ("git version 2.39.5", (2, 39, 5)),
        ("2.0.5 (Claude Code)", (2, 0, 5)),
        ("aider 0.86.1", (0, 86, 1)),
        ("tool 7", (7,)),
        ("no digits here", None),
    ],
)
def test_the_version_is_the_first_number_of_the_answer(
    answer: str, version: tuple[int, ...] | None
) -> None:
    assert version == version_in(answer)


def test_missing_parts_count_as_zero() -> None:
    assert not older((2, 38), (2, 38, 0))
    assert older((2, 37, 9), (2, 38))
    assert not older((20,), (20,))
    assert older((18, 19, 0), (20,))
    assert not older((3, 0), (2, 99, 99))
