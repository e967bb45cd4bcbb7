"""`corral status --watch` in a real terminal: tmux runs it in a detached session of a known
size, `capture-pane` reads the screen, `send-keys` types q or Ctrl-C; the pool under it is
a real orchestrator whose agents print a line and keep running."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CORRAL

import corral
from corral import NewTask, enqueue
from corral.foundation.durations import iso

TMUX = shutil.which("tmux")
if TMUX is None and os.environ.get("CI") != "true":
    pytest.skip(
        "tmux is not installed (apt-get install tmux); CI installs it", allow_module_level=True
    )

AGENT = """#!/bin/sh
echo "preparing $CORRAL_TASK_ID"
echo "compiling step 7 of $CORRAL_TASK_ID"
exec sleep 120
"""
# A title that moves the cursor five cells and renames the window if drawn as it is.
HOSTILE = "evil\x1b[5Cgap\x1b]0;pwned\x07 title"


Wait = Callable[[Callable[[], bool], float], None]


class Tmux:
    """One detached session on a tmux server of its own (not the user's), killed at the end."""

    def __init__(self, folder: Path, env: dict[str, str], wait: Wait) -> None:
        self.wait = wait
        self.socket = f"corral-test-{secrets.token_hex(4)}"
        self.exit_file = folder / "watch.exit"
        # curses takes COLUMNS and LINES over the terminal's size; pytest-xdist exports
        # its own terminal's: the session's size must be the window's.
        self.env = {k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")}

    def tmux(self, *args: str) -> str:
        """Run a tmux command against this server; what it printed."""
        argv = [str(TMUX), "-L", self.socket, "-f", "/dev/null", *args]
        return subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=30, check=True
        ).stdout

    def start(self, *args: str, width: int = 150, height: int = 40) -> None:
        """Run `corral ARGS` in the session; its exit code lands in `exit_file`."""
        line = " ".join([CORRAL, *args])
        command = f"{line}; echo EXIT=$? > {self.exit_file}; exec sleep 600"
        self.tmux("new-session", "-d", "-s", "w", "-x", str(width), "-y", str(height), command)

    def screen(self) -> str:
        """The pane's text as shown now."""
        return self.tmux("capture-pane", "-p", "-t", "w")

    def show(self, variable: str) -> str:
        """A format variable of the pane, such as `alternate_on` or `pane_title`."""
        return self.tmux("display-message", "-p", "-t", "w", f"#{{{variable}}}").strip()

    def wait_for(self, *texts: str, timeout_s: float = 30) -> str:
        """The screen, once it shows every one of `texts`."""
        last = [""]

        def shown() -> bool:
            last[0] = self.screen()
            return all(t in last[0] for t in texts)

        try:
            self.wait(shown, timeout_s)
        except AssertionError:
            raise AssertionError(f"not all of {texts} on the screen:\n{last[0]}") from None
        return last[0]

    def exit_code(self) -> str:
        """`EXIT=N` once the command has ended."""
        self.wait(lambda: self.exit_file.exists() and self.exit_file.read_text().strip() != "", 15)
        return self.exit_file.read_text().strip()

    def close(self) -> None:
        """Kill the server and everything in its sessions."""
        subprocess.run(
            [str(TMUX), "-L", self.socket, "kill-server"], capture_output=True, check=False
        )


@pytest.fixture
def tmux(tmp_path: Path, any_pool: object) -> Iterator[Tmux]:
    """A private tmux server whose sessions see the pool's store."""
    session = Tmux(tmp_path, any_pool.env, any_pool.wait)  # type: ignore[attr-defined]
    try:
        yield session
    finally:
        session.close()


def _running_pool(pool: object) -> list[str]:
    """Two slots, each running a task whose agent printed its lines and sleeps; the ids."""
    pool.agent.write_text(AGENT)  # type: ignore[attr-defined]
    store = pool.store  # type: ignore[attr-defined]
    ids = [enqueue(store, NewTask(title=title)).id for title in ("plain title", HOSTILE)]
    pool.start(workers=2)  # type: ignore[attr-defined]
    pool.wait(lambda: pool.store.tasks.task_counts().get("running") == 2)  # type: ignore[attr-defined]
    return ids


def test_the_screen_shows_slots_tasks_and_output_then_q_leaves_it_clean(
    any_pool: object, tmux: Tmux
) -> None:
    """Each slot's worker, task id, clean title and last output line are on the screen; a
    resize redraws it narrower; q ends it with 0, off the alternate screen, cursor shown."""
    plain, hostile = _running_pool(any_pool)
    holders = [r.worker_id for r in any_pool.store.claims.running_tasks(10)]  # type: ignore[attr-defined]
    tmux.start("status", "--watch", "--interval", "0.2")
    shown = tmux.wait_for(
        plain, hostile, "slot-1", "slot-2", f"compiling step 7 of {plain}", "evilgap title"
    )
    assert all(worker in shown for worker in holders)
    assert "pwned" not in tmux.show("pane_title")
    assert "1" == tmux.show("alternate_on")

    tmux.tmux("resize-window", "-t", "w", "-x", "50", "-y", "12")
    narrow = tmux.wait_for("corral status --watch  every 200ms  ")
    tmux.wait(lambda: all(len(line) <= 50 for line in tmux.screen().splitlines()), 10)
    assert not tmux.exit_file.exists(), narrow

    tmux.tmux("send-keys", "-t", "w", "q")
    assert "EXIT=0" == tmux.exit_code()
    assert ("0", "1") == (tmux.show("alternate_on"), tmux.show("cursor_flag"))


def test_ctrl_c_ends_the_screen_with_exit_code_0(any_pool: object, tmux: Tmux) -> None:
    """Ctrl-C is a way out, not a crash: exit 0, no traceback, the terminal restored."""
    tmux.start("status", "--watch", "--interval", "0.2")
    tmux.wait_for("corral status --watch", "orchestrator: never started")
    tmux.tmux("send-keys", "-t", "w", "C-c")
    assert "EXIT=0" == tmux.exit_code()
    assert "Traceback" not in tmux.screen()
    assert ("0", "1") == (tmux.show("alternate_on"), tmux.show("cursor_flag"))


def _says(*blocks: dict[str, object]) -> str:
    """One claude stream-json assistant line, quoted for sh; TASK becomes the task id."""
    event = {"type": "assistant", "message": {"role": "assistant", "content": list(blocks)}}
    text = json.dumps(event, separators=(",", ":"))
    return "'" + text.replace("TASK", "'\"$CORRAL_TASK_ID\"'") + "'"


# An agent that streams claude stream-json: its text (with an escape sequence that would
# clear the screen), then a tool call; then it keeps running.
_TEXT = _says({"type": "text", "text": "Reading \x1b[2Jthe parser"})
_TOOL = _says({"type": "tool_use", "name": "Bash", "input": {"command": "make TASK"}})
STREAMING_AGENT = (
    "#!/bin/sh\ncat > /dev/null\n"
    + "".join(f"printf '%s\\n' {line}\n" for line in (_TEXT, _TOOL))
    + "exec sleep 120\n"
)


def test_the_screen_shows_parked_providers_and_agents_in_words(
    any_pool: object, tmux: Tmux
) -> None:
    """A parked provider account is listed with its reset and reason; each running agent's
    stream-json is shown as the tool it is using, never as JSON."""
    pool: Any = any_pool
    pool.agent.write_text(STREAMING_AGENT)
    store = pool.store
    task = enqueue(store, NewTask(title="stream me")).id
    until = store.now() + timedelta(hours=2)
    store.providers.park_provider(
        "claude", until=until, reason="claude five_hour limit", actor="test"
    )
    pool.start(workers=1)
    pool.wait(lambda: pool.store.tasks.task_counts().get("running") == 1)
    tmux.start("status", "--watch", "--interval", "0.2")
    shown = tmux.wait_for(
        "PROVIDERS HELD BACK",
        f"claude  parked until {iso(until)}: claude five_hour limit",
        f"Bash: make {task}",
    )
    assert '{"type"' not in shown and "[2J" not in shown
    tmux.tmux("send-keys", "-t", "w", "q")
    assert "EXIT=0" == tmux.exit_code()


def _ended(store: Any, title: str, *, commit: str | None) -> str:
    """A task run on a branch and done, its work landed at `commit` or (None) kept."""
    task = enqueue(store, NewTask(title=title))
    spec = corral.NewWorker(name=f"w-{title}", hostname="h", pid=None)
    worker = corral.register(store, spec).worker
    claim = corral.claim(store, task.id, worker.id)
    branch = f"corral/{task.id}"
    store.reviews.record_branch(task.id, token=claim.token, branch=branch, base_ref="main",
                        worktree_path=f"/repo/{task.id}", actor=worker.id)  # fmt: skip
    if commit is None:
        store.reviews.record_outcome(task.id, token=claim.token, outcome="kept", actor=worker.id)
    else:
        store.reviews.record_landing(task.id, token=claim.token, branch=branch, base_ref="main",
                             merged_commit=commit, actor=worker.id)  # fmt: skip
    corral.complete(store, task.id, token=claim.token)
    return task.id


def test_the_screen_and_status_say_where_the_work_is(any_pool: object, tmux: Tmux) -> None:
    """A kept branch (for a person: `corral land`) and a landed task with its commit are in
    the WORK section with the day's counts, and in `corral status` and its JSON."""
    pool: Any = any_pool
    kept = _ended(pool.store, "tidy the cli", commit=None)
    landed = _ended(pool.store, "fix the login bug", commit="3f2a9c41d0e7aa55")
    tmux.start("status", "--watch", "--interval", "0.2")
    tmux.wait_for(
        "WORK (24h: landed 1, kept 1)",
        f"kept    {kept}  corral/{kept}  tidy the cli",
        f"landed  {landed} at 3f2a9c41d0e7  fix the login bug",
    )
    tmux.tmux("send-keys", "-t", "w", "q")
    assert "EXIT=0" == tmux.exit_code()

    def status(*args: str) -> str:
        return subprocess.run(
            [CORRAL, "status", *args], env=pool.env, capture_output=True, text=True, check=True
        ).stdout

    shown = status()
    assert "work in the last 24h: landed 1, kept 1" in shown
    assert f"    {kept}  corral/{kept}  tidy the cli" in shown
    work = json.loads(status("--json"))["work"]
    assert {"landed": 1, "in_review": 0, "kept": 1, "no_change": 0, "refused": 0} == work["counts"]
    assert [(landed, "3f2a9c41d0e7aa55")] == [(w["task_id"], w["commit"]) for w in work["landed"]]
    assert [(kept, f"corral/{kept}")] == [(w["task_id"], w["branch"]) for w in work["kept"]]
