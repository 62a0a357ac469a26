"""``POST /v1/logs``, ``/v1/metrics``, ``/v1/traces``: Claude Code's own OTLP/HTTP telemetry in (SPEC §17).

The paths an OTLP/HTTP exporter posts to under ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the daemon's own
address: ``hooks install --otel`` writes it), on the daemon's port and behind the same Host,
Origin and token rules as every route (``ingestd.http.app``). A body is
``application/x-protobuf`` (decoded with ``opentelemetry-proto``) or ``application/json`` (the
OTLP JSON mapping), optionally ``Content-Encoding: gzip``; it is taken apart by
``ingestd.core.otlp`` and its rows (the request's exact bytes, each log record, each metric data
point) are committed in one transaction before the answer.

Answers (OTLP/HTTP, "Failures"): ``200`` with an empty ``Export*ServiceResponse`` (protobuf: no
bytes; JSON: ``{}``) once committed (a retried export commits nothing new and answers the same);
``400`` for a body that cannot be decoded or is not an export request (nothing is written);
``413`` for a body over ``max_body_bytes`` once inflated (a gzip bomb is cut off at the limit,
never inflated whole); ``415`` for another content type or encoding (a browser's
"simple" request cannot send either type without a preflight, which gets no CORS answer), or for
protobuf when ``opentelemetry-proto`` is missing; ``503`` with ``Retry-After`` when the writer is
overloaded or does not commit in time (the exporter retries; the keys make a retry harmless);
``500`` when the database refuses. Errors carry a ``google.rpc.Status`` (protobuf requests) or the
one JSON error shape.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Callable
from typing import Any

import orjson
from aiohttp import web

from ingestd.core import otlp
from ingestd.core.timefmt import from_epoch_ns
from ingestd.errors import FileLost, StorageError
from ingestd.http.hooks import JSON, HookConfig, HookWriter, WriterClosed, WriterOverloaded, error_response
from ingestd.logs import get_logger

log = get_logger("ingestd.http")

PROTOBUF = "application/x-protobuf"
PATHS = {"/v1/logs": otlp.LOGS, "/v1/metrics": otlp.METRICS, "/v1/traces": otlp.TRACES}
RETRY_AFTER_S = 5
# google.rpc.Code values of the errors sent (OTLP/HTTP answers a protobuf request with a Status)
_RPC_CODE = {400: 3, 413: 8, 415: 3, 500: 13, 503: 14}
_ID_FIELDS = ("traceId", "spanId")
ENCODINGS = ("identity", "", "gzip", "deflate")


class Undecodable(ValueError):
    """A body that cannot be read as its content type says (the reason is the message)."""


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def rpc_status(code: int, message: str) -> bytes:
    """A ``google.rpc.Status`` message (field 1 ``code``, field 2 ``message``), protobuf-encoded."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _hex_ids(records: Any) -> None:
    """The bytes ids of log records in the OTLP JSON form (hex), where protobuf's JSON gave base64."""
    if not isinstance(records, list):
        return
    for rec in records:
        if isinstance(rec, dict):
            for f in _ID_FIELDS:
                v = rec.get(f)
                if isinstance(v, str):
                    rec[f] = base64.b64decode(v).hex()


def _request_type(signal: str) -> Any:
    """The ``Export*ServiceRequest`` message class of a signal (ImportError when the extra is missing)."""
    if signal == otlp.LOGS:
        from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

        return ExportLogsServiceRequest
    if signal == otlp.METRICS:
        from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

        return ExportMetricsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ExportTraceServiceRequest


def protobuf_available() -> bool:
    """Whether ``opentelemetry-proto`` can be imported (protobuf bodies need it)."""
    try:
        _request_type(otlp.LOGS)
    except ImportError:
        return False
    return True


def from_protobuf(signal: str, body: bytes) -> dict[str, Any]:
    """A protobuf export request in the OTLP JSON mapping (lowerCamelCase, 64-bit integers as
    strings, enums as numbers, log records' ids in hex).

    Raises:
        Undecodable: not a message of the signal's request type (truncated, not protobuf).
        ImportError: ``opentelemetry-proto`` is not installed.
    """
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError

    msg = _request_type(signal)()
    try:
        msg.ParseFromString(body)
    except (DecodeError, RecursionError, ValueError) as e:
        raise Undecodable(f"the body is not a protobuf {type(msg).__name__} ({e})") from e
    obj: dict[str, Any] = MessageToDict(msg, use_integers_for_enums=True)
    if signal == otlp.LOGS:
        for res in obj.get("resourceLogs", []):
            for sc in res.get("scopeLogs", []):
                _hex_ids(sc.get("logRecords"))
    return obj


def from_json(body: bytes) -> Any:
    """A JSON body decoded.

    Raises:
        Undecodable: not JSON (or nested deeper than the decoder takes).
    """
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as e:
        raise Undecodable(f"the body is not JSON ({e})") from e


def _refuse(request: web.Request, as_pb: bool, status: int, code: str, message: str) -> web.Response:
    log.warning("otlp_rejected", status=status, reason=code, path=request.path, peer=request.remote)
    if as_pb:
        resp = web.Response(status=status, body=rpc_status(_RPC_CODE.get(status, 2), message), content_type=PROTOBUF)
    else:
        resp = error_response(status, code, message)
    if status == 503:
        resp.headers["Retry-After"] = str(RETRY_AFTER_S)
    return resp


def make_otlp_handler(writer: HookWriter, cfg: HookConfig, clock: Callable[[], int] = time.time_ns) -> Any:
    """The handler of the three OTLP paths, committing through ``writer`` within ``cfg``'s limits;
    ``clock`` (ns since the epoch) stamps the receipt time."""
    timeout_s = cfg.hook_timeout_ms / 1000
    limit = cfg.max_body_bytes

    async def post_otlp(request: web.Request) -> web.Response:
        received_ns = clock()
        signal = PATHS[request.path]
        ctype = request.content_type if "Content-Type" in request.headers else ""
        as_pb = ctype == PROTOBUF
        if ctype not in (PROTOBUF, JSON):
            msg = f"{request.path} takes Content-Type: {PROTOBUF} or {JSON}"
            return _refuse(request, False, 415, "unsupported_media_type", msg)
        if as_pb and not protobuf_available():
            msg = "protobuf bodies need the opentelemetry-proto package (pip install opentelemetry-proto), or http/json"
            return _refuse(request, False, 415, "protobuf_unavailable", msg)
        # aiohttp inflates gzip and deflate bodies as they are read, in bounded steps, and
        # ``read`` stops past ``client_max_size`` (the app's, ``max_body_bytes + 1``): a gzip bomb
        # is cut off at the cap, never inflated whole
        encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ENCODINGS:
            return _refuse(
                request, as_pb, 415, "unsupported_encoding", "Content-Encoding must be gzip, deflate or none"
            )
        if request.content_length is not None and request.content_length > limit:
            return _refuse(request, as_pb, 413, "body_too_large", f"the body is over {limit} bytes")
        try:
            async with asyncio.timeout(cfg.body_timeout_ms / 1000):
                body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return _refuse(request, as_pb, 413, "body_too_large", f"the body is over {limit} bytes")
        except TimeoutError:
            resp = _refuse(request, as_pb, 408, "body_timeout", "the body did not arrive in time")
            resp.force_close()
            return resp
        if len(body) > limit:
            return _refuse(request, as_pb, 413, "body_too_large", f"the body is over {limit} bytes")
        try:
            obj = from_protobuf(signal, body) if as_pb else from_json(body)
        except Undecodable as e:
            return _refuse(request, as_pb, 400, "undecodable", str(e))
        parsed = otlp.parse_request(signal, obj, body)
        if isinstance(parsed, otlp.NotOtlp):
            return _refuse(request, as_pb, 400, parsed.reason, parsed.detail)
        rows = parsed.rows_at(from_epoch_ns(received_ns))
        try:
            inserted = await writer.submit(rows, timeout_s)
        except TimeoutError:
            return _refuse(request, as_pb, 503, "timeout", "the database did not commit in time; retry later")
        except (WriterOverloaded, WriterClosed, FileLost) as e:
            return _refuse(request, as_pb, 503, "unavailable", f"{e}; retry later")
        except StorageError as e:
            log.error("otlp_storage_error", error=str(e))
            return _refuse(request, as_pb, 500, "storage_error", "the database refused the export; nothing was stored")
        log.debug("otlp_received", signal=signal, records=parsed.records, inserted=inserted)
        if as_pb:
            return web.Response(status=200, body=b"", content_type=PROTOBUF)
        return web.Response(status=200, body=b"{}", content_type=JSON)

    return post_otlp


def add_otlp_routes(app: web.Application, writer: HookWriter, cfg: HookConfig, clock: Callable[[], int]) -> None:
    """Register ``POST /v1/logs``, ``/v1/metrics`` and ``/v1/traces`` on ``app``."""
    handler = make_otlp_handler(writer, cfg, clock)
    for path in PATHS:
        app.router.add_post(path, handler)
