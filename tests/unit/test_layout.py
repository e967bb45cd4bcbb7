"""Every module of corral is in a layer of the import contract: the contract names packages
(pyproject.toml, docs/architecture.md's layers), so a module added outside them would be
checked by nothing; this test names it."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "corral"
# Containers of layers, not layers: the public API's lazy table, and the board's folder.
CONTAINERS = {"corral", "corral.board"}


def _layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    return [name.strip() for layer in contract["layers"] for name in layer.split(":")]


def _modules() -> list[str]:
    found = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(found)


def test_every_module_is_in_a_layer() -> None:
    layers = _layers()
    outside = [
        module
        for module in _modules()
        if module not in CONTAINERS
        and not any(module == layer or module.startswith(layer + ".") for layer in layers)
    ]
    assert [] == outside
