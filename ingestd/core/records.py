"""Log rows and the path / session-of-line rules (SPEC §3, §4.1, §7), pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from ingestd.core.decode import UNDECODABLE, decode_line
from ingestd.core.framing import Line, Oversized
from ingestd.core.keys import jsonl_key, jsonl_key_of_digest
from ingestd.core.oversized import OVERSIZED, marker_payload, salvage_bytes, salvage_line
from ingestd.core.storable import storable

INVALID = "invalid"
FILE_RESET = "file_reset"
META = "meta"  # a .meta.json sidecar, logged whole as one row


@dataclass(frozen=True, slots=True)
class NewLogRow:
    """A row about to be appended to ``events_raw``.

    Attributes:
        idempotency_key: str, unique key (``j:...`` transcript, hook keys from the receiver).
        source: str, ``jsonl`` | ``hook`` | ``ingestd``.
        event_type: str, record ``type`` / ``hook_event_name`` / ``invalid`` / ``file_reset`` / ``meta``
            (``storable``, as ``session_id``).
        payload: bytes, exactly as read.
        received_at: str, canonical UTC read / receipt time.
        session_id: str | None, the session the row belongs to (``ingestd.core.storable``: the
            form both stores hold; the payload keeps the exact bytes).
        origin: str, transcript path relative to its root, or ``hook``.
        origin_gen: int, rewrite generation.
        origin_offset: int | None, byte offset of the line (None for hooks).
        obj: the decoded object when already known (not stored; saves a re-parse).
        recovered: bool, decoded only leniently (counted).
        reason: str | None, why the line is invalid.
    """

    idempotency_key: str
    source: str
    event_type: str
    payload: bytes
    received_at: str
    session_id: str | None
    origin: str
    origin_gen: int = 0
    origin_offset: int | None = None
    obj: dict[str, Any] | None = field(default=None, compare=False, repr=False)
    recovered: bool = False
    reason: str | None = None

    def db_tuple(self) -> tuple[str, str, str, bytes, str, str | None, str, int, int | None]:
        """Values in ``writer.INSERT_LOG`` column order."""
        return (
            self.idempotency_key,
            self.source,
            self.event_type,
            self.payload,
            self.received_at,
            self.session_id,
            self.origin,
            self.origin_gen,
            self.origin_offset,
        )

    def logged(self, log_id: int) -> LogRow:
        """The row as the projector sees it once appended as ``events_raw.id`` ``log_id`` (``obj`` kept)."""
        return LogRow(log_id, *self.db_tuple()[1:], self.obj)


@dataclass(frozen=True, slots=True)
class LogRow:
    """A row of ``events_raw`` as the projector sees it.

    Attributes:
        id: int, ``events_raw.id``.
        source, event_type, received_at, session_id, origin, origin_gen, origin_offset: as stored.
        payload: bytes, as stored.
        obj: the decoded payload when the caller already has it, else None (decoded on demand).
    """

    id: int
    source: str
    event_type: str
    payload: bytes
    received_at: str
    session_id: str | None
    origin: str
    origin_gen: int = 0
    origin_offset: int | None = None
    obj: dict[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PathInfo:
    """What a transcript's path says (FORMATS.md §0).

    Attributes:
        project_slug: str, the first path component (the encoded cwd; never decoded).
        session_id: str | None, the session the path names (None for flat ``agent-*`` files).
        agent_id: str | None, the agent the file belongs to (``agent-<id>.jsonl``), None for a main file.
    """

    project_slug: str
    session_id: str | None
    agent_id: str | None


@lru_cache(maxsize=4096)
def path_info(origin: str) -> PathInfo:
    """Classify a transcript path relative to its projects root.

    Memoised (the fold asks once per record, for a handful of files per batch; ``PathInfo`` is
    frozen, so sharing one is safe).

    ``<slug>/<sid>.jsonl`` main file; ``<slug>/<sid>/subagents/agent-<id>.jsonl`` (also under
    ``subagents/workflows/wf_*/``, 2.1.x); ``<slug>/agent-<id>.jsonl`` flat (2.0.x, e.g.
    ``corpus/claude-projects/-Users-user-rcconsultech-task-api-benchmark-v0-2/agent-0cbdf933.jsonl``).
    """
    parts = origin.split("/")
    slug = parts[0] if len(parts) > 1 else ""
    name = parts[-1]
    if name.endswith(".jsonl"):
        stem = name[: -len(".jsonl")]
    elif name.endswith(".meta.json"):
        stem = name[: -len(".meta.json")]
    else:
        stem = name
    agent = stem[6:] if stem.startswith("agent-") else None
    if len(parts) >= 3:
        return PathInfo(slug, parts[1], agent)
    if agent is not None:
        return PathInfo(slug, None, agent)
    return PathInfo(slug, stem or None, None)


def _session_of(sid: Any, path_session: str | None) -> str | None:
    """The session of a record whose ``sessionId`` is ``sid`` (SPEC §4.1): ``sid`` when it is a
    string that is not blank (empty or only white space: no session can be reached by it; a hook
    body with one is refused), else ``path_session``; in its ``storable`` form (the log's
    ``session_id`` column travels to the central store as it is)."""
    return storable(sid) if isinstance(sid, str) and sid and not sid.isspace() else path_session


def line_row(
    line: Line,
    *,
    origin: str,
    origin_hash: str,
    gen: int,
    received_at: str,
    path_session: str | None,
) -> NewLogRow:
    """Turn one framed transcript line into a log row (decoding it once).

    Session-of-line rule (SPEC §4.1): the record's ``sessionId`` when it is a string that is not
    blank (empty or only white space, which no session can be reached by), else the session the
    path names. A flat 2.0.x agent file's records name their
    parent session; a 1.0.89 main file can carry a second session's records
    (``corpus/claude-projects/-Users-user-linear-agent/263940d8-….jsonl`` holds 87
    records of ``998db3cd-…``): each belongs to the session it names.
    """
    data = line.data
    dec = decode_line(data)
    key = jsonl_key(origin_hash, gen, line.offset, data)
    obj = dec.obj
    if obj is None:
        # JSON that cannot be decoded (``UNDECODABLE``): what its head and tail tell is the record
        # (``projector.decode_row``, carried as the row's object so the projector need not decode and
        # salvage it again), and the session is the one they name, as for an oversized line
        rec = salvage_line(data) if dec.reason in UNDECODABLE else None
        sid = rec.get("sessionId") if rec is not None else None
        return NewLogRow(
            key,
            "jsonl",
            INVALID,
            data,
            received_at,
            _session_of(sid, path_session),
            origin,
            gen,
            line.offset,
            obj=rec,
            reason=dec.reason,
        )
    sid = _session_of(obj.get("sessionId"), path_session)
    etype = obj.get("type")
    etype = storable(etype) if isinstance(etype, str) and etype else "untyped"
    return NewLogRow(
        key, "jsonl", etype, data, received_at, sid, origin, gen, line.offset, obj=obj, recovered=dec.recovered
    )


def oversized_row(
    ov: Oversized,
    *,
    origin: str,
    origin_hash: str,
    gen: int,
    received_at: str,
    path_session: str | None,
) -> NewLogRow:
    """The marker row of a line longer than ``max_line_bytes`` (``ingestd.core.oversized``).

    Keyed like a line (origin, offset, the whole line's hash), so re-reading the file inserts
    nothing; its session is the ``sessionId`` in the kept bytes, else the path's.
    """
    payload = marker_payload(ov)
    rec = salvage_bytes(ov.head, ov.tail)  # what salvage(payload) reads back, without the round trip
    sid = _session_of(rec.get("sessionId") if rec is not None else None, path_session)
    key = jsonl_key_of_digest(origin_hash, gen, ov.offset, ov.digest)
    return NewLogRow(key, "jsonl", OVERSIZED, payload, received_at, sid, origin, gen, ov.offset, obj=rec)
