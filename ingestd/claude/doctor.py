"""``ingestd doctor``: what is wrong with how ingestd sits beside Claude Code, and what to do.

Each check gives one ``Finding`` (``ok``, ``note``: worth knowing, or ``action``: something to
do, with the command that does it); ``doctor`` exits 1 when any finding is ``action``. The
decisions are pure functions of what was read (``hooks_findings``, ``managed_findings``,
``cleanup_finding``, ...); ``gather`` reads the files, the daemon's state and the database.

Claude Code's settings are read where Claude Code reads them (docs/claude-code.md §1.3, §3): the
user's ``settings.json`` in its config directory, the current project's ``.claude/settings.json``
and ``.claude/settings.local.json``, and the managed settings an administrator installs
(``MANAGED_SETTINGS``: ``managed-settings.json`` and the drop-in folder ``managed-settings.d/``),
which can stop http hooks without a word: ``disableAllHooks``, ``allowManagedHooksOnly`` (only
the managed file's own hooks run) and ``allowedHttpHookUrls`` (URL patterns, ``*`` any run of
characters; a URL matching none is not called).

``cleanupPeriodDays`` (default 30) is how long Claude Code keeps a transcript after its last
write: older ones are deleted at its next start. The check counts the transcripts on disk past
it and whether the log holds each whole (its checkpoint reaches the file's size), since those
are the ones about to exist only in ingestd.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from ingestd.claude import hooksetup, pluginsetup
from ingestd.daemon import presence
from ingestd.ingest.scan import discover
from ingestd.projection.reproject import stale_projection
from ingestd.report.status import notices_line, notices_section
from ingestd.store import migrate
from ingestd.store.connection import Db, connect, storage_errors

OK = "ok"
NOTE = "note"
ACTION = "action"
DEFAULT_CLEANUP_DAYS = 30
DAY_NS = 86_400 * 10**9
# Where administrators put Claude Code's managed settings, per platform.
MANAGED_SETTINGS = {
    "linux": Path("/etc/claude-code"),
    "darwin": Path("/Library/Application Support/ClaudeCode"),
}
# Free space on the database's disk below this fraction, or below the database's size (a backup
# needs as much), needs action.
DISK_FREE_MIN_FRACTION = 0.05


@dataclass(frozen=True, slots=True)
class Finding:
    """One check's answer.

    Attributes:
        check: str, which check (``daemon``, ``hooks``, ``managed_settings``, ``status_line``,
            ``cleanup``, ``projects``, ``disk``, ``migrations``, ``telemetry``, ``notices``).
        level: str, ``ok``, ``note`` or ``action``.
        message: str, what was found, one sentence.
        fix: str | None, what to do (a command where there is one).
    """

    check: str
    level: str
    message: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "level": self.level, "message": self.message, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class SettingsFile:
    """One Claude Code settings file as read.

    Attributes:
        path: Path. doc: dict, its object (``{}`` when missing). problem: str | None, why it could
            not be read (then ``doc`` is ``{}``).
    """

    path: Path
    doc: dict[str, Any]
    problem: str | None = None


def read_settings(path: Path) -> SettingsFile:
    """``path`` as Claude Code settings; a file that cannot be read is a ``problem``, never an error."""
    try:
        text = hooksetup.read_text(path)
        return SettingsFile(path, hooksetup.parse_settings(text, path))
    except OSError as e:
        return SettingsFile(path, {}, f"cannot read it ({e.strerror or e})")
    except Exception as e:  # InputError: the file is not settings Claude Code can read either
        return SettingsFile(path, {}, str(getattr(e, "message", e)))


def managed_files(base: Path | None) -> list[Path]:
    """The managed settings files under ``base``: ``managed-settings.json``, then the drop-ins of
    ``managed-settings.d/`` by name (later ones win, as Claude Code merges them)."""
    if base is None:
        return []
    out = [base / "managed-settings.json"]
    drop = base / "managed-settings.d"
    if drop.is_dir():
        out += sorted(p for p in drop.iterdir() if p.suffix == ".json")
    return [p for p in out if p.exists()]


def _events_hooked(doc: dict[str, Any]) -> set[str]:
    hooks = doc.get("hooks")
    if not isinstance(hooks, dict):
        return set()
    is_ours = hooksetup.ours_in(doc)
    out = set()
    for event, groups in hooks.items():
        for g in groups if isinstance(groups, list) else ():
            if isinstance(g, dict) and any(is_ours(h) for h in g.get("hooks") or ()):
                out.add(event)
    return out


def _our_urls(doc: dict[str, Any]) -> set[str]:
    is_ours = hooksetup.ours_in(doc)
    return {
        h["url"]
        for h in hooksetup.hooks_of(doc)
        if is_ours(h) and h.get("type") == "http" and isinstance(h.get("url"), str)
    }


def hooks_findings(files: Sequence[SettingsFile], daemon_url: str | None) -> list[Finding]:
    """Whether Claude Code's hooks reach the daemon: installed (``hooks install`` or the plugin),
    not both and not twice, every event, to the daemon's URL, not switched off. Pure.

    Args:
        files: the user's, the project's and the project's local settings (``SettingsFile``).
        daemon_url: ``http://host:port/hooks`` of the running daemon, or None.
    """
    out: list[Finding] = []
    for f in files:
        if f.problem:
            out.append(Finding("hooks", ACTION, f"{f.path}: {f.problem}", "fix the file: Claude Code cannot read it"))
    installed = [f for f in files if pluginsetup.hooks_installed_in(f.doc)]
    plugin = [(f, ids) for f in files if (ids := pluginsetup.enabled_in(f.doc))]
    off = [f for f in files if f.doc.get("disableAllHooks") is True]
    for f in off:
        out.append(Finding("hooks", ACTION, f"{f.path} sets disableAllHooks: no hook runs", "remove disableAllHooks"))
    if not installed and not plugin:
        out.append(
            Finding(
                "hooks",
                ACTION,
                "no ingestd hooks are installed: only the transcripts reach the log (no live status, no prompts)",
                "ingestd hooks install (or install the ingestd plugin: docs/reference.md, 'The Claude Code plugin')",
            )
        )
        return out
    if installed and plugin:
        where = ", ".join(str(f.path) for f in installed)
        enabled = ", ".join(i for _, found in plugin for i in found)
        out.append(
            Finding(
                "hooks",
                ACTION,
                f"both hooks install's hooks ({where}) and the ingestd plugin ({enabled}) are on:"
                " every event arrives twice",
                "ingestd hooks uninstall, or claude plugin disable " + plugin[0][1][0],
            )
        )
    elif len(installed) > 1:
        where = ", ".join(str(f.path) for f in installed)
        out.append(
            Finding(
                "hooks",
                ACTION,
                f"ingestd's hooks are installed in more than one settings file ({where}): every event arrives twice",
                "ingestd hooks uninstall (the user's) or ingestd hooks uninstall --project DIR",
            )
        )
    want = set(hooksetup.HTTP_EVENTS) | set(hooksetup.COMMAND_ONLY_EVENTS)
    for f in installed:
        missing = sorted(want - _events_hooked(f.doc))
        if missing:
            out.append(
                Finding(
                    "hooks",
                    ACTION,
                    f"{f.path} hooks {len(want) - len(missing)} of the {len(want)} events ingestd installs"
                    f" (missing: {', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''})",
                    "ingestd hooks install (again: it replaces ingestd's hooks with the current set)",
                )
            )
        urls = _our_urls(f.doc)
        if daemon_url is not None and urls and urls != {daemon_url}:
            out.append(
                Finding(
                    "hooks",
                    ACTION,
                    f"{f.path} posts to {', '.join(sorted(urls))}, but the daemon listens on {daemon_url}",
                    "ingestd hooks install (it posts to the running daemon)",
                )
            )
    if not any(x.level == ACTION for x in out):
        how = (
            "the ingestd plugin" if plugin else "hooks install's hooks in " + ", ".join(str(f.path) for f in installed)
        )
        out.append(Finding("hooks", OK, f"hooks reach the daemon through {how}"))
    return out


def url_allowed(url: str, patterns: Iterable[Any]) -> bool:
    """``url`` matches one of ``allowedHttpHookUrls`` (``*``: any run of characters). Pure."""
    for p in patterns:
        if isinstance(p, str) and re.fullmatch(".*".join(re.escape(s) for s in p.split("*")), url):
            return True
    return False


def managed_findings(files: Sequence[SettingsFile], hook_url: str) -> list[Finding]:
    """What the managed settings do to ingestd's hooks (``hook_url``: where they post). Pure."""
    out: list[Finding] = []
    for f in files:
        d = f.doc
        if d.get("disableAllHooks") is True:
            out.append(Finding("managed_settings", ACTION, f"{f.path} sets disableAllHooks: no hook runs", _ADMIN))
        if d.get("allowManagedHooksOnly") is True:
            out.append(
                Finding(
                    "managed_settings",
                    ACTION,
                    f"{f.path} sets allowManagedHooksOnly: the hooks of settings.json and of plugins do not run",
                    _ADMIN + " (or have ingestd's hooks added to the managed settings: ingestd hooks print)",
                )
            )
        allowed = d.get("allowedHttpHookUrls")
        if isinstance(allowed, list) and not url_allowed(hook_url, allowed):
            out.append(
                Finding(
                    "managed_settings",
                    ACTION,
                    f"{f.path}: allowedHttpHookUrls does not allow {hook_url}:"
                    " Claude Code does not call the http hooks",
                    _ADMIN + f" (add {hook_url} to allowedHttpHookUrls)",
                )
            )
    if not out:
        names = ", ".join(str(f.path) for f in files)
        out.append(Finding("managed_settings", OK, f"managed settings allow the hooks ({names or 'none installed'})"))
    return out


_ADMIN = "ask whoever manages Claude Code on this machine"


def status_line_finding(files: Sequence[SettingsFile], installer: str | None) -> Finding:
    """Whether a status line is configured, and whether it is ingestd's. Pure.

    Args:
        installer: the command that installs ingestd's status line, None when this ingestd has none.
    """
    for f in reversed(files):  # the project's wins over the user's
        line = f.doc.get("statusLine")
        if isinstance(line, dict):
            command = str(line.get("command") or "")
            if "ingestd" in command or "statusclient" in command:
                return Finding("status_line", OK, f"the status line runs {command} ({f.path})")
            return Finding("status_line", NOTE, f"the status line runs {command!r}, not ingestd ({f.path})")
    return Finding(
        "status_line",
        NOTE,
        "no status line is configured: Claude Code shows nothing of what ingestd knows while you work",
        installer,
    )


@dataclass(frozen=True, slots=True)
class TelemetryLog:
    """What the log holds of Claude Code's OTLP exports.

    Attributes:
        requests: int, export requests logged. last_at: str | None, canonical UTC of the newest.
        sweeps: int, ``retention_sweep`` events (Claude Code deleting old transcripts).
    """

    requests: int = 0
    last_at: str | None = None
    sweeps: int = 0


def telemetry_log(conn: Db | None) -> TelemetryLog:
    """``TelemetryLog`` of the database (empty without one). Read-only; reads the key index's range of
    OTLP rows (``ingestd.core.otlp``: ``o:r:`` requests, ``o:l:`` records; ``log_rows.key``, where
    every key but a transcript line's is kept), never the whole log; ``last`` is the newest
    request's receipt time."""
    if conn is None:
        return TelemetryLog()
    with storage_errors():
        ((n, last),) = list(
            conn.execute(
                "SELECT n, (SELECT received_at FROM events_raw WHERE id = newest) FROM (SELECT count(*) AS n,"
                " max(id) AS newest FROM log_rows WHERE key >= 'o:r:' AND key < 'o:r;')"
            )
        )
        ((sweeps,),) = list(
            conn.execute(
                "SELECT count(*) FROM log_rows r JOIN log_kinds k ON k.id = r.kind"
                " WHERE r.key >= 'o:l:' AND r.key < 'o:l;' AND k.event_type = 'retention_sweep'"
            )
        )
    return TelemetryLog(int(n), str(last) if last is not None else None, int(sweeps))


def telemetry_finding(files: Sequence[SettingsFile], daemon_base: str | None, seen: TelemetryLog) -> Finding:
    """Whether Claude Code's own telemetry reaches the daemon (``hooks install --otel``). Pure.

    Args:
        files: the settings files, the project's last (its ``env`` wins).
        daemon_base: ``http://host:port`` of the running daemon, None when none runs.
        seen: what the log holds of exports.
    """
    env: dict[str, Any] = {}
    for f in files:
        e = f.doc.get("env")
        if isinstance(e, dict):
            env.update(e)
    fix = "ingestd hooks install --otel"
    sweeps = f"; Claude Code reported {seen.sweeps} retention sweeps (old transcripts deleted)" if seen.sweeps else ""
    if str(env.get("CLAUDE_CODE_ENABLE_TELEMETRY", "")) not in ("1", "true"):
        # optional: a machine set up without it is set up
        msg = "Claude Code's own telemetry is off (optional: it adds the calls transcripts never show)"
        return Finding("telemetry", OK, msg, fix)
    endpoint = str(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")).rstrip("/")
    if str(env.get("OTEL_LOGS_EXPORTER", "")) != "otlp" or not endpoint:
        return Finding("telemetry", NOTE, "telemetry is on but its logs are not exported over OTLP", fix)
    if daemon_base is not None and endpoint != daemon_base:
        return Finding(
            "telemetry",
            NOTE if seen.requests == 0 else ACTION,
            f"telemetry goes to {endpoint}, the daemon listens on {daemon_base}",
            fix,
        )
    if seen.requests == 0:
        return Finding(
            "telemetry",
            NOTE,
            f"telemetry is sent to {endpoint}, but no export has reached the daemon yet (run Claude Code once)"
            + sweeps,
        )
    return Finding(
        "telemetry",
        OK,
        f"telemetry reaches the daemon: {seen.requests} exports, the last at {seen.last_at}" + sweeps,
    )


def cleanup_days(files: Sequence[SettingsFile]) -> tuple[int, Path | None]:
    """``cleanupPeriodDays`` as Claude Code applies it (the last of ``files`` that sets it: pass them
    user, project, local, managed) and where it came from (None: the default). Pure."""
    days, where = DEFAULT_CLEANUP_DAYS, None
    for f in files:
        v = f.doc.get("cleanupPeriodDays")
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            days, where = v, f.path
    return days, where


def cleanup_finding(days: int, where: Path | None, older: int, not_logged: Sequence[str]) -> Finding:
    """What ``cleanupPeriodDays`` will delete, and whether the log holds it. Pure.

    Args:
        older: transcripts on disk last written more than ``days`` ago.
        not_logged: those of them the log does not hold whole (their paths).
    """
    src = f"cleanupPeriodDays {days} ({where})" if where else f"cleanupPeriodDays {days} (the default)"
    if days == 0:
        return Finding(
            "cleanup", ACTION, f"{src}: Claude Code keeps no transcripts at all", "set cleanupPeriodDays above 0"
        )
    if not_logged:
        shown = ", ".join(not_logged[:3]) + (", ..." if len(not_logged) > 3 else "")
        return Finding(
            "cleanup",
            ACTION,
            f"{src}: {older} transcripts are older and Claude Code deletes them at its next start;"
            f" {len(not_logged)} are not all in the log ({shown})",
            "ingestd ingest (now, before Claude Code starts again)",
        )
    if older:
        return Finding(
            "cleanup",
            OK,
            f"{src}: {older} transcripts are older and will be deleted by Claude Code; every one is in the log"
            " (ingestd export gives them back)",
        )
    return Finding("cleanup", OK, f"{src}: no transcript on disk is older")


def disk_finding(db_path: Path, db_bytes: int, free: int, total: int) -> Finding:
    """Whether the database's disk has room: a backup needs the database's size. Pure."""
    gib = free / (1 << 30)
    if free < db_bytes or free < total * DISK_FREE_MIN_FRACTION:
        return Finding(
            "disk",
            ACTION,
            f"{gib:.1f} GiB free on the disk of {db_path} ({free / max(total, 1):.0%}; the database is"
            f" {db_bytes / (1 << 20):.0f} MiB): writes and backups will fail when it fills",
            "free space on that disk, or ingestd prune",
        )
    return Finding("disk", OK, f"{gib:.1f} GiB free on the disk of {db_path}")


def daemon_finding(p: presence.Presence) -> Finding:
    """Whether the daemon runs and answers (``presence.detect``). Pure."""
    if p.state == "running":
        return Finding("daemon", OK, f"running: pid {p.pid} on {p.address}")
    if p.state == "unhealthy":
        return Finding("daemon", ACTION, f"running but unhealthy: {p.problem}", "ingestd status")
    return Finding(
        "daemon",
        ACTION,
        f"not running ({p.problem}): hooks are refused and transcripts are read only by ingestd ingest",
        "ingestd service install (or ingestd serve)",
    )


def database_findings(conn: Db | None, db_path: Path) -> list[Finding]:
    """Pending migrations and stale projections of the database (None: there is none). Read-only."""
    if conn is None:
        return [Finding("migrations", NOTE, f"no database at {db_path} yet", "ingestd serve (or ingestd ingest)")]
    st = migrate.status(conn)
    out: list[Finding] = []
    if st.problems:
        out.append(Finding("migrations", ACTION, "; ".join(st.problems), "ingestd migrate --status"))
    if st.pending:
        names = ", ".join(p.stem for p in st.pending)
        out.append(Finding("migrations", ACTION, f"migrations pending: {names}", f"ingestd migrate --db {db_path}"))
    stale = stale_projection(conn, db_path) if not st.pending else None
    if stale is not None:
        out.append(Finding("migrations", ACTION, stale.message(), stale.fix))
    return out or [Finding("migrations", OK, "schema and projections current")]


def notices_finding(conn: Db | None) -> Finding | None:
    """The task-notifications that name no agent (``report.status.notices_section``): a note, never an
    action (they are kept in the log; an agent whose transcript is read later matches its notice).
    None without a database. Read-only."""
    if conn is None:
        return None
    sec = notices_section(conn)
    return Finding("notices", NOTE if sec["unmatched"] else OK, notices_line(sec))


def logged_whole(conn: Db | None) -> dict[str, int]:
    """Each transcript's committed offset in the log (bytes read to), by origin (the largest over
    roots). Read-only."""
    if conn is None:
        return {}
    with storage_errors():
        rows = conn.execute("SELECT origin, max(committed_offset) FROM ingest_checkpoints GROUP BY origin")
        return {str(o): int(n) for o, n in rows}


def projects_findings(
    roots: Sequence[Path], now_ns: int, days: int, where: Path | None, read_to: Mapping[str, int]
) -> list[Finding]:
    """The projects roots readable, and the cleanup check over their transcripts. Reads the roots."""
    out: list[Finding] = []
    older, not_logged = 0, []
    cutoff = now_ns - days * DAY_NS
    for root in roots:
        if not root.exists():
            out.append(Finding("projects", NOTE, f"{root} does not exist (Claude Code has not run as this user yet?)"))
            continue
        unreadable: list[tuple[str, str]] = []
        try:
            found = discover(root, unreadable)
        except OSError as e:
            out.append(Finding("projects", ACTION, f"{root} cannot be read ({e.strerror or e})", f"chmod u+rx {root}"))
            continue
        if unreadable:
            shown = ", ".join(p for _, p in unreadable[:3])
            out.append(
                Finding(
                    "projects",
                    ACTION,
                    f"{len(unreadable)} entries under {root} cannot be read ({shown})",
                    "fix their permissions",
                )
            )
        else:
            out.append(Finding("projects", OK, f"{root}: {len(found)} files, all readable"))
        for f in found:
            if f.mtime_ns < cutoff:
                older += 1
                if read_to.get(f.origin, -1) < f.size:
                    not_logged.append(f.origin)
    out.append(cleanup_finding(days, where, older, not_logged))
    return out


def open_readonly(db_path: Path) -> Db | None:
    """The database read-only, whatever its migrations (None: no file). Read-only."""
    if not db_path.exists():
        return None
    return connect(db_path, readonly=True)


def gather(
    *,
    db_path: Path,
    roots: Sequence[Path],
    config_dir: Path,
    cwd: Path,
    now: datetime,
    managed_base: Path | None,
) -> list[Finding]:
    """Every check, in the order shown. Reads the settings files, the daemon's state (and probes
    its health), the database read-only, the projects roots and the disk."""
    user = read_settings(config_dir / "settings.json")
    project = [read_settings(cwd / ".claude" / n) for n in ("settings.json", "settings.local.json")]
    files = [user, *(p for p in project if p.path.exists() and p.path != user.path)]
    managed = [read_settings(p) for p in managed_files(managed_base)]
    daemon = presence.detect(db_path, now)
    findings = [daemon_finding(daemon)]
    url = f"http://{daemon.address}/hooks" if daemon.running and daemon.address else None
    findings += hooks_findings(files, url)
    findings += managed_findings(managed, url or pluginsetup.DEFAULT_TARGET.url)
    has_installer = importlib.util.find_spec("ingestd.commands.statusline") is not None
    findings.append(status_line_finding(files, "ingestd statusline install" if has_installer else None))
    conn = open_readonly(db_path)
    try:
        days, where = cleanup_days([*files, *managed])
        findings += projects_findings(roots, int(now.timestamp() * 1e9), days, where, logged_whole(conn))
        usage = shutil.disk_usage(db_path.parent if db_path.parent.exists() else Path.home())
        size = db_path.stat().st_size if db_path.exists() else 0
        findings.append(disk_finding(db_path, size, usage.free, usage.total))
        findings += database_findings(conn, db_path)
        base = f"http://{daemon.address}" if daemon.running and daemon.address else None
        findings.append(telemetry_finding(files, base, telemetry_log(conn)))
        notices = notices_finding(conn)
        if notices is not None:
            findings.append(notices)
    finally:
        if conn is not None:
            conn.close()
    return findings


def platform_managed_base() -> Path | None:
    """Where this platform keeps Claude Code's managed settings (None: unknown platform)."""
    return MANAGED_SETTINGS.get(sys.platform)


def to_json(findings: Sequence[Finding]) -> dict[str, Any]:
    """``doctor --json``: ``{"action_needed": bool, "findings": [Finding.to_json()]}``."""
    return {"action_needed": any(f.level == ACTION for f in findings), "findings": [f.to_json() for f in findings]}
