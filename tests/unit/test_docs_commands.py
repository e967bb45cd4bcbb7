"""Every `corral ...` command line the user documentation shows names a command and flags
the CLI has: README.md and docs/*.md, in code blocks, tables and inline code.

Each line is cut where its command ends (a pipe, `&&`, a redirection, a comment, `--`
before another program's arguments), its command words looked up in the command table
(cli/commands.py) and its long flags in that command's parser as `corral` builds it
(cli/argtree.py): a renamed or removed command or flag fails here, naming the file, the
line and what is missing, instead of surviving in the documentation.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from corral.cli import argtree
from corral.cli.commands import COMMAND_TABLE, GROUPS
from corral.foundation.variables import NOT_SETTINGS

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

# A shell prompt in a code block (`$ `, `demo $ `): the rest of its line is typed.
_PROMPT = re.compile(r"^\s*(?:[\w@:~/.-]+ )?\$ ")
# Where a typed command starts: `corral` as a word, not a path (`.corral/`) or a name
# (`corral-w1`): first on the line, or after `&&`, `|`, `;`, `(`.
_START = re.compile(r"(?:^|(?<=&& )|(?<=\| )|(?<=; )|(?<=\())corral(?= )")
# Where it ends: a pipe, a list, a redirection, a comment, or the end of a code span.
_END = re.compile(r"\s(?:\||&&|;|>|2>|#)\s|`|\s{3,}")
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")
# The values of these options are another program's words (`--agent-arg --full-auto`).
_FOREIGN_VALUES = argtree.DASHED_VALUES
_ROOT_ONLY = frozenset({"--version", "--help"})
_GLOBAL_VALUES = frozenset({"--db", "--namespace"})
# Text that reads as a command and is not one, each with why. Planned ones are checked
# to be absent still: once built, the documentation that calls them coming must change.
NOT_COMMANDS = {
    "corral main": "benchmarks.md: the name of one side of a comparison (the store before)",
    "corral batch 1": "benchmarks.md: the name of one side of a comparison",
    "corral batch 64": "benchmarks.md: the name of one side of a comparison",
}
PLANNED = {
    "corral reconcile --loop": "cli.md and operations.md: coming (cron or the orchestrator now)",
}


def documented(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, command line) for each `corral ...` that `path` shows: in a code block
    of a shell session, each after a `$ ` prompt (the other lines are output); in a code
    block without prompts (a synopsis), each line that starts with one, two on a line when
    they stand in columns, and a line of more `[--flags]` continuing the one above;
    elsewhere, inline code that starts with one; and in a table of flags under a heading
    naming a command (or a line of just that command and a colon), that command with the
    flags of the row's first cell."""
    block: list[tuple[int, str]] | None = None
    heading: str | None = None  # the command a `### corral ...` heading names
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("#") and block is None:
            named = [c for c in re.findall(r"`([^`]*)`", line) if c.startswith("corral ")]
            heading = named[0] if named else None
        introduced = re.fullmatch(r"`(corral [^`]*)`:", line.strip())
        if introduced is not None and block is None:  # "`corral worker start ...`:" a table
            heading = introduced.group(1)
        if line.startswith("| `--") and heading is not None:  # its flags' table
            cell = re.split(r"(?<!\\)\|", line)[1]  # `A\|B` is one cell's text
            yield number, " ".join([heading, *re.findall(r"`(--[^`]*)`", cell)])
        if line.lstrip().startswith("```"):
            if block is not None:
                yield from _in_block(block)
            block = None if block is not None else []
        elif block is not None:
            block.append((number, line))
        else:
            for span in re.findall(r"`([^`]*)`", line):
                if span.removeprefix("$ ").startswith("corral "):
                    yield number, span.removeprefix("$ ")


def _in_block(block: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    session = any(_PROMPT.match(line) for _, line in block)
    last: tuple[int, str] | None = None
    for number, line in block:
        if last is not None and re.match(r"\s+\[--", line) and "corral" not in line:
            last = (last[0], f"{last[1]} {line.strip()}")
            continue
        if last is not None:
            yield last
            last = None
        if session:
            prompt = _PROMPT.match(line)
            if prompt is not None:
                shell = line[prompt.end() :]
                yield from ((number, shell[m.start() :]) for m in _START.finditer(shell))
        elif line.lstrip().startswith("corral "):
            found = [m.start(1) for m in re.finditer(r"(?:^\s*|\s{2,})(corral )", line)]
            for start, end in zip(found, [*found[1:], len(line)], strict=True):
                last = (number, line[start:end])
                if start != found[-1]:
                    yield last
    if last is not None:
        yield last


def words_and_flags(command_line: str) -> tuple[list[str], list[str]]:
    """The command words (`worker`, `start`) and the long flags of one command line."""
    # `$(corral runs ...)` is a command of its own (documented() finds it): a value here.
    typed = re.sub(r"\$\([^()]*\)", "VALUE", command_line)
    text = _END.split(typed.removeprefix("corral").strip() + " ", maxsplit=1)[0]
    try:
        tokens = shlex.split(text, comments=False)
    except ValueError:  # an unclosed quote in an excerpt: words as they are
        tokens = text.split()
    words: list[str] = []
    flags: list[str] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token == "--":  # noqa: S105 - an argument, not a password
            break  # another program's arguments follow
        if token in _GLOBAL_VALUES:  # `--db PATH`, anywhere: its value is no command word
            flags.append(token)
            skip = True
            continue
        bare = token.strip("[]()|.,:")
        if bare.startswith("--"):
            flag = _FLAG.match(bare)
            if flag is not None:
                flags.append(flag.group())
                skip = flag.group() in _FOREIGN_VALUES and "=" not in bare
            flags += _FLAG.findall(token[len(bare) :])  # `[--pause|--resume]`
            continue
        if len(words) < (2 if words and words[0] in GROUPS else 1) and re.fullmatch(
            r"[a-z][a-z-]*", bare
        ):
            words.append(bare)
        elif not words:
            break  # `corral ID`, `corral COMMAND`: a placeholder, no command to check
        else:
            words.append("")  # positional: the command's words are complete
    return [w for w in words if w], flags


def problems_of(path: Path, root: Path = ROOT) -> list[str]:
    """What `path` documents that the CLI does not have, one line each, naming the file
    (relative to `root`) and the line."""
    found: list[str] = []
    parsers: dict[tuple[str, ...], set[str]] = {}
    for number, line in documented(path):
        if line.strip() in NOT_COMMANDS or line.strip() in PLANNED:
            continue
        words, flags = words_and_flags(line)
        where = f"{path.relative_to(root)}:{number}: {line.strip()}"
        if not words:
            found += [f"{where}: no flag {f}" for f in flags if f not in _ROOT_ONLY | {"--db"}]
            continue
        named = " ".join(words)
        if named not in COMMAND_TABLE and named not in GROUPS:
            found.append(f"{where}: no command `corral {named}`")
            continue
        key = tuple(words)
        if key not in parsers:
            parsers[key] = _flags_of(key)
        found += [
            f"{where}: `corral {named}` has no flag {f}" for f in flags if f not in parsers[key]
        ]
    return found


def _flags_of(words: tuple[str, ...]) -> set[str]:
    """The long options `corral WORDS` takes, as its parser (or its group's) defines them."""
    _, parsers = argtree.build(list(words))
    parser = parsers[words]
    return {o for a in parser._actions for o in a.option_strings if o.startswith("--")}


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_documented_command_and_flag_exists(path: Path) -> None:
    """Each `corral ...` line of the document names a command and long flags the CLI has."""
    assert [] == problems_of(path)


@pytest.mark.parametrize("planned", PLANNED)
def test_what_the_documentation_calls_coming_is_not_built_yet(planned: str) -> None:
    """A command or flag the documentation says is coming does not exist yet: once it does,
    the documentation saying otherwise fails here, to be brought up to date."""
    words, flags = words_and_flags(planned)
    named = " ".join(words)
    assert named not in COMMAND_TABLE or not set(flags) <= _flags_of(tuple(words))


def test_a_missing_command_or_flag_is_named_with_its_line(tmp_path: Path) -> None:
    """The check finds what does not exist in inline code, a shell session (its output
    and another program's arguments aside), a synopsis and a command's flag table."""
    doc = tmp_path / "doc.md"
    doc.write_text(
        "Run `corral list --status ready` or `corral frobnicate`.\n"
        "```\n"
        "$ corral worker start --name w1 --no-such-flag | head\n"
        "corral started nothing (output, not a command)\n"
        "$ corral add t -- sh -c 'echo --anything'\n"
        "```\n"
        "```\n"
        "corral review list            corral review show ID --patchy\n"
        "corral add TITLE [--priority N]\n"
        "               [--colour C]\n"
        "```\n"
        "### `corral ready`\n"
        "| `--limit N` | `--no-limit` |\n"
        "| `--shade S` | |\n"
        "## Flags\n"
        "`corral list [flags]`:\n"
        "| `--hue H` | |\n"
    )
    assert [
        "doc.md:1: corral frobnicate: no command `corral frobnicate`",
        "doc.md:3: corral worker start --name w1 --no-such-flag | head: "
        "`corral worker start` has no flag --no-such-flag",
        "doc.md:8: corral review show ID --patchy: `corral review show` has no flag --patchy",
        "doc.md:9: corral add TITLE [--priority N] [--colour C]: `corral add` has no flag --colour",
        "doc.md:14: corral ready --shade S: `corral ready` has no flag --shade",
        "doc.md:17: corral list [flags] --hue H: `corral list` has no flag --hue",
    ] == problems_of(doc, tmp_path)


def test_the_cli_guide_names_every_variable_of_corral_that_is_not_a_setting() -> None:
    """docs/cli.md's table of environment variables and foundation.variables agree."""
    table = (ROOT / "docs" / "cli.md").read_text().split("## Environment variables", 1)[1]
    table = table.split("\n## ", 1)[0]
    named = set(re.findall(r"`(CORRAL_[A-Z_]+)`", table))
    assert set() == NOT_SETTINGS - named
    assert {"CORRAL_LEASE", "CORRAL_LEASE_S"} == named - NOT_SETTINGS  # doctor's example
