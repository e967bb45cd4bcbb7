"""Namespaces: the teams or projects one store serves, each apart from the others.

Tasks, workers, queue limits, schedules and API tokens belong to one namespace; a store
handle is opened for one (`--namespace`, CORRAL_NAMESPACE, `run_worker(namespace=)`), and
every read and write it makes of those is scoped to it. A lookup by id (a task, a run,
a worker, a schedule, a message, a claim by its fencing token) finds only the handle's
namespace's: another's answers as an unknown id does. A worker claims only its own
namespace's tasks: the claim filter reads the namespace from the worker's row, so not even
a handle opened for another namespace can hand it one. Events, runs and reviews follow
their task or worker, a message its sender's handle. Git repositories and provider accounts
are not namespaced.

A name is what a directory, a metric label and a URL header can all carry as it is:
lowercase letters, digits, `_`, `.` and `-`, starting with a letter or digit, at most 63
characters, and never `..`.
"""

from __future__ import annotations

import re

from corral.foundation.errors import InvalidInput

DEFAULT_NAMESPACE = "default"
# The scope of the maintenance handle (`Store.for_maintenance`): every namespace at once,
# for the reconciler, the scheduler pass, retention and the landing of reviewed tasks. Not
# a name (`checked` refuses it), so no flag, header or API token can ask for it.
EVERY_NAMESPACE = "*"
EXPECTED = (
    "a name of a-z, 0-9, '_', '.', '-' (starting with a letter or digit, at most 63, no '..')"
)
# Compiled on first use (re caches it), not at import: every command imports this module.
_NAME = r"[a-z0-9][a-z0-9_.-]{0,62}"


def checked(name: object, *, field_name: str = "--namespace") -> str:
    """`name` if it is a valid namespace, else InvalidInput naming `field_name`."""
    if not isinstance(name, str) or not re.fullmatch(_NAME, name) or ".." in name:
        raise InvalidInput(field_name, EXPECTED, name)
    return name
