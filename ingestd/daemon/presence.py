"""Whether the daemon runs: a small state file written by ``serve``, read and probed by ``status``.

``serve`` writes ``<db>.serve.json`` beside the database once it listens: ``pid``, ``host``,
``port``, ``started_at``, ``version``, ``db``. On a clean stop it rewrites the file with
``stopped_at``; after a kill -9 the file still names a pid that is gone. ``status`` reads the
file, checks the pid, and probes ``GET /api/health`` (a short timeout), so it answers from
evidence rather than guessing:

- ``running``: the pid is alive and ``/api/health`` answered 200; or 401: a token is required and
  ``status`` has none (or the wrong one), so the daemon answers but its health is not known (said in
  ``problem``, with the option that gives the token);
- ``unhealthy``: it answered with another status (503: the database or the writer is in trouble);
- ``not_responding``: the pid is alive but the probe failed or timed out (a stalled daemon);
- ``stopped``: the file says it stopped, or its pid is gone (then ``stale`` is true);
- ``never_started``: no state file.
"""

from __future__ import annotations

import contextlib
import http.client
import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from ingestd import __version__, files
from ingestd.core.timefmt import format_utc, parse
from ingestd.daemon.bind import reach_host
from ingestd.daemon.lock import PROC_LOCKS, holder_from_proc_locks
from ingestd.files import read_small

PROBE_TIMEOUT_S = 1.0
STATE_MAX_BYTES = 64 << 10  # the state file is a few hundred bytes; a larger one is no state


def state_path(db_path: Path) -> Path:
    """``<db>.serve.json`` beside the database file (symlinks resolved, as for the lock)."""
    real = Path(os.path.realpath(db_path))
    return real.with_name(real.name + ".serve.json")


def _write(path: Path, doc: dict[str, Any]) -> None:
    """Write ``doc`` atomically (a temporary file renamed over the old one), private (0600)."""
    files.replace(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n", 0o600)


def write_started(db_path: Path, *, host: str, port: int, now: datetime) -> Path:
    """Record that this process serves ``db_path`` on ``host:port`` since ``now``. Writes the state file.

    Returns:
        The state file's path.
    """
    path = state_path(db_path)
    doc = {
        "pid": os.getpid(),
        "host": host,
        "port": port,
        "started_at": format_utc(now),
        "version": __version__,
        "db": str(db_path),
    }
    _write(path, doc)
    return path


def write_stopped(db_path: Path, *, now: datetime, reason: str | None = None) -> None:
    """Add ``stopped_at`` (and ``stop_reason``, when the daemon stopped by itself) to this process's
    state file (a clean stop). Never raises on I/O errors."""
    path = state_path(db_path)
    with contextlib.suppress(OSError, orjson.JSONDecodeError):
        doc = orjson.loads(read_small(path, STATE_MAX_BYTES, "state file") or b"null")
        if isinstance(doc, dict) and doc.get("pid") == os.getpid():
            doc["stopped_at"] = format_utc(now)
            if reason is not None:
                doc["stop_reason"] = reason
            _write(path, doc)


def read_state(db_path: Path) -> dict[str, Any] | None:
    """The state file's document, or None when there is none or it is unreadable."""
    try:
        doc = orjson.loads(read_small(state_path(db_path), STATE_MAX_BYTES, "state file") or b"null")
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def served_as(db_path: Path) -> tuple[int, Path] | None:
    """The daemon holding the lock on the file ``db_path`` names, and the path it opened it by. Read-only.

    Keyed by the file's identity (``st_dev``, ``st_ino``), not its name: the lock is an ``flock`` on
    the database file, so ``/proc/locks`` names its holder whatever path it came through, and the
    holder's descriptor on that file (``/proc/<pid>/fd``) names the path its state file is beside.
    A hard link to the database has another name: by name alone, ``status`` through it would say
    "no daemon has served this database" while one does.

    Returns:
        ``(pid, path)``, or None: no daemon holds it, or not Linux, or its ``/proc`` is not ours to read.
    """
    try:
        st = os.stat(db_path)
        pid = holder_from_proc_locks(st.st_dev, st.st_ino, PROC_LOCKS.read_text())
        if pid is None:
            return None
        fds = f"/proc/{pid}/fd"
        for fd in os.listdir(fds):
            with contextlib.suppress(OSError):
                got = os.stat(os.path.join(fds, fd))
                if (got.st_dev, got.st_ino) == (st.st_dev, st.st_ino):
                    return pid, Path(os.readlink(os.path.join(fds, fd)))
    except OSError:
        return None
    return None


def _state_of(db_path: Path) -> tuple[Path, dict[str, Any] | None]:
    """The state file describing the daemon of the file ``db_path`` names, and its document.

    The one beside ``db_path``, unless a daemon that file does not name holds the database: then
    that daemon's, beside the path it serves the database by (``served_as``).
    """
    doc = read_state(db_path)
    holder = served_as(db_path)
    if holder is not None and (doc is None or doc.get("pid") != holder[0]):
        other = read_state(holder[1])
        if other is not None and other.get("pid") == holder[0]:
            return state_path(holder[1]), other
    return state_path(db_path), doc


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (signal 0; a process of another user counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def probe_health(
    host: str, port: int, timeout_s: float = PROBE_TIMEOUT_S, token: str | None = None
) -> tuple[int | None, str]:
    """``GET /api/health`` on the daemon (with ``token`` as a bearer token when given): ``(HTTP status,
    body or error text)``; status None: no answer."""
    conn = http.client.HTTPConnection(reach_host(host), port, timeout=timeout_s)
    try:
        conn.request("GET", "/api/health", headers={"Authorization": f"Bearer {token}"} if token else {})
        resp = conn.getresponse()
        return resp.status, resp.read(4096).decode(errors="replace")
    except (OSError, http.client.HTTPException) as e:
        return None, str(e) or type(e).__name__
    finally:
        conn.close()


@dataclass(frozen=True, slots=True)
class Presence:
    """What ``status`` knows about the daemon.

    Attributes:
        state: str, ``running``, ``unhealthy``, ``not_responding``, ``stopped`` or ``never_started``.
        pid: int | None, the daemon's process id (from the state file).
        address: str | None, ``host:port`` it serves.
        started_at: str | None, canonical UTC.
        stopped_at: str | None, canonical UTC, set by a clean stop.
        uptime_s: float | None, seconds since ``started_at`` (running only).
        version: str | None, the daemon's ingestd version.
        health: int | None, the HTTP status ``/api/health`` answered (None: no answer).
        problem: str | None, why the daemon is not ``running``, in words.
        state_file: str, the file read.
        db: str | None, the path the daemon was given for the database (its stall file is beside
            it, ``ingestd.store.stall.mirror_path``); None without a state file.
    """

    state: str
    pid: int | None
    address: str | None
    started_at: str | None
    stopped_at: str | None
    uptime_s: float | None
    version: str | None
    health: int | None
    problem: str | None
    state_file: str
    db: str | None = None

    @property
    def running(self) -> bool:
        """The daemon's process is alive and answered its health probe (whatever it said)."""
        return self.state in ("running", "unhealthy")

    def to_json(self) -> dict[str, Any]:
        """The ``daemon`` section of ``ingestd status --json``."""
        return {
            "running": self.running,
            "state": self.state,
            "pid": self.pid,
            "address": self.address,
            "started_at": self.started_at,
            "stopped_at": self.stopped_at,
            "uptime_s": self.uptime_s,
            "version": self.version,
            "health_status": self.health,
            "problem": self.problem,
            "state_file": self.state_file,
            "db": self.db,
        }


def detect(
    db_path: Path, now: datetime, *, timeout_s: float = PROBE_TIMEOUT_S, token: str | None = None, probe: bool = True
) -> Presence:
    """Whether a daemon serves ``db_path`` now: the state file, the pid, and a health probe. Read-only.

    Args:
        db_path: the database the daemon would serve.
        now: aware datetime, for the uptime.
        timeout_s: float, seconds the health probe may take.
        token: str | None, the daemon's bearer token, sent with the probe (a daemon with a token
            answers 401 without it: running, health unknown).
        probe: bool, False: no health probe; a live pid with an address is ``not_responding``
            ("not probed"), for a caller that needs only where the daemon listens.
    """
    path, doc = _state_of(db_path)
    if doc is None:
        never = "no daemon has served this database"
        return Presence("never_started", None, None, None, None, None, None, None, never, str(path))
    pid = doc.get("pid") if isinstance(doc.get("pid"), int) else None
    host = doc.get("host") if isinstance(doc.get("host"), str) else None
    port = doc.get("port") if isinstance(doc.get("port"), int) else None
    address = f"{host}:{port}" if host is not None and port is not None else None
    started, stopped = doc.get("started_at"), doc.get("stopped_at")
    version = doc.get("version") if isinstance(doc.get("version"), str) else None

    db = doc.get("db") if isinstance(doc.get("db"), str) else None
    # found through the lock holder (``_state_of``): the daemon knows this file by another name
    alias = db is not None and path != state_path(db_path)

    def make(state: str, health: int | None, problem: str | None, uptime: float | None = None) -> Presence:
        if alias and state != "stopped":
            hint = f"it serves this file as {db}: use that name (SQLite keeps the WAL by name; what this shows may lag)"
            problem = hint if problem is None else f"{problem}; {hint}"
        return Presence(state, pid, address, started, stopped, uptime, version, health, problem, str(path), db)

    if stopped:
        reason = doc.get("stop_reason")
        return make("stopped", None, f"stopped by itself: {reason}" if isinstance(reason, str) else "stopped cleanly")
    if pid is None or not pid_alive(pid):
        return make("stopped", None, f"process {pid} is gone (killed, or the machine restarted)")
    if host is None or port is None:
        return make("not_responding", None, "the state file names no address")
    if not probe:
        return make("not_responding", None, "not probed")
    status, body = probe_health(host, port, timeout_s, token)
    if status is None:
        return make("not_responding", None, f"process {pid} is alive but {address} did not answer: {body}")
    begun = parse(started) if isinstance(started, str) else None
    uptime = None if begun is None else round((now - begun).total_seconds(), 1)
    if status == 200:
        return make("running", status, None, uptime)
    if status == 401:  # the daemon answered, so it runs; whether it is healthy needs its token
        why = "the daemon refused the token given" if token else "the daemon requires a token"
        fix = "give status the daemon's token (--token-file PATH or --token-env NAME) to check its health"
        return make("running", status, f"health not checked: {why}; {fix}", uptime)
    return make("unhealthy", status, f"/api/health answered {status}: {body[:200]}", uptime)


def self_report(db_path: Path, now: datetime) -> Presence:
    """The daemon describing itself (``GET /api/status``): its own state file, no probe. Read-only."""
    path = state_path(db_path)
    doc = read_state(db_path) or {}
    host, port = doc.get("host"), doc.get("port")
    started = doc.get("started_at") if isinstance(doc.get("started_at"), str) else None
    begun = parse(started) if started else None
    return Presence(
        "running",
        os.getpid(),
        f"{host}:{port}" if host is not None and port is not None else None,
        started,
        None,
        None if begun is None else round((now - begun).total_seconds(), 1),
        __version__,
        200,
        None,
        str(path),
    )
