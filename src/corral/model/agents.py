"""Agent profiles: how corral drives one agent CLI, declared as data, no I/O.

A profile says how to build the command line from a prompt, which output format the
agent streams (and so which reader, runtime/worker/agent_streams.py, finds usage, the
session id, a usage limit or a question in it), how to resume a session, and which
provider account it spends. Built in: `claude`, `claude-mcp` (claude with corral's MCP
server and its permission prompts: corral/mcp), `codex`, `aider` and `generic` (any
command: today's `--exec`). A user's own profiles live in `.corral/agents/NAME.toml`
(corral/usecases/agents.py reads them) and may `extends` a built-in one, changing only what
differs (a binary's path, a flag).

Unattended: an agent run by corral has nobody to grant it a permission, so a built-in
profile adds what its tool needs to edit files in a worktree (`permissions`: claude's
`--permission-mode acceptEdits`, codex's `--sandbox workspace-write`), unless the command
or the user's arguments already hold one of the flags by which a user chooses the tool's
permissions (`permission_flags`, as `--flag`, `--flag=value` or `-c sandbox_mode=...`):
then the user's choice stands alone. docs/agents.md "Permissions and commits" says what
each allows.

The prompt reaches the agent as data, never as an option: on stdin, as one argument
after `--`, or in a file named by an argument (aider's `--message-file`). Placeholders
in argument lists are whole arguments: `{session_id}`, `{model}`, `{prompt_file}`; a
value is never spliced into a longer string, so no task field can change an argument's
meaning.
"""

from __future__ import annotations

import re
from typing import Any

from corral.foundation.errors import InvalidInput
from corral.foundation.records import field, record, replace
from corral.foundation.worker_options import NETWORKS, SANDBOXES
from corral.model.providers import check_provider
from corral.model.usage import USAGE_KEYS

PROMPT_MODES = ("stdin", "arg", "file")
OUTPUTS = ("claude-stream-json", "codex-json", "aider-text", "generic")
SESSION = "{session_id}"
MODEL = "{model}"
PROMPT_FILE = "{prompt_file}"
_PLACEHOLDERS = (SESSION, MODEL, PROMPT_FILE)
PROFILE_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
MAX_MEMORY_MB = 2**31 - 1  # 2 PB: more than any host, and still an int32
ENV_NAME = re.compile(r"[A-Za-z_*?][A-Za-z0-9_*?]{0,127}")


@record(frozen=True, slots=True, kw_only=True)
class AgentProfile:
    """One agent CLI, as corral drives it."""

    name: str
    command: tuple[str, ...]  # the agent and its fixed arguments, before the prompt
    output: str = "generic"  # one of OUTPUTS: the format the agent streams on stdout
    prompt: str = "stdin"  # one of PROMPT_MODES
    # A resumed run's command instead of `command`; {session_id} is the session resumed.
    # Empty: the agent cannot resume a session.
    resume: tuple[str, ...] = ()
    model: tuple[str, ...] = ()  # added after the command with --model M; {model} is M
    provider: str | None = None  # the provider account it spends, by default
    # Regular expressions that, found in stderr or the last output when the agent exits
    # other than 0, mean "usage limit reached"; a group named `reset` holds the epoch
    # second of the reset, when the message says it.
    limit_patterns: tuple[str, ...] = ()
    version_command: tuple[str, ...] = ()  # prints the agent's version (`corral agents`)
    # Added after the command so the agent can work unattended, unless the arguments
    # already hold one of `permission_flags` (module docstring).
    permissions: tuple[str, ...] = ()
    permission_flags: tuple[str, ...] = ()
    written_against: str = ""  # the tool's version this profile was checked against
    # The variables the agent reads, which its tasks get (corral.foundation.task_env): a
    # name written whole passes even the secret filter (its key); a pattern (`CLAUDE_*`)
    # only the allow-list.
    env: tuple[str, ...] = ()
    # The memory one run is expected to take at its peak, in MB: a worker starts no run
    # while the host has less available (corral.model.admission). None: not stated.
    memory_mb: int | None = None
    # Dollars per million tokens of each usage key (model/usage.py USAGE_KEYS): what a run
    # costs while it streams, before the agent's own final cost, for budgets
    # (model/budgets.py). Empty: a mid-run cost is unknown (token caps still hold).
    prices: dict[str, float] = field(default_factory=dict)
    # The sandbox its runs get unless `--sandbox` says otherwise (model/sandboxes.py), and
    # their network there; the entries under HOME it keeps its own configuration and
    # sessions in, bound writable into a sandbox's otherwise empty HOME.
    sandbox: str = "off"
    network: str = "on"
    sandbox_home: tuple[str, ...] = ()

    @property
    def can_resume(self) -> bool:
        """Whether a run of this agent can continue an earlier run's session."""
        return bool(self.resume)

    def argv(
        self,
        *,
        model: str | None = None,
        extra: tuple[str, ...] = (),
        session_id: str | None = None,
        prompt_file: str | None = None,
    ) -> tuple[str, ...]:
        """The command line before the prompt (which `prompt` says where to put)."""
        base = self.resume if session_id is not None else self.command
        model_args = self.model if model else ()
        values = {SESSION: session_id, MODEL: model, PROMPT_FILE: prompt_file}
        chosen = self.permissions_chosen((*base, *extra))
        permissions = () if chosen else self.permissions
        return tuple(_fill(arg, values) for arg in (*base, *permissions, *model_args, *extra))

    def permissions_chosen(self, args: tuple[str, ...]) -> bool:
        """Whether `args` choose the tool's permissions (one of `permission_flags`, alone
        or as `--flag=value`, or a config override naming one: `sandbox_mode=...`)."""
        return any(arg.partition("=")[0] in self.permission_flags for arg in args)

    def check(self) -> AgentProfile:
        """This profile, if it is whole and consistent; else InvalidInput naming the field."""
        if not PROFILE_PATTERN.fullmatch(self.name):
            raise InvalidInput("agent", "a name of lowercase letters, digits, - and _", self.name)
        if not self.command or not all(isinstance(a, str) and a for a in self.command):
            raise InvalidInput(f"agents.{self.name}.command", "a non-empty list of strings")
        if self.output not in OUTPUTS:
            raise InvalidInput(f"agents.{self.name}.output", f"one of {', '.join(OUTPUTS)}")
        if self.prompt not in PROMPT_MODES:
            raise InvalidInput(f"agents.{self.name}.prompt", f"one of {', '.join(PROMPT_MODES)}")
        self._check_placeholders()
        if not all(isinstance(n, str) and ENV_NAME.fullmatch(n) for n in self.env):
            raise InvalidInput(f"agents.{self.name}.env", "a list of variable names or patterns")
        if self.provider is not None:
            check_provider(self.provider)
        self._check_memory()
        self._check_prices()
        self._check_sandbox()
        for pattern in self.limit_patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidInput(
                    f"agents.{self.name}.limit_patterns", f"regular expressions ({exc})", pattern
                ) from None
        return self

    def _check_memory(self) -> None:
        """`memory_mb` unset, or a whole number of MB a host could have."""
        memory = self.memory_mb
        if memory is None:
            return
        if (
            isinstance(memory, bool)
            or not isinstance(memory, int)
            or not 1 <= memory <= MAX_MEMORY_MB
        ):
            expected = f"a whole number of MB from 1 to {MAX_MEMORY_MB}"
            raise InvalidInput(f"agents.{self.name}.memory_mb", expected, memory)

    def _check_prices(self) -> None:
        """Each price is of a usage key, in dollars per million tokens."""
        for key, price in self.prices.items():
            if key not in USAGE_KEYS:
                raise InvalidInput(
                    f"agents.{self.name}.prices", f"keys of {', '.join(USAGE_KEYS)}", key
                )
            if (
                isinstance(price, bool)
                or not isinstance(price, int | float)
                or not 0 <= price < 1e6
            ):
                raise InvalidInput(
                    f"agents.{self.name}.prices.{key}",
                    "dollars per million tokens, 0 or more",
                    price,
                )

    def _check_sandbox(self) -> None:
        """A known sandbox and network; HOME entries that stay under HOME."""
        if self.sandbox not in SANDBOXES:
            raise InvalidInput(f"agents.{self.name}.sandbox", f"one of {', '.join(SANDBOXES)}")
        if self.network not in NETWORKS:
            raise InvalidInput(f"agents.{self.name}.network", f"one of {', '.join(NETWORKS)}")
        for entry in self.sandbox_home:
            parts = entry.split("/")
            if entry.startswith("/") or not entry or ".." in parts or "" in parts:
                raise InvalidInput(
                    f"agents.{self.name}.sandbox_home", "paths relative to HOME, without ..", entry
                )

    def _check_placeholders(self) -> None:
        """Each argument list that needs its placeholder has it."""
        if self.prompt == "file" and PROMPT_FILE not in self.command:
            raise InvalidInput(
                f"agents.{self.name}.command", f"an argument {PROMPT_FILE} with prompt = file"
            )
        if self.resume and SESSION not in self.resume:
            raise InvalidInput(f"agents.{self.name}.resume", f"an argument {SESSION}")
        if self.model and MODEL not in self.model:
            raise InvalidInput(f"agents.{self.name}.model", f"an argument {MODEL}")


def _fill(arg: str, values: dict[str, str | None]) -> str:
    """`arg`, or the value it names when it is a whole placeholder."""
    if arg in _PLACEHOLDERS:
        value = values[arg]
        if value is None:
            raise InvalidInput("agent", f"a value for {arg}")
        return value
    return arg


# The tools' own documentation, checked 2026-11-26; docs/agents.md says the same.
BUILT_IN: dict[str, AgentProfile] = {
    "claude": AgentProfile(
        name="claude",
        command=("claude", "-p", "--output-format", "stream-json", "--verbose"),
        output="claude-stream-json",
        prompt="stdin",
        resume=("claude", "-p", "--output-format", "stream-json", "--verbose", "--resume", SESSION),
        model=("--model", MODEL),
        provider="claude",
        # Older releases printed `Claude AI usage limit reached|<epoch>` and exited 1.
        limit_patterns=(r"usage limit reached\|(?P<reset>\d{9,11})", r"(?i)usage limit reached"),
        version_command=("claude", "--version"),
        written_against="Claude Code 2.1 (stream-json, headless mode docs)",
        # Claude Sonnet 4.5's list prices (anthropic.com/pricing, 2026-11), cache writes
        # at the five-minute rate: a profile for another model says its own.
        prices={
            "input_tokens": 3.0,
            "output_tokens": 15.0,
            "cache_write_tokens": 3.75,
            "cache_read_tokens": 0.30,
        },
        # Without one, headless Claude Code edits nothing: each Write/Edit is denied and
        # listed in the result's permission_denials (the run then waits: refused).
        permissions=("--permission-mode", "acceptEdits"),
        # --allowedTools is not among them: its rules add to the mode, they choose none.
        permission_flags=(
            "--permission-mode",
            "--dangerously-skip-permissions",
            "--permission-prompt-tool",
        ),
        # Claude Code's settings docs: its key, its login token, and its own settings.
        env=(
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "ANTHROPIC_*",
            "CLAUDE_*",
            "DISABLE_*",
        ),
        # Its settings, credentials and sessions (which --resume reads back).
        sandbox_home=(".claude", ".claude.json"),
    ),
    "codex": AgentProfile(
        name="codex",
        command=("codex", "exec", "--json", "-"),
        output="codex-json",
        prompt="stdin",
        resume=("codex", "exec", "resume", "--json", SESSION, "-"),
        model=("--model", MODEL),
        provider="codex",
        limit_patterns=(r"(?i)you've hit your usage limit", r"(?i)usage_limit_reached"),
        version_command=("codex", "--version"),
        written_against="Codex CLI 0.146 (`codex exec --json` events)",
        # codex exec's default sandbox is read-only; --full-auto is deprecated. In
        # workspace-write a linked worktree's git dir (under the main repository's .git)
        # is not writable: codex cannot commit there, so corral commits for it.
        permissions=("--sandbox", "workspace-write"),
        permission_flags=(
            "--sandbox",
            "-s",
            "--dangerously-bypass-approvals-and-sandbox",
            "--yolo",
            "--full-auto",
            "sandbox_mode",
        ),
        # Codex's docs: `codex exec` reads CODEX_API_KEY, else OPENAI_API_KEY; CODEX_HOME.
        env=("CODEX_API_KEY", "OPENAI_API_KEY", "CODEX_*", "OPENAI_BASE_URL"),
        sandbox_home=(".codex",),  # CODEX_HOME: config.toml, auth.json, sessions
    ),
    "aider": AgentProfile(
        name="aider",
        command=("aider", "--yes-always", "--no-pretty", "--message-file", PROMPT_FILE),
        output="aider-text",
        prompt="file",
        model=("--model", MODEL),
        provider="aider",
        limit_patterns=(r"(?i)rate ?limit", r"(?i)quota exceeded"),
        version_command=("aider", "--version"),
        written_against="aider 0.86 (scripting docs)",
        # aider's docs: every option as AIDER_*, and the keys of the providers it calls.
        env=(
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "DEEPSEEK_API_KEY",
            "OPENROUTER_API_KEY",
            "AIDER_*",
            "OPENAI_API_BASE",
        ),
        # aider's docs: its config and model files in HOME, its caches under ~/.aider.
        sandbox_home=(
            ".aider.conf.yml",
            ".aider.model.settings.yml",
            ".aider.model.metadata.json",
            ".aider",
        ),
    ),
}


# `claude-mcp`: Claude Code with corral's MCP server (`corral mcp`, which must be on PATH)
# in its config, and its permission requests sent to a person through corral's
# `permission_prompt` tool (the task waits; `corral answer --allow|--deny`). acceptEdits
# still allows edits in the worktree; what it does not allow (Bash ...) is asked for.
MCP_CONFIG = '{"mcpServers":{"corral":{"type":"stdio","command":"corral","args":["mcp"]}}}'
PERMISSION_PROMPT_TOOL = "mcp__corral__permission_prompt"
_CLAUDE = BUILT_IN["claude"]
BUILT_IN["claude-mcp"] = replace(
    _CLAUDE,
    name="claude-mcp",
    command=(*_CLAUDE.command, "--mcp-config", MCP_CONFIG),
    resume=(*_CLAUDE.resume, "--mcp-config", MCP_CONFIG),
    permissions=(*_CLAUDE.permissions, "--permission-prompt-tool", PERMISSION_PROMPT_TOOL),
)


def with_overrides(base: AgentProfile, name: str, fields: dict[str, Any]) -> AgentProfile:
    """`base` under another name with `fields` changed (a user profile that `extends` it)."""
    return replace(base, name=name, **fields)
