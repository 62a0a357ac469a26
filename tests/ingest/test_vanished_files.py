"""Files removed during an ingest are counted as vanished, never as read (a regression: the projects
root removed mid-ingest gave exit 0 and `files 630 (630 read...)` with 250 files stored); and
``status``'s tail line says its lag is of the files tracked so far."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from structlog.testing import capture_logs

from ingestd.cli import cli
from ingestd.ingest import backfill
from ingestd.ingest.backfill import ingest_roots
from ingestd.report.statusview import _answer_rows, _tail_line
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

NOW = "2026-01-02T00:00:00.000Z"


def _tree(root: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        sid = f"{i:08d}-1111-4111-8111-111111111111"
        p = root / "-p" / f"{sid}.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        rec = {"type": "user", "sessionId": sid, "uuid": f"u{i}", "timestamp": "2026-01-01T00:00:00.000Z"}
        p.write_bytes(orjson.dumps(rec | {"message": {"role": "user", "content": "hi"}}) + b"\n")
        out.append(p)
    return out


def test_files_removed_after_discovery_are_vanished_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "projects"
    files = _tree(root, 6)
    real = backfill.discover

    def then_remove(r: Path, unreadable: list[tuple[str, str]] | None = None) -> list[backfill.Found]:
        found = real(r, unreadable)
        for p in files[::2]:  # as `rm -rf` racing the ingest would
            p.unlink()
        return found

    monkeypatch.setattr(backfill, "discover", then_remove)
    conn = connect(tmp_path / "x.db")
    migrate(conn)
    with capture_logs() as logs:
        s = ingest_roots(conn, [root], now=NOW, checkpointer=True)
    assert (s.files, s.files_read, s.files_vanished) == (6, 3, 3)
    assert s.rows_inserted == 3 and s.to_json()["files_vanished"] == 3
    gone = sorted(e["origin"] for e in logs if e["event"] == "file_vanished")
    assert gone == sorted(f"-p/{p.name}" for p in files[::2])


def test_the_ingest_summary_says_how_many_vanished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "projects"
    files = _tree(root, 2)
    real = backfill.discover

    def then_remove(r: Path, unreadable: list[tuple[str, str]] | None = None) -> list[backfill.Found]:
        found = real(r, unreadable)
        files[0].unlink()
        return found

    monkeypatch.setattr(backfill, "discover", then_remove)
    res = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "x.db"), "--projects", str(root)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("files 2 (1 read, 0 unchanged, 1 vanished before being read)"), res.stdout


def test_status_says_its_lag_counts_only_tracked_files() -> None:
    tail = {"files_tracked": 2, "bytes_behind_on_disk": 541, "files_behind_on_disk": 2, "files_missing_on_disk": 0}
    assert _tail_line(tail) == "541 B not yet read in 2 of 2 files tracked so far"
    doc = {"now": "2026-01-01T00:00:00.000Z", "daemon": None, "last_hook_at": None, "last_ingest_at": None}
    doc |= {"tail": tail, "skipped": {"lines": 0, "by_reason": {}}, "unpriced": {}}
    rows = [(head, cell.plain) for head, cell in _answer_rows(doc)]
    at = rows.index(("tail lag", _tail_line(tail)))
    assert rows[at + 1] == ("", "(files no ingest has reached yet are not counted)"), rows
    assert _tail_line(tail | {"files_tracked": 0, "bytes_behind_on_disk": 0, "files_behind_on_disk": 0}).endswith(
        "of 0 files tracked so far"
    )
