"""Backfill: one transaction per batch, fingerprint skip, torn tails, rewrites, incremental == scratch."""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.touch import Ctx
from ingestd.ingest import backfill, readfile, scan
from ingestd.ingest.backfill import YOUNG_COLLECT_OBJECTS, ingest_roots
from ingestd.ingest.scan import discover
from ingestd.projection.rebuild import rebuild_projections
from ingestd.store.payload import decode as decode_payload
from tests.ingest.support import count, dump, new_db

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "projects"
NOW = "2026-03-01T00:00:00.000Z"
S1 = "11111111-1111-4111-8111-111111111111"


def _copy(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    shutil.copytree(FIXTURES, root)
    return root


def test_reingest_inserts_nothing_and_parses_nothing(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    conn = new_db(tmp_path / "x.db")
    s1 = ingest_roots(conn, [root], now=NOW)
    assert s1.rows_inserted == 45 and s1.skipped == {"not_json": 1} and s1.recovered == 1
    before = dump(conn)
    s2 = ingest_roots(conn, [root], now="2026-03-02T00:00:00.000Z")
    assert s2.rows_inserted == 0 and s2.files_read == 0 and s2.files_unchanged == s1.files
    assert dump(conn) == before


def test_files_are_read_with_the_young_collection_deferred(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(tmp_path)
    conn = new_db(tmp_path / "x.db")
    during: list[tuple[int, int, int]] = []
    read = backfill.read_plans

    def spy(*args: Any, **kwargs: Any) -> None:
        during.append(gc.get_threshold())
        read(*args, **kwargs)

    monkeypatch.setattr(backfill, "read_plans", spy)
    before = gc.get_threshold()
    assert before[0] < YOUNG_COLLECT_OBJECTS
    assert ingest_roots(conn, [root], now=NOW).rows_inserted == 45
    assert during == [(YOUNG_COLLECT_OBJECTS, *before[1:])]
    assert gc.get_threshold() == before

    def refused(*args: Any, **kwargs: Any) -> None:
        raise OSError("gone")

    monkeypatch.setattr(backfill, "read_plans", refused)
    with pytest.raises(OSError):
        ingest_roots(new_db(tmp_path / "y.db"), [root], now=NOW)
    assert gc.get_threshold() == before


def test_log_keeps_every_line_including_invalid(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    conn = new_db(tmp_path / "x.db")
    ingest_roots(conn, [root], now=NOW)
    assert count(conn, "SELECT count(*) FROM events_raw WHERE event_type = 'invalid'") == 1
    [(codec, raw)] = conn.execute("SELECT codec, payload FROM events_raw WHERE event_type = 'invalid'").fetchall()
    assert decode_payload(conn, codec, raw) == b"this line is not json {"
    assert count(conn, "SELECT count(*) FROM events_raw WHERE event_type = 'future-record-kind'") == 1
    assert count(conn, "SELECT value FROM ingest_stats WHERE name = 'skipped.not_json'") == 1


def test_incremental_equals_from_scratch(tmp_path: Path) -> None:
    full = tmp_path / "full"
    half = tmp_path / "half"
    shutil.copytree(FIXTURES, full)
    shutil.copytree(FIXTURES, half)
    # cut every transcript in the middle of a line: the torn tail must wait for its newline
    originals = {}
    for p in half.rglob("*.jsonl"):
        data = p.read_bytes()
        originals[p] = data
        p.write_bytes(data[: len(data) // 2])
    inc = new_db(tmp_path / "inc.db")
    ingest_roots(inc, [half], now=NOW)
    for p, data in originals.items():
        p.write_bytes(data)
    ingest_roots(inc, [half], now=NOW)
    scratch = new_db(tmp_path / "scratch.db")
    ingest_roots(scratch, [full], now=NOW)
    assert count(inc, "SELECT count(*) FROM events_raw") == count(scratch, "SELECT count(*) FROM events_raw")
    assert dump(inc) == dump(scratch)


def test_rewritten_file_is_reset_and_logged(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    conn = new_db(tmp_path / "x.db")
    ingest_roots(conn, [root], now=NOW)
    p = root / "-home-u-proj" / "44444444-4444-4444-8444-444444444444.jsonl"
    lines = p.read_bytes().splitlines(keepends=True)
    p.write_bytes(lines[0])  # shrunk
    s = ingest_roots(conn, [root], now=NOW)
    assert s.resets == 1
    row: Any = conn.execute(
        "SELECT source, origin_gen, codec, payload FROM events_raw WHERE event_type = 'file_reset'"
    ).fetchall()
    assert row[0][0] == "ingestd" and row[0][1] == 1
    assert orjson.loads(decode_payload(conn, row[0][2], row[0][3]))["origin"].endswith(
        "44444444-4444-4444-8444-444444444444.jsonl"
    )
    gen = conn.execute("SELECT origin_gen FROM ingest_checkpoints WHERE origin LIKE '%44444444%'").fetchall()
    assert gen[0][0] == 1
    # same size, different bytes before the offset: also a rewrite
    data = p.read_bytes()
    p.write_bytes(data.replace(b"continue", b"CONTINUE"))
    assert ingest_roots(conn, [root], now=NOW).resets == 1


def test_rebuilds_are_identical_to_each_other_and_live(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    conn = new_db(tmp_path / "x.db")
    ctx = Ctx("i", "h")
    ingest_roots(conn, [root], now=NOW, ctx=ctx, batch_rows=7)
    dumps = []
    for i, (bs, order) in enumerate([(3, "reverse"), (1000, "origin"), (5, "log")]):
        dst = new_db(tmp_path / f"r{i}.db")
        rebuild_projections(conn, dst, batch_size=bs, origin_order=order, ctx=ctx)
        dumps.append(dump(dst))
    assert dumps[0] == dumps[1] == dumps[2] == dump(conn)


def test_no_symlink_out_of_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.jsonl").write_text('{"type":"user"}\n')
    os.symlink(outside / "secret.jsonl", root / "p" / "link.jsonl")
    os.symlink(outside, root / "linkdir")
    (root / "p" / "ok.jsonl").write_text('{"type":"user"}\n')
    (root / "p" / "notes.txt").write_text("x")
    logs: list[dict[str, Any]] = []

    class Recorder:  # the module's own logger may be cached already (structlog): record its calls
        def warning(self, event: str, **kw: Any) -> None:
            logs.append({"event": event, **kw})

    monkeypatch.setattr(scan, "log", Recorder())
    assert [f.origin for f in discover(root)] == ["p/ok.jsonl"]
    # never skipped without a word: each symlink passed over is named with its target
    said = sorted((e["path"], e["target"]) for e in logs if e["event"] == "symlink_not_followed")
    assert said == [("linkdir", str(outside)), ("p/link.jsonl", str(outside / "secret.jsonl"))]
    # once a process: the daemon's rescans (every minute) say nothing new; a new target is said again
    logs.clear()
    assert [f.origin for f in discover(root)] == ["p/ok.jsonl"]
    assert logs == []
    (root / "linkdir").unlink()
    os.symlink(tmp_path, root / "linkdir")
    discover(root)
    assert [(e["path"], e["target"]) for e in logs] == [("linkdir", str(tmp_path))]


def test_discover_takes_files_and_folders_by_their_own_type(tmp_path: Path) -> None:
    # the walk takes each entry's type from the listing: a folder named like a transcript is walked,
    # a FIFO or a dangling link named like one is no file, a link to a file inside the root is read
    root = tmp_path / "projects"
    (root / "p" / "s" / "subagents").mkdir(parents=True)
    (root / "p" / "ok.jsonl").write_text('{"type":"user"}\n')
    (root / "p" / "s" / "subagents" / "agent-a.jsonl").write_text('{"type":"user"}\n')
    (root / "p" / "s" / "subagents" / "agent-a.meta.json").write_text("{}")
    (root / "p" / "dir.jsonl").mkdir()
    (root / "p" / "dir.jsonl" / "inner.jsonl").write_text('{"type":"user"}\n')
    os.mkfifo(root / "p" / "fifo.jsonl")
    os.symlink(tmp_path / "nowhere.jsonl", root / "p" / "dangling.jsonl")
    os.symlink(root / "p" / "ok.jsonl", root / "p" / "alias.jsonl")
    (root / "p" / "notes.txt").write_text("x")
    found = discover(root)
    assert [(f.origin, f.is_meta) for f in found] == [
        ("p/alias.jsonl", False),
        ("p/dir.jsonl/inner.jsonl", False),
        ("p/ok.jsonl", False),
        ("p/s/subagents/agent-a.jsonl", False),
        ("p/s/subagents/agent-a.meta.json", True),
    ]
    ok = os.stat(root / "p" / "ok.jsonl")
    assert [(f.size, f.mtime_ns, f.inode) for f in found if f.origin == "p/alias.jsonl"] == [
        (ok.st_size, ok.st_mtime_ns, ok.st_ino)  # the link's target's, as it is read
    ]


def test_a_link_out_of_the_root_is_passed_over_whatever_its_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a target that cannot even be examined (a path through a file) is still a link out of the
    # root: said as passed over, not counted as a file that cannot be read
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    (tmp_path / "afile").write_text("x")
    os.symlink(tmp_path / "afile" / "x", root / "p" / "through-a-file.jsonl")
    logs: list[dict[str, Any]] = []

    class Recorder:
        def warning(self, event: str, **kw: Any) -> None:
            logs.append({"event": event, **kw})

    monkeypatch.setattr(scan, "log", Recorder())
    unreadable: list[tuple[str, str]] = []
    assert discover(root, unreadable) == [] and unreadable == []
    assert [(e["event"], e["path"]) for e in logs] == [("symlink_not_followed", "p/through-a-file.jsonl")]


def test_the_walk_goes_through_folders_in_os_walks_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # what it says (passed-over links, unreadable folders) comes in the order os.walk would meet it:
    # depth first, each folder's entries in listing order
    root = tmp_path / "projects"
    for p in ("a", "b/c", "d", "e/f/g", "h"):
        (root / p).mkdir(parents=True)
    for i, p in enumerate(("a", "b", "b/c", "d", "e/f", "e/f/g", "h", ".")):
        os.symlink(tmp_path, root / p / f"link{i}")
    said: list[str] = []

    class Recorder:
        def warning(self, event: str, **kw: Any) -> None:
            said.append(kw["path"])

    monkeypatch.setattr(scan, "log", Recorder())
    monkeypatch.setattr(scan, "_said", set())
    discover(root)
    walked = [
        os.path.relpath(os.path.join(d, n), root)
        for d, dirs, _ in os.walk(root)
        for n in dirs
        if os.path.islink(os.path.join(d, n))
    ]
    assert said == walked and len(said) == 8


def test_a_root_that_cannot_be_listed_is_an_error_not_an_empty_tree(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        discover(tmp_path / "missing")
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(NotADirectoryError):
        discover(tmp_path / "a-file")


def test_watchdog_uses_log_time(tmp_path: Path) -> None:
    """The watchdog of an ingest runs at the log's time, not the clock: a main agent active just before it is
    still waiting, an older one unknown."""
    root = _copy(tmp_path)
    conn = new_db(tmp_path / "x.db")
    # read "now" = right after the fixture's activity: main agent of S1 is still waiting
    ingest_roots(conn, [root], now="2026-02-12T10:05:00.000Z")
    assert conn.execute("SELECT status FROM agents WHERE id = ?", (S1,)).fetchall()[0][0] == "waiting"
    assert conn.execute("SELECT status FROM agents WHERE id = 'c4444444'").fetchall()[0][0] == "unknown"


def test_a_transaction_holds_at_most_batch_rows_however_many_lines_a_chunk_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file read in one chunk commits in transactions of ``batch_rows`` rows each (a waiting hook
    sits behind one transaction), each checkpointed where its next line starts; a run stopped after
    the first resumes there, and the database ends as one run over the whole file leaves it."""
    root = tmp_path / "projects" / "-home-u-proj"
    root.mkdir(parents=True)
    lines = [
        orjson.dumps(
            {
                "type": "user",
                "uuid": f"u{i}",
                "parentUuid": f"u{i - 1}" if i else None,
                "sessionId": S1,
                "timestamp": f"2026-02-01T00:00:{i:02d}.000Z",
                "message": {"role": "user", "content": f"line {i}"},
            }
        )
        for i in range(50)
    ]
    (root / f"{S1}.jsonl").write_bytes(b"".join(ln + b"\n" for ln in lines))
    sizes: list[int] = []
    real = readfile.apply_isolating

    def counting(conn: Any, rows: Any, **kw: Any) -> Any:
        sizes.append(len(rows))
        return real(conn, rows, **kw)

    monkeypatch.setattr(readfile, "apply_isolating", counting)
    whole = new_db(tmp_path / "whole.db")
    ingest_roots(whole, [tmp_path / "projects"], now=NOW, batch_rows=7)
    assert sizes == [7] * 7 + [1] and max(sizes) <= 7
    [(offset,)] = whole.execute("SELECT committed_offset FROM ingest_checkpoints WHERE size >= 0").fetchall()
    assert offset == sum(len(ln) + 1 for ln in lines)

    # stopped after its first transaction: the checkpoint is where line 7 starts
    stopped = new_db(tmp_path / "stopped.db")
    calls: list[int] = []

    def once(conn: Any, rows: Any, **kw: Any) -> Any:
        calls.append(len(rows))
        out = real(conn, rows, **kw)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return out

    monkeypatch.setattr(readfile, "apply_isolating", once)
    with pytest.raises(KeyboardInterrupt):
        ingest_roots(stopped, [tmp_path / "projects"], now=NOW, batch_rows=7)
    [(mid, size)] = stopped.execute("SELECT committed_offset, size FROM ingest_checkpoints").fetchall()
    assert (mid, size) == (sum(len(ln) + 1 for ln in lines[:7]), -1)
    monkeypatch.setattr(readfile, "apply_isolating", real)
    ingest_roots(stopped, [tmp_path / "projects"], now=NOW, batch_rows=7)
    assert dump(stopped) == dump(whole)
