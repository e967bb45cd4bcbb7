"""`corral.runtime.signals.relayed`: a handler run on a thread of its own may take a lock
that the main thread holds when the signal arrives; with `handled` it would wait for it
forever (a CI run's `events --follow` hung on SIGTERM inside `threading.Event.wait`)."""

from __future__ import annotations

import os
import signal
import threading

from corral.runtime import signals


def test_a_relayed_handler_waits_its_turn_for_a_lock_the_main_thread_holds() -> None:
    """SIGUSR1 sent to this process while its main thread holds a lock: the handler, which
    takes the same lock, runs once the main thread lets it go, and the main thread goes on
    meanwhile."""
    lock, ran = threading.Lock(), threading.Event()
    seen: list[tuple[int, object]] = []

    def handler(signum: int, frame: object) -> None:
        with lock:
            seen.append((signum, frame))
            ran.set()

    with signals.relayed((signal.SIGUSR1,), handler):
        with lock:
            os.kill(os.getpid(), signal.SIGUSR1)  # its Python handler runs right after this
            assert not ran.is_set()
        assert ran.wait(10)
    assert [(signal.SIGUSR1, None)] == seen
    assert signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL


def test_a_relay_ends_with_its_block_and_leaves_no_thread() -> None:
    """Once the block ends the previous handler is back and the relay thread is gone."""
    before = signal.getsignal(signal.SIGUSR2)
    with signals.relayed((signal.SIGUSR2,), lambda _signum, _frame: None):
        assert "corral-signals" in [t.name for t in threading.enumerate()]
    assert before == signal.getsignal(signal.SIGUSR2)
    assert "corral-signals" not in [t.name for t in threading.enumerate()]
