"""Progress of the daemon's start-up backfill: log lines always, a progress bar on a terminal.

The start-up catch-up of a large history takes seconds (13 s for 287 MB, issue 15), and until
it ends the tailer follows nothing new, so the operator is told how far it got: one log line
when it starts (``backfill_started total_bytes``), one every ``LOG_EVERY_S`` seconds
(``backfill_progress bytes total_bytes percent``) and one when it ends (``backfill_finished``).
On a terminal a rich progress bar on stderr shows the same bytes. The callbacks run on the
ingest thread (``IngestRunner``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from ingestd.logs import get_logger

log = get_logger("ingestd.tailer")

LOG_EVERY_S = 5.0


class BackfillProgress:
    """``on_total`` / ``advance`` callbacks for ``ingest_roots``; ``close`` logs the end.

    Args:
        stream: where a progress bar may go (default stderr); only a terminal gets one.
        clock: monotonic seconds (tests pass a fake).
        log_every_s: float, seconds between ``backfill_progress`` log lines.
    """

    def __init__(
        self,
        *,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        log_every_s: float = LOG_EVERY_S,
    ) -> None:
        self._stream = stream if stream is not None else sys.stderr
        self._clock = clock
        self._every = log_every_s
        self.total_bytes: int | None = None
        self.done_bytes = 0
        self._t0 = clock()
        self._last_log = self._t0
        self._bar: Any = None
        self._task: Any = None

    def on_total(self, n: int) -> None:
        """The bytes the backfill will read (called once, before reading)."""
        self.total_bytes = n
        log.info("backfill_started", total_bytes=n)
        if n and hasattr(self._stream, "isatty") and self._stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(file=self._stream),
                transient=True,
            )
            self._bar.start()
            self._task = self._bar.add_task("start-up backfill", total=n)

    def advance(self, n: int) -> None:
        """``n`` more bytes were read."""
        self.done_bytes += n
        if self._bar is not None:
            self._bar.advance(self._task, n)
        now = self._clock()
        if now - self._last_log >= self._every:
            self._last_log = now
            log.info("backfill_progress", **self._fields())

    def _fields(self) -> dict[str, Any]:
        total = self.total_bytes or 0
        # Files that grew during the backfill are read past the planned total: 100 %, not more.
        pct = min(100.0, round(100.0 * self.done_bytes / total, 1)) if total else 100.0
        return {"bytes": self.done_bytes, "total_bytes": total, "percent": pct}

    def close(self) -> None:
        """Stop the bar (if any) and log ``backfill_finished`` with the elapsed time."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        log.info("backfill_finished", elapsed_s=round(self._clock() - self._t0, 3), **self._fields())
