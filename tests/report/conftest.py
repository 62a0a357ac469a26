"""The fixture database for the report tests (helpers live in report_fixture.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_fixture import build_fixture_db


@pytest.fixture
def report_db(tmp_path: Path) -> Path:
    return build_fixture_db(tmp_path / "reports.db")
