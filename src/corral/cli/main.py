"""`corral`: parse, call one use case, render. Exit codes: 0 ok, 1 refused by the current
state, 2 usage or invalid input, 3 store unavailable (docs/cli.md)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from corral.cli import fast_parse
from corral.cli.commands import command_words, find_command
from corral.cli.context import Context
from corral.errors import CorralError, InvalidInput
from corral.printable import one_line

if TYPE_CHECKING:
    from corral.cli.context import Args


def parse_args(argv: list[str]) -> Args:
    """The command's namespace: the fast path for plain lines, argparse for the rest."""
    words = command_words(argv)
    command = find_command(words)
    if command is not None:
        args = fast_parse.parse(argv, command)
        if args is not None:
            return args
    from corral.cli import argtree  # noqa: PLC0415 - argparse only off the fast path (3 ms)

    return argtree.parse(argv, words)


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
        args = parse_args(args_list)
        ctx = Context(args)
        code: int = args.handler(ctx)
        return code
    except CorralError as exc:
        sys.stderr.write(f"corral: error: {one_line(exc.message)}\n")  # data in it: shown
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
