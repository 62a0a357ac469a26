"""What a real hook client sends: Claude Code's ``type: "http"`` hooks and ``ingestd.forward``.

Both POST ``Content-Type: application/json`` with ``Host: 127.0.0.1:<port>`` and no ``Origin``
(FORMATS.md §7.3; ``ingestd/forward.py``). Tests that post hook bodies use these headers, and
the corpus's real hook bodies come from ``corpus_hook_bodies``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ingestd.core.hookkeys import HookEvent, parse_body

JSON_HEADERS = {"Content-Type": "application/json"}


def corpus_hook_bodies(corpus: Path, per_file: int = 3) -> list[tuple[str, bytes]]:
    """``(source/Event, body)`` for the first ``per_file`` lines of every ``corpus/hooks/*/*.jsonl``."""
    out = []
    for f in sorted((corpus / "hooks").glob("*/*.jsonl")):
        lines = [ln for ln in f.read_bytes().splitlines() if ln.strip()]
        out += [(f"{f.parent.name}/{f.stem}", ln) for ln in lines[:per_file]]
    return out


def first_of_each_event(bodies: Iterable[bytes]) -> list[bytes]:
    """The deliveries a store keeps, in order: all, but the first of a repeated tool or subagent
    event (SPEC's idempotency key: session, tool_use_id or agent_id, event name). Bodies are read
    by the receiver's own parser (lone surrogates and all); a body it rejects is not kept."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for body in bodies:
        ev = parse_body(body)
        if not isinstance(ev, HookEvent):
            continue
        name = ev.event_name
        event_id = ev.tool_use_id if "Tool" in name or name == "PermissionDenied" else None
        event_id = ev.agent_id if name in ("SubagentStart", "SubagentStop") else event_id
        key = (ev.session_id, event_id, name)
        if event_id and key in seen:
            continue
        seen.add(key)
        out.append(body)
    return out
