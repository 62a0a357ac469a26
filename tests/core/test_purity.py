"""The functional core imports nothing that does I/O or reads the clock or environment."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "ingestd" / "core"
ALLOWED_ROOTS = {
    "__future__", "abc", "base64", "bisect", "collections", "dataclasses", "datetime", "decimal", "enum",
    "functools", "hashlib", "heapq", "itertools", "json", "math", "operator", "orjson", "re", "string",
    "struct", "typing", "unicodedata", "codecs", "zlib", "binascii", "ingestd",
}  # fmt: skip


def test_core_imports_only_pure_modules() -> None:
    bad = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                root = name.split(".")[0]
                if root not in ALLOWED_ROOTS or (
                    root == "ingestd" and not name.startswith(("ingestd.core", "ingestd.errors"))
                ):
                    bad.append(f"{path.name}: {name}")
    assert bad == []


def test_core_never_reads_the_clock() -> None:
    for path in CORE.rglob("*.py"):
        text = path.read_text()
        for forbidden in ("datetime.now(", ".utcnow(", "time.time(", "uuid4(", "os.environ"):
            assert forbidden not in text, f"{path.name} uses {forbidden}"
