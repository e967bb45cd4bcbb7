"""Every `worker start` option, given to a pool: by flag or `[pool]` key it reaches the
workers; what a worker would refuse at start, the pool refuses at start, and so does
`worker start`. Real orchestrators, workers, agents and git repositories, on both stores.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from corral import NewTask, TaskStatus, enqueue, load_settings
from corral.model.runs import RunOutcome

# Records what it was given: working directory, arguments, stdin and worktree; a task
# whose prompt says "slow" then outlives any timeout the tests set.
RECORDER = """#!/bin/sh
out="$OUT_DIR/$CORRAL_TASK_ID"
pwd -P > "$out.cwd"
for arg in "$@"; do printf '%s\\n' "$arg"; done > "$out.args"
cat > "$out.stdin"
printf '%s' "${CORRAL_WORKTREE_PATH:-}" > "$out.worktree"
case "$(cat "$out.args" "$out.stdin")" in *slow*) sleep 30 ;; esac
"""


def _recorder(pool: Any) -> Path:
    (pool.folder / "out").mkdir()
    pool.env["OUT_DIR"] = str(pool.folder / "out")
    script = pool.folder / "recorder.sh"
    script.write_text(RECORDER)
    script.chmod(0o755)
    return script


def _add(pool: Any, title: str, **fields: Any) -> str:
    task = NewTask(title=title, max_attempts=1, **fields)
    return enqueue(pool.store, task, settings=load_settings(pool.env)).id


def _recorded(pool: Any, task_id: str, what: str) -> str:
    return (pool.folder / "out" / f"{task_id}.{what}").read_text()


def _settled(pool: Any, *task_ids: str) -> bool:
    final = {TaskStatus.DONE, TaskStatus.FAILED}
    return all(pool.store.tasks.get_task(t).status in final for t in task_ids)


def _config(pool: Any) -> dict[str, Any]:
    """The pool's options as `orchestrator status --json` shows them."""
    status = pool.corral("orchestrator", "status", "--json")
    assert 0 == status.returncode, status.stderr
    config: dict[str, Any] = json.loads(status.stdout)["config"]
    return config


def _git_repo(folder: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(
            ["git", *args],
            cwd=folder,
            check=True,
            env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                 "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"},
        )  # fmt: skip


def _config_file(pool: Any) -> Path:
    """The file an orchestrator and its workers read: beside a SQLite store, else here."""
    return (pool.folder / ".corral" if "://" not in pool.db else pool.folder) / "config.toml"


def test_pool_flags_reach_the_workers_their_tasks_and_the_status(any_pool: Any) -> None:
    """Each flag is in the status, on the worker's record, and in what its commands get."""
    pool = any_pool
    recorder = _recorder(pool)
    workdir = pool.folder / "work"
    workdir.mkdir()
    template = pool.folder / "prompt.txt"
    template.write_text("DO: ${title}")
    quick = _add(pool, "quick", kind="code", queue="q1")
    slow = _add(pool, "slow", kind="code", queue="q1")
    flags = ["--exec", str(recorder), "--prompt-arg", "--prompt-template", str(template)]
    flags += ["--workdir", str(workdir), "--label", "team=a", "--version", "9.9"]
    flags += ["--concurrency", "2", "--kind", "code", "--queue", "q1", "--timeout", "2s"]
    flags += ["--lease", "10m", "--grace", "1s", "--defer-delay", "2m", "--max-tasks", "5"]
    pool.start(*flags, workers=1)
    pool.wait(lambda: _settled(pool, quick, slow), 60)

    expected = {
        "exec": str(recorder),
        "prompt_arg": True,
        "prompt_template": str(template),
        "workdir": str(workdir),
        "labels": ["team=a"],
        "version": "9.9",
        "concurrency": 2,
        "kinds": ["code"],
        "queues": ["q1"],
        "timeout_s": 2.0,
        "lease_s": 600.0,
        "grace_s": 1.0,
        "defer_delay_s": 120.0,
        "max_tasks": 5,
        "worktree": False,
    }
    config = _config(pool)
    assert expected == {key: config[key] for key in expected}
    (worker,) = pool.store.workers.list_workers()
    assert ({"team": "a"}, "9.9", 2, ("code",), ("q1",)) == (
        worker.labels,
        worker.version,
        worker.max_concurrent,
        worker.kinds,
        worker.queues,
    )
    assert TaskStatus.DONE == pool.store.tasks.get_task(quick).status
    assert str(workdir.resolve()) == _recorded(pool, quick, "cwd").strip()
    assert "DO: quick" == _recorded(pool, quick, "args").splitlines()[-1]  # last argument
    assert "" == _recorded(pool, quick, "stdin")
    (run,) = pool.store.runs.list_runs(task_id=slow, limit=10)
    assert (TaskStatus.FAILED, RunOutcome.TIMEOUT) == (
        pool.store.tasks.get_task(slow).status,
        run.outcome,
    )


def test_pool_keys_reach_the_workers_and_flags_win_over_them(any_pool: Any) -> None:
    """`[pool] worktree = true` and the rest from the file; --concurrency beats the file's."""
    pool = any_pool
    recorder = _recorder(pool)
    _git_repo(pool.folder)
    config = _config_file(pool)
    config.write_text(
        f'[pool]\nworkers = 1\nexec = "{recorder}"\nworktree = true\nconcurrency = 3\n'
        'labels = ["from=file"]\ntimeout = "1h"\n'
        '[worktree]\non_empty = "done"\n'  # the recorder changes nothing
    )
    task = _add(pool, "in a worktree")
    pool.start("--concurrency", "2", workers=None)
    pool.wait(lambda: _settled(pool, task), 60)

    assert TaskStatus.DONE == pool.store.tasks.get_task(task).status
    worktree = _recorded(pool, task, "worktree")
    assert worktree.startswith(str(pool.folder / ".corral" / "worktrees" / "corral-slot-1-"))
    assert os.path.realpath(worktree) == _recorded(pool, task, "cwd").strip()
    settings = _config(pool)
    assert (1, True, 2, ["from=file"], 3600.0) == (
        settings["workers"],
        settings["worktree"],
        settings["concurrency"],
        settings["labels"],
        settings["timeout_s"],
    )
    (worker,) = pool.store.workers.list_workers()
    assert (2, {"from": "file"}) == (worker.max_concurrent, worker.labels)
    shown = pool.corral("config", "show", "--json", timeout_s=30)
    rows = {row["key"]: row for row in json.loads(shown.stdout)}
    source = str(config) if "://" not in pool.db else "./config.toml"
    assert (True, source) == (rows["pool.worktree"]["value"], rows["pool.worktree"]["source"])
    assert ("CORRAL_POOL_TIMEOUT_S", "default") == (
        rows["pool.timeout"]["env"],
        rows["pool.grace"]["source"],
    )


def test_a_slot_that_reaches_max_tasks_is_replaced_without_counting_a_crash(pool: Any) -> None:
    """--max-tasks 1: a fresh worker per task, even with max_restarts 0; no slot fails."""
    pool.env["CORRAL_MAX_RESTARTS"] = "0"
    tasks = pool.add(3)
    pool.start("--max-tasks", "1", workers=1)
    pool.wait(lambda: _settled(pool, *tasks), 60)

    runs = [r for t in tasks for r in pool.store.runs.list_runs(task_id=t, limit=10)]
    assert 3 == len({r.worker_id for r in runs})
    assert {TaskStatus.DONE} == {pool.store.tasks.get_task(t).status for t in tasks}
    assert "exit_code=0" in pool.log()
    assert "slot.failed" not in pool.log()


# (case, flags, [worktree] lines of the config file, the one line's start after "error: ")
REFUSED = [
    ("exec not found", ["--exec", "no-such-agent-x1"], "", "exec: expected a program on PATH"),
    ("exec quotes", ["--exec", "agent 'oops"], "", "exec: expected a command line with balanced"),
    ("workdir missing", ["--workdir", "/nonexistent/d"], "", "workdir: expected an existing"),
    (
        "branch template",
        ["--worktree"],
        'branch_template = "bad..{task}"',
        "worktree.branch_template: expected a valid branch name, got 'bad..t-",
    ),
    (
        "worktree dir outside",
        ["--worktree"],
        'dir = "../elsewhere"',
        "worktree.dir: expected a folder inside the repository",
    ),
    (
        "worktree dir in .git",
        ["--worktree"],
        'dir = ".git/trees"',
        "worktree.dir: expected a folder outside the repository's .git",
    ),
    (
        "worktree dir a file",
        ["--worktree"],
        'dir = "a-file"',
        "worktree.dir: expected a folder, not a file, got 'a-file'",
    ),
    ("kind with a space", ["--kind", "a b"], "", "kind: expected a name of 1 to 100 printable"),
    ("queue empty", ["--queue", ""], "", "queue: expected a name of 1 to 100 printable"),
    (
        "concurrency past the bound",
        ["--concurrency", "99999999999999999999"],
        "",
        "concurrency: expected a value of at most 1000",
    ),
    (
        "land command quotes",
        ["--worktree"],
        'land = "command"\nland_command = "push \'oops"',
        "worktree.land_command: expected a command line with balanced quotes",
    ),
    ("bad duration", ["--timeout", "soon"], "", "timeout: expected a duration such as"),
    ("zero timeout", ["--timeout", "0"], "", "timeout: expected a duration greater than zero"),
    ("bad number", ["--concurrency", "0"], "", "concurrency: expected a value of at least 1"),
    ("not a number", ["--max-tasks", "many"], "", "max_tasks: expected a number (count)"),
    (
        "worktree outside git",
        ["--worktree", "--workdir", "{elsewhere}"],
        "",
        "repo: expected a folder inside a git repository",
    ),
    ("batch with exec", ["--batch", "2"], "", "batch: expected 1 with --exec"),
    ("label without =", ["--label", "team"], "", "label: expected key=value, got 'team'"),
]
COMMANDS = {
    "orchestrator": ["orchestrator", "start", "--workers", "1"],
    "worker": ["worker", "start", "--name", "w"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("flags", "worktree", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_what_a_worker_would_refuse_both_commands_refuse_at_start(
    any_pool: Any, tmp_path_factory: pytest.TempPathFactory, command: str,
    flags: list[str], worktree: str, expected: str,
) -> None:  # fmt: skip
    """Exit 2, one line naming the option; no state row taken, no worker, no slot spawned."""
    pool = any_pool
    _git_repo(pool.folder)
    _config_file(pool).write_text(f"[worktree]\n{worktree}\n")
    (pool.folder / "a-file").write_text("not a folder")
    elsewhere = str(tmp_path_factory.mktemp("not-a-repo"))
    flags = [f.replace("{elsewhere}", elsewhere) for f in flags]
    job = [] if "--exec" in flags else ["--exec", str(pool.agent)]
    refused = pool.corral(*COMMANDS[command], *job, *flags)

    assert (2, 1) == (refused.returncode, len(refused.stderr.splitlines())), refused.stderr
    assert refused.stderr.startswith(f"corral: error: {expected}"), refused.stderr
    assert ("stopped", []) == (
        pool.status()["status"],
        pool.store.orchestrators.list_orchestrators(),
    )
    assert [] == pool.store.workers.list_workers()
    assert not (pool.folder / ".corral" / "logs").exists()


def test_a_bad_pool_key_is_refused_naming_the_file_and_key(any_pool: Any) -> None:
    """`[pool] timeout = "soon"`: exit 2, the file's path and `pool.timeout`, nothing started."""
    pool = any_pool
    config = _config_file(pool)
    config.write_text('[pool]\ntimeout = "soon"\n')
    refused = pool.corral("orchestrator", "start")
    where = str(config) if "://" not in pool.db else "./config.toml"
    assert 2 == refused.returncode
    assert refused.stderr.startswith(f"corral: error: {where}: pool.timeout: expected a duration")
    assert "stopped" == pool.status()["status"]


def test_a_job_flag_replaces_the_files_other_job(any_pool: Any) -> None:
    """`[pool] exec` and a `--call` flag: the flag's function is the job (and is checked)."""
    pool = any_pool
    _config_file(pool).write_text(f'[pool]\nexec = "{pool.agent}"\n')
    refused = pool.corral("orchestrator", "start", "--call", "no_such_module_x1:handle")
    assert 2 == refused.returncode
    assert refused.stderr.startswith("corral: error: call: expected an importable MODULE:FUNCTION")


@pytest.mark.parametrize("name", ["bad name", "a..b", "x~1", "x:y", "end.lock", "a^b"])
def test_a_worker_name_git_refuses_in_a_branch_is_refused_at_start(
    any_pool: Any, name: str
) -> None:
    """`worker start --worktree --name N` whose branch git would refuse: exit 2 naming `name`,
    before it registers (not a failure of every task it claims)."""
    pool = any_pool
    _git_repo(pool.folder)
    pool.add(1)
    refused = pool.corral("worker", "start", "--name", name, "--exec", str(pool.agent),
                          "--worktree", "--once")  # fmt: skip
    assert (2, 1) == (refused.returncode, len(refused.stderr.splitlines())), refused.stderr
    expected = (
        f"corral: error: name: expected a worker name git accepts in a branch name, got {name!r}"
    )
    assert expected == refused.stderr.strip()
    assert [] == pool.store.workers.list_workers()


@pytest.mark.parametrize(
    ("flags", "config"),
    [
        (["--workers", "99999999999999999999"], ""),
        (["--workers", "1001"], ""),
        ([], "workers = 100000"),
    ],
    ids=["flag past 64 bits", "flag past the bound", "config"],
)
def test_a_pool_past_its_bound_is_refused_at_start(
    any_pool: Any, flags: list[str], config: str
) -> None:
    """--workers or `[pool] workers` above 1000: exit 2, one line; nothing started."""
    pool = any_pool
    _config_file(pool).write_text(f"[pool]\n{config}\n")
    refused = pool.corral("orchestrator", "start", "--exec", str(pool.agent), *flags)
    assert (2, 1) == (refused.returncode, len(refused.stderr.splitlines())), refused.stderr
    assert "workers: expected a value of at most 1000" in refused.stderr
    assert ("stopped", []) == (
        pool.status()["status"],
        pool.store.orchestrators.list_orchestrators(),
    )


def test_a_config_file_named_by_corral_config_reaches_the_workers(any_pool: Any) -> None:
    """CORRAL_CONFIG=/elsewhere.toml: the workers read the same file as the orchestrator
    (their tasks see it), not only a config.toml beside the database."""
    pool = any_pool
    elsewhere = pool.folder / "elsewhere.toml"
    elsewhere.write_text('[lease]\nduration = "7m"\n')
    pool.env["CORRAL_CONFIG"] = str(elsewhere)
    seen = pool.folder / "seen"
    agent = pool.folder / "config-agent.sh"
    agent.write_text(f'#!/bin/sh\nprintf %s "$CORRAL_CONFIG" > {seen}\n')
    agent.chmod(0o755)
    task = _add(pool, "which config")
    pool.start("--exec", str(agent), workers=None)
    pool.wait(lambda: _settled(pool, task), 60)
    assert str(elsewhere) == seen.read_text()
