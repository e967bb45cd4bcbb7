"""`make run`: a pool of three sample agents works a throwaway git repository, each task in
its own worktree, and their work lands on its main while you watch.

The repository is made fresh in `.corral/demo/repo` (a few files on `main`), with `corral
init` (which keeps `.corral/` out of git). Eighteen tasks are added: ten that each write
their own file, a flaky one that fails its first attempt, three that require review (the
demo plays the reviewer: it asks for changes once, then approves and merges), a slow one
whose worker the demo kills with SIGKILL mid-task (the orchestrator returns the task to the
queue and restarts the worker), two that set the same line of `settings.ini` from the
same base, so that whichever lands second conflicts, is told so, merges main in and lands
on its next run, and one whose agent is unsure and changes nothing: the task waits for a
person, the demo answers it (`corral answer`), and its next run writes the answer.

The sample agent (examples/agent.sh) behaves as the real agent CLIs do about git: it
commits only when its prompt asks it to (half the tasks say `Commit: yes`), so corral
commits what the others leave (`[worktree] commit = auto`) before landing it.

    corral orchestrator start --workers 3 --agent generic --exec examples/agent.sh --worktree

runs in the foreground, one line per task started and finished (`--agent generic`: corral
reads the usage each run reports on its last line, and `corral usage` sums it). When
every task is done, the orchestrator is stopped gracefully, and `git log --oneline
--graph` of main and `corral branches` show the landed work and nothing stranded. Exit
status 0 when all of that holds.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import corral

HERE = Path(__file__).resolve().parent
DEMO_DIR = Path(os.environ.get("DEMO_DIR") or HERE.parent / ".corral" / "demo")
REPO = DEMO_DIR / "repo"
AGENT = HERE / "agent.sh"
DEADLINE_S = 120
KILL_AFTER_S = 1.0  # how long the slow task runs before its worker is killed
# Short intervals, so that restarts and retries show within the minute.
CONFIG = """\
[heartbeat]
interval = "1s"

[reconcile]
interval = "5s"

[retry]
base = "1s"
jitter = 0

[process]
restart_delay = "1s"
min_uptime = "5s"
"""
NOTES = ("auth", "billing", "search", "logging", "metrics", "queue", "ui", "i18n", "backup")
GIT_IDENTITY = ("-c", "user.name=corral demo", "-c", "user.email=demo@corral.invalid")


def git(*args: str) -> str:
    """Run git in the demo repository; its output."""
    done = subprocess.run(
        ["git", *GIT_IDENTITY, *args], cwd=REPO, capture_output=True, text=True, check=True
    )
    return done.stdout


def make_repository() -> None:
    """A fresh repository on main: a README, settings.ini, a notes folder."""
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    (REPO / "notes").mkdir(parents=True)
    (REPO / "README.md").write_text("# demo\n\nA throwaway repository for `make run`.\n")
    (REPO / "settings.ini").write_text("[ui]\ncolor = red\n")
    (REPO / "notes" / "index.md").write_text("# Notes\n")
    git("init", "--quiet", "--initial-branch", "main")
    git("config", "user.name", "corral demo")  # the agents commit as this
    git("config", "user.email", "demo@corral.invalid")
    git("add", "-A")
    git("commit", "--quiet", "-m", "Initial commit")


def describe(**fields: str | int) -> str:
    """A task description the sample agent reads (`File: ...`, `Line: ...`)."""
    return "\n".join(f"{key}: {value}" for key, value in fields.items())


def enqueue(store: corral.Store, settings: corral.Settings) -> dict[str, str]:
    """The eighteen tasks; their ids by role (conflict, flaky, slow, review, unsure)."""

    def add(title: str, desc: str, **fields: object) -> str:
        spec = corral.NewTask(title=title, description=desc, **fields)  # type: ignore[arg-type]
        return corral.enqueue(store, spec, settings=settings).id

    roles = {}
    for color in ("blue", "green"):  # the same line, from the same base: one lands second
        roles[f"conflict-{color}"] = add(
            f"Make the theme {color}",
            describe(File="settings.ini", Replace="color =", Line=f"color = {color}", Steps=5),
            priority=9,
        )
    roles["slow"] = add(
        "Refactor the parser",
        describe(File="notes/parser.md", Line="The parser is now a table.", Steps=6),
        priority=8,
    )
    roles["flaky"] = add(
        "Speed up the cache (flaky)",
        describe(File="notes/cache.md", Line="The cache keeps 1,000 entries."),
    )
    for n, (title, file) in enumerate(
        (
            ("Rewrite the README intro", "README.md"),
            ("Add a changelog", "CHANGELOG.md"),
            ("Document the API", "notes/api.md"),
        )
    ):
        roles[f"review-{n}"] = add(
            title, describe(File=file, Line=f"{title}: written by an agent."), requires_review=True
        )
    for topic in (*NOTES, "deploy"):
        asked = {"Commit": "yes"} if len(topic) % 2 else {}  # some prompts ask for a commit
        add(
            f"Write notes on {topic}",
            describe(File=f"notes/{topic}.md", Line=f"# {topic.title()}", **asked),
        )
    roles["unsure"] = add(
        "Proofread the README",
        describe(File="README.md", Line="(proofread)", Unsure="yes"),
    )
    return roles


def cli(*args: str, shown: bool = True) -> subprocess.CompletedProcess[str]:
    """Run a corral command in the repository, echoed the way a person would type it."""
    done = subprocess.run(
        [sys.executable, "-m", "corral.cli.main", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if shown:
        print(f"  demo $ corral {' '.join(args)}", flush=True)
        for line in (done.stdout + done.stderr).splitlines():
            print(f"         {line}", flush=True)
    return done


class Reviewer:
    """Plays the person who watches: reviews what arrives, kills one worker mid-task."""

    def __init__(self, store: corral.Store, roles: dict[str, str]) -> None:
        self.store, self.roles = store, roles
        self.asked: set[str] = set()
        self.killed = False

    def step(self) -> None:
        """One look at the store: answer what waits for a person, review what waits for
        review, kill the slow task's worker once."""
        asking = corral.TaskFilter(statuses=(corral.TaskStatus.WAITING,))
        for task in self.store.tasks.list_tasks(asking):
            cli("answer", task.id, "The README reads well; say so in one line at its end.")
        in_review = corral.TaskFilter(statuses=(corral.TaskStatus.IN_REVIEW,))
        for task in self.store.tasks.list_tasks(in_review):
            if task.id == self.roles["review-0"] and task.id not in self.asked:
                self.asked.add(task.id)
                cli("request-changes", task.id, "--note", "please add a test")
            else:
                cli("approve", task.id, "--merge", "--note", "looks good")
        # An approved task whose merge git refused for the moment (the base checkout busy
        # with a landing under heavy load): the reviewer merges it again, as a person would.
        for task in self.store.tasks.list_tasks(
            corral.TaskFilter(statuses=(corral.TaskStatus.APPROVED,))
        ):
            cli("merge", task.id)
        if not self.killed:
            self.kill_slow_worker()

    def kill_slow_worker(self) -> None:
        """SIGKILL the worker process running the slow task, once it has run a while."""
        task = self.store.tasks.get_task(self.roles["slow"])
        if task.status is not corral.TaskStatus.RUNNING or task.worker_id is None:
            return
        claim = self.store.claims.active_claim(task.id)
        if claim is None or (self.store.now() - claim.claimed_at).total_seconds() < KILL_AFTER_S:
            return
        worker = self.store.workers.get_worker(task.worker_id)
        if worker.pid is None:
            return
        print(f"  demo: kill -9 {worker.pid}  ({worker.name}, mid-way through {task.id})")
        os.kill(worker.pid, signal.SIGKILL)
        self.killed = True


def unfinished(store: corral.Store) -> int:
    """Tasks not yet done or failed."""
    counts = store.tasks.task_counts()
    return sum(n for status, n in counts.items() if status not in ("done", "failed"))


def main() -> int:
    """Make the repository, run the pool over the tasks, show where the work went."""
    make_repository()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    os.environ.clear()
    os.environ.update(env)
    print(f"$ cd {REPO} && corral init", flush=True)
    cli("init")
    (REPO / ".corral" / "config.toml").write_text(CONFIG)
    db = str(REPO / ".corral" / "corral.db")
    settings = corral.load_settings(config_path=str(REPO / ".corral" / "config.toml"))
    with corral.open_store(db) as store:
        roles = enqueue(store, settings)
        print(f"18 tasks added ({len([r for r in roles if r.startswith('review')])} with review)")
        argv = ["orchestrator", "start", "--workers", "3", "--agent", "generic"]
        argv += ["--exec", str(AGENT), "--worktree"]
        print(f"$ corral {' '.join(argv)}\n", flush=True)
        began = time.monotonic()
        orchestrator = subprocess.Popen(
            [sys.executable, "-m", "corral.cli.main", *argv], cwd=REPO, start_new_session=True
        )
        reviewer = Reviewer(store, roles)
        try:
            while unfinished(store) and time.monotonic() - began < DEADLINE_S:
                time.sleep(0.2)
                reviewer.step()
        finally:
            cli("orchestrator", "stop", "--graceful", "--timeout", "30s")
            orchestrator.wait(timeout=60)
        elapsed_s = time.monotonic() - began
        print("\n$ git log --oneline --graph main", flush=True)
        print(git("log", "--oneline", "--graph", "main"), flush=True)
        branches = cli("branches", "--json", shown=False)
        cli("branches")
        cli("usage", "--by", "agent")
        cli("status")
        tasks = store.tasks.list_tasks(corral.TaskFilter())
        done = sum(t.status is corral.TaskStatus.DONE for t in tasks)
        runs = len(store.runs.list_runs(limit=1000))
        story = told(store, roles, reviewer)
    stranded = [b for b in _json(branches.stdout) if b["where"] != "landed"]
    dirty = git("status", "--porcelain")
    print(
        f"\n{done}/{len(tasks)} tasks done in {elapsed_s:.1f} s, {runs} runs; "
        f"{len(stranded)} branch(es) not landed; git status of main: "
        f"{'clean' if not dirty else dirty.strip()}"
    )
    for what, happened in story.items():
        print(f"  {'yes' if happened else 'NO '}  {what}")
    exe = _corral_command()
    print(f"look around: cd {shlex.quote(str(REPO))} && {exe} events --limit 30 && {exe} runs")
    whole = done == len(tasks) == 18 and not stranded and not dirty and all(story.values())
    return 0 if whole else 1


def told(store: corral.Store, roles: dict[str, str], reviewer: Reviewer) -> dict[str, bool]:
    """Whether each turn of the story happened, from the store's own record."""

    def events(role: str) -> set[str]:
        found = store.events.list_events(corral.EventFilter(task_id=roles[role], limit=1000))
        return {e.name for e in found}

    themes = events("conflict-blue") | events("conflict-green")
    return {
        "a land conflicted, and its task landed on its next run": "task.land_conflict" in themes,
        "the flaky task failed once, then landed": "task.retry_scheduled" in events("flaky"),
        "a worker was killed mid-task; its task ran again": reviewer.killed
        and "task.crashed" in events("slow"),
        "a review asked for changes, then was approved and merged": "task.changes_requested"
        in events("review-0"),
        "a run changed nothing, waited for a person, was answered and landed": {
            "task.waiting",
            "task.answered",
        }
        <= events("unsure"),
        "corral committed what the agents left, and landed it": corral_committed(),
    }


def _corral_command() -> str:
    """`corral` where the shell finds this one, else its path, quoted for the shell (`make
    run` does not put the virtual environment on the PATH)."""
    here = os.path.join(os.path.dirname(sys.executable), "corral")
    found = shutil.which("corral")
    same = found and os.path.realpath(found) == os.path.realpath(here)
    return "corral" if same else shlex.quote(here)


def corral_committed() -> bool:
    """Whether main holds commits corral made for its agents (its default author)."""
    return bool(git("log", "--format=%an", "--author=corral <corral@localhost>", "main"))


def _json(text: str) -> list[dict[str, str]]:
    found: list[dict[str, str]] = json.loads(text) if text.strip() else []
    return found


if __name__ == "__main__":
    sys.exit(main())
