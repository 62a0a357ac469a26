"""Requests aiohttp refuses before any handler runs answer in the one JSON error shape too.

aiohttp's HTTP parser refuses a header line longer than 8190 bytes (an ``Idempotency-Key`` of
9 KiB), a request line too long, a malformed request, with a plain-text ``400 Bad Request`` from
``RequestHandler.handle_error``, before the routes and their ``error_response`` are reached.
``json_errors`` wraps the runner's ``web.Server`` so that every connection's handler answers those
with ``{"error": {"status", "code", "message"}}`` as the README documents for every error.
"""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from ingestd.http.hooks import error_response

_CODES = {400: "bad_request", 500: "internal_error", 504: "timeout"}


class _JsonErrors(RequestHandler):
    """A ``RequestHandler`` whose own error answers are the JSON shape (same status, connection closed)."""

    __slots__ = ()

    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        super().handle_error(request, status, exc, message)  # logs, and refuses once bytes were sent
        if status == 400:
            why = (message or "malformed").strip()[:200]
            text = f"the request could not be read as HTTP ({why}); a header line is at most 8190 bytes"
        else:
            try:
                text = HTTPStatus(status).phrase
            except ValueError:
                text = "error"
        resp = error_response(status, _CODES.get(status, "http_error"), text)
        resp.force_close()
        return resp


def json_errors(server: Callable[[], RequestHandler]) -> Callable[[], RequestHandler]:
    """A protocol factory making ``server``'s handlers (``runner.server``) answer their own errors in JSON."""

    def make() -> RequestHandler:
        handler = server()
        handler.__class__ = _JsonErrors  # same layout (no slots of its own): only handle_error differs
        return handler

    return make
