"""A run's outbox, taken in by the runner that runs it: each line once, in order, fenced.

With `[files] mirror = true` the runner makes `runs/<run id>.outbox` (empty, private)
before the command starts and names it in the command's `CORRAL_OUTBOX`. While the command
runs, each poll of the executor (every 50 ms) takes in the whole lines appended since the
last one; when it has exited, what is left, its last line too even without its newline.
Each line is applied as the CLI would apply it (model/outbox.py says the verbs): done,
fail and ask under the line's own token, so a wrong or stale one is refused by the store's
fence exactly like `corral done ID --token T`; a message only under this run's token.

Why each line is applied once. The runner reads the file through the descriptor it made it
with, from an offset that only moves forward, in the one thread that runs the command, and
no other process reads it: no line is read twice. A line tried again because the store's
reply was lost (it committed, the connection dropped) is harmless: a message carries the
key `outbox:<task>:<run>:<offset>`, unique in the store (a second send is the first
message), and a done, fail or ask ended the claim, so its second try is refused as stale,
as is every later line that needs the claim. The runner killed (kill -9) takes the outbox
with it: its claim is released or reconciled, and the task's next run has a new token and
a new outbox, where an old line means nothing. The orchestrator reads no outbox: killed,
it changes nothing here (its runners carry on, and the next one adopts them).

What is refused gets one log line (`outbox.refused`, the line's offset and why) and is
never applied: a line that is not a JSON object of a known verb, one longer than
MAX_LINE_BYTES (skipped to its newline), deep, holding NUL, with a token that is not the
claim's. A line still being written (no newline yet) waits for the next poll. A store that
cannot be reached leaves the line for a poll a second later (at the end, a few more tries).
The file shrunk or replaced (by another file, or a link elsewhere) is read no further:
the descriptor still names the file corral made, and what was not appended to it is not
taken.
"""

from __future__ import annotations

import logging
import os
import stat

from corral.foundation import filemodes
from corral.foundation.errors import CorralError, InvalidInput, StoreError
from corral.foundation.logs import event
from corral.model import waiting
from corral.model.outbox import MAX_LINE_BYTES, OUTBOX_SUFFIX, OutboxLine, parse_line
from corral.runtime.worker.config import Workplace
from corral.usecases import claims, messages

# At the end, a store out is tried again this many times, a second apart: the lines left
# decide how the run ends (a `fail` must not be lost to an outage and the run end done).
FINAL_TRIES = 5
FINAL_RETRY_S = 1.0
# While the command runs, a store out is tried again this long after, not at every poll.
RETRY_S = 1.0


def outbox_path(runs_dir: str, run_id: str) -> str:
    """Where run `run_id`'s outbox is: beside its transcript."""
    return os.path.join(runs_dir, f"{run_id}{OUTBOX_SUFFIX}")


class Outbox:
    """The outbox of run `run_id` of task `task_id`, made empty here and read from its fd."""

    def __init__(self, path: str, *, place: Workplace, task_id: str, run_id: str, token: int):
        self.path = path
        self._place, self._task_id, self._run_id, self._token = place, task_id, run_id, token
        flags = os.O_RDWR | os.O_EXCL | os.O_NOFOLLOW
        self._fd = filemodes.open_file(path, flags)  # O_EXCL: never a file someone else made
        self._inode = os.fstat(self._fd).st_ino
        self._offset = 0  # where the next line starts
        self._skipping = False  # inside a line too long, until its newline
        self._closed_reason: str | None = None  # set once the file is read no further
        self._store_out = False
        self._retry_at = 0.0  # monotonic: the store was out; not read again before then

    def take_in(self) -> None:
        """Apply the whole lines appended since the last call; never raises."""
        clock = self._place.clock
        if clock.monotonic() >= self._retry_at and not self._read(final=False):
            self._retry_at = clock.monotonic() + RETRY_S

    def finish(self) -> None:
        """The command has exited: apply what is left, the last line even without its
        newline, trying a store that is out a few more times; then close the file."""
        try:
            for attempt in range(FINAL_TRIES):
                if self._read(final=True):
                    break
                if attempt + 1 < FINAL_TRIES:
                    self._place.clock.sleep(FINAL_RETRY_S)
            else:
                self._log("outbox.unread", logging.ERROR, error="the store could not be reached")
            self._check_replaced()
        finally:
            os.close(self._fd)

    def _read(self, *, final: bool) -> bool:
        """Apply the lines there are; False if the store could not be reached for one."""
        if self._closed_reason is not None:
            return True
        size = os.fstat(self._fd).st_size
        if size < self._offset:
            self._close(f"the file shrank to {size} bytes after {self._offset} were read")
            return True
        while self._offset < size:
            chunk = os.pread(self._fd, min(size - self._offset, MAX_LINE_BYTES + 2), self._offset)
            end = chunk.find(b"\n")
            if end == -1 and not final and len(chunk) <= MAX_LINE_BYTES:
                return True  # a line still being written
            line = chunk if end == -1 else chunk[:end]
            used = len(chunk) if end == -1 else end + 1
            if not self._skipping and not self._apply(line):
                return False
            self._skipping = end == -1 and len(chunk) > MAX_LINE_BYTES
            self._offset += used
        return True

    def _apply(self, raw: bytes) -> bool:
        """Take in one line (refused: logged); False if the store could not be reached."""
        raw = raw.removesuffix(b"\r")
        if not raw.strip():
            return True  # an empty line says nothing
        try:
            line = parse_line(raw)
            self._act(line)
        except StoreError as exc:
            if not self._store_out:
                self._log("outbox.store_unreachable", logging.WARNING, error=exc.message)
            self._store_out = True
            return False
        except CorralError as exc:
            self._log("outbox.refused", logging.WARNING, error=exc.message)
            return True
        self._store_out = False
        self._log("outbox.taken", verb=line.verb, line_token=line.token)
        return True

    def _act(self, line: OutboxLine) -> None:
        """Do what the line asks, as the CLI would, fenced by the line's token."""
        store, task_id, token = self._place.store, self._task_id, line.token
        if line.verb == "done":
            claims.complete(store, task_id, token=token, result=line.fields.get("result"))
        elif line.verb == "fail":
            settings = self._place.settings
            claims.fail(store, task_id, error=line.text("error"), token=token, settings=settings)
        elif line.verb == "ask":
            reason = waiting.reason(waiting.WaitKind.QUESTION, line.text("question"))
            claims.wait(store, task_id, reason=reason, token=token)
        else:
            if token != self._token:  # a message is this run's, whatever its claim's state
                raise InvalidInput("token", f"this run's token {self._token}", token)
            body = line.fields.get("body")
            to, kind = line.text("to"), line.text("type")
            key = f"outbox:{task_id}:{self._run_id}:{self._offset}"  # a retry sends it once
            messages.send(store, to=to, type=kind, body=body, sender=self._place.worker_id,
                          key=key)  # fmt: skip

    def _check_replaced(self) -> None:
        """Log once if the path no longer names the file corral made (its lines unread)."""
        try:
            seen = os.lstat(self.path)
        except FileNotFoundError:
            return
        if seen.st_ino != self._inode or not stat.S_ISREG(seen.st_mode):
            self._close("the path was replaced by another file: only corral's own is read")

    def _close(self, reason: str) -> None:
        self._closed_reason = reason
        self._log("outbox.refused", logging.WARNING, error=reason)

    def _log(self, name: str, level: int = logging.INFO, **fields: object) -> None:
        event(self._place.log, name, level, task_id=self._task_id, run_id=self._run_id,
              offset=self._offset, **fields)  # fmt: skip
