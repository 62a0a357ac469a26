"""A fixture database of hand-made projection rows (fixtures/reports/fixture.sql), and golden files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_SQL = ROOT / "fixtures" / "reports" / "fixture.sql"
GOLDEN_DIR = ROOT / "fixtures" / "reports" / "golden"
REGEN = os.environ.get("INGESTD_REGEN_GOLDEN") == "1"


def build_fixture_db(path: Path) -> Path:
    """Migrate a fresh database at ``path`` and load the fixture rows."""
    conn = connect(path)
    migrate(conn, now="2025-01-01T00:00:00.000Z")
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(FIXTURE_SQL.read_text(encoding="utf-8"))
    conn.execute("COMMIT")
    conn.close()
    return path


def check_golden(name: str, doc: Any) -> None:
    """Compare ``doc`` with ``fixtures/reports/golden/<name>.json``; rewrite it only with INGESTD_REGEN_GOLDEN=1."""
    path = GOLDEN_DIR / f"{name}.json"
    text = orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
    if REGEN:
        GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text)
        return
    assert path.exists(), f"missing golden {path}: run with INGESTD_REGEN_GOLDEN=1 once and review it"
    assert orjson.loads(text) == orjson.loads(path.read_bytes()), f"{name} differs from {path}"
