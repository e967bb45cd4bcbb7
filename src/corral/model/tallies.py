"""Tallies of the event log: what /metrics counts, summed over the log as it settles.

The counters and histograms of `GET /metrics` are sums over the append-only event log (and
the claims and runs its events name), read a stretch at a time from a follower's cursor
(store/tallies.py). Because they are functions of the log alone, every process reading
one store arrives at the same figures, and one that restarts finds them again: nothing is
counted in memory that the log does not hold. `Tallies` is the running sum; the store hands
it `TallyRow`s, one per (event name, queue, kind, bucket).

Buckets are for agents, whose tasks wait and run for seconds to hours (celery-exporter's
and Hatchet's conventions, in seconds): a claim's queue wait is from the moment its task
became claimable (its `run_after`: created, unblocked, retried after its backoff, released,
reopened) to the claim; a run's duration from its start to its end, however it ended.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from corral.foundation.records import record

WAIT_BOUNDS_S = (
    0.1,
    0.5,
    1.0,
    5.0,
    15.0,
    30.0,
    60.0,
    300.0,
    900.0,
    1800.0,
    3600.0,
    7200.0,
    14400.0,
)
RUN_BOUNDS_S = (
    1.0,
    5.0,
    15.0,
    30.0,
    60.0,
    120.0,
    300.0,
    600.0,
    1200.0,
    1800.0,
    3600.0,
    7200.0,
    14400.0,
)

COMPLETED, FAILED = "task.completed", "task.failed"
CLAIMED, RUN_FINISHED = "task.claimed", "run.finished"
# The events a reconciler's repair writes (store/recovery.py), one per repair: the `kind`
# label of corral_reconcile_repairs_total. Its consequences (task.failed, run.finished)
# are counted where they belong, not again as repairs.
REPAIRS = (
    "worker.stale",
    "worker.dead",
    "task.lease_expired",
    "task.crashed",
    "task.orphan_recovered",
    "claim.closed",
    "worker.status_fixed",
)

QueueKind = tuple[str, str]


@record(frozen=True, slots=True, kw_only=True)
class TallyRow:
    """`n` events named `name` of tasks of `queue` and `kind` ('' for none); for a measured
    event (a claim's wait, a run's duration), its bucket (the number of bounds below its
    seconds; None when it could not be measured) and the `n` summed, in whole microseconds:
    integers, so that sums read in any stretches add up to the same total everywhere."""

    name: str
    queue: str
    kind: str
    bucket: int | None
    n: int
    micros: int


@dataclass(slots=True)
class Histogram:
    """Observations counted per bucket (not cumulative; the last past every bound), their
    sum and their count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    sum_us: int = 0

    def __post_init__(self) -> None:
        self.counts = self.counts or [0] * (len(self.bounds) + 1)

    @property
    def sum_s(self) -> float:
        """The observations' sum in seconds."""
        return self.sum_us / 1_000_000

    def add(self, bucket: int, n: int, micros: int) -> None:
        """`n` observations in `bucket`, `micros` microseconds in all."""
        self.counts[bucket] += n
        self.sum_us += micros

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations at or below it) for each bound, then +Inf."""
        total, out = 0, []
        for bound, n in zip((*self.bounds, float("inf")), self.counts, strict=True):
            total += n
            out.append((bound, total))
        return out


@dataclass(slots=True)
class Tallies:
    """The running sums: completions and final failures by (queue, kind), repairs by the
    event that records them, queue waits and run durations by (queue, kind)."""

    completed: dict[QueueKind, int] = field(default_factory=lambda: defaultdict(int))
    failed: dict[QueueKind, int] = field(default_factory=lambda: defaultdict(int))
    repairs: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REPAIRS, 0))
    waits: dict[QueueKind, Histogram] = field(default_factory=dict)
    runs: dict[QueueKind, Histogram] = field(default_factory=dict)

    def add(self, rows: list[TallyRow]) -> None:
        """Add what a stretch of the log counted."""
        for row in rows:
            self._add(row)

    def _add(self, row: TallyRow) -> None:
        where = (row.queue, row.kind)
        if row.name == COMPLETED:
            self.completed[where] += row.n
        elif row.name == FAILED:
            self.failed[where] += row.n
        elif row.name in self.repairs:
            self.repairs[row.name] += row.n
        elif row.bucket is not None:  # a claim made before its wait was recorded: none
            found = self.waits if row.name == CLAIMED else self.runs
            bounds = WAIT_BOUNDS_S if row.name == CLAIMED else RUN_BOUNDS_S
            found.setdefault(where, Histogram(bounds)).add(row.bucket, row.n, row.micros)
