"""The read API (SPEC §10): the same documents as the CLI's ``--json``, over HTTP.

Routes (``add_api_routes``):

- ``GET /api/health``: ``{"status": "ok", "schema_version", "now"}``, or 503 in the error shape with
  every reason (``ingestd.http.health``, one vocabulary): the database not writable (read-only
  file, directory or file system; the last write refused), ``PRAGMA quick_check`` failed at start,
  the writer or the tailer stalled (a unit of work running too long, or retrying a transient
  refusal) or failing (503 ``unhealthy``)
- ``GET /api/sessions?since&until&project&limit&tz``: as ``ingestd sessions --json``; the live view
  narrows it over every session with ``search`` (id prefix or title), ``project_is`` (one project
  exactly, as ``/api/projects`` names it) and ``status`` (``ingestd.report.sessions.Narrow``)
- ``GET /api/projects``: every project with sessions (the live view's project menu)
- ``GET /api/sessions/{id}/tree``: as ``ingestd tree ID --json`` (a unique prefix is enough)
- ``GET /api/sessions/{id}/timeline``: the session's tool calls and compactions
  (``ingestd.report.timeline``; the live view's timeline)
- ``GET /api/cost?by&since&until&tz``: as ``ingestd cost --json`` (from the rollup)
- ``GET /api/status``: as ``ingestd status --json`` (without stat-ing transcript files)
- ``GET /api/blocks?active&since&until&tz``: as ``ingestd blocks --json`` (``active=1``: ``--active``)
- ``GET /api/limits?tz``: as ``ingestd limits --json`` (the live view's limits panel)
- ``GET /api/search?q&kind&project&session&since&until&sort&limit&fts&tz``: as ``ingestd search
  --json`` (``kind`` repeatable; ``fts=1`` reads ``q`` as FTS5 syntax)
- ``GET /api/openapi.json``: the OpenAPI description shipped in ``ingestd/http/openapi.json``
- ``GET /metrics``: the Prometheus text format from the rollups (``ingestd.http.metrics``); 503
  ``unavailable`` with the reason while migrations are pending or the projections are stale

Reads never touch the writer's connection: each request opens its own read-only connection in a
worker thread (``run_in_executor``), so the event loop never waits on SQLite. Errors use the one JSON
shape ``{"error": {"status", "code", "message"}}``: 400 for a bad parameter or an ambiguous session
prefix, 404 for no such session, 503 when the database cannot be read. The Host/Origin rules and the
token rule are the app's middlewares (``ingestd.http.guard``, ``ingestd.http.app``), not this module's.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from ingestd import deepjson
from ingestd.core.timefmt import format_utc
from ingestd.errors import ConfigError, IngestdError, InputError, StorageError
from ingestd.http.health import Health
from ingestd.http.hooks import error_response
from ingestd.http.metrics import CONTENT_TYPE as METRICS_TYPE
from ingestd.http.metrics import Unavailable, exposition
from ingestd.report.blocks import blocks_report
from ingestd.report.cost import GROUPINGS, check_by, cost_report
from ingestd.report.limits import limits_report
from ingestd.report.prompts import prompts_report
from ingestd.report.search import DEFAULT_LIMIT as SEARCH_LIMIT
from ingestd.report.search import search_report
from ingestd.report.sessions import SORTS, STATUSES, Narrow, projects_report, sessions_report
from ingestd.report.status import status_report
from ingestd.report.timeline import timeline_report
from ingestd.report.tree import tree_report
from ingestd.report.window import API_NAMES, make_window, resolve_zone
from ingestd.settings import number_text
from ingestd.store.connection import Db, connect, scalar

OPENAPI_PATH = Path(__file__).resolve().parent / "openapi.json"
READ_DB = web.AppKey("read_db_path", Path)
HEALTH = web.AppKey("health", Health)


def _read(db_path: Path, fn: Callable[[Db], dict[str, Any]]) -> dict[str, Any]:
    conn = connect(db_path, readonly=True)
    try:
        return fn(conn)
    finally:
        conn.close()


def _json(doc: Any) -> web.Response:
    return web.Response(body=deepjson.dumps(doc), content_type="application/json")  # a tree nests deep


def _error(e: IngestdError) -> web.Response:
    if isinstance(e, StorageError):
        return error_response(503, "database_unavailable", e.message)
    reason = str(e.context.get("reason") or "")
    if reason == "not_found":
        return error_response(404, "not_found", e.message)
    if reason == "empty":
        return error_response(400, "bad_parameter", e.message)
    if isinstance(e, ConfigError | InputError):
        return error_response(400, reason or "bad_parameter", e.message)
    return error_response(500, "error", e.message)


def _limit(q: Mapping[str, str]) -> int | None:
    raw = q.get("limit")
    if raw is None or raw == "":
        return None
    try:
        n = int(number_text(raw))  # ASCII digits: int() also took "1_0" and other scripts' digits
    except ValueError:
        raise InputError(f"limit must be a whole number, not {raw!r}") from None
    if n < 1:
        raise InputError("limit must be at least 1")
    return n


_FLAGS = {"": False, "0": False, "false": False, "1": True, "true": True}


def _flag(q: Mapping[str, str], name: str) -> bool:
    """A yes/no query parameter: ``1`` / ``true``, ``0`` / ``false`` or absent. Raises InputError
    for any other value (a typo must not quietly mean no)."""
    raw = q.get(name, "")
    if raw not in _FLAGS:
        raise InputError(f"{name} must be 1 or 0 (true or false), not {raw!r}")
    return _FLAGS[raw]


async def _run(request: web.Request, build: Callable[[Db], dict[str, Any]]) -> web.Response:
    db_path = request.app[READ_DB]
    try:
        doc = await asyncio.get_running_loop().run_in_executor(None, _read, db_path, build)
    except IngestdError as e:
        return _error(e)
    return _json(doc)


def _window_and_zone(q: Mapping[str, str]) -> tuple[Any, Any]:
    zone = resolve_zone(q.get("tz") or None, os.environ)
    window = make_window(q.get("since") or None, q.get("until") or None, zone, datetime.now(UTC), names=API_NAMES)
    return window, zone


def not_writable(db_path: Path) -> str | None:
    """Why the database cannot be written (the file, its directory or the file system), or None. Reads only.

    ``os.access`` answers for the effective user; the file system's read-only flag answers for root too.
    """
    real = Path(os.path.realpath(db_path))
    try:
        if os.statvfs(real.parent).f_flag & os.ST_RDONLY:
            return f"{real.parent} is on a read-only file system"
    except OSError as e:
        return f"{real.parent}: {e.strerror}"
    for p in (real, real.parent):
        if p.exists() and not os.access(p, os.W_OK, effective_ids=os.access in os.supports_effective_ids):
            return f"{p} is not writable"
    return None


async def health(request: web.Request) -> web.Response:
    """``GET /api/health``: 200 ``{"status": "ok", ...}``, or 503 naming every problem."""
    state = request.app.get(HEALTH)
    db_path = request.app[READ_DB]
    reasons = [] if state is None else state.problems()
    unwritable = await asyncio.get_running_loop().run_in_executor(None, not_writable, db_path)
    if unwritable is not None:
        reasons.insert(0, f"database not writable: {unwritable}")
    if reasons:
        return error_response(503, "unhealthy", "; ".join(reasons))

    def build(conn: Db) -> dict[str, Any]:
        version = scalar(conn, "SELECT max(id) FROM schema_version")
        return {"status": "ok", "schema_version": version, "now": format_utc(datetime.now(UTC))}

    return await _run(request, build)


async def sessions(request: web.Request) -> web.Response:
    """``GET /api/sessions``."""
    q = request.query
    try:
        window, _ = _window_and_zone(q)
        limit = _limit(q)
    except IngestdError as e:
        return _error(e)
    project = q.get("project") or None
    status = q.get("status") or None
    if status is not None and status not in STATUSES:
        return error_response(400, "bad_parameter", f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    narrow = Narrow(
        search=q.get("search", "").strip() or None,
        project_is=q.get("project_is") or None,
        status=status,
    )
    sort = q.get("sort") or "last_activity"
    if sort not in SORTS:
        return error_response(400, "bad_parameter", f"sort must be one of {', '.join(SORTS)}, not {sort!r}")
    return await _run(
        request, lambda c: sessions_report(c, window=window, project=project, limit=limit, narrow=narrow, sort=sort)
    )


async def projects(request: web.Request) -> web.Response:
    """``GET /api/projects``."""
    return await _run(request, projects_report)


TREE_BY = ("agent", "prompt")
"""How ``GET /api/sessions/{id}/tree?by=`` groups a session's work (``ingestd tree --by``)."""


async def tree(request: web.Request) -> web.Response:
    """``GET /api/sessions/{id}/tree`` (``?by=prompt``: the work grouped by prompt)."""
    session = request.match_info["id"]
    by = request.query.get("by") or "agent"
    if by not in TREE_BY:
        return _error(InputError(f"by must be one of {', '.join(TREE_BY)}, not {by!r}"))
    if by == "prompt":
        return await _run(request, lambda c: prompts_report(c, session))
    return await _run(request, lambda c: tree_report(c, session))


async def timeline(request: web.Request) -> web.Response:
    """``GET /api/sessions/{id}/timeline``."""
    session = request.match_info["id"]
    return await _run(request, lambda c: timeline_report(c, session))


async def cost(request: web.Request) -> web.Response:
    """``GET /api/cost``."""
    q = request.query
    by = q.get("by") or None
    try:
        check_by(by)
    except ValueError:
        choices = ", ".join(GROUPINGS)
        msg = f"by must be one of {choices}, or two joined by a comma, not {by!r}"
        return error_response(400, "bad_parameter", msg)
    try:
        window, zone = _window_and_zone(q)
    except IngestdError as e:
        return _error(e)
    return await _run(request, lambda c: cost_report(c, by=by, window=window, zone=zone))


async def search(request: web.Request) -> web.Response:
    """``GET /api/search``: 400 for an empty or unparsable query or a bad parameter."""
    q = request.query
    try:
        window, _ = _window_and_zone(q)
        limit = _limit(q) or SEARCH_LIMIT
        fts = _flag(q, "fts")
    except IngestdError as e:
        return _error(e)
    kinds = tuple(k for k in q.getall("kind", []) if k)
    text = q.get("q", "")
    return await _run(
        request,
        lambda c: search_report(
            c,
            text,
            window=window,
            kinds=kinds,
            project=q.get("project") or None,
            session=q.get("session") or None,
            limit=limit,
            sort=q.get("sort") or "rank",
            fts=fts,
        ),
    )


async def blocks(request: web.Request) -> web.Response:
    """``GET /api/blocks``."""
    q = request.query
    try:
        window, zone = _window_and_zone(q)
        active = _flag(q, "active")
    except IngestdError as e:
        return _error(e)
    now = datetime.now(UTC)
    return await _run(request, lambda c: blocks_report(c, now=now, zone=zone, window=window, active_only=active))


async def limits(request: web.Request) -> web.Response:
    """``GET /api/limits``."""
    try:
        zone = resolve_zone(request.query.get("tz") or None, os.environ)
    except IngestdError as e:
        return _error(e)
    now = datetime.now(UTC)
    return await _run(request, lambda c: limits_report(c, now=now, zone=zone))


async def status(request: web.Request) -> web.Response:
    """``GET /api/status``."""
    db_path = request.app[READ_DB]
    now = datetime.now(UTC)
    # in the daemon's process: its parts retrying a transient refusal are listed too
    health_state = request.app.get(HEALTH)
    stalls = [] if health_state is None else health_state.stalls()

    describe = request.app[DAEMON_STATE]

    def build(c: Db) -> dict[str, Any]:
        # on the worker thread, like the database reads: the state file is a file read too
        daemon = None if describe is None else describe(now)
        return {**status_report(c, now=now, db_path=db_path, daemon=daemon), "stalls": stalls}

    return await _run(request, build)


OPENAPI = web.AppKey("openapi", bytes)
DAEMON_STATE: web.AppKey[Callable[[datetime], dict[str, Any]] | None] = web.AppKey("daemon_state")


async def openapi(request: web.Request) -> web.Response:
    """``GET /api/openapi.json``: the shipped description, read once when the routes are added."""
    return web.Response(body=request.app[OPENAPI], content_type="application/json")


def _exposition(db_path: Path) -> bytes:
    conn = connect(db_path, readonly=True)
    try:
        return exposition(conn, str(db_path))
    finally:
        conn.close()


async def metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: read at scrape time, in a worker thread."""
    try:
        body = await asyncio.get_running_loop().run_in_executor(None, _exposition, request.app[READ_DB])
    except Unavailable as e:
        return error_response(503, "unavailable", e.reason)
    except IngestdError as e:
        return _error(e)
    return web.Response(body=body, headers={"Content-Type": METRICS_TYPE})


def add_api_routes(
    app: web.Application,
    db_path: str | os.PathLike[str],
    daemon_state: Callable[[datetime], dict[str, Any]] | None = None,
) -> None:
    """Register the read API on ``app``; each request reads ``db_path`` through its own read-only connection.

    Args:
        app: the daemon's application (its middlewares apply: the token rule, the error shape).
        db_path: the database file the writer writes.
        daemon_state: the daemon describing itself at a given time (``/api/status``'s ``daemon``;
            None: null).
    """
    app[READ_DB] = Path(db_path)
    app[DAEMON_STATE] = daemon_state
    app[OPENAPI] = OPENAPI_PATH.read_bytes()
    app.router.add_get("/api/health", health)
    app.router.add_get("/api/sessions", sessions)
    app.router.add_get("/api/projects", projects)
    app.router.add_get("/api/sessions/{id}/tree", tree)
    app.router.add_get("/api/sessions/{id}/timeline", timeline)
    app.router.add_get("/api/cost", cost)
    app.router.add_get("/api/status", status)
    app.router.add_get("/api/blocks", blocks)
    app.router.add_get("/api/limits", limits)
    app.router.add_get("/api/search", search)
    app.router.add_get("/api/openapi.json", openapi)
    app.router.add_get("/metrics", metrics)
