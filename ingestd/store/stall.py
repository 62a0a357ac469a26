"""Stalls: a writer retrying a transient refusal (busy, full, I/O) says so (SPEC §12, §10).

``ingestd.store.writer.retrying`` reports each retry, and the end of them, to the ``StallReport``
its ``Backoff`` names. In the daemon that is its ``Health`` (``ingestd.http.health``): the part
is *stalled* while it retries, ``/api/health`` answers 503 with the reason and ``/api/status``
lists it, in the one vocabulary of health problems. The CLI reports to nobody (``NO_REPORT``):
its log lines say it, and it gives up after a few attempts.

``ingestd status`` runs in another process, so the daemon also mirrors its stalls to a small file
beside the database (``write_mirror``: ``<db>.stalls.json``, private, removed when the stalls
clear), which ``read_mirror`` reads while that daemon runs; a full disk may keep the file from
being written, the API always knows.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import orjson

from ingestd import files

MIRROR_MAX_BYTES = 1 << 20  # a few stalls; a larger file is none


class StallReport(Protocol):
    """Who hears about a part retrying a transient refusal (the daemon's ``Health``)."""

    def retrying(self, part: str, reason: str) -> None:
        """``part`` met a transient refusal (``reason``) and will retry."""

    def retried(self, part: str) -> None:
        """``part``'s write went through, or it gave up: no longer retrying."""


class _NoReport:
    def retrying(self, part: str, reason: str) -> None:
        return None

    def retried(self, part: str) -> None:
        return None


NO_REPORT: StallReport = _NoReport()


@dataclass(frozen=True, slots=True)
class Stall:
    """One part retrying a transient refusal.

    Attributes:
        component: str, the part (``writer``, ``tailer``; ``ingest`` in the CLI).
        reason: str, the database's last refusal.
        since_unix_s: float, wall-clock seconds when the retries began.
        retries: int, retries so far.
    """

    component: str
    reason: str
    since_unix_s: float
    retries: int

    def to_json(self, now_unix_s: float) -> dict[str, object]:
        """``{component, reason, seconds, retries}``: the shape of ``/api/status`` and ``ingestd status`` ``stalls``."""
        return {
            "component": self.component,
            "reason": self.reason,
            "seconds": round(max(0.0, now_unix_s - self.since_unix_s), 3),
            "retries": self.retries,
        }


def mirror_path(db_path: Path) -> Path:
    """The stall file of a database: ``<db>.stalls.json``."""
    return Path(str(db_path) + ".stalls.json")


def write_mirror(path: Path, stalls: Sequence[Stall]) -> None:
    """Rewrite the mirror ``path`` with ``stalls`` and this pid, or remove it when there are none.

    Best effort: an OSError (a full disk) is ignored; the daemon's API still knows.
    """
    with contextlib.suppress(OSError):
        if not stalls:
            path.unlink(missing_ok=True)
            return
        doc = {
            "pid": os.getpid(),
            "stalls": [
                {"component": s.component, "reason": s.reason, "since_unix_s": s.since_unix_s, "retries": s.retries}
                for s in stalls
            ],
        }
        files.replace(path, orjson.dumps(doc), 0o600)


def read_mirror(db_path: Path, now_unix_s: float) -> list[dict[str, object]]:
    """The stalls the daemon of ``db_path`` mirrored, if that daemon still runs ([] otherwise). Read-only."""
    try:
        doc = orjson.loads(files.read_small(mirror_path(db_path), MIRROR_MAX_BYTES, "stalls file") or b"null")
        pid = int(doc["pid"])
        os.kill(pid, 0)  # a file left by a daemon that died says nothing
        items = list(doc["stalls"])
    except (OSError, ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        return []
    return [
        Stall(
            str(s.get("component")),
            str(s.get("reason")),
            float(s.get("since_unix_s", now_unix_s)),
            int(s.get("retries", 0)),
        ).to_json(now_unix_s)
        for s in items
        if isinstance(s, dict)
    ]
