"""Memory-aware admission: whether a worker may start a run on this host now.

An agent profile may state the memory one of its runs takes at its peak (`memory_mb`).
A worker claims no task while the host's available memory (psutil's
`virtual_memory().available`, read by the caller) is below it: the task stays ready, for
another host or for later, and the worker says why it holds back. Pure: the reading is
a parameter.
"""

from __future__ import annotations

MB = 1024 * 1024


def memory_hold(need_mb: int | None, available_bytes: int) -> str | None:
    """Why a run needing `need_mb` may not start with `available_bytes` free; None if it
    may (or states no need)."""
    if need_mb is None or available_bytes >= need_mb * MB:
        return None
    return f"a run needs {need_mb} MB, {available_bytes // MB} MB available"
