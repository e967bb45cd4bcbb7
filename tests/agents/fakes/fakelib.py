"""What the fake agent CLIs (claude, codex, aider beside this file) share.

A fake stands in for the real tool on PATH: tests prepend this folder to PATH. Its
behaviour is chosen by directives in the prompt (a task's title or description) and by
the environment:

- no directive: success, with usage and cost;
- `FAKE:limit`: while the file named by FAKE_LIMIT_UNTIL holds an epoch second still
  ahead, the tool's usage-limit failure, with that reset time (claude makes its edit first,
  uncommitted, as a session that reaches its limit mid-task leaves it); once it has
  passed, success. The file may instead hold `+N`: the limit then lasts N seconds from
  the first run that reads it (fixed once, in FAKE_LIMIT_UNTIL + `.at`), so a test's
  limit is met however long a loaded machine takes to start its workers;
- `FAKE:crash`: a few lines, then SIGKILL to itself mid-stream;
- `FAKE:nousage`: success whose stream reports no usage at all;
- `FAKE:question`: (claude) a question for a person, then a sleep until killed
  (FAKE_SLEEP seconds, 30 by default);
- `FAKE:sleep=N`: a sleep of N seconds before finishing (to hold a slot);
- `FAKE:edit=PATH`: the file the run edits (relative to its folder; PATH ends at the next
  whitespace); without it, every successful run edits `fake-edit-<CORRAL_TASK_ID>.txt`
  (`fake-edit.txt` outside a task), appending one line that names the agent, the run
  (CORRAL_RUN_ID) and the prompt's first line;
- `FAKE:nochange`: exit 0 having changed nothing (no edit, no commit);
- `FAKE:turns=N`: (claude) N model turns before the edit, FAKE_TURN_S seconds apart (0.02
  by default), each an API call whose assistant lines (a text block and a Read tool_use,
  one line each, as the real stream writes a message) carry its `message.usage`; the
  result's usage and `total_cost_usd` are the turns' sums, at Sonnet 4.5's list prices;
- `FAKE:then=limit|crash|hang|error`: (claude) the run's edit made, then it ends as a
  session cut short does, the edit left in the folder uncommitted: the usage-limit
  failure (its reset from FAKE_LIMIT_UNTIL), SIGKILL to itself, a sleep until killed
  (FAKE_SLEEP seconds), or an API error (`is_error`, `api_error_status` 500, exit 1).

Directives are also read, at each invocation, from the file FAKE_DIRECTIVES names, if it
exists: a test sets there what the next run does.

Files and git, as the real tools behave (their docs, checked 2026-11-29):
- claude edits only in a permission mode that allows edits (`--permission-mode
  acceptEdits|bypassPermissions|auto` or `--dangerously-skip-permissions`, or an
  `--allowedTools` rule naming Write/Edit); a path under `.git` only with
  bypassPermissions. Otherwise it edits nothing and its result (subtype success,
  is_error false, exit 0) lists the refused call in `permission_denials`. It runs `git
  commit` (its Bash tool) only when the prompt asks it to commit, and only when Bash is
  allowed (bypassPermissions, or an `--allowedTools` rule `Bash` / `Bash(git ...)`):
  acceptEdits allows edits, not git; a refused commit is a denial of Bash.
- codex never commits. Its sandbox (`--sandbox`/`-s`, default read-only; `--full-auto`
  is workspace-write; `--dangerously-bypass-approvals-and-sandbox`/`--yolo` none): in
  read-only it writes nothing; in workspace-write it writes inside its folder but never
  under the repository's git directory (`.git`, or for a linked worktree the main
  repository's `.git/worktrees/NAME`): such a write fails, as the sandbox makes it. A
  failed write is a failed `file_change` item; the turn still completes (exit 0).
- aider commits each edit itself (`aider: <prompt's first line>`) unless
  `--no-auto-commits`, and on its first run in a repository adds `.aider*` to
  `.gitignore` and leaves that edit uncommitted, as the real one does.

Every invocation appends one JSON line to the file named by FAKE_AGENT_LOG, if set:
the agent, its argv, cwd, prompt, the session id it reports, whether it resumed one, and
its CORRAL_* environment (and the variables FAKE_LOG_ENV names, comma-separated).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

DIRECTIVE = re.compile(
    r"FAKE:(limit|crash|nousage|question|nochange|sleep=(\d+(?:\.\d+)?)|edit=([^\s]+)"
    r"|then=(limit|crash|hang|error)|turns=(\d+))"
)
COMMIT_ASKED = re.compile(r"(?i)\bcommit\b")


@dataclass(frozen=True, slots=True, kw_only=True)
class Directives:
    """What the prompt asks the fake to do."""

    limit: bool = False
    crash: bool = False
    nousage: bool = False
    question: bool = False
    sleep_s: float = 0.0
    nochange: bool = False
    edit: str = ""  # the file the run edits, relative to its folder
    commit: bool = False  # the prompt asks the agent to commit
    then: str = ""  # how a run cut short after its edit ends: limit, crash, hang or error
    turns: int = 0  # (claude) model turns streamed, each with its usage, before the edit


def directives(prompt: str) -> Directives:
    """The directives found anywhere in `prompt`."""
    text = prompt + " " + _directives_file()
    found = {
        m.group(1).split("=")[0]: m.group(2) or m.group(3) or m.group(4) or m.group(5)
        for m in DIRECTIVE.finditer(text)
    }
    task = os.environ.get("CORRAL_TASK_ID")
    return Directives(
        limit="limit" in found,
        crash="crash" in found,
        nousage="nousage" in found,
        question="question" in found,
        sleep_s=float(found["sleep"]) if "sleep" in found else 0.0,
        nochange="nochange" in found,
        edit=found.get("edit") or (f"fake-edit-{task}.txt" if task else "fake-edit.txt"),
        commit=COMMIT_ASKED.search(DIRECTIVE.sub("", prompt)) is not None,
        then=found.get("then") or "",
        turns=int(found["turns"]) if "turns" in found else 0,
    )


def _directives_file() -> str:
    """The text of the file FAKE_DIRECTIVES names ("" when unset or missing)."""
    path = os.environ.get("FAKE_DIRECTIVES")
    if not path:
        return ""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except OSError:
        return ""


def first_line(prompt: str) -> str:
    """The prompt's first non-empty line, its directives left out (a commit message)."""
    lines = [line.strip() for line in DIRECTIVE.sub("", prompt).splitlines() if line.strip()]
    return lines[0][:72] if lines else "fake edit"


def edit(path: str, agent: str, prompt: str) -> str:
    """Append this run's line to `path` (made with its folders); the absolute path."""
    full = os.path.abspath(path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    run = os.environ.get("CORRAL_RUN_ID", "no run")
    with open(full, "a", encoding="utf-8") as handle:
        handle.write(f"{agent} {run}: {first_line(prompt)}\n")
    return full


def git(*args: str) -> subprocess.CompletedProcess[str]:
    """git in the current folder, its output captured."""
    return subprocess.run(["git", *args], capture_output=True, text=True, check=False)


def git_dirs() -> tuple[str, ...]:
    """The real paths of the repository's git directories (this worktree's and the
    common one), or () outside a repository."""
    done = git("rev-parse", "--absolute-git-dir", "--git-common-dir")
    if done.returncode != 0:
        return ()
    return tuple(os.path.realpath(line) for line in done.stdout.splitlines() if line)


def under_git_dir(path: str) -> bool:
    """Whether `path` lies in one of the repository's git directories (or is named .git)."""
    real = os.path.realpath(path)
    if ".git" in real.split(os.sep):
        return True
    return any(real == d or real.startswith(d + os.sep) for d in git_dirs())


def commit(message: str, *paths: str) -> bool:
    """`git add` and `git commit` (`paths`, or everything): whether a commit was made. An
    identity is lent when the repository has none (as a user's global config would)."""
    if not git_dirs():
        return False
    git("add", "--", *(paths or (".",)))
    identity: tuple[str, ...] = ()
    if git("config", "user.email").returncode != 0:
        identity = ("-c", "user.name=Fake Agent", "-c", "user.email=agent@fake.invalid")
    done = git(*identity, "commit", "-q", "-m", message, "--", *paths)
    return done.returncode == 0


def limited_until() -> int | None:
    """The epoch second the limit lasts until, if FAKE_LIMIT_UNTIL names one still ahead."""
    path = os.environ.get("FAKE_LIMIT_UNTIL")
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
        until = fix_relative_limit(path, int(text[1:])) if text.startswith("+") else int(text)
    except (OSError, ValueError):
        return None
    return until if until > time.time() else None


def fix_relative_limit(path: str, seconds: int) -> int:
    """The reset of a `+N` limit: N seconds after the first run that read it, written once
    to PATH.at (a hard link of a whole file: racing runs all read the first one's)."""
    fixed = path + ".at"
    temporary = f"{fixed}.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(str(int(time.time()) + seconds))
    try:
        with contextlib.suppress(FileExistsError):  # another run fixed it first: it stands
            os.link(temporary, fixed)
    finally:
        os.unlink(temporary)
    with open(fixed, encoding="utf-8") as handle:
        return int(handle.read())


def log_invocation(agent: str, prompt: str, session_id: str | None, resumed: bool) -> None:
    """Append this invocation to FAKE_AGENT_LOG (one line, one write: appends stay whole)."""
    path = os.environ.get("FAKE_AGENT_LOG")
    if not path:
        return
    shown = set(os.environ.get("FAKE_LOG_ENV", "").split(","))  # more variables to log
    entry = {
        "agent": agent,
        "argv": sys.argv[1:],
        "cwd": os.getcwd(),
        "prompt": prompt,
        "session_id": session_id,
        "resumed": resumed,
        "env": {k: v for k, v in os.environ.items() if k.startswith("CORRAL_") or k in shown},
    }
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (json.dumps(entry) + "\n").encode())
    finally:
        os.close(fd)


def emit(event: dict[str, object]) -> None:
    """One line of compact JSON on stdout, flushed (as the real tools stream it)."""
    sys.stdout.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")
    sys.stdout.flush()


def say(text: str) -> None:
    """A line of plain text on stdout, flushed."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def crash() -> None:
    """Die at once, as a killed agent does: no last line, no exit status of its own."""
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def hold(seconds: float) -> None:
    """Sleep `seconds` (a signal ends the process as it would the real tool)."""
    time.sleep(seconds)


def question_wait_s() -> float:
    """How long a fake that asked a question waits for an answer that never comes."""
    return float(os.environ.get("FAKE_SLEEP", "30"))
