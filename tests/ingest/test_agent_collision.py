"""Two sessions with the same agent id each keep their own agent (SPEC §4.2: an agent is
identified by ``(session_id, id)``, migration 0009).

Agent ids are short (7 hex characters in 2.0.76-2.1.42, FORMATS.md §0; ``acompact-`` plus 6 hex
for compaction sidechains), so in a long archive two sessions share one often. The input is the
case that broke: one project, sessions ``1111…`` and ``2222…``, each with a main transcript (a user
line and one billed assistant line) and ``subagents/agent-acompact-abc123.jsonl`` (a user line and
one billed assistant line). Each session must have 2 agents with its compaction sidechain's
tokens under it, whatever order the sessions are ingested in, and a replay agrees.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest
from structlog.testing import capture_logs

from ingestd.core.records import NewLogRow
from ingestd.ingest.backfill import ingest_roots
from ingestd.projection.rebuild import rebuild_projections
from ingestd.report.tree import tree_report
from ingestd.store.writer import apply_batch
from tests.ingest.support import dump, new_db

S1 = "11111111-1111-4111-8111-111111111111"
S2 = "22222222-2222-4222-8222-222222222222"
COMPACT = "acompact-abc123"
NOW = "2026-03-01T00:00:00.000Z"


def _lines(recs: list[dict[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in recs)


def _usage(inp: int, out: int) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def write_session(root: Path, sid: str, n: int) -> None:
    """Session ``sid`` under project ``-w-p``; its tokens are distinct per session (``n``)."""
    base = {"sessionId": sid, "cwd": "/w/p", "version": "2.1.42"}
    day = f"2026-02-1{n}T10:00:0"
    proj = root / "-w-p"
    (proj / sid / "subagents").mkdir(parents=True)
    (proj / f"{sid}.jsonl").write_bytes(
        _lines(
            [
                {
                    **base,
                    "type": "user",
                    "uuid": f"{sid}-u",
                    "parentUuid": None,
                    "timestamp": day + "0.000Z",
                    "message": {"role": "user", "content": "hello"},
                },
                {
                    **base,
                    "type": "assistant",
                    "uuid": f"{sid}-a",
                    "parentUuid": f"{sid}-u",
                    "timestamp": day + "1.000Z",
                    "message": {
                        "id": f"msg_main_{n}",
                        "model": "claude-sonnet-4-5-20250929",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "hi"}],
                        "usage": _usage(10 * n, 1),
                    },
                },
            ]
        )
    )
    side = {**base, "agentId": COMPACT, "isSidechain": True}
    (proj / sid / "subagents" / f"agent-{COMPACT}.jsonl").write_bytes(
        _lines(
            [
                {
                    **side,
                    "type": "user",
                    "uuid": f"{sid}-cu",
                    "parentUuid": None,
                    "timestamp": day + "2.000Z",
                    "message": {"role": "user", "content": "summarise"},
                },
                {
                    **side,
                    "type": "assistant",
                    "uuid": f"{sid}-ca",
                    "parentUuid": f"{sid}-cu",
                    "timestamp": day + "3.000Z",
                    "message": {
                        "id": f"msg_compact_{n}",
                        "model": "claude-sonnet-4-5-20250929",
                        "role": "assistant",
                        "content": [{"type": "text", "text": "summary"}],
                        "usage": _usage(100 * n, 7),
                    },
                },
            ]
        )
    )


def _check(conn: Any) -> None:
    for sid, n in ((S1, 1), (S2, 2)):
        agents = conn.execute(
            "SELECT id, type, is_compaction FROM agents WHERE session_id = ? ORDER BY type, id", (sid,)
        ).fetchall()
        assert agents == [(sid, "main", 0), (COMPACT, "subagent", 1)]
        doc = tree_report(conn, sid)
        comp = doc["compaction_agents"]
        assert [c["agent_id"] for c in comp] == [COMPACT]
        # the compaction call's own tokens, under this session's sidechain: input 100n + output 7
        assert comp[0]["own"]["tokens"] == 100 * n + 7
        assert doc["tree"]["own"]["tokens"] == 10 * n + 1
        assert doc["unattributed"] is None  # no "usage with no agent"


@pytest.mark.parametrize("order", list(itertools.permutations([S1, S2])))
def test_each_session_keeps_its_compaction_agent_in_both_orders(tmp_path: Path, order: tuple[str, str]) -> None:
    conn = new_db(tmp_path / "x.db")
    with capture_logs() as logs:
        for sid in order:
            root = tmp_path / f"root-{sid[:4]}"
            write_session(root, sid, 1 if sid == S1 else 2)
            ingest_roots(conn, [root], now=NOW)
    assert not [e for e in logs if "collision" in str(e.get("event"))]
    _check(conn)
    for origin_order in ("origin", "reverse"):
        dst = new_db(tmp_path / f"r-{origin_order}.db")
        rebuild_projections(conn, dst, batch_size=1, origin_order=origin_order)
        assert dump(dst) == dump(conn)


def test_interleaved_rows_of_both_sessions_converge(tmp_path: Path) -> None:
    """Row by row, the two sessions' lines alternating: the same rows as one session after the other."""
    root = tmp_path / "root"
    write_session(root, S1, 1)
    write_session(root, S2, 2)
    whole = new_db(tmp_path / "whole.db")
    ingest_roots(whole, [root], now=NOW)
    rows = [
        (r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8])
        for r in whole.execute(
            "SELECT idempotency_key, source, event_type, payload_bytes(codec, payload), received_at, session_id,"
            " origin, origin_gen, origin_offset FROM events_raw ORDER BY id"
        )
    ]
    per = {S1: [r for r in rows if r[5] == S1], S2: [r for r in rows if r[5] == S2]}
    inter = new_db(tmp_path / "inter.db")
    for a, b in itertools.zip_longest(per[S2][::-1], per[S1]):
        apply_batch(inter, [NewLogRow(*r) for r in (a, b) if r is not None])
    _check(inter)
    assert dump(inter) == dump(whole)


def _hook(sid: str, name: str, at: str, **body: Any) -> NewLogRow:
    payload = orjson.dumps({"session_id": sid, "hook_event_name": name, **body})
    return NewLogRow(f"h:{sid}:{name}:{at}", "hook", name, payload, at, sid, "hook")


def test_hooks_join_the_agent_of_their_own_session(tmp_path: Path) -> None:
    """Both sessions run a subagent ``a1b2c3d``; only 1111…'s stops. Hooks carry ``session_id`` with
    ``agent_id`` (SPEC §4.2), so the stop completes that session's agent and no other, in any order."""
    agent = "a1b2c3d"
    rows = [
        _hook(S1, "SubagentStart", "2026-02-11T10:00:00.000Z", agent_id=agent, agent_type="Explore"),
        _hook(S2, "SubagentStart", "2026-02-11T10:00:01.000Z", agent_id=agent, agent_type="Plan"),
        _hook(S1, "SubagentStop", "2026-02-11T10:00:02.000Z", agent_id=agent, agent_type="Explore"),
        _hook(S1, "SessionEnd", "2026-02-11T10:00:03.000Z", reason="other"),
        _hook(S2, "SessionEnd", "2026-02-11T10:00:04.000Z", reason="other"),
    ]
    for n, order in enumerate((rows, rows[::-1], rows[2:] + rows[:2])):
        conn = new_db(tmp_path / f"h{n}.db")
        for r in order:
            apply_batch(conn, [r])
        got = conn.execute(
            "SELECT session_id, subagent_type, status, outcome_cause FROM agents WHERE id = ? ORDER BY session_id",
            (agent,),
        ).fetchall()
        assert got == [(S1, "Explore", "completed", None), (S2, "Plan", "error", "terminated_early")]
