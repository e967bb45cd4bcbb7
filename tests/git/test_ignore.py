"""`corral init` keeps `.corral/` out of git: info/exclude, no tracked file, every worktree."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import corral_in
from tests.git.conftest import git

from corral.git.ignore import PATTERN, exclude_state_dir


def init(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`corral init ARGS` run in `cwd` as a user runs it: no CORRAL_ variable set."""
    return corral_in(cwd, "init", *args)


def exclude_file(repo: Path) -> Path:
    return repo / ".git" / "info" / "exclude"


def test_init_in_a_repository_leaves_git_status_clean_and_touches_no_tracked_file(
    repo: Path,
) -> None:
    """The store, its -wal and -shm, and anything else under .corral/ stay out of git."""
    done = init(repo, "--json")
    assert 0 == done.returncode, done.stderr
    assert str(exclude_file(repo)) == json.loads(done.stdout)["git_exclude"]
    (repo / ".corral" / "corral.db-wal").write_text("")
    (repo / ".corral" / "logs").mkdir()
    (repo / ".corral" / "logs" / "worker.log").write_text("line\n")
    assert "" == git(repo, "status", "--porcelain", "--untracked-files=all")
    assert not (repo / ".gitignore").exists()
    git(repo, "add", "-A")
    assert "" == git(repo, "diff", "--cached", "--name-only")


def test_init_twice_adds_the_pattern_once(repo: Path) -> None:
    """A second init (or one in a subfolder finding the same store) writes nothing more."""
    assert 0 == init(repo).returncode
    again = init(repo, "--json")
    assert None is json.loads(again.stdout)["git_exclude"]
    assert 1 == exclude_file(repo).read_text().splitlines().count(PATTERN)


def test_a_folder_git_ignores_already_is_left_to_the_user(repo: Path) -> None:
    """With `.corral/` in the project's .gitignore, info/exclude is not written."""
    before = exclude_file(repo).read_text() if exclude_file(repo).exists() else None
    (repo / ".gitignore").write_text(".corral/\n")
    done = init(repo)
    assert 0 == done.returncode, done.stderr
    assert "excluded from git" not in done.stdout
    assert before == (exclude_file(repo).read_text() if exclude_file(repo).exists() else None)


def test_the_pattern_goes_on_a_line_of_its_own(repo: Path) -> None:
    """An exclude file whose last line has no newline keeps that line whole."""
    exclude_file(repo).write_text("*.tmp")  # no final newline
    assert str(exclude_file(repo)) == exclude_state_dir(str(repo / ".corral"))
    lines = exclude_file(repo).read_text().splitlines()
    assert ("*.tmp", PATTERN) == (lines[0], lines[-1])


def test_every_linked_worktree_ignores_its_corral_folder_too(repo: Path, tmp_path: Path) -> None:
    """One info/exclude serves all worktrees: a `.corral/` in one never shows as untracked."""
    assert 0 == init(repo).returncode
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "--quiet", "-b", "side", str(linked))
    (linked / ".corral").mkdir()
    (linked / ".corral" / "corral.db").write_text("")
    (linked / "work.txt").write_text("an agent's edit\n")
    assert "?? work.txt" == git(linked, "status", "--porcelain", "--untracked-files=all")


def test_outside_a_repository_nothing_is_written(tmp_path: Path) -> None:
    """No work tree, no exclusion: init says nothing of git."""
    plain = tmp_path / "plain"
    plain.mkdir()
    done = init(plain, "--json")
    assert (0, None) == (done.returncode, json.loads(done.stdout)["git_exclude"])


def test_a_store_in_a_folder_of_another_name_is_not_corrals_to_exclude(repo: Path) -> None:
    """`--db data/x.db`: the folder may hold the user's files; git's files stay as they are."""
    (repo / "data").mkdir()
    done = init(repo, "--db", str(repo / "data" / "x.db"), "--json")
    assert (0, None) == (done.returncode, json.loads(done.stdout)["git_exclude"])
    assert PATTERN not in (exclude_file(repo).read_text() if exclude_file(repo).exists() else "")


def test_an_exclude_file_that_cannot_be_written_is_a_warning_not_a_failure(repo: Path) -> None:
    """The store is made all the same; one line on stderr says what could not be done."""
    info = repo / ".git" / "info"
    info.mkdir(exist_ok=True)
    exclude_file(repo).unlink(missing_ok=True)
    exclude_file(repo).mkdir()  # a folder where the file should be: unwritable, even as root
    done = init(repo)
    assert 0 == done.returncode, done.stderr
    assert (repo / ".corral" / "corral.db").exists()
    assert done.stderr.startswith("corral: warning: cannot add .corral/ to ")
    assert 1 == len(done.stderr.splitlines())
