"""One worker record: `worker start`'s flags and `run_worker`'s keywords make the same
WorkerSpec, every option is reachable from each place (or says why not), and a runner's
config is taken from the spec rather than declared again."""

from __future__ import annotations

import inspect
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from corral.cli import argtree
from corral.cli.worker_start import worker_spec
from corral.foundation.errors import InvalidInput
from corral.foundation.policies import WorkerOptions, WorkerSpec
from corral.foundation.settings import SPEC
from corral.foundation.worker_options import KEYWORDS, OPTIONS, START
from corral.runtime.worker import api
from corral.runtime.worker.api import run_worker
from corral.runtime.worker.config import PACING, RESOLVED, RunnerConfig, runner_config

# run_worker's parameters that are not worker options: the work, and how to reach a store.
NOT_OPTIONS = {"execute", "capture_io", "context", "db", "token", "settings", "namespace"}

# The same worker, as flags and as keywords.
FLAGS = [
    "--name", "same", "--once", "--shutdown-timeout", "90s", "--kind", "code", "--kind", "doc",
    "--queue", "q1", "--label", "gpu=a100", "--label", "zone=b", "--version", "9.1",
    "--concurrency", "3", "--batch", "2", "--max-tasks", "7", "--lease", "10m",
    "--call", "json:dumps",
]  # fmt: skip
KEYWORD_VALUES: dict[str, Any] = {
    "name": "same",
    "once": True,
    "shutdown_timeout_s": 90.0,
    "kinds": ["code", "doc"],
    "queues": ("q1",),
    "labels": {"gpu": "a100", "zone": "b"},
    "version": "9.1",
    "concurrency": 3,
    "batch": 2,
    "max_tasks": 7,
    "lease_s": 600,
}


class Prepared(Exception):
    """Raised in place of preparing a worker, carrying the spec it was given."""

    def __init__(self, spec: WorkerSpec) -> None:
        super().__init__(spec.name)
        self.spec = spec


def _spec_of_run_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> WorkerSpec:
    """The spec `run_worker(**kw)` hands the assembly (nothing runs)."""

    def prepare(spec: WorkerSpec, **_: Any) -> None:
        raise Prepared(spec)

    monkeypatch.setattr(api, "prepare", prepare)
    with pytest.raises(Prepared) as caught:
        run_worker(lambda task, ctx: None, db=str(tmp_path / "corral.db"), **kw)
    return caught.value.spec


def test_flags_and_keywords_make_the_same_worker_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`worker start FLAGS` and `run_worker(KEYWORDS)` for the same worker: the same record
    (but `call`, which names on the command line the function a program passes itself)."""
    assert KEYWORDS == set(KEYWORD_VALUES)  # every keyword given, off its default
    from_flags = worker_spec(argtree.parse(["worker", "start", *FLAGS], ["worker", "start"]))
    from_keywords = _spec_of_run_worker(tmp_path, monkeypatch, **KEYWORD_VALUES)
    assert from_flags.options.call == "json:dumps"
    expected = WorkerSpec(
        name=from_flags.name,
        options=WorkerOptions(**{**_as_dict(from_flags.options), "call": ""}),
        once=from_flags.once,
        shutdown_timeout_s=from_flags.shutdown_timeout_s,
    )
    assert expected == from_keywords


def test_defaults_make_the_same_worker_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker given nothing but its name is the same record both ways: the table's defaults."""
    from_flags = worker_spec(argtree.parse(["worker", "start", "--name", "w"], ["worker", "start"]))
    assert from_flags == _spec_of_run_worker(tmp_path, monkeypatch, name="w")


def test_every_option_is_a_flag_of_worker_start_and_a_pool_key_unless_a_pool_decides_it() -> None:
    """Each row of the table is a flag of `worker start`; the options (not START) `[pool]` keys."""
    parser_flags = _flags_of(["worker", "start"])
    assert [] == [o.flag for o in (*START, *OPTIONS) if o.flag not in parser_flags]
    assert [] == [o.field for o in OPTIONS if o.setting not in SPEC]
    assert [] == [o.field for o in START if f"pool_{o.field}" in SPEC]
    assert [o.field for o in START] == [f.name for f in fields(WorkerSpec) if f.name != "options"]


def test_run_worker_takes_exactly_the_keyword_options_with_the_tables_defaults() -> None:
    """run_worker's parameters are KEYWORDS and what is not an option; each default is the
    table's (labels and name as None: an empty dict, and `py-PID`)."""
    parameters = inspect.signature(run_worker).parameters
    assert KEYWORDS | NOT_OPTIONS == set(parameters)
    rows = {o.field: o for o in (*START, *OPTIONS)}
    assert KEYWORDS <= set(rows)
    differ = {
        name: parameters[name].default
        for name in KEYWORDS
        if parameters[name].default != rows[name].default
    }
    assert {"name": None, "labels": None} == differ


def test_a_runners_config_is_its_specs_values_by_name() -> None:
    """Every RunnerConfig field is the spec's (its own or an option), resolved, or pacing;
    those the spec gives have the table's defaults, so a runner made by hand agrees."""
    spec_fields = {f.name for f in fields(WorkerSpec)} | {f.name for f in fields(WorkerOptions)}
    config_fields = {f.name for f in fields(RunnerConfig)}
    assert set() == config_fields - spec_fields - RESOLVED - PACING
    rows = {o.field: o.default for o in (*START, *OPTIONS)}
    bare = RunnerConfig(name="")
    assert {n: rows[n] for n in config_fields - RESOLVED - PACING} == {
        n: getattr(bare, n) for n in config_fields - RESOLVED - PACING
    }


def test_runner_config_takes_the_specs_values_and_the_resolved_ones() -> None:
    """runner_config: name, options and stop from the spec; labels and provider as resolved."""
    options = WorkerOptions(**{**_defaults(), "kinds": ("code",), "lease_s": 60.0, "batch": 4})
    spec = WorkerSpec(name="w", options=options, once=True, shutdown_timeout_s=9.0)
    config = runner_config(spec, labels={"gpu": "a100"}, provider="claude:work")
    assert (
        RunnerConfig(
            name="w",
            kinds=("code",),
            lease_s=60.0,
            batch=4,
            once=True,
            shutdown_timeout_s=9.0,
            labels={"gpu": "a100"},
            provider="claude:work",
        )
        == config
    )


def _flags_of(words: list[str]) -> set[str]:
    parsers = argtree.build(words)[1]
    return {flag for action in parsers[tuple(words)]._actions for flag in action.option_strings}


def _as_dict(options: WorkerOptions) -> dict[str, Any]:
    return {f.name: getattr(options, f.name) for f in fields(options)}


def _defaults() -> dict[str, Any]:
    return {o.field: o.default for o in OPTIONS}


@pytest.mark.parametrize(
    ("keywords", "field"),
    [
        ({"concurrency": 0}, "concurrency"),
        ({"max_tasks": 0}, "max_tasks"),
        ({"lease_s": 0}, "lease"),
        ({"kinds": ["two words"]}, "kind"),
        ({"labels": {"a=b": "c"}}, "labels"),
    ],
)
def test_run_worker_refuses_what_worker_start_refuses(
    tmp_path: Path, keywords: dict[str, Any], field: str
) -> None:
    """A keyword `worker start` would refuse as a flag is InvalidInput naming it, before any
    store is opened (none exists here)."""
    with pytest.raises(InvalidInput) as caught:
        run_worker(lambda task, ctx: None, db=str(tmp_path / "corral.db"), **keywords)
    assert field == caught.value.field
    assert not (tmp_path / "corral.db").exists()
