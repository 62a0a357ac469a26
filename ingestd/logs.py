"""structlog, configured once: JSON lines (orjson) off a terminal, the console renderer on one.

Every command configures it (the root group's callback, ``ingestd.cli``), and every line goes
to **stderr**, whoever logs it and whenever: stdout is for the answer (``--json`` prints exactly
one document there, SPEC §12). Each line carries ``logger`` (the module's logger name).

One canonical line per unit of work: ``batch_committed rows=... elapsed_ms=...`` per
committed batch, ``hook_rejected status=... reason=...`` per refused request. Secrets
(the token) are never passed to a logger.

structlog is imported when the first line is logged, not when a command starts: importing it
(and rich, which its console renderer and tracebacks load) took 80 ms of every command's
110 ms of imports, and most commands (``--version``, ``cost``, ``sessions``) never log.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import weakref
from typing import Any, TextIO

import orjson

_configured = False
_applied = False
_wanted: dict[str, Any] = {"level": "info", "stream": None}


class _Stderr:
    """``sys.stderr`` looked up at every write (a test runner swaps it per invocation)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def _orjson_dumps(obj: Any, default: Any = None) -> str:
    return orjson.dumps(obj, default=default).decode()


class _NamedFactory:
    """``get_logger(name)`` → a print logger writing to ``out`` that knows its name
    (``structlog.stdlib.add_logger_name`` reads ``.name``)."""

    def __init__(self, out: Any) -> None:
        self._out = out

    def __call__(self, *args: Any) -> Any:
        import structlog

        logger = structlog.PrintLogger(self._out)
        logger.name = str(args[0]) if args else "ingestd"  # type: ignore[attr-defined]
        return logger


def configure(*, level: str = "info", stream: TextIO | None = None, force: bool = False) -> None:
    """Configure structlog for the process (idempotent unless ``force``); applied when the first
    line is logged (or at once if structlog is loaded already).

    Args:
        level: minimum level name (``debug``, ``info``, ``warning``, ``error``).
        stream: where lines go (default stderr); a TTY gets the console renderer.
        force: reconfigure even when already configured.
    """
    global _configured
    if _configured and not force:
        return
    _wanted.update(level=level, stream=stream)
    _configured = True
    if _applied or "structlog" in sys.modules:
        _apply()


def enabled(level: str) -> bool:
    """Whether a line at ``level`` (``debug``, ``info``, ...) passes the configured minimum level.

    Answered without importing structlog: a ``debug`` line guarded by it costs nothing in a command
    that logs nothing else (a cold ``ingestd ingest`` logged one when it trained its dictionary,
    and importing structlog for it took 0.1 s of the writer thread). Pure apart from reading the
    configuration.
    """
    want = logging.getLevelName(str(_wanted["level"]).upper())
    return bool(logging.getLevelName(level.upper()) >= want)


def load() -> None:
    """Import structlog and apply the configuration now (idempotent): for a caller that uses
    structlog directly (tests capturing lines) before any ingestd line was logged."""
    if not _applied:
        _apply()


def _apply() -> None:
    """Hand the wanted configuration to structlog (imported here)."""
    global _applied
    import structlog

    _applied = True

    level, stream = _wanted["level"], _wanted["stream"]
    out: Any = stream if stream is not None else _Stderr()
    tty = hasattr(out, "isatty") and out.isatty()
    renderer: Any = (
        structlog.dev.ConsoleRenderer() if tty else structlog.processors.JSONRenderer(serializer=_orjson_dumps)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.stdlib.add_logger_name,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=_NamedFactory(out),
        cache_logger_on_first_use=True,
    )
    for lazy in list(_lazies):  # a logger bound under the old configuration follows the new one
        lazy._unbind()


class _Lazy:
    """A logger whose structlog logger is made at its first line (structlog imported then).

    The first lookup binds the real logger once (what structlog's ``cache_logger_on_first_use``,
    set by ``_apply``, would keep anyway) and every attribute looked up is then kept on the
    instance: later ``log.info(...)`` calls are a plain attribute read, not two ``__getattr__``
    calls (this one and structlog's lazy proxy's) per line. A new configuration (``configure``
    with ``force``, e.g. ``serve --log-level debug``) unbinds every logger, so its next line
    binds again under the new level and stream.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._real: Any = None
        _lazies.add(self)

    def _unbind(self) -> None:
        """Forget the bound logger and the methods kept from it (the next line binds again)."""
        self.__dict__ = {"_name": self._name, "_real": None}

    def __getattr__(self, attr: str) -> Any:
        if self._real is None:
            import structlog

            load()
            self._real = structlog.get_logger(self._name).bind()
        value = getattr(self._real, attr)
        setattr(self, attr, value)  # found on the instance from now on: __getattr__ is not called again
        return value


_lazies: weakref.WeakSet[_Lazy] = weakref.WeakSet()


def get_logger(name: str) -> Any:
    """A logger named ``name``; lazy, it follows ``configure`` whenever that runs.

    The name is not bound into the context: the factory gives the logger its name and, once
    ``configure`` has run, ``add_logger_name`` writes it as ``logger=name`` on every line.
    Lines caught by ``structlog.testing.capture_logs`` therefore carry no ``logger`` key.
    """
    return _Lazy(name)


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


# Configured on import, before anything can log: structlog's own default prints to stdout, and a
# line there breaks a `--json` answer (SPEC §12). `serve` reconfigures with its --log-level.
configure()
