"""The /proc fast paths (corral.foundation.fastpaths) give what psutil gives, without
importing it."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from corral.foundation import fastpaths


def test_a_start_time_is_the_one_psutil_computes():
    """A process's start time from /proc equals psutil's, to the last bit."""
    for pid in (os.getpid(), os.getppid()):
        assert psutil.Process(pid).create_time() == fastpaths.started_at_s(pid)


def test_a_process_that_is_gone_has_no_start_time():
    """A reaped process's pid is ProcessLookupError, as psutil's NoSuchProcess."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    with pytest.raises(ProcessLookupError):
        fastpaths.started_at_s(done.pid)


def test_the_portable_mode_leaves_start_times_to_psutil(monkeypatch):
    """With CORRAL_PORTABLE=1 there is no fast path: None, and the caller asks psutil."""
    monkeypatch.setenv(fastpaths.PORTABLE_ENV, "1")
    assert None is fastpaths.started_at_s(os.getpid())
