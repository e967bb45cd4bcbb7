"""A sandboxed worker's start and end: refused in one line when its sandbox cannot work,
and its agent's whole tree ended by a timeout or by the runner's own death (kill -9)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from tests.conftest import CORRAL, sandbox_or_skip

from .conftest import wait_until

STUCK = """#!/bin/bash
# An agent that leaves a process outside its group, then waits for ever.
setsid bash -c 'exec -a {mark}-escaped sleep 3600' &
echo started
exec -a {mark}-agent sleep 3600
"""


def _marked(mark: str) -> list[int]:
    """The pids of processes whose command line starts with `mark`."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                continue
            if cmdline.startswith(mark.encode()):
                found.append(int(name))
    return found


def _stuck_agent(tmp_path: Path) -> tuple[str, str]:
    """The stuck agent's script and the mark its processes carry."""
    mark = f"corral-sbx-{uuid.uuid4().hex[:12]}"
    script = tmp_path / "stuck.sh"
    script.write_text(STUCK.format(mark=mark))
    script.chmod(0o755)
    return str(script), mark


def _broken_bwrap(folder: Path) -> str:
    """A folder holding a `bwrap` that fails as one without user namespaces does."""
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize(
    ("flags", "path", "line"),
    [
        (
            ("--sandbox", "bwrap"),
            "empty",
            "sandbox: expected bwrap installed and working (apt-get install bubblewrap), "
            "got 'bwrap not found on PATH'",
        ),
        (
            ("--sandbox", "bwrap"),
            "broken",
            "sandbox: expected bwrap installed and working (apt-get install bubblewrap), "
            "got 'bwrap does not work here: bwrap: No permissions to create new namespace'",
        ),
        (
            ("--sandbox", "jail"),
            None,
            "sandbox: expected one of bwrap, container, off, got 'jail'",
        ),
        (
            ("--network", "off"),
            None,
            "network: expected on unless runs are sandboxed (--sandbox), got 'off'",
        ),
    ],
)
@pytest.mark.parametrize("command", ["worker", "orchestrator"])
def test_a_start_whose_sandbox_cannot_work_is_refused_in_one_line(
    cli, tmp_path, command, flags, path, line
):
    """`worker start` and `orchestrator start` exit 2 with one line naming the field and
    what was expected, and register nothing."""
    env = {}
    if path == "empty":
        (tmp_path / "empty").mkdir()
        env["PATH"] = str(tmp_path / "empty")
    elif path == "broken":
        env["PATH"] = _broken_bwrap(tmp_path / "bin")
    if command == "worker":
        args = ("worker", "start", "--name", "w1", "--once", "--exec", "/bin/true", *flags)
    else:
        args = ("orchestrator", "start", "--exec", "/bin/true", *flags)
    refused = cli(*args, env=env)
    assert (2, f"corral: error: {line}\n") == (refused.code, refused.err)
    assert [] == json.loads(cli("worker", "list", "--json").out)


def test_a_timeout_ends_the_sandboxed_tree_and_what_left_its_group(cli, tmp_path):
    """The task's timeout signals the sandbox's process group: the agent and the process
    it started with `setsid` are gone when the run ends."""
    sandbox_or_skip("bwrap")
    script, mark = _stuck_agent(tmp_path)
    task = cli("add", "stuck", "--timeout", "1s").out.strip()
    done = cli("worker", "start", "--name", "w1", "--once", "--exec", script, "--sandbox", "bwrap")
    assert 1 == done.code, done.err  # --once: its one task failed
    run = json.loads(cli("runs", "--task", task, "--json").out)[0]
    assert "started\n" == Path(run["transcript_path"]).read_text()
    assert run["error"].startswith("timed out after 1 s")
    assert [] == _marked(mark)


def test_killing_the_runner_ends_its_sandboxed_agent(cli, tmp_path):
    """kill -9 of the runner: bwrap (--die-with-parent) and the pid namespace take the
    agent and the process that left its group with it."""
    sandbox_or_skip("bwrap")
    script, mark = _stuck_agent(tmp_path)
    cli("add", "stuck")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = cli.db
    runner = subprocess.Popen(
        [
            CORRAL,
            "worker",
            "start",
            "--name",
            "w1",
            "--once",
            "--exec",
            script,
            "--sandbox",
            "bwrap",
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: len(_marked(mark)) == 2, timeout_s=30)
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait()
    wait_until(lambda: [] == _marked(mark), timeout_s=10)


def test_a_sandboxed_agent_reports_through_its_outbox(cli, tmp_path):
    """With `[files] mirror` the run's outbox is bound into the sandbox (the store's folder
    is not): a `done` line written inside finishes the task with its result."""
    sandbox_or_skip("bwrap")
    script = tmp_path / "reporter.sh"
    script.write_text(
        "#!/bin/sh\n"
        'printf \'{"verb": "done", "token": %s, "result": {"via": "sandbox"}}\\n\' '
        '"$CORRAL_CLAIM_TOKEN" >> "$CORRAL_OUTBOX"\n'
    )
    script.chmod(0o755)
    task = cli("add", "report").out.strip()
    done = cli(
        *("worker", "start", "--name", "w1", "--once", "--exec", str(script)),
        *("--sandbox", "bwrap"),
        env={"CORRAL_FILES_MIRROR": "true"},
    )
    assert 0 == done.code, done.err
    shown = json.loads(cli("show", task, "--json").out)
    assert ("done", {"via": "sandbox"}) == (shown["status"], shown["result"])


def test_a_pools_sandbox_key_reaches_its_workers(pool):
    """`[pool] sandbox = "bwrap"` (here CORRAL_POOL_SANDBOX) and `network = "off"`: a slot's
    agent cannot read the store, and its task still completes."""
    sandbox_or_skip("bwrap")
    pool.agent.write_text(
        f"#!/bin/sh\nif cat {pool.db} >/dev/null 2>&1; then echo store: read; "
        "else echo store: hidden; fi\n"
    )
    pool.env.update(CORRAL_POOL_SANDBOX="bwrap", CORRAL_POOL_NETWORK="off")
    (task,) = pool.add(1)
    pool.start(workers=1)
    pool.wait(lambda: pool.store.tasks.get_task(task).status == "done", 60)
    (run,) = pool.store.runs.list_runs(task_id=task, limit=1)
    assert "store: hidden\n" == Path(run.transcript_path).read_text()


def test_a_store_in_the_workdir_itself_cannot_be_read(cli, tmp_path):
    """A SQLite store whose folder is the workdir, bound writable: inside, its file, its
    -wal and its lock file are /dev/null, which cannot even be opened (the sandbox's mounts
    are nodev: no agent can flock the queue of the store's writers), and the task still
    completes through the runner."""
    sandbox_or_skip("bwrap")
    script = tmp_path / "reader.sh"
    script.write_text(
        "#!/bin/sh\n"
        'for f in "$CORRAL_DB" "$CORRAL_DB-wal"; do\n'
        '    if cat "$f" >/dev/null 2>&1 && [ -s "$f" ]; then echo read; else echo hidden; fi\n'
        "done\n"
        'if flock -n "$CORRAL_DB.lock" true 2>/dev/null; then echo locked\n'
        "else echo unlockable; fi\n"
    )
    script.chmod(0o755)
    task = cli("add", "read the store").out.strip()
    done = cli(
        *("worker", "start", "--name", "w1", "--once", "--exec", str(script)),
        *("--workdir", str(tmp_path), "--sandbox", "bwrap"),
    )
    assert 0 == done.code, done.err
    run = json.loads(cli("runs", "--task", task, "--json").out)[0]
    assert "hidden\nhidden\nunlockable\n" == Path(run["transcript_path"]).read_text()
    assert os.path.getsize(cli.db) > 0
