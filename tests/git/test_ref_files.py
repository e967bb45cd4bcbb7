"""`corral.git.ref_files.loose_refs` on real repositories: packed refs under the folder get
files of their own, as git writes them, and nothing else changes."""

from __future__ import annotations

from pathlib import Path

from corral.git.ref_files import loose_refs

from .conftest import git


def _packed_world(repo: Path) -> tuple[Path, Path, str]:
    """Two branches of worker w1 and `main`, all packed, then one more left loose: the
    git dir, w1's ref folder, and the commit they point at."""
    commit = git(repo, "rev-parse", "HEAD")
    for name in ("corral/w1/t-a", "corral/w1/t-b"):
        git(repo, "branch", name)
    git(repo, "pack-refs", "--all")
    git(repo, "branch", "corral/w1/t-loose")
    common = repo / ".git"
    return common, common / "refs" / "heads" / "corral" / "w1", commit


def test_packed_refs_under_the_folder_get_files_and_keep_their_values(repo: Path):
    """Both packed branches of w1 now have files (holding the same commit), with the loose
    one; `main`, packed outside the folder, stays packed; git reads every value as before."""
    common, folder, commit = _packed_world(repo)
    found = loose_refs(str(common), str(folder))
    assert sorted(str(folder / n) for n in ("t-a", "t-b", "t-loose")) == sorted(found)
    assert f"{commit}\n" == (folder / "t-a").read_text()
    assert not (common / "refs" / "heads" / "main").exists()
    for name in ("main", "corral/w1/t-a", "corral/w1/t-b", "corral/w1/t-loose"):
        assert commit == git(repo, "rev-parse", name)
    assert "" == git(repo, "fsck", "--no-progress")
    assert [] == list(folder.glob("*.lock"))


def test_a_ref_git_holds_locked_is_left_alone(repo: Path):
    """A ref whose `.lock` exists (a git process changing it) gets no file, and its lock
    file stays the other process's."""
    common, folder, _ = _packed_world(repo)
    (folder / "t-a.lock").write_text("")
    found = loose_refs(str(common), str(folder))
    assert not (folder / "t-a").exists()
    assert str(folder / "t-a") not in found
    assert (folder / "t-a.lock").exists()


def test_a_ref_deleted_since_it_was_packed_is_not_brought_back(repo: Path):
    """`git branch -D` of a packed branch rewrites packed-refs: no file appears for it."""
    common, folder, _ = _packed_world(repo)
    git(repo, "branch", "-D", "corral/w1/t-b")
    loose_refs(str(common), str(folder))
    assert not (folder / "t-b").exists()
    assert "" == git(repo, "branch", "--list", "corral/w1/t-b")


def test_hostile_lines_of_packed_refs_are_skipped(repo: Path):
    """A name climbing out with `..`, an object id that is not one, a peeled line: none
    becomes a file."""
    common, folder, commit = _packed_world(repo)
    with (common / "packed-refs").open("a") as packed:
        packed.write(f"{commit} refs/heads/corral/w1/../../../../escaped\n")
        packed.write(f"nothex refs/heads/corral/w1/t-bad\n^{commit}\n")
    loose_refs(str(common), str(folder))
    assert not (common / "escaped").exists()
    assert not (folder / "t-bad").exists()
