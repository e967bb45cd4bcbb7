"""Starting a command: posix_spawn in the runner's directory, Popen elsewhere, same child."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.foundation.errors import InvalidInput
from corral.runtime.worker.spawn import Child, CommandNotFound, start

PY = sys.executable
# What the child reports about itself: session, group, descriptors, ignored signals, cwd.
SELF_REPORT = """
import json, os, sys
def is_open(fd):
    try:
        return os.fstat(fd) is not None
    except OSError:
        return False
print(json.dumps({
    "pid": os.getpid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
    "fds": [fd for fd in range(1024) if is_open(fd)],
    "cwd": os.getcwd(), "stdin": sys.stdin.read(), "mark": os.environ.get("MARK"),
}))
"""


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[int, int, int, Path, Path]]:
    """A stdin pipe's read end, stdout and stderr files; the pipe's write end is closed at once
    after a prompt is written, as the executor does."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"the prompt")
    os.close(write_end)
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    yield read_end, out, err, out_path, err_path
    for fd in (read_end, out, err):
        os.close(fd)


@pytest.fixture(params=["runner's directory", "another directory"])
def cwd(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the command runs: the runner's own directory (posix_spawn) or another (Popen)."""
    return os.getcwd() if request.param == "runner's directory" else str(tmp_path)


def report_of(child: Child, out_path: Path) -> dict[str, object]:
    """Reap the child (expecting exit 0) and read what it said about itself."""
    assert 0 == child.reap()
    report: dict[str, object] = json.loads(out_path.read_text())
    return report


def test_in_the_runners_directory_posix_spawn_starts_a_session_leader_with_its_io(
    files: tuple[int, int, int, Path, Path],
) -> None:
    """posix_spawn: own session and group, the prompt on stdin, output in the files, only
    stdin/stdout/stderr inherited (not a descriptor the runner holds open for children)."""
    stdin, out, err, out_path, _ = files
    env = {**os.environ, "MARK": "m-1"}
    inheritable = os.open(os.devnull, os.O_RDONLY)
    os.set_inheritable(inheritable, True)
    try:
        child = start((PY, "-c", SELF_REPORT), env=env, cwd=os.getcwd(), stdio=(stdin, out, err))
    finally:
        os.close(inheritable)
    assert None is child.popen
    seen = report_of(child, out_path)
    assert (child.pid, child.pid, child.pid) == (seen["pid"], seen["sid"], seen["pgid"])
    assert ("the prompt", "m-1", os.getcwd()) == (seen["stdin"], seen["mark"], seen["cwd"])
    assert [0, 1, 2] == seen["fds"]


def test_in_another_directory_popen_starts_the_same_kind_of_child(
    files: tuple[int, int, int, Path, Path], tmp_path: Path
) -> None:
    """Popen, for another working directory: the same session and I/O, in that directory."""
    stdin, out, err, out_path, _ = files
    child = start(
        (PY, "-c", SELF_REPORT), env=dict(os.environ), cwd=str(tmp_path), stdio=(stdin, out, err)
    )
    assert child.popen is not None
    seen = report_of(child, out_path)
    assert (child.pid, child.pid, str(tmp_path)) == (seen["sid"], seen["pgid"], seen["cwd"])
    assert ("the prompt", [0, 1, 2]) == (seen["stdin"], seen["fds"])


def test_the_child_gets_sigpipe_and_sigxfsz_back_at_their_defaults(
    files: tuple[int, int, int, Path, Path], cwd: str
) -> None:
    """Python ignores SIGPIPE and SIGXFSZ; its children must not (subprocess's restore_signals)."""
    stdin, out, err, out_path, _ = files
    argv = ("grep", "^SigIgn:", "/proc/self/status")  # grep, not Python: it ignores neither
    child = start(argv, env=dict(os.environ), cwd=cwd, stdio=(stdin, out, err))
    assert 0 == child.reap()
    ignored = int(out_path.read_text().split()[1], 16)
    assert 0 == ignored & (1 << (signal.SIGPIPE - 1) | 1 << (signal.SIGXFSZ - 1))


@pytest.mark.parametrize("code", [0, 3, 75])
def test_reap_gives_the_exit_status_and_leaves_no_zombie(
    files: tuple[int, int, int, Path, Path], code: int
) -> None:
    """The exit status comes back as it was, and the pid is gone once reaped."""
    stdin, out, err, _, _ = files
    argv = (PY, "-c", f"raise SystemExit({code})")
    child = start(argv, env=dict(os.environ), cwd=os.getcwd(), stdio=(stdin, out, err))
    assert code == child.reap()
    assert not os.path.exists(f"/proc/{child.pid}")


def test_a_child_ended_by_a_signal_reaps_as_minus_the_signal(
    files: tuple[int, int, int, Path, Path],
) -> None:
    """SIGKILL shows as -9, as subprocess reports it."""
    stdin, out, err, _, _ = files
    argv = (PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    child = start(argv, env=dict(os.environ), cwd=os.getcwd(), stdio=(stdin, out, err))
    assert -signal.SIGKILL == child.reap()


def test_a_missing_command_is_command_not_found_either_way(
    files: tuple[int, int, int, Path, Path], cwd: str
) -> None:
    """No such executable: CommandNotFound naming it, whichever way it was started."""
    stdin, out, err, _, _ = files
    with pytest.raises(CommandNotFound) as raised:
        start(("no-such-command-x1",), env=dict(os.environ), cwd=cwd, stdio=(stdin, out, err))
    assert "command not found: no-such-command-x1" == raised.value.message


def test_a_missing_directory_is_invalid_input(
    files: tuple[int, int, int, Path, Path], tmp_path: Path
) -> None:
    """A working directory that does not exist is refused before anything starts."""
    stdin, out, err, _, _ = files
    with pytest.raises(InvalidInput):
        start(("true",), env={}, cwd=str(tmp_path / "gone"), stdio=(stdin, out, err))
