"""Hostile input to every command and flag, walked from the CLI's own parser definition.

Each command's parser is built as `corral` builds it (cli/argtree.py, from the command
tables), and every argument that takes a value, positional or flag, is fed each value of
`FAMILIES` in turn (the other arguments at working values), so a flag added tomorrow is
walked the day it is added. For every case: an exit code in the documented set (0, 1, 2:
docs/cli.md), no traceback, an error as one line (after argparse's usage, for a usage
error), no escape sequence echoed raw, and nothing written when the command refused.

The cases run in this process through the CLI's `main` with its output captured, many per
test, on SQLite, on PostgreSQL, and over HTTP against a real `corral serve` process. A
command that would run until stopped (`worker start`, `orchestrator start`, `serve`) is
stopped where it would start: `Context.long_running`, which each calls once every flag is
checked, raises `Started` here, and the case counts as accepted.

About 5,100 cases on SQLite and 3,800 each on PostgreSQL and over HTTP (`--namespace`, read
in one place, is walked on every command on SQLite, on four elsewhere): under a minute of
CPU in all; each test's failure names the cases and the seconds its walk took.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import argparse
import contextlib
import io
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.server.conftest import Server

from corral import open_store
from corral.cli import argtree
from corral.cli.commands import Command, all_commands
from corral.cli.context import Context
from corral.cli.main import main
from corral.foundation.errors import LINE_CHARS
from corral.model.schedules import NewSchedule
from corral.usecases import messages, schedules

from .test_bad_input import Scene, dump, make_scene

pytestmark = [pytest.mark.slow, pytest.mark.hostile]

TABLES = ("tasks", "task_deps", "workers", "claims", "events", "runs", "messages", "schedules")
# An error line is cut (errors.LINE_CHARS), with its `corral: error: ` and argparse's
# `(see ... --help)` around it, whatever was given.
LONGEST_LINE = LINE_CHARS + 100
EXIT_CODES = {0, 1, 2}  # docs/cli.md: ok, refused by the current state, invalid input
# Arguments whose documented codes add 3: a `--require`d tool missing from PATH.
EXIT_CODES_OF = {"require": {0, 1, 2, 3}}


def nested(depth: int) -> str:
    """A JSON object nested `depth` deep (the object itself is the first level)."""
    return '{"a": ' * depth + "1" + "}" * depth


FAMILIES: dict[str, str] = {
    "empty": "",
    "blank": "   ",
    "NUL": "a\x00b",
    "escape": "\x1b[2J",
    "newline": "a\nb",
    "dots": "..",
    "parent path": "../x",
    "relative": "../x:f",
    "100 KB": "a" * 100_000,
    "huge number": "9" * 30,
    "past int64": str(2**63),
    "negative": "-1",
    "other digits": "\u0663",  # ARABIC-INDIC DIGIT THREE
    "first day": "0001-01-01",
    "last day": "9999-12-31",
    "past the calendar": "10000-01-01",
    "JSON 64 deep": nested(64),
    "JSON 65 deep": nested(65),
}

# Working values of required arguments, by their destination (a positional's name, or a
# flag's); {ready} and the like are the scene's ids. A command's own wins (BASE_OF).
BASE = {
    "title": "a title",
    "id": "{ready}",
    "worker": "{worker}",
    "text": "an answer",
    "queue": "q",
    "name": "n",
    "recipient": "w1",
    "until": "1m",
    "error": "boom",
    "role": "viewer",
    "note": "a note",
    "to": "w1",
    "type": "t",
    "cron": "0 0 * * * *",
    "from_": "2030-01-01T00:00:00Z",
}
RUNNING = "{running}"
BASE_OF: dict[tuple[str, str], str] = {
    **{(c, "id"): RUNNING for c in ("claim:renew", "claim:release", "defer", "done", "fail")},
    ("submit", "id"): RUNNING,
    **{
        (f"worker {c}", "id"): "{worker}"
        for c in ("heartbeat", "deregister", "drain", "stop", "logs", "show", "status", "attach")
    },
    **{
        (f"schedule {c}", "id"): "s1"
        for c in ("show", "preview", "pause", "resume", "trigger", "backfill", "remove")
    },
    ("schedule add", "id"): "s-new",
    ("schedule backfill", "to"): "2030-01-02T00:00:00Z",
    ("worker start", "name"): "hostile",
    ("msg ack", "id"): "1",
    ("provider set", "name"): "claude",
}
# Beside the required arguments: what makes a command reach its flags' checks.
EXTRA = {"worker start": ["--exec", "true"], "orchestrator start": ["--exec", "true"]}
# `--db` chooses the store under test; `--help` and `--version` take no value.
SKIPPED = {"db", "help", "version"}


class Started(BaseException):
    """A command that would run until stopped got as far as starting: it accepted its input."""


@dataclass(frozen=True)
class Case:
    """One command line: the argument under test and the family of its value."""

    command: str
    target: str
    family: str
    argv: list[str]


def value_actions(command: Command) -> list[argparse.Action]:
    """The arguments of `command` that take a value, as its parser defines them."""
    _, parsers = argtree.build(list(command.words))
    leaf = parsers[command.words]
    return [
        a
        for a in leaf._actions
        if a.nargs != 0 and a.dest not in SKIPPED and not isinstance(a, argparse._HelpAction)
    ]


def cases(command: Command, scene: Scene) -> Iterator[Case]:
    """Every argument of `command` that takes a value, given each family in turn."""
    words = " ".join(command.words)
    actions = value_actions(command)
    for target in actions:
        for family, value in FAMILIES.items():
            argv = list(command.words)
            for action in actions:
                given = value if action is target else _base(words, action, scene)
                if given is None:
                    continue
                argv += [given] if not action.option_strings else [f"{_flag(action)}={given}"]
            yield Case(words, target.dest, family, [*argv, *EXTRA.get(words, [])])


def _flag(action: argparse.Action) -> str:
    return next(f for f in action.option_strings if f.startswith("--"))


def _base(words: str, action: argparse.Action, scene: Scene) -> str | None:
    """The working value of an argument other than the one under test: None to leave it out."""
    if action.option_strings and not action.required:
        return None
    if not action.option_strings and action.nargs == "?":
        return None
    raw = BASE_OF.get((words, action.dest), BASE.get(action.dest, "x"))
    for name in ("ready", "running", "done", "worker"):
        raw = raw.replace(f"{{{name}}}", getattr(scene, name))
    return raw


def run_in_process(argv: list[str]) -> tuple[int, str, str]:
    """`corral ARGV` through the CLI's main: exit code, stdout, stderr."""
    # Files with a buffer, as sys.stdout is: `logs` writes a transcript's bytes to it.
    out, err = (io.TextIOWrapper(io.BytesIO(), encoding="utf-8") for _ in "12")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except Started:
            code = 0
        except SystemExit as exc:  # argparse's usage errors exit, as they do in a process
            code = exc.code if isinstance(exc.code, int) else 1
    return code, _text(out), _text(err)


def _text(written: io.TextIOWrapper) -> str:
    written.flush()
    raw: io.BytesIO = written.buffer  # type: ignore[assignment]
    return raw.getvalue().decode("utf-8", "replace")


def problems_of(case: Case, code: int, out: str, err: str) -> list[str]:
    """What is wrong with how `case` ended, if anything."""
    found = []
    if code not in EXIT_CODES_OF.get(case.target, EXIT_CODES):
        found.append(f"exit {code}")
    if "Traceback" in err:
        found.append("a traceback")
    if "\x1b" in out or "\x1b" in err:
        found.append("an escape sequence echoed raw")
    if code != 0:
        *usage, last = err.splitlines() or [""]
        if not last.startswith("corral: error: "):
            found.append("no error line")
        if any(not (line.startswith("usage:") or line.startswith(" ")) for line in usage):
            found.append("an error of more than one line")
        if len(last) > LONGEST_LINE:
            found.append(f"an error line of {len(last)} characters")
    return found


class Tables:
    """Every row of the scene's tables, read without writing (one connection kept for
    PostgreSQL: a connection per case would cost more than the case)."""

    def __init__(self, db: str) -> None:
        self.db = db
        self._pg = None
        if db.startswith("postgresql://"):
            import psycopg

            self._pg = psycopg.connect(db, autocommit=True)

    def rows(self) -> dict[str, list[tuple[object, ...]]]:
        """Each table's rows, sorted."""
        if self._pg is None:
            return dump(self.db, TABLES)
        return {
            t: sorted(self._pg.execute(f"SELECT * FROM {t}").fetchall(), key=repr) for t in TABLES
        }

    def close(self) -> None:
        if self._pg is not None:
            self._pg.close()


def walk(command: Command, scene: Scene, tables: Tables, *, common: bool) -> tuple[list[str], int]:
    """Run every case of `command` against `scene` (`common`: `--namespace` too): the
    problems found, and the cases run."""
    problems: list[str] = []
    before = tables.rows()
    count = 0
    for case in cases(command, scene):
        if case.target in COMMON and not common:
            continue
        count += 1
        try:
            code, out, err = run_in_process(case.argv)
        except Exception as exc:  # a traceback: what the walk looks for
            problems.append(f"{case.command} {case.target} [{case.family}]: {exc!r:.300}")
            before = tables.rows()
            continue
        after = tables.rows()
        found = problems_of(case, code, out, err)
        if code != 0 and before != after:
            found.append("a write before refusing")
        before = after
        if found:
            shown = (err.strip().splitlines() or [""])[-1][:200]
            problems.append(
                f"{case.command} {case.target} [{case.family}]: exit {code}, "
                f"{', '.join(found)}: {shown!r}"
            )
    return problems, count


def prepared(db: str) -> Scene:
    """The scene of test_bad_input, plus a schedule `s1` and a message for `w1`."""
    scene = make_scene(db)
    with open_store(db) as store:
        spec = NewSchedule(id="s1", cron="0 0 * * * *", template={"title": "s"})
        schedules.add_schedule(store, spec)
        messages.send(store, sender="w1", to="w1", type="t", body={})
    return scene


@pytest.fixture(autouse=True)
def stopped_where_it_would_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Long-running commands end as they start; every case runs in an empty folder with no
    CORRAL_* variable but those the test sets."""

    def started() -> None:
        raise Started

    monkeypatch.setattr(Context, "long_running", staticmethod(started))
    for name in [n for n in os.environ if n.startswith("CORRAL_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    yield


COMMANDS = all_commands()
COMMAND_IDS = [" ".join(c.words) for c in COMMANDS]
# The options every command takes (argtree's `common` parent) are read in one place
# (cli/context.py): walked on every command on SQLite, on a few over the other stores.
COMMON = {"namespace"}
COMMON_ON_EVERY_STORE = {"add", "list", "claim:next", "worker register"}


def _check(command: Command, scene: Scene, db: str, *, common: bool) -> None:
    tables = Tables(db)
    started = time.monotonic()
    try:
        problems, count = walk(command, scene, tables, common=common)
    finally:
        tables.close()
    took_s = time.monotonic() - started
    shown = "\n".join(problems[:40])
    assert [] == problems, f"{len(problems)} of {count} cases ({took_s:.1f} s):\n{shown}"


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_every_argument_takes_hostile_values_in_one_line(
    command: Command,
    dialect: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each value-taking argument of each command, fed each hostile family: a documented exit
    code, one error line without a traceback or a raw escape, and no write when refused."""
    postgres = dialect == "postgresql"
    db = str(request.getfixturevalue("pg_url")) if postgres else str(tmp_path / "corral.db")
    scene = prepared(db)
    monkeypatch.setenv("CORRAL_DB", db)
    words = " ".join(command.words)
    _check(command, scene, db, common=not postgres or words in COMMON_ON_EVERY_STORE)


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str, Scene]]:
    """`corral serve` as a process on a SQLite store of the scene, and an operator token."""
    server = Server(tmp_path_factory.mktemp("served"))
    scene = prepared(server.db)
    secret = server.token("operator")
    server.start()
    try:
        yield server, secret, scene
    finally:
        server.close()


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_every_argument_takes_hostile_values_over_http(
    command: Command, http_server: tuple[Server, str, Scene], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same walk with the store behind `corral serve`: what the server refuses is one
    line and a documented exit code too, and writes nothing."""
    server, secret, scene = http_server
    monkeypatch.setenv("CORRAL_DB", server.url)
    monkeypatch.setenv("CORRAL_TOKEN", secret)
    _check(command, scene, server.db, common=" ".join(command.words) in COMMON_ON_EVERY_STORE)


def test_the_walk_reaches_every_argument_that_takes_a_value() -> None:
    """Every value-taking argument of every command is walked, with every family: a flag
    added tomorrow is in the walk without a line here."""
    scene = Scene("", "t-1", "t-2", "t-3", "w-1", 1, 1, 1)
    walked = {(c.command, c.target, c.family) for cmd in COMMANDS for c in cases(cmd, scene)}
    declared = {(" ".join(c.words), a.dest) for c in COMMANDS for a in value_actions(c)}
    assert {(*d, f) for d in declared for f in FAMILIES} == walked
    assert {("add", "run_after"), ("worker start", "prompt_template")} <= declared


# The findings of issue 29 the families above reach only as "a documented exit code": each
# pinned to the answer it must give.


def _store(dialect: str, request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Scene]:
    postgres = dialect == "postgresql"
    db = str(request.getfixturevalue("pg_url")) if postgres else str(tmp_path / "corral.db")
    return db, prepared(db)


def _rows(db: str) -> dict[str, list[tuple[object, ...]]]:
    tables = Tables(db)
    try:
        return tables.rows()
    finally:
        tables.close()


def _refused(argv: list[str], *names: str) -> None:
    code, out, err = run_in_process(argv)
    assert (2, "") == (code, out), err
    assert 1 == err.count("\n") and err.startswith("corral: error: "), err
    for name in names:
        assert name in err


EDGES = [
    ["add", "x", "--run-after", "9999-12-31T23:00:00-05:00"],
    ["add", "x", "--run-after", "0001-01-01T00:00:00+05:00"],
    ["defer", "{running}", "--until", "9999-12-31T23:59:59Z"],
    ["schedule", "preview", "--cron", "0 0 0 * * *", "--from", "9999-12-31T00:00:00Z"],
    ["schedule", "backfill", "s1", "--from", "2030-01-01T00:00:00Z", "--to", "9999-12-31T12:00Z"],
]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_an_instant_past_the_calendar_is_refused_and_the_store_still_reads(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An instant that would read back past year 9999 (or before year 1) in UTC is exit 2
    before anything is written, so `list` works for everyone afterwards."""
    db, scene = _store(dialect, request, tmp_path)
    monkeypatch.setenv("CORRAL_DB", db)
    before = _rows(db)
    for argv in EDGES:
        _refused([a.replace("{running}", scene.running) for a in argv], "0001-01-02 to 9999-12-30")
    assert before == _rows(db)
    assert 0 == run_in_process(["add", "x", "--run-after", "9999-12-30T00:00:00Z"])[0]
    assert 0 == run_in_process(["list"])[0]


PAST_THE_CALENDAR = {"sqlite": "1e15", "postgresql": "'10000-01-01'"}


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_row_written_past_the_calendar_reads_as_its_edge(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row an older corral or a hand wrote with an instant past year 9999 lists, shows and
    explains itself, its instant shown as the calendar's last day, not a traceback."""
    db, scene = _store(dialect, request, tmp_path)
    monkeypatch.setenv("CORRAL_DB", db)
    late = PAST_THE_CALENDAR[dialect]
    sql = f"UPDATE tasks SET run_after = {late} WHERE id = '{scene.ready}'"
    if dialect == "postgresql":
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(sql)  # type: ignore[arg-type]
    else:
        import sqlite3

        with contextlib.closing(sqlite3.connect(db)) as conn, conn:
            conn.execute(sql)
    for argv in (["list"], ["ready"], ["why", scene.ready], ["show", scene.ready]):
        code, out, err = run_in_process(argv)
        assert (0, "") == (code, err), argv
    assert "run_after:        9999-12-30T23:59:59.999999+00:00" in out


def test_json_nested_64_deep_is_taken_and_65_refused_on_every_surface(
    http_server: tuple[Server, str, Scene], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 levels, the documented limit, is taken locally and over HTTP alike (a request body
    may wrap a document in its own levels); 65 is exit 2 on both."""
    server, secret, _ = http_server
    local = str(tmp_path / "corral.db")
    prepared(local)
    for db, token in ((local, None), (server.url, secret)):
        monkeypatch.setenv("CORRAL_DB", db)
        if token is not None:
            monkeypatch.setenv("CORRAL_TOKEN", token)
        for argv in (
            ["add", "x", "--payload"],
            ["msg", "send", "--to", "w1", "--type", "t", "--body"],
        ):
            assert 0 == run_in_process([*argv, nested(64)])[0], (db, argv)
            _refused([*argv, nested(65)], "64 deep")


def test_a_prompt_template_that_is_no_file_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`/dev/zero`, a FIFO no one writes to, a folder and a 10 MB file are each exit 2 in a
    line, at once: none is read without end or waited on."""
    monkeypatch.setenv("CORRAL_DB", str(tmp_path / "corral.db"))
    prepared(str(tmp_path / "corral.db"))
    fifo, big = tmp_path / "fifo", tmp_path / "big.txt"
    os.mkfifo(fifo)
    big.write_bytes(b"x" * 10_000_000)
    for template in ("/dev/zero", str(fifo), str(tmp_path), str(big)):
        argv = ["worker", "start", "--name", "w", "--exec", "true", "--prompt-template", template]
        _refused(argv, "prompt_template")


@pytest.mark.parametrize("argv", [["done", "{running}"], ["claim:renew", "{running}", "{worker}"]])
def test_an_empty_token_is_a_bad_token_not_operator_mode(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--token "$UNSET"` is exit 2 and the claim stands: an explicit token is never read as
    no token at all (operator mode), whatever CORRAL_CLAIM_TOKEN says."""
    db = str(tmp_path / "corral.db")
    scene = prepared(db)
    monkeypatch.setenv("CORRAL_DB", db)
    monkeypatch.setenv("CORRAL_CLAIM_TOKEN", str(scene.token))
    before = _rows(db)
    filled = [a.replace("{running}", scene.running).replace("{worker}", scene.worker) for a in argv]
    _refused([*filled, "--token", ""], "token")
    assert before == _rows(db)


LATE = "9999-12-31T23:00:00-05:00"  # 10000-01-01 in UTC
RETRY = {"max_attempts": 3, "retry_base_s": 1.0, "actor": "operator"}
REQUESTS = [
    ("tasks.enqueue", {"spec": {"title": "x", "run_at": LATE}, **RETRY}),
    ("providers.park_provider", {"name": "claude", "until": LATE, "reason": "r", "actor": "o"}),
    (
        "schedules.fire_schedule",
        {"schedule_id": "s1", "fire_times": ["0001-01-01T00:00Z"], **RETRY},
    ),
]


@pytest.mark.parametrize(("operation", "body"), REQUESTS, ids=[r[0] for r in REQUESTS])
def test_an_instant_past_the_calendar_in_a_request_is_422_naming_it(
    operation: str, body: dict[str, object], http_server: tuple[Server, str, Scene]
) -> None:
    """A store operation sent an instant past the calendar answers 422 naming its field, not
    500, and the store still lists."""
    server, secret, _ = http_server
    status, answer = server.call("POST", f"/api/store/{operation}", secret, _json(body))
    assert 422 == status, answer
    assert "0001-01-02 to 9999-12-30" in answer["error"] and "\n" not in answer["error"]
    assert 200 == server.call("GET", "/api/tasks", secret)[0]


def _json(value: object) -> bytes:
    import json

    return json.dumps(value).encode()


@pytest.mark.parametrize("queue", ["a b", "", "\x1b[2J", "q" * 101])
def test_a_config_file_limiting_a_queue_no_task_can_be_in_is_refused(
    queue: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[queues."a b"]` names a queue no task can be in (queue names have no spaces): every
    command reading the file, `config show` first, is exit 2 in a line."""
    config = tmp_path / "config.toml"
    config.write_text(f"[queues.{_toml_key(queue)}]\nmax_ready = 3\n", encoding="utf-8")
    monkeypatch.setenv("CORRAL_DB", str(tmp_path / "corral.db"))
    monkeypatch.setenv("CORRAL_CONFIG", str(config))
    _refused(["config", "show"], "queue names")


def _toml_key(name: str) -> str:
    import json

    return json.dumps(name)  # a TOML basic string is a JSON string
