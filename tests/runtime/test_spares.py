"""Output files made ahead of time (corral.runtime.worker.spares)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import os
from pathlib import Path

from tests.runtime.conftest import wait_until

from corral.runtime.worker.spares import Spares


def spare_files(folder: Path) -> list[str]:
    """The spare files in `folder`, by name."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".spare-"))


def test_a_ready_pair_is_renamed_into_place_and_another_made(tmp_path: Path) -> None:
    """take() moves the spare pair to the run's names; the thread makes the next pair."""
    spares = Spares(str(tmp_path))
    try:
        wait_until(lambda: len(spare_files(tmp_path)) == 2, 5)
        out, err = tmp_path / "r-1.jsonl", tmp_path / "r-1.stderr"
        assert spares.take(str(out), str(err))
        assert (0, 0) == (out.stat().st_size, err.stat().st_size)
        spares.refill()
        wait_until(lambda: len(spare_files(tmp_path)) == 2, 5)
    finally:
        spares.close()
    assert [] == spare_files(tmp_path)  # close removes the pair left


def test_a_pair_that_cannot_be_moved_leaves_the_run_to_open_its_own(tmp_path: Path) -> None:
    """If the folder went away, take() says so (the run then creates its files itself)."""
    folder = tmp_path / "runs"
    spares = Spares(str(folder))
    try:
        wait_until(lambda: len(spare_files(folder)) == 2, 5)
        folder.rename(tmp_path / "moved")
        assert not spares.take(str(folder / "r.jsonl"), str(folder / "r.stderr"))
    finally:
        spares.close()


def test_spares_of_a_runner_that_died_are_removed_at_start(tmp_path: Path) -> None:
    """A pair named for a pid that no longer runs is removed by the next runner."""
    dead = tmp_path / ".spare-999999999-1.jsonl"
    mine = tmp_path / f".spare-{os.getppid()}-1.jsonl"  # a live process: left alone
    dead.touch()
    mine.touch()
    Spares(str(tmp_path)).close()
    assert (False, True) == (dead.exists(), mine.exists())
