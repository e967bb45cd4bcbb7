"""Namespace commands: `namespace list`, every namespace of the store with its counts.

Every other command acts in one namespace, chosen by `--namespace` or CORRAL_NAMESPACE
(cli/context.py); this one reads them all, beside the database (a token of `corral serve`
acts in one namespace, so this is not sent to a server).
"""

from __future__ import annotations

from collections.abc import Sequence

from corral.cli.commands import Command
from corral.cli.context import Context
from corral.cli.render import table
from corral.foundation.errors import InvalidInput
from corral.model.namespace_counts import NamespaceCounts
from corral.model.states import TaskStatus
from corral.store import is_http_url
from corral.usecases.namespaces import list_namespaces


def cmd_namespace_list(ctx: Context) -> int:
    """Each namespace: its tasks by status, their total and its live workers."""
    if is_http_url(ctx.db):
        expected = "a local store: a token acts in one namespace and reads no other's counts"
        raise InvalidInput("db", expected, ctx.db)
    found = list_namespaces(ctx.store)
    ctx.emit_all(found, lambda: namespace_table(found))
    return 0


def namespace_table(found: Sequence[NamespaceCounts]) -> str:
    """One line a namespace, a column a task status."""
    statuses = [str(s) for s in TaskStatus]
    rows = [
        (
            n.name,
            *(str(n.tasks.get(s, 0)) for s in statuses),
            str(sum(n.tasks.values())),
            str(n.workers_live),
        )
        for n in found
    ]
    headers = ("NAMESPACE", *(s.upper() for s in statuses), "TASKS", "WORKERS")
    return table(headers, rows)


COMMANDS = (
    Command(
        "namespace list",
        cmd_namespace_list,
        "every namespace: tasks by status, live workers",
    ),
)
