"""The CLI's conventions: finding the store, global flags, worker-aware listings, recorded pids."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, corral_in

from corral.foundation.ids import TASK_PREFIX, new_id


def test_no_store_outside_a_project_is_an_error_and_creates_nothing(tmp_path: Path) -> None:
    """`corral list` where no store exists exits 3 with one line and leaves no .corral behind."""
    result = corral_in(tmp_path, "list")
    assert (3, 1) == (result.returncode, len(result.stderr.splitlines()))
    assert "run `corral init`" in result.stderr
    assert [] == list(tmp_path.iterdir())


def test_init_creates_the_store_and_subfolders_find_it(tmp_path: Path) -> None:
    """After `corral init`, commands run in any folder below use that store, as git finds .git."""
    assert 0 == corral_in(tmp_path, "init").returncode
    below = tmp_path / "a" / "b"
    below.mkdir(parents=True)
    task_id = corral_in(below, "add", "found from below").stdout.strip()
    listed = json.loads(corral_in(tmp_path, "list", "--json").stdout)
    assert [task_id] == [t["id"] for t in listed]
    assert (tmp_path / ".corral" / "corral.db").exists()


def test_json_may_come_before_the_command(cli) -> None:  # type: ignore[no-untyped-def]
    """`corral --json list` prints JSON like `corral list --json`."""
    cli("add", "one")
    assert json.loads(cli("list", "--json").out) == json.loads(cli("--json", "list").out)


def test_json_is_one_line_in_a_pipe(tmp_path: Path) -> None:
    """Piped, `--json` prints the whole document on one line (json's C encoder)."""
    corral_in(tmp_path, "init")
    corral_in(tmp_path, "add", "one")
    corral_in(tmp_path, "add", "two")
    out = corral_in(tmp_path, "ready", "--json").stdout
    assert 1 == len(out.splitlines())
    assert ["one", "two"] == sorted(t["title"] for t in json.loads(out))


def test_json_is_indented_on_a_terminal(tmp_path: Path) -> None:
    """On a terminal, `--json` prints indented JSON that parses to the piped document."""
    corral_in(tmp_path, "init")
    corral_in(tmp_path, "add", "one")
    piped = json.loads(corral_in(tmp_path, "ready", "--json").stdout)
    main, child = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    proc = subprocess.Popen([CORRAL, "ready", "--json"], cwd=tmp_path, env=env, stdout=child)
    os.close(child)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once the child has closed the terminal
        while chunk := os.read(main, 65536):
            chunks.append(chunk)
    os.close(main)
    assert 0 == proc.wait(timeout=60)
    shown = b"".join(chunks).decode().replace("\r\n", "\n")
    assert shown.startswith('[\n  {\n    "id": ')
    assert piped == json.loads(shown)


def test_ready_for_a_worker_lists_only_what_it_may_claim(cli) -> None:  # type: ignore[no-untyped-def]
    """`ready --worker W` leaves out other kinds and tasks assigned to someone else."""
    worker = cli("worker", "register", "--name", "coder", "--kind", "code").out.strip()
    mine = cli("add", "mine", "--kind", "code").out.strip()
    cli("add", "a review", "--kind", "review")
    cli("add", "someone else's", "--kind", "code", "--priority", "9", "--assignee", "other")
    named = cli("add", "assigned by name", "--kind", "code", "--assignee", "coder").out.strip()
    listed = json.loads(cli("ready", "--worker", worker, "--json").out)
    assert [mine, named] == [t["id"] for t in listed]


def test_worker_list_keeps_workers_in_any_of_the_statuses_asked(cli) -> None:  # type: ignore[no-untyped-def]
    """`worker list --status S ...` takes several statuses, as `list --status` does."""
    idle = cli("worker", "register", "--name", "idle-one").out.strip()
    cli("worker", "heartbeat", idle)  # starting until its first heartbeat
    gone = cli("worker", "register", "--name", "gone", "--pid", "1").out.strip()
    draining = cli("worker", "register", "--name", "draining", "--pid", "2").out.strip()
    cli("worker", "deregister", gone)
    cli("worker", "drain", draining)
    listed = json.loads(cli("worker", "list", "--status", "idle", "draining", "--json").out)
    assert {idle, draining} == {w["id"] for w in listed}
    again = json.loads(
        cli("worker", "list", "--status", "offline", "--status", "idle", "--json").out
    )
    assert {idle, gone} == {w["id"] for w in again}


def test_worker_list_takes_the_registry_statuses_of_seed_002(cli) -> None:  # type: ignore[no-untyped-def]
    """ONLINE (or online): accepting work; DRAINING; OFFLINE: not available, whether gone,
    dead or silent. corral's own `offline` stays its own: deregistered."""
    idle = cli("worker", "register", "--name", "idle-one").out.strip()
    starting = cli("worker", "register", "--name", "starting", "--pid", "3").out.strip()
    cli("worker", "heartbeat", idle)
    gone = cli("worker", "register", "--name", "gone", "--pid", "1").out.strip()
    draining = cli("worker", "register", "--name", "draining", "--pid", "2").out.strip()
    cli("worker", "deregister", gone)
    cli("worker", "drain", draining)

    def listed(*statuses: str) -> set[str]:
        shown = cli("worker", "list", "--status", *statuses, "--json")
        assert 0 == shown.code, shown.err
        return {w["id"] for w in json.loads(shown.out)}

    assert {idle, starting} == listed("ONLINE") == listed("online")
    assert {draining} == listed("DRAINING")
    assert {gone} == listed("OFFLINE") == listed("offline")
    assert {idle, starting, draining} == listed("ONLINE", "draining")
    refused = cli("worker", "list", "--status", "asleep")
    assert (2, "status") == (refused.code, refused.err.split(":")[2].strip())


def test_a_bash_loop_registering_through_a_subshell_records_its_own_pid(
    cli,  # type: ignore[no-untyped-def]
) -> None:
    """`$(corral worker register ...)` records the script's pid, not the short-lived subshell's."""
    script = f'X=$({CORRAL} worker register --name a --json | jq -r .worker.pid); echo "$X $$"'
    env = {**os.environ, "CORRAL_DB": cli.db}
    out = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout.split()
    assert out[1] == out[0]


@pytest.mark.parametrize(
    "register",
    [
        # a pipeline: bash forks a subshell for `$(...)`, which forks corral and jq
        f'X=$({CORRAL} worker register --name w --json | jq -r .worker.pid); echo "$BASHPID $X"',
        # a simple command: the `$(...)` subshell execs corral itself
        f'X=$({CORRAL} worker register --name w --json); echo "$BASHPID $(jq .worker.pid <<<$X)"',
    ],
)
def test_each_background_subshell_of_a_script_records_its_own_pid(
    cli,  # type: ignore[no-untyped-def]
    register: str,
) -> None:
    """`( ... ) &` subshells (seed 000's parallel workers) each record their own pid, not
    the script's: a subshell whose output its parent does not read is a loop of its own."""
    script = f"for i in 1 2 3; do ( {register} ) & done; wait"
    env = {**os.environ, "CORRAL_DB": cli.db}
    out = subprocess.run(
        ["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout.splitlines()
    pairs = [line.split() for line in out]
    assert [(own, own) for own, _ in pairs] == [(own, recorded) for own, recorded in pairs]
    assert 3 == len({own for own, _ in pairs})


def test_show_renders_structured_values_as_json(cli) -> None:  # type: ignore[no-untyped-def]
    """`show` prints payloads and flags as JSON, not as Python reprs."""
    task_id = cli("add", "x", "--payload", '{"steps": ["a", "b"]}', "--review").out.strip()
    shown = cli("show", task_id).out
    assert 'payload:          {"steps": ["a", "b"]}' in shown
    assert "requires_review:  true" in shown


def test_init_in_a_subfolder_of_a_project_makes_a_store_there(tmp_path: Path) -> None:
    """`corral init` always creates `./.corral/corral.db`, even below another project."""
    assert 0 == corral_in(tmp_path, "init").returncode
    nested = tmp_path / "nested"
    nested.mkdir()
    assert str(nested / ".corral" / "corral.db") in corral_in(nested, "init").stdout
    assert (nested / ".corral" / "corral.db").exists()


def test_claim_release_of_a_task_its_agent_finished_is_a_clean_no_op(cli) -> None:  # type: ignore[no-untyped-def]
    """The agent ran `done`; the loop's `claim:release` after it exits 0 and changes nothing."""
    worker = cli("worker", "register", "--name", "w1", "--pid", "1").out.strip()
    task = cli("add", "easy").out.strip()
    assert 0 == cli("claim", task, worker).code
    assert 0 == cli("done", task).code
    before = cli("show", task, "--json").out
    released = cli("claim:release", task, worker)
    assert (0, f"{task} is done already: nothing to release\n", "") == (
        released.code,
        released.out,
        released.err,
    )
    assert before == cli("show", task, "--json").out


def test_claim_release_counts_the_attempt_unless_no_attempt(cli) -> None:  # type: ignore[no-untyped-def]
    """`claim:release` after running: the attempt counts and the retry waits its backoff;
    `--no-attempt` (a worker on its way out): ready at once, the attempt not counted."""
    worker = cli("worker", "register", "--name", "w1", "--pid", "1").out.strip()
    ran, unrun = (cli("add", title, "--backoff", "1h").out.strip() for title in ("ran", "unrun"))
    assert 0 == cli("claim", ran, worker).code
    counted = cli("claim:release", ran, worker)
    assert (0, True) == (
        counted.code,
        counted.out.startswith(f"released {ran}: ready, retry after "),
    )
    assert 0 == cli("claim", unrun, worker).code
    plain = json.loads(cli("claim:release", unrun, worker, "--no-attempt", "--json").out)
    ready_now = json.loads(cli("ready", "--json").out)
    counted_task = json.loads(cli("show", ran, "--json").out)
    assert ((1, "released without finishing"), (0, None), [unrun]) == (
        (counted_task["attempts"], counted_task["last_error"]),
        (plain["attempts"], plain["last_error"]),
        [t["id"] for t in ready_now],
    )


def test_show_of_another_namespaces_task_is_not_found(tmp_path: Path) -> None:
    """`corral --namespace a show B_TASK` answers as for an id never issued: one line, the
    same exit code and words; namespace b still finds it."""
    corral_in(tmp_path, "init")
    b_task = corral_in(tmp_path, "--namespace", "b", "add", "b's own").stdout.strip()
    never_issued = new_id(TASK_PREFIX)
    foreign = corral_in(tmp_path, "--namespace", "a", "show", b_task)
    never = corral_in(tmp_path, "--namespace", "a", "show", never_issued)
    assert (never.returncode, 1) == (foreign.returncode, len(foreign.stderr.splitlines()))
    assert never.stderr.replace(never_issued, "ID") == foreign.stderr.replace(b_task, "ID")
    found = corral_in(tmp_path, "--namespace", "b", "show", b_task, "--json")
    assert b_task == json.loads(found.stdout)["id"]
