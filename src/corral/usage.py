"""Use cases of agents' spending: usage and cost summed, and the provider accounts.

Usage is what each run's agent reported (model/usage.py); provider accounts are shared
by every host (model/providers.py). Both are read from the store: a total is the same
whichever process asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import timedelta
from typing import Literal

from corral.errors import InvalidInput, NotFound
from corral.model.actors import OPERATOR
from corral.model.providers import ProviderState, check_provider
from corral.model.usage import UsageTotal
from corral.settings import Settings
from corral.store import Store


def usage_totals(
    store: Store, *, by: str = "task", since_s: float | None = None, limit: int = 1000
) -> list[UsageTotal]:
    """The runs started in the last `since_s` seconds (None: all), summed by `by`."""
    since = None if since_s is None else store.now() - timedelta(seconds=since_s)
    totals = store.usage_by(by, since=since, limit=limit)
    return _titled(store, totals) if by == "task" else totals


def _titled(store: Store, totals: list[UsageTotal]) -> list[UsageTotal]:
    """`totals` by task, each with its task's title (None for a task deleted since)."""
    titled = []
    for total in totals:
        try:
            title: str | None = store.get_task(total.key).title
        except NotFound:
            title = None
        titled.append(replace(total, title=title))
    return titled


def task_totals(store: Store, task_id: str) -> UsageTotal | None:
    """Every run of task `task_id` summed (None: it has no run yet)."""
    found = store.usage_by("task", task_id=task_id, limit=1)
    return found[0] if found else None


# How an orchestrator hands its pool's workers the provider environment it resolved (a
# worker's own environment is filtered of secrets, so it could not resolve `${VAR}`).
PROVIDER_ENV_VARIABLE = "CORRAL_PROVIDER_ENV"


def apply_configured_providers(store: Store, settings: Settings) -> list[str]:
    """Write each `[providers.NAME]` cap of the config into the store (by `corral init` and
    `orchestrator start`, as queue limits are); the accounts written."""
    written = []
    for name, config in sorted(settings.providers.items()):
        store.set_provider(name, max_running=config.max_running, actor=OPERATOR)
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


def provider_states(store: Store, name: str | None = None) -> list[ProviderState]:
    """Every provider account (or `name`): its cap, pause, park and agents running."""
    if name is not None:
        check_provider(name)
    return store.provider_states(name)


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
    return store.set_provider(
        name, max_running=max_running, paused=paused, unpark=unpark, actor=OPERATOR
    )
