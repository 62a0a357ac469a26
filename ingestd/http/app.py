"""The HTTP app (``make_app``): the routes and their one middleware, around what it is handed.

``make_app`` wires the hook receiver (``ingestd.http.hooks``), the status line's endpoint
(``ingestd.http.statusline``) and the OTLP receiver (``ingestd.http.otlp``) to the writer it is
handed, the read
API (``ingestd.http.api``) and the live view (``ingestd.http.web``: the page; ``ingestd.http.live``:
its event stream). It starts no work of its own but the live view's feed: the daemon's background
work (writer, tailer, watchdog, jobs) is handed in by the composition root,
``ingestd.daemon.root``, and started before the feed in ``cleanup_ctx``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from aiohttp import web

from ingestd.http import auth, guard
from ingestd.http.api import HEALTH, add_api_routes
from ingestd.http.conns import ConnectionGuard
from ingestd.http.health import Health
from ingestd.http.hooks import Budget, HookConfig, HookWriter, Receipts, error_response, make_handler
from ingestd.http.live import add_live_routes
from ingestd.http.otlp import add_otlp_routes
from ingestd.http.statusline import add_statusline_route
from ingestd.http.web import add_page_routes
from ingestd.logs import get_logger

log = get_logger("ingestd.serve")

HOOK_PATHS = ("/hooks", "/hook")

# Background work the app starts and stops with itself (aiohttp ``cleanup_ctx``).
Ctx = Callable[[web.Application], AsyncIterator[None]]


def _shaped(e: web.HTTPException) -> web.Response:
    """An aiohttp error (404, 405, ...) in the one JSON error shape."""
    code = (e.reason or "error").lower().replace(" ", "_")
    resp = error_response(e.status, code, e.reason or "error")
    if "Allow" in e.headers:  # a 405 says which methods the path takes (RFC 9110 §15.5.6)
        resp.headers["Allow"] = e.headers["Allow"]
    return resp


def _front(policy: guard.WebPolicy, token: str | None, conns: ConnectionGuard | None) -> Any:
    """The app's one middleware (one layer around every route, the hooks' included), in this order:
    the connection guard's request tracking (when ``conns`` is given: ``serve``); the Host and
    Origin rules (``ingestd.http.guard``: 421, 403); the token (when one is configured: 401); every
    aiohttp error the handler raises (404, 405, ...) in the one JSON error shape.
    """
    refusal = guard.checker(policy)
    started = conns.started if conns is not None else None
    finished = conns.finished if conns is not None else None

    @web.middleware
    async def front(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
        transport = request.transport
        if started is not None:
            started(transport)
        try:
            refused = refusal(request)
            if refused is not None:
                return refused
            if token is not None and not auth.token_ok(token, auth.presented_token(request.headers)):
                log.warning("request_rejected", status=401, reason="unauthorized", path=request.path)
                return error_response(401, "unauthorized", "missing or wrong token")
            resp: web.StreamResponse = await handler(request)
            return resp
        except web.HTTPException as e:
            if e.status < 400:
                raise
            return _shaped(e)
        except Exception:
            # a fault of ours on some input: the client still gets the one error shape (never
            # aiohttp's text page), and the log the traceback to find it by
            log.exception("request_failed", method=request.method, path=request.path)
            return error_response(500, "internal_error", "the daemon failed on this request; its log has the reason")
        finally:
            if finished is not None:
                finished(transport)

    return front


def make_app(
    *,
    policy: guard.WebPolicy,
    token: str | None,
    hooks: HookConfig,
    writer: HookWriter,
    health: Health,
    db_path: Path,
    daemon_state: Callable[[datetime], dict[str, Any]] | None = None,
    background: Sequence[Ctx] = (),
    conns: ConnectionGuard | None = None,
    clock: Callable[[], int] = time.time_ns,
    budget: Budget | None = None,
) -> web.Application:
    """The application over what it is handed; ``background`` starts when it starts.

    Args:
        policy: the Host and Origin rules (``guard.make_policy``).
        token: the bearer token every request must present (None: none).
        hooks: the receiver's limits.
        writer: where hook deliveries are committed.
        health: the state ``/api/health`` and ``/api/status`` report (``app[HEALTH]``).
        db_path: the database the read API and the live view read.
        daemon_state: the daemon's own presence as ``/api/status`` shows it, given the time
            (None: ``daemon`` is null).
        background: the daemon's background work, started in this order before the live view's
            feed, and stopped after it.
        conns: the connection guard ``serve`` wraps the listening socket's connections in.
        clock: ns since the epoch, a hook's receipt time (the daemon's ``ReceiptClock``).
        budget: the budget check answering PreToolUse / UserPromptSubmit (None: budgets off).
    """
    # The receiver checks the size itself (JSON 413); aiohttp's cap is a backstop.
    app = web.Application(middlewares=[_front(policy, token, conns)], client_max_size=hooks.max_body_bytes + 1)
    app[HEALTH] = health
    handler = make_handler(writer, hooks, Receipts(), clock, budget)
    for path in HOOK_PATHS:
        app.router.add_post(path, handler)
    add_statusline_route(app, writer, hooks, db_path)
    add_otlp_routes(app, writer, hooks, clock)
    app.cleanup_ctx.extend(background)
    add_api_routes(app, db_path=db_path, daemon_state=daemon_state)
    add_live_routes(app, db_path)
    add_page_routes(app)
    return app
