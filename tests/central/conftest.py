"""Fixtures for the team-mode tests: one real PostgreSQL cluster per test session, a fresh database per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest

from tests.pgcluster import Cluster, bin_dir

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """A throwaway cluster (skipped, saying why, when PostgreSQL's binaries are not installed)."""
    bindir = bin_dir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (apt-get install postgresql; .ci/run does it)")
    cluster = Cluster(bindir).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """The URL of a new, empty database in the session's cluster."""
    name = f"t{next(_counter)}"
    with psycopg.connect(pg_cluster.url(), autocommit=True) as c:
        c.execute(f"CREATE DATABASE {name}")
    return pg_cluster.url(name)
