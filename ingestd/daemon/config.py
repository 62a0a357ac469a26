"""What the daemon runs with: ``ServeConfig``, built once from the resolved settings.

``ingestd serve`` resolves the settings table once (``ingestd.settings``: flag → ``INGESTD_*`` →
config file → default) and ``ServeConfig.from_settings`` turns that into the daemon's
configuration; every part of the daemon reads its values from here, the scheduled jobs and
shipping included (``ServeConfig.settings``), so nothing re-reads the environment or the file.
The field defaults are the settings table's defaults (``ingestd.settings.DEFAULTS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ingestd.http import guard
from ingestd.http.conns import ConnLimits
from ingestd.http.hooks import HookConfig
from ingestd.retention.backup import backup_dir_from
from ingestd.settings import DEFAULTS, Settings


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Everything ``serve`` needs.

    Attributes:
        db_path: Path, the database file.
        projects: tuple of Paths, projects roots to tail (empty: hooks only).
        host: str, bind address (loopback unless a token is set).
        port: int, TCP port (0 picks a free one: tests).
        otlp_port: int, a second port serving the same app for OTLP exporters (0: none).
        token: str | None, bearer token; excluded from repr so it is never logged.
        hooks: HookConfig, receiver limits.
        watchdog_window_s: float, inactivity before an agent becomes unknown: the one window of
            the daemon, logged at start (``ingestd.daemon.main``) so every writer applies it.
        watchdog_interval_s: float, seconds between watchdog ticks.
        rescan_interval_s: float, seconds between safety-net rescans of the roots.
        tail: bool, run the tailer (catch-up + follow).
        schedule: bool, run the scheduled prune and backup (tests turn it off; the setting
            ``schedule_enabled`` is read by the job itself).
        max_line_bytes: int, longer transcript lines are logged as oversized markers.
        allowed_hosts: tuple of str, extra names accepted in ``Host`` (setting ``allowed_hosts``).
        allowed_origins: tuple of str, extra origins accepted in ``Origin`` (setting ``allowed_origins``).
        conns: ConnLimits, header / keep-alive timeouts and the connection cap.
        stall_after_s: float, a writer or tailer stuck this long makes ``/api/health`` 503.
        backup_dir: Path | None, where backups go (checked with the database's files; None: the default).
        settings: Settings, the resolved table, for the scheduled jobs and shipping.
        event_loop: str, ``uvloop`` or ``asyncio`` (``ingestd.daemon.main.loop_factory``).
    """

    db_path: Path
    projects: tuple[Path, ...] = ()
    host: str = DEFAULTS.get_str("host")
    port: int = DEFAULTS.get_int("port")
    otlp_port: int = DEFAULTS.get_int("otlp_port")
    token: str | None = field(default=None, repr=False)
    hooks: HookConfig = field(default_factory=HookConfig)
    watchdog_window_s: float = DEFAULTS.get_float("watchdog_window_s")
    watchdog_interval_s: float = DEFAULTS.get_float("watchdog_interval_s")
    rescan_interval_s: float = DEFAULTS.get_float("rescan_interval_s")
    tail: bool = DEFAULTS.get_bool("tail")
    schedule: bool = True
    max_line_bytes: int = DEFAULTS.get_int("max_line_bytes")
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    conns: ConnLimits = field(default_factory=ConnLimits)
    stall_after_s: float = DEFAULTS.get_int("stall_after_ms") / 1000
    backup_dir: Path | None = None
    settings: Settings = DEFAULTS
    event_loop: str = DEFAULTS.get_str("event_loop")

    @classmethod
    def from_settings(
        cls, settings: Settings, *, db_path: Path, projects: tuple[Path, ...], token: str | None
    ) -> ServeConfig:
        """The daemon's configuration from the resolved ``settings`` (the only place that maps them).

        Millisecond settings become the seconds the parts take; a 0 ms timeout is kept at 1 ms.
        """

        def ms(name: str) -> int:
            return max(1, settings.get_int(name))

        return cls(
            db_path=db_path,
            projects=projects,
            host=settings.get_str("host"),
            port=settings.get_int("port"),
            otlp_port=settings.get_int("otlp_port"),
            token=token,
            hooks=HookConfig(
                max_body_bytes=settings.get_int("max_body_bytes"),
                hook_timeout_ms=settings.get_int("hook_timeout_ms"),
                body_timeout_ms=ms("body_timeout_ms"),
            ),
            watchdog_window_s=settings.get_float("watchdog_window_s"),
            watchdog_interval_s=settings.get_float("watchdog_interval_s"),
            rescan_interval_s=settings.get_float("rescan_interval_s"),
            tail=settings.get_bool("tail"),
            max_line_bytes=settings.get_int("max_line_bytes"),
            allowed_hosts=tuple(guard.split_list(settings.get_opt_str("allowed_hosts"))),
            allowed_origins=tuple(guard.split_list(settings.get_opt_str("allowed_origins"))),
            conns=ConnLimits(
                header_timeout_s=ms("header_timeout_ms") / 1000,
                keepalive_timeout_s=ms("keepalive_timeout_ms") / 1000,
                max_connections=max(1, settings.get_int("max_connections")),
            ),
            stall_after_s=ms("stall_after_ms") / 1000,
            backup_dir=backup_dir_from(settings, db_path) if settings.get_opt_str("backup_dir") else None,
            settings=settings,
            event_loop=settings.get_str("event_loop"),
        )
