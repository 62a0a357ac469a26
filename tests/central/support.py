"""Two hosts from one projects tree: the team-mode test setup (SPEC §13).

``split_hosts`` lays out two projects roots from one source tree: project folders alternate
between host A and host B, and one session is on both (its main transcript's lines are cut in two
at a line where no streamed message straddles the cut: A has the first part, B the rest and the
session's subagent files), as when a session is resumed on another machine.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw
import orjson
import psycopg

from ingestd.central.pg import connect as pg_connect
from ingestd.central.project import project_store
from ingestd.central.ship import ShipResult, ship
from ingestd.ingest.backfill import ingest_roots
from ingestd.store.connection import connect
from ingestd.store.identity import database_identity
from ingestd.store.migrate import migrate
from ingestd.store.payload import decode as decode_payload

NOW = "2026-06-01T00:00:00.000Z"


@dataclass(frozen=True)
class Hosts:
    """The two roots and the session both have."""

    a: Path
    b: Path
    shared: str


def _message_id(line: bytes) -> str | None:
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    msg = obj.get("message") if isinstance(obj, dict) else None
    mid = msg.get("id") if isinstance(msg, dict) else None
    return mid if isinstance(mid, str) else None


def _cut(lines: list[bytes]) -> int:
    """A line index near the middle where the message ids before and after are disjoint."""
    mids = [_message_id(x) for x in lines]
    mid = len(lines) // 2
    for k in sorted(range(1, len(lines)), key=lambda i: abs(i - mid)):
        before = {m for m in mids[:k] if m}
        after = {m for m in mids[k:] if m}
        if before and after and not before & after:
            return k
    raise AssertionError("no clean cut in the shared session's transcript")


def split_hosts(src: Path, dst: Path, *, subagents: bool = False) -> Hosts:
    """Lay out ``dst/a`` and ``dst/b`` from the projects tree ``src``.

    Args:
        subagents: share a session that has subagent files (they stay on its own host, while the
            other host gets the first part of the main transcript, with any ``agent_progress``
            copies of their records: the two hosts then hold evidence of the same messages), or,
            by default, one without (the two hosts' messages are disjoint).
    """
    a, b = dst / "a", dst / "b"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    projects = sorted(p for p in src.iterdir() if p.is_dir())
    for i, p in enumerate(projects):
        shutil.copytree(p, (a if i % 2 == 0 else b) / p.name)
    mains = sorted(
        (f for f in [*b.glob("*/*.jsonl"), *a.glob("*/*.jsonl")] if not f.name.startswith("agent-")),
        key=lambda f: ((f.parent / f.stem).is_dir() != subagents, -f.stat().st_size),
    )
    for f in mains:
        lines = f.read_bytes().splitlines(keepends=True)
        if len(lines) < 4 or not lines[-1].endswith(b"\n"):
            continue
        try:
            k = _cut(lines)
        except AssertionError:
            continue
        here, other = (b, a) if f.is_relative_to(b) else (a, b)
        target = other / f.relative_to(here)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"".join(lines[:k]))
        f.write_bytes(b"".join(lines[k:]))
        return Hosts(a, b, f.stem)
    raise AssertionError(f"no session in {src} can be shared")


def local_db(path: Path, roots: list[Path], host_id: str, now: str = NOW) -> apsw.Connection:
    """A local database with ``host_id`` that ingested ``roots`` (received_at = ``now``: after the
    records were written, or their timestamps are refused)."""
    conn = connect(path)
    migrate(conn)
    ctx = database_identity(conn, hostname=host_id)
    ingest_roots(conn, roots, now=now, ctx=ctx)
    return conn


def ship_all(local: apsw.Connection, url: str, **kw: Any) -> ShipResult:
    """``ingestd ship`` for one host."""
    pg = pg_connect(url)
    try:
        return ship(local, pg, **kw)
    finally:
        pg.close()


def project(url: str) -> None:
    """``ingestd project --store`` once."""
    pg = pg_connect(url)
    try:
        project_store(pg)
    finally:
        pg.close()


def central_log(url: str, host_id: str) -> list[tuple[Any, ...]]:
    """The host's central log rows as (local_id, key, source, event_type, payload, received_at, session_id)."""
    with psycopg.connect(url) as c:
        return [
            (r[0], r[1], r[2], r[3], bytes(r[4]), r[5], r[6])
            for r in c.execute(
                "SELECT local_id, idempotency_key, source, event_type, payload, received_at, session_id"
                " FROM events_raw WHERE host_id = %s ORDER BY local_id",
                (host_id,),
            )
        ]


def local_log(conn: apsw.Connection, through: int | None = None) -> list[tuple[Any, ...]]:
    """The local log rows in ``central_log``'s shape (``id <= through`` when given), payloads decoded:
    the store keeps the bytes as read."""
    return [
        (r[0], r[1], r[2], r[3], decode_payload(conn, r[7], r[4]), r[5], r[6])
        for r in conn.execute(
            "SELECT id, idempotency_key, source, event_type, payload, received_at, session_id, codec FROM events_raw"
            " WHERE id <= ? ORDER BY id",
            (through if through is not None else 1 << 62,),
        )
    ]
