"""Unreadable parts of a projects tree are counted and named, never skipped without a word (a
regression: a `chmod 000` project folder gave exit 0, no warning and `skipped lines: none`)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import orjson
import pytest
from structlog.testing import capture_logs

from ingestd.commands.ingest import _human
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.scan import discover
from ingestd.ingest.summary import Summary
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.reliability.test_bad_transcripts import NOW, _as_nobody, line, rec

SIDS = [
    "11111111-1111-4111-8111-111111111111",
    "22222222-2222-4222-8222-222222222222",
    "33333333-3333-4333-8333-333333333333",
]


def _tree(work: Path) -> tuple[Path, Path]:
    """A root with one readable project, one that cannot be listed (000) and one that can be listed
    but not searched (0644); a database, all owned by nobody when run as root."""
    root = work / "projects"
    for slug, sid in zip(("-ok", "-locked", "-nosearch"), SIDS, strict=True):
        (root / slug).mkdir(parents=True)
        (root / slug / f"{sid}.jsonl").write_bytes(line(rec(sessionId=sid)))
    db = work / "u.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    if os.geteuid() == 0:
        for p in [work, *work.rglob("*")]:
            os.chown(p, 65534, 65534)
    (root / "-locked").chmod(0o000)
    (root / "-nosearch").chmod(0o644)
    return root, db


def _counts(root: Path, db: Path) -> int:
    with capture_logs() as logs:
        c = connect(db)
        try:
            s = ingest_roots(c, [root], now=NOW)
        finally:
            c.close()
        again: list[tuple[str, str]] = []
        discover(root, again)
    events = sorted((e["event"], e["path"]) for e in logs if e["event"].endswith("_unreadable"))
    assert events == [("dir_unreadable", "-locked"), ("file_unreadable", f"-nosearch/{SIDS[2]}.jsonl")], events
    assert sorted(again) == [("dir", "-locked"), ("file", f"-nosearch/{SIDS[2]}.jsonl")]
    assert s.to_json()["dirs_unreadable"] == s.dirs_unreadable
    return s.dirs_unreadable * 10000 + s.files_unreadable * 1000 + s.files * 100 + s.rows_inserted


def test_unreadable_folders_and_unexaminable_files_are_warned_and_counted() -> None:
    work = Path(tempfile.mkdtemp(prefix="ingestd-nobody-"))
    try:
        root, db = _tree(work)
        try:
            got = _as_nobody(lambda: _counts(root, db)) if os.geteuid() == 0 else _counts(root, db)
        except AssertionError as e:
            if "Operation not permitted" in str(e):
                pytest.skip("cannot drop privileges here")
            raise
        # one folder unreadable, one file unexaminable (counted among the files), one line stored
        assert got == 1 * 10000 + 1 * 1000 + 2 * 100 + 1
    finally:
        for p in (work / "projects" / "-locked", work / "projects" / "-nosearch"):
            p.chmod(0o755)
        shutil.rmtree(work)


def test_the_text_summary_names_unreadable_folders_and_files(capsys: pytest.CaptureFixture[str]) -> None:
    _human(Summary(files=3, files_read=1, files_unreadable=1, dirs_unreadable=2))
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("files 3 (1 read, 0 unchanged, 1 unreadable)  2 folders unreadable  lines 0"), first
    _human(Summary(files=3, files_read=3))
    assert "unreadable" not in capsys.readouterr().out
    assert orjson.loads(orjson.dumps(Summary(dirs_unreadable=1).to_json()))["dirs_unreadable"] == 1
