"""What one redraw of `corral status --watch` reads (runtime/pool/glance.py) and how it is laid
out for a terminal's size (cli/watch_layout.py)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_under

import corral
from corral import NewTask, NewWorker, Settings, Store
from corral.cli.screen_text import width_of
from corral.cli.watch_layout import screen
from corral.runtime.pool.glance import TAIL_BYTES, Glance, glance, last_line


def test_last_line_reads_the_end_of_a_big_file_only(tmp_path: Path) -> None:
    """The last non-blank line comes back from a file far bigger than what is read."""
    path = tmp_path / "out"
    path.write_bytes(b"x" * (10 * TAIL_BYTES) + b"\nfirst\n  the last line \n\n   \n")
    assert "  the last line " == last_line(str(path))


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        (None, ""),  # not written yet
        (b"", ""),
        (b"\n\n", ""),
        (b"no newline at the end", "no newline at the end"),
        (b"bad \xff byte\n", "bad \ufffd byte"),
        (b"y" * (2 * TAIL_BYTES), "y" * TAIL_BYTES),  # a line longer than the tail: its end
    ],
)
def test_last_line_of_files_as_runs_leave_them(
    tmp_path: Path, content: bytes | None, shown: str
) -> None:
    """A missing, empty or blank file has no last line; bad UTF-8 is replaced, not fatal."""
    path = tmp_path / "out"
    if content is not None:
        path.write_bytes(content)
    assert shown == last_line(str(path))


def _running(store: Store, settings: Settings, tmp_path: Path, titles: list[str]) -> Glance:
    """`titles` claimed by one worker, each with a run whose transcript says `working on N`."""
    worker = corral.register(store, NewWorker(name="w", max_concurrent=len(titles))).worker
    for n, title in enumerate(titles):
        task = corral.enqueue(store, NewTask(title=title), settings=settings)
        claim = corral.claim(store, task.id, worker.id, settings=settings)
        transcript = tmp_path / f"{n}.out"
        transcript.write_text(f"starting\nworking on {n}\n")
        store.start_run(run_under(claim, transcript_path=str(transcript), stderr_path=None))
    return glance(store, settings=settings, running_limit=50, events_limit=50)


def test_glance_reads_running_tasks_with_their_last_output_and_counts(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """Each running task comes with its transcript's last line; tasks are counted."""
    found = _running(store, settings, tmp_path, ["one", "two"])
    assert ["working on 0", "working on 1"] == [found.last_output[r.task_id] for r in found.running]
    assert 2 == found.tasks["running"]
    assert ["default"] == [q.queue for q in found.queues]
    assert "run.started" == found.events[-1].name


def test_the_screen_shows_each_running_task_with_a_clean_title_and_its_output(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """A task's line has its id, worker, title without its escape sequences, and output."""
    found = _running(store, settings, tmp_path, ["evil \x1b[2J\x1b]0;pwned\x07title"])
    lines = screen(found, width=160, height=40, interval_s=1.0, notice=None)
    task = found.running[0]
    line = next(x for x in lines if task.task_id in x)
    assert task.worker_id in line
    assert "evil title" in line
    assert line.rstrip().endswith("working on 0")
    assert not any("\x1b" in x or "\x07" in x for x in lines)


@pytest.mark.parametrize(("width", "height"), [(20, 5), (60, 12), (200, 60), (1, 1), (80, 3)])
def test_the_screen_fits_any_size_and_never_wraps(
    store: Store, settings: Settings, tmp_path: Path, width: int, height: int
) -> None:
    """No line is wider than the terminal and there are no more lines than it has rows."""
    found = _running(store, settings, tmp_path, ["日本語のタイトル " * 20, "x" * 300, "short"])
    lines = screen(found, width=width, height=height, interval_s=0.2, notice="store away " * 30)
    assert len(lines) <= height
    assert all(width_of(line) <= width for line in lines)


def test_a_cut_section_says_how_much_is_left_out_and_the_others_keep_their_rows(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """Twelve running tasks on a short screen: some shown, `… N more` for the rest, and the
    queue and event sections still appear."""
    found = _running(store, settings, tmp_path, [f"task {n}" for n in range(12)])
    lines = screen(found, width=120, height=16, interval_s=1.0, notice=None)
    slots = lines[: next(n for n, line in enumerate(lines) if line.startswith("QUEUE"))]
    shown = sum(1 for line in slots if any(r.task_id in line for r in found.running))
    more = [line for line in lines if line.startswith("…")]
    assert [f"… {12 - shown} more"] == [line.strip() for line in more[:1]]
    assert any(line.startswith("QUEUE") for line in lines)
    assert any(line.startswith("EVENTS") for line in lines)


def test_a_store_outage_before_any_read_shows_the_notice_alone() -> None:
    """With no data yet, the screen is the head line and the notice."""
    lines = screen(None, width=80, height=10, interval_s=1.0, notice="store unavailable: gone")
    assert ["store unavailable: gone"] == lines[1:]


def test_the_screen_lists_the_tasks_waiting_for_a_person_with_their_reasons(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """A waiting task is counted, and shown under WAITING FOR A PERSON with why."""
    found = _running(store, settings, tmp_path, ["needs bash"])
    task_id, token = found.running[0].task_id, found.running[0].token
    corral.wait(store, task_id, reason="refused: Bash", token=token)
    found = glance(store, settings=settings, running_limit=50, events_limit=50)
    assert (1, [task_id]) == (found.tasks["waiting"], [t.id for t in found.waiting])
    lines = screen(found, width=160, height=40, interval_s=1.0, notice=None)
    assert "tasks:" in lines[2] and "waiting 1" in lines[2]
    below = lines[lines.index("WAITING FOR A PERSON") + 1]
    assert (True, True) == (task_id in below, "refused: Bash  needs bash" in below)
