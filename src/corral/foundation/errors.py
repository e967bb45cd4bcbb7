"""The one error root: every failure corral reports to a user is a `CorralError`.

Each class knows its CLI exit code and its HTTP status, and its docstring is its
default message. Driver errors are wrapped once, at the store boundary.

    CorralError                         exit 1   HTTP 500
    ├── InvalidInput                    exit 2   HTTP 400   a field is not what was expected
    │   └── NotFound                    exit 2   HTTP 404   an id that names nothing
    ├── Refused                         exit 1   HTTP 409   the current state does not allow it
    │   ├── InvalidTransition                               names the current state
    │   ├── StaleToken                                      the claim's fencing token is not current
    │   ├── WorkerUnavailable                               dead, offline, draining or at capacity
    │   ├── WorkerConflict                                  a live worker has this host and pid
    │   └── LimitReached                                    a bound such as max_renewals
    ├── StoreError                      exit 3   HTTP 503   the store cannot be opened or used
    │   ├── SchemaTooNew                                    written by a newer corral
    │   └── WaitEnded                                       a runner's stop cut its long poll
    └── OutputFailed                    exit 74             stdout cannot take the output
"""

from __future__ import annotations


class CorralError(Exception):
    """corral could not do what was asked."""

    exit_code = 1
    http_status = 500

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        """The one-line text shown to the user."""
        return str(self.args[0])


class InvalidInput(CorralError):
    """The input is not valid."""

    exit_code = 2
    http_status = 422

    def __init__(self, field: str, expected: str, got: object = None) -> None:
        self.field = field
        self.expected = expected
        self.got = got
        shown = "" if got is None else f", got {quoted(got)}"
        super().__init__(f"{field}: expected {expected}{shown}")


# How much of a bad value an error line quotes: enough to recognise it, however big it was
# (a name of a megabyte sent to `corral serve` is refused in a line, not a megabyte).
QUOTED_CHARS = 120
# The longest error line shown: a message that quoted values whole is cut here too.
LINE_CHARS = 1000


def quoted(got: object) -> str:
    """`got` as an error line quotes it: its repr, cut to QUOTED_CHARS (every error that
    shows a value the user gave shows it through here)."""
    shown = repr(got)
    return shown if len(shown) <= QUOTED_CHARS else shown[: QUOTED_CHARS - 3] + "..."


class NotFound(InvalidInput):
    """No such object."""

    http_status = 404

    def __init__(self, what: str, ident: str) -> None:
        self.field = what
        self.expected = f"an existing {what}"
        CorralError.__init__(self, f"{what} {quoted(ident)} not found")


class Refused(CorralError):
    """The current state does not allow this."""

    exit_code = 1
    http_status = 409


class InvalidTransition(Refused):
    """The task is not in a state that allows this."""

    def __init__(self, task_id: str, action: str, current: str) -> None:
        self.current = current
        super().__init__(f"cannot {action} task {task_id}: it is {current}")


class StaleToken(Refused):
    """The claim's fencing token is no longer current."""


class WorkerUnavailable(Refused):
    """The worker cannot take work."""

    def __init__(self, message: str | None = None, *, status: str | None = None) -> None:
        # The worker's status when it is gone for good (dead, offline): a runner told its
        # worker is dead registers a new one, one taken offline by an operator stops.
        self.status = status
        super().__init__(message)


class WorkerConflict(Refused):
    """A live worker already has this namespace, host and pid."""


class LimitReached(Refused):
    """A configured bound was reached."""


class StoreError(CorralError):
    """The store is unavailable."""

    exit_code = 3
    http_status = 503


class SchemaTooNew(StoreError):
    """The database was written by a newer version of corral."""


class WaitEnded(StoreError):
    """The claim's long poll was ended by the runner's own stop; its answer is unknown."""


class OutputFailed(CorralError):
    """The output could not be written; what the command changed stands."""

    exit_code = 74  # EX_IOERR (sysexits.h)

    def __init__(self, reason: str, *, before: bool = False) -> None:
        outcome = "nothing was done" if before else "what the command changed stands"
        super().__init__(f"{reason}: the output could not be written; {outcome}")
