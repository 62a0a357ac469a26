"""Shared fixtures: a migrated database and the real corpus location."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from ingestd import logs
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.realclaude.fixtures import claude, claude_code, recorder, standin  # noqa: F401 (fixtures for every test)

# structlog loads at a command's first log line; tests capture lines with structlog.testing,
# which must find ingestd's configuration already in place
logs.load()

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
CORPUS = SHARED / "corpus"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A migrated database file in a temporary directory."""
    path = tmp_path / "ingestd.db"
    conn = connect(path)
    migrate(conn)
    conn.close()
    return path


@pytest.fixture
def db(db_path: Path) -> Iterator[apsw.Connection]:
    """An open connection to a migrated database."""
    conn = connect(db_path)
    yield conn
    conn.close()


@pytest.fixture
def corpus() -> Path:
    """../shared/corpus, or skip when a fresh clone has no shared folder beside it."""
    if not CORPUS.is_dir():
        pytest.skip(f"real corpus not found at {CORPUS}")
    return CORPUS


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the test, never from the machine's config file or INGESTD_* variables.

    INGESTD_CONFIG names an empty file of the test's own (a named file must exist), outside
    ``tmp_path`` (tests list what they made there)."""
    config = tmp_path_factory.mktemp("config") / "no-config.toml"
    config.write_text("")
    monkeypatch.setenv("INGESTD_CONFIG", str(config))
    for name in [k for k in os.environ if k.startswith("INGESTD_") and k != "INGESTD_CONFIG"]:
        monkeypatch.delenv(name)
