"""Shared fixtures: a migrated database and the real corpus location."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

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
def _no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings come from the test, never from the machine's config file or INGESTD_* variables."""
    monkeypatch.setenv("INGESTD_CONFIG", str(tmp_path / "no-config.toml"))
    for name in [k for k in os.environ if k.startswith("INGESTD_") and k != "INGESTD_CONFIG"]:
        monkeypatch.delenv(name)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its worker plugin registers later)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under ``pytest -n`` (``make test``, ``--dist loadgroup``): the tests of the one PostgreSQL
    cluster and of the one browser each stay on one worker, so each is started once per run, and so
    do the tests of a module sharing a module-scoped fixture (an ingested corpus), built once."""
    for item in items:
        names = getattr(item, "fixturenames", ())
        if "browser" in names:
            group = "browser"
        elif "pg_cluster" in names:
            group = "postgresql"
        elif _uses_module_fixture(item):
            group = item.nodeid.split("::")[0]
        else:
            continue
        item.add_marker(pytest.mark.xdist_group(group))


def _uses_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in ("module", "package") for defs in info.name2fixturedefs.values() for d in defs)
