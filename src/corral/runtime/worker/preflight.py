"""What a worker refuses before it starts: options that would fail every task it takes.

`check` is the one validation of a worker's options (policies.WorkerOptions), run by
every worker before it registers (runtime/worker/assembly.py: `worker start`, and
`run_worker` with its function) and by `orchestrator start` before it takes its state
row or spawns a slot, so that a pool refuses at start, with exit 2 and one line, what its
slots would refuse at theirs (instead of restarting them in a loop, or letting them
claim tasks only to fail them). Values were parsed already (units, bounds: settings);
here they meet the world: the exec on PATH, the function importable, the folders and the
repository there, the branch names git accepts, a sandbox's engine working (sandbox.py),
the tools it requires (exit 3 when one is missing or too old: tools.py), and for an agent
the traces OTEL_* ask for (tracing.py: an exporter corral has, the `otel` extra installed).

It returns what it resolved, so the assembly builds the runner from the same values
and never checks twice.
"""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from corral.foundation.errors import InvalidInput
from corral.foundation.policies import WorkerOptions, WorktreePolicy
from corral.git.worktrees import Worktrees
from corral.model.agents import AgentProfile
from corral.model.artifacts import check_pattern
from corral.model.labels import parse_labels
from corral.model.providers import check_provider
from corral.model.tasks import check_names
from corral.model.tools import parse_requirement
from corral.runtime.worker import tracing
from corral.runtime.worker.prompts import DEFAULT_TEMPLATE, load_template
from corral.runtime.worker.sandbox import Sandbox, choose
from corral.runtime.worker.tools import FoundTool, find_tools
from corral.usecases.agents import load_profile


@dataclass(frozen=True, slots=True, kw_only=True)
class Checked:
    """The options as the runner uses them: the resolved command or function, and so on."""

    argv: tuple[str, ...]  # --exec, its program an absolute path; () for --call
    function: Callable[..., Any] | None  # --call
    labels: dict[str, str]
    template: str
    worktrees: Worktrees | None  # --worktree
    base_ref: str  # --worktree: the branch or commit task branches start from
    agent: AgentProfile | None = None  # --agent: its programs absolute paths
    provider: str | None = None  # --provider, else the agent's own account
    tools: tuple[FoundTool, ...] = ()  # --require, found
    traced: bool = False  # an agent's runs, each a span: OTEL_* ask for them (tracing.py)
    sandbox: Sandbox | None = None  # --sandbox or the agent's, its engine checked to work


def check(
    options: WorkerOptions,
    *,
    worker: str,
    policy: WorktreePolicy,
    agents_folder: str,
    function: Callable[..., Any] | None = None,
) -> Checked:
    """The options of worker `worker` resolved; InvalidInput (exit 2) naming the first
    option that cannot work. `agents_folder` holds the user's agent profiles; `function`
    is the work `run_worker` was given, in place of `--call`."""
    o = options
    _check_words(o)
    agent = _agent(o, agents_folder) if o.agent else None
    if agent is not None and o.call:
        raise InvalidInput("call", "nothing with --agent (an agent is a command)", o.call)
    if agent is None and bool(o.exec) == bool(o.call or function):
        expected = (
            "a command (--exec, pool.exec), a Python function (--call) or an agent (--agent),"
            " one of them"
        )
        raise InvalidInput("exec", expected, o.exec or None)
    if o.batch > 1 and (o.exec or agent is not None):
        raise InvalidInput("batch", "1 with --exec (batches are for --call workers)", o.batch)
    check_names("kind", o.kinds)  # as `add --kind` checks one, and `worker register`
    check_names("queue", o.queues)
    if o.workdir and not os.path.isdir(o.workdir):
        raise InvalidInput("workdir", "an existing folder", o.workdir)
    _check_artifacts(o)
    template = load_template(o.prompt_template) if o.prompt_template else DEFAULT_TEMPLATE
    required = tuple(parse_requirement("require", spec) for spec in o.require)
    worktrees, base = _worktrees(o, worker, policy) if o.worktree else (None, "")
    provider = o.provider or (agent.provider if agent is not None else None)
    labels = parse_labels("label", o.labels)
    provider = None if provider is None else check_provider(provider)
    traced = agent is not None and tracing.check(os.environ)  # OTEL_* ask for spans
    sandbox = choose(o.sandbox, o.network, agent, function=bool(o.call or function))
    return Checked(
        argv=agent.command if agent is not None else _argv(o.exec) if o.exec else (),
        function=None if o.exec or agent is not None else function or _function(o.call),
        labels=labels,
        template=template,
        worktrees=worktrees,
        base_ref=base,
        agent=agent,
        provider=provider,
        traced=traced,
        sandbox=sandbox,
        tools=find_tools(required),  # last: every input refused (exit 2) before the world
    )


# Options that become one word of an agent's or git's command line (`--model M`): a value
# starting with `-` would be read there as an option (`--model --upload-pack=...`).
_WORDS = ("agent", "model", "provider", "base", "version")


def _check_words(o: WorkerOptions) -> None:
    for name in _WORDS:
        value: str = getattr(o, name)
        if value.startswith("-") or not value.isprintable():
            raise InvalidInput(name, "a printable word not starting with -", value)


def _agent(o: WorkerOptions, folder: str) -> AgentProfile:
    """The agent profile `--agent` names, its programs found on PATH (tasks may run in
    other working directories, so as absolute paths)."""
    profile = load_profile(o.agent, folder, exec_argv=_argv(o.exec) if o.exec else ())
    command = _on_path("agent", profile.command)
    resume = _on_path("agent", profile.resume) if profile.resume else ()
    return replace(profile, command=command, resume=resume)


def _on_path(field: str, argv: tuple[str, ...]) -> tuple[str, ...]:
    found = shutil.which(argv[0])
    if found is None:
        raise InvalidInput(field, "a program on PATH, or the path of an executable", argv[0])
    return (os.path.abspath(found), *argv[1:])


def _argv(line: str) -> tuple[str, ...]:
    try:
        argv = tuple(shlex.split(line))
    except ValueError as exc:
        raise InvalidInput("exec", "a command line with balanced quotes", str(exc)) from None
    if not argv:
        raise InvalidInput("exec", "a command to run", line)
    return _on_path("exec", argv)  # tasks may run in other working directories


def _function(target: str) -> Callable[..., Any]:
    module_name, sep, attr = target.partition(":")
    # A dotted module name, absolute: `../x` or `.x` is a relative import (TypeError).
    if not (sep and attr and all(part.isidentifier() for part in module_name.split("."))):
        raise InvalidInput("call", "MODULE:FUNCTION, e.g. mypkg.tasks:handle", target)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: modules beside the caller import
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InvalidInput("call", "an importable MODULE:FUNCTION", f"{target} ({exc})") from None
    if not callable(function):
        raise InvalidInput("call", "a callable", target)
    return function  # type: ignore[no-any-return]


def _worktrees(o: WorkerOptions, worker: str, policy: WorktreePolicy) -> tuple[Worktrees, str]:
    """The repository of the workdir, checked: git there, the base, the branch names and
    the worktrees' folder."""
    if not o.exec and not o.agent:
        raise InvalidInput(
            "worktree", "a command worker (--exec, --agent); --call runs in this process"
        )
    trees = Worktrees.open(o.workdir or os.getcwd(), policy)
    base = o.base or policy.base or trees.default_base()
    if trees.remote is not None:  # the base of record is the remote's (git/remote_base.py)
        trees.remote.check()
        if trees.remote.fetch(base) is None:
            raise InvalidInput("base", f"a branch of remote {trees.remote.name}", base)
    elif trees.git.commit_of(base) is None:
        raise InvalidInput("base", "a branch or commit of the repository", base)
    trees.check_policy(worker)
    for key, line in (
        ("worktree.setup", policy.setup),
        ("worktree.land_command", policy.land_command),
        ("worktree.pr_command", policy.pr_command),
        ("worktree.verify", policy.verify),
    ):
        try:
            shlex.split(line)
        except ValueError:
            raise InvalidInput(key, "a command line with balanced quotes", line) from None
    return trees, base


def _check_artifacts(o: WorkerOptions) -> None:
    """Globs that stay inside a task's working directory, for a worker that has one."""
    for pattern in o.artifacts:
        check_pattern(pattern)
    if o.artifacts and o.call:
        raise InvalidInput("artifacts", "a worker that runs a command (--exec or --agent)")
