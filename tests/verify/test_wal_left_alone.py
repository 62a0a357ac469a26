"""``verify`` and ``replay`` leave a ``-wal`` a kill -9 left as it is: the database file's bytes
do not change (they once checkpointed it into the file on closing; the data were the same)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from ingestd.store.connection import connect
from ingestd.store.migrate import migrate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"

# a writer killed -9 after its last commit: its transactions are in the -wal, not yet in the file
KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from ingestd.ingest.backfill import ingest_roots
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from ingestd.store.migrate import migrate
conn = connect(Path(sys.argv[1]))
migrate(conn)
conn.execute("PRAGMA wal_autocheckpoint=0")
ingest_roots(conn, [Path(sys.argv[2])], now="2026-02-01T00:00:00.000Z")
os.kill(os.getpid(), signal.SIGKILL)
"""


def digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.mark.parametrize("command", [["verify"], ["replay", "--json"]])
def test_a_wal_left_by_kill_9_is_read_not_checkpointed(tmp_path: Path, command: list[str]) -> None:
    db = tmp_path / "k.db"
    wal = Path(str(db) + "-wal")
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(db), str(FIXTURES)], capture_output=True)
    assert killed.returncode == -9, killed.stderr.decode()
    assert wal.stat().st_size > 0
    before, wal_before = digest(db), digest(wal)
    run = subprocess.run([sys.executable, "-m", "ingestd", *command, "--db", str(db)], capture_output=True)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    assert (digest(db), digest(wal)) == (before, wal_before)
    # the log the check read is the whole log: the next writer checkpoints it as ever
    conn = connect(db)
    rows = conn.execute("SELECT count(*) FROM events_raw").fetchall()[0][0]
    conn.close()
    assert rows > 0 and not wal.exists() and digest(db) != before


def test_a_clean_database_keeps_no_wal_files_after_a_check(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    assert (
        subprocess.run([sys.executable, "-m", "ingestd", "verify", "--db", str(db)], capture_output=True).returncode
        == 0
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.db"]
