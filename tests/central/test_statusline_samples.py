"""Status-line snapshots in team mode: shipped like every log row, projected centrally into the same
``rate_limit_samples`` rows (with their host), and replayed equal."""

from __future__ import annotations

from pathlib import Path

import orjson
import psycopg

from ingestd.central.check import replay
from ingestd.central.pg import connect as pg_connect
from ingestd.core.rows import RateLimitSampleRow
from ingestd.core.statusline import Snapshot, parse_input
from ingestd.daemon.hookwriter import store_rows
from ingestd.http.statusline import snapshot_row
from tests.central.support import local_db, project, ship_all
from tests.statusline.documented import NOW, documented


def test_samples_reach_the_central_store_with_their_host(tmp_path: Path, pg_url: str) -> None:
    local = local_db(tmp_path / "a.db", [], "host-a")
    docs = [documented(NOW), documented(NOW + 90, cost={"total_cost_usd": 2.5})]
    snaps = [parse_input(orjson.dumps(d)) for d in docs]
    assert all(isinstance(s, Snapshot) for s in snaps)
    store_rows(local, [snapshot_row(s, int((NOW + i) * 1e9)) for i, s in enumerate(snaps)])  # type: ignore[arg-type]
    fields = ", ".join(RateLimitSampleRow._fields[1:])
    mine = sorted(tuple(r) for r in local.execute(f"SELECT {fields} FROM rate_limit_samples"))
    assert len(mine) == 2
    ship_all(local, pg_url)
    project(pg_url)
    with psycopg.connect(pg_url) as c:
        central = sorted(c.execute(f"SELECT {fields}, host_id FROM rate_limit_samples").fetchall())
    assert [r[:-1] for r in central] == mine and {r[-1] for r in central} == {"host-a"}
    pg = pg_connect(pg_url)
    try:
        outcome = replay(pg)
        assert outcome.ok and outcome.live["rate_limit_samples"][0] == 2
    finally:
        pg.close()
