"""What one redraw of `corral status --watch` reads (runtime/pool/glance.py) and how it is laid
out for a terminal's size (cli/watch_layout.py)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from tests.conftest import run_under

import corral
from corral import NewTask, NewWorker, Settings, Store
from corral.cli.cells import width_of
from corral.cli.watch_layout import screen
from corral.foundation.durations import iso
from corral.runtime.pool.glance import LONG_TAIL_BYTES, TAIL_BYTES, Glance, glance, last_line


def test_last_line_reads_the_end_of_a_big_file_only(tmp_path: Path) -> None:
    """The last non-blank line comes back from a file far bigger than what is read."""
    path = tmp_path / "out"
    path.write_bytes(b"x" * (10 * TAIL_BYTES) + b"\nfirst\n  the last line \n\n   \n")
    assert "the last line" == last_line(str(path))


@pytest.mark.parametrize(
    ("content", "shown"),
    [
        (None, ""),  # not written yet
        (b"", ""),
        (b"\n\n", ""),
        (b"no newline at the end", "no newline at the end"),
        (b"bad \xff byte\n", "bad \ufffd byte"),
        (b"y" * (2 * TAIL_BYTES), "y" * 2 * TAIL_BYTES),  # longer than the tail: the long tail
        (b"z" * (20 * LONG_TAIL_BYTES), ""),  # longer than the long tail: a piece, not shown
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
        store.runs.start_run(run_under(claim, transcript_path=str(transcript), stderr_path=None))
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


def _claude_transcript(path: Path, text: str) -> None:
    """A claude stream-json transcript: init, the assistant's `text`, a Bash call, and the
    call's result, longer than the short tail."""

    def line(event: dict[str, object]) -> str:
        return json.dumps(event, separators=(",", ":")) + "\n"

    def say(*blocks: dict[str, object]) -> str:
        return line(
            {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}
        )

    output = {"type": "tool_result", "tool_use_id": "toolu_01", "content": "ok " * TAIL_BYTES}
    path.write_text(
        line({"type": "system", "subtype": "init", "session_id": "s-1"})
        + say({"type": "text", "text": text})
        + say(
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "Bash",
                "input": {"command": "make test"},
            }
        )
        + line({"type": "user", "message": {"role": "user", "content": [output]}})
    )


def test_an_agents_json_stream_is_shown_in_words_never_raw(tmp_path: Path) -> None:
    """The last event with words wins, even behind a tool result longer than the short
    tail; the assistant's text is shown when it is the last."""
    path = tmp_path / "run.jsonl"
    _claude_transcript(path, "Fixing the parser.")
    assert "Bash: make test" == last_line(str(path))
    with path.open("a") as handle:
        message = {"role": "assistant", "content": [{"type": "text", "text": "Tests pass."}]}
        handle.write(json.dumps({"type": "assistant", "message": message}) + "\n")
    assert "Tests pass." == last_line(str(path))


def test_the_screen_shows_held_providers_and_an_agents_words_cleaned(
    store: Store, settings: Settings, tmp_path: Path
) -> None:
    """A parked provider is listed with its reset and reason above the slots; an agent's
    hostile text is shown in words without its escape sequences, and no raw JSON."""
    found = _running(store, settings, tmp_path, ["agent task"])
    path = Path(found.running[0].transcript_path or "")
    _claude_transcript(path, "done")
    with path.open("a") as handle:
        text = "evil \x1b[2J\x1b]0;pwned\x07words"
        message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        handle.write(json.dumps({"type": "assistant", "message": message}) + "\n")
    until = store.now() + timedelta(hours=1)
    store.providers.park_provider("claude", until=until, reason="claude five_hour limit", actor="w")
    found = glance(store, settings=settings, running_limit=50, events_limit=50)
    lines = screen(found, width=200, height=40, interval_s=1.0, notice=None)
    at = lines.index("PROVIDERS HELD BACK")
    assert lines[at + 1].startswith(f"claude  parked until {iso(until)}: claude five_hour limit")
    line = next(x for x in lines if found.running[0].task_id in x)
    assert line.rstrip().endswith("evil words")
    assert not any('{"' in x or "\x1b" in x for x in lines)
