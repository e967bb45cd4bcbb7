"""Which agent profile a worker runs: a built-in one, or the user's own in
`.corral/agents/NAME.toml` (beside the database; `agents_dir`).

A user profile is a TOML file of the profile's fields (model/agents.py says what each
means). With `extends = "claude"` it starts from that built-in profile and changes only
what it names: a binary's path, a flag, the provider account:

    # .corral/agents/claude-opus.toml
    extends = "claude"
    command = ["/opt/claude/bin/claude", "-p", "--output-format", "stream-json", "--verbose"]
    resume = ["/opt/claude/bin/claude", "-p", "--output-format", "stream-json", "--verbose",
              "--resume", "{session_id}"]
    provider = "claude:work"

A file's name is the profile's name; a user profile named as a built-in one replaces it.
An extended profile keeps its base's `permissions` (the flags that let it work unattended)
unless the file sets them (`permissions = []`: none), and they are left out whenever its
command or `--agent-arg` already chooses the tool's permissions.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from typing import Any

from corral.foundation.errors import InvalidInput
from corral.model.agents import BUILT_IN, PROFILE_PATTERN, AgentProfile, with_overrides
from corral.store.location import state_dir

GENERIC = "generic"  # `--exec CMD` as it is, with the last-line usage convention
_LISTS = (
    "command",
    "resume",
    "model",
    "limit_patterns",
    "version_command",
    "permissions",
    "permission_flags",
    "env",
    "sandbox_home",
)
_TEXTS = ("output", "prompt", "provider", "written_against", "sandbox", "network")
MAX_PROFILE_BYTES = 65536


def agents_dir(db: str) -> str:
    """Where a store's user profiles live: `agents/` beside a SQLite file."""
    return os.path.join(state_dir(db), "agents")


def load_profile(name: str, folder: str, *, exec_argv: tuple[str, ...] = ()) -> AgentProfile:
    """Profile `name`: the user's file in `folder`, else a built-in one; `generic` is the
    `--exec` command (`exec_argv`). InvalidInput (exit 2) names what is wrong."""
    if not PROFILE_PATTERN.fullmatch(name):
        raise InvalidInput("agent", "a profile name of lowercase letters, digits, - and _", name)
    if name == GENERIC:
        if not exec_argv:
            raise InvalidInput("exec", "a command (--exec) for --agent generic")
        return AgentProfile(name=GENERIC, command=exec_argv).check()
    if exec_argv:
        raise InvalidInput("exec", f"nothing with --agent {name} (it is the agent's command)")
    path = os.path.join(folder, f"{name}.toml")
    if os.path.isfile(path):
        return _from_file(name, path)
    if name in BUILT_IN:
        return BUILT_IN[name]
    known = ", ".join(sorted({*BUILT_IN, GENERIC, *user_profiles(folder)}))
    raise InvalidInput("agent", f"one of {known}", name)


def user_profiles(folder: str) -> list[str]:
    """The names of the user's profiles in `folder`."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = (n.removesuffix(".toml") for n in names if n.endswith(".toml"))
    return sorted(n for n in found if PROFILE_PATTERN.fullmatch(n))


def _from_file(name: str, path: str) -> AgentProfile:
    where = f"agents/{name}.toml"
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PROFILE_BYTES + 1)
        if len(raw) > MAX_PROFILE_BYTES:
            raise InvalidInput(where, f"a file of at most {MAX_PROFILE_BYTES} bytes")
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(where, "a readable TOML file", str(exc)) from None
    except RecursionError:
        raise InvalidInput(where, "a TOML file whose values nest less than 500 deep") from None
    base_name = data.pop("extends", None)
    if base_name is not None and (not isinstance(base_name, str) or base_name not in BUILT_IN):
        raise InvalidInput(f"{where} extends", f"one of {', '.join(sorted(BUILT_IN))}", base_name)
    fields = _fields(where, data)
    if base_name is None:
        if "command" not in fields:
            raise InvalidInput(f"{where} command", "a list of strings (or `extends`)")
        return _checked(where, AgentProfile(name=name, **fields))
    return _checked(where, with_overrides(BUILT_IN[base_name], name, fields))


def _checked(where: str, profile: AgentProfile) -> AgentProfile:
    """`profile` checked, its error naming the file and key (`agents/x.toml command`),
    not the profile's field path, so the user knows which file to open."""
    try:
        return profile.check()
    except InvalidInput as exc:
        key = exc.field.removeprefix(f"agents.{profile.name}.")
        raise InvalidInput(f"{where} {key}", exc.expected, exc.got) from None


def _fields(where: str, data: dict[str, Any]) -> dict[str, Any]:
    """The profile fields of a file, each of its type; InvalidInput for any other key."""
    fields: dict[str, Any] = {}
    for key, value in data.items():
        if key in _LISTS:
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidInput(f"{where} {key}", "a list of strings", value)
            fields[key] = tuple(value)
        elif key in _TEXTS:
            if not isinstance(value, str):
                raise InvalidInput(f"{where} {key}", "a string", value)
            fields[key] = value
        elif key == "memory_mb":  # checked with the profile (AgentProfile.check)
            fields[key] = value
        elif key == "prices":
            if not isinstance(value, dict):
                raise InvalidInput(
                    f"{where} prices", "a table of dollars per million tokens", value
                )
            fields[key] = dict(value)  # each key and price checked with the profile
        else:
            known = ", ".join(("extends", *_LISTS, *_TEXTS, "memory_mb", "prices"))
            raise InvalidInput(f"{where} {key}", f"one of the keys {known}")
    return fields


VERSION_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileSeen:
    """One profile as `corral agent list` shows it."""

    name: str
    source: str  # "built in", or the file: "agents/NAME.toml"
    provider: str | None = None
    can_resume: bool = False
    command: str = ""  # the command line, as a shell would show it
    program: str | None = None  # where its program is on PATH; None: missing
    version: str | None = None  # what the program says its version is
    written_against: str = ""
    error: str | None = None  # a profile file that is not valid: why

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `agent list`)."""
        return {
            "name": self.name,
            "source": self.source,
            "provider": self.provider,
            "can_resume": self.can_resume,
            "command": self.command,
            "program": self.program,
            "version": self.version,
            "written_against": self.written_against,
            "error": self.error,
        }


def agent_profiles(folder: str) -> list[ProfileSeen]:
    """Every profile a worker could run with the user's profiles in `folder`: the built-in
    ones (those the user replaced by a file of the same name excepted), then the user's."""
    users = user_profiles(folder)
    seen = [_seen(BUILT_IN[name], "built in") for name in sorted(BUILT_IN) if name not in users]
    seen.append(ProfileSeen(name=GENERIC, source="built in", command="your --exec"))
    for name in users:
        try:
            profile = load_profile(name, folder)
        except InvalidInput as exc:
            seen.append(ProfileSeen(name=name, source=f"agents/{name}.toml", error=exc.message))
            continue
        seen.append(_seen(profile, f"agents/{name}.toml"))
    return seen


def _seen(profile: AgentProfile, source: str) -> ProfileSeen:
    program = shutil.which(profile.command[0])
    return ProfileSeen(
        name=profile.name,
        source=source,
        provider=profile.provider,
        can_resume=profile.can_resume,
        command=shlex.join((*profile.command, *profile.permissions)),
        program=program,
        version=_version(profile) if program is not None else None,
        written_against=profile.written_against,
    )


def _version(profile: AgentProfile) -> str | None:
    """The first line the profile's version command prints, if it answers in time."""
    if not profile.version_command:
        return None
    try:
        done = subprocess.run(  # noqa: S603 - an argument list from the profile, no shell
            profile.version_command,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = [line.strip() for line in done.stdout.splitlines() if line.strip()]
    return lines[0][:100] if done.returncode == 0 and lines else None
