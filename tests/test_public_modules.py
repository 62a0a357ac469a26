"""A package's ``__all__`` names the modules other packages may import; every other module is the
package's own. Checked from the AST of every module under ``ingestd/`` (function-level imports
included), so a module that starts being used from outside is listed, and one that stops is not
(tests and bench may import any module)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

from ingestd import commands

ROOT = Path(__file__).resolve().parent.parent / "ingestd"


def _modules() -> dict[str, Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        name = ".".join(p.relative_to(ROOT.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = p
    return out


def _imported(path: Path, known: set[str]) -> set[str]:
    """The ingestd modules ``path`` imports (``from pkg import mod`` counts as importing ``pkg.mod``)."""
    got: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        got |= {n for n in names if n in known}
    return got


PACKAGES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_exactly_the_modules_used_from_outside(package: str) -> None:
    mods = _modules()
    pkg = f"ingestd.{package}"
    own = {n.rsplit(".", 1)[1] for n in mods if n.rsplit(".", 1)[0] == pkg}
    declared = importlib.import_module(pkg).__all__
    assert declared == sorted(declared) and set(declared) <= own, "every name in __all__ is a module of it"
    if package == "commands":  # the commands are found by name (ingestd.cli), not imported
        return
    used = {
        target.rsplit(".", 1)[1]
        for name, path in mods.items()
        if not name.startswith(pkg + ".") and name != pkg
        for target in _imported(path, set(mods))
        if target.rsplit(".", 1)[0] == pkg
    }
    assert used - set(declared) == set(), f"used from outside {pkg} but not in its __all__"
    assert set(declared) - used == set(), f"in {pkg}.__all__ but used only inside it"


def test_the_commands_are_what_the_cli_finds() -> None:
    found = sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))
    assert commands.__all__ == found
