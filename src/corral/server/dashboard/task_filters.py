"""The task list's query string, read into a `TaskQuery`, and written back into links.

    status=S (repeatable)  queue=Q  kind=K  assignee=A  label=KEY=VALUE  q=TEXT
    sort=newest|oldest|priority  after=CURSOR | before=CURSOR  limit=N

An empty field is no filter (a form sends every field). A bad value is InvalidInput
naming it, shown on the error page with 422.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlencode

from corral.foundation import documents
from corral.foundation.errors import InvalidInput
from corral.model.task_pages import TaskQuery, TaskSort, parse_page_key
from corral.model.tasks import check_name
from corral.server import params

FILTERS = ("status", "queue", "kind", "assignee", "label", "q", "sort")
PAGE_SIZES = (25, 50, 100, 200)
MAX_TEXT = 200


def task_query(fields: Mapping[str, Sequence[str]]) -> TaskQuery:
    """The query the fields (a query string's or a form's) ask for."""

    def first(name: str) -> str | None:
        values = [v.strip() for v in fields.get(name, ()) if v.strip()]
        return values[0] if values else None

    text = first("q")
    if text is not None:
        if len(text) > MAX_TEXT:
            raise InvalidInput("q", f"a search of at most {MAX_TEXT} characters")
        documents.check_text("q", text)  # no NUL: a store could not compare it
    for name in ("queue", "kind", "assignee"):
        if (value := first(name)) is not None:
            check_name(name, value)
    after, before = first("after"), first("before")
    return TaskQuery(
        statuses=params.statuses([s for s in fields.get("status", ()) if s]),
        queue=first("queue"),
        kind=first("kind"),
        assignee=first("assignee"),
        label=_label(first("label")),
        text=text,
        sort=_sort(first("sort")),
        after=None if after is None else parse_page_key(after),
        before=None if before is None else parse_page_key(before, "before"),
        limit=_limit(first("limit")),
    )


def _label(raw: str | None) -> tuple[str, str] | None:
    if raw is None:
        return None
    key, sep, value = raw.partition("=")
    if not sep or not key:
        raise InvalidInput("label", "KEY=VALUE", raw[:80])
    check_name("label", key)
    documents.check_text("label", value)
    return key, value


def _sort(raw: str | None) -> TaskSort:
    try:
        return TaskSort(raw or TaskSort.NEWEST)
    except ValueError:
        raise InvalidInput("sort", "newest, oldest or priority", raw) from None


def _limit(raw: str | None) -> int:
    if raw is None:
        return PAGE_SIZES[1]
    if not raw.isdigit() or int(raw) not in PAGE_SIZES:
        raise InvalidInput("limit", "one of " + ", ".join(map(str, PAGE_SIZES)), raw[:10])
    return int(raw)


def filter_pairs(query: TaskQuery) -> list[tuple[str, str]]:
    """The query's filters and sort as (name, value) pairs: hidden fields and links."""
    pairs = [("status", str(s)) for s in query.statuses]
    label = None if query.label is None else f"{query.label[0]}={query.label[1]}"
    for name, value in (
        ("queue", query.queue),
        ("kind", query.kind),
        ("assignee", query.assignee),
        ("label", label),
        ("q", query.text),
    ):
        if value is not None:
            pairs.append((name, value))
    pairs.append(("sort", str(query.sort)))
    pairs.append(("limit", str(query.limit)))
    return pairs


def link(query: TaskQuery, **more: str) -> str:
    """The task list's URL of `query`'s filters, with `more` (`after=...`, `before=...`)."""
    return "/tasks?" + urlencode([*filter_pairs(query), *more.items()])
