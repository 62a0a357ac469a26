"""Two sessions producing the same agent id (SPEC §4.2 ``agents.id`` is the primary key).

Agent ids were 7 hex characters in 2.0.76-2.1.42 (FORMATS.md §0, e.g. ``a2898e3`` in
``corpus/claude-projects/-home-user-projects-spotter/4d5611e5-…/subagents/``), so two sessions
can each have a ``subagents/agent-<id>.jsonl`` with the same id. The rule (``writer.UPSERT_AGENT``):
the session that saw the agent first keeps the row (ties: the smaller session id), whatever order
the sessions are ingested in, and the collision is logged.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.framing import Framer
from ingestd.core.keys import short_hash
from ingestd.core.project import fold
from ingestd.core.records import NewLogRow, line_row, path_info
from ingestd.core.touch import Ctx
from ingestd.ingest.rebuild import rebuild_projections
from ingestd.store.writer import apply_batch
from tests.core.projector_support import Model
from tests.ingest.support import dump, new_db

EARLY = "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
LATE = "00000000-bbbb-4bbb-8bbb-bbbbbbbbbbbb"  # smaller id, but its agent ran later
AGENT = "a1b2c3d"


def _file(sid: str, origin: str, recs: list[dict[str, Any]]) -> list[NewLogRow]:
    data = b"".join(orjson.dumps({"sessionId": sid, **r}) + b"\n" for r in recs)
    oh = short_hash(origin.encode())
    return [
        line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at="2026-03-01T00:00:00.000Z", path_session=sid)
        for ln in Framer(0).feed(data)
    ]


def _session(sid: str, day: str) -> list[NewLogRow]:
    ts = f"2026-02-{day}T10:00:0"
    main = _file(
        sid,
        f"-p/{sid}.jsonl",
        [
            {"type": "user", "uuid": f"{sid}-u", "timestamp": ts + "0.000Z", "message": {"content": "go"}},
            {
                "type": "assistant",
                "uuid": f"{sid}-a",
                "timestamp": ts + "1.000Z",
                "message": {
                    "id": f"msg_{sid}",
                    "model": "m",
                    "content": [{"type": "tool_use", "id": f"tu_{sid}", "name": "Task", "input": {"prompt": "p"}}],
                },
            },
        ],
    )
    sub = _file(
        sid,
        f"-p/{sid}/subagents/agent-{AGENT}.jsonl",
        [
            {"type": "user", "agentId": AGENT, "isSidechain": True, "timestamp": ts + "2.000Z", "parentUuid": None},
            {"type": "assistant", "agentId": AGENT, "isSidechain": True, "timestamp": ts + "3.000Z"},
        ],
    )
    return main + sub


ROWS = {EARLY: _session(EARLY, "10"), LATE: _session(LATE, "20")}


def test_first_session_keeps_the_agent_in_every_ingest_order(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    dumps = []
    for n, order in enumerate(itertools.permutations([EARLY, LATE])):
        conn = new_db(tmp_path / f"o{n}.db")
        capfd.readouterr()
        for sid in order:
            for r in ROWS[sid]:
                apply_batch(conn, [r])
        assert conn.execute("SELECT session_id FROM agents WHERE id = ?", (AGENT,)).fetchall() == [(EARLY,)]
        out = capfd.readouterr().err  # logs go to stderr, never stdout
        events = [orjson.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert any(e["event"] == "agent_id_collision" and e["kept_session"] == EARLY for e in events), out
        dumps.append(dump(conn))
        # replay from the log alone agrees, in both file orders
        for origin_order in ("origin", "reverse"):
            dst = new_db(tmp_path / f"r{n}{origin_order}.db")
            rebuild_projections(conn, dst, batch_size=1, origin_order=origin_order)
            assert dump(dst)["agents"] == dumps[-1]["agents"]
    assert dumps[0] == dumps[1]


def test_interleaved_rows_converge(tmp_path: Path) -> None:
    conn = new_db(tmp_path / "x.db")
    for a, b in itertools.zip_longest(ROWS[LATE][::-1], ROWS[EARLY]):
        apply_batch(conn, [r for r in (a, b) if r is not None])
    row = conn.execute("SELECT session_id, first_seen_at FROM agents WHERE id = ?", (AGENT,)).fetchall()
    assert row == [(EARLY, "2026-02-10T10:00:02.000Z")]


def test_projector_model_same_rule() -> None:
    got = []
    for order in ([EARLY, LATE], [LATE, EARLY]):
        m = Model()
        for sid in order:
            rows = [_as_log(i, x) for i, x in enumerate(ROWS[sid], start=1 if sid == EARLY else 100)]
            m.apply(fold(None, sid, rows, Ctx())[1])
        got.append(m.tables["agents"][AGENT])
    assert got[0] == got[1] and got[0][1] == EARLY


def _as_log(i: int, r: NewLogRow) -> Any:
    from ingestd.core.records import LogRow

    assert path_info(r.origin).project_slug == "-p"
    return LogRow(i, r.source, r.event_type, r.payload, r.received_at, r.session_id, r.origin, 0, r.origin_offset)
