"""The ``spawn`` scenario of a real Claude Code 2.1.332 as log rows: its hook deliveries
(``fixtures/claude-2.1.332/hooks``), its transcript records about the background agent
(``agents/async-agent-records.jsonl``: the ``async_launched`` tool_result, the
``<task-notification>`` queue-operation, the delivered notice) and the agent's ``.meta.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from ingestd.core.records import META, LogRow
from tests.core.claude_fixtures import deliveries, hook_rows

AGENTS = Path(__file__).resolve().parents[2] / "fixtures" / "claude-2.1.332" / "agents"
SID = "b87d709d-6e37-4fe4-b3a0-ca31d1371930"
CHILD = "abaa4e8a0b5e12a98"
SPAWN = "toolu_standin_0002"
ORIGIN = f"-home-user-proj/{SID}.jsonl"
META_ORIGIN = f"-home-user-proj/{SID}/subagents/agent-{CHILD}.meta.json"
READ_AT = "2026-12-02T00:00:00.000Z"


def records() -> list[dict[str, Any]]:
    """The three transcript records: launch result, queued notice, delivered notice."""
    return [json.loads(x) for x in (AGENTS / "async-agent-records.jsonl").read_text().splitlines()]


def line(i: int, obj: dict[str, Any], origin: str = ORIGIN) -> LogRow:
    """``obj`` as transcript log row ``i`` of ``origin`` (offset ``i * 10000``)."""
    return LogRow(i, "jsonl", str(obj.get("type")), orjson.dumps(obj), READ_AT, SID, origin, 0, i * 10000)


def meta(i: int, obj: dict[str, Any] | None = None) -> LogRow:
    """The agent's ``.meta.json`` (or ``obj`` in its place) as log row ``i``."""
    data = (AGENTS / f"agent-{CHILD}.meta.json").read_bytes() if obj is None else orjson.dumps(obj)
    return LogRow(i, "jsonl", META, data, READ_AT, SID, META_ORIGIN, 0, 0)


def hooks(start: int = 1) -> list[LogRow]:
    """The scenario's hook deliveries (one session), ids from ``start``."""
    return hook_rows(deliveries("spawn"), start)


def without_tag(text: str, tag: str) -> str:
    """``text`` with the line holding ``<tag>`` removed (an older notice's shape)."""
    return "\n".join(x for x in text.split("\n") if f"<{tag}>" not in x)


def session() -> list[LogRow]:
    """Every row of the scenario: hooks, the three records, the sidecar."""
    rows = hooks(1)
    n = len(rows)
    rows += [line(n + 1 + i, r) for i, r in enumerate(records())]
    rows.append(meta(n + 4))
    return rows
