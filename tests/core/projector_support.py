"""Helpers for the projector tests: fixture trees as log rows, and the projection tables they make
(the real migrations and write path on an in-memory SQLite, ``Model``)."""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import apsw
import orjson

from ingestd.core.derive import Changes
from ingestd.core.framing import split_lines
from ingestd.core.keys import short_hash
from ingestd.core.records import LogRow, line_row, path_info
from ingestd.store import titles
from ingestd.store import writer as sw
from ingestd.store.migrate import migrate

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


# The projection tables the projector writes: (name in ``Model.tables``, the writer's statement, the
# key the table's unique constraint names, as positions in the statement's columns).
_TABLES: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("sessions", sw.UPSERT_SESSION, (0,)),
    ("agents", sw.UPSERT_AGENT, (1, 0)),  # an agent is (session_id, id): SPEC §4.2
    ("edges", sw.UPSERT_EDGE, (1, 3)),
    ("tokens", sw.UPSERT_TOKENS, (3, 5)),
    ("tools", sw.UPSERT_TOOL, (0, 1)),
    ("compactions", sw.UPSERT_COMPACTION, (0, 1)),
    ("events", sw.INSERT_EVENT, (0,)),
    ("summaries", titles.UPSERT_SUMMARY, (0, 1, 2)),
)


def written_columns(sql: str) -> tuple[str, list[str]]:
    """The table and the columns an ``INSERT`` binds, in the order of the row it is given.

    A column bound to a parameter already used (``?5`` twice: the agents' ``evidence_status``
    starts as their ``status``) is not a field of the row, so it is left out.
    """
    m = re.search(r"INSERT INTO (\w+) \(([^)]*)\) VALUES \(([^)]*)\)", sql)
    assert m is not None, sql
    cols = [c.strip() for c in m.group(2).split(",")]
    params = [p.strip() for p in m.group(3).split(",")]
    seen: set[str] = set()
    out = []
    for c, p in zip(cols, params, strict=True):
        if p == "?" or p not in seen:
            out.append(c)
        seen.add(p)
    return m.group(1), out


def _template() -> bytes:
    conn = apsw.Connection(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    migrate(conn)
    data = conn.serialize("main")
    conn.close()
    return data


_TEMPLATE = _template()
# ``token_usage.id`` is a rowid the projector leaves to SQLite (``None``): read back as such.
_ASSIGNED = {("token_usage", "id"): "NULL"}
# (name, SELECT in the writer's column order, unique key, the row type: a namedtuple of the columns,
# so a test reads ``row.status`` or ``row[4]`` alike, and a row equals the projector's own row)
_READ = [
    (
        name,
        f"SELECT {', '.join(_ASSIGNED.get((table, c), c) for c in cols)} FROM {table}",
        key,
        collections.namedtuple(f"{table}_row", cols),  # type: ignore[misc]
    )
    for name, sql, key in _TABLES
    for table, cols in [written_columns(sql)]
]


class Model:
    """The projection tables of an in-memory SQLite database with the real migrations, written by
    the real ``write_changes``, read back as dicts: table -> {unique key: row}.

    Rows are namedtuples of the table's columns in the order of the projector's rows (the writer's
    column order), so a test compares them with what ``fold`` returned and reads fields by name.
    Each ``apply`` is one transaction, as in ``apply_batch``; a constraint or trigger that refuses a
    row fails the test.
    """

    def __init__(self) -> None:
        self.conn = apsw.Connection(":memory:")
        self.conn.deserialize("main", _TEMPLATE)
        self.conn.execute("PRAGMA foreign_keys = ON")

    def apply(self, ch: Changes) -> None:
        with self.conn:
            sw.write_changes(self.conn, ch)

    @property
    def tables(self) -> dict[str, dict[Any, tuple[Any, ...]]]:
        """Every projection table read back, keyed by its unique key."""
        out: dict[str, dict[Any, tuple[Any, ...]]] = {}
        for name, select, key, row in _READ:
            rows = [row(*r) for r in self.conn.execute(select)]
            out[name] = {(r[key[0]] if len(key) == 1 else tuple(r[i] for i in key)): r for r in rows}
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
            out[r[5]] = out.get(r[5], 0) + r[6]
        return out
