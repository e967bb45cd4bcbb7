"""`corral`: parse, call one use case, render. Exit codes: 0 ok, 1 refused by the current
state, 2 usage or invalid input, 3 store unavailable (docs/cli.md)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from corral import __version__
from corral.cli import fast_parse
from corral.cli.commands import command_words, find_command
from corral.foundation.errors import LINE_CHARS, CorralError, InvalidInput, OutputFailed
from corral.foundation.printable import one_line

if TYPE_CHECKING:
    from corral.cli.context import Args, Context


def parse_args(argv: list[str]) -> Args:
    """The command's namespace: the fast path for plain lines, argparse for the rest."""
    words = command_words(argv)
    command = find_command(words)
    if command is not None:
        args = fast_parse.parse(argv, command)
        if args is not None:
            return args
    from corral.cli import argtree  # argparse only off the fast path (3 ms)

    return argtree.parse(argv, words)


def _check_text(argv: list[str]) -> None:
    """Every argument valid UTF-8 without NUL (an exec cannot pass one; `main` called in a
    process can, and no path, name or document may hold it)."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(
                "argument", "valid UTF-8 text", arg.encode("utf-8", "replace").decode()
            ) from None
        if "\0" in arg:
            raise InvalidInput("argument", "text without a NUL character", arg)


class _Stdout:
    """sys.stdout, whose write errors (`> /dev/full`) are OutputFailed: one line, exit 74.
    A closed pipe stays BrokenPipeError, which `main` answers quietly."""

    __slots__ = ("_raw",)

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw

    def write(self, text: str) -> int:
        written: int = self._guard(self._raw.write, text)
        return written

    def flush(self) -> None:
        self._guard(self._raw.flush)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def _guard(self, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            # What is still buffered goes nowhere, so the exit's flush cannot fail again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._raw.fileno())
            raise OutputFailed(f"stdout: {exc.strerror or exc}") from None


def _guard_stdout() -> None:
    # Started with descriptor 1 closed (`>&-`), Python has no sys.stdout, and the next file
    # opened (the database) would take descriptor 1: refuse before opening anything.
    if sys.stdout is None:
        raise InvalidInput("stdout", "an open standard output (descriptor 1 is closed)")
    if not isinstance(sys.stdout, _Stdout):
        _probe(sys.stdout)
        sys.stdout = _Stdout(sys.stdout)


def _probe(stdout: TextIO) -> None:
    """Write nothing to stdout before anything is done: a stdout that refuses even that
    (`> /dev/full`, a failing device) is refused while there is no change to stand. (A
    disk that fills later still ends in OutputFailed after the change.)"""
    try:
        fd = stdout.fileno()
    except (OSError, ValueError):  # not a file (a test's capture): nothing to probe
        return
    try:
        os.write(fd, b"")
    except BrokenPipeError:
        return  # a reader that left: the exit says so (141), as for any command
    except OSError as exc:
        raise OutputFailed(f"stdout: {exc.strerror or exc}", before=True) from None


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit code."""
    args_list = sys.argv[1:] if argv is None else argv
    ctx: Context | None = None
    try:
        _guard_stdout()
        _check_text(args_list)
        if args_list == ["--version"]:  # as argparse says it, without building its tree
            sys.stdout.write(f"corral {__version__}\n")
            return 0
        args = parse_args(args_list)
        # After parsing: help and usage errors exit before the store's modules are imported.
        from corral.cli.context import Context  # see the line above

        ctx = Context(args)
        code: int = args.handler(ctx)
        sys.stdout.flush()  # here, so that an output that cannot be written is one line
        return code
    except CorralError as exc:
        if sys.stderr is not None:  # not started with `2>&-`
            line = one_line(exc.message, LINE_CHARS)  # data in it: shown, not obeyed
            sys.stderr.write(f"corral: error: {line}\n")
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
