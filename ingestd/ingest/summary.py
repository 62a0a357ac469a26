"""What one ingest run did: the ``ingestd ingest`` report (``Summary``), filled as the run reads and writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Summary:
    """What one ingest run did (the ``ingestd ingest`` report).

    Attributes:
        files: int, files discovered; files_read: int, files opened and read; files_unchanged: int, skipped.
        files_unreadable: int, files that could not be opened or read (permissions, I/O errors):
            skipped this run with their offset kept, so a later run picks them up (a transcript
            that could not even be examined, in a folder that cannot be searched, counts too).
        files_vanished: int, files removed between discovery and reading (logged as ``file_vanished``):
            not read; what the log already held of them is kept.
        dirs_unreadable: int, folders under a root that could not be listed: whatever they hold
            is not read (logged as ``dir_unreadable``).
        lines: int, complete lines read; bytes: int, bytes read; rows_inserted: int, new log rows.
        resets: int, rewritten files re-read from 0.
        tails_read: int, last lines without their newline read because their file was idle past the
            grace (``readfile.TORN_TAIL_GRACE_S``); unread_bytes: int, bytes of torn tails still held
            back in ``files_unread`` files (a line being written, or not a JSON object).
        oversized: int, lines longer than ``max_line_bytes`` logged as oversized marker rows.
        skipped: dict reason -> int, lines the projector skips (``not_json``, ``not_object``,
            ``number_too_large``; ``too_deep``, of which the head and tail are still salvaged).
        recovered: int, lines decoded only leniently.
        isolated: int, rows the database refused, logged without projection (quarantined).
        quarantined: dict reason -> int, records in quarantine after the run (``ingestd status``).
        sessions / agents / messages: int, totals in the database after the run.
        elapsed_s: float, seconds.
    """

    files: int = 0
    files_read: int = 0
    files_unchanged: int = 0
    files_unreadable: int = 0
    files_vanished: int = 0
    dirs_unreadable: int = 0
    lines: int = 0
    bytes: int = 0
    rows_inserted: int = 0
    resets: int = 0
    tails_read: int = 0
    unread_bytes: int = 0
    files_unread: int = 0
    oversized: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    recovered: int = 0
    isolated: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)
    sessions: int = 0
    agents: int = 0
    messages: int = 0
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The summary as the ``--json`` document."""
        mb = self.bytes / 1e6
        return {
            "files": self.files,
            "files_read": self.files_read,
            "files_unchanged": self.files_unchanged,
            "files_unreadable": self.files_unreadable,
            "files_vanished": self.files_vanished,
            "dirs_unreadable": self.dirs_unreadable,
            "lines": self.lines,
            "bytes": self.bytes,
            "rows_inserted": self.rows_inserted,
            "resets": self.resets,
            "tails_read": self.tails_read,
            "unread": {"bytes": self.unread_bytes, "files": self.files_unread},
            "oversized": self.oversized,
            "skipped": dict(sorted(self.skipped.items())),
            "recovered": self.recovered,
            "isolated": self.isolated,
            "quarantined": dict(sorted(self.quarantined.items())),
            "sessions": self.sessions,
            "agents": self.agents,
            "messages": self.messages,
            "elapsed_s": round(self.elapsed_s, 3),
            "mb_per_s": round(mb / self.elapsed_s, 1) if self.elapsed_s > 0 else None,
        }
