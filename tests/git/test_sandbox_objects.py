"""A sandboxed agent in a linked worktree cannot delete or rewrite the repository's
objects: it writes its own into a folder of the run's, which the runner brings in after
the run (git/run_objects.py), or the next run does when the runner was killed first."""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import sandbox_or_skip
from tests.runtime.conftest import wait_until
from tests.runtime.test_runner import Harness

import corral
from corral.git.repo_lock import NAMES
from corral.model.states import TaskStatus
from corral.runtime.worker.sandbox import Sandbox

from .conftest import commit_file, git

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"

PROBES = """
probe() {{ local name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name: succeeded";
    else echo "$name: failed"; fi; }}
own=$(git rev-parse --git-dir)
folder=$GIT_OBJECT_DIRECTORY
probe delete_pack rm -f {pack}
probe overwrite_loose sh -c 'chmod u+w {loose}; printf forged > {loose}'
probe plant_loose sh -c 'mkdir -p {common}/objects/00 && printf x > {common}/objects/00/{zeros}'
probe plant_pack sh -c "printf x > $folder/pack/pack-{zeros}00.pack"
probe plant_alternate sh -c "echo / > $folder/info/alternates"
probe commit sh -c 'echo work > feature.txt && git add feature.txt &&
    git -c user.name=agent -c user.email=agent@example.com commit -qm work'
"""


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """A harness whose folder is a git repository on `main`: its first commit packed,
    its second loose."""
    harness = Harness(tmp_path)
    git(tmp_path, "init", "--quiet", "-b", "main")
    commit_file(tmp_path, "README", "hello\n")
    git(tmp_path, "repack", "--quiet", "-a", "-d")
    commit_file(tmp_path, "second.txt", "two\n")
    yield harness
    harness.close()


def _targets(repo: Path) -> tuple[str, str]:
    """A pack of the repository's history, and a loose object of it."""
    common = repo / ".git"
    (pack,) = (common / "objects" / "pack").glob("*.pack")
    blob = git(repo, "rev-parse", "main:second.txt")
    return str(pack), str(common / "objects" / blob[:2] / blob[2:])


def _probes(h: Harness, task_id: str) -> dict[str, str]:
    """Each probe's result, from the run's transcript."""
    text = Path(h.runs(task_id)[0].transcript_path).read_text()
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def _no_trace(repo: Path) -> None:
    """No run object folder, no alternates line left; the repository whole."""
    common = repo / ".git"
    assert not (common / "corral-objects").exists() or [] == list(
        (common / "corral-objects").iterdir()
    )
    assert not (common / "objects" / "info" / "alternates").exists()
    assert "" == git(repo, "fsck", "--no-progress", "--no-dangling")


def _start(h: Harness, agent: str, name: str, *flags: str) -> subprocess.Popen[bytes]:
    return h.start(
        *("--exec", agent, "--worktree", "--workdir", str(h.tmp), "--sandbox", "bwrap"),
        *("--once", *flags),
        name=name,
    )


@pytest.mark.parametrize("flags", [(), ("--keep-worktrees",)])
def test_a_sandboxed_agent_cannot_touch_the_repositorys_objects_and_its_commit_lands(
    h: Harness, flags: tuple[str, ...]
) -> None:
    """Deleting a pack of main's history, overwriting a loose object, planting one there,
    planting a pack or an alternate in its own folder: all fail; its own commit lands on
    main, and afterwards nothing of its folder is left (the run's end settled it, not the
    worktree's removal: kept or not) and `git fsck` is clean."""
    sandbox_or_skip("bwrap")
    pack, loose = _targets(h.tmp)
    before = Path(loose).read_bytes()
    agent = h.script(
        "agent.sh",
        PROBES.format(pack=pack, loose=loose, common=h.tmp / ".git", zeros="0" * 38),
    )
    task_id = h.add()
    assert 0 == _start(h, agent, "w1", *flags).wait(60)
    assert {
        "delete_pack": "failed",
        "overwrite_loose": "failed",
        "plant_loose": "failed",
        "plant_pack": "failed",
        "plant_alternate": "failed",
        "commit": "succeeded",
    } == _probes(h, task_id)
    assert TaskStatus.DONE is h.task(task_id).status
    assert "work" == git(h.tmp, "show", "main:feature.txt")
    assert (True, before) == (Path(pack).exists(), Path(loose).read_bytes())
    _no_trace(h.tmp)


KILLED = """
gitdir=$(git rev-parse --git-dir)
if [ -e "$gitdir/first-run" ]; then
    echo more >> feature.txt && git add feature.txt &&
        git -c user.name=agent -c user.email=agent@example.com commit -qm more
    exit
fi
echo work > feature.txt && git add feature.txt &&
    git -c user.name=agent -c user.email=agent@example.com commit -qm work
touch "$gitdir/first-run"
exec sleep 300
"""


def test_a_runner_killed_after_its_agent_committed_loses_nothing(h: Harness) -> None:
    """kill -9 of the runner after its agent committed: the repository still reads the
    branch (the folder is listed as an alternate) and `git fsck` is clean; the task's
    next run brings both runs' objects in, and the work lands."""
    sandbox_or_skip("bwrap")
    agent = h.script("agent.sh", KILLED)
    task_id = h.add()
    runner = _start(h, agent, "w1")
    marks = h.tmp / ".git" / "worktrees"
    wait_until(lambda: any(marks.glob("*/first-run")), 30)
    runner.send_signal(signal.SIGKILL)
    runner.wait()
    branch = h.task(task_id).branch
    assert branch is not None
    (name,) = [p.parent.name for p in marks.glob("*/first-run")]
    alternates = h.tmp / ".git" / "objects" / "info" / "alternates"
    assert f"../corral-objects/{name}\n" == alternates.read_text()
    assert "work" == git(h.tmp, "log", "-1", "--format=%s", branch)
    assert "" == git(h.tmp, "fsck", "--no-progress", "--no-dangling")
    settings = corral.Settings(heartbeat_interval_s=0.2, retry_base_s=0)
    wait_until(lambda: corral.reconcile_once(h.store, settings=settings).workers_dead == 1, 10)
    assert 0 == _start(h, agent, "w2").wait(60)
    assert TaskStatus.DONE is h.task(task_id).status
    assert "work\nmore" == git(h.tmp, "show", "main:feature.txt")
    _no_trace(h.tmp)


def _words_at(words: tuple[str, ...], flag: str) -> list[str]:
    """Every value that follows `flag` in a command line."""
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == flag]


def test_the_container_variant_mounts_and_names_the_same(repo: Path) -> None:
    """`--sandbox container` (podman, which cannot run here: its argv alone): the
    repository's objects read-only with its checkout, the run's folder writable, its
    `info` and `pack` read-only, and the object variables passed by name, their values in
    the environment podman is started with; the other refs of the branch's folder kept
    read-only, corral's lock files covered."""
    path = repo / ".corral" / "worktrees" / "wt"
    git(repo, "worktree", "add", "--quiet", "-b", "wt", str(path))
    common = str(repo.resolve() / ".git")
    folder = f"{common}/corral-objects/wt"
    podman = Sandbox(kind="container", engine="/usr/bin/podman", network=False)
    words, env = podman.contain(
        "/bin/true", root=str(path), cwd=str(path), env={}, state_dir=str(repo / ".corral"),
        files={}, run_id="r1",
    )  # fmt: skip
    top = str(repo.resolve())
    volumes = [v.split(":", 1)[0] + ":" + v.rsplit(":", 1)[1] for v in _words_at(words, "--volume")]
    assert [
        f"{top}:ro",
        f"{common}/logs:rw",
        f"{top}/.corral/worktrees/wt:rw",
        f"{folder}:rw",
        f"{common}/refs/heads:rw",
        f"{common}/worktrees/wt:rw",
        f"{folder}/info:ro",
        f"{folder}/pack:ro",
        f"{common}/refs/heads/main:ro",  # the branch's folder is refs/heads: the base kept
    ] == [v for v in volumes if v.startswith(top)]
    assert {f"/dev/null:{common}/{name}:ro" for name in NAMES} <= set(_words_at(words, "--volume"))
    names = set(_words_at(words, "--env"))
    assert {"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"} <= names
    assert (folder, f"{common}/objects") == (
        env["GIT_OBJECT_DIRECTORY"],
        env["GIT_ALTERNATE_OBJECT_DIRECTORIES"],
    )
    assert "../corral-objects/wt\n" == (repo / ".git/objects/info/alternates").read_text()


def test_aider_auto_commits_in_the_sandbox_and_its_edit_lands(h: Harness) -> None:
    """The aider stand-in commits each edit itself (its git in the run's folder): the edit
    lands on main, and nothing of the folder is left."""
    sandbox_or_skip("bwrap")
    # The stand-ins from inside the repository's checkout, which the sandbox shows
    # read-only: their own module (fakelib, beside them) would be hidden with a checkout
    # under /tmp or HOME (CI's unprivileged run), as a real tool's files under HOME are
    # unless `sandbox_home` names them.
    fakes = shutil.copytree(FAKES, h.tmp / "stand-ins")
    h.env["PATH"] = f"{fakes}:{h.env['PATH']}"
    task_id = h.add("rename it")
    runner = h.start(
        *("--agent", "aider", "--worktree", "--workdir", str(h.tmp), "--sandbox", "bwrap"),
        "--once",
    )
    assert 0 == runner.wait(60)
    assert TaskStatus.DONE is h.task(task_id).status
    subjects = git(h.tmp, "log", "--format=%s", "main").splitlines()
    assert 1 == sum(s.startswith("aider: ") for s in subjects)  # its own commit, landed
    _no_trace(h.tmp)
