"""Disk full and a read-only database during ingest (SPEC §3, §10, §12).

The faults are real SQLite errors on the ingest's own connection: ``SQLITE_FULL`` from a
``max_page_count`` just above what the first batch needs, ``SQLITE_READONLY`` from
``query_only``. Expected: the command exits non-zero with one line on stderr, every batch
committed before the fault is whole (rows, projections and checkpoints together), nothing of
the failed batch remains, and a rerun once the condition clears ends exactly where one
clean run ends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.commands import ingest as ingest_cmd
from ingestd.commands._common import Opened
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.hookclient import JSON_HEADERS
from tests.reliability.support import SID, assert_replay_ok, q, snapshot

SLUG = "-tmp-faults"
LINES = 600  # per file; two files fill the first batch (BATCH rows), the third is the second batch
BATCH = 2 * LINES


def sid(n: int) -> str:
    return SID[:-2] + f"{n:02d}"


def write_tree(root: Path, files: int) -> None:
    (root / SLUG).mkdir(parents=True, exist_ok=True)
    for n in range(files):
        s = sid(n)
        recs = []
        for i in range(LINES):
            r: dict[str, Any] = {
                "type": "user",
                "uuid": f"{s}-{i}",
                "sessionId": s,
                "cwd": "/tmp/faults",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"content": f"l{i}"},
            }
            if i % 10 == 0:
                r = {
                    **r,
                    "type": "assistant",
                    "message": {
                        "id": f"m-{s}-{i}",
                        "model": "claude-opus-4-6",
                        "content": [],
                        "usage": {"input_tokens": i},
                    },
                }
            recs.append(orjson.dumps(r) + b"\n")
        (root / SLUG / f"{s}.jsonl").write_bytes(b"".join(recs))


def pages_for_two_files(tmp: Path) -> int:
    root = tmp / "calib"
    write_tree(root, 2)
    db = tmp / "calib.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(root), "--json"]).exit_code == 0
    conn = connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(conn.execute("PRAGMA page_count").fetchall()[0][0])
    finally:
        conn.close()


def faulty_open(fault: Callable[[apsw.Connection], None]) -> Callable[..., Opened]:
    real = ingest_cmd.open_db

    def open_db(db_path: Path | None, *args: Any) -> Opened:
        opened = real(db_path, *args)
        fault(opened.db)
        return opened

    return open_db


def run_ingest(db: Path, root: Path) -> Any:
    return CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(root), "--json"])


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_cmd, "ingest_roots", functools.partial(ingest_cmd.ingest_roots, batch_rows=BATCH))


def checkpoint_consistent(db: Path) -> None:
    """Every checkpoint's rows are all there and nothing lies past it: no half batch."""
    for origin, offset in q(db, "SELECT origin, committed_offset FROM ingest_checkpoints"):
        rows = q(db, "SELECT count(*), coalesce(max(origin_offset), -1) FROM events_raw WHERE origin = ?", (origin,))
        count, last = rows[0]
        assert last < offset
        assert count == LINES or offset < 0, (origin, count, offset)
    orphans = q(
        db,
        "SELECT count(DISTINCT origin) FROM events_raw WHERE source = 'jsonl' AND origin NOT IN"
        " (SELECT origin FROM ingest_checkpoints)",
    )
    assert orphans == [(0,)]


@pytest.mark.parametrize("fault", ["disk-full", "read-only"])
def test_ingest_fault_is_a_clean_error_and_a_rerun_completes_exactly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    root = tmp_path / "projects"
    write_tree(root, 3)
    real_open = ingest_cmd.open_db
    db = tmp_path / "f.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    if fault == "disk-full":
        limit = pages_for_two_files(tmp_path) + 8
        monkeypatch.setattr(ingest_cmd, "open_db", faulty_open(lambda c: c.execute(f"PRAGMA max_page_count = {limit}")))
    else:
        monkeypatch.setattr(ingest_cmd, "open_db", faulty_open(lambda c: c.execute("PRAGMA query_only = 1")))
    failed = run_ingest(db, root)
    assert failed.exit_code != 0
    lines = failed.stderr.strip().splitlines()
    print(lines)
    # the one-line error comes last; before it only log lines (JSON), e.g. the stall's retries
    err = lines[-1]
    assert err.startswith("ingestd: "), lines
    assert all(orjson.loads(line)["event"] == "write_stalled" for line in lines[:-1]), lines
    assert len(lines) == (4 if fault == "disk-full" else 1), lines  # a full disk is retried (transient)
    assert ("full" if fault == "disk-full" else "read") in err.lower()
    # whole batches only: with disk full the first batch (two files) is in, the second is not
    stored = q(db, "SELECT count(DISTINCT origin) FROM events_raw WHERE source = 'jsonl'")[0][0]
    assert stored == (2 if fault == "disk-full" else 0)
    checkpoint_consistent(db)
    half = snapshot(db)
    assert len(half["token_usage"]) == stored * LINES // 10  # projections came with their rows

    monkeypatch.setattr(ingest_cmd, "open_db", real_open)  # the condition clears
    again = run_ingest(db, root)
    assert again.exit_code == 0, again.stderr
    assert orjson.loads(again.stdout)["rows_inserted"] == (3 - stored) * LINES
    checkpoint_consistent(db)
    third = run_ingest(db, root)
    assert third.exit_code == 0, third.stderr
    assert orjson.loads(third.stdout)["rows_inserted"] == 0  # and a third run finds nothing new

    clean = tmp_path / "clean.db"
    assert run_ingest(clean, root).exit_code == 0
    mine, theirs = snapshot(db), snapshot(clean)
    for t in mine:
        if t == "events_raw":  # ids and read times differ; keys and bytes do not
            assert sorted((r[1], bytes(r[4])) for r in mine[t]) == sorted((r[1], bytes(r[4])) for r in theirs[t])
        else:
            assert mine[t] == theirs[t], t
    (tmp_path / "replay").mkdir()
    assert_replay_ok(db, tmp_path / "replay")


async def test_hook_receiver_disk_full_answers_500_then_recovers(aiohttp_client: Any, tmp_path: Path) -> None:
    from ingestd.daemon import hookwriter
    from ingestd.daemon.config import ServeConfig
    from ingestd.daemon.root import assemble

    store = hookwriter.make_apply()
    limit: list[int | None] = [None]

    def apply(conn: apsw.Connection, rows: Any) -> int:
        if limit[0] is None:  # the disk fills up: no page beyond those the file has now
            limit[0] = int(conn.execute("PRAGMA page_count").fetchall()[0][0])
        conn.execute(f"PRAGMA max_page_count = {limit[0]}")
        return store(conn, rows)

    db = tmp_path / "h.db"
    cfg = ServeConfig(db_path=db, tail=False, schedule=False, watchdog_interval_s=3600)
    client = await aiohttp_client(assemble(cfg, apply=apply), headers=JSON_HEADERS)
    statuses: dict[str, int] = {}
    for i in range(40):
        key = f"k-{i}"
        body = orjson.dumps({"hook_event_name": "Notification", "session_id": SID, "message": "x" * 8000})
        resp = await client.post("/hooks", data=body, headers={"Idempotency-Key": key})
        statuses[key] = resp.status
        if resp.status == 500:
            doc = await resp.json()
            assert doc["error"]["code"] == "storage_error"
            break
    assert 500 in statuses.values()
    limit[0] = 1 << 30  # space again
    for i in range(40, 45):
        resp = await client.post("/hooks", data=b'{"hook_event_name":"Stop","session_id":"s"}')
        assert resp.status == 200
        statuses[f"after-{i}"] = 200
    stored = q(db, "SELECT count(*) FROM events_raw WHERE source = 'hook'")[0][0]
    assert stored == sum(1 for s in statuses.values() if s == 200)  # every 200 in, no 500 half-in
    assert q(db, "SELECT count(*) FROM events")[0][0] == stored  # each with its projection
