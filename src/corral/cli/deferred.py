"""Stand-ins for standard modules the CLI's imports name but its commands do not use.

`dataclasses` imports `inspect`, and with it `ast`, `dis` and `tokenize`, to call it only
for a class that has no docstring, and `copy` (with `weakref`) for `asdict`, which corral
does not call: together about 3 ms of every command's start-up (bench/cli_latency.py).
A stand-in put in `sys.modules` lets such an `import` finish at once.
The first attribute anyone asks of the stand-in imports the real module, which answers
that and every later use, so code that does need `inspect` still gets all of it.
"""

from __future__ import annotations

import sys
import threading
from importlib import import_module
from types import ModuleType
from typing import Any

# Standard modules whose import the CLI defers (see the module docstring).
CLI_DEFERRED = ("inspect", "copy")
_swap = threading.Lock()  # two threads' first uses must not both swap the stand-in out


class Deferred(ModuleType):
    """A module imported on first attribute access; until then an empty stand-in."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        # Only __name__ and __spec__ stay on the stand-in (the import system reads
        # __spec__ on every `import`); any other name, dunders included, is the real one's.
        for own in ("__doc__", "__package__", "__loader__"):
            del self.__dict__[own]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.load(), name)

    def load(self) -> ModuleType:
        """The real module, imported now if this stand-in is still in its place."""
        with _swap:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
        return import_module(self.__name__)


def defer(*names: str) -> None:
    """Put a stand-in in `sys.modules` for each of `names` not imported yet."""
    for name in names:
        if name not in sys.modules:
            sys.modules[name] = Deferred(name)
