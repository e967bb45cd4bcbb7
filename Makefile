# make run: the main job (a pool of sample agents landing work on a throwaway repository).
# make test: lint, type-check, layer contract, then the whole suite.
# Both create the virtual environment on first use; re-running is cheap.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup run test test-hostile check bench screenshots clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "corral needs Python 3.11 or newer")'
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --editable '.[test]'
	@# Python 3.11's venv brings setuptools, whose .pth hook runs at every interpreter start
	@# (about 0.5 ms a command); nothing here needs it: hatchling builds in isolation.
	$(PY) -m pip uninstall --quiet --yes setuptools
	@# An editable install compiles no bytecode; without it every CLI command recompiles corral.
	$(PY) -m compileall -q src
	@touch $(STAMP)

run: setup
	$(VENV)/bin/python examples/demo.py

check: setup
	$(VENV)/bin/ruff check src tests bench examples
	$(VENV)/bin/ruff format --check src tests bench examples
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# The suite mostly waits on processes, servers and git: more processes than cores pay.
# Each test has its own store, schema, ports and tmux server, so they run side by side.
TEST_PROCESSES ?= 4

# The run ends with its 25 slowest tests, so the 30-minute budget of `make test` can be
# watched in every CI log. (Starting the slow group first was tried: every heavy test at
# once made the run slower, 34.5 min against 30.1, and timing tests failed.) Work stealing:
# a test queued behind a five-minute one goes to a process that is free, so the run does
# not end on one process working through its queue while the others wait.
test: check
	$(VENV)/bin/pytest -n $(TEST_PROCESSES) --dist worksteal --durations=25

# The hostile-input walk alone (tests/acceptance/test_hostile_input.py, part of `test`
# too): every command and flag fed every family of bad value, on both stores and over HTTP.
test-hostile: setup
	$(VENV)/bin/pytest -n $(TEST_PROCESSES) -m hostile

# The pictures of docs/dashboard.md, taken by the dashboard's own browser tests.
screenshots: setup
	CORRAL_SCREENSHOTS=docs/images $(VENV)/bin/pytest -q tests/dashboard

bench: setup
	@# huey and procrastinate are installed only for the benchmarks that compare against them.
	$(PY) -m pip install --quiet --editable '.[bench,pgbench-peer]'
	$(VENV)/bin/python bench/run_all.py

clean:
	rm -rf $(VENV) .corral .pytest_cache .mypy_cache .ruff_cache .hypothesis
