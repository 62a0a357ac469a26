"""``open_current``: what ``open_db`` and ``migrate`` both do before writing (one body, two callers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.commands._common import open_current
from ingestd.errors import ConfigError
from ingestd.store.migrate import files_on_disk


def test_a_new_database_is_migrated_once_and_current(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    conn, applied, folded = open_current(db)
    # an empty log projected under the current rules: 0 rows re-projected, the revision recorded
    assert [p.id for p in applied] == [f.id for f in files_on_disk()] and folded == 0
    conn.close()
    conn, applied, folded = open_current(db)
    assert applied == [] and folded is None
    conn.close()


def test_migrate_refuses_a_database_others_can_write(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    open_current(db)[0].close()
    os.chmod(db, 0o666)
    with pytest.raises(ConfigError):
        open_current(db)
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code != 0 and str(db) in res.output
