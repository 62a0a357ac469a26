"""Helpers every test folder shares: waiting on a condition with a deadline, a free port, and
whether this machine lets a test bind-mount (STYLE.md: no sleeps for synchronisation)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

POLL_S = 0.02


def _tries(what: str, timeout_s: float) -> Iterator[None]:
    """One turn per try of a condition, each after the one before has failed and waited; fails
    naming ``what`` when a try would start more than ``timeout_s`` seconds after the first."""
    deadline = time.monotonic() + timeout_s
    while True:
        yield
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def wait_for(what: str, cond: Callable[[], Any], timeout_s: float = 30.0, poll_s: float = POLL_S) -> Any:
    """Poll ``cond`` until it returns something truthy and return that; fail naming ``what`` after
    ``timeout_s`` seconds."""
    for _ in _tries(what, timeout_s):
        if value := cond():
            return value
        time.sleep(poll_s)


async def until(what: str, cond: Callable[[], Any], timeout_s: float = 10.0, poll_s: float = POLL_S) -> Any:
    """``wait_for`` for a test running on the event loop: the loop keeps running between polls."""
    for _ in _tries(what, timeout_s):
        if value := cond():
            return value
        await asyncio.sleep(poll_s)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def can_bind_mount(tmp: Path, *, read_only: bool = False) -> bool:
    """Whether ``unshare -m`` and ``mount --bind`` (``-o ro`` with ``read_only``) work here (root
    in a container that allows it); probed with two folders made under ``tmp``."""
    if shutil.which("unshare") is None:
        return False
    src, dst = tmp / "probe-src", tmp / "probe-dst"
    src.mkdir(exist_ok=True)
    dst.mkdir(exist_ok=True)
    opts = "-o ro " if read_only else ""
    r = subprocess.run(["unshare", "-m", "sh", "-c", f"mount --bind {opts}{src} {dst}"], capture_output=True)
    return r.returncode == 0


def log_rows(db: Path) -> int:
    """Rows in ``events_raw`` of the database at ``db``, read through a read-only connection of its own."""
    from ingestd.store.connection import connect

    conn = connect(db, readonly=True)
    try:
        n: Any = conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]
        return int(n)
    finally:
        conn.close()


@contextlib.contextmanager
def statements(conn: Any, containing: str = "") -> Iterator[list[str]]:
    """The SQL ``conn`` (an apsw connection) runs inside the block whose text holds ``containing``
    (every statement when empty), in order; the connection's exec tracer is put back after."""
    seen: list[str] = []

    def trace(_cursor: Any, sql: str, _bindings: Any) -> bool:
        if containing in sql:
            seen.append(sql)
        return True

    before = conn.exec_trace
    conn.exec_trace = trace
    try:
        yield seen
    finally:
        conn.exec_trace = before
