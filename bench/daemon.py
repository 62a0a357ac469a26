"""A real ``ingestd serve`` subprocess on 127.0.0.1 and a free port, started and stopped by the bench."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from bench.proc import REPO, ingestd_exe


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True, slots=True)
class Daemon:
    """A running daemon.

    Attributes:
        url: str, ``http://127.0.0.1:PORT``.
        db: Path, its database.
        pid: int, its process id (CPU time is read from /proc while it runs).
        log: Path, its stderr.
    """

    url: str
    db: Path
    pid: int
    log: Path


def daemon_cpu_s(pid: int) -> float:
    """User+sys CPU seconds of a running process (from /proc; 0 when gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def running_daemon(workdir: Path, projects: Path | None, *, ready_timeout_s: float = 30.0) -> Iterator[Daemon]:
    """Start ``ingestd serve`` (durable: it answers 2xx only after commit) and stop it with SIGTERM.

    Raises:
        RuntimeError: it exited or did not accept connections within ``ready_timeout_s``.
    """
    port = free_port()
    db = workdir / "daemon.db"
    argv = [ingestd_exe(), "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port)]
    argv += ["--log-level", "warning"]
    if projects is None:
        argv.append("--no-tail")
    else:
        argv += ["--projects", str(projects)]
    log = workdir / "daemon.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO, start_new_session=True)
    try:
        wait_listening(proc, port, log, ready_timeout_s)
        yield Daemon(f"http://127.0.0.1:{port}", db, proc.pid, log)
    finally:
        stop_daemon(proc, timeout_s=20)


def wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path, timeout_s: float) -> None:
    """Wait until the daemon ``proc`` accepts connections on 127.0.0.1:``port``.

    Raises:
        RuntimeError: it exited (the tail of ``log`` says why) or did not listen within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"ingestd serve exited {proc.returncode}: {log.read_text()[-500:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"ingestd serve not listening after {timeout_s} s") from None
            time.sleep(0.05)


def stop_daemon(proc: subprocess.Popen[bytes], *, timeout_s: float) -> None:
    """Stop a daemon as the user would (SIGTERM: drain, commit, exit); killed after ``timeout_s`` seconds."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def temp_workdir() -> tempfile.TemporaryDirectory[str]:
    """A private temporary directory for one daemon."""
    return tempfile.TemporaryDirectory(prefix="ingestd-bench-")
