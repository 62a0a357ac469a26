"""Requests aiohttp refuses before any handler runs answer in the one JSON error shape too.

aiohttp's HTTP parser refuses a header line longer than 8190 bytes (an ``Idempotency-Key`` of
9 KiB), a request line too long, a malformed request, with a plain-text ``400 Bad Request`` from
``RequestHandler.handle_error``, before the routes and their ``error_response`` are reached.
``json_errors`` wraps the runner's ``web.Server`` so that every connection's handler answers those
with ``{"error": {"status", "code", "message"}}`` as docs/reference.md documents for every error.

A refused request is one JSON log line at info, never a traceback, and neither the line nor the
400 body carries request bytes: aiohttp's own message quotes the offending line, which can be
``Authorization: Bearer <token>``. Lines are rate-limited (``RefusalLog``): a client
sending garbage in a loop costs one line per ``every_s`` carrying the count of the ones not logged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aiohttp import http_exceptions as hx
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from ingestd.http.hooks import error_response
from ingestd.logs import get_logger

log = get_logger("ingestd.http")

_CODES = {400: "bad_request", 500: "internal_error", 504: "timeout"}
_LIMIT_HINT = "a header line or the request line is at most 8190 bytes"

# (exception class, kind): the first match names the refusal; messages never quote request bytes
_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (hx.LineTooLong, "line_too_long"),
    (hx.BadHttpMethod, "bad_method"),
    (hx.BadStatusLine, "bad_request_line"),
    (hx.InvalidHeader, "invalid_header"),
    (hx.InvalidURLError, "invalid_url"),
    (hx.PayloadEncodingError, "bad_body_encoding"),
)


# (word in the parser's reason, kind): llhttp (the C parser) raises a plain BadHttpMessage
# ("Invalid header value char:\n\n  b'Authorization: ...'"); only the reason before ':' is looked at
_REASON_WORDS = (("header", "invalid_header"), ("method", "bad_method"), ("url", "invalid_url"))


def refusal_kind(exc: BaseException | None) -> str:
    """The kind of a parse refusal (``"line_too_long"``, ``"invalid_header"``, ..., ``"malformed"``)."""
    for cls, kind in _KINDS:
        if isinstance(exc, cls):
            return kind
    reason = str(getattr(exc, "message", "") or "").split(":", 1)[0].lower()
    for word, kind in _REASON_WORDS:
        if word in reason:
            return kind
    return "malformed"


def refusal_text(kind: str) -> str:
    """The 400 message for ``kind``: fixed text, the size hint only for a line over the limit."""
    if kind == "line_too_long":
        return f"the request could not be read as HTTP (a line is too long); {_LIMIT_HINT}"
    return f"the request could not be read as HTTP ({kind.replace('_', ' ')})"


class RefusalLog:
    """At most one ``http_request_refused`` line per ``every_s`` seconds, with the suppressed count.

    ``clock`` returns seconds (monotonic). Side effect of ``note``: may log one info line.
    """

    def __init__(self, every_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self.total = 0
        self.suppressed = 0
        self._last: float | None = None

    def note(self, kind: str, peer: str | None) -> None:
        """Count one refusal of ``kind`` from ``peer``; log it unless one was logged within ``every_s``."""
        self.total += 1
        now = self.clock()
        if self._last is not None and now - self._last < self.every_s:
            self.suppressed += 1
            return
        self._last = now
        log.info(
            "http_request_refused",
            status=400,
            kind=kind,
            peer=peer,
            refused_total=self.total,
            not_logged=self.suppressed,
        )
        self.suppressed = 0


REFUSALS = RefusalLog()


class _JsonErrors(RequestHandler):
    """A ``RequestHandler`` whose own error answers are the JSON shape (same status, connection closed)."""

    __slots__ = ()

    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        if status != 400:
            super().handle_error(request, status, exc, message)  # a handler's bug: aiohttp logs it in full
            try:
                text = HTTPStatus(status).phrase
            except ValueError:
                text = "error"
        else:
            # aiohttp's message and exception quote the request line or header (the token): not logged
            if request.writer.output_size > 0:
                raise ConnectionError("Response is sent already, cannot send another response with the error message")
            kind = refusal_kind(exc)
            REFUSALS.note(kind, request.remote)
            text = refusal_text(kind)
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
