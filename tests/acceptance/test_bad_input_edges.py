"""Bad input at the edges of what the stores hold: one line, exit 2 (or the documented
code), nothing written, on both stores.

JSON nested past 64 deep, NaN and Infinity, lone surrogates and NUL in documents; whole
numbers past what a column holds; numbers written other than in ASCII digits; names a
command refuses elsewhere; a config file that is not UTF-8 or nests too deep; a standard
output that is closed or full; store locations that are not a corral database.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, STORE_DIALECTS, store_url

from .test_bad_input import Scene, assert_one_line, dump, fill, make_scene, run

ALL_TABLES = ("tasks", "task_deps", "workers", "claims", "events", "runs", "messages")
ALL_TABLES += ("message_acks", "queue_limits")
DEEP = "[" * 10_000 + "]" * 10_000
ENCODER_DEEP = "[" * 988 + "]" * 988  # parses, but Python's encoder gives up on it
TOO_DEEP = "[" * 65 + "]" * 65
PAST_64_BITS = "99999999999999999999999"
PAST_32_BITS = "4294967296"


@pytest.fixture(params=STORE_DIALECTS)
def edge(request: pytest.FixtureRequest, tmp_path: Path) -> Scene:
    """The scene of test_bad_input (a ready, a running and a done task, worker w1) on each store."""
    return make_scene(store_url(request.param, request, tmp_path))


def refused(scene: Scene, code: int, args: list[str], names: list[str], env=None) -> str:
    """`corral ARGS` exits `code` with one line naming `names`, and no table changed."""
    before = dump(scene.db, ALL_TABLES)
    proc = run(*[fill(a, scene) for a in args], env={"CORRAL_DB": scene.db, **(env or {})})
    err = assert_one_line(proc, code, *names)
    assert before == dump(scene.db, ALL_TABLES)
    return err


# (case id, argv with {ready} {running} {done} {worker} placeholders, words in the line)
DOCUMENTS = [
    ("payload nested 10000 deep", ["add", "x", "--payload", '{"a": ' + DEEP + "}"], ["payload"]),
    ("payload nested 988 deep", ["add", "x", "--payload", '{"a": ' + ENCODER_DEEP + "}"], ["64"]),
    ("payload nested 66 deep", ["add", "x", "--payload", '{"a": ' + TOO_DEEP + "}"], ["64"]),
    ("result nested 10000 deep", ["done", "{running}", "--result", DEEP], ["result", "64"]),
    ("body nested", ["msg", "send", "--to", "w1", "--type", "t", "--body", DEEP], ["body"]),
    ("payload NaN", ["add", "x", "--payload", '{"a": NaN}'], ["payload", "NaN", "finite"]),
    ("payload Infinity", ["add", "x", "--payload", '{"a": Infinity}'], ["payload", "Infinity"]),
    ("payload -Infinity", ["add", "x", "--payload", '{"a": [-Infinity]}'], ["payload"]),
    ("payload 1e999", ["add", "x", "--payload", '{"a": 1e999}'], ["payload", "inf"]),
    ("result NaN", ["done", "{running}", "--result", "NaN"], ["result", "NaN"]),
    ("body Infinity", ["msg", "send", "--to", "w1", "--type", "t", "--body", "Infinity"], ["body"]),
    ("payload surrogate", ["add", "x", "--payload", '{"a": "\\ud800"}'], ["payload", "surrogate"]),
    ("key surrogate", ["add", "x", "--payload", '{"\\udc00": 1}'], ["payload", "surrogate"]),
    ("result surrogate", ["done", "{running}", "--result", '"\\ud800"'], ["result", "surrogate"]),
    ("payload NUL", ["add", "x", "--payload", '{"a": "x\\u0000y"}'], ["payload", "NUL"]),
    ("body NUL", ["msg", "send", "--to", "w1", "--type", "t", "--body", '"\\u0000"'], ["NUL"]),
    ("payload 5000 digits", ["add", "x", "--payload", '{"a": 1' + "0" * 5000 + "}"], ["payload"]),
    ("rate inf", ["queue", "set", "q", "--rate", "inf"], ["rate", "finite"]),
    ("rate nan", ["queue", "set", "q", "--rate", "nan"], ["rate"]),
    ("max_running 1e10", ["queue", "set", "q", "--max-running", "1e10"], ["max_running"]),
]
NUMBERS = [
    ("token past 64 bits", ["done", "{running}", "--token", PAST_64_BITS], ["token"]),
    ("token 0", ["done", "{running}", "--token", "0"], ["token"]),
    ("limit past 64 bits", ["list", "--limit", PAST_64_BITS], ["limit", "2147483647"]),
    ("ready limit past 32 bits", ["ready", "--limit", PAST_32_BITS], ["limit"]),
    ("events limit", ["events", "--limit", PAST_64_BITS], ["limit"]),
    ("runs limit", ["runs", "--limit", PAST_64_BITS], ["limit"]),
    ("msg ack past 64 bits", ["msg", "ack", PAST_64_BITS], ["id", str(2**63 - 1)]),
    ("msg ack other digits", ["msg", "ack", "\uff15"], ["id"]),
    ("pid past 64 bits", ["worker", "register", "--name", "z", "--pid", PAST_64_BITS], ["pid"]),
    ("pid past 32 bits", ["worker", "register", "--name", "z", "--pid", PAST_32_BITS], ["pid"]),
    (
        "max_concurrent past 32 bits",
        ["worker", "register", "--name", "z", "--max-concurrent", PAST_32_BITS],
        ["max_concurrent"],
    ),
    ("max_attempts past 32 bits", ["add", "x", "--max-attempts", PAST_32_BITS], ["max_attempts"]),
    ("priority with a space", ["add", "x", "--priority", " 5"], ["priority", "' 5'"]),
    ("priority with a plus", ["add", "x", "--priority", "+5"], ["priority", "'+5'"]),
    ("priority in other digits", ["add", "x", "--priority", "\uff15"], ["priority"]),
    ("priority with an underscore", ["add", "x", "--priority", "1_000"], ["priority", "1_000"]),
    ("ack --from with a space", ["msg", "ack", "1", "--from", "a b"], ["from", "'a b'"]),
    (
        "register --kind with a space",
        ["worker", "register", "--name", "z", "--kind", "a b"],
        ["kind"],
    ),
    ("register --queue empty", ["worker", "register", "--name", "z", "--queue", ""], ["queue"]),
]


@pytest.mark.parametrize(
    ("args", "names"),
    [c[1:] for c in DOCUMENTS + NUMBERS],
    ids=[c[0] for c in DOCUMENTS + NUMBERS],
)
def test_a_value_past_what_the_stores_hold_exits_2_and_writes_nothing(edge, args, names):
    """Documents and numbers the stores could not hold alike: exit 2, one line, no write."""
    refused(edge, 2, args, names)


def test_a_token_past_64_bits_in_the_environment_exits_2(edge):
    """CORRAL_CLAIM_TOKEN past 64 bits is refused as --token is: exit 2, nothing changes."""
    refused(edge, 2, ["done", edge.running], ["token"], env={"CORRAL_CLAIM_TOKEN": PAST_64_BITS})


def test_a_message_to_ack_keeps_working_after_the_checks(edge):
    """The checks refuse only what is bad: a sent message is acked by its plain id."""
    env = {"CORRAL_DB": edge.db}
    sent = run("msg", "send", "--to", "w1", "--type", "t", "--body", '{"n": 1.5}', env=env)
    assert 0 == sent.returncode, sent.stderr
    acked = run("msg", "ack", sent.stdout.decode().strip(), "--from", "w1", "--json", env=env)
    assert (0, 1.5) == (acked.returncode, json.loads(acked.stdout)["body"]["n"])


def test_a_url_of_another_database_exits_2_without_its_password(tmp_path):
    """CORRAL_DB=mysql://u:secret@x: exit 2 naming `db` and what fits, not the password."""
    proc = run("list", env={"CORRAL_DB": "mysql://u:secret@x/db"})
    err = assert_one_line(proc, 2, "db", "postgresql://", "mysql://")
    assert "secret" not in err


# -- the config file ---------------------------------------------------------------------

CONFIGS = [
    ("not UTF-8", b"[retry]\nmax_attempts = 3 # \xff\n", ["UTF-8"]),
    ("nested 3000 deep", b"x = " + b"[" * 3000 + b"]" * 3000 + b"\n", ["nest"]),
    (
        "max_attempts past 64 bits",
        b"[retry]\nmax_attempts = 99999999999999999999\n",
        ["max_attempts"],
    ),
    ("max_attempts past 32 bits", b"[retry]\nmax_attempts = 2147483648\n", ["2147483647"]),
    ("a count past any float", b"[retry]\nmax_crashes = 1" + b"0" * 400 + b"\n", ["max_crashes"]),
    ("a duration of inf", b"[lease]\nduration = inf\n", ["lease.duration"]),
    ("jitter nan", b"[retry]\njitter = nan\n", ["jitter"]),
    (
        "max_running past 64 bits",
        b"[queues.q]\nmax_running = 99999999999999999999\n",
        ["max_running"],
    ),
    ("max_ready past 32 bits", b"[queues.q]\nmax_ready = 2147483648\n", ["max_ready"]),
    ("rate inf", b"[queues.q]\nrate = inf\n", ["rate", "finite"]),
    ("pool workers past the bound", b"[pool]\nworkers = 100000\n", ["workers", "1000"]),
    ("pool concurrency past the bound", b"[pool]\nconcurrency = 5000\n", ["concurrency"]),
    ("worktree dir empty", b'[worktree]\ndir = ""\n', ["worktree.dir"]),
]


@pytest.mark.parametrize(("text", "names"), [c[1:] for c in CONFIGS], ids=[c[0] for c in CONFIGS])
def test_a_bad_config_file_exits_2_naming_the_file_and_writes_nothing(cli, tmp_path, text, names):
    """A config.toml that is not UTF-8, nests too deep or holds a value past its bound:
    exit 2, one line naming the file and the setting, and `add` writes nothing."""
    scene = make_scene(cli.db)
    config = tmp_path / "bad.toml"
    config.write_bytes(text)
    refused(scene, 2, ["add", "x"], [str(config), *names], env={"CORRAL_CONFIG": str(config)})


# -- standard output ---------------------------------------------------------------------


@pytest.mark.parametrize("args", [["add", "x"], ["list"]], ids=" ".join)
def test_a_closed_stdout_exits_2_before_anything_is_written(edge, args):
    """`corral ... >&-`: exit 2, one line, nothing written (the database never takes fd 1)."""
    before = dump(edge.db, ALL_TABLES)
    proc = subprocess.run(
        ["sh", "-c", 'exec "$@" >&-', "sh", CORRAL, *args],
        stderr=subprocess.PIPE,
        env={**os.environ, "CORRAL_DB": edge.db},
        timeout=60,
        check=False,
    )
    err = proc.stderr.decode()
    assert (2, 1) == (proc.returncode, err.count("\n")), err
    assert err.startswith("corral: error: stdout: expected an open standard output")
    assert before == dump(edge.db, ALL_TABLES)


@pytest.mark.parametrize("buffered", [True, False])
def test_a_full_stdout_exits_74_with_one_line_and_nothing_written(edge, buffered):
    """`corral add x > /dev/full`: stdout refuses even an empty write, so the command is
    refused before it changes anything: exit 74, one line, the store unchanged, with or
    without Python's output buffer."""
    env = {**os.environ, "CORRAL_DB": edge.db, "PYTHONUNBUFFERED": "" if buffered else "1"}
    before = dump(edge.db, ALL_TABLES)
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [CORRAL, "add", "into the void"], stdout=full, stderr=subprocess.PIPE, env=env,
            timeout=60, check=False,
        )  # fmt: skip
    err = proc.stderr.decode()
    assert (74, 1) == (proc.returncode, err.count("\n")), err
    assert err.startswith("corral: error: stdout: No space left on device")
    assert "nothing was done" in err
    assert before == dump(edge.db, ALL_TABLES)


# -- store locations ---------------------------------------------------------------------


def test_a_device_as_database_exits_3_and_creates_no_lock_file(tmp_path):
    """--db /dev/null, or a named pipe: exit 3, one line, no `.lock` file beside it."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    had_lock = os.path.exists("/dev/null.lock")
    for path in ("/dev/null", str(fifo)):
        assert_one_line(run("list", "--db", path), 3, path, "not a regular file")
    assert had_lock == os.path.exists("/dev/null.lock")
    assert ["pipe"] == os.listdir(tmp_path)


def test_an_in_memory_store_leaves_no_file_in_the_working_folder(tmp_path, monkeypatch):
    """`:memory:` is one handle's database: two of them are apart (each its own tasks), and
    neither leaves a `:memory:.lock` (or anything else) in the folder it was opened from."""
    from corral import NewTask, TaskFilter, open_store
    from corral.usecases.tasks import enqueue

    monkeypatch.chdir(tmp_path)
    with open_store(":memory:") as one, open_store(":memory:") as two:
        enqueue(one, NewTask(title="x"))
        counts = [len(store.tasks.list_tasks(TaskFilter())) for store in (one, two)]
        assert [1, 0] == counts
    assert [] == os.listdir(tmp_path)


@pytest.mark.parametrize("table", ["notes", "tasks"])
def test_another_programs_sqlite_file_is_refused_untouched(tmp_path, table):
    """A SQLite file with tables of its own: exit 3, one line; not switched to WAL, no corral
    table added, no lock file."""
    db = tmp_path / "theirs.db"
    conn = sqlite3.connect(db)
    conn.execute(f"CREATE TABLE {table} (x)")
    conn.commit()
    conn.close()
    assert_one_line(run("add", "x", "--db", str(db)), 3, str(db), "not a corral database")
    conn = sqlite3.connect(db)
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master")]
    conn.close()
    assert ("delete", [table], ["theirs.db"]) == (mode, names, os.listdir(tmp_path))


def test_version_prints_the_version():
    """`corral --version` prints `corral X.Y.Z` and exits 0."""
    proc = run("--version")
    assert (0, b"") == (proc.returncode, proc.stderr)
    assert proc.stdout.decode().startswith("corral 0.")


# -- text a task produced: NUL and results the stores cannot hold --------------------------


def _run_once(scene: Scene, *flags: str, cwd: Path | None = None, code: int = 0) -> None:
    """`worker start --name w2 --once` with `flags`: it takes the scene's ready task and
    exits `code` (1: the task failed)."""
    proc = subprocess.run(
        [CORRAL, "worker", "start", "--name", "w2", "--once", *flags],
        cwd=cwd,
        capture_output=True,
        env={**os.environ, "CORRAL_DB": scene.db},
        timeout=60,
        check=False,
    )
    assert code == proc.returncode, proc.stderr.decode()
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()


def _show(scene: Scene, task_id: str) -> dict:
    shown = run("show", task_id, "--json", env={"CORRAL_DB": scene.db})
    return json.loads(shown.stdout, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))


def _runs(scene: Scene, task_id: str) -> list[dict]:
    listed = run("runs", "--task", task_id, "--json", env={"CORRAL_DB": scene.db})
    return json.loads(listed.stdout)


def test_a_nul_in_a_commands_stderr_is_stored_as_u_fffd_and_fails_the_task_once(edge):
    """stderr holding NUL: the failure is recorded once (NUL shown as U+FFFD), the attempt
    counted and the run finished, on PostgreSQL too (whose text cannot hold NUL)."""
    _run_once(edge, "--exec", "sh -c 'printf \"bad\\000byte\" >&2; exit 1'", code=1)
    task = _show(edge, edge.ready)
    assert ("ready", 1) == (task["status"], task["attempts"])
    assert "exited with status 1: bad\ufffdbyte" == task["last_error"]
    assert [("failed", "exited with status 1: bad\ufffdbyte")] == [
        (r["outcome"], r["error"]) for r in _runs(edge, edge.ready)
    ]


def test_a_nul_in_a_prompt_given_as_an_argument_is_passed_as_u_fffd(edge, tmp_path):
    """--prompt-arg with NUL in the prompt (an argv cannot hold one): the command runs and
    gets U+FFFD in its place; the run records the same prompt."""
    template = tmp_path / "prompt.txt"
    template.write_bytes(b"do\x00it: ${title}")
    seen = tmp_path / "seen"
    script = f'printf %s "$2" > {seen}'  # $1 is the `--` before the prompt
    _run_once(edge, "--exec", f"sh -c '{script}' sh", "--prompt-arg", "--prompt-template",
              str(template))  # fmt: skip
    assert "do\ufffdit: a" == seen.read_text(encoding="utf-8")
    assert "done" == _show(edge, edge.ready)["status"]
    assert ["do\ufffdit: a"] == [r["prompt"] for r in _runs(edge, edge.ready)]


def test_a_function_result_the_stores_cannot_hold_fails_the_task(edge, tmp_path):
    """A --call function that returns NaN in its output: the task fails (naming `result`)
    instead of being stored done with JSON no reader can parse."""
    (tmp_path / "nan_job.py").write_text(
        "def handle(task, ctx):\n    return {'success': True, 'output': {'x': float('nan')}}\n"
    )
    _run_once(edge, "--call", "nan_job:handle", cwd=tmp_path, code=1)
    task = _show(edge, edge.ready)
    assert ("ready", None) == (task["status"], task["result"])
    assert task["last_error"].startswith("result: expected a result every store holds alike")
