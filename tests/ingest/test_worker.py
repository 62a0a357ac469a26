"""Reading in a worker process (issue 14): the same log, projections and checkpoints as the
sequential path; a failing or dying worker is a clear error, never a hang."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ingestd import settings
from ingestd.core import projector
from ingestd.core.framing import Framer, Line, Oversized
from ingestd.core.records import NewLogRow, line_row, oversized_row
from ingestd.core.touch import Ctx
from ingestd.errors import StorageError
from ingestd.ingest import backfill, readfile, worker
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.worker import ReaderFailed, _from_wire, _to_wire
from ingestd.store import writer
from tests.ingest.support import dump, new_db, refuse_second_batch

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "projects"
CORPUS = REPO.parent / "shared" / "corpus" / "claude-projects"
NOW = "2026-03-01T00:00:00.000Z"
CTX = Ctx(instance="i", host_id="h")
LOG = (
    "SELECT id, idempotency_key, source, event_type, codec, payload, received_at, session_id, origin, origin_gen,"
    " origin_offset FROM events_raw ORDER BY id"
)
CHECKPOINTS = "SELECT * FROM ingest_checkpoints ORDER BY root, origin"
STATS = "SELECT * FROM ingest_stats ORDER BY 1"
SID = "11111111-2222-3333-4444-555555555555"


def _odd_root(tmp_path: Path) -> Path:
    """A root with every kind of line: BOM, invalid UTF-8 (recovered), not JSON, not an object,
    an oversized line (under a 4 KiB cap), a torn last line, a sidecar."""
    root = tmp_path / "odd"
    d = root / "-home-u-odd"
    (d / SID / "subagents").mkdir(parents=True)
    rec = (
        '{"type":"user","sessionId":"%s","uuid":"u%d","timestamp":"2026-01-01T00:00:0%dZ",'
        '"message":{"role":"user","content":"hi"}}'
    )
    lines = [
        b"\xef\xbb\xbf" + (rec % (SID, 1, 1)).encode(),
        (rec % (SID, 2, 2)).encode().replace(b"hi", b"h\xffi"),
        b"not json at all",
        b"[1, 2, 3]",
        (rec % (SID, 3, 3)).encode().replace(b"hi", b"x" * 6000),
        (rec % (SID, 4, 4)).encode(),
    ]
    (d / f"{SID}.jsonl").write_bytes(b"\n".join(lines) + b"\n" + b'{"type":"user","torn')
    agent = (rec % (SID, 5, 5)).replace('"type":"user"', '"type":"assistant"').encode()
    (d / SID / "subagents" / "agent-a1.jsonl").write_bytes(agent + b"\n")
    (d / SID / "subagents" / "agent-a1.meta.json").write_bytes(b'{"agentType":"Explore"}')
    return root


def _ingest(conn: Any, root: Path, **kw: Any) -> readfile.Summary:
    return ingest_roots(conn, [root], now=NOW, ctx=CTX, **kw)


def _state(conn: Any, s: readfile.Summary) -> tuple[Any, ...]:
    d = s.to_json()
    d.pop("elapsed_s")
    d.pop("mb_per_s")
    return (
        dump(conn),
        conn.execute(LOG).fetchall(),
        conn.execute(CHECKPOINTS).fetchall(),
        conn.execute(STATS).fetchall(),
        d,
    )


def _both(tmp_path: Path, root: Path, **kw: Any) -> None:
    """Ingest ``root`` sequentially and with the reader process: everything the same."""
    seq = new_db(tmp_path / "seq.db")
    proc = new_db(tmp_path / "proc.db")
    a = _state(seq, _ingest(seq, root, **kw))
    b = _state(proc, _ingest(proc, root, reader_process=True, **kw))
    assert b == a
    seq.close()
    proc.close()


def test_reader_process_equals_sequential_fixtures(tmp_path: Path) -> None:
    # batches of 7 rows: many batches, mid-file checkpoints, the worker ahead of the writer
    _both(tmp_path, FIXTURES, batch_rows=7)


def test_reader_process_equals_sequential_odd_lines(tmp_path: Path) -> None:
    _both(tmp_path, _odd_root(tmp_path), batch_rows=2, max_line_bytes=4096)


def test_reader_process_equals_sequential_on_a_second_run(tmp_path: Path) -> None:
    # an appended line, a rewritten (shrunk) file: the checkpoints' resume and reset rows
    root = tmp_path / "root"
    shutil.copytree(FIXTURES, root)
    files = sorted(root.rglob("*.jsonl"))
    dbs = {m: new_db(tmp_path / f"{m}.db") for m in ("seq", "proc")}
    for m, conn in dbs.items():
        _ingest(conn, root, batch_rows=5, reader_process=m == "proc")
    with open(files[0], "ab") as fh:
        fh.write(b'{"type":"user","sessionId":"s-appended","message":{"role":"user","content":"more"}}\n')
    files[1].write_bytes(files[1].read_bytes()[: files[1].stat().st_size // 2].rsplit(b"\n", 1)[0] + b"\n")
    seq = _state(dbs["seq"], _ingest(dbs["seq"], root, batch_rows=5))
    proc = _state(dbs["proc"], _ingest(dbs["proc"], root, batch_rows=5, reader_process=True))
    assert proc == seq
    assert proc[4]["resets"] == 1


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"corpus absent: {CORPUS}")
def test_reader_process_equals_sequential_real_corpus(tmp_path: Path) -> None:
    _both(tmp_path, CORPUS, batch_rows=500)


def _rows(tmp_path: Path) -> list[NewLogRow]:
    data = (_odd_root(tmp_path) / "-home-u-odd" / f"{SID}.jsonl").read_bytes()
    out: list[NewLogRow] = []
    for ln in Framer(0, 4096).feed(data):
        kw: dict[str, Any] = {"origin": "o", "origin_hash": "h", "gen": 0, "received_at": NOW, "path_session": "p"}
        out.append(line_row(ln, **kw) if isinstance(ln, Line) else oversized_row(ln, **kw))
    return out


def test_rows_cross_the_pipe_whole(tmp_path: Path) -> None:
    rows = _rows(tmp_path)
    assert {r.event_type for r in rows} >= {"user", "invalid", "oversized"}
    assert any(r.recovered for r in rows) and any(r.reason == "not_object" for r in rows)
    back = [_from_wire(_to_wire(r)) for r in rows]
    assert back == rows
    assert [r.obj for r in back] == [r.obj for r in rows]  # obj is not compared by ==
    assert [(r.recovered, r.reason) for r in back] == [(r.recovered, r.reason) for r in rows]
    assert isinstance(Framer(0, 4096).feed(b"x" * 5000 + b"\n")[0], Oversized)


def _no_children() -> None:
    assert [p for p in multiprocessing.active_children() if p.name == "ingestd-reader"] == []


def _boom(*_a: Any, **_k: Any) -> None:
    raise ValueError("framing exploded")


def test_worker_error_is_raised_clearly_and_nothing_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "read_plans", _boom)  # the forked worker runs this
    conn = new_db(tmp_path / "x.db")
    with pytest.raises(ReaderFailed, match="the reader process failed: ValueError: framing exploded"):
        _ingest(conn, FIXTURES, reader_process=True)
    assert conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0] == 0
    _no_children()


def test_worker_that_dies_is_an_error_not_a_hang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = readfile.read_file

    def dying(b: Any, root: str, f: Any, *a: Any) -> None:
        if b.summary.files_read >= 3:
            os._exit(7)  # killed mid-run, no word sent
        real(b, root, f, *a)

    monkeypatch.setattr(readfile, "read_file", dying)
    conn = new_db(tmp_path / "x.db")
    with pytest.raises(ReaderFailed, match=r"exited unexpectedly \(exit code 7\)"):
        _ingest(conn, FIXTURES, reader_process=True, batch_rows=5)
    # what committed are whole batches with their checkpoints: a re-run completes the ingest
    monkeypatch.undo()
    _ingest(conn, FIXTURES, batch_rows=5)
    ref = new_db(tmp_path / "ref.db")
    _ingest(ref, FIXTURES, batch_rows=5)
    assert dump(conn) == dump(ref)
    _no_children()


def test_writer_error_stops_the_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = refuse_second_batch(monkeypatch)
    conn = new_db(tmp_path / "x.db")
    with pytest.raises(StorageError, match="disk full"):
        _ingest(conn, FIXTURES, reader_process=True, batch_rows=5)
    assert conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0] == calls[0]
    _no_children()


def test_interrupt_in_the_writing_process_stops_the_worker(tmp_path: Path) -> None:
    def interrupted(_n: int) -> None:
        raise KeyboardInterrupt

    conn = new_db(tmp_path / "x.db")
    with pytest.raises(KeyboardInterrupt):
        _ingest(conn, FIXTURES, reader_process=True, batch_rows=5, progress=interrupted)
    _no_children()


def test_reader_process_setting() -> None:
    assert settings.resolve({}, {"INGESTD_READER_PROCESS": "1"}, {}).get_bool("reader_process") is True
    assert settings.resolve({}, {"INGESTD_READER_PROCESS": "false"}, {}).get_bool("reader_process") is False
    assert settings.resolve({}, {}, {}).get_bool("reader_process") is True  # on: under 300 MB (issue 14)


def test_the_reader_process_starts_only_from_reader_min_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A one-shot ingest of a few files stays in one process (a process costs ~0.1 s); from
    ``reader_min_bytes`` of new bytes on it reads in the second one, with the same result."""
    started: list[int] = []
    real = worker.ReaderProcess

    def spy(plans: Any, *a: Any) -> Any:
        started.append(len(plans))
        return real(plans, *a)

    monkeypatch.setattr(backfill, "ReaderProcess", spy)
    totals: list[int] = []
    small = new_db(tmp_path / "small.db")
    _ingest(small, FIXTURES, reader_process=True, reader_min_bytes=1 << 40, pipeline=True, on_total=totals.append)
    size = totals[0]
    small = new_db(tmp_path / "smaller.db")
    _ingest(small, FIXTURES, reader_process=True, reader_min_bytes=size + 1, pipeline=True)
    assert started == []
    big = new_db(tmp_path / "big.db")
    _ingest(big, FIXTURES, reader_process=True, reader_min_bytes=size, pipeline=True)
    assert len(started) == 1 and started[0] > 0
    assert dump(small) == dump(big)
    _no_children()


@pytest.mark.parametrize(("env", "on"), [(None, True), ("0", False), ("1", True)])
def test_the_ingest_command_reads_in_a_process_from_16_mib_unless_the_setting_is_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None, on: bool
) -> None:
    from click.testing import CliRunner

    from ingestd.cli import cli
    from ingestd.commands import ingest as ingest_cmd

    seen: list[dict[str, Any]] = []
    real = ingest_cmd.ingest_roots

    def spy(*a: Any, **kw: Any) -> Any:
        seen.append(kw)
        return real(*a, **kw)

    monkeypatch.setattr(ingest_cmd, "ingest_roots", spy)
    monkeypatch.delenv("INGESTD_READER_PROCESS", raising=False)
    if env is not None:
        monkeypatch.setenv("INGESTD_READER_PROCESS", env)
    args = ["ingest", "--db", str(tmp_path / "x.db"), "--projects", str(FIXTURES), "--json"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    assert seen[0]["reader_process"] is on and seen[0]["reader_min_bytes"] == 64 * 1024 * 1024


def _spy_prefolds(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The writer's verdict on each prefold it was given, in order."""
    verdicts: list[bool] = []
    real = writer._prefold_holds

    def spy(*a: Any) -> bool:
        ok = real(*a)
        verdicts.append(ok)
        return ok

    monkeypatch.setattr(writer, "_prefold_holds", spy)
    return verdicts


def test_cold_ingest_writes_the_folds_made_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = _spy_prefolds(monkeypatch)
    _both(tmp_path, FIXTURES, batch_rows=7)
    assert len(verdicts) >= 3 and all(verdicts)  # every batch (the fixtures make 4)


def test_no_fold_ahead_over_a_log_that_is_not_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = _spy_prefolds(monkeypatch)
    conn = new_db(tmp_path / "x.db")
    _ingest(conn, FIXTURES / "-home-u-legacy", batch_rows=7)
    _ingest(conn, FIXTURES, batch_rows=7, reader_process=True)
    assert verdicts == []  # the worker had no states for the sessions already logged


OTHER = (
    b'{"type":"user","sessionId":"11111111-1111-4111-8111-111111111111","uuid":"zz","timestamp":'
    b'"2025-08-01T10:00:30.000Z","message":{"role":"user","content":"from the daemon"}}'
)


def _beside_a_writer(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> tuple[Any, ...]:
    """Ingest while another connection appends a row of a session being read before batch 3."""
    db = tmp_path / f"{name}.db"
    conn = new_db(db)
    other = new_db(db)
    real = writer.apply_isolating
    calls: list[int] = []

    def beside(c: Any, rows: Any, **k: Any) -> Any:
        calls.append(len(rows))
        if len(calls) == 3:
            row = NewLogRow("j:daemon", "jsonl", "user", OTHER, NOW, "11111111-1111-4111-8111-111111111111", "d.jsonl")
            real(other, [row], ctx=CTX)
        return real(c, rows, **k)

    monkeypatch.setattr(readfile, "apply_isolating", beside)
    s = _ingest(conn, FIXTURES, batch_rows=7, **kw)
    monkeypatch.setattr(readfile, "apply_isolating", real)
    return _state(conn, s)


def test_a_concurrent_writer_is_caught_by_the_id_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    verdicts = _spy_prefolds(monkeypatch)
    proc = _beside_a_writer(tmp_path, "proc", monkeypatch, reader_process=True)
    assert verdicts[:2] == [True, True] and not any(verdicts[2:])  # refused from the shifted batch on
    seq = _beside_a_writer(tmp_path, "seq", monkeypatch)
    assert proc == seq


def test_a_record_the_projector_fails_on_is_isolated_as_sequentially(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verdicts = _spy_prefolds(monkeypatch)
    real = projector._fold_row

    def buggy(state: Any, row: Any, *a: Any) -> None:
        if row.source == "jsonl" and row.origin.endswith("agent-a1111111.jsonl") and row.origin_offset == 0:
            raise ValueError("projector bug")
        real(state, row, *a)

    monkeypatch.setattr(projector, "_fold_row", buggy)  # in the worker (forked) and the writer
    _both(tmp_path, FIXTURES, batch_rows=7)
    assert True in verdicts and False not in verdicts  # the worker stopped folding ahead: no refusal
    seq = new_db(tmp_path / "again.db")
    _ingest(seq, FIXTURES, batch_rows=7)
    assert seq.execute("SELECT count(*) FROM quarantine").fetchall()[0][0] == 1


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux pipes only")
def test_the_pipe_is_widened(tmp_path: Path) -> None:
    rp = worker.ReaderProcess([], NOW, 10, 4096, CTX, None)
    try:
        size = fcntl.fcntl(rp._conn.fileno(), fcntl.F_GETPIPE_SZ)
        assert size == int(Path("/proc/sys/fs/pipe-max-size").read_text()) > 65536
    finally:
        rp.close()


# The forked reader is kept busy (a read that never ends) rather than blocked on a full pipe: a
# blocked send ends with a broken pipe as soon as its parent dies, so only the parent-death signal
# can end a busy one, and this test fails without it.
_ORPHAN = """
import sys, time
from ingestd.core.touch import Ctx
from ingestd.ingest import worker
worker.read_plans = lambda *a: time.sleep(120)
rp = worker.ReaderProcess([], "2026-03-01T00:00:00.000Z", 50, 1 << 20, Ctx(), None)
print(rp._proc.pid, flush=True)
sys.stdin.readline()  # killed meanwhile
"""


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="Linux only")
def test_the_reader_dies_with_the_writing_process(tmp_path: Path) -> None:
    # the reader is busy; then its parent is SIGKILLed
    argv = [sys.executable, "-c", _ORPHAN]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as p:
        assert p.stdout is not None
        pid = int(p.stdout.readline())
        time.sleep(0.5)
        assert not _gone(pid)  # still reading
        p.kill()
        p.wait()
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


def test_a_too_deep_lines_salvaged_record_crosses_the_pipe() -> None:
    data = b'{"type":"user","sessionId":"s1","uuid":"u1","message":{"content":' + b"[" * 1100 + b"]" * 1100 + b"}}"
    row = line_row(Line(0, data), origin="o", origin_hash="h", gen=0, received_at=NOW, path_session="p")
    assert row.reason == "too_deep" and row.obj is not None
    assert _from_wire(_to_wire(row)).obj == row.obj
