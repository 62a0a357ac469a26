"""A status-line input built field by field from Claude Code's status-line documentation
(docs/claude-code.md §2), with the plan limits a Pro/Max session gets (``rate_limits``), and the
real inputs of 2.1.332 (``fixtures/claude-2.1.332/statusline/``, an API-key session: no limits)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson

from ingestd.core import statusline as sl
from ingestd.core.records import LogRow
from ingestd.core.timefmt import from_epoch_ns

REPO = Path(__file__).resolve().parents[2]
REAL = sorted((REPO / "fixtures" / "claude-2.1.332" / "statusline").glob("input-*.json"))
SESSION = "5f0c7c9e-2b1d-4d59-a4f1-6a1f0f7e9a11"
NOW = 1_796_160_000.0  # a POSIX time the samples are taken at
AT = from_epoch_ns(int(NOW * 1e9))


def documented(now_s: float, **over: Any) -> dict[str, Any]:
    """The documented input at POSIX time ``now_s``: 5-hour window 42.5% used, resetting in 2 h;
    7-day 13% used, resetting in 3 days. ``over`` replaces top-level fields."""
    doc: dict[str, Any] = {
        "session_id": SESSION,
        "transcript_path": f"/home/user/.claude/projects/-home-user-proj/{SESSION}.jsonl",
        "cwd": "/home/user/proj",
        "prompt_id": "0b8c1d9e-3f4a-4b5c-8d6e-7f8091a2b3c4",
        "model": {"id": "claude-opus-4-1-20250805", "display_name": "Opus 4.1"},
        "workspace": {"current_dir": "/home/user/proj", "project_dir": "/home/user/proj", "added_dirs": []},
        "version": "2.1.332",
        "output_style": {"name": "default"},
        "cost": {
            "total_cost_usd": 1.2345,
            "total_duration_ms": 120000,
            "total_api_duration_ms": 30000,
            "total_lines_added": 10,
            "total_lines_removed": 2,
        },
        "context_window": {
            "total_input_tokens": 50000,
            "total_output_tokens": 900,
            "context_window_size": 200000,
            "current_usage": {
                "input_tokens": 1000,
                "output_tokens": 900,
                "cache_creation_input_tokens": 4000,
                "cache_read_input_tokens": 45000,
            },
            "used_percentage": 25,
            "remaining_percentage": 75,
        },
        "exceeds_200k_tokens": False,
        "rate_limits": {
            "five_hour": {"used_percentage": 42.5, "resets_at": int(now_s) + 7200},
            "seven_day": {"used_percentage": 13, "resets_at": int(now_s) + 3 * 86400},
        },
        "fast_mode": False,
        "thinking": {"enabled": True},
    }
    doc.update(over)
    return doc


def real_inputs() -> list[dict[str, Any]]:
    """The inputs a real Claude Code 2.1.332 handed its status line."""
    return [json.loads(p.read_text()) for p in REAL]


def log_row(doc: dict[str, Any], rid: int = 1, at: str = AT) -> LogRow:
    """``doc`` logged as snapshot row ``rid``, received at ``at``."""
    return LogRow(rid, sl.SOURCE, sl.EVENT_TYPE, orjson.dumps(doc), at, str(doc["session_id"]), sl.ORIGIN)
