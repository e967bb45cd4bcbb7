"""Attaching to a worker (corral.runtime.attach) step by step on both stores: its runs'
transcripts in the order the runs started, each whole before the next, a run with no
transcript named, and the end once the worker is gone."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import run_under

import corral
from corral import FakeClock, RunOutcome, Settings, Store
from corral.runtime.attach import Attachment, LocalOutput
from corral.store.location import runs_dir

NOT_OVER_HTTP = "it reads the transcript files in the store's runs folder"


def test_runs_show_whole_in_start_order_and_attach_ends_when_the_worker_is_gone(
    store: Store,
    clock: FakeClock,
    settings: Settings,
    add: Callable[..., Any],
    worker: Callable[..., Any],
) -> None:
    """Three runs at once: the first's bytes as they come, the second's only after the first
    ended (though it ended first); a run with no file is named; gone: the end."""
    w = worker("three", max_concurrent=3)
    folder = Path(runs_dir(store.url))
    folder.mkdir(parents=True, exist_ok=True)
    runs = []
    for title in ("first", "second", "silent"):
        claim = corral.claim(store, add(title).id, w.id, settings=settings)
        path = None if title == "silent" else str(folder / f"{title}.out")
        runs.append(store.runs.start_run(run_under(claim, transcript_path=path, stderr_path=None)))
        clock.advance(1.0)
    written: list[bytes] = []
    notes: list[str] = []
    attachment = Attachment(store, w.id, LocalOutput(store.url), write=written.append,
                            note=notes.append, clock=clock)  # fmt: skip
    attachment.begin()
    (folder / "first.out").write_bytes(b"1a\n")
    (folder / "second.out").write_bytes(b"2a\n2b\n")
    store.runs.finish_run(runs[1].id, outcome=RunOutcome.DONE, exit_code=0)

    assert not attachment.step()
    assert [b"1a\n"] == written
    with open(folder / "first.out", "ab") as more:
        more.write(b"1b\n")
    store.runs.finish_run(runs[0].id, outcome=RunOutcome.DONE, exit_code=0)
    store.runs.finish_run(runs[2].id, outcome=RunOutcome.FAILED, exit_code=1)
    for _ in range(4):
        assert not attachment.step()
    corral.deregister(store, w.id)
    assert attachment.step()

    assert b"1a\n1b\n2a\n2b\n" == b"".join(written)
    expected = [f"run {r.id} of task {r.task_id}" for r in runs]
    expected.insert(3, f"run {runs[2].id} left no transcript here")
    assert expected == notes
    assert all(os.path.exists(folder / f"{n}.out") for n in ("first", "second"))
