"""Bad input through the CLI: one line naming the problem, the documented exit code, no write.

Exit codes (docs/cli.md): 0 ok, 1 refused by the current state, 2 usage or invalid input,
3 store unavailable. Each case runs `corral` as a fresh process against a store holding a
ready task, a running task (with a stale token from an earlier claim), a done task and a
worker, and checks that every table is exactly as it was afterwards.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from corral import NewTask, NewWorker, open_store
from corral.cli.commands import all_commands
from corral.store.queries import migration_files
from corral.usecases import claims, tasks, workers

CORRAL = str(Path(sys.executable).with_name("corral"))
TABLES = ("tasks", "task_deps", "workers", "claims", "events")
TASK_KEYS = {"id", "title", "status", "queue", "kind", "priority", "attempts"}
CLAIM_KEYS = {"task_id", "worker_id", "token", "lease_expires_at"}
WORKER_KEYS = {"id", "name", "status", "hostname", "pid", "last_heartbeat_at"}


@dataclass(frozen=True)
class Scene:
    """Ids in the prepared store."""

    db: str
    ready: str
    running: str
    done: str
    worker: str
    token: int
    stale_token: int
    done_token: int


@pytest.fixture
def scene(cli) -> Scene:
    """The `cli` fixture's store with one ready, one running and one done task and a worker."""
    return make_scene(cli.db)


def make_scene(db: str) -> Scene:
    """Store `db` with one ready, one running and one done task and a worker `w1`."""
    with open_store(db) as store:
        worker = workers.register(store, NewWorker(name="w1", max_concurrent=3)).worker.id
        ready, running, done = (tasks.enqueue(store, NewTask(title=t)).id for t in "abc")
        stale = claims.claim(store, running, worker).token
        claims.release(store, running, token=stale)
        token = claims.claim(store, running, worker).token
        done_token = claims.claim(store, done, worker).token
        claims.complete(store, done, token=done_token)
    return Scene(db, ready, running, done, worker, token, stale, done_token)


def dump(db: str, tables: tuple[str, ...] = TABLES) -> dict[str, list[tuple[object, ...]]]:
    """Every row of every table, read without writing; `db` a file or a postgresql:// URL."""
    if db.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(db) as pg:
            return {
                t: sorted(pg.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in tables
            }
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {t: sorted(conn.execute(f"SELECT * FROM {t}"), key=repr) for t in tables}
    finally:
        conn.close()


def run(*args: str | bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`corral ARGS` as a fresh process; CORRAL_* comes only from `env`."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    full_env.update(env or {})
    return subprocess.run(
        [CORRAL, *args], capture_output=True, env=full_env, timeout=60, check=False
    )


def assert_one_line(proc: subprocess.CompletedProcess, code: int, *names: str) -> str:
    """The command exited `code` with nothing on stdout and one stderr line naming `names`."""
    err = proc.stderr.decode("utf-8", "replace")
    assert (code, b"") == (proc.returncode, proc.stdout), err
    assert "Traceback" not in err
    assert 1 == err.count("\n") and err.endswith("\n"), err
    assert err.startswith("corral: error: ")
    for name in names:
        assert name in err
    return err


def refused_without_write(scene: Scene, code: int, args: list, names: list[str], env=None) -> str:
    before = dump(scene.db)
    err = assert_one_line(run(*args, env={"CORRAL_DB": scene.db, **(env or {})}), code, *names)
    assert before == dump(scene.db)
    return err


# (case id, argv with {ready} {running} {done} {worker} placeholders, words in the line)
INVALID_INPUT = [
    ("unknown task id", ["show", "t-nope"], ["t-nope", "not found"]),
    ("unknown task on done", ["done", "t-nope"], ["t-nope", "not found"]),
    ("unknown task on cancel", ["cancel", "t-nope"], ["t-nope", "not found"]),
    ("unknown worker on claim", ["claim", "{ready}", "w-nope"], ["w-nope", "not found"]),
    ("unknown worker heartbeat", ["worker", "heartbeat", "w-nope"], ["w-nope", "not found"]),
    ("unknown worker deregister", ["worker", "deregister", "w-nope"], ["w-nope", "not found"]),
    ("malformed timeout", ["add", "x", "--timeout", "5x"], ["timeout", "5x"]),
    ("malformed lease", ["claim", "{ready}", "{worker}", "--lease", "abc"], ["lease", "abc"]),
    ("malformed run-after", ["add", "x", "--run-after", "soon"], ["run_after", "soon"]),
    ("payload not JSON", ["add", "x", "--payload", "{oops"], ["payload", "JSON"]),
    ("payload not an object", ["add", "x", "--payload", "[1, 2]"], ["payload", "object"]),
    ("result not JSON", ["done", "{running}", "--result", "{"], ["result", "JSON"]),
    ("priority not a number", ["add", "x", "--priority", "high"], ["priority", "high"]),
    ("priority a fraction", ["add", "x", "--priority", "1.5"], ["priority", "1.5"]),
    ("missing dependency", ["add", "x", "--depends-on", "t-nope"], ["depends_on", "t-nope"]),
    ("empty title", ["add", ""], ["title"]),
    ("blank title", ["add", "   "], ["title"]),
    ("unknown status filter", ["list", "--status", "sleeping"], ["status", "sleeping"]),
    ("unknown event type", ["events", "--type", "task.done"], ["type", "task.done"]),
    ("unknown type to follow", ["events", "--follow", "--type", "x"], ["type", "'x'"]),
    ("malformed since", ["events", "--since", "5x"], ["since", "5x"]),
    ("negative since", ["events", "--follow", "--since=-1m"], ["since", "-1m"]),
    ("unknown worker status", ["worker", "list", "--status", "asleep"], ["status", "asleep"]),
    ("token not a number", ["done", "{running}", "--token", "abc"], ["token", "abc"]),
    # Which of --exec, --call, --agent is needed depends on --agent: preflight's one line.
    ("start without a job", ["worker", "start", "--name", "x"], ["exec", "--call", "--agent"]),
]


def fill(arg: str, scene: Scene) -> str:
    """`arg` with {ready}, {running}, {done} and {worker} replaced by the scene's ids."""
    for name in ("ready", "running", "done", "worker"):
        arg = arg.replace(f"{{{name}}}", getattr(scene, name))
    return arg


@pytest.mark.parametrize(
    ("args", "names"), [c[1:] for c in INVALID_INPUT], ids=[c[0] for c in INVALID_INPUT]
)
def test_invalid_input_exits_2_with_one_line_and_writes_nothing(scene, args, names):
    """Invalid input is refused with exit 2 and one line naming the field, and writes nothing."""
    refused_without_write(scene, 2, [fill(a, scene) for a in args], names)


def assert_usage_error(proc: subprocess.CompletedProcess, prog: str, *names: str) -> None:
    """Exit 2, nothing on stdout, `prog`'s usage, then one error line naming `names`."""
    err = proc.stderr.decode("utf-8", "replace")
    assert (2, b"") == (proc.returncode, proc.stdout), err
    assert "Traceback" not in err
    *usage, line = err.splitlines()
    assert usage and usage[0].startswith(f"usage: {prog} "), err
    assert line.startswith("corral: error: ") and line.endswith(f"(see `{prog} --help`)"), err
    for name in names:
        assert name in line


# (case id, argv with placeholders, the command whose usage is shown, words in the line)
USAGE_ERRORS = [
    ("unknown command", ["frobnicate"], "corral", ["frobnicate"]),
    ("missing argument", ["claim", "{ready}"], "corral claim", ["worker"]),
    ("claim:next without worker", ["claim:next"], "corral claim:next", ["worker"]),
    ("unknown flag", ["ready", "--bogus"], "corral ready", ["--bogus"]),
    ("unknown flag before the command", ["--bogus", "ready"], "corral ready", ["--bogus"]),
    ("worker without subcommand", ["worker"], "corral worker", ["COMMAND"]),
    ("unknown worker subcommand", ["worker", "bogus"], "corral worker", ["bogus"]),
    ("register without --name", ["worker", "register"], "corral worker register", ["--name"]),
    ("heartbeat without id", ["worker", "heartbeat"], "corral worker heartbeat", ["id"]),
    (
        "heartbeat with two ids",
        ["worker", "heartbeat", "{worker}", "extra"],
        "corral worker heartbeat",
        ["extra"],
    ),
    ("run without subcommand", ["run"], "corral run", ["COMMAND"]),
    ("unknown run subcommand", ["run", "bogus"], "corral run", ["bogus"]),
    ("run show without id", ["run", "show"], "corral run show", ["RUN_ID"]),
]


@pytest.mark.parametrize(
    ("args", "prog", "names"), [c[1:] for c in USAGE_ERRORS], ids=[c[0] for c in USAGE_ERRORS]
)
def test_a_usage_error_shows_the_usage_of_its_command(scene, args, prog, names):
    """A usage error prints the usage of the command it concerns, one line, exits 2, no write."""
    before = dump(scene.db)
    assert_usage_error(
        run(*[fill(a, scene) for a in args], env={"CORRAL_DB": scene.db}), prog, *names
    )
    assert before == dump(scene.db)


NESTED = [c.words for c in all_commands() if len(c.words) == 2]


@pytest.mark.parametrize("words", NESTED, ids=" ".join)
def test_an_unknown_flag_of_a_nested_command_shows_that_commands_usage(scene, words):
    """Every command of every group (`worker`, `run`) answers an unknown flag with its own usage."""
    proc = run(*words, "--bogus", env={"CORRAL_DB": scene.db})
    assert_usage_error(proc, f"corral {' '.join(words)}")


def test_a_non_utf8_argument_exits_2_with_one_line(scene):
    """An argument that is not UTF-8 is refused with exit 2 and one line, and writes nothing."""
    refused_without_write(scene, 2, ["add", b"\xff\xfe"], ["UTF-8"])


def test_a_dependency_cycle_cannot_be_made(scene):
    """Dependencies must already exist, so a task naming itself or a later task is refused."""
    refused_without_write(scene, 2, ["add", "x", "--depends-on", "x"], ["depends_on"])


def test_claiming_a_claimed_task_exits_1_naming_its_state(scene):
    """Claiming a task another worker holds is refused with exit 1, naming its state."""
    refused_without_write(scene, 1, ["claim", scene.running, scene.worker], ["running"])


STALE_COMMANDS = {
    "done": ["done", "{task}"],
    "fail": ["fail", "{task}", "--error", "late"],
    "renew": ["claim:renew", "{task}", "{worker}"],
    "release": ["claim:release", "{task}", "{worker}"],
}


@pytest.mark.parametrize("command", list(STALE_COMMANDS))
@pytest.mark.parametrize("via", ["flag", "env"])
def test_a_stale_token_exits_1_and_changes_nothing(scene, command, via):
    """A stale token, given by --token or CORRAL_CLAIM_TOKEN, is refused with exit 1."""
    args = [a.format(task=scene.running, worker=scene.worker) for a in STALE_COMMANDS[command]]
    env = {}
    if via == "flag":
        args += ["--token", str(scene.stale_token)]
    else:
        env["CORRAL_CLAIM_TOKEN"] = str(scene.stale_token)
    refused_without_write(scene, 1, args, ["stale", str(scene.stale_token)], env=env)


@pytest.mark.parametrize("command", [c for c in STALE_COMMANDS if c != "release"])
def test_a_token_for_a_finished_task_is_stale(scene, command):
    """The token a task was completed under is stale afterwards: exit 1, nothing changes.
    (A release under it is the no-op of a loop whose agent finished the task itself.)"""
    args = [a.format(task=scene.done, worker=scene.worker) for a in STALE_COMMANDS[command]]
    refused_without_write(scene, 1, [*args, "--token", str(scene.done_token)], ["stale", "done"])


def test_cancelling_a_done_task_exits_1_naming_its_state(scene):
    """An invalid transition is refused with exit 1 and names the current state."""
    err = refused_without_write(scene, 1, ["cancel", scene.done], ["cancel", scene.done])
    assert "it is done" in err


def test_retrying_a_ready_task_exits_1_naming_its_state(scene):
    """Retry of a task that has not failed is refused with exit 1, naming its state."""
    refused_without_write(scene, 1, ["retry", scene.ready], ["retry", "it is ready"])


def test_answering_a_task_that_is_not_waiting_exits_1_naming_its_state(scene):
    """An answer to a task no person is waited for is refused with exit 1, naming its state."""
    refused_without_write(scene, 1, ["answer", scene.ready, "yes"], ["answer", "it is ready"])


def test_an_answer_on_stdin_that_is_not_utf8_exits_2_and_changes_nothing(scene):
    """`corral answer ID -` with bytes that are not UTF-8 is invalid input, one line."""
    before = dump(scene.db)
    proc = subprocess.run(
        [CORRAL, "answer", scene.ready, "-"],
        input=b"\xff\xfe not text",
        capture_output=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")},
             "CORRAL_DB": scene.db},
        timeout=60,
        check=False,
    )  # fmt: skip
    assert_one_line(proc, 2, "answer", "UTF-8")
    assert before == dump(scene.db)


# -- the store itself cannot be used: exit 3 ----------------------------------------------


def test_a_directory_as_database_exits_3(tmp_path):
    """A database path that is a directory exits 3 with one line, and nothing is created."""
    before = sorted(os.listdir(tmp_path))
    assert_one_line(run("list", "--db", str(tmp_path)), 3, str(tmp_path), "directory")
    assert before == sorted(os.listdir(tmp_path))


def test_a_file_that_is_not_a_database_exits_3_and_is_left_intact(tmp_path):
    """A file with garbage content exits 3 with one line and keeps its content."""
    bogus = tmp_path / "bogus.db"
    bogus.write_bytes(b"not a database" * 100)
    assert_one_line(run("list", "--db", str(bogus)), 3, str(bogus), "not a database")
    assert b"not a database" * 100 == bogus.read_bytes()


def test_an_unreadable_database_file_exits_3(scene):
    """A database file the user may not read exits 3 with one line."""
    if os.geteuid() == 0:
        pytest.skip("root reads files whatever their mode; the directory and garbage cases run")
    before = dump(scene.db)
    os.chmod(scene.db, 0)
    try:
        assert_one_line(run("list", "--db", scene.db), 3, scene.db)
    finally:
        os.chmod(scene.db, 0o644)
    assert before == dump(scene.db)


@pytest.mark.parametrize("where", ["missing folder", "/proc"])
def test_a_location_that_cannot_be_written_exits_3(tmp_path, where):
    """A database in a folder that does not exist, or in /proc, exits 3 and creates nothing."""
    folder = tmp_path / "no" / "such" if where == "missing folder" else Path("/proc")
    db = str(folder / "corral.db")
    assert_one_line(run("add", "x", "--db", db), 3, db)
    assert not os.path.exists(db)
    assert not (tmp_path / "no").exists()


def test_a_database_from_a_newer_corral_exits_3_and_is_not_changed(scene):
    """A database whose schema version is newer than the code exits 3 naming the problem."""
    newer = migration_files("sqlite")[-1][0] + 1
    conn = sqlite3.connect(scene.db)
    conn.execute(f"PRAGMA user_version = {newer}")
    conn.close()
    err = refused_without_write(scene, 3, ["add", "x"], ["newer", str(newer)])
    assert scene.db in err


# -- --json shapes -------------------------------------------------------------------------


def json_out(scene: Scene, *args: str) -> object:
    proc = run(*args, "--json", env={"CORRAL_DB": scene.db})
    assert (0, b"") == (proc.returncode, proc.stderr)
    return json.loads(proc.stdout)


def test_task_json_carries_the_documented_keys(scene):
    """add, show, done and cancel answer a task object with the documented keys."""
    added = json_out(scene, "add", "shape")
    assert TASK_KEYS <= set(added)
    assert TASK_KEYS <= set(json_out(scene, "show", scene.ready))
    assert TASK_KEYS <= set(json_out(scene, "cancel", added["id"]))
    assert TASK_KEYS <= set(json_out(scene, "done", scene.running, "--token", str(scene.token)))


def test_claim_json_carries_the_documented_keys(scene):
    """claim and claim:next answer a claim object with the documented keys."""
    claim = json_out(scene, "claim", scene.ready, scene.worker)
    assert CLAIM_KEYS <= set(claim)
    assert (scene.ready, scene.worker) == (claim["task_id"], claim["worker_id"])
    worker = json_out(scene, "worker", "register", "--name", "w2", "--pid", "1")
    json_out(scene, "add", "next")
    assert CLAIM_KEYS <= set(json_out(scene, "claim:next", worker["id"]))


def test_worker_json_carries_the_documented_keys(scene):
    """register answers id and interval, heartbeat interval and drain, status a worker object."""
    registered = json_out(scene, "worker", "register", "--name", "w2", "--pid", "1")
    assert {"id", "heartbeat_interval_s"} <= set(registered)
    beat = json_out(scene, "worker", "heartbeat", registered["id"])
    assert {"heartbeat_interval_s", "drain"} <= set(beat)
    assert False is beat["drain"]
    assert WORKER_KEYS <= set(json_out(scene, "worker", "status", registered["id"]))


@pytest.mark.parametrize(
    "args",
    [["list"], ["ready"], ["events"], ["worker", "list"], ["worker", "status"]],
    ids=" ".join,
)
def test_list_commands_answer_json_arrays(scene, args):
    """List commands answer a JSON array of objects."""
    found = json_out(scene, *args)
    assert list is type(found)
    assert found
    assert all(dict is type(item) for item in found)
    if args in (["list"], ["ready"]):
        assert all(TASK_KEYS <= set(item) for item in found)
    if args[0] == "worker":
        assert all(WORKER_KEYS <= set(item) for item in found)
