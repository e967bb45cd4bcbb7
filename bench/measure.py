"""What every benchmark shares: spreads of timings, tables, verdicts, throwaway stores,
bulk loading through the project's own SQL, child processes that always get reaped, and
a phase timer that says where a run's time goes.

Timings are seconds from `time.perf_counter`; tables print milliseconds. The machine the
figures come from is small and noisy, so every script prints ratios beside absolutes and
interleaves the things it compares.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import corral
from corral.foundation.ids import TASK_PREFIX, new_id
from corral.model.tasks import NewTask
from corral.model.workers import NewWorker, Worker
from corral.store import Store, open_store
from corral.usecases.tasks import enqueue
from corral.usecases.workers import heartbeat, register

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")


def percentile(values: Sequence[float], pct: float) -> float:
    """The `pct`-th percentile of `values`, interpolated between ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True, kw_only=True)
class Spread:
    """Median, tail and worst of a sample of durations in seconds."""

    n: int
    p50_s: float
    p95_s: float
    p99_s: float
    max_s: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of `values`."""
        return cls(
            n=len(values),
            p50_s=percentile(values, 50),
            p95_s=percentile(values, 95),
            p99_s=percentile(values, 99),
            max_s=max(values, default=float("nan")),
        )


def ms(seconds: float) -> str:
    """Seconds as milliseconds, two decimals."""
    return f"{seconds * 1000:.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table, first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [row[0].ljust(widths[0])]
        parts += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *[line(r) for r in cells[1:]]])


class Verdicts:
    """The targets of one benchmark and whether each was met; prints them and the exit code."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[tuple[str, str, str]] = []

    def check(self, target: str, measured: str, met: bool) -> None:
        """Record one target with its measured figure."""
        self.rows.append((target, measured, "PASS" if met else "MISS"))

    def missed(self) -> bool:
        """True if any target was missed."""
        return any(v == "MISS" for _, _, v in self.rows)

    def finish(self) -> int:
        """Print the verdict table; exit code 1 if a target was missed."""
        print(f"\n{self.title}: targets")
        print(table(["target", "measured", "verdict"], self.rows))
        return 1 if self.missed() else 0


def banner(title: str, what: str) -> None:
    """The heading every script prints: what, where, when."""
    print(f"== {title} ==")
    print(what)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}; load average "
        f"{os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; "
        f"Python {sys.version.split()[0]}; SQLite {sqlite3.sqlite_version}; "
        f"corral {corral.__version__} from {os.path.dirname(corral.__file__)}\n"
    )


@contextmanager
def temp_dir(prefix: str) -> Iterator[str]:
    """A fresh directory, removed with everything in it afterwards."""
    path = tempfile.mkdtemp(prefix=f"corral-bench-{prefix}-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def new_store(path: str) -> Store:
    """A store at `path`, created and migrated by corral itself."""
    return open_store(path)


@contextmanager
def store_url(dialect: str, folder: str) -> Iterator[str]:
    """A fresh store of `dialect`: a file in `folder`, or a scratch database on the
    PostgreSQL server (pg_peer.py), dropped afterwards."""
    if dialect == "sqlite":
        yield os.path.join(folder, "corral.db")
        return
    from pg_peer import scratch_database

    with scratch_database() as url:
        yield url


def register_worker(store: Store, name: str, *, max_concurrent: int = 1) -> str:
    """Register a worker and send its first heartbeat (so it is idle); its id."""
    beat = register(store, NewWorker(name=name, max_concurrent=max_concurrent))
    heartbeat(store, beat.worker.id)
    return beat.worker.id


def bulk_load(path: str, count: int, *, priorities: int = 1) -> list[str]:
    """Add `count` ready tasks, each with its `task.created` event, in one transaction.

    The first task goes through `corral.usecases.tasks.enqueue`; the others are copies of the rows
    it wrote (tasks and events), with fresh ids, inserted by executemany. So every row
    and every index is what `enqueue` leaves, whatever its parameters are this week,
    without a round of Python per task. Priorities cycle through 0..priorities-1, so
    the claim order is not the insert order. Returns the ids in insert order.
    """
    with open_store(path) as store:
        first = enqueue(store, NewTask(title="bench task")).id
    ids = [first] + [new_id(TASK_PREFIX) for _ in range(count - 1)]
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN IMMEDIATE")
        task = _template(conn, "SELECT * FROM tasks WHERE id = ?", first, "seq")
        event = _template(conn, "SELECT * FROM events WHERE task_id = ?", first, "id")
        tasks = ({**task, "id": t, "priority": n % priorities} for n, t in enumerate(ids))
        conn.executemany(_insert("tasks", task), itertools.islice(tasks, 1, None))
        conn.executemany(_insert("events", event), ({**event, "task_id": t} for t in ids[1:]))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return ids


def _template(conn: sqlite3.Connection, sql: str, task_id: str, key: str) -> dict[str, Any]:
    """The row `sql` finds for `task_id`, without its generated key column."""
    row = dict(conn.execute(sql, (task_id,)).fetchone())
    del row[key]
    return row


def _insert(table: str, row: dict[str, Any]) -> str:
    """An INSERT of every column in `row`, by name (the names come from the schema)."""
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def fresh_process_env(db: str) -> dict[str, str]:
    """The environment of a `corral` command: the store, and bytecode caching as users have it.

    With PYTHONDONTWRITEBYTECODE set (as in some sandboxes), a source file edited since
    `make setup` compiled it is compiled again by every command, which is not what users
    pay; without it, the first command refreshes the stale caches once.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "CORRAL_DB": db}


def count_tasks(path: str, status: str) -> int:
    """How many tasks of the store at `path` have `status` (a plain read, no corral code)."""
    conn = sqlite3.connect(path)
    try:
        return int(
            conn.execute("SELECT count(*) FROM tasks WHERE status = ?", (status,)).fetchone()[0]
        )
    finally:
        conn.close()


def iso_now() -> str:
    """The current instant as corral writes it in events."""
    return datetime.now(UTC).isoformat()


def _child(target: Callable[..., Any], args: tuple[Any, ...], start: Any, out: Any) -> None:
    try:
        out.put(("ok", target(start, *args)))
    except BaseException as exc:  # reported to the parent, which raises it there
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def run_processes(
    target: Callable[..., Any], args_list: Sequence[tuple[Any, ...]], *, timeout_s: float
) -> list[Any]:
    """Run `target(start, *args)` in one forked process per entry; their return values.

    `start` is a barrier over all the children: each calls `start.wait()` when its set-up
    is done, so the measured parts begin together. Children still alive at `timeout_s` are
    killed; every child is joined before this returns.
    """
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(len(args_list))
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_child, args=(target, args, start, out), daemon=True)
        for args in args_list
    ]
    for proc in procs:
        proc.start()
    try:
        results = [_result(out, timeout_s) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return results


def _result(out: Any, timeout_s: float) -> Any:
    status, value = out.get(timeout=timeout_s)
    if status != "ok":
        raise RuntimeError(f"a benchmark process failed: {value}")
    return value


def dump(data: Any) -> str:
    """Compact JSON for a child process's answer."""
    return json.dumps(data, separators=(",", ":"))


@contextmanager
def spawned(argv: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """Start `argv`; on leaving, whatever happened, kill it if it still runs and reap it."""
    proc = subprocess.Popen(list(argv), **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@contextmanager
def served_loopback(
    db: str, port: int | None = None
) -> Iterator[tuple[subprocess.Popen[Any], str]]:
    """`corral serve` on store `db` (no token: the loopback is let in), its process and base
    URL once /healthz answers; stopped gently at the end."""
    import urllib.request

    port = port or free_port()
    argv = [os.path.join(VENV_BIN, "corral"), "serve", "--port", str(port)]
    env = fresh_process_env(db)
    with spawned(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1).read()  # noqa: S310
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield proc, base
        stop_gently(proc)


def wait_exit(proc: subprocess.Popen[Any], timeout_s: float) -> bool:
    """Block until `proc` exits (True) or `timeout_s` passes (False), without reaping it.

    A pidfd wakes the moment the process ends; `Popen.wait(timeout)` would poll with
    sleeps of up to 50 ms, too coarse to time an exit.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd (not Linux >= 5.3): poll finely instead
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.0005)
        return True
    try:
        return bool(select.select([fd], [], [], timeout_s)[0])
    finally:
        os.close(fd)


def stop_gently(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> int | None:
    """SIGTERM `proc`, wait up to `timeout_s`, SIGKILL it if needed; its exit code after TERM.

    None when it had to be killed.
    """
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        if not wait_exit(proc, timeout_s):
            proc.kill()
            proc.wait()
            return None
    return proc.wait()


def wait_for_worker(
    path: str, name: str, statuses: Sequence[str], *, timeout_s: float, alive: Callable[[], bool]
) -> Worker:
    """Poll the store at `path` every 5 ms until worker `name` has one of `statuses`.

    Raises RuntimeError when `alive()` turns false first, or after `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    with open_store(path) as store:
        while time.monotonic() < deadline:
            for worker in store.workers.list_workers():
                if worker.name == name and str(worker.status) in statuses:
                    return worker
            if not alive():
                raise RuntimeError(f"worker {name} exited before it was {'/'.join(statuses)}")
            time.sleep(0.005)
    raise RuntimeError(f"worker {name} was not {'/'.join(statuses)} after {timeout_s:g} s")


def tail(path: str, lines: int = 20) -> str:
    """The last `lines` lines of a text file (a child's log), for an error message."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


Label = str | Callable[..., str]


def _name(label: Label, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    return label(*args, **kwargs) if callable(label) else label


class PhaseTimer:
    """Where a run's time goes: exclusive time and calls of the functions it wraps.

    `wrap` replaces a function or method on its owner (a module or a class) by a timing
    wrapper until `restore`. Each call's time excludes the wrapped calls nested in it
    (counted per thread), so the phases add up to the time they cover. A name that the
    code no longer has is listed in `missing` instead of failing the benchmark. For
    diagnosis only: the wrappers add about a microsecond a call.
    """

    def __init__(self) -> None:
        self.seconds: defaultdict[str, float] = defaultdict(float)
        self.calls: Counter[str] = Counter()
        self.missing: list[str] = []
        self._local = threading.local()
        self._undo: list[tuple[Any, str, Any]] = []

    def _stack(self) -> list[float]:
        stack: list[float] | None = getattr(self._local, "stack", None)
        if stack is None:
            stack = self._local.stack = []
        return stack

    def _begin(self) -> float:
        self._stack().append(0.0)
        return time.perf_counter()

    def _end(self, label: str, began: float) -> None:
        elapsed = time.perf_counter() - began
        stack = self._stack()
        self.seconds[label] += elapsed - stack.pop()
        self.calls[label] += 1
        if stack:
            stack[-1] += elapsed

    def _original(self, owner: Any, attr: str) -> Any:
        original = getattr(owner, attr, None)
        if original is None:
            self.missing.append(f"{getattr(owner, '__name__', owner)}.{attr}")
        return original

    def wrap(self, owner: Any, attr: str, label: Label) -> None:
        """Time every call of `owner.attr` as `label`, or as `label(*args, **kwargs)`."""
        original = self._original(owner, attr)
        if original is None:
            return

        def timed(*args: Any, **kwargs: Any) -> Any:
            began = self._begin()
            try:
                return original(*args, **kwargs)
            finally:
                self._end(_name(label, args, kwargs), began)

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, original))

    def wrap_context(self, owner: Any, attr: str, enter: Label, leave: Label) -> None:
        """Time entering and leaving the context managers `owner.attr(...)` returns.

        Leaving by an exception is not timed.
        """
        original = self._original(owner, attr)
        if original is None:
            return

        @contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            manager: AbstractContextManager[Any] = original(*args, **kwargs)
            began = self._begin()
            try:
                value = manager.__enter__()
            finally:
                self._end(_name(enter, args, kwargs), began)
            try:
                yield value
            except BaseException:
                if not manager.__exit__(*sys.exc_info()):
                    raise
            else:
                began = self._begin()
                try:
                    manager.__exit__(None, None, None)
                finally:
                    self._end(_name(leave, args, kwargs), began)

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, original))

    def restore(self) -> None:
        """Put every wrapped function back."""
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()

    def report(self) -> dict[str, list[float]]:
        """label -> [seconds, calls], for a child process to send back as JSON."""
        return {label: [s, self.calls[label]] for label, s in self.seconds.items()}


def phase_rows(
    phases: dict[str, list[float]], units: int, total_s: float, rest: str, fold: float = 0.005
) -> list[list[str]]:
    """Table rows for a PhaseTimer report: us per unit, calls per unit, share of the total.

    Costliest first; phases under `fold` of the total are summed into one row; then `rest`,
    the time of `total_s` that no wrapped function covers, and the total.
    """
    ranked = sorted(phases.items(), key=lambda kv: -kv[1][0])
    big = [(label, sc) for label, sc in ranked if sc[0] >= fold * total_s]
    small = [sc for _, sc in ranked if sc[0] < fold * total_s]
    rows = [
        [label, us(s / units), f"{calls / units:.2f}", f"{s / total_s:.0%}"]
        for label, (s, calls) in big
    ]
    if small:
        small_s = sum(s for s, _ in small)
        rows.append(
            [f"{len(small)} smaller phases", us(small_s / units), "", f"{small_s / total_s:.0%}"]
        )
    left = total_s - sum(s for _, (s, _) in phases.items())
    rows.append([rest, us(left / units), "", f"{left / total_s:.0%}"])
    rows.append(["total", us(total_s / units), "", "100%"])
    return rows


def us(seconds: float) -> str:
    """Seconds as microseconds, no decimals."""
    return f"{seconds * 1e6:,.0f}"
