"""`corral`: parse, call one use case, render. Exit codes: 0 ok, 1 refused by the current
state, 2 usage or invalid input, 3 store unavailable (docs/cli.md)."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module
from typing import NoReturn

from corral.cli.context import Context
from corral.errors import CorralError, InvalidInput

USAGE_EXIT = 2
# command -> the module that defines it. Only that module's parsers are built, because
# building all of argparse's subparsers costs milliseconds on every command.
COMMAND_MODULES = {
    "init": "admin_cmds",
    "reconcile": "admin_cmds",
    "add": "task_cmds",
    "ready": "task_cmds",
    "list": "task_cmds",
    "show": "task_cmds",
    "cancel": "task_cmds",
    "retry": "task_cmds",
    "why": "task_cmds",
    "events": "task_cmds",
    "claim": "claim_cmds",
    "claim:next": "claim_cmds",
    "claim:renew": "claim_cmds",
    "claim:release": "claim_cmds",
    "done": "claim_cmds",
    "fail": "claim_cmds",
    "defer": "claim_cmds",
    "runs": "run_cmds",
    "run": "run_cmds",
    "logs": "run_cmds",
    "worker": "worker_cmds",
    "config": "config_cmds",
    "orchestrator": "orchestrator_cmds",
    "status": "orchestrator_cmds",
}


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse would import shutil (and with it bz2, lzma, zlib) just to learn the width.
        return argparse.HelpFormatter(prog=self.prog, width=_columns() - 2)

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"corral: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(USAGE_EXIT)


def _command_word(argv: list[str]) -> str | None:
    """The first positional argument, skipping `--db VALUE`."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--db":
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def _columns() -> int:
    try:
        return int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
    except (ValueError, OSError):
        return 80


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command tree: only `command`'s module when it is known, else every command."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        help="store path or URL (default $CORRAL_DB or .corral/corral.db)",
    )
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output"
    )
    parser = _Parser(
        prog="corral", description="A headless orchestrator for fleets of long-running workers."
    )
    parser.add_argument("--db", help="store path or URL (default $CORRAL_DB or .corral/corral.db)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    wanted = COMMAND_MODULES.get(command or "")
    for name in dict.fromkeys(COMMAND_MODULES.values()):
        if wanted in (None, name):
            import_module(f"corral.cli.{name}").register(sub, common)
    return parser


def _check_utf8(argv: list[str]) -> None:
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(
                "argument", "valid UTF-8 text", arg.encode("utf-8", "replace").decode()
            ) from None


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code."""
    args_list = sys.argv[1:] if argv is None else argv
    ctx: Context | None = None
    try:
        _check_utf8(args_list)
        args = build_parser(_command_word(args_list)).parse_args(args_list)
        ctx = Context(args)
        code: int = args.handler(ctx)
        return code
    except CorralError as exc:
        sys.stderr.write(f"corral: error: {exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader closed early (`| head`): end quietly, as a Unix tool killed by SIGPIPE.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    finally:
        if ctx is not None:
            ctx.close()


if __name__ == "__main__":
    sys.exit(main())
