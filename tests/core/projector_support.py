"""Helpers for the projector tests: fixture trees as log rows, and the projection tables they make
(the real migrations and write path on an in-memory SQLite, ``Model``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from ingestd.core import rows
from ingestd.core.derive import BUCKETS, Changes
from ingestd.core.framing import split_lines
from ingestd.core.keys import short_hash
from ingestd.core.records import LogRow, line_row, path_info
from ingestd.store.connection import Db
from ingestd.store.migrate import migrate
from ingestd.store.upsert import write_changes

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "projects"
READ_AT = "2026-03-01T00:00:00.000Z"


def tree_rows(root: Path = FIXTURES) -> list[LogRow]:
    """Every line of every transcript under ``root`` as log rows (ids in discovery order)."""
    rows: list[LogRow] = []
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        origin = path.relative_to(root).as_posix()
        data = path.read_bytes()
        pi = path_info(origin)
        if origin.endswith(".meta.json"):
            rows.append(LogRow(len(rows) + 1, "jsonl", "meta", data, READ_AT, pi.session_id, origin, 0, 0))
            continue
        lines, _ = split_lines(data)
        oh = short_hash(origin.encode())
        for ln in lines:
            r = line_row(ln, origin=origin, origin_hash=oh, gen=0, received_at=READ_AT, path_session=pi.session_id)
            rows.append(
                LogRow(
                    len(rows) + 1, r.source, r.event_type, r.payload, r.received_at, r.session_id, origin, 0, ln.offset
                )
            )
    return rows


def hook_row(sid: str, row_id: int, name: str, received_at: str, **body: object) -> LogRow:
    """A hook delivery of session ``sid`` as log row ``row_id``: the body is ``{"session_id": sid,
    "hook_event_name": name, **body}``, received at ``received_at`` (UTC, ISO 8601 with ms)."""
    payload = orjson.dumps({"session_id": sid, "hook_event_name": name, **body})
    return LogRow(row_id, "hook", name, payload, received_at, sid, "hook")


def by_session(rows: Iterable[LogRow]) -> dict[str, list[LogRow]]:
    """Rows grouped by session (rows without one dropped)."""
    out: dict[str, list[LogRow]] = {}
    for r in rows:
        if r.session_id is not None:
            out.setdefault(r.session_id, []).append(r)
    return out


# The projection tables the projector writes: (name in ``Model.tables``, the table, its row type in
# ``ingestd.core.rows`` (whose fields are the columns written, in order), the unique key's columns).
_TABLES: tuple[tuple[str, str, Any, tuple[str, ...]], ...] = (
    ("sessions", "sessions", rows.SessionRow, ("id",)),
    ("agents", "agents", rows.AgentRow, ("session_id", "id")),  # an agent is (session_id, id): SPEC §4.2
    ("edges", "orchestration_edges", rows.EdgeRow, ("session_id", "child_agent_id")),
    ("tokens", "token_usage", rows.TokenUsageRow, ("message_id",)),
    ("tools", "tool_calls", rows.ToolCallRow, ("session_id", "tool_use_id")),
    ("compactions", "compactions", rows.CompactionRow, ("session_id", "boundary_id")),
    ("tasks", "tasks", rows.TaskRow, ("session_id", "task_id")),
    ("prompts", "prompts", rows.PromptRow, ("session_id", "prompt_id")),
    ("cc_model_usage", "cc_model_usage", rows.CcModelUsageRow, ("session_id", "model")),
    ("events", "events", rows.EventRow, ("raw_event_id",)),
    ("summaries", "summaries", rows.SummaryRow, ("origin", "origin_gen", "origin_offset")),
)


def _template() -> bytes:
    conn = Db(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    migrate(conn)
    data = conn.serialize("main")
    conn.close()
    return data


_TEMPLATE = _template()
# ``token_usage.id`` is a rowid the projector leaves to SQLite (``None``): read back as such.
_ASSIGNED = {("token_usage", "id"): "NULL"}
# (name, SELECT of the row type's fields, row type, positions of the key's fields)
_READ = [
    (
        name,
        f"SELECT {', '.join(_ASSIGNED.get((table, c), c) for c in row._fields)} FROM {table}",
        row,
        tuple(row._fields.index(k) for k in key),
    )
    for name, table, row, key in _TABLES
]


class Model:
    """The projection tables of an in-memory SQLite database with the real migrations, written by
    the real ``write_changes``, read back as dicts: table -> {unique key: row}.

    Rows are the projector's own row types (``ingestd.core.rows``) read back from the table, so a
    test compares them with what ``fold`` returned and reads fields by name.
    Each ``apply`` is one transaction, as in ``apply_batch``; a constraint or trigger that refuses a
    row fails the test.
    """

    def __init__(self) -> None:
        self.conn = Db(":memory:")
        self.conn.deserialize("main", _TEMPLATE)
        self.conn.execute("PRAGMA foreign_keys = ON")

    def apply(self, ch: Changes) -> None:
        with self.conn:
            write_changes(self.conn, ch)

    @property
    def tables(self) -> dict[str, dict[Any, tuple[Any, ...]]]:
        """Every projection table read back, keyed by its unique key."""
        out: dict[str, dict[Any, tuple[Any, ...]]] = {}
        for name, select, row, key in _READ:
            got = [row(*r) for r in self.conn.execute(select)]
            out[name] = {(r[key[0]] if len(key) == 1 else tuple(r[i] for i in key)): r for r in got}
        return out

    def agent(self, aid: str, sid: str | None = None) -> tuple[Any, ...]:
        """The agent row ``aid`` (of session ``sid``; without one, the only session having that id)."""
        rows = [r for (s, a), r in self.tables["agents"].items() if a == aid and (sid is None or s == sid)]
        assert len(rows) == 1, f"agent {aid!r}: {len(rows)} rows"
        return rows[0]

    def agents_by_id(self) -> dict[str, tuple[Any, ...]]:
        """Agent rows by id, for inputs where no two sessions share an agent id (asserted)."""
        agents = self.tables["agents"]
        out = {a: r for (_, a), r in agents.items()}
        assert len(out) == len(agents), "two sessions share an agent id"
        return out

    def totals(self) -> dict[str, int]:
        """Tokens per bucket over the whole ``token_usage`` table."""
        out: dict[str, int] = {}
        for r in self.tables["tokens"].values():
            for b in BUCKETS:
                out[b] = out.get(b, 0) + getattr(r, b)
        return out
