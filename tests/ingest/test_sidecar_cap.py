"""A subagent's ``.meta.json`` past ``META_MAX_BYTES`` is logged as an oversized marker (length,
hash, head, tail), counted and warned about, never read whole; a normal one next to it still names
its bytes, and a re-read of the unchanged file inserts nothing."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import orjson
from structlog.testing import capture_logs

from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.readfile import META_MAX_BYTES
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.payload import register_sql

NOW = "2026-01-02T00:00:00.000Z"
SID = "11111111-1111-4111-8111-111111111111"


def test_an_oversized_sidecar_is_a_marker_and_memory_stays_bounded(tmp_path: Path) -> None:
    sub = tmp_path / "projects" / "-p" / SID / "subagents"
    sub.mkdir(parents=True)
    (sub / "agent-a1.meta.json").write_bytes(b'{"agentType": "Explore"}')
    big = sub / "agent-a2.meta.json"
    with big.open("wb") as fh:
        fh.write(b'{"agentType": "')
        fh.truncate(64 * META_MAX_BYTES)  # sparse
    conn = connect(tmp_path / "x.db")
    migrate(conn)
    register_sql(conn)
    tracemalloc.start()
    with capture_logs() as logs:
        s = ingest_roots(conn, [tmp_path / "projects"], now=NOW)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 * META_MAX_BYTES  # the file is 64 caps long
    assert s.oversized == 1 and s.files_read == 2
    warned = [e for e in logs if e["event"] == "sidecar_oversized"]
    assert [(e["origin"], e["length"]) for e in warned] == [
        (f"-p/{SID}/subagents/agent-a2.meta.json", 64 * META_MAX_BYTES)
    ]
    rows = conn.execute(
        "SELECT origin, payload_bytes(codec, payload) FROM events_raw WHERE event_type = 'meta' ORDER BY origin"
    ).fetchall()
    assert rows[0][1] == b'{"agentType": "Explore"}'
    marker = orjson.loads(rows[1][1])["oversized"]
    assert marker["length"] == 64 * META_MAX_BYTES and len(marker["blake2b"]) == 16
    again = ingest_roots(conn, [tmp_path / "projects"], now=NOW)
    assert again.rows_inserted == 0
    big.write_bytes(b'{"agentType": "Plan"}')  # shrunk back to a normal sidecar: read again, whole
    ingest_roots(conn, [tmp_path / "projects"], now=NOW)
    last = conn.execute(
        "SELECT payload_bytes(codec, payload) FROM events_raw WHERE origin LIKE '%a2.meta.json'"
        " ORDER BY id DESC LIMIT 1"
    ).fetchall()
    assert last == [(b'{"agentType": "Plan"}',)]
