"""The CLI contract for bad input (SPEC §9): a one-line message and exit 2, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect
from tests.seeded import seed


def run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(cli, list(args))
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def test_environment_errors_are_one_line_exit_2(db_path: Path) -> None:
    code, out = run("backup", "--db", str(db_path), "--dir", "/proc/no-such-dir/backups")
    assert code == 2
    assert "Traceback" not in out
    assert out.startswith("ingestd: ") and "/proc/no-such-dir" in out


def test_a_huge_limit_means_all(db_path: Path) -> None:
    conn = connect(db_path)
    seed(conn, sessions=3, days=1)
    conn.close()
    code, out = run("sessions", "--db", str(db_path), "--limit", "99999999999999999999", "--json")
    assert code == 0, out
    assert sorted(r["session_id"] for r in json.loads(out)["rows"]) == ["sess-0", "sess-1", "sess-2"]


def test_out_of_range_ports_are_usage_errors(db_path: Path) -> None:
    code, out = run("serve", "--db", str(db_path), "--port", "70000")
    assert code == 2 and "70000" in out
    code, out = run("hooks", "print", "--port", "-1")
    assert code == 2


def test_read_commands_never_create_or_migrate(tmp_path: Path, db_path: Path) -> None:
    missing = tmp_path / "nope" / "x.db"
    for args in (["sessions"], ["cost"], ["status"], ["pricing", "list"], ["replay"]):
        code, out = run(*args, "--db", str(missing))
        assert not missing.parent.exists(), args
        assert code == 2 and out.startswith(f"ingestd: no database at {missing}"), (args, out)
    code, out = run("migrate", "--status", "--db", str(missing))
    assert not missing.parent.exists()
    assert code == 0 and "pending  0001_schema" in out, out  # reports what a migrate would apply

    conn = connect(db_path)
    last = conn.execute("SELECT max(id) FROM schema_version").fetchall()[0][0]
    conn.execute("DELETE FROM schema_version WHERE id = ?", (last,))
    for cmd in ("sessions", "replay"):  # replay too: an older schema's log is not replayed half-way
        code, out = run(cmd, "--db", str(db_path))
        assert code == 2 and "needs migrations" in out and "ingestd migrate" in out, (cmd, out)
    assert conn.execute("SELECT max(id) FROM schema_version").fetchall()[0][0] < last  # nothing re-applied


def test_a_full_disk_exits_2_as_documented_and_says_what_to_do(tmp_path: Path) -> None:
    """The reference's exit statuses cover storage (2: every error but a failed check), and a full
    disk's message says what to do."""
    readme = " ".join((Path(__file__).resolve().parents[2] / "docs" / "reference.md").read_text().split())
    assert "Exit status: 0 success, 1 a check failed, 2 any other error: usage or configuration," in readme
    assert "or storage (the database or its disk refused: full, read-only," in readme
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)]).returncode:
        pytest.skip("needs root to mount a small tmpfs")
    try:
        root = tmp_path / "projects" / "-p"
        root.mkdir(parents=True)
        sid = "11111111-1111-4111-8111-111111111111"
        with (root / f"{sid}.jsonl").open("wb") as fh:  # 4 MB that do not compress
            for i in range(2000):
                rec = {"type": "user", "sessionId": sid, "uuid": f"u{i}", "timestamp": "2026-01-01T00:00:00.000Z"}
                rec["message"] = {"role": "user", "content": os.urandom(1000).hex()}
                fh.write(orjson.dumps(rec) + b"\n")
        res = CliRunner().invoke(cli, ["ingest", "--db", str(mnt / "f.db"), "--projects", str(root.parent)])
        assert res.exit_code == 2, res.output
        last = res.stderr.strip().splitlines()[-1]
        assert last.startswith("ingestd: database error: database or disk is full: free space on the disk"), last
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_every_error_but_a_failed_check_exits_2() -> None:
    import apsw

    from ingestd import errors
    from ingestd.store.connection import translate

    leaves = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.IngestdError)]
    assert {c.__name__ for c in leaves if c.exit_code != 2} == {"CheckFailed"}
    full = translate(apsw.FullError("database or disk is full"))
    assert full.exit_code == 2 and "free space on the disk holding the database" in full.message


@pytest.mark.parametrize(
    "args",
    [
        ["search", "a\udcff"],
        ["search", "--fts", "x\udcff"],
        ["search", "--project", "\udcff", "a"],
        ["search", "--session", "\udcff", "a"],
        ["sessions", "--project", "a\udcffb"],
        ["tree", "\udcff"],
        ["export", "--to", "out", "\udcff"],
        ["export", "--to", "out", "--project", "\udcff"],
    ],
)
def test_text_arguments_that_are_not_utf8_are_usage_errors(db_path: Path, args: list[str]) -> None:
    """argv bytes that are not UTF-8 arrive as lone surrogates; no SQL parameter takes them."""
    conn = connect(db_path)
    seed(conn, sessions=1, days=1)
    conn.close()
    code, out = run(*args, "--db", str(db_path))
    assert code == 2, out
    assert "holds bytes that are not UTF-8" in out and "\\xff" in out, out
    assert "Traceback" not in out
