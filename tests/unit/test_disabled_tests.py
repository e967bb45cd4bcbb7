"""What in a run's diff disables tests (corral.git.disabled_tests.findings)."""

from __future__ import annotations

import pytest

from corral.git.disabled_tests import findings


def diff(path: str, *added: str) -> str:
    """A `git diff -U0` of one file adding `added`."""
    lines = [f"diff --git a/{path} b/{path}", f"--- a/{path}", f"+++ b/{path}", "@@ -1 +1,2 @@"]
    return "\n".join([*lines, *(f"+{line}" for line in added), "-removed"]) + "\n"


@pytest.mark.parametrize(
    "added",
    [
        "@pytest.mark.skip(reason='flaky')",
        "@pytest.mark.skipif(sys.platform == 'win32', reason='x')",
        "    @pytest.mark.xfail",
        "    pytest.skip('later')",
        "@unittest.skip('broken')",
        "@unittest.skipIf(True, 'no')",
        "@unittest.expectedFailure",
        "it.skip('renders', () => {",
        "test.skip('adds', () => {",
        "describe.skip('widget', () => {",
        "xit('renders', () => {",
        "xdescribe('widget', () => {",
    ],
)
def test_an_added_skip_or_xfail_marker_is_found(added: str) -> None:
    """Each marker the issue names, added anywhere, is a finding naming its file."""
    assert (f"tests/test_w.py: {added.strip()}",) == findings(diff("tests/test_w.py", added), [])


@pytest.mark.parametrize(
    "added",
    ["def test_skip_rows(): ...", "# we never skip here", "result = exit(0)", "xit = 3"],
)
def test_ordinary_lines_are_not_findings(added: str) -> None:
    """A word such as skip in a name or comment is no marker."""
    assert () == findings(diff("src/app.py", added), [])


def test_a_removed_marker_is_not_a_finding() -> None:
    """Only added lines count: taking a skip away enables a test."""
    text = "+++ b/tests/test_w.py\n-@pytest.mark.skip\n+def test_w(): ...\n"
    assert () == findings(text, [])


def test_deleted_files_under_test_paths_are_found() -> None:
    """A deleted test file is a finding; a deleted source file is not."""
    deleted = [
        "tests/test_old.py",
        "pkg/api_test.go",
        "web/src/widget.test.tsx",
        "web/__tests__/a.js",
        "src/app.py",
        "docs/testing.md",
    ]
    expected = (
        "tests/test_old.py: deleted",
        "pkg/api_test.go: deleted",
        "web/src/widget.test.tsx: deleted",
        "web/__tests__/a.js: deleted",
    )
    assert expected == findings("", deleted)
