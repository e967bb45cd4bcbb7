"""What a runner is told (`RunnerConfig`), and what its parts are handed once its worker
is registered (`Workplace`): the lanes, their exchanges and its job all work with the
same store, worker id, settings, clock and log, passed once instead of five times.

A runner's config is not declared apart from its worker's options: `runner_config` takes
every value it has a field for from the `WorkerSpec` (the one record `worker start`'s
flags, `[pool]` keys and `run_worker`'s keywords make: corral.foundation.worker_options), by name.
Only what preflight resolves (`RESOLVED`) and the runner's pacing, which no option sets
(`PACING`: tests make it brisk), come from elsewhere.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, NamedTuple

from corral.foundation.clock import Clock
from corral.foundation.policies import WorkerSpec
from corral.foundation.settings import Settings
from corral.store import Store

if TYPE_CHECKING:
    from corral.runtime.worker.output_shipping import OutputShipper


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerConfig:
    """What a runner is and how it behaves; durations in seconds. Each field but RESOLVED
    and PACING is the WorkerSpec's of that name (`runner_config`), its default the table's
    (corral.foundation.worker_options; a test holds them), so a runner made by hand agrees."""

    name: str
    kinds: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    version: str = ""  # recorded on the worker; empty: corral's own version
    concurrency: int = 1
    max_tasks: int | None = None
    once: bool = False
    lease_s: float | None = None
    shutdown_timeout_s: float = 300.0
    idle_min_s: float = 0.05
    idle_max_s: float = 2.0
    batch: int = 1  # most tasks a lane claims at once (1: one at a time); corral.model.exchange
    batch_window_s: float = 0.1  # how long finished tasks of a batch may wait to be reported
    provider: str | None = None  # the provider account its agents spend (model/providers.py)
    memory_mb: int | None = None  # its agent's run's peak memory: no claim below it (admission)


# The labels parsed, the agent's account and its memory found.
RESOLVED = frozenset({"labels", "provider", "memory_mb"})
PACING = frozenset({"idle_min_s", "idle_max_s", "batch_window_s"})


def runner_config(
    spec: WorkerSpec,
    *,
    labels: dict[str, str],
    provider: str | None,
    memory_mb: int | None = None,
) -> RunnerConfig:
    """What a runner of `spec` is told: each field the spec's own value of that name (its
    options' or its own), `labels`, `provider` and `memory_mb` as preflight resolved them."""
    options = {f.name for f in fields(spec.options)}
    told: dict[str, Any] = {
        f.name: getattr(spec.options if f.name in options else spec, f.name)
        for f in fields(RunnerConfig)
        if f.name not in RESOLVED | PACING
    }
    return RunnerConfig(**told, labels=labels, provider=provider, memory_mb=memory_mb)


class Workplace(NamedTuple):  # cheaper to define at start-up than a dataclass: jobs.Opened
    """A registered runner as its parts see it: its store, worker id, settings, clock, log."""

    store: Store
    worker_id: str
    settings: Settings
    clock: Clock
    log: logging.Logger
    shipper: OutputShipper | None = None  # a remote store's: run output copied to the server
