"""`corral.foundation.records.record`: the same record that `@dataclass(frozen=True,
slots=True, kw_only=True)` makes, with methods written once instead of generated per class
and without importing dataclasses; `corral.foundation.records.field` and `replace` as
dataclasses' own."""

from __future__ import annotations

import copy
import dataclasses
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest

from corral.foundation import records
from corral.foundation.errors import InvalidInput
from corral.foundation.records import COMPILE_AT, record


def _pair(name: str) -> tuple[type, type]:
    """The same class body made by `record` with corral.foundation.records.field and by `dataclass`
    with dataclasses.field, each a new class."""

    def body(field: Any) -> type:
        class Figures:
            """A record with every kind of field."""

            name: str
            count: int = 0
            tags: list[str] = field(default_factory=list)
            hidden: str = field(default="x", repr=False, compare=False)
            derived: int = field(default=7, init=False)

            def __post_init__(self) -> None:
                if self.count < 0:
                    raise InvalidInput("count", "a whole number of at least 0", self.count)

        Figures.__qualname__ = name
        return Figures

    made = record(frozen=True, slots=True, kw_only=True)(body(records.field))
    generated = dataclass(frozen=True, slots=True, kw_only=True)(body(dataclasses.field))
    return made, generated


MADE, GENERATED = _pair("Figures")


def _compiled() -> type:
    """A record class that has made COMPILE_AT records, so its `__init__` is compiled."""
    cls = _pair("Figures")[0]
    for n in range(COMPILE_AT):
        cls(name=f"r{n}")
    assert "__record_self__" in cls.__init__.__code__.co_varnames
    return cls


CLASSES = [MADE, _compiled(), GENERATED]
KINDS = ["walked", "compiled", "dataclass"]


@pytest.mark.parametrize("cls", CLASSES, ids=KINDS)
def test_a_record_is_the_dataclass_it_declares(cls):
    """Defaults, factories, init=False fields, repr, equality and hash as dataclass has them."""
    one = cls(name="a", count=2, hidden="h")
    assert "Figures(name='a', count=2, tags=[], derived=7)" == repr(one)
    assert cls(name="a", count=2, hidden="other") == one  # hidden is not compared
    assert cls(name="a", count=3) != one
    assert one.tags is not cls(name="a").tags  # a fresh list each time
    assert 7 == one.derived
    assert ["name", "count", "tags", "hidden", "derived"] == [
        f.name for f in dataclasses.fields(cls)
    ]
    assert 5 == dataclasses.replace(one, count=5).count == records.replace(one, count=5).count
    assert dataclasses.is_dataclass(cls)
    assert one == copy.copy(one) == copy.deepcopy(one)  # __getstate__ and __setstate__, as pickle
    with pytest.raises(TypeError):
        hash(one)  # a list inside: unhashable, as the generated hash says


@pytest.mark.parametrize("cls", CLASSES, ids=KINDS)
def test_a_record_refuses_what_dataclass_refuses(cls):
    """Frozen fields, unknown and missing arguments, positional ones, and its own checks."""
    one = cls(name="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.count = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del one.count  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        cls(name="a", other=1)
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'name'"):
        cls()
    with pytest.raises(TypeError, match="unexpected keyword argument 'derived'"):
        cls(name="a", derived=1)
    with pytest.raises(TypeError, match=r"^Figures\.__init__\(\) takes 1 positional argument"):
        cls("a")
    with pytest.raises(InvalidInput, match="count"):
        cls(name="a", count=-1)


def test_a_hashable_record_hashes_as_the_dataclass():
    """Two equal records hash alike, over the compared fields only."""

    @record(frozen=True, slots=True, kw_only=True)
    class Key:
        """A hashable record."""

        a: int
        b: str = records.field(default="", compare=False)

    assert hash(Key(a=1, b="x")) == hash(Key(a=1, b="y"))
    assert {Key(a=1), Key(a=1, b="z")} == {Key(a=1)}


def test_a_record_has_no_room_for_other_attributes():
    """No field, no attribute: refused as a frozen field is. (The generated `__setattr__` of
    a slotted frozen dataclass fails with a TypeError there: its `super()` names the class
    before `slots=True` made a new one.)"""
    for cls in CLASSES[:2]:
        with pytest.raises(AttributeError):
            cls(name="a").other = 1


def test_record_takes_the_three_options_only():
    """A record is frozen, slotted and keyword-only, or it is not made."""
    with pytest.raises(TypeError):
        record(frozen=True, slots=False, kw_only=True)  # type: ignore[call-overload]


@pytest.mark.parametrize("cls", CLASSES, ids=KINDS)
def test_replace_refuses_a_field_init_does_not_take(cls):
    """records.replace, as dataclasses.replace, will not set a field(init=False)."""
    with pytest.raises(ValueError, match="derived is declared with init=False"):
        records.replace(cls(name="a"), derived=1)


def test_a_record_made_and_used_imports_no_dataclasses():
    """Making records, comparing, printing and replacing them imports neither dataclasses
    nor inspect; asking dataclasses about one does, and finds its fields."""
    probe = """
import sys
from corral.foundation.records import field, record, replace

@record(frozen=True, slots=True, kw_only=True)
class Point:
    x: int
    tags: list = field(default_factory=list)

made = [Point(x=n) for n in range(40)]
assert replace(made[0], x=5) == Point(x=5) and repr(made[1]) == "Point(x=1, tags=[])"
print(sorted(m for m in ("dataclasses", "inspect") if m in sys.modules))
import dataclasses
print([f.name for f in dataclasses.fields(Point)])
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert "[]\n['x', 'tags']\n" == done.stdout
