"""structlog, configured once: JSON lines (orjson) off a terminal, the console renderer on one.

One canonical line per unit of work: ``batch_committed rows=... elapsed_ms=...`` per
committed batch, ``hook_rejected status=... reason=...`` per refused request. Secrets
(the token) are never passed to a logger.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, TextIO

import orjson
import structlog

_configured = False


def _orjson_dumps(obj: Any, default: Any = None) -> str:
    return orjson.dumps(obj, default=default).decode()


def configure(*, level: str = "info", stream: TextIO | None = None, force: bool = False) -> None:
    """Configure structlog for the process (idempotent unless ``force``).

    Args:
        level: minimum level name (``debug``, ``info``, ``warning``, ``error``).
        stream: where lines go (default stderr); a TTY gets the console renderer.
        force: reconfigure even when already configured.
    """
    global _configured
    if _configured and not force:
        return
    out = stream if stream is not None else sys.stderr
    tty = hasattr(out, "isatty") and out.isatty()
    renderer: Any = (
        structlog.dev.ConsoleRenderer() if tty else structlog.processors.JSONRenderer(serializer=_orjson_dumps)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=True,
    )
    _configured = True


def get_logger(name: str) -> Any:
    """A bound logger carrying ``logger=name``."""
    return structlog.get_logger(name)


def forward_sqlite_log() -> None:
    """Send SQLite's own log (WAL recovery after a crash, I/O warnings) to structlog.

    Must run before the first connection is opened; later calls are ignored.
    """
    import apsw

    sqlite_log = get_logger("ingestd.sqlite")

    def handler(code: int, message: str) -> None:
        primary = code & 0xFF
        if primary == 17:  # SQLITE_SCHEMA: the statement is re-prepared automatically
            sqlite_log.debug("sqlite_log", code=code, message=message)
        elif primary == 27:  # SQLITE_NOTICE, e.g. WAL frames recovered after a crash
            sqlite_log.info("sqlite_log", code=code, message=message)
        else:
            sqlite_log.warning("sqlite_log", code=code, message=message)

    with contextlib.suppress(apsw.MisuseError):
        apsw.config(apsw.SQLITE_CONFIG_LOG, handler)
