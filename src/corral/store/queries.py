"""Named queries: each dialect's `sql/<dialect>/queries.sql`, split on `-- name: NAME` lines.

SQL lives in those files only; stores look queries up by name. Files are read with
plain `open` (not importlib.resources) because this runs on every CLI start.

A condition that several queries share is written once, as a fragment: a block headed
`-- fragment: NAME` is no query of its own, and `/* fragment: NAME */` in a query (or in
another SQL file read through `read_sql_file`) stands for its text. The filter of the tasks
a worker may claim is written once for both dialects (store/claimable.py), and its texts
are fragments too.
"""

from __future__ import annotations

import os
import re

from corral.store import claimable

SQL_DIR = os.path.join(os.path.dirname(__file__), "sql")
_HEADER = re.compile(r"^-- (name|fragment): (\w+)\s*$", re.MULTILINE)
_USE = re.compile(r"/\* fragment: (\w+) \*/")


def sql_path(dialect: str, *parts: str) -> str:
    """Path of a file under `sql/<dialect>/`."""
    return os.path.join(SQL_DIR, dialect, *parts)


def load_queries(dialect: str) -> dict[str, str]:
    """Every named query of `dialect`, name -> SQL text, with its fragments in place."""
    queries, fragments = _blocks(dialect)
    fragments.update(claimable.fragments(dialect))
    return {name: expand(body, fragments) for name, body in queries.items()}


def load_fragments(dialect: str) -> dict[str, str]:
    """Every fragment of `dialect`: its queries.sql's and the claimable filter's."""
    return {**_blocks(dialect)[1], **claimable.fragments(dialect)}


def read_sql_file(path: str) -> str:
    """The text of PostgreSQL SQL file `path` (schema, a migration, the functions), with the
    claimable filter's fragments in place."""
    with open(path, encoding="utf-8") as handle:
        return expand(handle.read(), claimable.fragments("postgresql"))


def _blocks(dialect: str) -> tuple[dict[str, str], dict[str, str]]:
    with open(sql_path(dialect, "queries.sql"), encoding="utf-8") as handle:
        text = handle.read()
    chunks = _HEADER.split(text)[1:]
    found: dict[str, dict[str, str]] = {"name": {}, "fragment": {}}
    for kind, name, body in zip(chunks[::3], chunks[1::3], chunks[2::3], strict=True):
        if name in found["name"] or name in found["fragment"]:
            raise ValueError(f"{dialect}/queries.sql names {name!r} twice")
        found[kind][name] = body.strip().removesuffix(";")
    return found["name"], found["fragment"]


def expand(text: str, fragments: dict[str, str]) -> str:
    """`text` with each `/* fragment: NAME */` replaced by that fragment's text."""
    return _USE.sub(lambda use: fragments[use.group(1)], text)


def migration_files(dialect: str) -> list[tuple[int, str]]:
    """(version, path) of each `sql/<dialect>/migrations/NNNN_name.sql`, in order."""
    folder = sql_path(dialect, "migrations")
    found = []
    for name in os.listdir(folder):
        match = re.fullmatch(r"(\d{4})_\w+\.sql", name)
        if match:
            found.append((int(match.group(1)), os.path.join(folder, name)))
    return sorted(found)
