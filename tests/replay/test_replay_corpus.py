"""``ingestd replay`` with the real projector on the real corpus (transcripts and hook payloads).

Skipped when ../shared/corpus is absent.
"""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from click.testing import CliRunner
from structlog.testing import capture_logs

from ingestd.cli import cli
from ingestd.core.hookkeys import HookEvent, idempotency_key, parse_body
from ingestd.core.keys import jsonl_key, short_hash
from ingestd.core.revision import PROJECTION_REVISION
from ingestd.core.touch import Ctx
from ingestd.daemon.config import ServeConfig
from ingestd.daemon.main import prepare_db
from ingestd.errors import MigrationError
from ingestd.http.hooks import hook_row
from ingestd.ingest.backfill import ingest_roots
from ingestd.projection import reproject
from ingestd.projection.dump import ARRIVAL_IDS, compare
from ingestd.projection.rebuild import Folded
from ingestd.projection.reproject import BATCH_ROWS, ensure_current, resumable, stored_revision
from ingestd.retention import prune as pr
from ingestd.store import pruned
from ingestd.store.connection import connect
from ingestd.store.identity import database_identity
from ingestd.store.migrate import migrate
from ingestd.store.payload import PLAIN
from ingestd.store.payload import decode as decode_payload
from ingestd.store.payload_blocks import BLOCK, parse_ref
from ingestd.store.payload_open import OPEN
from ingestd.store.writer import apply_batch

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not (CORPUS / "claude-projects").is_dir(), reason=f"corpus absent: {CORPUS}"),
]
CTX = Ctx(instance="test", host_id="test-host")
HOOK_T0 = datetime(2026, 1, 1, tzinfo=UTC)
READ_1, READ_2 = "2026-05-01T00:00:00.000Z", "2026-05-02T00:00:00.000Z"  # the two passes' read times


def _hooks(conn: object, part: int) -> int:
    """Half ``part`` (0 or 1) of every real hook payload, one delivery per line, a minute apart from HOOK_T0."""
    rows = []
    n = 0
    for f in sorted((CORPUS / "hooks").rglob("*.jsonl")):
        for line in f.read_bytes().splitlines():
            ev = parse_body(line)
            if not isinstance(ev, HookEvent):
                continue
            ns = int((HOOK_T0 + timedelta(minutes=n)).timestamp()) * 10**9
            key = idempotency_key(ev, header_key=None, received_ns=ns, instance="test", counter=n)
            rows.append(hook_row(ev, line, key, ns))
            n += 1
    half = rows[: len(rows) // 2] if part == 0 else rows[len(rows) // 2 :]
    for i in range(0, len(half), 50):
        apply_batch(conn, half[i : i + 50], ctx=CTX)  # type: ignore[arg-type]
    return len(half)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(database, projects tree): transcripts tailed in two passes (first half of each file, then
    the rest appended) with hook deliveries landing before, between and after: a mixed live run.
    Built once per module; each test gets its own copy of the database (``live``)."""
    tmp = tmp_path_factory.mktemp("replay-corpus")
    projects = tmp / "projects"
    shutil.copytree(CORPUS / "claude-projects", projects)
    db = tmp / "live.db"
    conn = connect(db)
    migrate(conn)
    full = {p: p.read_bytes() for p in projects.rglob("*.jsonl")}
    for p, data in full.items():
        lines = data.splitlines(keepends=True)
        p.write_bytes(b"".join(lines[: len(lines) // 2]))
    _hooks(conn, 0)
    # read after the corpus was written (its last record is of 2026-04-26): a record dated after its
    # line was read is refused, and a file with no valid timestamp is undated
    ingest_roots(conn, [projects], now=READ_1, ctx=CTX)
    for p, data in full.items():
        p.write_bytes(data)
    ingest_roots(conn, [projects], now=READ_2, ctx=CTX)
    _hooks(conn, 1)
    conn.close()  # the last connection: the WAL is checkpointed into the file
    return db, projects


@pytest.fixture
def projects(built: tuple[Path, Path]) -> Path:
    """The tree the live database was ingested from (its checkpoints name these paths)."""
    return built[1]


@pytest.fixture
def live(tmp_path: Path, built: tuple[Path, Path]) -> Path:
    """This test's copy of the live database."""
    db = tmp_path / "live.db"
    shutil.copyfile(built[0], db)
    return db


def _replay(db: Path) -> tuple[int, dict[str, object]]:
    res = CliRunner().invoke(cli, ["replay", "--db", str(db), "--json"])
    return res.exit_code, orjson.loads(res.stdout)


def test_double_replay_equals_live_without_the_transcripts(live: Path, projects: Path) -> None:
    hidden = projects.with_name("projects-hidden")
    projects.rename(hidden)  # replay reads the log only (the tree is shared by the module: put back)
    try:
        code, doc = _replay(live)
    finally:
        hidden.rename(projects)
    assert code == 0, doc["differences"]
    rows = {t["table"]: t["rows"]["live"] for t in doc["tables"]}  # type: ignore[index, union-attr]
    assert rows["token_usage"] > 500 and rows["events"] > 100 and rows["sessions"] > 10


def test_corrupted_projection_row_named(live: Path) -> None:
    """A live row a rebuild does not give is named by table, id and key, and replay exits 1."""
    conn = connect(live)
    tid, mid = conn.execute("SELECT id, message_id FROM token_usage ORDER BY id LIMIT 1 OFFSET 7").fetchall()[0]
    conn.execute("UPDATE token_usage SET output = output + 1 WHERE id = ?", (tid,))
    conn.close()
    res = CliRunner().invoke(cli, ["replay", "--db", str(live)])
    assert res.exit_code == 1
    assert "token_usage: live vs replay_a" in res.stdout
    assert str(tid) in res.stdout and mid in res.stdout
    assert "replay mismatch in token_usage" in res.stderr


def test_replay_after_prune_does_not_resurrect(live: Path) -> None:
    conn = connect(live)
    before = conn.execute("SELECT count(*) FROM events").fetchall()[0][0]
    now = HOOK_T0 + timedelta(days=90, hours=5)  # prunes the first five hours of hook events
    [res] = pr.prune(conn, pr.Policy(), now=now, batch_rows=64)
    conn.close()
    assert 0 < res.rows < before
    code, doc = _replay(live)
    assert code == 0, doc["differences"]
    assert doc["receipts"] == 1
    assert {t["rows"]["replay_a"] for t in doc["tables"] if t["table"] == "events"} == {before - res.rows}  # type: ignore[index]


def test_verify_passes_on_the_live_corpus_db(live: Path) -> None:
    res = CliRunner().invoke(cli, ["verify", "--db", str(live), "--json"])
    assert res.exit_code == 0, res.stdout


def test_replay_after_acknowledged_token_usage_prune(live: Path) -> None:
    conn = connect(live)
    before = conn.execute("SELECT count(*) FROM token_usage").fetchall()[0][0]
    median = conn.execute(
        "SELECT occurred_at FROM token_usage ORDER BY occurred_at LIMIT 1 OFFSET ?", (before // 2,)
    ).fetchall()[0][0]
    policy = pr.Policy(events_days=None, token_usage_days=0, acknowledge_cost_loss=True, only=("token_usage",))
    [res] = pr.prune(conn, policy, now=datetime.fromisoformat(median.replace("Z", "+00:00")), batch_rows=500)
    conn.close()
    assert 0 < res.rows < before
    code, doc = _replay(live)
    assert code == 0, doc["differences"]
    rows = {t["table"]: t["rows"] for t in doc["tables"]}  # type: ignore[index, union-attr]
    left = before - res.rows
    assert rows["token_usage"] == {"live": left, "replay_a": left, "replay_b": left}


def test_every_stored_payload_reads_back_byte_for_byte(live: Path, projects: Path) -> None:
    """SPEC §3 with compressed payloads (migrations 0013, 0016): every row of the real corpus,
    decoded through ``ingestd.store.payload.decode``, is the line at its offset in its file (hooks:
    the body delivered), and its idempotency key is the one computed over those exact bytes. Lines
    of large batches are stored in blocks (codec -1), the rest one by one."""
    bodies = {line for f in (CORPUS / "hooks").rglob("*.jsonl") for line in f.read_bytes().splitlines()}
    files: dict[str, bytes] = {}
    conn = connect(live, readonly=True)
    seen: dict[str, int] = {}
    stored = raw = 0
    for key, source, event_type, origin, gen, offset, codec, blob in conn.execute(
        "SELECT idempotency_key, source, event_type, origin, origin_gen, origin_offset, codec, payload"
        " FROM events_raw ORDER BY id"
    ):
        data = decode_payload(conn, codec, blob)
        stored += len(blob)
        raw += len(data)
        seen[source] = seen.get(source, 0) + 1
        if source == "jsonl" and event_type != "oversized":  # (an oversized line's row is its marker)
            if origin not in files:
                files[origin] = (projects / origin).read_bytes()
            text = files[origin]
            assert text[offset : offset + len(data) + 1] == data + b"\n", (origin, offset)
            assert key == jsonl_key(short_hash(origin.encode()), gen, offset, data)
        elif source == "hook":
            assert data in bodies, key
        else:
            assert isinstance(orjson.loads(data), dict), key
    conn.close()
    assert seen["jsonl"] > 7000 and seen["hook"] > 100, seen
    # compressed, with the dictionary trained on the first lines: well under half the bytes
    assert stored < raw * 0.4, (stored, raw)
    codecs = {c for (c,) in connect(live, readonly=True).execute("SELECT DISTINCT codec FROM events_raw")}
    assert PLAIN in codecs and any(c >= 2 for c in codecs), codecs  # hooks before the dictionary, lines after
    assert BLOCK in codecs, codecs  # the first pass's half files and the rest appended: large batches
    conn = connect(live, readonly=True)
    blocked, lines = conn.execute(
        "SELECT count(*) FILTER (WHERE codec = ?), count(*) FILTER (WHERE source = 'jsonl') FROM events_raw", (BLOCK,)
    ).fetchall()[0]
    assert blocked > lines * 0.8, (blocked, lines)
    # a block holds only lines some row refers to, each once
    in_blocks = sum(zstandard.frame_content_size(d) for (d,) in conn.execute("SELECT data FROM payload_blocks"))
    referred = sum(parse_ref(b)[2] for (b,) in conn.execute("SELECT payload FROM events_raw WHERE codec = ?", (BLOCK,)))
    # ... and the open blocks sealed since (migration 0019): each waiting line or sealed once
    sealed = {int(i) for (i,) in conn.execute("SELECT open_id FROM payload_sealed")}
    waiting = {(int(i), int(o)) for i, o in conn.execute("SELECT open_id, offset FROM payload_open")}
    tails = [parse_ref(b) for (b,) in conn.execute("SELECT payload FROM events_raw WHERE codec = ?", (OPEN,))]
    referred += sum(length for block, _, length, _ in tails if block in sealed)
    assert in_blocks == referred
    assert sorted((b, o) for b, o, _, _ in tails if b not in sealed) == sorted(waiting)
    conn.close()


# -- an interrupted re-projection resumes (SPEC §4.4): the result is the uninterrupted one's, exactly

SMALL_BATCH = 250  # rows per transaction: the corpus's ~10,000 log rows in some 40 batches


class _Stop(Exception):
    """Raised from the progress callback: the re-projection stops after a committed batch."""


def _stale(tmp_path: Path, live: Path, name: str) -> Path:
    """A copy of ``live`` as if projected under the previous rules, with the live ingester's identity
    (every copy stamps its edges with the same one)."""
    db = tmp_path / f"{name}.db"
    shutil.copyfile(live, db)
    conn = connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'projection_revision'", (str(PROJECTION_REVISION - 1),))
    conn.execute("INSERT INTO meta (key, value) VALUES ('instance', ?), ('host_id', ?)", (CTX.instance, CTX.host_id))
    conn.close()
    return db


def _reproject(db: Path, *, stop_at: int | None = None, batch_size: int = SMALL_BATCH) -> list[int]:
    """Re-project ``db``: the rows done at each progress call, raising ``_Stop`` at call ``stop_at``."""
    conn = connect(db)
    seen: list[int] = []

    def progress(done: int, _todo: int) -> None:
        seen.append(done)
        if len(seen) - 1 == stop_at:
            raise _Stop

    try:
        ensure_current(conn, db, ctx=database_identity(conn), progress=progress, batch_size=batch_size)
    finally:
        conn.close()
    return seen


def _interrupted(db: Path, stop_at: int, batch_size: int = SMALL_BATCH) -> Folded | None:
    with pytest.raises(_Stop):
        _reproject(db, stop_at=stop_at, batch_size=batch_size)
    conn = connect(db, readonly=True)
    try:
        return resumable(conn, batch_size=batch_size)
    finally:
        conn.close()


def _storage(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """What ``compare`` leaves out: the arrival-order ids, and the full-text index's every entry."""
    conn = connect(db)
    out = {t: list(conn.execute(f"SELECT {', '.join(ids)} FROM {t} ORDER BY 1")) for t, ids in ARRIVAL_IDS.items()}
    conn.execute("CREATE VIRTUAL TABLE temp.fts_entries USING fts5vocab(main, search_fts, instance)")
    out["search_fts"] = list(conn.execute("SELECT * FROM temp.fts_entries ORDER BY 1, 2, 3, 4"))
    conn.close()
    return out


def _assert_same(db: Path, want: Path) -> None:
    got = compare([("uninterrupted", connect(want, readonly=True)), ("resumed", connect(db, readonly=True))])
    assert got.ok, {k: [d.to_json() for d in v] for k, v in got.differences.items()}
    assert _storage(db) == _storage(want)
    conn = connect(db, readonly=True)
    assert stored_revision(conn) == str(PROJECTION_REVISION)
    assert not conn.execute("SELECT key FROM meta WHERE key IN ('reprojecting', 'reprojected_through')").fetchall()
    conn.close()


@pytest.fixture
def uninterrupted(tmp_path: Path, live: Path) -> tuple[Path, list[int]]:
    """A re-projection of ``live`` in small batches, run to its end: the database and its progress calls."""
    db = _stale(tmp_path, live, "uninterrupted")
    return db, _reproject(db)


def _split(db: Path, at: Folded) -> bool:
    """The stop fell inside a session: it has log rows after the checkpoint's."""
    conn = connect(db, readonly=True)
    try:
        return bool(
            conn.execute(
                "SELECT 1 FROM events_raw WHERE session_id = ? AND id > ? LIMIT 1", (at.session, at.last_id)
            ).fetchall()
        )
    finally:
        conn.close()


def test_a_reprojection_stopped_after_any_batch_resumes_to_the_uninterrupted_projections(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    want, calls = uninterrupted
    batches = len(calls) - 2  # the first call is before any batch, the last after the last one
    assert batches > 20, calls
    stops = sorted({1, batches - 1, batches, batches + 1, *random.Random(27).sample(range(2, batches - 1), 4)})
    split = []
    for stop in stops:
        db = _stale(tmp_path, live, f"stop{stop}")
        at = _interrupted(db, stop)
        assert at is not None and at.rows == calls[stop], stop
        split.append(_split(db, at))
        resumed = _reproject(db)
        assert resumed[0] == calls[stop] and resumed[-1] == calls[-1], (stop, resumed)
        assert resumed[1:-1] == calls[stop + 1 : -1]  # the same later batches; none folded twice
        _assert_same(db, want)
    assert any(split) and not all(split), split  # inside a session that spans batches, and between sessions


def test_a_reprojection_stopped_twice_inside_one_session_resumes_to_the_uninterrupted_projections(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "twice")
    stop = 1
    while (at := _interrupted(db, 1)) is not None and not _split(db, at):  # one batch on at a time
        stop += 1
    assert at is not None and at.rows == calls[stop]
    again = _interrupted(db, 1)  # stopped again, a batch on (in the same session or the next)
    assert again is not None and again.rows == calls[stop + 1]
    _reproject(db)
    _assert_same(db, want)


def test_a_stop_after_the_last_batch_and_the_watchdog_pass_resumes_to_the_uninterrupted_projections(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "after-watchdog")

    def stop(*args: object) -> None:
        raise _Stop

    monkeypatch.setattr(pruned, "receipts", stop)  # read after the watchdog pass committed
    with pytest.raises(_Stop):
        _reproject(db)
    monkeypatch.undo()
    assert _reproject(db) == [calls[-1], calls[-1]]
    _assert_same(db, want)


@pytest.mark.parametrize(
    ("mark", "value"),
    [
        ("reprojecting", str(PROJECTION_REVISION + 1)),  # another build's re-projection
        ("revision", PROJECTION_REVISION + 1),
        ("schema", 1),  # a migration applied since
        ("batch_size", SMALL_BATCH + 1),
        ("session", "no-such-session"),
        ("reprojected_through", "{not json"),
    ],
)
def test_a_reprojection_interrupted_under_other_rules_starts_over(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]], mark: str, value: object
) -> None:
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "other")
    assert _interrupted(db, len(calls) // 2) is not None
    conn = connect(db)
    if mark in ("reprojecting", "reprojected_through"):
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (value, mark))
    else:
        point = orjson.loads(conn.execute("SELECT value FROM meta WHERE key = 'reprojected_through'").fetchall()[0][0])
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'reprojected_through'",
            (orjson.dumps(point | {mark: value}).decode(),),
        )
    conn.execute("UPDATE token_usage SET output = output + 1")  # rows a start over rebuilds
    conn.close()
    assert _reproject(db) == calls
    _assert_same(db, want)


def test_of_two_writers_reprojecting_at_once_the_one_that_claimed_it_last_writes_on(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    """A second writer starts over (its clearing takes the batches the first committed) and is killed
    before its own first batch: the first must not go on and record the projections whole."""
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "two")
    conn = connect(db)
    seen: list[int] = []

    def second_starts_over(done: int, _todo: int) -> None:
        seen.append(done)
        if len(seen) == 2:  # the first batch is committed
            with pytest.raises(_Stop):
                _reproject(db, stop_at=0, batch_size=SMALL_BATCH + 1)  # cleared, then killed

    with pytest.raises(MigrationError, match="another ingestd took over"):
        ensure_current(conn, db, ctx=database_identity(conn), progress=second_starts_over, batch_size=SMALL_BATCH)
    conn.close()
    assert seen == calls[:2]
    assert _reproject(db, batch_size=SMALL_BATCH + 1)[-1] == calls[-1]
    _assert_same(db, want)

    db = _stale(tmp_path, live, "two-resumed")
    assert _interrupted(db, 1) is not None
    conn = connect(db)
    seen.clear()

    def second_resumes(done: int, _todo: int) -> None:
        seen.append(done)
        if len(seen) == 2:  # resumed, and a batch on: another writer resumes from there and goes on a batch
            with pytest.raises(_Stop):
                _reproject(db, stop_at=1)

    with pytest.raises(MigrationError, match="another ingestd took over"):
        ensure_current(conn, db, ctx=database_identity(conn), progress=second_resumes, batch_size=SMALL_BATCH)
    conn.close()
    assert seen == calls[1:3]
    assert _reproject(db)[0] == calls[3]
    _assert_same(db, want)


def test_a_writer_that_starts_while_another_folds_takes_it_over_without_failing(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first writer commits a batch just after the second read where to start (a daemon started
    beside a running ``migrate``): the second still takes the re-projection over, the first stops."""
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "beside")
    go, committed = threading.Event(), threading.Event()
    failed: list[BaseException] = []

    def first() -> None:
        conn = connect(db)
        seen: list[int] = []

        def progress(done: int, _todo: int) -> None:
            seen.append(done)
            if len(seen) == 2:  # a batch committed: wait for the second to read where it starts
                go.wait(10)
            elif len(seen) == 3:
                committed.set()

        try:
            ensure_current(conn, db, ctx=database_identity(conn), progress=progress, batch_size=SMALL_BATCH)
        except BaseException as e:
            failed.append(e)
        finally:
            conn.close()

    real = reproject.resumable

    def read_then_let_the_first_commit(conn: Any, *, batch_size: int) -> Folded | None:
        at = real(conn, batch_size=batch_size)
        if threading.current_thread() is threading.main_thread() and not go.is_set():
            go.set()
            committed.wait(1.0)  # the first's next batch, unless the second's claim holds it back
        return at

    thread = threading.Thread(target=first)
    thread.start()
    while thread.is_alive() and not _checkpointed(db):
        time.sleep(0.01)
    monkeypatch.setattr(reproject, "resumable", read_then_let_the_first_commit)
    assert _reproject(db)[-1] == calls[-1]
    thread.join(30)
    assert len(failed) == 1 and "another ingestd took over" in str(failed[0]), failed
    _assert_same(db, want)


def _checkpointed(db: Path) -> bool:
    """A re-projection of ``db`` has committed a checkpoint."""
    conn = connect(db, readonly=True)
    try:
        return bool(conn.execute("SELECT 1 FROM meta WHERE key = 'reprojected_through'").fetchall())
    finally:
        conn.close()


def test_a_checkpoint_that_does_not_describe_the_log_starts_over(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    """A checkpoint edited or corrupted to name a point the log does not give (a later session, fewer
    rows, a row not of its session) would skip rows never folded and record the projections whole."""
    want, calls = uninterrupted
    base = _stale(tmp_path, live, "edited")
    at = _interrupted(base, len(calls) // 2)
    assert at is not None
    conn = connect(base, readonly=True)
    later = str(conn.execute("SELECT max(session_id) FROM events_raw").fetchall()[0][0])
    last = int(conn.execute("SELECT max(id) FROM events_raw WHERE session_id = ?", (later,)).fetchall()[0][0])
    conn.close()
    assert later != at.session
    for i, edit in enumerate(({"session": later, "last_id": last}, {"rows": at.rows - 1}, {"last_id": last})):
        db = tmp_path / f"edited{i}.db"
        shutil.copyfile(base, db)
        conn = connect(db)
        point = orjson.loads(conn.execute("SELECT value FROM meta WHERE key = 'reprojected_through'").fetchall()[0][0])
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'reprojected_through'", (orjson.dumps(point | edit).decode(),)
        )
        assert resumable(conn, batch_size=SMALL_BATCH) is None, edit
        conn.close()
        assert _reproject(db) == calls, edit
        _assert_same(db, want)


def test_a_reprojection_another_ingestd_left_is_rebuilt_whatever_revision_is_recorded(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    """A newer ingestd's re-projection stopped, then this one runs (a downgrade, a second install):
    the revision recorded is this one's, yet the projections hold part of the log."""
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "downgraded")
    assert _interrupted(db, len(calls) // 2) is not None
    conn = connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'reprojecting'", (str(PROJECTION_REVISION + 1),))
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('projection_revision', ?)", (str(PROJECTION_REVISION),)
    )
    conn.close()
    assert _reproject(db) == calls
    _assert_same(db, want)


def test_an_older_ingestd_refuses_to_fold_into_an_interrupted_reprojection(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ingestd before this one takes the database for a newer one's, never for its own current
    projections it would fold its rules into; this one then goes on from where it stopped."""
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "older")
    assert _interrupted(db, 1) is not None
    monkeypatch.setattr(reproject, "PROJECTION_REVISION", PROJECTION_REVISION - 1)
    conn = connect(db)
    with pytest.raises(MigrationError, match="newer ingestd"):
        ensure_current(conn, db, ctx=database_identity(conn))
    stale = reproject.stale_projection(conn, db)
    assert stale is not None and stale.interrupted and stale.fix == reproject.UPGRADE and not stale.newer
    conn.close()
    monkeypatch.undo()
    resumed = _reproject(db)
    assert resumed[0] == calls[1] and resumed[1:] == calls[2:]
    _assert_same(db, want)


def test_migrate_after_a_stop_says_it_resumed_and_replay_and_verify_agree(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "migrate")
    at = _interrupted(db, 1, batch_size=BATCH_ROWS)  # the batch size ``migrate`` folds with
    assert at is not None and 0 < at.rows < calls[-1]
    status = CliRunner().invoke(cli, ["status", "--db", str(db)])
    assert f"run `ingestd migrate --db {db}` again: it goes on from where it stopped" in status.stderr
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert f"resumed a re-projection: {at.rows} of {calls[-1]} log rows were already done" in res.stdout
    _assert_same(db, want)
    assert CliRunner().invoke(cli, ["verify", "--db", str(db)]).exit_code == 0
    code, doc = _replay(db)
    assert code == 0, doc["differences"]


def test_the_daemon_resumes_an_interrupted_reprojection_and_logs_what_it_went_on_from(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    want, calls = uninterrupted
    db = _stale(tmp_path, live, "serve")
    at = _interrupted(db, 1, batch_size=BATCH_ROWS)  # the batch size the daemon folds with
    assert at is not None
    with capture_logs() as logs:
        prepare_db(ServeConfig(db_path=db, tail=False, schedule=False))
    [line] = [x for x in logs if x["event"] == "reprojected"]
    assert (line["log_rows"], line["resumed_log_rows"]) == (calls[-1], at.rows)
    _assert_same(db, want)


def test_migrate_killed_mid_reprojection_resumes_on_the_next_run(
    tmp_path: Path, live: Path, uninterrupted: tuple[Path, list[int]]
) -> None:
    """kill -9 of a real ``ingestd migrate`` once it committed a batch: the next one goes on from there."""
    want, calls = uninterrupted
    for attempt in range(5):  # a run may finish between the poll and the kill: again on a fresh copy
        db = _stale(tmp_path, live, f"killed{attempt}")
        proc = subprocess.Popen(
            [sys.executable, "-m", "ingestd", "migrate", "--db", str(db), "--json"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        watch = connect(db, readonly=True)
        try:
            while (
                proc.poll() is None
                and not watch.execute("SELECT 1 FROM meta WHERE key = 'reprojected_through'").fetchall()
            ):
                time.sleep(0.002)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            at = resumable(watch)
        finally:
            watch.close()
        if at is not None:
            break
    assert at is not None, "every run finished before it could be killed"
    res = subprocess.run(
        [sys.executable, "-m", "ingestd", "migrate", "--db", str(db), "--json"], capture_output=True, check=False
    )
    assert res.returncode == 0, res.stderr
    doc = orjson.loads(res.stdout)
    assert doc["resumed_log_rows"] == at.rows > 0 and doc["reprojected_log_rows"] == calls[-1]
    _assert_same(db, want)
    code, replayed = _replay(db)
    assert code == 0, replayed["differences"]
    assert CliRunner().invoke(cli, ["verify", "--db", str(db)]).exit_code == 0
