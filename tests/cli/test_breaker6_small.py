"""Small faults a tester found (breaker6): each message says what really happened."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect


def test_migrate_of_a_missing_file_says_it_created_a_new_database(tmp_path: Path) -> None:
    # `migrate --db typo.db` said "re-projected 0 log rows: the projector's rules changed"
    typo = tmp_path / "typo.db"
    res = CliRunner().invoke(cli, ["migrate", "--db", str(typo)])
    assert res.exit_code == 0, res.output
    assert f"created a new database at {typo}" in res.stdout
    assert "re-projected" not in res.output and "rules changed" not in res.output
    again = CliRunner().invoke(cli, ["migrate", "--db", str(typo)])
    assert again.stdout.strip() == "nothing pending: the schema is up to date"
    other = tmp_path / "other.db"
    doc = orjson.loads(CliRunner().invoke(cli, ["migrate", "--db", str(other), "--json"]).stdout)
    assert doc["created"] is True and doc["applied"]
    doc = orjson.loads(CliRunner().invoke(cli, ["migrate", "--db", str(other), "--json"]).stdout)
    assert doc["created"] is False and doc["applied"] == []


def test_migrate_of_an_empty_log_under_older_rules_reprojects_nothing_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert CliRunner().invoke(cli, ["migrate", "--db", str(db)]).exit_code == 0
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'projection_revision'")
    conn.close()
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "re-projected 0" not in res.stdout and "nothing re-projected" in res.stdout


def test_pricing_set_names_the_option_not_a_price_row(tmp_path: Path) -> None:
    # `pricing set ... --input -3` said "price row 0: ..." though the user gave no rows
    db = str(tmp_path / "p.db")
    base = ["pricing", "set", "m-1", "--db", db, "--effective-from", "2026-01-01"]
    cases = {
        ("--input", "-3"): "--input: rate for input (USD per MTok) must be a number from 0",
        ("--cache-write-5m", "x"): "--cache-write-5m: rate for cache_write_5m (USD per MTok) is not a number",
        ("--output", "1", "--speed", "fast=-1"): "--speed fast=X: speed multiplier for 'fast' must be a number",
        ("--output", "1", "--long-context-threshold", "5", "--long-context", "output=-2"): "--long-context output=USD:",
        ("--output", "1", "--long-context", "output=2"): "--long-context-threshold: long_context threshold",
        ("--input", "1", "--web-search-fee", "0.01"): "--web-search-fee: a server tool fee goes on the row's output",
        ("--output", "1", "--web-search-fee", "-1"): "--web-search-fee: web search fee must be a number",
    }
    for args, want in cases.items():
        res = CliRunner().invoke(cli, [*base, *args])
        assert res.exit_code == 2, (args, res.output)
        assert "price row" not in res.stderr, (args, res.stderr)
        assert want in res.stderr, (args, res.stderr)
    res = CliRunner().invoke(cli, ["pricing", "set", "m-1", "--db", db, "--effective-from", "never", "--input", "1"])
    assert res.exit_code == 2 and "--effective-from: 'effective_from' must be a date" in res.stderr
    # a price file still names its rows
    bad = tmp_path / "p.json"
    bad.write_bytes(orjson.dumps([{"model": "m", "effective_from": "2026-01-01", "rates": {"input": -3}}]))
    res = CliRunner().invoke(cli, ["pricing", "load", str(bad), "--db", db])
    assert res.exit_code == 2 and "price row 0: rate for input (USD per MTok) must be a number" in res.stderr


def test_a_store_url_of_another_scheme_is_refused_by_name(tmp_path: Path) -> None:
    # `ship --to mysql://x` surfaced libpq's `missing "=" after "mysql://x" in connection info string`
    db = tmp_path / "x.db"
    assert CliRunner().invoke(cli, ["migrate", "--db", str(db)]).exit_code == 0
    for cmd in (
        ["ship", "--db", str(db), "--to", "mysql://u:secret@x/db"],
        ["ship", "--db", str(db), "--to", "MySQL://x", "--dry-run"],
        ["cost", "--db", str(db), "--store", "sqlite:///x.db"],
        ["pricing", "list", "--store", "http://x"],
    ):
        res = CliRunner().invoke(cli, cmd)
        assert res.exit_code == 2, (cmd, res.output)
        assert "is not a PostgreSQL URL" in res.stderr and "postgresql://user@host/db" in res.stderr, cmd
        assert "missing" not in res.stderr and "secret" not in res.stderr, cmd
    res = CliRunner().invoke(cli, ["ship", "--db", str(db), "--to", "x"])
    assert res.exit_code == 2 and "not a PostgreSQL URL or connection string" in res.stderr, res.stderr


def test_readme_says_which_tree_make_demo_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the README said `make demo` reads fixtures/projects; demo.py prefers ../shared/corpus/claude-projects
    from ingestd import demo

    root = Path(demo.__file__).resolve().parents[1]
    para = " ".join((root / "README.md").read_text().split("`make demo` ", 1)[1].split("\n\n", 1)[0].split())
    shared = root.parent / "shared" / "corpus" / "claude-projects"
    assert "`../shared/corpus/claude-projects` beside the clone when there is one" in para
    assert "else the transcripts bundled in `fixtures/projects`" in para
    assert demo._corpus([]) == (shared if shared.is_dir() else root / "fixtures" / "projects")
    fake = tmp_path / "clone" / "ingestd" / "demo.py"  # a clone with no corpus beside it: the fixtures
    fake.parent.mkdir(parents=True)
    monkeypatch.setattr(demo, "__file__", str(fake))
    assert demo._corpus([]) == tmp_path / "clone" / "fixtures" / "projects"
    (tmp_path / "shared" / "corpus" / "claude-projects").mkdir(parents=True)
    assert demo._corpus([]) == tmp_path / "shared" / "corpus" / "claude-projects"


def test_a_full_disk_exits_2_as_documented_and_says_what_to_do(tmp_path: Path) -> None:
    # a full disk exited 2, which the README reserved for usage errors; now README says 2 is every
    # error but a failed check, storage included, and the message says what to do
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text().split())
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
