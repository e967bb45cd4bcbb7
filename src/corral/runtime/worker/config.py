"""What a runner is told (`RunnerConfig`), and what its parts are handed once its worker
is registered (`Workplace`): the slot loop, its exchanges and its job all work with the
same store, worker id, settings, clock and log, passed once instead of five times."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from corral.clock import Clock
from corral.settings import Settings
from corral.store import Store

if TYPE_CHECKING:
    from corral.runtime.worker.output_shipping import OutputShipper


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerConfig:
    """What a runner is and how it behaves; durations in seconds."""

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
    batch: int = 1  # most tasks a slot claims at once (1: one at a time); corral.model.batches
    batch_window_s: float = 0.1  # how long finished tasks of a batch may wait to be reported
    provider: str | None = None  # the provider account its agents spend (model/providers.py)


class Workplace(NamedTuple):  # cheaper to define at start-up than a dataclass: jobs.Opened
    """A registered runner as its parts see it: its store, worker id, settings, clock, log."""

    store: Store
    worker_id: str
    settings: Settings
    clock: Clock
    log: logging.Logger
    shipper: OutputShipper | None = None  # a remote store's: run output copied to the server
