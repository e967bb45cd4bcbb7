"""A sandboxed run (`--sandbox bwrap|container`) in a real repository, with real bwrap:
what its agent may not reach, and the work that still lands."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import sandbox_or_skip

from corral.runtime.worker.sandbox import Sandbox

from .conftest import git

PROBES = (
    *("ssh", "store", "other_worktree", "outside", "base_ref", "network", "rm_home"),
    *("repo_lock", "sibling_ref", "sibling_delete", "sibling_packed"),
)

AGENT = """#!/bin/bash
# Each probe prints `NAME: succeeded` or `NAME: failed`; then the task's own edit.
probe() {{ local name=$1; shift; if "$@" >/dev/null 2>&1; then echo "$name: succeeded";
    else echo "$name: failed"; fi; }}
probe config cat "$HOME/.stand-in.json"
probe ssh cat "$HOME/.ssh/id_rsa"
probe store cat {db}
probe other_worktree cat {other}/secret.txt
probe outside sh -c 'echo x > {repo}/outside.txt'
probe base_ref git update-ref refs/heads/main HEAD
probe repo_lock flock -n {repo}/.git/corral-merge.lock true
probe sibling_ref sh -c 'git update-ref refs/heads/corral/w1/t-old "$(git -c user.name=a \
    -c user.email=a@example.com commit-tree -m moved "HEAD^{{tree}}")"'
probe sibling_delete rm {repo}/.git/refs/heads/corral/w1/t-0ld
probe sibling_packed sh -c 'git update-ref refs/heads/corral/w1/t-packed "$(git -c \
    user.name=a -c user.email=a@example.com commit-tree -m moved "HEAD^{{tree}}")"'
probe commit sh -c 'echo own > own.txt && git add own.txt &&
    git -c user.name=agent -c user.email=agent@example.com commit -qm own'
probe network bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}'
probe rm_home rm -rf "$HOME"
echo work > feature.txt
"""


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A TCP listener on loopback that the agent tries to reach."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.setblocking(False)
        yield server


@pytest.fixture
def world(tmp_path: Path, repo: Path, listener: socket.socket) -> dict[str, Path]:
    """A HOME with a key in .ssh and the agent's own config file, another task's worktree
    with a secret, the store in the repository's .corral/, and the stand-in agent's
    profile (sandboxed by bwrap, network off, its config file under HOME declared)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("private key\n")
    (home / ".stand-in.json").write_text("{}\n")
    state = repo / ".corral"
    other = state / "worktrees" / "corral-w0-other"
    git(repo, "worktree", "add", "--quiet", "-b", "other", str(other))
    git(repo, "branch", "corral/w1/t-packed", "other")  # an earlier task, since packed
    git(repo, "pack-refs", "--all")
    for sibling in ("t-old", "t-0ld"):  # the worker's earlier tasks, in review
        git(repo, "branch", f"corral/w1/{sibling}", "other")
    (other / "secret.txt").write_text("another task's work\n")
    db = state / "corral.db"
    script = tmp_path / "stand-in.sh"
    port = listener.getsockname()[1]
    script.write_text(AGENT.format(db=db, other=other, repo=repo, port=port))
    script.chmod(0o755)
    (state / "agents").mkdir()
    (state / "agents" / "stand-in.toml").write_text(
        f'command = ["{script}"]\nsandbox = "bwrap"\nnetwork = "off"\n'
        'sandbox_home = [".stand-in.json"]\n'
    )
    return {"home": home, "repo": repo, "db": db, "other": other}


def _run(cli, world: dict[str, Path], *flags: str) -> tuple[dict[str, str], str]:
    """Add a task and run it with the stand-in agent in a worktree: each probe's result,
    and the task's status."""
    db = str(world["db"])
    task = cli("--db", db, "add", "probe and edit").out.strip()
    started = cli(
        *("--db", db, "worker", "start", "--name", "w1", "--agent", "stand-in", "--once"),
        *("--worktree", "--workdir", str(world["repo"]), *flags),
        env={"HOME": str(world["home"])},
    )
    assert 0 == started.code, started.err
    run = json.loads(cli("--db", db, "runs", "--task", task, "--json").out)[0]
    lines = Path(run["transcript_path"]).read_text().splitlines()
    results = dict(line.split(": ", 1) for line in lines if ": " in line)
    return results, json.loads(cli("--db", db, "show", task, "--json").out)["status"]


def _connected(listener: socket.socket) -> bool:
    """Whether a connection reached the listener (the kernel accepted it already)."""
    try:
        listener.accept()[0].close()
    except BlockingIOError:
        return False
    return True


def test_a_sandboxed_agent_reaches_nothing_but_its_worktree_and_its_work_lands(
    cli, world, listener
):
    """Under bwrap with the network off, reading ~/.ssh, the store and another worktree,
    writing outside the worktree, connecting to a loopback listener, taking corral's
    merge lock (which would stall every landing), moving or deleting its worker's other
    task branches (a packed one too) and `rm -rf ~` all fail; the host is untouched; its
    declared config is readable; its edit lands."""
    sandbox_or_skip("bwrap")
    results, status = _run(cli, world)
    assert {name: "failed" for name in PROBES} | {
        "config": "succeeded",
        "commit": "succeeded",
    } == results
    assert "done" == status
    assert "work\n" == git(world["repo"], "show", "main:feature.txt") + "\n"
    assert "own\n" == git(world["repo"], "show", "main:own.txt") + "\n"  # its own commit
    other = git(world["repo"], "rev-parse", "other")
    for sibling in ("t-old", "t-0ld", "t-packed"):
        assert other == git(world["repo"], "rev-parse", f"corral/w1/{sibling}")
    assert "private key\n" == (world["home"] / ".ssh" / "id_rsa").read_text()
    assert "{}\n" == (world["home"] / ".stand-in.json").read_text()
    assert "another task's work\n" == (world["other"] / "secret.txt").read_text()
    assert not (world["repo"] / "outside.txt").exists()
    assert not _connected(listener)


def test_without_the_sandbox_the_same_probes_succeed(cli, world, listener):
    """`--sandbox off` over the profile's bwrap: every probe succeeds (so the test above
    can fail), and the agent's `rm -rf ~` takes the home folder with it."""
    results, status = _run(cli, world, "--sandbox", "off")
    assert {name: "succeeded" for name in ("config", "commit", *PROBES)} == results
    assert "done" == status
    assert not world["home"].exists()
    assert _connected(listener)


def test_the_network_flag_overrides_the_profile(cli, world, listener):
    """`--network on` gives the sandboxed run the host's network; the rest stays hidden."""
    sandbox_or_skip("bwrap")
    results, _ = _run(cli, world, "--network", "on")
    assert ("succeeded", "failed") == (results["network"], results["ssh"])
    assert _connected(listener)


def test_the_container_sandbox_holds_the_same_rules(cli, world, listener):
    """`--sandbox container` (podman over the host's root): the same probes fail and the
    edit lands. Skipped where podman is missing or cannot start a container."""
    sandbox_or_skip("container")
    results, status = _run(cli, world, "--sandbox", "container")
    assert {name: "failed" for name in PROBES} | {
        "config": "succeeded",
        "commit": "succeeded",
    } == results
    assert "done" == status
    assert "private key\n" == (world["home"] / ".ssh" / "id_rsa").read_text()
    assert not _connected(listener)


TOOL = """#!{python}
import pathlib, toolmod
try:
    pathlib.Path({secret!r}).read_text()
    print("secret: succeeded")
except OSError:
    print("secret: failed")
print("tool:", toolmod.WORD)
pathlib.Path("feature.txt").write_text("work\\n")
"""


def test_agents_installed_under_home_start_with_their_installation_and_nothing_else(cli, repo):
    """A pipx-style tool (a venv under HOME, linked from ~/.local/bin) and an npm-style one
    under an nvm-style prefix (its package, and the node its `#!/usr/bin/env node` finds)
    both start in the sandbox and their work lands; ~/.local/share and the prefix's
    etc/npmrc (a registry token) stay hidden."""
    sandbox_or_skip("bwrap")
    home = repo.parent / "home"
    venv = home / ".local" / "pipx" / "venvs" / "tool"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (site,) = venv.glob("lib/python*/site-packages")
    (site / "toolmod.py").write_text('WORD = "from its venv"\n')
    secret = home / ".local" / "share" / "keyring.txt"
    secret.parent.mkdir(parents=True)
    secret.write_text("a secret\n")
    tool = venv / "bin" / "tool"
    tool.write_text(TOOL.format(python=venv / "bin" / "python", secret=str(secret)))
    tool.chmod(0o755)
    (home / ".local" / "bin").mkdir()
    (home / ".local" / "bin" / "tool").symlink_to(tool)
    (repo / ".corral").mkdir(exist_ok=True)
    db = str(repo / ".corral" / "corral.db")
    assert 0 == cli("--db", db, "init").code

    def run(program: Path, path: str) -> str:
        task = cli("--db", db, "add", "edit").out.strip()
        started = cli(
            *("--db", db, "worker", "start", "--name", "w1", "--exec", str(program), "--once"),
            *("--worktree", "--workdir", str(repo), "--sandbox", "bwrap"),
            env={"HOME": str(home), "PATH": path},
        )
        assert 0 == started.code, started.err
        run = json.loads(cli("--db", db, "runs", "--task", task, "--json").out)[0]
        assert "done" == json.loads(cli("--db", db, "show", task, "--json").out)["status"]
        return Path(run["transcript_path"]).read_text()

    plain = run(home / ".local" / "bin" / "tool", f"{home}/.local/bin:/usr/bin:/bin")
    assert "secret: failed\ntool: from its venv\n" == plain
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the npm half cannot run")
    prefix = home / ".nvm" / "versions" / "node" / "v20"
    package = prefix / "lib" / "node_modules" / "agent"
    (package / "bin").mkdir(parents=True)
    (package / "package.json").write_text('{"name": "agent", "bin": "bin/agent.js"}\n')
    (package / "words.js").write_text('module.exports = "from its package";\n')
    script = package / "bin" / "agent.js"
    script.write_text(
        "#!/usr/bin/env node\nconst fs = require('fs');\nlet npmrc = 'failed';\n"
        f"try {{ fs.readFileSync('{prefix}/etc/npmrc'); npmrc = 'succeeded' }} catch (e) {{}}\n"
        "console.log('npmrc: ' + npmrc + '\\nagent: ' + require('../words.js'));\n"
        "fs.writeFileSync('npm.txt', 'work\\n');\n"
    )
    script.chmod(0o755)
    (prefix / "etc").mkdir()
    (prefix / "etc" / "npmrc").write_text("//registry.npmjs.org/:_authToken=secret\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "node").symlink_to(node)
    (prefix / "bin" / "agent").symlink_to(script)
    npm = run(prefix / "bin" / "agent", f"{prefix}/bin:/usr/bin:/bin")
    assert "npmrc: failed\nagent: from its package\n" == npm


def test_what_the_host_shows_read_only_is_not_bound_again(tmp_path: Path) -> None:
    """A `#!/bin/bash` agent under a hidden /tmp: its script is bound, but not bash's
    folders (`/usr/bin`, `/usr/lib` hold a Node prefix's `lib/node_modules` on a machine
    with global npm packages), which the read-only host shows already."""
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/bash\necho hi\n")
    script.chmod(0o755)
    sandbox = Sandbox(kind="bwrap", engine="/usr/bin/bwrap", network=True)
    words, _ = sandbox.contain(
        str(script),
        root=str(tmp_path),
        cwd=str(tmp_path),
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")},
        state_dir=str(tmp_path / ".corral"),
        files={},
        run_id="r-1",
    )
    bound = [words[i + 1] for i, w in enumerate(words) if w == "--ro-bind"]
    assert str(script) in bound
    assert [] == [p for p in bound if p in ("/bin", "/lib", "/usr/bin", "/usr/lib")]
