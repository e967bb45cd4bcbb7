"""The foreground orchestrator's task lines: one when its pool starts a task, one when it ends.

A real `corral orchestrator start --workers 2` runs a few tasks; its output holds a start
line and an end line per task, with the slot, the outcome, the duration and the title,
escaped and shortened.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import re
import signal
from typing import Any

from corral import NewTask, TaskFilter, TaskStatus, enqueue, load_settings

LINE = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d  (slot-\d)  (t-\w+)  (\w+) +  (\S*) +  (.*)$", re.MULTILINE
)
AGENT = """#!/bin/sh
# Fails the task named by FAIL_ID, succeeds the others after a moment.
[ "$CORRAL_TASK_ID" = "$FAIL_ID" ] && exit 1
sleep 0.2
"""


def _add(pool: Any, title: str, **fields: Any) -> str:
    return enqueue(pool.store, NewTask(title=title, **fields), settings=load_settings(pool.env)).id


def _finished(pool: Any) -> bool:
    tasks = pool.store.tasks.list_tasks(TaskFilter())
    return all(t.status in {TaskStatus.DONE, TaskStatus.FAILED} for t in tasks)


def test_the_pool_prints_a_start_and_an_end_line_per_task(pool: Any):
    """Each task: `started` then its outcome, on a slot of the pool, the title made safe."""
    pool.agent.write_text(AGENT)
    plain = pool.add(2)
    escaped = _add(pool, "red \x1b[31mALERT\x1b[0m\nforged line")
    long = _add(pool, "x" * 200)
    failing = _add(pool, "fails", max_attempts=1)
    pool.env["FAIL_ID"] = failing
    orchestrator = pool.start(workers=2)
    pool.wait(lambda: _finished(pool), 30)
    pool.wait(lambda: len(LINE.findall(pool.log())) == 10, 30)
    orchestrator.send_signal(signal.SIGTERM)
    assert 0 == orchestrator.wait(timeout=30)

    log = pool.log()
    lines = LINE.findall(log)
    by_task = {
        t: [(what, took) for _, task, what, took, _ in lines if task == t]
        for t in {line[1] for line in lines}
    }
    for task in (*plain, escaped, long):
        assert ["started", "done"] == [what for what, _ in by_task[task]]
    assert ["started", "failed"] == [what for what, _ in by_task[failing]]
    assert all(
        took.endswith(("ms", "s"))
        for task in by_task
        for what, took in by_task[task]
        if what != "started"
    )
    assert {slot for slot, *_ in lines} <= {"slot-1", "slot-2"}
    assert "\x1b" not in log
    titles = {task: title for _, task, _, _, title in lines}
    assert "red \\x1b[31mALERT\\x1b[0m\\nforged line" == titles[escaped]
    assert 60 == len(titles[long])
    assert titles[long].endswith("…")
