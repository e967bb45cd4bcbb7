"""Every ```bash example of seed 000, README.md and docs/getting-started.md runs here.

Each block is read from its file (seed 000's from tests/acceptance/seed000_bash.md, a
verbatim copy of the seed's) and run by bash as a script, verbatim but for seed 000's
command name (`tx`, which is `corral` here), in a throwaway git repository with CORRAL_DB
naming a SQLite store in it. What an example leaves to its reader is supplied around it,
never written into it: programs on PATH for `my_work`, `my_llm_script` and `claude` (a
stand-in agent that does what the seed's prompts ask, `corral done` on the task named), the
`./my-agent.sh` that `worker start --exec` names. Loops that run forever are stopped once
every task is done, with SIGTERM to each loop (as a supervisor would; the seed's loops trap
it), or with `corral worker drain` where the guide does that.

Not run as scripts, and checked otherwise (NOT_SCRIPTS): seed 000's "CLI Commands", a list
of synopses (`tx claim <task-id> [--lease 30m]`: bash reads `<task-id>` as a redirection),
of which every command and flag is checked to exist; and the blocks that build the
environment these tests run in (`make setup`, `pip install -e .`, `make run`, `make test`),
of which the make targets are dry-run (`make run`'s job itself runs in test_demo.py).
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest
from tests.conftest import CORRAL

pytestmark = pytest.mark.timeout(300)  # a loop's few tasks take seconds, a minute on a busy machine

ROOT = Path(__file__).resolve().parents[2]
SEED = Path(__file__).with_name("seed000_bash.md")
SOURCES = {"seed 000": SEED, "README.md": ROOT / "README.md"}
SOURCES["getting-started"] = ROOT / "docs" / "getting-started.md"
VENV_BIN = str(Path(sys.executable).parent)
BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.S | re.M)
SEED_COMMAND = re.compile(r"(?<![\w./-])tx(?= )")  # `tx` the command, not `.tx/runs`
NOT_SCRIPTS = {
    ("seed 000", 0): "a list of synopses: each command and flag is checked to exist",
    ("README.md", 0): "builds the environment the tests run in: its make targets dry-run",
    ("getting-started", 0): "builds the environment the tests run in: make setup dry-runs",
    ("getting-started", 1): "pip install -e . needs the package index: not run",
}
RUN = (  # each block run below, with the heading it stands under
    ("seed 000", 1, "Bash: Minimal"),
    ("seed 000", 2, "Bash: Claude CLI with Capture"),
    ("seed 000", 3, "Bash: Parallel Workers"),
    ("README.md", 1, "A worker in ten lines of bash"),
    ("getting-started", 2, "The bash worker loop"),
    ("getting-started", 3, "A sturdier loop"),
    ("getting-started", 4, "Run a real worker"),
)


# Stands in for an agent: records the task it was given, then does what the seed's prompts
# ask ("... tx done $TASK"): completes it. Prints one line, as `claude --print` would.
AGENT = """#!/usr/bin/env bash
task=$(grep -o 't-[0-9a-z]*' <<<"${@: -1}" | head -n 1)
echo "$task" >> "$WORK_LOG"
corral done "$task" > /dev/null
echo '{"type": "result", "task": "'"$task"'"}'
"""
# README's `my_work` is the reader's code, which the loop's own `corral done` follows.
RECORDER = """#!/usr/bin/env bash
echo "$1" >> "$WORK_LOG"
"""
# `worker start --exec ./my-agent.sh`'s agent: the prompt on stdin, exit 0 completes.
MY_AGENT = """#!/usr/bin/env bash
grep '^Title:'
"""


def blocks(source: str) -> list[str]:
    """The ```bash blocks of `source`, in order, seed 000's with `corral` for `tx`."""
    found = BLOCK.findall(SOURCES[source].read_text())
    return [SEED_COMMAND.sub("corral", b) for b in found] if source == "seed 000" else found


def headings(source: str) -> list[str]:
    """The heading each ```bash block of `source` stands under, in order."""
    found, heading, fenced = [], "", False
    for line in SOURCES[source].read_text().splitlines():
        if line.startswith("```"):
            if line == "```bash":
                found.append(heading)
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            heading = line.lstrip("# ")
    return found


def wait_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.3) -> None:
    """Poll `predicate` until it holds; fail the test if it does not within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)


class Project:
    """A throwaway git repository with a store, stand-in programs on PATH, and the
    examples started in it (each in its own session, all killed at teardown)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.work_log = folder / "work.log"
        bin_dir = folder / "bin"
        bin_dir.mkdir()
        for name, text in (("claude", AGENT), ("my_llm_script", AGENT), ("my_work", RECORDER)):
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        self.env.update(
            PATH=os.pathsep.join([str(bin_dir), VENV_BIN, os.environ.get("PATH", "/bin")]),
            CORRAL_DB=str(folder / "corral.db"),
            WORK_LOG=str(self.work_log),
        )
        subprocess.run(["git", "init", "-q", str(folder)], check=True)
        self.procs: list[subprocess.Popen[bytes]] = []

    def corral(self, *args: str) -> str:
        """Run `corral ARGS` in the project; its stdout (fails on a non-zero exit)."""
        done = subprocess.run(
            ["corral", *args],
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.folder,
            timeout=60,
            check=False,
        )
        assert (0, "") == (done.returncode, done.stderr), args
        return done.stdout

    def add(self, count: int, *flags: str) -> dict[str, str]:
        """Add `count` tasks, "task 0" and on; their titles by id."""
        titles = [f"task {n}" for n in range(count)]
        return {self.corral("add", title, *flags).strip(): title for title in titles}

    def start(self, script: str, *args: str) -> subprocess.Popen[bytes]:
        """Run `script` with bash in the project, its output in example<N>.out and .err."""
        n = len(self.procs)
        path = self.folder / f"example{n}.sh"
        path.write_text(script)
        with (
            open(self.folder / f"example{n}.out", "wb") as out,
            open(self.folder / f"example{n}.err", "wb") as err,
        ):
            proc = subprocess.Popen(
                ["bash", str(path), *args],
                stdout=out,
                stderr=err,
                env=self.env,
                cwd=self.folder,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def output(self, proc: subprocess.Popen[bytes], stream: str) -> str:
        """What example `proc` wrote to `stream` ("out" or "err")."""
        return (self.folder / f"example{self.procs.index(proc)}.{stream}").read_text()

    def tasks(self) -> dict[str, tuple[str, int]]:
        """Each task's status and attempts."""
        listed = json.loads(self.corral("list", "--json"))
        return {t["id"]: (t["status"], t["attempts"]) for t in listed}

    def workers(self) -> list[dict[str, object]]:
        """Every worker registered, oldest first."""
        found: list[dict[str, object]] = json.loads(self.corral("worker", "list", "--json"))
        return found

    def worked(self) -> Counter[str]:
        """How many times the stand-in agent was given each task."""
        return Counter(self.work_log.read_text().split())

    def kill_all(self) -> None:
        """Kill every example's whole session (bash and whatever it runs)."""
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            if proc.poll() is None:
                proc.wait(timeout=10)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    """A throwaway project to run examples in."""
    made = Project(tmp_path)
    try:
        yield made
    finally:
        made.kill_all()


def _all_done(project: Project, ids: Iterable[str]) -> Callable[[], bool]:
    """Whether each of `ids` is done, at its first attempt."""
    return lambda: {t: ("done", 1) for t in ids} == project.tasks()


def _errors(text: str) -> list[str]:
    """The lines of `text` that are not the seed loops' known noise: claiming `null` (jq's
    answer for an empty queue) or a task another loop claimed first."""
    noise = ("corral: error: task 'null' not found", "corral: error: cannot claim task")
    return [line for line in text.splitlines() if not line.startswith(noise)]


def test_every_bash_block_is_run_or_checked() -> None:
    """Each ```bash block of the three sources has a test here: a new one fails this."""
    found = {(source, n) for source in SOURCES for n in range(len(blocks(source)))}
    ran = {(s, n) for s, n, _ in RUN}
    assert found == ran | set(NOT_SCRIPTS)
    assert set() == ran & set(NOT_SCRIPTS)
    assert [heading for _, _, heading in RUN] == [headings(s)[n] for s, n, _ in RUN]


@pytest.mark.skipif(not list(Path("/work/shared/seeds").glob("000_*.txt")), reason="no seed")
def test_the_seed_copy_is_the_seed_verbatim() -> None:
    """seed000_bash.md holds seed 000's bash blocks unchanged (where the seed is at hand)."""
    seed = next(Path("/work/shared/seeds").glob("000_*.txt")).read_text()
    assert BLOCK.findall(seed) == BLOCK.findall(SEED.read_text())


def test_seed_cli_commands_exist_with_their_flags() -> None:
    """Every command seed 000 lists (`tx claim <task-id> [--lease 30m]` ...) is corral's,
    and takes every flag the listing gives it."""
    listing = blocks("seed 000")[0]
    assert listing.startswith("# Orchestrator management\ncorral orchestrator start")
    for line in listing.splitlines():
        synopsis = line.split("#")[0].split()
        if not synopsis:
            continue
        words = list(itertools.takewhile(lambda w: not w.startswith(("[", "<")), synopsis))
        flags = [w.strip("[]") for w in synopsis if w.startswith("[--")]
        shown = subprocess.run(
            [CORRAL, *words[1:], "--help"], check=False, capture_output=True, text=True, timeout=60
        )
        assert (0, []) == (shown.returncode, [f for f in flags if f not in shown.stdout]), line


def test_the_build_blocks_name_make_targets_that_exist() -> None:
    """`make run`, `make test` (README) and `make setup` (getting started) dry-run cleanly."""
    targets = re.findall(
        r"^make (\w+)", blocks("README.md")[0] + blocks("getting-started")[0], re.M
    )
    assert ["run", "test", "setup"] == targets
    dry = subprocess.run(
        ["make", "--dry-run", *targets],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (0, "") == (dry.returncode, dry.stderr)
    assert "examples/demo.py" in dry.stdout  # what `make run` runs: tests/acceptance/test_demo.py


def _stop_loop(project: Project, proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM a loop's bash, as a supervisor would; its exit code."""
    proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout=60)


def _run_one_seed_loop(project: Project, n: int) -> subprocess.Popen[bytes]:
    """Seed 000's loop `n` works 4 tasks to done, each once, and on SIGTERM deregisters
    and exits 0; the loop, for what it left."""
    ids = project.add(4)
    loop = project.start(blocks("seed 000")[n])
    wait_until(_all_done(project, ids), timeout_s=150)
    assert 0 == _stop_loop(project, loop)
    assert dict.fromkeys(ids, 1) == dict(project.worked())
    assert [("offline", 0)] == [(w["status"], w["active"]) for w in project.workers()]
    assert [] == _errors(project.output(loop, "err"))
    return loop


@pytest.mark.slow
def test_seed_minimal_loop_works_every_task_once(project: Project) -> None:
    """Seed 000's "Bash: Minimal", `my_llm_script` an agent that runs `done`: every task done."""
    assert "my_llm_script" in blocks("seed 000")[1]
    _run_one_seed_loop(project, 1)


@pytest.mark.slow
def test_seed_capture_loop_keeps_each_runs_transcript(project: Project) -> None:
    """Seed 000's "Claude CLI with Capture": every task done, each run's transcript in
    .tx/runs/run-*.jsonl, naming its task, and an empty .stderr beside it."""
    assert "stream-json" in blocks("seed 000")[2]
    _run_one_seed_loop(project, 2)
    runs = project.folder / ".tx" / "runs"
    transcripts = [json.loads(p.read_text())["task"] for p in runs.glob("run-*.jsonl")]
    assert sorted(project.worked()) == sorted(transcripts)
    assert [""] * 4 == [p.read_text() for p in runs.glob("run-*.stderr")]


@pytest.mark.slow
def test_seed_parallel_workers_register_three_workers_that_share_the_queue(
    project: Project,
) -> None:
    """Seed 000's "Parallel Workers": its three `( ... ) &` loops register three workers,
    one per subshell, and work every task once; each stops on SIGTERM and the script ends."""
    ids = project.add(6)
    script = project.start(blocks("seed 000")[3])
    wait_until(_all_done(project, ids), timeout_s=240)
    workers = project.workers()
    names = {w["name"] for w in workers}
    pids = {w["pid"] for w in workers}
    assert ({"worker-1", "worker-2", "worker-3"}, 3) == (names, len(pids))
    assert script.pid not in pids  # each is its own subshell, not the script
    for pid in pids:
        assert isinstance(pid, int)
        os.kill(pid, signal.SIGTERM)
    assert 0 == script.wait(timeout=60)
    assert dict.fromkeys(ids, 1) == dict(project.worked())
    assert ["offline"] * 3 == [w["status"] for w in project.workers()]
    assert [] == _errors(project.output(script, "err"))


def test_readme_loop_works_every_task_once(project: Project) -> None:
    """README's ten-line loop, `my_work` the reader's code: every task done once, and on
    SIGTERM its worker goes offline and the loop exits 0."""
    ids = project.add(3)
    loop = project.start(blocks("README.md")[1])
    wait_until(_all_done(project, ids), timeout_s=150)
    assert 0 == _stop_loop(project, loop)
    assert dict.fromkeys(ids, 1) == dict(project.worked())
    assert ["offline"] == [w["status"] for w in project.workers()]
    assert "" == project.output(loop, "err")


@pytest.mark.slow
def test_getting_started_loop_prints_what_it_works_on(project: Project) -> None:
    """The guide's worker.sh works both tasks, printing each title as the guide shows, and
    deregisters on SIGTERM."""
    ids = project.add(2)
    loop = project.start(blocks("getting-started")[2])
    wait_until(_all_done(project, ids), timeout_s=150)
    assert 0 == _stop_loop(project, loop)
    worked = {line for line in project.output(loop, "out").splitlines() if "working" in line}
    assert {f"working on {t}: {title}" for t, title in ids.items()} == worked
    assert ["offline"] == [w["status"] for w in project.workers()]


@pytest.mark.slow
def test_getting_started_sturdy_loop_finishes_its_task_when_drained(project: Project) -> None:
    """The guide's sturdier worker.sh, drained while it works on its second task, finishes
    it and leaves: both done, and it prints what the guide shows, then exits 0."""
    ids = list(project.add(2))
    loop = project.start(blocks("getting-started")[3], "sturdy")
    wait_until(lambda: ["done", "running"] == sorted(s for s, _ in project.tasks().values()), 150)
    (worker,) = project.workers()
    assert ("sturdy", loop.pid) == (worker["name"], worker["pid"])
    project.corral("worker", "drain", str(worker["id"]))
    assert 0 == loop.wait(timeout=60)
    assert {t: ("done", 1) for t in ids} == project.tasks()
    out = "".join(f"{line}\n" for line in [*(f"{t} done" for t in ids), f"{worker['id']} offline"])
    assert out == project.output(loop, "out")
    refused = f"corral: error: worker {worker['id']} is draining: it takes no claims\n"
    assert refused == project.output(loop, "err")


def test_getting_started_worker_start_runs_my_agent(project: Project) -> None:
    """The guide's `corral worker start ... --exec ./my-agent.sh` completes a code task with
    the agent, and on SIGTERM (to the runner) deregisters and exits 0."""
    agent = project.folder / "my-agent.sh"
    agent.write_text(MY_AGENT)
    agent.chmod(0o755)
    (task,) = project.add(1, "--kind", "code")
    script = project.start(blocks("getting-started")[4])
    wait_until(lambda: {task: ("done", 1)} == project.tasks(), timeout_s=150)
    (worker,) = project.workers()
    assert isinstance(worker["pid"], int)
    os.kill(worker["pid"], signal.SIGTERM)
    assert 0 == script.wait(timeout=60)
    assert ("coder", "offline") == (worker["name"], project.workers()[0]["status"])
    (run,) = json.loads(project.corral("runs", "--json"))
    assert "Title: task 0\n" == project.corral("logs", run["id"])
