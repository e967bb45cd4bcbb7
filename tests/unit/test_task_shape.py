"""A new task's shape, declared once: NewTask's field table and everything derived from it
(the HTTP body's fields, the OpenAPI schema, a schedule template's fields, the insert)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import re
import types
import typing
from dataclasses import fields
from datetime import UTC, datetime

import pytest

from corral.model.schedules import TEMPLATE_FIELDS
from corral.model.states import TaskStatus
from corral.model.tasks import NEW_TASK_FIELDS, NewTask
from corral.server.openapi import NEW_TASK
from corral.server.tasks import BODY_TYPES
from corral.store.queries import load_queries
from corral.store.tasks import task_row

# The Python types a JSON Schema type stands for in NewTask's annotations.
PYTHON_TYPES = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict,
    "array": tuple,
}


def _over_http() -> list[str]:
    return [f.name for f in NEW_TASK_FIELDS if f.schema is not None]


def test_the_table_has_one_row_per_field_of_new_task_in_its_order() -> None:
    """A field added to NewTask without a row (or a row without a field) fails here."""
    assert [f.name for f in fields(NewTask)] == [f.name for f in NEW_TASK_FIELDS]


def test_each_schema_type_is_the_fields_python_type() -> None:
    """What the table says a field is over HTTP is what NewTask holds."""
    hints = typing.get_type_hints(NewTask)
    for row in NEW_TASK_FIELDS:
        if row.schema is None:
            continue
        hint = hints[row.name]
        options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        held = {typing.get_origin(t) or t for t in options}  # dict[str, Any] is a dict
        assert PYTHON_TYPES[row.schema["type"]] in held, row.name


def test_the_http_body_and_the_openapi_schema_take_the_tables_fields() -> None:
    """POST /api/tasks checks, and the document describes, the same fields in the table's
    order, each with the table's schema and doc; what has no default is required."""
    assert _over_http() == list(BODY_TYPES)
    assert _over_http() == list(NEW_TASK["properties"])
    for row in NEW_TASK_FIELDS:
        if row.schema is not None:
            assert {**row.schema, "description": row.doc} == NEW_TASK["properties"][row.name]
    assert ["title"] == NEW_TASK["required"]


@pytest.mark.parametrize(
    ("schema_type", "accepted"),
    [
        ("string", (str,)),
        ("integer", (int,)),
        ("number", (int, float)),
        ("boolean", (bool,)),
        ("object", (dict,)),
        ("array", (list,)),
    ],
)
def test_the_body_takes_each_schema_types_json_types(
    schema_type: str, accepted: tuple[type, ...]
) -> None:
    """Each field's JSON types over HTTP are its schema type's."""
    for row in NEW_TASK_FIELDS:
        if row.schema is not None and row.schema["type"] == schema_type:
            assert accepted == BODY_TYPES[row.name], row.name


def test_a_schedule_template_carries_the_fields_the_table_marks() -> None:
    """TEMPLATE_FIELDS is the table's template rows, each a field the insert stores."""
    assert [f.name for f in NEW_TASK_FIELDS if f.template] == list(TEMPLATE_FIELDS)
    stored = {f.name for f in NEW_TASK_FIELDS if f.column}
    assert set() == set(TEMPLATE_FIELDS) - stored


def _insert_parameters(dialect: str) -> set[str]:
    """The row keys `insert_tasks` reads: :name on SQLite, r ->> 'name' on PostgreSQL."""
    sql = load_queries(dialect)["insert_tasks"]
    pattern = r"(?<!:):(\w+)" if dialect == "sqlite" else r"r ->>? '(\w+)'"
    return set(re.findall(pattern, sql)) - {"now", "namespace", "rows"}


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_insert_reads_every_key_of_a_task_row(dialect: str) -> None:
    """The one insert of both dialects takes exactly what `task_row` gives, which holds
    every field the table stores as given."""
    spec = NewTask(title="t", run_at=datetime(2030, 1, 2, tzinfo=UTC))
    row = task_row(spec, task_id="t-1", status=TaskStatus.READY, max_attempts=3, retry_base_s=1)
    assert {f.name for f in NEW_TASK_FIELDS if f.column} <= set(row)
    assert set(row) == _insert_parameters(dialect)


def test_a_task_row_takes_the_settings_where_the_spec_gives_none() -> None:
    """Attempts and backoff from the settings unless given; the start as seconds."""
    at = datetime(2030, 1, 2, tzinfo=UTC)
    given = NewTask(title="t", max_attempts=5, retry_base_s=2.0, run_at=at)
    row = task_row(given, task_id="t-1", status=TaskStatus.READY, max_attempts=3, retry_base_s=1)
    assert (5, 2.0, at.timestamp(), None) == (
        row["max_attempts"],
        row["retry_base_s"],
        row["run_at"],
        row["task_namespace"],
    )
    bare = task_row(
        NewTask(title="t"),
        task_id="t-2",
        status=TaskStatus.READY,
        max_attempts=3,
        retry_base_s=1.5,
        namespace="team",
    )
    assert (3, 1.5, None, "team") == (
        bare["max_attempts"],
        bare["retry_base_s"],
        bare["run_at"],
        bare["task_namespace"],
    )
