"""Helpers for the projector tests: fixture trees as log rows, and an in-memory upsert model."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ingestd.core.derive import Changes
from ingestd.core.framing import split_lines
from ingestd.core.keys import short_hash
from ingestd.core.records import LogRow, line_row, path_info

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


def by_session(rows: Iterable[LogRow]) -> dict[str, list[LogRow]]:
    """Rows grouped by session (rows without one dropped)."""
    out: dict[str, list[LogRow]] = {}
    for r in rows:
        if r.session_id is not None:
            out.setdefault(r.session_id, []).append(r)
    return out


class Model:
    """The projection tables as dicts, upserted like ``ingestd.store.writer`` does."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[Any, tuple[Any, ...]]] = {
            k: {} for k in ("sessions", "agents", "edges", "tokens", "tools", "compactions", "events", "summaries")
        }

    def apply(self, ch: Changes) -> None:
        t = self.tables
        for r in ch.sessions:
            t["sessions"][r[0]] = r
        for key in ch.retracted_agents:
            t["agents"].pop(key, None)
            t["edges"].pop(key, None)
        for r in ch.agents:
            t["agents"][(r[1], r[0])] = r  # an agent is (session_id, id): SPEC §4.2
        for r in ch.edges:
            t["edges"][(r[1], r[3])] = r
        for r in ch.token_usage:
            key = (r[3], r[5])
            old = t["tokens"].get(key)
            if old is None or _better(r, old):
                t["tokens"][key] = r
        for r in ch.tool_calls:
            t["tools"][(r[0], r[1])] = r
        for r in ch.compactions:
            t["compactions"][(r[0], r[1])] = r
        for r in ch.events:
            t["events"].setdefault(r[0], r)
        for r in ch.summaries:
            t["summaries"][(r[0], r[1], r[2])] = r

    def agent(self, aid: str, sid: str | None = None) -> tuple[Any, ...]:
        """The agent row ``aid`` (of session ``sid``; without one, the only session having that id)."""
        rows = [r for (s, a), r in self.tables["agents"].items() if a == aid and (sid is None or s == sid)]
        assert len(rows) == 1, f"agent {aid!r}: {len(rows)} rows"
        return rows[0]

    def agents_by_id(self) -> dict[str, tuple[Any, ...]]:
        """Agent rows by id, for inputs where no two sessions share an agent id (asserted)."""
        out = {a: r for (_, a), r in self.tables["agents"].items()}
        assert len(out) == len(self.tables["agents"]), "two sessions share an agent id"
        return out

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.tables["tokens"].values():
            out[r[5]] = out.get(r[5], 0) + r[6]
        return out


def _better(new: tuple[Any, ...], old: tuple[Any, ...]) -> bool:
    if new[9] != old[9]:
        return bool(new[9] > old[9])
    if new[8] != old[8]:
        return bool(new[8] < old[8])
    return bool(new[1] <= old[1])
