"""Identifiers: prefix, length and alphabet."""

from __future__ import annotations

from corral.foundation.ids import RUN_PREFIX, TASK_PREFIX, new_id, new_ids


def test_an_id_is_its_prefix_and_ten_characters_of_the_alphabet() -> None:
    """Ids are readable aloud: digits and lower-case letters bar i, l, o and u."""
    ids = [new_id(TASK_PREFIX) for _ in range(2000)]
    assert all(i.startswith("t-") and len(i) == 12 for i in ids)
    used = set("".join(i[2:] for i in ids))
    assert set("0123456789abcdefghjkmnpqrstvwxyz") == used


def test_ids_do_not_repeat() -> None:
    """Ten random characters: a few thousand ids never collide."""
    ids = {new_id(RUN_PREFIX) for _ in range(5000)}
    assert 5000 == len(ids)


def test_ids_made_together_are_ids_like_any_other() -> None:
    """A batch's run ids: as many as asked, each its prefix and ten characters, none twice."""
    ids = new_ids(RUN_PREFIX, 3000)
    assert 3000 == len(set(ids))
    assert all(i.startswith("r-") and len(i) == 12 for i in ids)
    assert set("0123456789abcdefghjkmnpqrstvwxyz") == set("".join(i[2:] for i in ids))
    assert [] == new_ids(RUN_PREFIX, 0)
