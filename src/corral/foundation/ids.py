"""Identifiers: a kind prefix and ten random base-32 characters (`t-7k2m9x4qab`).

Ten characters give 32**10 (about 1e15) values: a collision among a million tasks has a
chance of about 5e-4, and then the insert fails (a unique index) rather than overwrite. The alphabet
leaves out i, l, o and u so ids survive being read aloud or copied by hand.
"""

from __future__ import annotations

import os

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"
_LENGTH = 10
# Each random byte to a character of the alphabet (its low 5 bits), in one C call: a batch
# runner makes an id per task, and a loop over the bytes cost more than the urandom.
_TO_ALPHABET = bytes(ord(_ALPHABET[b & 31]) for b in range(256))
TASK_PREFIX = "t-"
WORKER_PREFIX = "w-"
RUN_PREFIX = "r-"


def new_id(prefix: str) -> str:
    """A fresh random id with `prefix`."""
    return prefix + os.urandom(_LENGTH).translate(_TO_ALPHABET).decode("ascii")


def new_ids(prefix: str, count: int) -> list[str]:
    """`count` fresh random ids with `prefix`, from one read of the system's randomness (a
    batch runner opens a run per task: a system call each cost more than the rest of the id)."""
    text = os.urandom(_LENGTH * count).translate(_TO_ALPHABET).decode("ascii")
    return [prefix + text[at : at + _LENGTH] for at in range(0, _LENGTH * count, _LENGTH)]
