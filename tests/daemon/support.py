"""Helpers shared by the daemon tests (the reliability suite's ``Daemon``, ``free_port`` and ``q`` serve them too)."""

from __future__ import annotations

import orjson


def user_line(sid: str, i: int, *, text: str, timestamp: str) -> bytes:
    """One framed transcript line: a user record of session ``sid`` whose uuid is ``u-<i>``."""
    return (
        orjson.dumps(
            {
                "type": "user",
                "uuid": f"u-{i}",
                "sessionId": sid,
                "timestamp": timestamp,
                "cwd": "/tmp/p",
                "message": {"role": "user", "content": f"{text} {i}"},
            }
        )
        + b"\n"
    )
