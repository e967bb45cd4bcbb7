"""A run's own object folder (git/run_objects.py) with real git, no sandbox: lent as an
alternate, written by git through the variables a sandbox sets, and settled into the
repository without ever replacing what it holds."""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

from corral.git import run_objects
from corral.git.repo import Git
from corral.git.run_objects import Linked, Settled
from corral.git.worktrees import WorktreeConfig, Worktrees

from .conftest import GIT_ENV, git


def _worktree(repo: Path, name: str = "wt") -> tuple[Path, Linked]:
    """A linked worktree of `repo` on a branch of its own, and its git directories."""
    path = repo.parent / name
    git(repo, "worktree", "add", "--quiet", "-b", name, str(path))
    found = run_objects.linked(str(path))
    assert found is not None
    return path, found


def _inside(path: Path, found: Linked, *args: str) -> str:
    """git ARGS in the worktree as its sandboxed agent runs it (its objects to its folder)."""
    env = {**os.environ, **GIT_ENV, **run_objects.inside_env(found, {})}
    done = subprocess.run(
        ["git", *args], cwd=path, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _commit_inside(path: Path, found: Linked, name: str, text: str) -> str:
    """A commit of file `name` made by the agent's git; the commit."""
    (path / name).write_text(text)
    _inside(path, found, "add", name)
    _inside(path, found, "commit", "--quiet", "-m", f"write {name}")
    return _inside(path, found, "rev-parse", "HEAD")


def _alternates(repo: Path) -> str | None:
    path = repo / ".git" / "objects" / "info" / "alternates"
    return path.read_text() if path.exists() else None


def _loose(repo: Path, oid: str) -> Path:
    return repo / ".git" / "objects" / oid[:2] / oid[2:]


def test_the_folder_is_listed_once_beside_the_lines_of_others(repo: Path) -> None:
    """Lent twice, the folder is one line after the line the repository had already."""
    _, found = _worktree(repo)
    elsewhere = repo.parent / "elsewhere"
    (elsewhere / "info").mkdir(parents=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{elsewhere}\n")
    run_objects.lend(found)
    run_objects.lend(found)
    assert f"{elsewhere}\n../corral-objects/wt\n" == _alternates(repo)
    run_objects.settle(found)
    assert f"{elsewhere}\n" == _alternates(repo)


def test_a_commit_in_the_folder_is_read_through_the_alternate_then_settled(repo: Path) -> None:
    """The agent's git writes only into the folder, the repository reads its commit at
    once; the settle copies the objects in, removes the line and the folder, and a
    second settle does nothing."""
    path, found = _worktree(repo)
    run_objects.lend(found)
    commit = _commit_inside(path, found, "new.txt", "new\n")
    assert not _loose(repo, commit).exists()
    assert "write new.txt" == git(repo, "log", "-1", "--format=%s", "wt")
    assert Settled(loose=3) == run_objects.settle(found)  # the blob, its tree, the commit
    assert (True, None, False) == (
        _loose(repo, commit).exists(),
        _alternates(repo),
        Path(found.folder).exists(),
    )
    assert "" == git(repo, "fsck", "--no-progress")
    assert Settled() == run_objects.settle(found)


def test_an_object_the_repository_has_is_never_replaced(repo: Path) -> None:
    """A different file planted under the name of an object of main's history stays out
    (the original's bytes unchanged); a file whose content is not the object its name
    says is refused; a link is not followed."""
    _, found = _worktree(repo)
    run_objects.lend(found)
    blob = git(repo, "rev-parse", "main:README")
    original = _loose(repo, blob).read_bytes()
    forged = zlib.compress(b"blob 7\0forged\n")
    planted = Path(found.folder, blob[:2], blob[2:])
    planted.parent.mkdir()
    planted.write_bytes(forged)
    wrong = Path(found.folder, "ab", "c" * 38)
    wrong.parent.mkdir()
    wrong.write_bytes(forged)
    Path(found.folder, "ab", "d" * 38).symlink_to(_loose(repo, blob))
    assert Settled(refused=(str(wrong),)) == run_objects.settle(found)
    assert original == _loose(repo, blob).read_bytes()
    assert [] == list(_loose(repo, "ab" + "c" * 38).parent.glob("*"))
    assert "" == git(repo, "fsck", "--no-progress")


def test_a_pack_is_indexed_into_the_repository(repo: Path) -> None:
    """A pack the agent's git made (`git repack`) is taken in by `git index-pack`: its
    commit is read after the folder is gone."""
    path, found = _worktree(repo)
    run_objects.lend(found)
    commit = _commit_inside(path, found, "packed.txt", "packed\n")
    _inside(path, found, "repack", "--quiet", "-d", "-l")
    assert [] == [p for p in Path(found.folder).glob("??/*")]
    assert Settled(packs=1) == run_objects.settle(found)
    assert not Path(found.folder).exists()
    assert "write packed.txt" == git(repo, "log", "-1", "--format=%s", commit)
    assert "" == git(repo, "fsck", "--no-progress")


def test_the_sweep_settles_only_the_folders_of_worktrees_gone(repo: Path) -> None:
    """A worktree removed by git leaves its folder to the sweep, which brings its commit
    in; a live worktree's folder and line stay; a line whose folder is gone goes."""
    gone_path, gone = _worktree(repo, "gone")
    live_path, live = _worktree(repo, "live")
    for found in (gone, live):
        run_objects.lend(found)
    commit = _commit_inside(gone_path, gone, "kept.txt", "kept\n")
    _commit_inside(live_path, live, "live.txt", "live\n")
    git(repo, "worktree", "remove", "--force", str(gone_path))
    with open(repo / ".git" / "objects" / "info" / "alternates", "a") as handle:
        handle.write("../corral-objects/ghost\n")
    assert ("gone",) == run_objects.sweep(str(repo / ".git"))
    assert "write kept.txt" == git(repo, "log", "-1", "--format=%s", commit)
    assert ("../corral-objects/live\n", True) == (
        _alternates(repo),
        Path(live.folder).exists(),
    )


def test_removing_a_worktree_sweeps_its_folder(repo: Path) -> None:
    """corral's own removal of a worktree (its runner killed before it settled) brings the
    folder's objects in."""
    trees = Worktrees(Git(str(repo)), WorktreeConfig())
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    found = run_objects.linked(plan.path)
    assert found is not None
    run_objects.lend(found)
    commit = _commit_inside(Path(plan.path), found, "work.txt", "work\n")
    trees.remove(plan.path)
    assert (None, False) == (_alternates(repo), Path(found.folder).exists())
    assert "write work.txt" == git(repo, "log", "-1", "--format=%s", commit)


def test_the_agents_own_git_config_variables_are_kept() -> None:
    """GIT_CONFIG_COUNT entries of the task's environment stay; the unpack limits follow."""
    found = Linked(gitdir="/r/.git/worktrees/wt", common="/r/.git")
    assert {
        "GIT_OBJECT_DIRECTORY": "/r/.git/corral-objects/wt",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/r/.git/objects",
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_1": "fetch.unpackLimit",
        "GIT_CONFIG_VALUE_1": "2147483647",
        "GIT_CONFIG_KEY_2": "transfer.unpackLimit",
        "GIT_CONFIG_VALUE_2": "2147483647",
    } == run_objects.inside_env(found, {"GIT_CONFIG_COUNT": "1"})
