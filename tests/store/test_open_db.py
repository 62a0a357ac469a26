"""``open_db``'s writing modes: what ``ingest`` and ``migrate`` both do before writing (one body, two callers)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.commands._common import open_db
from ingestd.errors import ConfigError
from ingestd.store.migrate import files_on_disk


def test_a_new_database_is_migrated_once_and_current(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    opened = open_db(db, "migrate")
    # an empty log projected under the current rules: 0 rows re-projected, the revision recorded
    assert [p.id for p in opened.migrated] == [f.id for f in files_on_disk()] and opened.reprojected == 0
    opened.db.close()
    opened = open_db(db, "migrate")
    assert opened.migrated == () and opened.reprojected is None
    opened.db.close()


def test_migrate_refuses_a_database_others_can_write(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    open_db(db, "migrate").db.close()
    os.chmod(db, 0o666)
    with pytest.raises(ConfigError):
        open_db(db, "migrate")
    res = CliRunner().invoke(cli, ["migrate", "--db", str(db)])
    assert res.exit_code != 0 and str(db) in res.output
