"""`corral`: parse, call one use case, render. Exit codes: 0 ok, 1 refused by the current
state, 2 usage or invalid input, 3 store unavailable (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from corral.cli import admin_cmds, claim_cmds, task_cmds, worker_cmds
from corral.cli.context import Context
from corral.errors import CorralError, InvalidInput

USAGE_EXIT = 2


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"corral: error: {message} (see `{self.prog} --help`)\n")
        sys.exit(USAGE_EXIT)


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree."""
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
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    for module in (admin_cmds, task_cmds, claim_cmds, worker_cmds):
        module.register(sub, common)
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
        args = build_parser().parse_args(args_list)
        ctx = Context(args)
        code: int = args.handler(ctx)
        return code
    except CorralError as exc:
        sys.stderr.write(f"corral: error: {exc.message}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    finally:
        if ctx is not None:
            ctx.close()


if __name__ == "__main__":
    sys.exit(main())
