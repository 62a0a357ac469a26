"""A complete JSON line at the end of a file without its newline (SPEC §7, §5.2).

Claude Code writes each line with its newline, so a last line without one is either being written
or the end of a file nobody writes any more (a copy, a crash). It is held back until the file has
not grown for the grace (``TORN_TAIL_GRACE_S``), then read, once, if it is a JSON object; until
then every cost answer says how many bytes of which files are unread and is not complete. The
record is a real corpus line (``tests.stores.corpus_records``), written without its newline.
"""

from __future__ import annotations

import os
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.timefmt import from_epoch_ns
from ingestd.daemon.ingestrun import IngestRunner
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.readfile import TORN_TAIL_GRACE_S
from ingestd.projection.rebuild import rebuild_projections
from ingestd.report.cost import cost_report
from ingestd.report.window import Window, resolve_zone
from tests.ingest.support import count, dump, new_db
from tests.stores.corpus_records import OPUS_46_COST, opus_46_record

SID = "491e126e-1e71-469c-ade2-fcc8af567c74"
ORIGIN = f"-home-user-projects-spotter/{SID}.jsonl"
ALL = Window(None, None)
UTC = resolve_zone("UTC", {})
LINE = orjson.dumps(opus_46_record())


def _tree(tmp_path: Path, data: bytes) -> tuple[Path, Path]:
    root = tmp_path / "projects"
    path = root / ORIGIN
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    return root, path


def _age(path: Path, seconds: float) -> None:
    """The file last changed ``seconds`` ago (its bytes unchanged)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


def _now() -> str:
    return from_epoch_ns(time.time_ns())


def _cost(db: Path, *args: str) -> Any:
    res = CliRunner().invoke(cli, ["cost", *args, "--db", str(db), "--json", "--tz", "UTC"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return orjson.loads(res.stdout)


def test_a_last_line_being_written_is_not_read_and_every_cost_answer_says_so(tmp_path: Path) -> None:
    root, _path = _tree(tmp_path, LINE)  # written just now: still being written, as far as anyone knows
    conn = new_db(tmp_path / "x.db")
    s = ingest_roots(conn, [root], now=_now())
    assert s.lines == 0 and s.tails_read == 0
    assert s.to_json()["unread"] == {"bytes": len(LINE), "files": 1}
    assert count(conn, "SELECT count(*) FROM token_usage") == 0
    unread = {"bytes": len(LINE), "files": 1, "listed": [{"file": ORIGIN, "bytes": len(LINE)}]}
    for doc in (
        cost_report(conn, by=None, window=ALL, zone=UTC),
        cost_report(conn, by=None, window=ALL, zone=UTC, session=SID),
        _cost(tmp_path / "x.db"),
        _cost(tmp_path / "x.db", "--since", "2026-02-10", "--until", "2026-02-10"),  # undated: in every window
    ):
        assert doc["cost_complete"] is False
        assert doc["unread"] == unread
    # another session's answer is not held up by this file
    other = cost_report(conn, by=None, window=ALL, zone=UTC, session="a0000000-0000-4000-8000-000000000001")
    assert other["cost_complete"] is True and other["unread"]["bytes"] == 0
    text = " ".join(CliRunner().invoke(cli, ["cost", "--db", str(tmp_path / "x.db"), "--tz", "UTC"]).output.split())
    assert f"not read yet: {len(LINE)} bytes of a last line without its newline ({ORIGIN} {len(LINE)} bytes)" in text


def test_a_last_line_idle_past_the_grace_is_read_exactly_once(tmp_path: Path) -> None:
    root, path = _tree(tmp_path, LINE)
    conn = new_db(tmp_path / "x.db")
    ingest_roots(conn, [root], now=_now())
    _age(path, TORN_TAIL_GRACE_S + 5)
    s = ingest_roots(conn, [root], now=_now())
    assert (s.lines, s.tails_read, s.rows_inserted) == (1, 1, 1)
    assert s.to_json()["unread"] == {"bytes": 0, "files": 0}
    doc = cost_report(conn, by=None, window=ALL, zone=UTC)
    # 1*5 + 472*25 + 34,903*0.5 + 762*10 = 36,876.5 USD per MTok-token -> $0.0368765
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST)
    assert doc["cost_complete"] is True and doc["unread"]["bytes"] == 0
    # again: unchanged, nothing read; the newline arriving later adds no second copy
    again = ingest_roots(conn, [root], now=_now())
    assert (again.files_unchanged, again.lines, again.rows_inserted) == (1, 0, 0)
    with open(path, "ab") as f:
        f.write(b"\n")
    after = ingest_roots(conn, [root], now=_now())
    assert after.rows_inserted == 0
    assert count(conn, "SELECT count(*) FROM events_raw WHERE event_type = 'assistant'") == 1
    assert count(conn, "SELECT count(*) FROM token_usage") == 1
    # the same projections as the file read with its newline from the start, and replayed
    with_newline = tmp_path / "nl"
    nl_root, _ = _tree(with_newline, LINE + b"\n")
    other = new_db(tmp_path / "nl.db")
    ingest_roots(other, [nl_root], now=_now())
    before = dump(conn)
    assert before["token_usage"] == dump(other)["token_usage"]
    replayed = new_db(tmp_path / "replayed.db")
    rebuild_projections(conn, replayed)
    assert dump(replayed) == before


def test_an_idle_tail_that_is_not_json_stays_unread_and_is_not_read_again(tmp_path: Path) -> None:
    torn = LINE[: len(LINE) // 2]
    root, path = _tree(tmp_path, LINE + b"\n" + torn)  # a crash cut the last line
    conn = new_db(tmp_path / "x.db")
    ingest_roots(conn, [root], now=_now())
    _age(path, TORN_TAIL_GRACE_S + 5)
    s = ingest_roots(conn, [root], now=_now())
    assert (s.lines, s.tails_read) == (0, 0) and s.to_json()["unread"] == {"bytes": len(torn), "files": 1}
    doc = cost_report(conn, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST)  # the complete line counts
    assert doc["cost_complete"] is False and doc["unread"]["bytes"] == len(torn)
    # looked at idle once: the next runs skip the unchanged file
    assert ingest_roots(conn, [root], now=_now()).files_unchanged == 1


async def test_the_daemon_reads_an_idle_last_line_at_its_rescan(tmp_path: Path) -> None:
    root, path = _tree(tmp_path, LINE)
    db = tmp_path / "x.db"
    new_db(db).close()
    clock = [time.time_ns()]
    runner = IngestRunner(lambda: new_db(db), [root], clock=lambda: clock[0])
    try:
        s = await runner(None)  # the catch-up: the tail is held (its framer kept)
        assert s is not None and s.lines == 0 and s.to_json()["unread"]["bytes"] == len(LINE)
        s = await runner([path])  # a change naming the file before the grace: still held
        assert s is not None and s.lines == 0
        clock[0] += int((TORN_TAIL_GRACE_S + 1) * 1e9)  # the file stays as it is meanwhile
        s = await runner(None)  # the rescan
        assert s is not None and (s.tails_read, s.rows_inserted) == (1, 1)
        s = await runner(None)
        assert s is not None and s.rows_inserted == 0 and s.files_unchanged == 1
    finally:
        runner.close()
    conn = new_db(db)
    doc = cost_report(conn, by=None, window=ALL, zone=UTC)
    assert Decimal(doc["cost_usd"]) == Decimal(OPUS_46_COST) and doc["cost_complete"] is True
