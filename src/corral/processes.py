"""Whether a process recorded in the store still runs: the one place corral asks the OS.

A pid alone proves nothing: the kernel reuses pids, so a recorded pid is alive only while
a process with that pid runs *and* started no later than the moment it was recorded (a
second of slack for the clocks' resolution). A zombie has exited, whatever its pid says.
Workers, orchestrators and cleanups all ask here before they act on a pid.
"""

from __future__ import annotations

import psutil


def process_alive(pid: int | None, registered_at_s: float) -> bool:
    """True if `pid` runs and was started before it was recorded (not a reused pid).

    None (no pid was recorded, as for a remote worker) counts as alive: nothing here can
    tell, so the decision is left to heartbeats.
    """
    if pid is None:
        return True
    try:
        process = psutil.Process(pid)
        return bool(
            process.create_time() <= registered_at_s + 1.0
            and process.status() != psutil.STATUS_ZOMBIE  # exited, not yet reaped
        )
    except psutil.Error:
        return False
