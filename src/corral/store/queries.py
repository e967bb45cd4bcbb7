"""Named queries: each dialect's `sql/<dialect>/queries.sql`, split on `-- name: NAME` lines.

SQL lives in those files only; stores look queries up by name. Files are read with
plain `open` (not importlib.resources) because this runs on every CLI start.
"""

from __future__ import annotations

import os
import re

SQL_DIR = os.path.join(os.path.dirname(__file__), "sql")
_HEADER = re.compile(r"^-- name: (\w+)\s*$", re.MULTILINE)


def sql_path(dialect: str, *parts: str) -> str:
    """Path of a file under `sql/<dialect>/`."""
    return os.path.join(SQL_DIR, dialect, *parts)


def load_queries(dialect: str) -> dict[str, str]:
    """Every named query of `dialect`, name -> SQL text."""
    with open(sql_path(dialect, "queries.sql"), encoding="utf-8") as handle:
        text = handle.read()
    chunks = _HEADER.split(text)[1:]
    queries = {name: body.strip() for name, body in zip(chunks[::2], chunks[1::2], strict=True)}
    if len(queries) != len(chunks) // 2:
        raise ValueError(f"{dialect}/queries.sql names a query twice")
    return queries


def migration_files(dialect: str) -> list[tuple[int, str]]:
    """(version, path) of each `sql/<dialect>/migrations/NNNN_name.sql`, in order."""
    folder = sql_path(dialect, "migrations")
    found = []
    for name in os.listdir(folder):
        match = re.fullmatch(r"(\d{4})_\w+\.sql", name)
        if match:
            found.append((int(match.group(1)), os.path.join(folder, name)))
    return sorted(found)
