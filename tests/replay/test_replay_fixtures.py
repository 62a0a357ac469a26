"""``ingestd replay`` with the real projector on the hand-made fixtures (transcripts + hook bodies)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.hookkeys import HookEvent, idempotency_key, parse_body
from ingestd.core.touch import Ctx
from ingestd.http.hooks import hook_row
from ingestd.ingest.backfill import ingest_roots
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.rollup import TIER_BITS
from ingestd.store.writer import apply_batch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"
SID = "11111111-1111-4111-8111-111111111111"
CTX = Ctx(instance="fixture", host_id="fixture-host")
HOOKS = [
    {"hook_event_name": "SessionStart", "session_id": SID, "source": "startup"},
    {"hook_event_name": "PreToolUse", "session_id": SID, "tool_name": "Bash", "tool_use_id": "toolu_h1"},
    {"hook_event_name": "PostToolUse", "session_id": SID, "tool_name": "Bash", "tool_use_id": "toolu_h1"},
    {"hook_event_name": "SubagentStart", "session_id": SID, "agent_id": "a1111111", "agent_type": "Explore"},
    {"hook_event_name": "Stop", "session_id": SID},
    {"hook_event_name": "Stop", "session_id": SID},  # a second genuine firing, byte-identical
    {"hook_event_name": "SomethingNew", "session_id": SID, "x": 1},
]


def _post_hooks(conn: object, start_ns: int) -> None:
    rows = []
    for i, body in enumerate(HOOKS):
        raw = orjson.dumps(body)
        ev = parse_body(raw)
        assert isinstance(ev, HookEvent)
        ns = start_ns + i * 10**9
        key = idempotency_key(ev, header_key=None, received_ns=ns, instance="t", counter=i)
        rows.append(hook_row(ev, raw, key, ns))
    apply_batch(conn, rows, ctx=CTX)  # type: ignore[arg-type]


def _replay_ok(db: Path) -> dict[str, object]:
    res = CliRunner().invoke(cli, ["replay", "--db", str(db), "--json"])
    doc: dict[str, object] = orjson.loads(res.stdout)
    assert res.exit_code == 0, doc["differences"]
    return doc


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dst = tmp_path / "projects"
    shutil.copytree(FIXTURES, dst)
    return dst


def _ingested(db: Path, projects: Path) -> Path:
    """``db`` migrated, with ``projects`` ingested (the fixtures' clock and identity)."""
    conn = connect(db)
    migrate(conn)
    ingest_roots(conn, [projects], now="2026-01-01T00:00:00.000Z", ctx=CTX)
    conn.close()
    return db


def test_fixtures_with_hooks_double_replay_equal(tmp_path: Path, projects: Path) -> None:
    db = tmp_path / "f.db"
    conn = connect(db)
    migrate(conn)
    _post_hooks(conn, 1_767_225_600 * 10**9)
    ingest_roots(conn, [projects], now="2026-01-01T00:00:00.000Z", ctx=CTX)
    conn.close()
    doc = _replay_ok(db)
    rows = {t["table"]: t["rows"]["live"] for t in doc["tables"]}  # type: ignore[attr-defined, index]
    assert rows["sessions"] >= 4 and rows["token_usage"] > 0 and rows["events"] == len(HOOKS)


def test_file_rewritten_in_place_replays_equal(tmp_path: Path, projects: Path) -> None:
    db = tmp_path / "f.db"
    conn = connect(db)
    migrate(conn)
    ingest_roots(conn, [projects], now="2026-01-01T00:00:00.000Z", ctx=CTX)
    main = projects / "-home-u-proj" / f"{SID}.jsonl"
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines[: max(1, len(lines) // 3)]))  # shrunk: a rewrite, logged as a reset
    ingest_roots(conn, [projects], now="2026-01-02T00:00:00.000Z", ctx=CTX)
    main.write_bytes(b"".join(lines))
    ingest_roots(conn, [projects], now="2026-01-03T00:00:00.000Z", ctx=CTX)
    resets = conn.execute("SELECT count(*) FROM events_raw WHERE source = 'ingestd'").fetchall()[0][0]
    conn.close()
    assert resets >= 1
    _replay_ok(db)


def test_replay_keeps_the_price_dimensions_long_context_usage_is_tiered_alike(tmp_path: Path) -> None:
    # Regression: replay copied only the five rates into its scratch databases, not the long-context
    # threshold (nor speed multipliers, web search fee): a request past 200k prompt tokens was
    # tier 1 live and tier 0 rebuilt, and `ingestd replay` failed on any such history
    sid = "44444444-4444-4444-8444-444444444444"
    lines = []
    for i, cache_read in enumerate((250_000, 1_000)):
        rec = {
            "parentUuid": None,
            "isSidechain": False,
            "type": "assistant",
            "sessionId": sid,
            "cwd": "/home/u/long",
            "version": "2.1.3",
            "uuid": f"u{i}",
            "timestamp": f"2025-10-10T21:4{i}:00.000Z",
            "requestId": f"req_{i}",
            "message": {
                "id": f"msg_{i}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [{"type": "text", "text": "ok"}],
                "usage": {"input_tokens": 10, "cache_read_input_tokens": cache_read, "output_tokens": 5},
            },
        }
        lines.append(orjson.dumps(rec))
    root = tmp_path / "projects"
    (root / "-home-u-long").mkdir(parents=True)
    (root / "-home-u-long" / f"{sid}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    db = tmp_path / "long.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(root)]).exit_code == 0
    conn = connect(db)
    every = sum(TIER_BITS.values())  # the seeded tier prices every bucket of the request
    assert conn.execute("SELECT DISTINCT tier FROM token_usage_rollup ORDER BY 1").fetchall() == [(0,), (every,)]
    conn.close()
    _replay_ok(db)


@pytest.mark.parametrize("min_rows", [0, 10**9], ids=["processes", "here"])
def test_both_ways_of_rebuilding_agree_and_a_small_log_starts_no_process(
    tmp_path: Path, projects: Path, min_rows: int
) -> None:
    # a small log is rebuilt here (two processes cost ~0.7 s, more than its rebuilds); a large one in
    # two processes: the same rebuilds either way, both equal to the live projections
    from ingestd.projection.replay import PARALLEL_MIN_ROWS, replay

    db = _ingested(tmp_path / "f.db", projects)
    phases: list[str] = []
    result = replay(db, on_phase=phases.append, parallel_min_rows=min_rows)
    assert result.comparison.ok, result.comparison.differences
    assert 0 < result.log_rows < PARALLEL_MIN_ROWS
    in_processes = any("two processes" in p for p in phases)
    assert in_processes == (min_rows == 0), phases
    assert ("rebuild_wall" in result.elapsed_s) == in_processes


def test_the_rebuild_processes_yield_to_the_daemon(
    tmp_path: Path, projects: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: two rebuilds at the default priority took both cores from the daemon's tailer (nice
    # 10) while it held the write lock, and a hook waiting behind it was answered 503
    import subprocess
    import sys

    from ingestd.projection import replay

    code = (
        "import os; from ingestd.projection.replay import _yield_to_daemon as y; y(); y(); print(os.getpriority(0, 0))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert int(out.stdout) == max(replay.REBUILD_NICE, os.getpriority(os.PRIO_PROCESS, 0))
    db = _ingested(tmp_path / "f.db", projects)
    calls: list[int] = []
    monkeypatch.setattr(replay, "_yield_to_daemon", lambda: calls.append(1))
    replay._rebuild_file(str(db), str(tmp_path / "r.db"), 100, "log", None)
    assert calls == [1]
