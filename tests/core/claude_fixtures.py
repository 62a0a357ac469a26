"""The hook bodies a real Claude Code 2.1.332 sent (``fixtures/claude-2.1.332/hooks``) as log rows, in
the order they arrived in each scenario (``hooks/index.json``; PROVENANCE.md says what each ran)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import orjson

from ingestd.core.records import LogRow

HOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "claude-2.1.332" / "hooks"


@cache
def _by_event() -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in sorted(HOOKS.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            out.setdefault((entry["scenario"], path.stem), []).append(entry["body"])
    return out


def deliveries(scenario: str) -> list[dict[str, Any]]:
    """The scenario's hook bodies in arrival order."""
    index = json.loads((HOOKS / "index.json").read_text())[scenario]
    queues = {k: list(v) for k, v in _by_event().items() if k[0] == scenario}
    return [queues[(scenario, d["event"])].pop(0) for d in index]


def at(n: int) -> str:
    """The n-th receipt time: one second apart from 2026-12-01T00:00:00Z."""
    return f"2026-12-01T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}.000Z"


def hook_rows(bodies: list[dict[str, Any]], start_id: int = 1) -> list[LogRow]:
    """``bodies`` as hook log rows, ids from ``start_id``, received one second apart in order."""
    return [
        LogRow(start_id + i, "hook", b["hook_event_name"], orjson.dumps(b), at(i), b["session_id"], "hook")
        for i, b in enumerate(bodies)
    ]
