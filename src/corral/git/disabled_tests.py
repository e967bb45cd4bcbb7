"""Runs whose diff disables tests: flagged on the task and in review (issue 31).

An agent told to make the tests pass can also make them stop failing: a skip marker, an
xfail, a deleted test file. corral does not refuse such work (a skip can be right), but it
shows it to the person who reviews or lands it. What counts, in the lines a run's diff
adds (from the commit the run started from to the one it ended at, before the base is
merged in, so another task's change is never this one's):

    pytest        @pytest.mark.skip, @pytest.mark.skipif, @pytest.mark.xfail,
                  pytest.skip(...), pytest.xfail(...)
    unittest      @unittest.skip, skipIf, skipUnless, @unittest.expectedFailure
    JavaScript    it.skip / test.skip / describe.skip (and `.todo`), xit, xtest, xdescribe

and any file the diff deletes under a test path (a `test`, `tests`, `__tests__` or `spec`
folder, `test_*.py`, `*_test.py`, `*_test.go`, `*.test.js`, `*.spec.ts` ...). Each finding
is one line, `path: the added line` or `path: deleted`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from corral.git.repo import Git

MARKER = re.compile(
    r"pytest\.mark\.(?:skip|skipif|xfail)\b|\bpytest\.(?:skip|xfail)\("
    r"|\bunittest\.(?:skip|skipIf|skipUnless|expectedFailure)\b"
    r"|\b(?:it|test|describe)\.(?:skip|todo)\b|\bx(?:it|test|describe)\("
)
TEST_PATH = re.compile(
    r"(?:^|/)(?:tests?|__tests__|spec)/"
    r"|(?:^|/)test_[^/]+\.py$|_test\.(?:py|go)$|\.(?:test|spec)\.[cm]?[jt]sx?$"
)
FINDINGS_MAX = 20  # lines kept: enough to point a reviewer at each file
LINE_MAX = 200


def findings(diff: str, deleted: Iterable[str]) -> tuple[str, ...]:
    """What in a unified diff (`git diff -U0`) and its deleted paths disables tests."""
    found: list[str] = []
    path = ""
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
        elif line.startswith("+") and MARKER.search(line):
            found.append(f"{path}: {line[1:].strip()[:LINE_MAX]}")
    found += [f"{name}: deleted" for name in deleted if TEST_PATH.search(name)]
    return tuple(found[:FINDINGS_MAX])


def disabled_tests(git: Git, start: str, end: str) -> tuple[str, ...]:
    """What the commits from `start` to `end` in the worktree `git` runs in disable."""
    if start == end:
        return ()
    diff = git.out("diff", "-U0", "--no-color", "--no-ext-diff", start, end)
    deleted = git.out("diff", "--name-only", "--diff-filter=D", "-z", start, end)
    return findings(diff, [name for name in deleted.split("\0") if name])
