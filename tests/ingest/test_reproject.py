"""A database projected under older projector rules is re-projected from its log on first write open."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.commands._common import RebuildBar, migration_status, open_db
from ingestd.core.ledger import Pin
from ingestd.core.revision import PROJECTION_REVISION
from ingestd.daemon import lock
from ingestd.projection.dump import canonical_rows
from ingestd.projection.reproject import PROJECTION_TABLES, ensure_current, stored_revision
from ingestd.store.connection import connect
from ingestd.store.identity import database_identity
from ingestd.store.migrate import migrate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = connect(db)
    return {t: canonical_rows(conn, t) for t in PROJECTION_TABLES}


def test_stale_projections_are_rebuilt_and_the_revision_recorded(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES), "--json"])
    assert res.exit_code == 0, res.output
    want = dump(db)
    assert want["token_usage"] and want["agents"]
    conn = connect(db)
    assert stored_revision(conn) == str(PROJECTION_REVISION)
    # What an older ingestd might have left: other rows, and an older revision.
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'projection_revision'")
    conn.execute("UPDATE token_usage SET output = output + 1")
    conn.execute("DELETE FROM tool_calls")
    conn.execute("UPDATE agents SET subagent_type = 'stale'")
    open_db(db)
    assert dump(db) == want
    assert stored_revision(connect(db)) == str(PROJECTION_REVISION)


def test_current_projections_are_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES)])
    conn = connect(db)
    conn.execute("UPDATE token_usage SET output = output + 1")  # a tamper only replay should find
    tampered = dump(db)
    open_db(db)
    assert dump(db) == tampered


def test_a_reprojection_reports_its_progress_to_the_end(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES)])
    conn = connect(db)
    logged = conn.execute("SELECT count(*) FROM events_raw WHERE session_id IS NOT NULL").fetchall()[0][0]
    conn.execute("UPDATE meta SET value = '0' WHERE key = 'projection_revision'")
    seen: list[tuple[int, int]] = []
    done = ensure_current(conn, db, ctx=database_identity(conn), progress=lambda d, t: seen.append((d, t)))
    assert done is not None and done.resumed_rows == 0
    folded = done.log_rows
    assert folded and seen[0] == (0, logged) and seen[-1] == (folded, folded)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_rebuild_bar_draws_on_a_terminal_and_nothing_elsewhere() -> None:
    term, pipe = _Terminal(), io.StringIO()
    for stream in (term, pipe):
        bar = RebuildBar(stream)
        for done in (0, 50, 100):
            bar(done, 100)
        bar.close()
    assert "re-projecting the log" in term.getvalue() and "(resumed)" not in term.getvalue()
    assert pipe.getvalue() == ""


def test_the_rebuild_bar_of_a_resumed_reprojection_says_so() -> None:
    term = _Terminal()
    bar = RebuildBar(term)
    bar(400, 1000)
    bar.close()
    assert "re-projecting the log (resumed)" in term.getvalue()


def _watched(stream: io.StringIO, seen: list[tuple[str, str]]) -> Callable[[Pin], AbstractContextManager[object]]:
    """``migration_status(stream)``, noting what ``stream`` shows while each migration runs."""
    applying = migration_status(stream)

    @contextmanager
    def shown(pin: Pin) -> Iterator[None]:
        with applying(pin):
            seen.append((pin.stem, stream.getvalue()))
            yield

    return shown


def test_a_migration_is_named_on_a_terminal_while_it_runs_and_nowhere_else(tmp_path: Path) -> None:
    term, pipe = _Terminal(), io.StringIO()
    on_term: list[tuple[str, str]] = []
    on_pipe: list[tuple[str, str]] = []
    applied = migrate(connect(tmp_path / "a.db"), applying=_watched(term, on_term))
    migrate(connect(tmp_path / "b.db"), applying=_watched(pipe, on_pipe))
    assert len(applied) > 30 and [stem for stem, _ in on_term] == [p.stem for p in applied]
    assert all(f"applying migration {stem}" in shown for stem, shown in on_term)
    assert [stem for stem, _ in on_pipe] == [p.stem for p in applied] and pipe.getvalue() == ""


def test_stale_projections_are_not_reprojected_under_a_serving_daemon(tmp_path: Path) -> None:
    """A daemon folds by the rules it started with (and re-projects as it starts): a command that would
    re-project the database under it (``migrate``, ``ingest``) refuses, naming its pid, and changes
    nothing, stale or interrupted; once the daemon is gone it re-projects."""
    db = tmp_path / "x.db"
    assert CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(FIXTURES)]).exit_code == 0
    want = dump(db)
    for marks in ({}, {"reprojecting": str(PROJECTION_REVISION)}):
        conn = connect(db)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'projection_revision'", (str(PROJECTION_REVISION - 1),))
        conn.executemany("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", marks.items())
        conn.execute("UPDATE token_usage SET output = output + 1")
        conn.close()
        tampered = dump(db)
        held = lock.acquire(db)
        try:
            for argv in (["migrate"], ["ingest", "--projects", str(FIXTURES)]):
                got = CliRunner().invoke(cli, [*argv, "--db", str(db)])
                assert got.exit_code == 2, got.output
                assert (
                    "is to be re-projected" in got.output
                    and f"a daemon (pid {os.getpid()}) is serving it" in got.output
                )
                assert dump(db) == tampered
                assert stored_revision(connect(db)) == str(PROJECTION_REVISION - 1)
        finally:
            held.release()
        got = CliRunner().invoke(cli, ["migrate", "--db", str(db), "--json"])
        assert got.exit_code == 0, got.output
        assert dump(db) == want and stored_revision(connect(db)) == str(PROJECTION_REVISION)
