"""A throwaway PostgreSQL cluster for the tests and the benchmarks (SPEC §13: a real server, no mocks).

``Cluster.start()`` runs ``initdb`` into a fresh temporary directory and ``pg_ctl start`` on a free
loopback port (and a unix socket in the same directory); ``stop()`` stops it immediately and
removes the directory. ``initdb`` refuses to run as root, so as root the cluster is owned by and
run as the ``postgres`` system user (created by Debian's postgresql package) through ``runuser``.
Trust authentication on loopback only: the cluster lives for one test session.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import free_port


def bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/NN/bin`` holding ``initdb`` and ``pg_ctl`` (or ``$PG_BINDIR``)."""
    env = os.environ.get("PG_BINDIR")
    candidates = [env] if env else sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]))
    for c in reversed(candidates):
        if c and (Path(c) / "initdb").exists() and (Path(c) / "pg_ctl").exists():
            return Path(c)
    return None


@dataclass
class Cluster:
    """One running cluster: ``url(dbname)`` names a database in it."""

    bindir: Path
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="ingestd-pg-")))
    port: int = field(default_factory=free_port)
    superuser: str = "postgres"
    _as: list[str] = field(default_factory=list)

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, capture_output=True, timeout=120)

    def start(self) -> Cluster:
        """initdb + pg_ctl start; returns self once the server accepts connections."""
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                # binaries present without Debian's postgresql-common user: initdb refuses root, so make one
                subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], check=True, timeout=60)
                owner = pwd.getpwnam("postgres")
            os.chown(self.root, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        data = self.root / "data"
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(data),
            "-A",
            "trust",
            "-U",
            self.superuser,
            "-E",
            "UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        opts = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        self._run(str(self.bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(self.root / "log"), "-w", "start")
        return self

    def stop(self) -> None:
        """Stop the server (immediate) and delete its directory."""
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def url(self, dbname: str = "postgres") -> str:
        """A libpq URL for ``dbname`` (no password: trust authentication)."""
        return f"postgresql://{self.superuser}@127.0.0.1:{self.port}/{dbname}"
