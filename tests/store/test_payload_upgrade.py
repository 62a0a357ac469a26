"""A database from before migration 0013 (every payload stored as read) upgrades without a
rewrite, keeps every row readable and replays; rows appended after it are compressed."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core import ledger
from ingestd.core.derive import BUCKETS
from ingestd.core.rows import TokenUsageRow
from ingestd.core.touch import Ctx
from ingestd.ingest.backfill import ingest_roots
from ingestd.projection.reproject import ensure_current
from ingestd.store import payload
from ingestd.store.connection import connect
from ingestd.store.migrate import MIGRATIONS_DIR, migrate
from ingestd.store.payload_open import OPEN

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def _old_database(db: Path, projects: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``projects`` ingested as ingestd did before 0013: the bytes as read, no codec column."""
    conn = connect(db)
    migrate(conn)
    with monkeypatch.context() as m:
        m.setattr(payload, "_writer_codecs", lambda c: payload.Codecs({}))
        ingest_roots(conn, [projects], now="2026-05-01T00:00:00.000Z")
    # back to the schema of 0012: the objects of later migrations go, 0012's triggers come back
    ref_dir = db.parent / "migrations-0012"
    ref_dir.mkdir()
    for f in sorted(MIGRATIONS_DIR.glob("00*.sql"))[:12]:
        shutil.copy(f, ref_dir / f.name)
    ref = connect(db.parent / "ref.db")
    migrate(ref, directory=ref_dir, pins=ledger.PINS[:12])
    want = {str(n): str(q) for n, q in ref.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")}
    prices = ref.execute("SELECT * FROM model_pricing").fetchall()
    usage_ddl = [
        str(q)
        for (q,) in ref.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name IN ('token_usage', 'token_usage_rollup')"
            " AND type IN ('table', 'index') AND sql IS NOT NULL ORDER BY type DESC"
        )
    ]
    log_ddl = [
        str(q)
        for (q,) in ref.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'events_raw' AND sql IS NOT NULL"
            " ORDER BY type = 'table' DESC, type, name"
        )
    ]
    tool_ddl = ref.execute("SELECT sql FROM sqlite_master WHERE name = 'tool_calls'").fetchall()[0][0]
    ref.close()
    # tool_calls back to one table of 0012's columns (0023 added prompt_id and reason, 0034 made it a view)
    calls = conn.execute(
        "SELECT session_id, tool_use_id, agent_id, tool_name, started_at, ended_at, status FROM tool_calls"
    ).fetchall()
    conn.execute("DROP VIEW tool_calls")
    conn.execute("DROP TABLE tool_call_rows")
    conn.execute(tool_ddl)
    conn.executemany("INSERT INTO tool_calls VALUES (?, ?, ?, ?, ?, ?, ?)", calls)
    # the log back to one table of 0012's columns (0030 interned its strings; 0013 added codec)
    log = conn.execute(
        "SELECT id, idempotency_key, source, event_type, payload, received_at, session_id, origin, origin_gen,"
        " origin_offset FROM events_raw ORDER BY id"
    ).fetchall()
    conn.execute("DROP VIEW events_raw")
    conn.execute("DROP VIEW search_docs")  # it reads log_sessions (0033); 0022's table came later
    for table in ("log_rows", "log_origins", "log_sessions", "log_kinds"):
        conn.execute(f"DROP TABLE {table}")
    for q in log_ddl:
        conn.execute(q)
    conn.executemany(
        "INSERT INTO events_raw (id, idempotency_key, source, event_type, payload, received_at, session_id, origin,"
        " origin_gen, origin_offset) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        log,
    )
    # model_pricing back to 0012's columns and rows (0027 added geo_multipliers and seed rows)
    conn.execute("DELETE FROM model_pricing")
    conn.execute("ALTER TABLE model_pricing DROP COLUMN geo_multipliers")
    conn.executemany(f"INSERT INTO model_pricing VALUES ({', '.join('?' * len(prices[0]))})", prices)
    # token_usage back to five rows per message (0012's layout), its rollup refilled by 0012's triggers
    usage = conn.execute(f"SELECT {', '.join(TokenUsageRow._fields[1:])} FROM token_usage ORDER BY id").fetchall()
    conn.execute("DROP TABLE token_usage_rollup")
    conn.execute("DROP TABLE token_usage")
    for q in usage_ddl:
        conn.execute(q)
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        if want.get(name) != conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchall()[0][0]:
            conn.execute(f'DROP TRIGGER "{name}"')
    have = {str(n) for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    for name, sql in want.items():
        if name not in have:
            conn.execute(sql)
    for r in usage:
        u = TokenUsageRow(None, *r)
        for b in BUCKETS:
            conn.execute(
                "INSERT INTO token_usage (session_id, agent_id, message_id, model, bucket, tokens,"
                " is_compaction_baseline, occurred_at, claim_rank, prompt_tokens, speed, web_search_requests)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    *(u.session_id, u.agent_id, u.message_id, u.model, b, getattr(u, b)),
                    *(u.is_compaction_baseline, u.occurred_at, u.claim_rank, u.prompt_tokens, u.speed),
                    u.web_search_requests if b == "output" else 0,
                ),
            )
    conn.execute("DROP TABLE payload_codecs")
    conn.execute("DROP TABLE IF EXISTS payload_blocks")
    for table in ("payload_open", "payload_open_blocks", "payload_sealed"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute("CREATE INDEX IF NOT EXISTS events_raw_origin ON events_raw (origin, origin_gen, origin_offset)")
    conn.execute("DROP TABLE IF EXISTS rollup_deferred")
    conn.execute("DROP TABLE IF EXISTS rate_limit_samples")
    conn.execute("DROP TABLE IF EXISTS search_fts")
    conn.execute("DROP TABLE IF EXISTS search_doc_rows")
    conn.execute("DROP TABLE IF EXISTS tasks")
    conn.execute("DROP TABLE IF EXISTS prompts")
    conn.execute("DROP TABLE IF EXISTS cc_model_usage")
    conn.execute("DROP TABLE IF EXISTS otel_requests")
    conn.execute("DROP TABLE IF EXISTS otel_metric_points")
    conn.execute("DROP INDEX IF EXISTS sessions_root_uuid")
    conn.execute("DROP INDEX IF EXISTS sessions_forked_from")
    conn.execute("DROP INDEX IF EXISTS compactions_boundary")
    conn.execute("DROP INDEX IF EXISTS sessions_team_name")
    conn.execute("DROP INDEX IF EXISTS tool_calls_prompt")
    for table, column in (
        ("events", "prompt_id"),
        ("sessions", "error_type"),
        ("sessions", "switched_to_model"),
        ("sessions", "unmatched_notices"),
        ("compactions", "summary"),
        ("sessions", "cc_cost_usd"),
        ("sessions", "last_prompt"),
        ("sessions", "root_uuid"),
        ("sessions", "forked_from"),
        ("sessions", "fork_start"),
        ("sessions", "team_name"),
        ("sessions", "agent_name"),
    ):
        conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    # projected by the rules of its day: the search projection came with revision 21
    conn.execute("UPDATE meta SET value = '20' WHERE key = 'projection_revision'")
    conn.execute("DELETE FROM schema_version WHERE id >= 13")
    assert (
        "'statusline'" not in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'events_raw'").fetchall()[0][0]
    )
    conn.execute("VACUUM")
    conn.close()


def _log(db: Path) -> list[tuple[int, bytes]]:
    conn = connect(db, readonly=True)
    try:
        return [(int(i), bytes(p)) for i, p in conn.execute("SELECT id, payload FROM events_raw ORDER BY id")]
    finally:
        conn.close()


def _cli(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout


def test_an_old_database_upgrades_without_rewrite_and_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES, projects)
    db = tmp_path / "old.db"
    _old_database(db, projects, monkeypatch)
    before = _log(db)
    assert len(before) > 20
    conn = connect(db)
    assert "codec" not in [r[1] for r in conn.execute("PRAGMA table_info(events_raw)")]
    pages = conn.execute("PRAGMA page_count").fetchall()[0][0]
    assert [p.id for p in migrate(conn)] == [13, *range(15, ledger.PINS[-1].id + 1)]
    # no payload rewritten: the same rows, the same bytes, codec 0
    assert conn.execute("SELECT DISTINCT codec FROM events_raw").fetchall() == [(payload.RAW,)]
    # eleven new tables and indexes, the schema, the search projection's table, index and FTS5
    # shadow tables (0022), the tasks table and an index (0023), the prompts and cc_model_usage
    # tables (0025), the otel tables (0026), the rollup rebuilt over a longer key (0027), two
    # partial indexes (0028), one index (0029), the interned log's four tables and three indexes
    # (0030: its rows copied once, their old pages left free), two columns and an index (0032), the
    # search documents' compact table (0033: none to copy), the tool calls' (0034: their rows copied);
    # the projection tables 0020 rebuilt left their old pages free (the payloads are not rewritten)
    in_use = conn.execute("PRAGMA page_count").fetchall()[0][0] - conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    assert in_use <= pages + 38
    conn.close()
    assert _log(db) == before
    conn = connect(db)
    assert ensure_current(conn, db, ctx=Ctx()) is not None  # the projections of the new rules, from the log
    conn.close()
    assert _log(db) == before
    code, out = _cli("verify", "--db", str(db))
    assert code == 0, out
    code, out = _cli("replay", "--db", str(db), "--json")
    assert code == 0, out

    # a new transcript appended afterwards: its lines are compressed, the old rows stay as they are
    src = next(p for p in sorted(projects.rglob("*.jsonl")) if len(p.read_bytes().splitlines()) > 3)
    lines = [orjson.loads(x) for x in src.read_bytes().splitlines()]
    new_sid = "00000000-0000-4000-8000-000000000013"
    for rec in lines:
        if isinstance(rec, dict) and "sessionId" in rec:
            rec["sessionId"] = new_sid
    (src.parent / f"{new_sid}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    conn = connect(db)
    ingest_roots(conn, [projects], now="2026-05-02T00:00:00.000Z")
    old_codecs = {c for (c,) in conn.execute("SELECT codec FROM events_raw WHERE id <= ?", (len(before),))}
    new_codecs = [c for (c,) in conn.execute("SELECT codec FROM events_raw WHERE id > ?", (len(before),))]
    waiting = [c for (c,) in conn.execute("SELECT codec FROM payload_open")]
    conn.close()
    assert old_codecs == {payload.RAW}
    # a few lines: in the transcript's open block (migration 0019), each waiting as plain zstd (too few
    # lines yet to train a dictionary); a line compression cannot shrink waits raw
    assert len(new_codecs) >= len(lines) and set(new_codecs) == {OPEN}, new_codecs
    assert len(waiting) == len(new_codecs) and waiting.count(payload.PLAIN) > len(waiting) // 2, waiting
    assert _log(db)[: len(before)] == before
    code, out = _cli("verify", "--db", str(db))
    assert code == 0, out
    code, out = _cli("replay", "--db", str(db), "--json")
    assert code == 0, out


def test_verify_on_a_database_from_before_0013_says_migrate_not_no_such_column(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: "check could not run: database error: no such column: codec" three times (reads as damage)
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES, projects)
    db = tmp_path / "old.db"
    _old_database(db, projects, monkeypatch)
    res = CliRunner().invoke(cli, ["verify", "--db", str(db)])
    assert res.exit_code == 1
    assert "no such column" not in res.output
    assert "FAIL  ledger: migrations pending: 0013_payload_codecs, 0015_rollup_deferred" in res.output
    assert "FAIL  payloads: check could not run: migrations pending (run `ingestd migrate`)" in res.output


def test_prune_dry_run_does_not_migrate_an_old_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Regression: `prune --dry-run` ("change nothing") applied 0013 and 0015, for good: an older ingestd
    # still sharing the database could no longer open it
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES, projects)
    db = tmp_path / "old.db"
    _old_database(db, projects, monkeypatch)
    res = CliRunner().invoke(cli, ["prune", "--dry-run", "--db", str(db)])
    assert res.exit_code == 2 and "needs migrations 0013_payload_codecs, 0015_rollup_deferred" in res.output
    conn = connect(db, readonly=True)
    assert "codec" not in [r[1] for r in conn.execute("PRAGMA table_info(events_raw)")]
    conn.close()


def test_a_database_with_0015_but_not_0013_upgrades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Regression: main's cfb4571, a7f2d4f and 1bfaf6f shipped 0015 before 0013 existed; every command
    # refused their databases for good ("migration 13 is pending but 15 is applied")
    projects = tmp_path / "projects"
    shutil.copytree(FIXTURES, projects)
    db = tmp_path / "old.db"
    _old_database(db, projects, monkeypatch)
    then = tmp_path / "migrations-then"
    then.mkdir()
    for f in sorted(MIGRATIONS_DIR.glob("00*.sql")):
        if int(f.name[:4]) <= 12 or int(f.name[:4]) == 15:
            shutil.copy(f, then / f.name)
    conn = connect(db)
    pins = tuple(p for p in ledger.PINS if p.id <= 12 or p.id == 15)
    assert [p.id for p in migrate(conn, directory=then, pins=pins)] == [15]
    assert [p.id for p in migrate(conn)] == [13, *range(16, ledger.PINS[-1].id + 1)]
    conn.close()
    code, out = _cli("verify", "--db", str(db))
    assert code == 0, out

    # LATE lets 0013 alone come after 0015; any other order stays refused
    def order_problems(ids: list[int]) -> list[str]:
        got = ledger.plan([], [ledger.Migration(i, "x", None) for i in ids])
        return [m for m in got.problems if "increasing order" in m]

    assert order_problems([*range(1, 13), 15]) == []
    assert order_problems([*range(1, 13), 16]) == [
        "migration 13 is pending but 16 is applied: ids must be applied in increasing order"
    ]
    assert order_problems([*range(1, 13), 15, 17]) != []
    assert order_problems([1, 2, 16]) != []
