"""Remote workers: runner processes that reach the store only through `corral serve`.

Each test starts a real server process and real `corral worker start` processes whose
CORRAL_DB is the server's URL and CORRAL_TOKEN a worker token, on both stores behind the
server. The server is SIGKILLed and started again under running workers; tokens are
held to their queues and their own claims; the CLI keeps its exit codes over HTTP.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from tests.server.conftest import CORRAL, Server

from corral import EventFilter, open_store

# Each run takes a moment, writes its task's id once to $OUT, and prints it twice around
# the pause (its transcript, which the server must end up holding whole).
WRITE_ID = (
    "import os,time; t=os.environ['CORRAL_TASK_ID']; print('begin', t, flush=True);"
    " time.sleep(0.2); print('end', t); open(os.environ['OUT'], 'a').write(t + '\\n')"
)
TASK = f'{sys.executable} -c "{WRITE_ID}"'


class Hosts:
    """Other hosts for remote runners: network namespaces, each with its own hostname and a
    veth link to this one, when the machine allows making them (root, `ip netns`); else
    this host on loopback. `prefix(i)` runs a command on host i; `url` is the server as
    every host reaches it."""

    def __init__(self, count: int) -> None:
        self.names: list[str] = []
        self.server_ip = "127.0.0.1"
        tag = secrets.token_hex(2)
        try:
            for i in range(count):
                self._make(f"corral-{tag}-{i}", f"cr{tag}{i}", subnet=10 + i)
        except (OSError, subprocess.CalledProcessError):
            self.close()
            self.names = []
            return
        self.server_ip = "0.0.0.0"  # noqa: S104 - reached over each namespace's veth

    def _make(self, namespace: str, link: str, *, subnet: int) -> None:
        def ip(*args: str) -> None:
            subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

        ip("netns", "add", namespace)
        self.names.append(namespace)
        ip("link", "add", f"{link}a", "type", "veth", "peer", "name", f"{link}b")
        ip("link", "set", f"{link}b", "netns", namespace)
        ip("addr", "add", f"10.231.{subnet}.1/30", "dev", f"{link}a")
        ip("link", "set", f"{link}a", "up")
        ip(
            "netns",
            "exec",
            namespace,
            "ip",
            "addr",
            "add",
            f"10.231.{subnet}.2/30",
            "dev",
            f"{link}b",
        )
        ip("netns", "exec", namespace, "ip", "link", "set", f"{link}b", "up")

    def prefix(self, i: int) -> list[str]:
        if not self.names:
            return []
        name = self.names[i]
        return [
            "ip",
            "netns",
            "exec",
            name,
            "unshare",
            "--uts",
            "sh",
            "-c",
            f'hostname {name} && exec "$0" "$@"',
        ]

    def url(self, server: Server, i: int) -> str:
        return f"http://10.231.{10 + i}.1:{server.port}" if self.names else server.url

    def close(self) -> None:
        for name in self.names:  # the veth pair goes with its namespace
            subprocess.run(["ip", "netns", "del", name], check=False, capture_output=True)


def remote_env(server: Server, token: str, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return {**env, "CORRAL_DB": server.url, "CORRAL_TOKEN": token, **more}


def remote(server: Server, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`corral ARGS` on another host, as far as the store knows: through the server only."""
    return subprocess.run(
        [*CORRAL, *args],
        env=remote_env(server, token),
        cwd=server.folder,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def start_worker(
    server: Server,
    token: str,
    name: str,
    *args: str,
    prefix: tuple[str, ...] | list[str] = (),
    url: str | None = None,
) -> subprocess.Popen[bytes]:
    env = remote_env(server, token, OUT=str(server.folder / "done.txt"), CORRAL_ENV_ALLOW="OUT")
    if url is not None:
        env["CORRAL_DB"] = url
    return server.spawn([*prefix, *CORRAL, "worker", "start", "--name", name, *args], name, env)


def wait_for(check, timeout_s: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def statuses(server: Server) -> dict[str, str]:
    listed = json.loads(server.corral("list", "--json", "--limit", "1000").stdout)
    return {t["id"]: t["status"] for t in listed}


def test_remote_runners_finish_every_task_once_across_a_server_kill_and_restart(served):
    """Two remote runners, 24 tasks; the server is SIGKILLed mid-run and started again: the
    runners keep their tasks, re-send what they could not report, and every task is done
    exactly once (one task.completed each, each task's command ran once), and the server
    holds each run's transcript whole (`corral logs` from the remote side)."""
    worker_token, operator = served.token("worker"), served.token("operator")
    hosts = Hosts(2)
    try:
        _kill_and_restart_under_remote_runners(served, hosts, worker_token, operator)
    finally:
        hosts.close()


def _kill_and_restart_under_remote_runners(
    served: Server, hosts: Hosts, worker_token: str, operator: str
) -> None:
    served.start("--host", hosts.server_ip)
    ids = [remote(served, operator, "add", f"task {n}").stdout.strip() for n in range(24)]
    for i, name in enumerate(("a", "b")):
        start_worker(
            served,
            worker_token,
            name,
            "--exec",
            TASK,
            "--concurrency",
            "2",
            prefix=hosts.prefix(i),
            url=hosts.url(served, i),
        )
    done_file = served.folder / "done.txt"
    wait_for(lambda: done_file.exists() and len(done_file.read_text().split()) >= 6, what="work")
    served.proc.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
    served.proc.wait()  # type: ignore[union-attr]
    time.sleep(1.0)  # the runners meet a dead server: their exchanges and beats fail
    served.start("--host", hosts.server_ip)
    wait_for(lambda: set(statuses(served).values()) == {"done"}, 90, "every task done")
    with open_store(served.env["CORRAL_DB"]) as store:
        completed = [
            e.task_id
            for e in store.events.list_events(EventFilter(limit=10_000))
            if e.name == "task.completed"
        ]
    assert sorted(ids) == sorted(completed)
    assert sorted(ids) == sorted(done_file.read_text().split())
    runs = json.loads(remote(served, operator, "runs", "--json", "--limit", "100").stdout)
    for run in (r for r in runs if r["outcome"] == "done"):
        shown = remote(served, operator, "logs", run["id"])
        task = run["task_id"]
        assert (0, f"begin {task}\nend {task}\n") == (shown.returncode, shown.stdout), shown.stderr
    if hosts.names:  # each runner saw its own host name
        listed = json.loads(served.corral("worker", "list", "--json").stdout)
        assert set(hosts.names) == {w["hostname"] for w in listed}


@pytest.mark.parametrize("processes", [1, 2])
def test_a_waiting_remote_runner_takes_new_work_at_once_and_stops_at_once(served, processes):
    """A runner long-polling an empty queue claims a task added meanwhile (no idle backoff
    between polls: it is done well before a second poll could start), and SIGTERM ends
    its wait and the process within seconds, not at the end of the 30 s poll, with no
    warning logged (the wait it cut is its own stop, not an outage). With two server
    processes the task is added beside the database, by `corral add` on the store's
    host: only the store's own signal (NOTIFY, the commit counter) can wake it."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start("--workers", str(processes))
    runner = start_worker(served, worker_token, "w", "--exec", "true")
    wait_for(lambda: "idle" in served.corral("worker", "list").stdout, what="the runner idle")
    time.sleep(0.5)  # it is inside a long poll now
    added = time.monotonic()
    if processes == 1:
        task = remote(served, operator, "add", "late work").stdout.strip()
    else:
        task = served.corral("add", "late work").stdout.strip()
    wait_for(lambda: statuses(served).get(task) == "done", 20, "the task done")
    assert time.monotonic() - added < 10
    time.sleep(0.5)
    stopped = time.monotonic()
    runner.send_signal(signal.SIGTERM)
    assert 0 == runner.wait(timeout=20)
    assert time.monotonic() - stopped < 10
    logged = (served.folder / "w.log").read_text()
    assert "worker.stopped" in logged
    assert [] == [line for line in logged.splitlines() if " WARNING " in line]


def test_a_waiting_runner_takes_a_delayed_task_when_its_time_comes(served):
    """A task added with `--run-after 2s` while a runner long-polls is claimed when the two
    seconds are up, though nothing is written then: the server's timer for the soonest
    `run_after` wakes the waiting claim, not the end of its 30 s poll."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    runner = start_worker(served, worker_token, "w", "--exec", "true")
    wait_for(lambda: "idle" in served.corral("worker", "list").stdout, what="the runner idle")
    time.sleep(0.5)  # it is inside a long poll now
    added = time.monotonic()
    task = remote(served, operator, "add", "later", "--run-after", "2s").stdout.strip()
    wait_for(lambda: statuses(served).get(task) == "done", 25, "the delayed task done")
    assert 2 <= time.monotonic() - added < 10
    runner.send_signal(signal.SIGTERM)
    assert 0 == runner.wait(timeout=20)


def test_worker_tokens_are_held_to_their_queues_and_their_own_claims(served):
    """A worker token for queue `code` cannot register for `docs`, cannot claim a `docs`
    task, cannot complete another worker's claim; a viewer cannot add. Each refusal is
    exit 2 with one line, and nothing changes."""
    code_token = served.token("worker", "code")
    other_token = served.token("worker")
    viewer, operator = served.token("viewer"), served.token("operator")
    served.start()
    docs_task = remote(served, operator, "add", "docs work", "--queue", "docs").stdout.strip()
    code_task = remote(served, operator, "add", "code work", "--queue", "code").stdout.strip()

    refused = remote(
        served,
        code_token,
        "worker",
        "start",
        "--name",
        "x",
        "--queue",
        "docs",
        "--once",
        "--exec",
        "true",
    )
    assert 2 == refused.returncode and "may use the queues code; not docs" in refused.stderr

    registered = remote(served, other_token, "worker", "register", "--name", "y", "--json")
    worker = json.loads(registered.stdout)["id"]
    assert 0 == remote(served, other_token, "worker", "heartbeat", worker).returncode
    made = remote(served, other_token, "claim:next", worker, "--queue", "code", "--json")
    held = json.loads(made.stdout)
    assert code_task == held["task_id"], made.stderr
    stolen = remote(served, code_token, "done", code_task, "--token", str(held["token"]))
    assert 2 == stolen.returncode and "acts only for workers it registered" in stolen.stderr

    added = remote(served, viewer, "add", "not allowed")
    assert 2 == added.returncode and "needs an operator token" in added.stderr
    assert {docs_task: "ready", code_task: "running"} == statuses(served)


def test_remote_commands_keep_their_exit_codes(served, tmp_path):
    """Over HTTP as on a local store: a refused change exits 1, bad input and a bad token
    exit 2, an unreachable server exits 3; each says one line, no traceback."""
    operator = served.token("operator")
    served.start()
    task = remote(served, operator, "add", "t").stdout.strip()
    assert 0 == remote(served, operator, "cancel", task).returncode
    again = remote(served, operator, "cancel", task)
    bad = remote(served, operator, "add", "")
    no_token = remote(served, "corral_k-nothing_" + "x" * 43, "list")
    served.stop()
    gone = remote(served, operator, "list")
    for result, code in ((again, 1), (bad, 2), (no_token, 2), (gone, 3)):
        assert code == result.returncode, result.stderr
        assert 1 == len(result.stderr.strip().splitlines()) and "Traceback" not in result.stderr
    assert "unreachable" in gone.stderr


def test_logs_follow_from_another_host_shows_a_remote_run_as_it_goes(served):
    """`corral logs --follow` through the server, started while a remote runner's task
    runs: it prints the first line before the run ends, the rest after, and exits 0 when
    the run is over."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    flag = served.folder / "go"
    slow = (
        f"{sys.executable} -c \"import os,time; print('first', flush=True);"
        f" [time.sleep(0.05) for _ in iter(lambda: os.path.exists('{flag}'), True)];"
        " print('second')\""
    )
    remote(served, operator, "add", "slow")
    start_worker(served, worker_token, "w", "--exec", slow)

    def started() -> list[dict[str, str]]:
        return json.loads(remote(served, operator, "runs", "--json").stdout)

    wait_for(started, what="the run")
    run_id = started()[0]["id"]
    follower = subprocess.Popen(
        [*CORRAL, "logs", "--follow", run_id],
        env=remote_env(served, operator),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert follower.stdout is not None
    assert "first\n" == follower.stdout.readline()  # while the run still waits for the flag
    flag.touch()
    rest, _ = follower.communicate(timeout=30)
    assert (0, "second\n") == (follower.returncode, rest)


def test_run_worker_serves_python_functions_through_the_server(served):
    """`corral.run_worker(execute=..., db="http://...", token=...)` in another process
    claims a task through the server and completes it with the function's result."""
    worker_token, operator = served.token("worker"), served.token("operator")
    served.start()
    task = remote(served, operator, "add", "shout").stdout.strip()
    script = (
        "import corral, sys;"
        " shout = lambda task, ctx: {'success': True, 'output': task.title.upper()};"
        f" sys.exit(corral.run_worker(execute=shout, db={served.url!r},"
        f" token={worker_token!r}, once=True))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    ran = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == ran.returncode, ran.stderr
    shown = json.loads(served.corral("show", task, "--json").stdout)
    assert ("done", "SHOUT") == (shown["status"], shown["result"])


def test_an_orchestrator_runs_its_pool_through_the_server(served):
    """`corral orchestrator start --workers 2` on a remote store: its workers reach the
    server with its token (which they inherit, though the token filter withholds other
    secrets), finish every task, and the pool stops cleanly on SIGTERM."""
    operator = served.token("operator")
    served.start()
    ids = [remote(served, operator, "add", f"pooled {n}").stdout.strip() for n in range(4)]
    orchestrator = served.spawn(
        [*CORRAL, "orchestrator", "start", "--workers", "2", "--exec", "cat"],
        "orchestrator",
        remote_env(served, operator),
    )
    wait_for(lambda: all(statuses(served)[i] == "done" for i in ids), 60, "the pool's work")
    orchestrator.send_signal(signal.SIGTERM)
    assert 0 == orchestrator.wait(timeout=30)


def test_no_token_or_database_password_in_any_answer_or_log_line(pg_url, tmp_path):
    """A server on a PostgreSQL URL with a password, asked by good, wrong and revoked
    tokens, with bad bodies and unknown routes, and a remote runner's whole cycle: no
    answer and no line of the server's, the runner's or the commands' output holds a
    token's secret or the password."""
    password = "hunter2-" + secrets.token_hex(4)
    db = pg_url.replace("postgresql://postgres@", f"postgresql://postgres:{password}@", 1)
    assert password in db
    server = Server(tmp_path, db)
    try:
        worker_token, operator = server.token("worker"), server.token("operator")
        made = server.corral("token", "create", "--role", "viewer", "--name", "gone")
        revoked = made.stdout.strip()
        assert 0 == server.corral("token", "revoke", "gone").returncode
        server.start()
        wrong = operator[:-4] + "AAAA"
        said: list[str] = []
        for token in (operator, wrong, revoked, worker_token, None):
            for method, path, body in (
                ("GET", "/api/tasks", None),
                ("POST", "/api/tasks", b'{"title": 5}'),
                ("POST", "/api/store/get_task", b'{"task_id": "t-none"}'),
                ("POST", "/api/store/no_such_operation", b"{}"),
                ("GET", "/metrics", None),
                ("GET", "/nowhere", None),
            ):
                said.append(_raw(server, method, path, token, body))
        remote(server, operator, "add", "t")
        said.append(
            remote(
                server, worker_token, "worker", "start", "--name", "w", "--exec", "true", "--once"
            ).stderr
        )
        said.append(remote(server, wrong, "list").stderr)
        said.append(server.stop())
        secrets_ = (
            password,
            *(t.split("_", 2)[2] for t in (worker_token, operator, revoked, wrong)),
        )
        for text in said:
            for secret in secrets_:
                assert secret not in text
    finally:
        server.close()


def _raw(server: Server, method: str, path: str, token: str | None, body: bytes | None) -> str:
    """The whole answer to one request, headers and body, as text."""
    request = urllib.request.Request(server.url + path, data=body, method=method)  # noqa: S310 - http:// to loopback
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - http://
            return f"{answer.headers}{answer.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"{exc.headers}{exc.read().decode()}"
