"""``POST /statusline``: the status line's input in, its one line out (SPEC §15).

The command Claude Code's ``statusLine`` runs (``ingestd.statusclient``) posts its stdin here and
prints the answer. The daemon logs the input's snapshot (``ingestd.core.statusline``: an
``events_raw`` row of source ``statusline``, once per distinct snapshot of a session, projected into
``rate_limit_samples``) and answers ``200 text/plain`` with the line (``ingestd.report.statusline``)
whatever happens to the snapshot: an input that is not a snapshot (not JSON, no ``session_id``)
gets a line saying so and stores nothing; a commit that does not finish within
``statusline_timeout_ms`` or fails is logged and the line is drawn from what the database holds.
Query parameters: ``fields`` (comma-separated, ``report.statusline.FIELDS``), ``color`` (``0``:
none), ``columns`` (the width). The body must be ``application/json`` (the browser rule of
``POST /hooks``) and at most ``max_body_bytes``.
"""

from __future__ import annotations

import asyncio
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from ingestd.core import statusline as sl
from ingestd.core.records import NewLogRow
from ingestd.core.storable import storable
from ingestd.core.timefmt import from_epoch_ns
from ingestd.errors import StorageError
from ingestd.http.hooks import JSON, UNSUPPORTED_TYPE, HookConfig, HookWriter, error_response
from ingestd.logs import get_logger
from ingestd.report.statusline import LineFacts, input_facts, line_facts, parse_fields, render
from ingestd.report.window import Zone, resolve_zone
from ingestd.store.connection import connect

log = get_logger("ingestd.http")

PATH = "/statusline"
# The commit's share of the client's budget (its whole round trip is bounded by ``statusclient``).
COMMIT_TIMEOUT_S = 0.25


def snapshot_row(snap: sl.Snapshot, received_ns: int) -> NewLogRow:
    """The ``events_raw`` row of one snapshot (payload: the input's bytes verbatim)."""
    return NewLogRow(
        idempotency_key=sl.snapshot_key(snap),
        source=sl.SOURCE,
        event_type=sl.EVENT_TYPE,
        payload=snap.raw,
        received_at=from_epoch_ns(received_ns),
        session_id=storable(snap.session_id),
        origin=sl.ORIGIN,
        obj=snap.body,
    )


def _facts(db_path: Path, obj: dict[str, Any] | None, now: datetime, zone: Zone) -> LineFacts:
    conn = connect(db_path, readonly=True)
    try:
        return line_facts(conn, obj, now, zone)
    finally:
        conn.close()


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text else None
    except ValueError:
        return None


def add_statusline_route(app: web.Application, writer: HookWriter, cfg: HookConfig, db_path: Path) -> None:
    """Register ``POST /statusline`` on ``app``, committing through ``writer`` and reading ``db_path``."""
    zone = resolve_zone(None, os.environ)

    async def post_statusline(request: web.Request) -> web.Response:
        received_ns = time.time_ns()
        if "Content-Type" not in request.headers or request.content_type != JSON:
            return error_response(*UNSUPPORTED_TYPE)
        if request.content_length is not None and request.content_length > cfg.max_body_bytes:
            return error_response(413, "body_too_large", f"the body is over {cfg.max_body_bytes} bytes")
        try:
            async with asyncio.timeout(cfg.body_timeout_ms / 1000):
                body = await request.read()
        except (TimeoutError, web.HTTPRequestEntityTooLarge):
            return error_response(408, "body_timeout", "the body did not arrive in time")
        q = request.query
        now = datetime.now(UTC)
        snap = sl.parse_input(body) if len(body) <= cfg.max_body_bytes else sl.NotASnapshot("too_large", "")
        prefix = ""
        obj: dict[str, Any] | None = None
        if isinstance(snap, sl.Snapshot):
            obj = snap.body
            try:
                await writer.submit([snapshot_row(snap, received_ns)], COMMIT_TIMEOUT_S)
            except (TimeoutError, StorageError) as e:
                log.warning("statusline_not_stored", error=str(e) or type(e).__name__)
        else:
            log.warning("statusline_rejected", reason=snap.reason)
            prefix = f"ingestd: {snap.reason.replace('_', ' ')}"
        loop = asyncio.get_running_loop()
        try:
            facts = await loop.run_in_executor(None, _facts, db_path, obj, now, zone)
        except StorageError as e:
            log.warning("statusline_read_failed", error=str(e))
            facts = input_facts(obj, now)
        line = render(
            facts,
            fields=parse_fields(q.get("fields")),
            color=q.get("color", "1") != "0",
            columns=_int(q.get("columns")),
            now=now,
            zone=zone,
            prefix=prefix,
        )
        return web.Response(text=line, content_type="text/plain")

    app.router.add_post(PATH, post_statusline)
