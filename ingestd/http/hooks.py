"""``POST /hooks``: one URL for every Claude Code hook event (SPEC §3, §10; FORMATS.md §7.3).

Replies:

- ``200`` with an empty body, only after the delivery is committed (Claude Code reads a 2xx body
  as the hook's JSON output, so the body stays empty), or, when budgets are on, with the budget's
  JSON answer to a PreToolUse or UserPromptSubmit (``ingestd.core.budget``: a ``systemMessage``
  warning, or the decision that stops the call);
- ``400`` ``{"error": {"status": 400, "code": <reason>, "message": ...}}`` for a body
  that cannot be an event (reasons in ``ingestd.core.hookkeys.Rejected``);
- ``401`` missing or wrong token (only when one is configured; see ``auth``);
- ``409`` ``idempotency_key_reused``: the ``Idempotency-Key`` is already the key of another event
  (``hookkeys.same_event``; the first is kept, this one is not stored);
- ``408`` the body did not arrive within ``body_timeout_ms``;
- ``413`` body over ``max_body_bytes``, or holding so many JSON values that decoding it could take
  more than ``ingestd.core.decode.MAX_BODY_DECODED_BYTES`` (``body_too_wide``);
- ``415`` a ``Content-Type`` other than ``application/json`` (a browser's cross-origin "simple"
  request can only send ``text/plain``, form or multipart bodies without a preflight; Claude Code
  and ``ingestd.forward`` send ``application/json``; SPEC §10);
- ``500`` fixed body when the database refuses (the transaction rolled back: nothing stored);
- ``503`` when the writer does not commit within ``hook_timeout_ms`` or is overloaded:
  a slow database must never hold Claude Code (the row may still commit later; a
  non-2xx promises nothing either way); ``503`` ``busy`` with ``Retry-After`` when the bodies
  in flight (decoded, not yet committed) would take more than ``max_decoded_bytes_in_flight``
  together (``InFlight``; SPEC §11: 64 clients' wide bodies took 885 MB); a body stays charged until
  its row leaves the writer's queue, even after a 503 timeout (``Charge``).

A rejected request writes nothing and logs one ``hook_rejected`` line with the reason.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from aiohttp import web

from ingestd.core import hookkeys
from ingestd.core.budget import BLOCKING_EVENTS
from ingestd.core.decode import MAX_BODIES_DECODED_BYTES, decoded_bytes, value_marks
from ingestd.core.records import NewLogRow
from ingestd.core.storable import storable
from ingestd.core.timefmt import from_epoch_ns
from ingestd.errors import FileLost, StorageError
from ingestd.logs import get_logger
from ingestd.settings import DEFAULTS
from ingestd.store.connection import Db
from ingestd.store.logrows import payload_under_key

log = get_logger("ingestd.http")


# Told, once, on the loop, that rows a writer was handed are no longer held by it (``wait_committed``).
Released = Callable[[], None]

# The budget check (``ingestd.report.budget.BudgetCheck``): a committed delivery's event name and
# session id -> the hook's JSON answer, or None for the empty 200. Called on a worker thread.
Budget = Callable[[str, str | None], dict[str, Any] | None]
BUDGET_TIMEOUT_S = 0.5


class HookWriter(Protocol):
    """What the receiver, and the daemon's other parts, need of the writer they are handed (the
    daemon's hook writer, ``ingestd.daemon.hookwriter``)."""

    committed_rows: int
    committed_batches: int
    committed_deliveries: int

    async def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the writer (its thread or process) on ``loop`` and wait, without blocking the loop,
        until its connection is open and migrated.

        Raises:
            StorageError: the database could not be opened or migrated (or the process did not start).
        """

    async def submit(
        self, rows: Sequence[NewLogRow], timeout_s: float | None = None, released: Released | None = None
    ) -> int:
        """Commit ``rows``; the number inserted (see ``ThreadWriter.submit``; ``released``: ``wait_committed``)."""

    async def call(self, fn: Callable[[Db], Any]) -> Any:
        """Run ``fn(conn)`` where the write connection lives."""

    def stop(self, timeout_s: float = 30.0) -> None:
        """Drain, commit, close."""


class WriterClosed(StorageError):
    """The writer has stopped (shutdown in progress)."""


class WriterOverloaded(StorageError):
    """Too much work is queued: answer 503 rather than wait."""


JSON = "application/json"


@dataclass(frozen=True, slots=True)
class HookConfig:
    """Receiver limits.

    Attributes:
        max_body_bytes: int, larger bodies get 413 (default 1 MiB).
        hook_timeout_ms: int, answer 503 if the commit takes longer.
        body_timeout_ms: int, answer 408 if the body has not arrived in this time.
    """

    max_body_bytes: int = DEFAULTS.get_int("max_body_bytes")
    hook_timeout_ms: int = DEFAULTS.get_int("hook_timeout_ms")
    body_timeout_ms: int = DEFAULTS.get_int("body_timeout_ms")
    max_decoded_bytes_in_flight: int = MAX_BODIES_DECODED_BYTES


@dataclass(slots=True)
class InFlight:
    """What the bodies being decoded or committed may take together (one per app; the event loop's
    thread only, so no lock).

    Attributes:
        limit_bytes: int, the budget; a body is charged ``ingestd.core.decode.decoded_bytes``.
        used_bytes: int, charged by the bodies in flight now.
    """

    limit_bytes: int
    used_bytes: int = 0

    def take(self, n_bytes: int) -> bool:
        """Charge ``n_bytes`` if they fit (one body alone always does); False, charging nothing, if not."""
        if self.used_bytes and self.used_bytes + n_bytes > self.limit_bytes:
            return False
        self.used_bytes += n_bytes
        return True

    def give(self, n_bytes: int) -> None:
        """Return what ``take`` charged (the body is committed or refused)."""
        self.used_bytes -= n_bytes


@dataclass(slots=True)
class Charge:
    """One body's charge on ``InFlight``, given back when the last of its holders lets go: the
    request (until its answer: a client-keyed delivery still holds the decoded body while its key
    is checked after the commit) and, once the row is handed to the writer (``hand``), the writer
    (until the row leaves its queue: after a 503 timeout it may still wait there, decoded).

    Attributes:
        budget: the ``InFlight`` charged.
        n_bytes: int, what was charged.
        holds: int, holders that have not let go (1: the request).
    """

    budget: InFlight
    n_bytes: int
    holds: int = 1

    def hand(self) -> None:
        """The row goes to the writer, which lets go through ``submit``'s ``released``."""
        self.holds += 1

    def give(self) -> None:
        """One holder lets go; the last gives the charge back."""
        self.holds -= 1
        if self.holds == 0:
            self.budget.give(self.n_bytes)


@dataclass(slots=True)
class Receipts:
    """Per daemon run: the instance id and counter of receipt-unique keys (hookkeys rule 4)."""

    instance: str = field(default_factory=lambda: os.urandom(4).hex())
    counter: itertools.count[int] = field(default_factory=itertools.count)


def error_response(status: int, code: str, message: str) -> web.Response:
    """The one JSON error shape: ``{"error": {"status", "code", "message"}}``."""
    body = orjson.dumps({"error": {"status": status, "code": code, "message": message}})
    return web.Response(status=status, body=body, content_type=JSON)


def _reject(request: web.Request, status: int, code: str, message: str) -> web.Response:
    log.warning("hook_rejected", status=status, reason=code, peer=request.remote)
    return error_response(status, code, message)


UNSUPPORTED_TYPE = (415, "unsupported_media_type", "POST /hooks takes Content-Type: application/json only")
STORAGE_FAILED = (500, "storage_error", "the database refused the event; nothing was stored")


def hook_row(event: hookkeys.HookEvent, body: bytes, key: str, received_ns: int) -> NewLogRow:
    """The ``events_raw`` row of one accepted delivery (payload = the body bytes verbatim; the event
    name and session id in their ``storable`` form, which the central store can hold too)."""
    return NewLogRow(
        idempotency_key=key,
        source="hook",
        event_type=storable(event.event_name),
        payload=body,
        received_at=from_epoch_ns(received_ns),
        session_id=storable(event.session_id),
        origin="hook",
        obj=event.body,
    )


async def _store(
    writer: HookWriter,
    receipts: Receipts,
    timeout_s: float,
    request: web.Request,
    body: bytes,
    header_key: str | None,
    received_ns: int,
    charge: Charge,
    marks: int,
    budget: Budget | None = None,
) -> web.Response:
    """Decode one delivery's body (``marks``: its ``value_marks``, counted once for its charge and
    its decoding), commit its row and answer (``post_hook``'s second half): the empty 200, or the
    budget's JSON answer when a ``budget`` is set and has something to say."""
    parsed = hookkeys.parse_body(body, marks)
    if isinstance(parsed, hookkeys.Rejected):
        # too many values to decode within the memory budget is a size limit, like bytes
        return _reject(request, 413 if parsed.reason == "body_too_wide" else 400, parsed.reason, parsed.detail)
    key = hookkeys.idempotency_key(
        parsed,
        header_key=header_key,
        received_ns=received_ns,
        instance=receipts.instance,
        counter=next(receipts.counter),
    )
    row = hook_row(parsed, body, key, received_ns)
    # one deadline for the commit and, for a client key, its check: no answer after hook_timeout_ms
    deadline = asyncio.get_running_loop().time() + timeout_s
    charge.hand()  # from here the writer also says when the row has left its queue
    try:
        await writer.submit([row], timeout_s, charge.give)
    except (TimeoutError, StorageError) as e:
        return _writer_failed(request, e, "commit")
    if header_key is not None:  # client-keyed only: hooks from Claude Code never take this read
        resp = await _check_reuse(writer, deadline, request, parsed, body, header_key, key)
        if resp.status != 200:
            return resp
    if budget is not None and parsed.event_name in BLOCKING_EVENTS:  # no worker-thread trip for the rest
        return await _budget_answer(budget, parsed)
    return web.Response(status=200)


async def _budget_answer(budget: Budget, event: hookkeys.HookEvent) -> web.Response:
    """200 with the budget's JSON answer, or empty: the delivery is committed whatever the check
    says, and a check that fails or takes over ``BUDGET_TIMEOUT_S`` is logged and answers empty
    (a budget never holds Claude Code)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(BUDGET_TIMEOUT_S):
            doc = await loop.run_in_executor(None, budget, event.event_name, event.session_id)
    except (TimeoutError, StorageError) as e:
        log.warning("budget_check_failed", error=str(e) or "timeout", hook_event=event.event_name)
        return web.Response(status=200)
    if doc is None:
        return web.Response(status=200)
    return web.Response(status=200, body=orjson.dumps(doc), content_type=JSON)


def _writer_failed(request: web.Request, e: TimeoutError | StorageError, late: str) -> web.Response:
    """The answer when the writer did not ``late`` (commit, answer) in time (503 timeout), refused
    the work without trying (503 unavailable), or failed it (500, logged)."""
    if isinstance(e, TimeoutError):
        return _reject(request, 503, "timeout", f"the database did not {late} in time; retry later")
    if isinstance(e, WriterOverloaded | WriterClosed | FileLost):
        return _reject(request, 503, "unavailable", f"{e}; retry later")
    log.error("hook_storage_error", error=str(e))
    return _reject(request, *STORAGE_FAILED)


async def _check_reuse(
    writer: HookWriter,
    deadline: float,
    request: web.Request,
    event: hookkeys.HookEvent,
    body: bytes,
    header_key: str,
    key: str,
) -> web.Response:
    """200 when the row under a client's key (committed: this delivery's or an earlier one) is this
    event, 409 when it is another (SPEC §3: same key, same event); one read on the write connection,
    answered by ``deadline`` (the loop's clock) or 503."""
    try:
        async with asyncio.timeout_at(deadline):
            stored = await writer.call(functools.partial(payload_under_key, key=key))
    except (TimeoutError, StorageError) as e:
        return _writer_failed(request, e, "answer")
    if stored is None or hookkeys.same_event(stored, body, event):
        return web.Response(status=200)
    msg = f"Idempotency-Key {header_key!r} was already used for another event; this one was not stored (use a new key)"
    return _reject(request, 409, "idempotency_key_reused", msg)


def make_handler(
    writer: HookWriter,
    cfg: HookConfig,
    receipts: Receipts,
    clock: Callable[[], int] = time.time_ns,
    budget: Budget | None = None,
) -> Any:
    """The ``POST /hooks`` handler bound to a writer and limits; ``clock`` (ns since the epoch)
    stamps each delivery's receipt time when its request arrives; ``budget`` answers committed
    PreToolUse / UserPromptSubmit deliveries (None: every answer is the empty 200)."""
    timeout_s = cfg.hook_timeout_ms / 1000
    body_timeout_s = cfg.body_timeout_ms / 1000
    too_large = (413, "body_too_large", f"the body is over {cfg.max_body_bytes} bytes")
    in_flight = InFlight(cfg.max_decoded_bytes_in_flight)

    async def post_hook(request: web.Request) -> web.Response:
        received_ns = clock()
        # The raw header: aiohttp reports a missing one as application/octet-stream.
        if "Content-Type" not in request.headers or request.content_type != JSON:
            return _reject(request, *UNSUPPORTED_TYPE)
        clen = request.content_length
        if clen is not None and clen > cfg.max_body_bytes:
            return _reject(request, *too_large)
        try:
            if request.content.is_eof():  # the whole body came with the head (a hook's usual one segment)
                body = await request.read()
            else:
                async with asyncio.timeout(body_timeout_s):
                    body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _reject(request, *too_large)
        except TimeoutError:
            resp = _reject(request, 408, "body_timeout", f"the body did not arrive within {cfg.body_timeout_ms} ms")
            resp.force_close()  # what is left of the body must not be read as the next request
            return resp
        # aiohttp's own cap (max + 1) lets a body of exactly max + 1 bytes through.
        if len(body) > cfg.max_body_bytes:
            return _reject(request, *too_large)
        header_key = request.headers.get("Idempotency-Key")
        bad = hookkeys.check_header_key(header_key)
        if bad is not None:
            return _reject(request, 400, bad.reason, bad.detail)
        marks = value_marks(body)
        cost = decoded_bytes(body, marks)
        if not in_flight.take(cost):
            resp = _reject(request, 503, "busy", "too many bodies in flight to decode; retry later")
            resp.headers["Retry-After"] = "1"
            return resp
        charge = Charge(in_flight, cost)
        try:
            return await _store(
                writer, receipts, timeout_s, request, body, header_key, received_ns, charge, marks, budget
            )
        finally:
            charge.give()  # the request's hold; the writer's goes when the row leaves its queue

    return post_hook
