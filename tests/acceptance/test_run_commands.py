"""The run commands (`runs`, `run show`, `logs`) and `defer`, through the CLI as a process.

Runs are started and finished through the Python API, as the worker runtime does; the
CLI only reads them. `logs --follow` runs as a background process while the test writes
to the transcript and then finishes the run.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CORRAL

from corral import NewRun, NewTask, NewWorker, RunOutcome, open_store
from corral.usecases import claims, tasks, workers

TRANSCRIPT = b'{"type": "start"}\n{"type": "text", "text": "caf\xc3\xa9"}\n'
STDERR = b"warning: something\n"


@dataclass(frozen=True)
class Scene:
    """A task held by a worker, with one unfinished run whose files exist."""

    db: str
    task_id: str
    worker_id: str
    token: int
    run_id: str
    transcript: Path
    stderr: Path


def start_run(db: str, folder: Path, *, name: str = "w1", files: bool = True) -> Scene:
    """Enqueue, register, claim and start a run, as a runner would; write its files (in
    `runs/` of `folder`, the store's own folder: `logs` reads no other)."""
    (folder / "runs").mkdir(exist_ok=True)
    transcript, stderr = folder / "runs" / f"{name}.jsonl", folder / "runs" / f"{name}.stderr"
    with open_store(db) as store:
        worker = workers.register(store, NewWorker(name=name)).worker.id
        task = tasks.enqueue(store, NewTask(title=f"task of {name}"))
        claim = claims.claim(store, task.id, worker)
        run = store.runs.start_run(
            NewRun(
                task_id=task.id,
                worker_id=worker,
                token=claim.token,
                attempt=1,
                prompt="Fix the bug\nand say so",
                command=("agent", "--print"),
                cwd=str(folder),
                transcript_path=str(transcript) if files else None,
                stderr_path=str(stderr) if files else None,
            )
        )
    if files:
        transcript.write_bytes(TRANSCRIPT)
        stderr.write_bytes(STDERR)
    return Scene(db, task.id, worker, claim.token, run.id, transcript, stderr)


def finish(db: str, run_id: str, **fields: Any) -> None:
    """Finish the run, done with exit code 0 unless told otherwise."""
    with open_store(db) as store:
        store.runs.finish_run(run_id, **{"outcome": RunOutcome.DONE, "exit_code": 0, **fields})


def runs_as_dicts(db: str, **filters: Any) -> list[dict[str, Any]]:
    """What the store says the runs are, in the JSON shape."""
    with open_store(db) as store:
        return [r.to_dict() for r in store.runs.list_runs(**filters)]


def wait_until(predicate: Callable[[], bool], timeout_s: float = 15.0) -> None:
    """Poll `predicate` (a subprocess is doing the work) until it holds or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(0.01)


@pytest.fixture
def scene(cli, tmp_path: Path) -> Scene:  # type: ignore[no-untyped-def]
    """One unfinished run in the `cli` fixture's store."""
    return start_run(cli.db, tmp_path)


def test_runs_lists_runs_newest_first_in_a_table(cli, scene: Scene, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`corral runs` prints one line per run, newest first, with outcome and exit code."""
    finish(cli.db, scene.run_id, exit_code=0)
    newer = start_run(cli.db, tmp_path, name="w2")
    result = cli("runs")
    lines = result.out.splitlines()
    assert 0 == result.code
    headers = ["RUN", "TASK", "WORKER", "STARTED", "DURATION", "OUTCOME", "EXIT", "COST"]
    assert headers == lines[0].split()
    rows = [line.split() for line in lines[1:]]
    assert [newer.run_id, scene.run_id] == [row[0] for row in rows]
    assert [
        (newer.task_id, newer.worker_id, "running", "-", "-"),
        (scene.task_id, scene.worker_id, "done", "0", "-"),  # no usage: no cost, not $0
    ] == [(row[1], row[2], row[6], row[7], row[8]) for row in rows]


def test_runs_json_is_the_array_of_runs(cli, scene: Scene, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`runs --json` prints every run in its JSON shape, newest first."""
    start_run(cli.db, tmp_path, name="w2")
    assert runs_as_dicts(cli.db) == json.loads(cli("runs", "--json").out)


def test_runs_narrows_by_task_worker_and_limit(cli, scene: Scene, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """--task, --worker and --limit keep only the matching, newest runs."""
    other = start_run(cli.db, tmp_path, name="w2")
    by_task = json.loads(cli("runs", "--task", scene.task_id, "--json").out)
    by_worker = json.loads(cli("runs", "--worker", other.worker_id, "--json").out)
    limited = json.loads(cli("runs", "--limit", "1", "--json").out)
    assert [scene.run_id] == [r["id"] for r in by_task]
    assert [other.run_id] == [r["id"] for r in by_worker]
    assert [other.run_id] == [r["id"] for r in limited]


def test_runs_with_no_runs_says_so(cli) -> None:  # type: ignore[no-untyped-def]
    """No runs prints `no runs`, and `[]` as JSON."""
    assert ("no runs\n", []) == (cli("runs").out, json.loads(cli("runs", "--json").out))


def test_run_show_json_is_the_run(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """`run show ID --json` prints the run's JSON shape, with every field."""
    finish(cli.db, scene.run_id, usage={"tokens": 12})
    shown = json.loads(cli("run", "show", scene.run_id, "--json").out)
    assert {**runs_as_dicts(cli.db)[0], "artifacts": [], "artifacts_dir": None} == shown
    assert ("done", 0, ["agent", "--print"], {"tokens": 12}) == (
        shown["outcome"],
        shown["exit_code"],
        shown["command"],
        shown["usage"],
    )


def test_run_show_prints_key_value_lines_with_the_prompt_last(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """The human form has one `key: value` line per set field; a running run says so."""
    lines = cli("run", "show", scene.run_id).out.splitlines()
    fields = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in lines[:-1]}
    assert (scene.run_id, "running", '["agent", "--print"]') == (
        fields["id"],
        fields["outcome"],
        fields["command"],
    )
    assert "finished_at" not in fields
    assert lines[-2].startswith("prompt:")
    assert ("and say so", True) == (lines[-1].strip(), lines[-1].startswith(" "))  # indented


@pytest.mark.parametrize("command", [("run", "show"), ("logs",)])
def test_an_unknown_run_exits_2_with_one_line(cli, command: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    """`run show` and `logs` of an id that names no run exit 2 and say so in one line."""
    result = cli(*command, "r-nope")
    assert (2, "", ["corral: error: run 'r-nope' not found"]) == (
        result.code,
        result.out,
        result.err.splitlines(),
    )


def _logs(db: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`corral logs ARGS` with its output as bytes, exactly as written."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return subprocess.run(
        [CORRAL, "logs", *args],
        env={**env, "CORRAL_DB": db},
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_logs_prints_the_transcript_or_the_stderr_byte_for_byte(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """`logs ID` copies the transcript as it is; `--stderr` the stderr file."""
    transcript = _logs(cli.db, scene.run_id)
    assert (0, TRANSCRIPT) == (transcript.returncode, transcript.stdout)
    stderr = _logs(cli.db, scene.run_id, "--stderr")
    assert (0, STDERR) == (stderr.returncode, stderr.stdout)


def test_logs_of_a_run_without_that_file_exits_1(cli, scene: Scene, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A run that recorded no file, or whose file is gone, is refused in one line."""
    bare = start_run(cli.db, tmp_path, name="bare", files=False)
    scene.stderr.unlink()
    for args, expected in (
        ((bare.run_id,), f"run {bare.run_id} recorded no transcript file"),
        ((scene.run_id, "--stderr"), f"{scene.stderr} does not exist"),
    ):
        result = cli("logs", *args)
        assert (1, 1) == (result.code, len(result.err.splitlines()))
        assert expected in result.err


def test_logs_follow_prints_new_output_until_the_run_finishes(
    cli, scene: Scene, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    """`logs --follow` keeps printing what is appended and exits 0 once the run has finished."""
    out_path = tmp_path / "followed.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    with out_path.open("wb") as out:
        follower = subprocess.Popen(
            [CORRAL, "logs", scene.run_id, "--follow"],
            env={**env, "CORRAL_DB": cli.db},
            stdout=out,
            stderr=subprocess.PIPE,
        )
    try:
        wait_until(lambda: out_path.read_bytes() == TRANSCRIPT)
        assert follower.poll() is None  # the run has not finished: still following
        more = b'{"type": "text", "text": "more"}\n'
        with scene.transcript.open("ab") as transcript:
            transcript.write(more)
        wait_until(lambda: out_path.read_bytes() == TRANSCRIPT + more)
        last = b'{"type": "result"}\n'
        with scene.transcript.open("ab") as transcript:
            transcript.write(last)
        finish(cli.db, scene.run_id)
        assert 0 == follower.wait(timeout=30)
    finally:
        if follower.poll() is None:
            follower.kill()
            follower.wait()
        assert follower.stderr is not None
        follower.stderr.close()
    assert TRANSCRIPT + more + last == out_path.read_bytes()


def test_logs_follow_of_a_finished_run_prints_it_and_exits(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """Following a run that already finished prints the whole file and exits 0 at once."""
    finish(cli.db, scene.run_id)
    followed = _logs(cli.db, scene.run_id, "--follow")
    assert (0, TRANSCRIPT) == (followed.returncode, followed.stdout)


def _task(cli, task_id: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """The task as `show` prints it, without what it adds: totals over its runs, children,
    where its work is."""
    shown: dict[str, Any] = json.loads(cli("show", task_id, "--json").out)
    shown.pop("totals")
    assert None is shown.pop("work")
    assert [] == shown.pop("children")
    return shown


def test_defer_returns_the_task_to_ready_without_counting_the_attempt(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """`defer ID --until 2h` with the holder's token makes the task ready later, attempts 0."""
    result = cli(
        "defer",
        scene.task_id,
        "--until",
        "2h",
        "--reason",
        "usage limit",
        "--json",
        env={"CORRAL_CLAIM_TOKEN": str(scene.token)},
    )
    task = json.loads(result.out)
    assert (0, "ready", 0, None) == (result.code, task["status"], task["attempts"], task["token"])
    assert task == _task(cli, scene.task_id)
    events = json.loads(cli("events", "--task", scene.task_id, "--json").out)
    assert ("task.deferred", "usage limit", {"run_after": task["run_after"]}) == (
        events[-1]["name"],
        events[-1]["reason"],
        events[-1]["data"],
    )


def test_defer_until_an_iso_time_prints_it(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """An ISO 8601 --until is the exact time the task becomes claimable again."""
    result = cli(
        "defer", scene.task_id, "--until", "2030-01-31T09:00:00Z", "--token", str(scene.token)
    )
    assert (0, f"{scene.task_id} deferred until 2030-01-31T09:00:00+00:00\n") == (
        result.code,
        result.out,
    )


def test_defer_with_a_stale_token_exits_1_and_changes_nothing(cli, scene: Scene) -> None:  # type: ignore[no-untyped-def]
    """A token from an earlier claim is refused in one line, and the task stays running."""
    before = _task(cli, scene.task_id)
    result = cli("defer", scene.task_id, "--until", "10m", "--token", str(scene.token + 100))
    assert (1, "") == (result.code, result.out)
    stale = f"token {scene.token + 100} is stale: task {scene.task_id} is now held under token"
    assert [f"corral: error: {stale} {scene.token}"] == result.err.splitlines()
    assert before == _task(cli, scene.task_id)


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--until", "soon"), "until"),
        (("--until", "-5m"), "until"),
        ((), "--until"),
        (("--until", "1h", "--token", "abc"), "token"),
    ],
)
def test_defer_refuses_bad_input_in_one_line(
    cli, scene: Scene, args: tuple[str, ...], names: str
) -> None:  # type: ignore[no-untyped-def]
    """A bad --until or token, or none, exits 2 with one line naming it, and changes nothing.

    A usage error (no --until, or no value for it) prints `defer`'s usage before that line.
    """
    before = _task(cli, scene.task_id)
    result = cli("defer", scene.task_id, *args)
    *usage, line = result.err.splitlines()
    assert 2 == result.code
    assert line.startswith("corral: error: ") and names in line
    assert not usage or usage[0].startswith("usage: corral defer ")
    assert before == _task(cli, scene.task_id)


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (("runs", "--limit", "0"), None),
        (("runs", "--limit", "x"), None),
        (("run",), "usage: corral run "),
        (("logs",), "usage: corral logs "),
    ],
)
def test_run_commands_refuse_bad_input_in_one_line(cli, args: tuple[str, ...], usage) -> None:  # type: ignore[no-untyped-def]
    """A bad --limit exits 2 with one line; a missing subcommand or id, with its usage first."""
    result = cli(*args)
    *before, line = result.err.splitlines()
    assert 2 == result.code
    assert line.startswith("corral: error: ")
    assert (usage is None) == (not before)
    assert usage is None or before[0].startswith(usage)
