"""The sandbox's mounts in order and its command lines (model/sandboxes.py), and a
profile's sandbox keys checked (model/agents.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.agents import BUILT_IN, AgentProfile
from corral.model.sandboxes import Access, Mount, SandboxPlan, ordered, wrapper

H, R, W = Access.HIDDEN, Access.READ_ONLY, Access.WRITABLE


def _mounts(*pairs: tuple[str, Access]) -> tuple[Mount, ...]:
    return tuple(Mount(path=p, access=a) for p, a in pairs)


def test_ancestors_come_before_their_descendants_whatever_the_order_given() -> None:
    """A worktree under the hidden store folder is bound after the folder is hidden, and
    the store folder inside a writable workdir is hidden after the workdir is bound."""
    given = _mounts(
        ("/repo/.corral/worktrees/t1", W), ("/repo/.corral", H), ("/repo", W), ("/var", H)
    )
    assert [
        ("/repo", W),
        ("/var", H),
        ("/repo/.corral", H),
        ("/repo/.corral/worktrees/t1", W),
    ] == [(m.path, m.access) for m in ordered(given)]


def test_one_mount_per_path_the_most_open_wins() -> None:
    """The same path hidden and bound writable is bound writable; trailing slashes and
    doubled ones name the same path."""
    given = _mounts(("/home/u/", H), ("/home//u", W), ("/home/u", R))
    assert [("/home/u", W)] == [(m.path, m.access) for m in ordered(given)]


def _plan(kind: str, *, network: bool) -> SandboxPlan:
    return SandboxPlan(
        kind=kind,
        engine=f"/usr/bin/{'bwrap' if kind == 'bwrap' else 'podman'}",
        network=network,
        cwd="/repo/.corral/worktrees/t1",
        mounts=_mounts(("/repo/.corral/worktrees/t1", W), ("/repo/.corral", H), ("/repo/.git", R)),
        env_names=("HOME", "PATH") if kind == "container" else (),
        name="corral-r1" if kind == "container" else "",
    )


def test_bwrap_words_hide_bind_and_cut_the_network() -> None:
    """bwrap: the host read-only, its own /dev and /proc, the mounts in order, no network
    without --share-net, and the pid namespace that dies with the runner."""
    assert (
        "/usr/bin/bwrap", "--die-with-parent", "--unshare-all",
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/repo/.corral",
        "--ro-bind", "/repo/.git", "/repo/.git",
        "--bind", "/repo/.corral/worktrees/t1", "/repo/.corral/worktrees/t1",
        "--chdir", "/repo/.corral/worktrees/t1", "--",
    ) == wrapper(_plan("bwrap", network=False))  # fmt: skip
    assert "--share-net" == wrapper(_plan("bwrap", network=True))[3]


def test_podman_words_run_over_the_hosts_root_read_only() -> None:
    """podman: the host's root read-only (`--rootfs /` last: podman reads no option after
    it), the same mounts as volumes and tmpfs, the variables passed by name, no network
    but with --network on."""
    assert (
        "/usr/bin/podman", "run", "--rm", "-i", "--read-only",
        "--network", "none", "--name", "corral-r1",
        "--tmpfs", "/repo/.corral",
        "--volume", "/repo/.git:/repo/.git:ro",
        "--volume", "/repo/.corral/worktrees/t1:/repo/.corral/worktrees/t1:rw",
        "--env", "HOME", "--env", "PATH",
        "--workdir", "/repo/.corral/worktrees/t1", "--rootfs", "/",
    ) == wrapper(_plan("container", network=False))  # fmt: skip
    assert "host" in wrapper(_plan("container", network=True))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"sandbox": "chroot"}, "agents.x.sandbox"),
        ({"network": "maybe"}, "agents.x.network"),
        ({"sandbox_home": ("../.ssh",)}, "agents.x.sandbox_home"),
        ({"sandbox_home": ("/etc",)}, "agents.x.sandbox_home"),
    ],
)
def test_a_profiles_sandbox_keys_are_checked(fields: dict[str, object], field: str) -> None:
    """An unknown sandbox or network, or a HOME entry that leaves HOME, names its key."""
    with pytest.raises(InvalidInput) as refused:
        AgentProfile(name="x", command=("x",), **fields).check()  # type: ignore[arg-type]
    assert field == refused.value.field


def test_the_built_in_profiles_declare_their_own_folders_and_no_sandbox() -> None:
    """claude, codex and aider bind their configuration under HOME; none is sandboxed by
    default (it is the user's choice: --sandbox, [pool] sandbox or a profile)."""
    assert (".claude", ".claude.json") == BUILT_IN["claude"].sandbox_home
    assert (".codex",) == BUILT_IN["codex"].sandbox_home
    assert ".aider.conf.yml" in BUILT_IN["aider"].sandbox_home
    assert {"off"} == {p.sandbox for p in BUILT_IN.values()}


def test_the_store_files_are_covered_after_every_mount() -> None:
    """/dev/null over the store's files comes last, so a writable folder bound around
    them cannot show them: in bwrap and in podman alike."""
    bwrap = replace(_plan("bwrap", network=False), emptied=("/repo/.corral/corral.db",))
    podman = replace(_plan("container", network=False), emptied=("/repo/.corral/corral.db",))
    assert ("--ro-bind", "/dev/null", "/repo/.corral/corral.db", "--chdir") == wrapper(bwrap)[-6:-2]
    words = wrapper(podman)
    assert "/dev/null:/repo/.corral/corral.db:ro" == words[words.index("--env") - 1]


def test_the_other_refs_are_kept_read_only_after_every_mount() -> None:
    """The other ref files of the branch's writable folder are bound over themselves last,
    after /dev/null's covers; bwrap skips one deleted before it starts (`-try`)."""
    ref = "/repo/.git/refs/heads/corral/w1/t-old"
    bwrap = replace(_plan("bwrap", network=False), emptied=("/db",), kept=(ref,))
    podman = replace(_plan("container", network=False), kept=(ref,))
    assert ("--ro-bind", "/dev/null", "/db", "--ro-bind-try", ref, ref, "--chdir") == wrapper(
        bwrap
    )[-9:-2]
    assert f"{ref}:{ref}:ro" in wrapper(podman)
