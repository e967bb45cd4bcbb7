"""A page of the task list as the dashboard reads it: filters, a sort, a keyset cursor.

A page is read after a cursor (`PageKey`), never at an offset: the store reads the rows
after the last one shown by an index, so page 1,000 costs what page 1 costs, at 100,000
tasks or a million. A cursor is the sort key of the last row of the page before, written
`PRIORITY.SEQ` (seq: the order tasks were added in, unique). A page read back from a
cursor (`before`: "previous page") reads the same index the other way from the first row
of the page after it, so going back costs what going on costs.
"""

from __future__ import annotations

from enum import StrEnum

from corral.foundation.errors import InvalidInput
from corral.foundation.records import record
from corral.model.states import TaskStatus
from corral.model.tasks import Task

MAX_PAGE = 500


class TaskSort(StrEnum):
    """The orders the task list may be read in."""

    NEWEST = "newest"
    OLDEST = "oldest"
    PRIORITY = "priority"  # the claim order: priority, highest first, then oldest


@record(frozen=True, slots=True, kw_only=True)
class PageKey:
    """The sort key of the last row of a page (the next page starts after it) or of the
    first (the previous page ends before it)."""

    seq: int
    priority: int = 0

    def __str__(self) -> str:
        return f"{self.priority}.{self.seq}"


def parse_page_key(raw: str, field: str = "after") -> PageKey:
    """The cursor `PRIORITY.SEQ` a page handed out; InvalidInput naming `field` if it is
    not one."""
    priority, _, seq = raw.partition(".")
    try:
        return PageKey(seq=int(seq), priority=int(priority))
    except ValueError:
        raise InvalidInput(field, "a cursor of a page of this list", raw[:40]) from None


@record(frozen=True, slots=True, kw_only=True)
class TaskQuery:
    """Which tasks, in which order, from where: every filter is optional."""

    statuses: tuple[TaskStatus, ...] = ()
    queue: str | None = None
    kind: str | None = None
    assignee: str | None = None
    label: tuple[str, str] | None = None  # (key, value)
    text: str | None = None  # in the title, the description or the payload's JSON
    sort: TaskSort = TaskSort.NEWEST
    after: PageKey | None = None
    before: PageKey | None = None  # the page that ends just before this key
    limit: int = 50

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_PAGE:
            raise InvalidInput("limit", f"a whole number from 1 to {MAX_PAGE}", self.limit)
        if self.after is not None and self.before is not None:
            raise InvalidInput("before", "no cursor when `after` is given")


@record(frozen=True, slots=True, kw_only=True)
class TaskPage:
    """A page of tasks, the cursor of the next (None: this is the last) and of the previous
    (None: this is the first)."""

    tasks: list[Task]
    next: PageKey | None
    previous: PageKey | None = None
