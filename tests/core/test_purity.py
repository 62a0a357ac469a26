"""The functional core does no I/O and reads neither the clock nor the environment, checked on the AST
of every module under ``ingestd/core`` (STYLE.md "Keep the core pure").

Every name is resolved through the module's imports, so an alias does not hide what it names
(``from datetime import datetime as D; D.now()`` is ``datetime.datetime.now``). Refused: importing
a module outside ``ALLOWED_ROOTS`` (``os``, ``time``, ``uuid``, ``random``, ``sys``, ``pathlib``, ...), any
use of a clock, file or process member of an allowed one (``FORBIDDEN``), the I/O and dynamic-code
builtins (``open``, ``print``, ``eval``, ``__import__``, ...), ``getattr`` spelling a forbidden
member, and the two ``datetime`` calls that read the machine's time zone when given none
(``astimezone()``, ``fromtimestamp(t)``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "ingestd" / "core"
ALLOWED_ROOTS = {
    "__future__", "abc", "base64", "bisect", "collections", "dataclasses", "datetime", "decimal", "enum",
    "functools", "hashlib", "heapq", "itertools", "json", "math", "operator", "orjson", "re", "string",
    "struct", "typing", "unicodedata", "codecs", "zlib", "binascii", "ingestd",
}  # fmt: skip
# Members of allowed modules that read the clock or do I/O, by the dotted name they resolve to.
FORBIDDEN = {
    "datetime.datetime.now",
    "datetime.datetime.utcnow",
    "datetime.datetime.today",
    "datetime.date.today",
    "json.load",
    "json.dump",
    "codecs.open",
    "orjson.dump",
}
BUILTINS = {"open", "input", "print", "exec", "eval", "compile", "__import__", "breakpoint", "exit", "quit"}
# datetime methods that fall back to the machine's zone (the environment) without a tz argument:
# name -> how many positional arguments carry one
LOCAL_ZONE = {"astimezone": 1, "fromtimestamp": 2}


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Every name an import binds -> the dotted name it stands for (function-level imports too)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def _dotted(node: ast.AST, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value, aliases)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _imports(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def impurities(source: str, name: str = "<core>") -> list[str]:
    """What in ``source`` does I/O, reads the clock or the environment (empty: pure)."""
    tree = ast.parse(source)
    aliases = _aliases(tree)
    bad: list[str] = []

    def say(node: ast.AST, what: str) -> None:
        bad.append(f"{name}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        for mod in _imports(node):
            root = mod.split(".")[0]
            ours_outside = root == "ingestd" and not mod.startswith(("ingestd.core", "ingestd.errors"))
            if root not in ALLOWED_ROOTS or ours_outside:
                say(node, f"imports {mod}")
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            say(node, f"imports * from {node.module}")
        if isinstance(node, (ast.Name, ast.Attribute)) and (dotted := _dotted(node, aliases)) in FORBIDDEN:
            say(node, f"uses {dotted}")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in BUILTINS and func.id not in aliases:
            say(node, f"calls {func.id}()")
        if isinstance(func, ast.Name) and func.id in ("getattr", "setattr", "hasattr") and len(node.args) >= 2:
            target, attr = node.args[0], node.args[1]
            base = _dotted(target, aliases)
            if base is not None and isinstance(attr, ast.Constant) and f"{base}.{attr.value}" in FORBIDDEN:
                say(node, f"{func.id}s {base}.{attr.value}")
        if isinstance(func, ast.Attribute) and func.attr in LOCAL_ZONE:
            given = len(node.args) >= LOCAL_ZONE[func.attr] or any(k.arg == "tz" for k in node.keywords)
            if not given:
                say(node, f"calls {func.attr}() without a time zone (the machine's zone)")
    return bad


def test_the_core_is_pure() -> None:
    bad = [b for path in sorted(CORE.rglob("*.py")) for b in impurities(path.read_text(), path.name)]
    assert bad == []


@pytest.mark.parametrize(
    "source",
    [
        "from datetime import datetime as D\nD.now()",
        "import datetime as d\nd.datetime.utcnow()",
        "from datetime import date\ndate.today()",
        "from datetime import datetime\nnow = datetime.now\n",
        "from datetime import datetime\ngetattr(datetime, 'now')()",
        "import time\ntime.time()",
        "def f():\n    import os\n    return os.environ",
        "from os import environ",
        "import uuid\nuuid.uuid4()",
        "import random",
        "from pathlib import Path",
        "open('x')",
        "print('x')",
        "__import__('os')",
        "eval('1')",
        "import json\njson.load(fh)",
        "from datetime import *",
        "from ingestd.store import writer",
        "from datetime import datetime\ndatetime(2026, 1, 1).astimezone()",
        "from datetime import datetime\ndatetime.fromtimestamp(0)",
    ],
)
def test_each_way_out_is_caught(source: str) -> None:
    assert impurities(source), source


@pytest.mark.parametrize(
    "source",
    [
        "from datetime import UTC, datetime\ndatetime(2026, 1, 1, tzinfo=UTC).astimezone(UTC)",
        "from datetime import UTC, datetime\ndatetime.fromtimestamp(0, tz=UTC)",
        "from datetime import UTC, datetime\ndatetime.fromtimestamp(0, UTC)",
        "import json\njson.loads(b'{}')",
        "from ingestd.core.timefmt import parse\nparse('2026-01-01T00:00:00Z')",
        "def now(x):\n    return x\nnow(1)",
    ],
)
def test_pure_code_passes(source: str) -> None:
    assert impurities(source) == []
