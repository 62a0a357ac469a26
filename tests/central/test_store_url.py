"""The central store's URL is checked before libpq reads it (``ingestd.central.pg.check_url``), by
every command that takes one."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli


def test_a_store_url_of_another_scheme_is_refused_by_name(tmp_path: Path) -> None:
    """A URL of another scheme is refused naming the scheme and the shape wanted (libpq would read it
    as a keyword string: 'missing "=" after ...'), and the password in it is never echoed."""
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
