"""Use cases of agents' spending: usage and cost summed, and the provider accounts.

Usage is what each run's agent reported (model/usage.py); provider accounts are shared
by every host (model/providers.py). Both are read from the store: a total is the same
whichever process asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, timedelta, tzinfo
from typing import TYPE_CHECKING, Literal

from corral.foundation.errors import InvalidInput, NotFound
from corral.foundation.settings import Settings
from corral.model.actors import OPERATOR
from corral.model.providers import ProviderState, check_provider
from corral.model.tasks import TaskFilter
from corral.model.usage import UsageTotal
from corral.store import Store

if TYPE_CHECKING:
    from corral.model.budgets import CapSpending, DayCap, TaskSpending


def usage_totals(
    store: Store, *, by: str = "task", since_s: float | None = None, limit: int = 1000
) -> list[UsageTotal]:
    """The runs started in the last `since_s` seconds (None: all), summed by `by`."""
    since = None if since_s is None else store.now() - timedelta(seconds=since_s)
    totals = store.runs.usage_by(by, since=since, limit=limit)
    return _titled(store, totals) if by == "task" else totals


def _titled(store: Store, totals: list[UsageTotal]) -> list[UsageTotal]:
    """`totals` by task, each with its task's title (None for a task deleted since)."""
    titled = []
    for total in totals:
        try:
            title: str | None = store.tasks.get_task(total.key).title
        except NotFound:
            title = None
        titled.append(replace(total, title=title))
    return titled


def task_totals(store: Store, task_id: str) -> UsageTotal | None:
    """Every run of task `task_id` summed (None: it has no run yet)."""
    found = store.runs.usage_by("task", task_id=task_id, limit=1)
    return found[0] if found else None


# How an orchestrator hands its pool's workers the provider environment it resolved (a
# worker's own environment is filtered of secrets, so it could not resolve `${VAR}`).
PROVIDER_ENV_VARIABLE = "CORRAL_PROVIDER_ENV"


def apply_configured_providers(store: Store, settings: Settings) -> list[str]:
    """Write each `[providers.NAME]` cap of the config into the store (by `corral init` and
    `orchestrator start`, as queue limits are); the accounts written."""
    written = []
    for name, config in sorted(settings.providers.items()):
        store.providers.set_provider(name, max_running=config.max_running, actor=OPERATOR)
        written.append(name)
    return written


def provider_env(
    settings: Settings, provider: str | None, environ: Mapping[str, str]
) -> dict[str, str]:
    """The environment `[providers.NAME] env` gives the agents of account `provider`: each
    value as written, or `${VAR}`'s value in `environ` (corral's own environment).
    InvalidInput names a variable that is not there."""
    config = settings.providers.get(provider) if provider is not None else None
    if config is None:
        return {}
    resolved = {}
    for name, value in config.env:
        if value.startswith("${") and value.endswith("}"):
            variable = value[2:-1]
            if variable not in environ:
                where = f"providers.{provider}.env.{name}"
                raise InvalidInput(where, f"the variable {variable} set in corral's environment")
            resolved[name] = environ[variable]
        else:
            resolved[name] = value
    return resolved


def set_day_cap(
    store: Store, scope: str, name: str, *, max_cost: str | None, max_tokens: str | None
) -> DayCap:
    """Set the day caps of queue or provider account `name` from their command-line text
    (`40`, `$40`; `2M`; `none` removes one; None keeps it): every run started after
    counts against them (model/budgets.py)."""
    from corral.model import budgets  # noqa: PLC0415 - `queue set` and `provider set` only

    if scope == "provider":
        check_provider(name)
    cost: float | Literal["keep"] | None = "keep"
    tokens: int | Literal["keep"] | None = "keep"
    if max_cost is not None:
        cost = None if max_cost == "none" else budgets.parse_cost("max_cost_per_day", max_cost)
    if max_tokens is not None:
        tokens = (
            None if max_tokens == "none" else budgets.parse_tokens("max_tokens_per_day", max_tokens)
        )
    return store.day_caps.set_day_cap(
        scope, name, max_cost_usd=cost, max_tokens=tokens, actor=OPERATOR
    )


def cap_spending(store: Store, *, zone: tzinfo = UTC) -> list[CapSpending]:
    """Each day cap beside what its queue's or account's runs spent since the day began
    (in `zone`, `[budgets] day_zone`; by the store's clock), as they recorded it."""
    from corral.model import budgets  # noqa: PLC0415 - `usage --caps` only

    since = budgets.day_start(store.now(), zone)
    found = []
    for cap in store.day_caps.day_caps():
        today = [t for t in store.runs.usage_by(cap.scope, since=since) if t.key == cap.name]
        tokens = budgets.billed_tokens(
            {key: getattr(today[0], key) for key in budgets.BILLED_TOKENS} if today else None
        )
        cost = today[0].cost_usd if today else None
        found.append(budgets.CapSpending(cap=cap, since=since, cost_usd=cost, tokens=tokens))
    return found


def task_cap_spending(store: Store, *, limit: int = 1000) -> list[TaskSpending]:
    """Each task not yet finished (up to `limit`, oldest first) that has a budget, beside
    what all its runs spent, as they recorded it."""
    from corral.model import budgets  # noqa: PLC0415 - `usage --caps` only
    from corral.model.states import FINAL, TaskStatus  # noqa: PLC0415 - as budgets

    live = tuple(s for s in TaskStatus if s not in FINAL)
    found = []
    for task in store.tasks.list_tasks(TaskFilter(statuses=live, limit=limit)):
        try:
            budget = budgets.budget_of(task.payload)
        except InvalidInput:  # a hand-written payload: its runs refuse it, said there
            continue
        if not budget.capped:
            continue
        total = task_totals(store, task.id)
        tokens = budgets.billed_tokens(
            {key: getattr(total, key) for key in budgets.BILLED_TOKENS} if total else None
        )
        cost = total.cost_usd if total else None
        found.append(
            budgets.TaskSpending(
                task_id=task.id,
                title=task.title,
                status=str(task.status),
                budget=budget,
                cost_usd=cost,
                tokens=tokens,
            )
        )
    return found


def provider_states(store: Store, name: str | None = None) -> list[ProviderState]:
    """Every provider account (or `name`): its cap, pause, park and agents running."""
    if name is not None:
        check_provider(name)
    return store.providers.provider_states(name)


def set_provider(
    store: Store,
    name: str,
    *,
    max_running: int | Literal["keep"] | None = "keep",
    paused: bool | None = None,
    unpark: bool = False,
) -> ProviderState:
    """Cap, pause or resume provider account `name`; every host obeys from its next claim.
    Resuming (`paused=False`) ends a usage-limit park too (`unpark`)."""
    if max_running == "keep" and paused is None and not unpark:
        raise InvalidInput("provider", "at least one of --max-running, --pause, --resume")
    return store.providers.set_provider(
        name, max_running=max_running, paused=paused, unpark=unpark, actor=OPERATOR
    )
