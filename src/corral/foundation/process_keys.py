"""The keys that prove a process is corral's (corral.foundation.processes says how they are
checked): random, made by corral when it starts a process, passed in that process's
environment, recorded in the store only as their SHA-256.

    CORRAL_WORKER_KEY   a worker's runner: set by the pool for each worker it spawns, by
                        `corral worker start` for itself (it starts again with one), or by
                        whoever starts a program that registers (`worker register` records
                        the hash of the key in its own environment)
    CORRAL_RUN_KEY      every process of every run a runner runs: one key per runner
    CORRAL_ORCHESTRATOR_KEY  an orchestrator: set by `orchestrator start --daemon` for the
                        one it detaches, or by `orchestrator start` for itself

No psutil here, and hashlib only when a key is hashed (OpenSSL's loading costs every
command that imports this module 4 ms): `worker register` reads its key on the CLI's fast
path.
"""

from __future__ import annotations

import functools
import os

#: The variable that holds a worker runner's key in its environment as it starts.
WORKER_KEY_ENV = "CORRAL_WORKER_KEY"
#: The variable that holds a runner's runs key in every process of its runs.
RUN_KEY_ENV = "CORRAL_RUN_KEY"
#: The variable that holds an orchestrator's key in its environment as it starts.
ORCHESTRATOR_KEY_ENV = "CORRAL_ORCHESTRATOR_KEY"
#: Never passed on to the processes corral starts: each proves one process alone.
OWN_KEYS = frozenset({WORKER_KEY_ENV, ORCHESTRATOR_KEY_ENV})
KEY_BYTES = 32


def new_key() -> str:
    """A fresh random key for a process corral starts (64 hex digits)."""
    return os.urandom(KEY_BYTES).hex()  # what secrets.token_hex does, without its base64


def key_digest(key: str) -> str:
    """What the store records of `key`: its SHA-256 in hex."""
    import hashlib  # noqa: PLC0415 - see the module's docstring

    return hashlib.sha256(key.encode()).hexdigest()


def own_key_hash(env_name: str = WORKER_KEY_ENV) -> str | None:
    """The hash of the key this process was started with in `env_name`, if any."""
    key = os.environ.get(env_name)
    return key_digest(key) if key else None


@functools.cache
def runs_key() -> str:
    """The key this process gives every process of the runs it runs (CORRAL_RUN_KEY): one
    per process, made the first time it is asked for."""
    return new_key()
