"""End to end on the real corpus ``../shared/corpus/claude-projects`` (skipped when absent).

Expectations were written from reading the files (see ``../shared/corpus/PROVENANCE.md``),
token totals are ccusage 20's figures for this corpus.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect
from tests.usage_rows import BY_BUCKET

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "claude-projects"
pytestmark = pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real corpus not found at {CORPUS}")

SESSIONS = {
    "7da73774-862d-4897-94a7-ef847ce65033",
    "263940d8-4431-44ba-9f77-4eb54b5f81f0",
    "998db3cd-d3a7-4c3d-940b-c5b260281b5f",
    "a6214a01-0396-4893-b5ef-eac084cb9ff6",
    "c44afee0-273a-4b59-9ca3-869dccd7b1be",
    "5d1227a4-083d-43db-abb4-b337b7fad400",
    "42f9655b-5d81-497b-989e-e4dee62b1b95",
    "5e17e9ad-20f4-4e37-b1cf-100b0ae20593",
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04",
    "4d5611e5-241a-462a-8d15-5122611a9569",
    "8463c716-a2ea-4c14-9efa-87158ebd9f20",
    "491e126e-1e71-469c-ade2-fcc8af567c74",
    "55604662-cf2a-4331-851a-ec234028f8ca",
    "d6e0bada-1959-4eec-a9d2-0bfade768d8f",
    "de3b8b19-5bc0-4a2a-934a-1b6806567e25",
    "063004b7-9c12-446a-a977-ca545d9e3cac",
    "645d338e-a844-495b-bcc0-8b12ad5c0bc1",
    "c7d3d95c-57f0-4359-8f4b-926a9bef5a3f",
    "c64cc478-3430-40fe-8e9c-4ee9986e9754",
    "c45af7b1-cb7c-4e51-93db-8cbb250a877a",
    "61ddcbba-cf39-4052-b41c-c444f6cf0fdf",
}
# sessions seen only through flat 2.0.x agent files: no main transcript, so no main agent
NO_MAIN = {"a6214a01-0396-4893-b5ef-eac084cb9ff6", "42f9655b-5d81-497b-989e-e4dee62b1b95"}
# (session prefix, parent, child, source, subagent_type)
EDGES = {
    ("7da73774", "7da73774-862d-4897-94a7-ef847ce65033", "af5915960273c8851", "tool_use", "Explore"),
    ("7da73774", "7da73774-862d-4897-94a7-ef847ce65033", "a59e84c40dbe09dd4", "tool_use", "Explore"),
    ("7da73774", "7da73774-862d-4897-94a7-ef847ce65033", "a7f7074a6963e4174", "tool_use", "Explore"),
    ("ae4a77f8", "ae4a77f8-aedd-4bc1-888f-c94edc91af04", "aac57f5", "tool_use", "general-purpose"),
    ("4d5611e5", "4d5611e5-241a-462a-8d15-5122611a9569", "a2898e3", "tool_use", "Explore"),
    ("8463c716", "8463c716-a2ea-4c14-9efa-87158ebd9f20", "a7be2f0", "tool_use", "Explore"),
    ("491e126e", "491e126e-1e71-469c-ade2-fcc8af567c74", "afb92ff", "tool_use", "Plan"),
    ("c7d3d95c", "c7d3d95c-57f0-4359-8f4b-926a9bef5a3f", "ab81802", "tool_use", "Explore"),
    # 1.0.89: three in-file sidechains whose root prompt equals a Task input prompt
    (
        "263940d8",
        "263940d8-4431-44ba-9f77-4eb54b5f81f0",
        "sidechain-07609b35-1460-4e48-9405-489d2cb36227",
        "legacy_explore",
        "general-purpose",
    ),
    (
        "263940d8",
        "263940d8-4431-44ba-9f77-4eb54b5f81f0",
        "sidechain-6f3e1b41-a31b-4bc0-809b-2b19276914ca",
        "legacy_explore",
        "general-purpose",
    ),
    (
        "263940d8",
        "263940d8-4431-44ba-9f77-4eb54b5f81f0",
        "sidechain-d23ce69c-944a-4118-a440-3afed2fbaa45",
        "legacy_explore",
        "general-purpose",
    ),
}
ORPHANS = {"a0294d5", "a7c3dfb", "00a0149e", "0cbdf933", "32551ac2", "4ed9b522", "c42525e1", "af1ff21"}
COMPACTIONS = {"acompact-946d2b", "acompact-e1f845", "acompact-f46190"}
TOTALS = {
    "input": 17_501,
    "output": 250_897,
    "cache_read": 63_741_822,
    "cache_write_5m": 2_764_248 - 604_463,
    "cache_write_1h": 604_463,
}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    path = tmp_path_factory.mktemp("e2e") / "x.db"
    runner = CliRunner()
    args = ["ingest", "--projects", str(CORPUS), "--db", str(path), "--json"]
    first = runner.invoke(cli, args)
    assert first.exit_code == 0, first.output
    second = runner.invoke(cli, args)
    assert second.exit_code == 0, second.output
    return path, json.loads(first.stdout), json.loads(second.stdout)


def test_summary_and_reingest_inserts_nothing(db: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    _, first, second = db
    assert first["files"] == 32 and first["skipped"] == {} and first["sessions"] == 21
    assert first["rows_inserted"] == first["lines"] > 7000
    assert second["rows_inserted"] == 0 and second["files_read"] == 0


def test_sessions_agents_edges(db: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    conn = connect(db[0])
    sessions = {r[0]: r for r in conn.execute("SELECT id, project_path FROM sessions")}
    assert set(sessions) == SESSIONS
    assert sessions["61ddcbba-cf39-4052-b41c-c444f6cf0fdf"][1] == "C:\\Users\\user\\Project"  # real cwd, not decoded
    mains = {r[0] for r in conn.execute("SELECT id FROM agents WHERE type = 'main'")}
    assert mains == SESSIONS - NO_MAIN
    edges = {
        (r[0][:8], r[1], r[2], r[3], r[4])
        for r in conn.execute(
            "SELECT e.session_id, e.parent_agent_id, e.child_agent_id, e.source, a.subagent_type"
            " FROM orchestration_edges e JOIN agents a ON a.session_id = e.session_id AND a.id = e.child_agent_id"
        )
    }
    assert edges == EDGES
    subs = {
        r[0]: r[1:]
        for r in conn.execute("SELECT id, parent_agent_id, is_compaction FROM agents WHERE type = 'subagent'")
    }
    assert set(subs) == {e[2] for e in EDGES} | ORPHANS | COMPACTIONS
    assert all(subs[a] == (None, 0) for a in ORPHANS)  # no evidence, no invented parent
    assert all(subs[a] == (None, 1) for a in COMPACTIONS)
    assert conn.execute("SELECT count(*) FROM compactions").fetchall()[0][0] == 4


def test_token_totals_exact(db: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    conn = connect(db[0])
    got: dict[Any, Any] = dict(conn.execute(f"SELECT bucket, sum(tokens) FROM {BY_BUCKET} GROUP BY bucket").fetchall())  # type: ignore[arg-type]
    assert got == TOTALS
    assert conn.execute("SELECT count(*) FROM token_usage WHERE model = '<synthetic>'").fetchall()[0][0] == 0


def test_independent_recount_of_distinct_messages(db: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    """Straightforward recount: one entry per message.id, per-field max, copies only when no direct record."""
    direct: dict[str, list[int]] = {}
    copies: dict[str, list[int]] = {}

    def add(d: dict[str, list[int]], m: dict[str, Any]) -> None:
        u = m.get("usage") or {}
        cc = u.get("cache_creation") or {}
        e5, e1 = cc.get("ephemeral_5m_input_tokens", 0), cc.get("ephemeral_1h_input_tokens", 0)
        w5 = e5 + max(0, u.get("cache_creation_input_tokens", 0) - e5 - e1)
        v = [u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cache_read_input_tokens", 0), w5, e1]
        d[m["id"]] = [max(a, b) for a, b in zip(d.get(m["id"], v), v, strict=True)]

    for f in CORPUS.rglob("*.jsonl"):
        for raw in f.read_bytes().splitlines():
            r = json.loads(raw)
            if r.get("type") == "assistant" and r["message"].get("model") != "<synthetic>":
                add(direct, r["message"])
            elif r.get("type") == "progress" and r.get("data", {}).get("type") == "agent_progress":
                inner = r["data"].get("message") or {}
                if inner.get("type") == "assistant":
                    add(copies, inner["message"])
    merged = dict(direct)
    merged.update({k: v for k, v in copies.items() if k not in direct})
    recount = [sum(v[i] for v in merged.values()) for i in range(5)]
    conn = connect(db[0])
    got: dict[Any, Any] = dict(conn.execute(f"SELECT bucket, sum(tokens) FROM {BY_BUCKET} GROUP BY bucket").fetchall())  # type: ignore[arg-type]
    assert recount == [got[b] for b in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")]
    n = conn.execute("SELECT count(DISTINCT message_id) FROM token_usage").fetchall()[0][0]
    assert n == len(merged) == 992


def test_summary_titles_follow_their_leaf(db: tuple[Path, dict[str, Any], dict[str, Any]]) -> None:
    """SPEC §4.1: 263940d8's file opens with a summary whose leafUuid (17f6d41e…, line 141) is a
    record of 998db3cd (its history copied in): the summary is 998db3cd's title, not 263940d8's.
    5e17e9ad's summary names its own line 133; c44afee0's names a record no file here holds."""
    conn = connect(db[0])
    got = {r[0][:8]: (r[1], r[2]) for r in conn.execute("SELECT id, title, title_source FROM sessions")}
    assert got["998db3cd"] == ("Linear SDK CLI Tool: MVP Planning & Architecture", "summary")
    assert got["263940d8"] == (None, None)
    assert got["5e17e9ad"] == ("GitHub Submodule Checkout Token Permission Fix", "summary")
    assert got["c44afee0"] == (None, None)
