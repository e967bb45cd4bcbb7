"""A deferred module is imported on first use, whole, and only then."""

from __future__ import annotations

import subprocess
import sys

import pytest

from corral.cli.deferred import Deferred, defer

MODULE = "corral_deferred_probe"


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """A module on sys.path that counts how often it runs (in a file beside it)."""
    runs = tmp_path / "runs"
    (tmp_path / f"{MODULE}.py").write_text(
        f"with open({str(runs)!r}, 'a') as f:\n    f.write('x')\nVALUE = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    yield runs
    sys.modules.pop(MODULE, None)


def test_a_deferred_import_runs_nothing_until_an_attribute_is_asked(probe):
    """`import` of a deferred module succeeds without running it."""
    defer(MODULE)
    module = __import__(MODULE)
    assert isinstance(module, Deferred)
    assert not probe.exists()


def test_the_first_attribute_imports_the_real_module_once(probe):
    """The first use runs the module once; every later use, by any name, sees the real one."""
    defer(MODULE)
    stand_in = __import__(MODULE)
    assert 42 == stand_in.VALUE
    from corral_deferred_probe import VALUE

    assert (42, "x") == (VALUE, probe.read_text())
    assert not isinstance(sys.modules[MODULE], Deferred)
    assert sys.modules[MODULE].__file__ == stand_in.__file__


def test_a_module_already_imported_is_left_alone():
    """`defer` never replaces a module that is already loaded."""
    json_module = sys.modules["json"]
    defer("json")
    assert json_module is sys.modules["json"]


def test_the_cli_runs_a_command_without_importing_inspect(tmp_path):
    """A command leaves inspect (with ast, dis, tokenize) and copy (with weakref) unimported."""
    code = (
        "import sys\n"
        "from corral.cli.deferred import CLI_DEFERRED, defer\n"
        "defer(*CLI_DEFERRED)\n"
        "from corral.cli.main import main\n"
        f"code = main(['--db', {str(tmp_path / 'c.db')!r}, 'init'])\n"
        "names = ('inspect', 'ast', 'dis', 'tokenize', 'copy', 'weakref')\n"
        "print(code, sorted(m for m in names if type(sys.modules.get(m)).__name__ == 'module'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "0 []" == done.stdout.strip().splitlines()[-1]
