"""OTLP export requests: which body is one, its records as log rows, their keys (SPEC §3, §17). Pure.

Claude Code exports its own telemetry over OTLP/HTTP (docs/claude-code.md §4): ``/v1/logs`` (one
log record per event, ``body`` ``claude_code.<name>``, attribute ``event.name``), ``/v1/metrics``
(delta sums) and ``/v1/traces``. A request arrives here as the OTLP JSON mapping (lowerCamelCase
names, 64-bit integers as strings or, as Claude Code 2.1.332 sends them, JSON numbers: both are
accepted); a protobuf body is turned into the same mapping by the receiver
(``ingestd.http.otlp``), the one place that knows protobuf.

What is logged (source ``otlp``, ``LOGGED``):

- the request itself, its bytes exactly as received (after the transport's gzip), one row per
  distinct body (``request_key``: a retried export is the same row), session NULL: it is kept,
  never folded;
- each log record a row (``origin`` ``otlp:logs``, ``event_type`` its ``event.name``), keyed on what
  identifies an event (``record_key``: session, ``event.sequence``, name, time), so the same record
  exported again, alone or in another batch, is one row;
- each metric data point a row (``otlp:metrics``, ``event_type`` the metric's name), keyed on the
  metric, its attributes, its interval and value (``point_key``): the same point twice is one row,
  two deltas of one series are two.

The payload of a record or point row is the JSON of the record with what it needs from around it:
``{"resource": [attributes], "scope": {...}, "logRecord": {...}}`` or ``{"resource", "scope",
"metric": {name, unit, description, kind, aggregationTemporality, isMonotonic}, "point": {...}}``.
A body that is not such a request (not an object, a field of the wrong shape, a record that is not
an object) is refused whole with its reason (``NotOtlp``): nothing of it is written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from hashlib import blake2b
from typing import Any

import orjson

from ingestd.core.records import NewLogRow
from ingestd.core.storable import storable, storable_or_none
from ingestd.core.timefmt import from_epoch_ns

SOURCE = "otlp"
LOGS, METRICS, TRACES = "logs", "metrics", "traces"
SIGNALS = (LOGS, METRICS, TRACES)
# the top-level list of each signal's request, and the list of scopes inside one of its items
_LISTS = {
    LOGS: ("resourceLogs", "scopeLogs"),
    METRICS: ("resourceMetrics", "scopeMetrics"),
    TRACES: ("resourceSpans", "scopeSpans"),
}
REQUEST = "request"  # event_type of a request's own row
METRIC_KINDS = ("sum", "gauge", "histogram", "exponentialHistogram", "summary")
# the largest time a canonical instant can name (9999-12-31): a later timeUnixNano is not a time
_MAX_NS = 253_402_300_799_999_999_999


def origin_of(signal: str) -> str:
    """The ``origin`` of a signal's rows: ``otlp:logs``, ``otlp:metrics``, ``otlp:traces``."""
    return f"otlp:{signal}"


@dataclass(frozen=True, slots=True)
class NotOtlp:
    """A body that is not an export request of its signal: ``reason`` and one sentence."""

    reason: str
    detail: str


@dataclass(frozen=True, slots=True)
class Export:
    """One decoded export request.

    Attributes:
        signal: str, ``logs`` | ``metrics`` | ``traces``.
        raw: bytes, the body as received (after gzip), kept in the request's row.
        items: per record / data point: (idempotency key, event type, session id, payload object);
            ``rows_at`` makes them log rows with the request's own row first.
        records: int, log records or data points or spans in the request.
    """

    signal: str
    raw: bytes = field(repr=False)
    items: tuple[tuple[str, str, str | None, dict[str, Any]], ...] = field(repr=False, default=())
    records: int = 0

    def rows_at(self, received_at: str) -> list[NewLogRow]:
        """The request's log rows received at ``received_at`` (canonical UTC): its own row, then
        its records' (``items``: key, event type, session id, payload object)."""
        origin = origin_of(self.signal)
        rows = [
            NewLogRow(
                idempotency_key=request_key(self.signal, self.raw),
                source=SOURCE,
                event_type=REQUEST,
                payload=self.raw,
                received_at=received_at,
                session_id=None,
                origin=origin,
            )
        ]
        for key, event_type, sid, obj in self.items:
            rows.append(
                NewLogRow(
                    idempotency_key=key,
                    source=SOURCE,
                    event_type=event_type,
                    payload=orjson.dumps(obj),
                    received_at=received_at,
                    session_id=sid,
                    origin=origin,
                    obj=obj,
                )
            )
        return rows


def _h(*parts: str | bytes) -> str:
    h = blake2b(digest_size=16)
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def request_key(signal: str, raw: bytes) -> str:
    """The key of a request's own row: ``o:r:<blake2b-16(signal, body)>`` (a retry is the same row)."""
    return f"o:r:{_h(signal, raw)}"


def record_key(session_id: str | None, sequence: int | None, name: str, time_ns: str, obj: dict[str, Any]) -> str:
    """The key of one log record: ``o:l:<blake2b-16(session, event.sequence, name, timeUnixNano)>``.

    ``event.sequence`` counts a process's events (0, 1, ...), so with the session, the name and the
    time it names one event; a record without a sequence is keyed on its whole payload instead
    (two records that differ are two rows)."""
    if sequence is None:
        return f"o:l:{_h(session_id or '', name, time_ns, orjson.dumps(obj, option=orjson.OPT_SORT_KEYS))}"
    return f"o:l:{_h(session_id or '', str(sequence), name, time_ns)}"


def point_key(obj: dict[str, Any]) -> str:
    """The key of one metric data point: ``o:m:<blake2b-16(the point with its metric and scope)>``.

    A delta point names one interval of one series (metric, attributes, start and end times), and
    its value: the same point exported twice is one row, never two deltas summed."""
    return f"o:m:{_h(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS))}"


def attr_value(v: Any) -> Any:
    """The value of one OTLP ``AnyValue`` (``{"stringValue": ...}`` and its kin) as plain JSON:
    str, int (from a string or a number), float, bool, list, dict; None when it is not one."""
    if not isinstance(v, dict):
        return None
    if "stringValue" in v:
        s = v["stringValue"]
        return s if isinstance(s, str) else None
    if "intValue" in v:
        return as_int(v["intValue"])
    if "doubleValue" in v:
        d = v["doubleValue"]
        if isinstance(d, bool):
            return None
        if isinstance(d, int | float):
            return float(d)
        if isinstance(d, str):
            try:
                return float(d)
            except ValueError:
                return None
        return None
    if "boolValue" in v:
        b = v["boolValue"]
        return b if isinstance(b, bool) else None
    if "arrayValue" in v:
        arr = v["arrayValue"]
        vals = arr.get("values") if isinstance(arr, dict) else None
        return [attr_value(x) for x in vals] if isinstance(vals, list) else []
    if "kvlistValue" in v:
        kv = v["kvlistValue"]
        vals = kv.get("values") if isinstance(kv, dict) else None
        return attrs_of(vals)
    if "bytesValue" in v:
        b = v["bytesValue"]
        return b if isinstance(b, str) else None
    return None


def as_int(v: Any) -> int | None:
    """An OTLP integer: a JSON number with no fraction, or its decimal string; else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return int(v) if math.isfinite(v) and v.is_integer() else None
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def attrs_of(attributes: Any) -> dict[str, Any]:
    """A ``KeyValue`` list as a dict (a later key wins; an entry that is not a KeyValue is skipped)."""
    out: dict[str, Any] = {}
    if not isinstance(attributes, list):
        return out
    for kv in attributes:
        if isinstance(kv, dict) and isinstance(kv.get("key"), str):
            out[kv["key"]] = attr_value(kv.get("value"))
    return out


def _list(obj: dict[str, Any], name: str, where: str) -> list[Any] | NotOtlp:
    v = obj.get(name, [])
    if v is None:
        return []
    if not isinstance(v, list):
        return NotOtlp("wrong_type", f"{where}{name} is not an array")
    return v


def _objects(obj: dict[str, Any], name: str, where: str) -> list[dict[str, Any]] | NotOtlp:
    """``obj[name]``: an array of objects (absent or null: empty), else why not."""
    items = _list(obj, name, where)
    if isinstance(items, NotOtlp):
        return items
    for i, x in enumerate(items):
        if not isinstance(x, dict):
            return NotOtlp("wrong_type", f"{where}{name}[{i}] is not an object")
    return items


def _check_attributes(obj: dict[str, Any], where: str) -> NotOtlp | None:
    attrs = _list(obj, "attributes", where)
    if isinstance(attrs, NotOtlp):
        return attrs
    for i, kv in enumerate(attrs):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            return NotOtlp("wrong_type", f"{where}attributes[{i}] is not a KeyValue with a string key")
        if "value" in kv and kv["value"] is not None and not isinstance(kv["value"], dict):
            return NotOtlp("wrong_type", f"{where}attributes[{i}].value is not an AnyValue object")
    return None


def _time(v: Any, where: str) -> tuple[str, NotOtlp | None]:
    """A ``*UnixNano`` field as its decimal string ('' when absent or 0), or the problem."""
    if v is None:
        return "", None
    n = as_int(v)
    if n is None or n < 0 or n > _MAX_NS:
        return "", NotOtlp("wrong_type", f"{where} is not a time in ns since the epoch")
    return (str(n) if n else ""), None


def parse_request(signal: str, obj: Any, raw: bytes) -> Export | NotOtlp:
    """Decide whether ``obj`` (the body in the OTLP JSON mapping) is an export request of
    ``signal`` and take it apart into its rows (``Export``). Never raises."""
    if signal not in SIGNALS:
        return NotOtlp("unknown_signal", f"{signal!r} is not logs, metrics or traces")
    if not isinstance(obj, dict):
        return NotOtlp("not_an_object", "the body is not an OTLP export request object")
    outer, inner = _LISTS[signal]
    res_list = _objects(obj, outer, "")
    if isinstance(res_list, NotOtlp):
        return res_list
    items: list[tuple[str, str, str | None, dict[str, Any]]] = []
    count = 0
    for ri, res in enumerate(res_list):
        where = f"{outer}[{ri}]."
        resource = res.get("resource") or {}
        if not isinstance(resource, dict):
            return NotOtlp("wrong_type", f"{where}resource is not an object")
        bad = _check_attributes(resource, where + "resource.")
        if bad:
            return bad
        scopes = _objects(res, inner, where)
        if isinstance(scopes, NotOtlp):
            return scopes
        rattrs = resource.get("attributes") or []
        for si, sc in enumerate(scopes):
            swhere = f"{where}{inner}[{si}]."
            scope = sc.get("scope") or {}
            if not isinstance(scope, dict):
                return NotOtlp("wrong_type", f"{swhere}scope is not an object")
            if signal == LOGS:
                got = _log_items(sc, swhere, rattrs, scope, items)
            elif signal == METRICS:
                got = _metric_items(sc, swhere, rattrs, scope, items)
            else:
                got = _span_count(sc, swhere)
            if isinstance(got, NotOtlp):
                return got
            count += got
    return Export(signal, raw, tuple(items), count)


def session_of(attrs: dict[str, Any], rattrs: dict[str, Any]) -> str | None:
    """The session a record or point belongs to: its ``session.id`` (else its resource's), None
    when neither names one."""
    sid = attrs.get("session.id")
    if not isinstance(sid, str) or not sid.strip():
        sid = rattrs.get("session.id")
    return storable(sid) if isinstance(sid, str) and sid.strip() else None


def event_name(rec: dict[str, Any], attrs: dict[str, Any]) -> str:
    """A log record's event name: its ``event.name`` attribute, else its body's string without the
    ``claude_code.`` prefix, else ``log``."""
    name = attrs.get("event.name")
    if isinstance(name, str) and name:
        return name
    body = attr_value(rec.get("body"))
    if isinstance(body, str) and body:
        return body.removeprefix("claude_code.")
    return "log"


def _log_items(
    sc: dict[str, Any],
    where: str,
    rattrs: list[Any],
    scope: dict[str, Any],
    items: list[tuple[str, str, str | None, dict[str, Any]]],
) -> int | NotOtlp:
    recs = _objects(sc, "logRecords", where)
    if isinstance(recs, NotOtlp):
        return recs
    res = attrs_of(rattrs)
    for i, rec in enumerate(recs):
        rwhere = f"{where}logRecords[{i}]."
        bad = _check_attributes(rec, rwhere)
        if bad:
            return bad
        t, bad = _time(rec.get("timeUnixNano"), rwhere + "timeUnixNano")
        if bad:
            return bad
        _, bad = _time(rec.get("observedTimeUnixNano"), rwhere + "observedTimeUnixNano")
        if bad:
            return bad
        attrs = attrs_of(rec.get("attributes"))
        sid = session_of(attrs, res)
        name = event_name(rec, attrs)
        obj = {"resource": rattrs, "scope": scope, "logRecord": rec}
        key = record_key(sid, as_int(attrs.get("event.sequence")), name, t, obj)
        items.append((key, storable(name), sid, obj))
    return len(recs)


def _metric_items(
    sc: dict[str, Any],
    where: str,
    rattrs: list[Any],
    scope: dict[str, Any],
    items: list[tuple[str, str, str | None, dict[str, Any]]],
) -> int | NotOtlp:
    metrics = _objects(sc, "metrics", where)
    if isinstance(metrics, NotOtlp):
        return metrics
    res = attrs_of(rattrs)
    n = 0
    for mi, m in enumerate(metrics):
        mwhere = f"{where}metrics[{mi}]."
        name = m.get("name")
        if not isinstance(name, str) or not name:
            return NotOtlp("wrong_type", f"{mwhere}name is not a non-empty string")
        kinds = [k for k in METRIC_KINDS if k in m]
        if not kinds:
            continue  # a metric with no data: nothing to keep
        data = m[kinds[0]]
        if not isinstance(data, dict):
            return NotOtlp("wrong_type", f"{mwhere}{kinds[0]} is not an object")
        points = _objects(data, "dataPoints", f"{mwhere}{kinds[0]}.")
        if isinstance(points, NotOtlp):
            return points
        head = {
            "name": name,
            "unit": m.get("unit") if isinstance(m.get("unit"), str) else "",
            "description": m.get("description") if isinstance(m.get("description"), str) else "",
            "kind": kinds[0],
            "aggregationTemporality": as_int(data.get("aggregationTemporality")),
            "isMonotonic": data.get("isMonotonic") is True,
        }
        for pi, p in enumerate(points):
            pwhere = f"{mwhere}{kinds[0]}.dataPoints[{pi}]."
            bad = _check_attributes(p, pwhere)
            if bad:
                return bad
            for tf in ("startTimeUnixNano", "timeUnixNano"):
                _, bad = _time(p.get(tf), pwhere + tf)
                if bad:
                    return bad
            obj = {"resource": rattrs, "scope": scope, "metric": head, "point": p}
            items.append((point_key(obj), storable(name), session_of(attrs_of(p.get("attributes")), res), obj))
            n += 1
    return n


def _span_count(sc: dict[str, Any], where: str) -> int | NotOtlp:
    spans = _objects(sc, "spans", where)
    return spans if isinstance(spans, NotOtlp) else len(spans)


def point_value(p: dict[str, Any]) -> float | None:
    """A number data point's value (``asDouble`` or ``asInt``), None when it holds neither."""
    if "asDouble" in p:
        d = p["asDouble"]
        if isinstance(d, bool):
            return None
        if isinstance(d, int | float):
            f = float(d)
            return f if math.isfinite(f) else None
        if isinstance(d, str):
            try:
                f = float(d)
            except ValueError:
                return None
            return f if math.isfinite(f) else None
        return None
    i = as_int(p.get("asInt"))
    return float(i) if i is not None else None


def time_of(ns_text: Any) -> str | None:
    """A ``*UnixNano`` value as canonical UTC, None when absent, 0 or not a time."""
    n = as_int(ns_text)
    if n is None or n <= 0 or n > _MAX_NS:
        return None
    return from_epoch_ns(n)


def text_or_none(v: Any) -> str | None:
    """``v`` in its storable form when a non-empty string, else None."""
    return storable_or_none(v) if isinstance(v, str) and v else None
