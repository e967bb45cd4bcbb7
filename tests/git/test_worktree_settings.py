"""The [worktree] settings: read from the file, validated in one place."""

from __future__ import annotations

import pytest

from corral.foundation.errors import InvalidInput
from corral.foundation.settings import Settings, load_settings


def test_the_worktree_section_is_read_from_the_file(tmp_path):
    """Every [worktree] key lands in the worktree slice, durations parsed."""
    path = tmp_path / "config.toml"
    path.write_text(
        "[worktree]\n"
        'dir = "trees"\nbranch_template = "agent/{task}"\nbase = "develop"\n'
        'setup = "npm ci"\nmerge_strategy = "squash"\nreview_stale_after = "2h"\n'
        'review_queues = ["code"]\n'
    )
    settings = load_settings({}, str(path))
    policy = settings.worktree
    assert ("trees", "agent/{task}", "develop", "npm ci", "squash", 7200.0) == (
        policy.dir,
        policy.branch_template,
        policy.base,
        policy.setup,
        policy.merge_strategy,
        policy.review_stale_after_s,
    )
    assert ("code",) == settings.review_queues


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("merge_strategy", "rebase", "one of ff, merge, squash"),
        ("worktree_branch_template", "corral/{worker}", "a template naming {task}"),
    ],
)
def test_bad_worktree_settings_name_the_field(field, value, expected):
    """A strategy corral lacks, a template without {task}: InvalidInput saying what fits."""
    with pytest.raises(InvalidInput, match=expected) as caught:
        Settings(**{field: value})
    assert field == caught.value.field
