"""Conformance: a run's artifacts are recorded once and read back, on every store and over
HTTP (where only the records travel)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import run_under

import corral
from corral import RunOutcome, Settings, Store, Task, Worker
from corral.model.artifacts import Artifact


def test_artifacts_recorded_on_a_finished_run_read_back_by_path(
    store: Store, settings: Settings, add: Callable[..., Task], worker: Callable[..., Worker]
) -> None:
    """Recorded after the run finished; a second record of a path leaves the first."""
    claim = corral.claim(store, add().id, worker().id, settings=settings)
    run = store.runs.start_run(run_under(claim, transcript_path="/r/x.jsonl", stderr_path=None))
    store.runs.finish_run(run.id, outcome=RunOutcome.FAILED, exit_code=1)
    kept = [
        Artifact(path="out/b.txt", size_bytes=3, sha256="ab" * 32),
        Artifact(path="out/a\x1b.bin", size_bytes=9, skipped="past the 1 MB cap"),
    ]
    store.artifacts.record_artifacts(run.id, kept)
    store.artifacts.record_artifacts(
        run.id, [Artifact(path="out/b.txt", size_bytes=1, sha256="cd" * 32)]
    )
    assert sorted(kept, key=lambda a: a.path) == store.artifacts.run_artifacts(run.id)
