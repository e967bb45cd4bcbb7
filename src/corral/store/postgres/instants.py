"""timestamptz read as psycopg reads it, but for values past Python's calendar.

PostgreSQL holds instants from 4713 BC to 294276 AD, and `infinity`; Python's datetime
holds years 1 to 9999, and psycopg raises DataError for a value past them, failing every
read of its row (`corral list` for every user). corral refuses such instants where they
enter (foundation/durations.check_instant), but a row written by hand or by an older
corral may hold one: it reads as the calendar's edge, FIRST_INSTANT or LAST_INSTANT, the
same edges a SQLite row past them reads as (store/sqlite.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap, Loader
from psycopg.pq import Format

from corral.foundation.durations import FIRST_INSTANT, LAST_INSTANT

_TIMESTAMPTZ = psycopg.postgres.types["timestamptz"].oid
# psycopg's own loader (its C one where psycopg[binary] is installed): every value it can
# read is read by it.
_READ = psycopg.adapters.get_loader(_TIMESTAMPTZ, Format.TEXT)


class EdgeInstantLoader(Loader):
    """timestamptz text; a value past year 9999 or before year 1 as the calendar's edge."""

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        self._read = _READ(oid, context).load  # type: ignore[misc]

    def load(self, data: Any) -> datetime:
        try:
            instant: datetime = self._read(data)
        except psycopg.DataError:  # `-infinity` and BC dates are before year 1
            text = bytes(data)
            return FIRST_INSTANT if text.startswith(b"-") or text.endswith(b"BC") else LAST_INSTANT
        return instant


def adapters() -> AdaptersMap:
    """psycopg's adapters with EdgeInstantLoader for timestamptz: a connection's `context`."""
    found = AdaptersMap(psycopg.adapters)
    found.register_loader("timestamptz", EdgeInstantLoader)
    return found
