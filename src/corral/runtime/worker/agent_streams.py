"""What an agent's transcript says about its run, read while the agent still writes it.

An agent CLI's stdout goes straight to the run's transcript file (executor.py). A
`StreamReader` reads what was appended since its last call (`poll`, about every 50 ms,
from the executor's stop callback) and the rest once the command has ended (`finish`),
and keeps what it learnt in one `StreamFacts`: the session id (to resume it), usage and
cost, a usage limit and when it resets, a question that waits for a person, and the
agent's own failure text. Usage keys are normalized: input_tokens, output_tokens,
cache_read_tokens, cache_write_tokens (ints) and cost_usd (float), only those the stream
gave; `generic` keeps the user's own keys.

Cost: a long run's transcript is tens of megabytes, nearly all of it tool output nobody
here needs, so no line is decoded unless it may say something. The reader reads 1 MiB
chunks and keeps only the unterminated last line between calls (a line past 8 MiB is
dropped, not held). Both CLIs print compact JSON whose first key is the type
(`{"type":"result",...`), so one `startswith` on a tuple of prefixes decides a line's
fate: skipped (`user`, `item.*`), parsed (`result`, `turn.completed`), or, for a claude
`assistant` line, parsed only if it holds `AskUserQuestion` (sought by its rare "Q" with
memchr first). A line in any other layout (spaces after colons, another key first) is
parsed when it holds one of the format's
marker strings, so the fast path is an optimization, never a condition of correctness.

Generic output: corral's own convention, `last_usage`, the last line's `usage` object.
"""

from __future__ import annotations

import os
from typing import Any

from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import InvalidInput
from corral.model.agents import OUTPUTS
from corral.runtime.worker.stream_formats import (
    Limit,
    LineFormat,
    StreamFacts,
    format_for,
    json_object,
)

__all__ = ["Limit", "StreamFacts", "StreamReader", "last_usage", "read_stream"]

CHUNK_BYTES = 1 << 20
MAX_LINE_BYTES = 8 << 20  # a longer line is skipped: none of the facts sits in one
LAST_LINE_WINDOW_BYTES = 65536  # generic: how far back from the end the last line is sought
ANCHOR_TRIES = 4  # places of the rare byte compared one by one before a substring search
NEWLINE = b"\n"


class StreamReader:
    """Reads one transcript as it grows; `poll` while the agent runs, `finish` at its end."""

    def __init__(
        self, output: str, path: str, *, clock: Clock | None = None, streamed: bool = False
    ) -> None:
        """`streamed`: claude's usage summed as it streams too (`StreamFacts.streamed`),
        for a budget; it reads every assistant line, so only a budgeted run asks for it."""
        if output not in OUTPUTS:
            raise InvalidInput("output", f"one of {', '.join(OUTPUTS)}", output)
        self.facts = StreamFacts()
        self._path = path
        self._lines: LineFormat | None = format_for(
            output, self.facts, clock or SystemClock(), streamed=streamed
        )
        self._offset = 0  # bytes of the file read so far
        self._tail: list[bytes] = []  # the last line, not yet terminated
        self._tail_bytes = 0
        self._skipping = False  # inside a line past MAX_LINE_BYTES

    def poll(self) -> StreamFacts:
        """The facts, after reading what was appended since the last call (whole lines)."""
        if self._lines is None:
            self._last_line(final=False)
        else:
            self._read()
        return self.facts

    def finish(self) -> StreamFacts:
        """The facts, after reading the rest, a last line without a newline included."""
        if self._lines is None:
            self._last_line(final=True)
            return self.facts
        self._read()
        if self._tail and not self._skipping:
            line = b"".join((*self._tail, NEWLINE))
            self._scan(line, 0, len(line))
        self._tail, self._tail_bytes, self._skipping = [], 0, False
        return self.facts

    def _read(self) -> None:
        """Read up to the size the file has now (not chasing a writer that keeps going)."""
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # not created yet, or gone: nothing to learn now
            return
        try:
            size = os.fstat(fd).st_size
            while self._offset < size:
                data = os.pread(fd, min(CHUNK_BYTES, size - self._offset), self._offset)
                if not data:  # truncated under us
                    break
                self._offset += len(data)
                self._consume(data)
        finally:
            os.close(fd)

    def _consume(self, data: bytes) -> None:
        """Scan the whole lines `data` completes and holds; keep its unterminated end."""
        first = data.find(NEWLINE)
        if first < 0:
            self._hold(data)
            return
        start = 0
        if self._tail or self._skipping:
            if not self._skipping:
                line = b"".join((*self._tail, data[: first + 1]))
                self._scan(line, 0, len(line))
            self._tail, self._tail_bytes, self._skipping = [], 0, False
            start = first + 1
        last = data.rfind(NEWLINE)
        self._scan(data, start, last + 1)
        self._hold(data[last + 1 :])

    def _hold(self, piece: bytes) -> None:
        """Keep `piece` of the unterminated line, unless the line grows past the bound."""
        if not piece or self._skipping:
            return
        if self._tail_bytes + len(piece) > MAX_LINE_BYTES:
            self._tail, self._tail_bytes, self._skipping = [], 0, True
            return
        self._tail.append(piece)
        self._tail_bytes += len(piece)

    def _scan(self, buf: bytes, start: int, end: int) -> None:
        """Hand each line of buf[start:end] (all end in a newline) worth decoding to the format."""
        lines = self._lines
        assert lines is not None  # generic reads its last line only
        # The loop runs once per line of tens of megabytes: everything it uses is local.
        lay, handle = lines.layout, lines.take
        skip, scan, needle, take, usual = lay.skip, lay.scan, lay.needle, lay.take, lay.usual
        anchor = needle[0][needle[1] : needle[1] + 1]
        find, startswith = buf.find, buf.startswith
        pos = start
        while pos < end:
            stop = find(NEWLINE, pos)
            if startswith(skip, pos):
                wanted = False
            elif startswith(scan, pos):
                wanted = find(anchor, pos, stop) >= 0 and _holds(buf, needle, pos, stop)
            else:
                wanted = startswith(take, pos) or (
                    not startswith(usual, pos) and _holds_any(buf, lay.markers, pos, stop)
                )
            if wanted:
                handle(buf[pos:stop])
            pos = stop + 1

    def _last_line(self, *, final: bool) -> None:
        """generic: the usage of the last line (while running: the last whole line)."""
        try:
            size = os.stat(self._path).st_size
        except OSError:
            return
        if size == self._offset and not final:
            return
        self._offset = size
        text = _window(self._path, size)
        if not final:
            text = text[: text.rfind(NEWLINE) + 1]
        self.facts.usage = _usage_of_last_line(text)


def read_stream(
    output: str, path: str, *, clock: Clock | None = None, streamed: bool = False
) -> StreamFacts:
    """Everything a finished transcript says: `StreamReader(output, path).finish()`."""
    return StreamReader(output, path, clock=clock, streamed=streamed).finish()


def _holds(buf: bytes, needle: tuple[bytes, int], start: int, stop: int) -> bool:
    """Whether buf[start:stop] holds needle[0], whose byte at needle[1] is a rare one.

    A one-byte search is memchr, several times faster than a substring search: it finds
    the few places the rare byte is, and the first of them are compared.
    """
    word, at = needle
    find, anchor = buf.find, word[at : at + 1]
    found = find(anchor, start + at, stop)
    for _ in range(ANCHOR_TRIES):
        if found < 0:
            return False
        if buf.startswith(word, found - at):  # no newline in `word`: it cannot reach past stop
            return True
        found = find(anchor, found + 1, stop)
    # A line thick with the "rare" byte: one substring search costs less than a loop.
    return found >= 0 and find(word, found - at, stop) >= 0


def _holds_any(buf: bytes, markers: tuple[bytes, ...], start: int, stop: int) -> bool:
    """Whether buf[start:stop] holds one of `markers`."""
    return any(buf.find(marker, start, stop) >= 0 for marker in markers)


def _window(path: str, size: int) -> bytes:
    """The last LAST_LINE_WINDOW_BYTES bytes of the file (of its first `size`)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, size - LAST_LINE_WINDOW_BYTES))
            return handle.read(min(size, LAST_LINE_WINDOW_BYTES))
    except OSError:
        return b""


def _usage_of_last_line(data: bytes) -> dict[str, Any] | None:
    """The `usage` object of the last line, when that line is a JSON object (as given)."""
    lines = data.decode("utf-8", "replace").strip().splitlines()
    event = json_object(lines[-1]) if lines else None
    usage = event.get("usage") if event is not None else None
    return usage if isinstance(usage, dict) else None


def last_usage(path: str) -> dict[str, Any] | None:
    """The `usage` object of the transcript's last line, when that line is JSON (a plain
    `--exec` command's convention)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    return _usage_of_last_line(_window(path, size)) if size else None
