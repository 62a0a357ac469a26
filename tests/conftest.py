"""Shared fixtures: a migrated database, the real corpus location, a PostgreSQL cluster."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import apsw
import psycopg
import pytest

from ingestd import logs
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.pgcluster import Cluster, bin_dir
from tests.realclaude.fixtures import claude, claude_code, recorder, standin  # noqa: F401 (fixtures for every test)

# structlog loads at a command's first log line; tests capture lines with structlog.testing,
# which must find ingestd's configuration already in place
logs.load()


class _CapturedStderr:
    """Log lines to ``sys.stderr`` only while pytest (or a CliRunner) holds it: a thread a test
    started (a daemon's committer, a logging storm) writing in the moment between a test's phases,
    when pytest hands the real stderr back, would print into the run's report instead."""

    def write(self, text: str) -> int:
        return len(text) if sys.stderr is sys.__stderr__ else sys.stderr.write(text)

    def flush(self) -> None:
        if sys.stderr is not sys.__stderr__:
            sys.stderr.flush()

    def isatty(self) -> bool:
        return False


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("capture") != "no":  # with -s every line is shown, as it comes
        logs.configure(stream=_CapturedStderr(), force=True)  # type: ignore[arg-type]


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


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A throwaway PostgreSQL cluster per test session (per xdist worker), started by the first test
    that asks; skipped, saying why, when PostgreSQL's binaries are not installed."""
    bindir = bin_dir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql; .ci/run does it)")
    cluster = Cluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.stop()


_pg_databases = itertools.count()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """The URL of a new, empty database in the session's cluster."""
    name = f"t{next(_pg_databases)}"
    with psycopg.connect(pg_cluster.url(), autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return pg_cluster.url(name)


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
