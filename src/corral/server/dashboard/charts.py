"""The overview's chart, drawn on the server as SVG: runs started, finished and failed
per minute over the last hour (a run starts with its claim: `task.claimed`; it finishes
with `task.completed` or fails with `task.failed`, retries included).

No script draws it, so it shows without JavaScript and under the CSP; its colours are
classes of the stylesheet (light and dark). Each minute is a group of three bars with a
<title> (the browser's tooltip, and what a screen reader reads).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from markupsafe import Markup, escape

from corral.store import Store

MINUTES = 60
SERIES = {"task.claimed": "started", "task.completed": "finished", "task.failed": "failed"}
WIDTH, HEIGHT, BAR = 1200, 160, 5


@dataclass(frozen=True, slots=True, kw_only=True)
class Minutes:
    """How many of each series happened in each of the last MINUTES minutes, oldest first."""

    start_at: datetime
    counts: list[Counter[str]]

    @property
    def totals(self) -> Counter[str]:
        """Each series' sum over the hour."""
        total: Counter[str] = Counter()
        for minute in self.counts:
            total.update(minute)
        return total


def runs_per_minute(store: Store) -> Minutes:
    """The last hour's events of each series, counted by minute (by the store)."""
    now = store.now().replace(second=0, microsecond=0) + timedelta(minutes=1)
    start_at = now - timedelta(minutes=MINUTES)
    counts: list[Counter[str]] = [Counter() for _ in range(MINUTES)]
    for name, minute, n in store.task_pages.events_per_minute(tuple(SERIES), start_at):
        if 0 <= minute < MINUTES:
            counts[minute][SERIES[name]] += n
    return Minutes(start_at=start_at, counts=counts)


def svg(minutes: Minutes) -> Markup:
    """The bar chart of `minutes`; every text in it escaped."""
    peak = max([1, *(max(m.values(), default=0) for m in minutes.counts)])
    step = WIDTH / MINUTES
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT + 16}" role="img" '
        'aria-labelledby="chart-title"><title id="chart-title">Runs started, finished and '
        "failed per minute over the last hour</title>",
        f'<line class="axis" x1="0" y1="{HEIGHT}" x2="{WIDTH}" y2="{HEIGHT}"/>',
    ]
    for i, minute in enumerate(minutes.counts):
        at = minutes.start_at + timedelta(minutes=i)
        tip = escape(f"{at:%H:%M}: " + ", ".join(f"{minute[s]} {s}" for s in SERIES.values()))
        parts.append(f"<g><title>{tip}</title>")
        for j, series in enumerate(SERIES.values()):
            height = HEIGHT * minute[series] / peak
            x = i * step + 1 + j * BAR
            parts.append(
                f'<rect class="{series}" x="{x:.1f}" y="{HEIGHT - height:.1f}" '
                f'width="{BAR}" height="{height:.1f}"/>'
            )
        parts.append("</g>")
    for i in range(0, MINUTES + 1, 15):
        at = minutes.start_at + timedelta(minutes=i)
        x = min(i * step, WIDTH - 30)
        parts.append(f'<text x="{x:.0f}" y="{HEIGHT + 12}">{at:%H:%M}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))  # noqa: S704 - built from numbers and escaped text
