"""``ingestd status`` tells whether the daemon runs: up, stalled (SIGSTOP), stopped, killed."""

from __future__ import annotations

import os
import signal
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

import ingestd
from ingestd.cli import cli
from ingestd.daemon import presence
from tests.reliability.daemon import Daemon
from tests.support import free_port


def _status(db: Path, *extra: str) -> tuple[dict[str, Any], str]:
    runner = CliRunner()
    doc = orjson.loads(runner.invoke(cli, ["status", "--json", "--no-stat", "--db", str(db)]).output)
    text = runner.invoke(cli, ["status", "--no-stat", "--db", str(db)], env={"COLUMNS": "200"}).output
    return doc, text


@pytest.mark.timeout(90)
def test_status_up_stalled_stopped_and_killed(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    db = tmp_path / "s.db"
    port = free_port()
    d = Daemon(db, root, port, tmp_path / "serve.log")
    d.start()
    assert d.proc is not None
    try:
        doc, text = _status(db)
        daemon = doc["daemon"]
        assert daemon["running"] and daemon["state"] == "running", daemon
        assert daemon["pid"] == d.proc.pid and daemon["address"] == f"127.0.0.1:{port}"
        assert daemon["version"] == ingestd.__version__ and 0 <= daemon["uptime_s"] < 600
        assert doc["live"] is True and doc["as_of"] is None
        assert f"running: pid {d.proc.pid} on 127.0.0.1:{port}" in text
        assert "daemon not running" not in text

        # Stalled: the process is alive but answers nothing.
        d.proc.send_signal(signal.SIGSTOP)
        try:
            doc, text = _status(db)
        finally:
            d.proc.send_signal(signal.SIGCONT)
        assert doc["daemon"]["state"] == "not_responding" and not doc["daemon"]["running"]
        assert "did not answer" in doc["daemon"]["problem"]
        assert doc["live"] is False and "not responding" in text and "daemon not running" in text
    finally:
        assert d.stop() == 0

    doc, text = _status(db)
    assert doc["daemon"]["state"] == "stopped" and doc["daemon"]["stopped_at"], doc["daemon"]
    assert doc["live"] is False and doc["as_of"] is not None
    assert f"(as of {doc['as_of']}, daemon not running)" in text
    assert "active now" not in text

    # kill -9 leaves the state file naming a pid that is gone.
    d.start()
    d.kill9()
    doc, text = _status(db)
    assert doc["daemon"]["state"] == "stopped" and doc["daemon"]["stopped_at"] is None
    assert "is gone" in doc["daemon"]["problem"]
    assert "daemon not running" in text


def test_status_with_no_daemon_ever(tmp_path: Path) -> None:
    from ingestd.store.connection import connect
    from ingestd.store.migrate import migrate

    db = tmp_path / "n.db"
    migrate(connect(db))
    doc, text = _status(db)
    assert doc["daemon"]["state"] == "never_started" and doc["live"] is False
    assert "not running" in text and "ingestd service install" in text


def test_state_file_round_trip_and_a_foreign_pid(tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    now = datetime(2026, 1, 1, tzinfo=UTC)
    closed = free_port()  # nothing listens there (port 1 did not hold: another tool's daemon served on it)
    path = presence.write_started(db, host="127.0.0.1", port=closed, now=now)
    assert path == presence.state_path(db) and oct(path.stat().st_mode & 0o777) == "0o600"
    assert presence.read_state(db) == {
        "pid": os.getpid(),
        "host": "127.0.0.1",
        "port": closed,
        "started_at": "2026-01-01T00:00:00.000Z",
        "version": presence.__version__,
        "db": str(db),
    }
    # This process is alive but nothing listens on that port: not responding.
    assert presence.detect(db, now, timeout_s=0.5).state == "not_responding"
    presence.write_stopped(db, now=now)
    assert presence.detect(db, now).state == "stopped"
    path.write_text("not json")
    assert presence.detect(db, now).state == "never_started"


async def test_api_status_describes_the_daemon_itself(tmp_path: Path, aiohttp_client: Any) -> None:
    from ingestd.daemon.config import ServeConfig
    from ingestd.daemon.root import assemble

    db = tmp_path / "api.db"
    started = datetime(2026, 1, 1, tzinfo=UTC)
    presence.write_started(db, host="127.0.0.1", port=7391, now=started)
    client = await aiohttp_client(assemble(ServeConfig(db_path=db, schedule=False, watchdog_interval_s=3600)))
    resp = await client.get("/api/status")
    doc = await resp.json()
    assert resp.status == 200, doc
    assert doc["live"] is True and doc["as_of"] is None
    daemon = doc["daemon"]
    assert daemon["running"] and daemon["pid"] == os.getpid() and daemon["address"] == "127.0.0.1:7391"
    assert daemon["started_at"] == "2026-01-01T00:00:00.000Z" and daemon["uptime_s"] > 0
    assert doc["watchdog"] == {"window_s": 600, "future_receipts_until": None, "refused_future_timestamps": 0}


def test_status_through_a_hard_link_finds_the_daemon_by_the_file_not_its_name(tmp_path: Path) -> None:
    # Regression: `ingestd status --db <hard link>` said "no daemon has served this database" while
    # one served it: the state file (and the stall file) are named after the daemon's path
    from ingestd.daemon import lock
    from ingestd.store import stall
    from ingestd.store.connection import connect
    from ingestd.store.migrate import migrate

    db, link = tmp_path / "d" / "x.db", tmp_path / "elsewhere" / "link.db"
    db.parent.mkdir()
    link.parent.mkdir()
    conn = connect(db)
    migrate(conn)
    conn.close()
    os.link(db, link)
    held = lock.acquire(db)  # what serve holds: an flock on the database file, whatever its name
    try:
        now = datetime(2026, 1, 1, tzinfo=UTC)
        presence.write_started(db, host="127.0.0.1", port=free_port(), now=now)
        stall.write_mirror(stall.mirror_path(db), [stall.Stall("writer", "database is locked", now.timestamp(), 3)])
        got = presence.detect(link, now, timeout_s=0.5)
        assert (got.state, got.pid) == ("not_responding", os.getpid())  # a closed port: no answer
        assert got.db == str(db)
        assert got.problem is not None and got.problem.endswith(
            f"it serves this file as {db}: use that name (SQLite keeps the WAL by name; what this shows may lag)"
        )
        assert "serves this file as" not in str(presence.detect(db, now, timeout_s=0.5).problem)  # its own name
        assert got.state_file == str(presence.state_path(db))
        doc, _text = _status(link)
        assert doc["daemon"]["pid"] == os.getpid() and doc["daemon"]["db"] == str(db)
        assert [s["component"] for s in doc["stalls"]] == ["writer"]
        assert presence.served_as(link) == (os.getpid(), db)
    finally:
        held.release()
    # no daemon holds it any more: the link's own (absent) state file says so, as before
    assert presence.detect(link, datetime(2026, 1, 1, tzinfo=UTC)).state == "never_started"
    assert presence.served_as(link) is None


def _health_server(token: str, healthy: bool) -> Any:
    """A stand-in daemon: ``/api/health`` is 401 without ``token``, then 200 or 503."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.headers.get("Authorization") == f"Bearer {token}"
            code = (200 if healthy else 503) if ok else 401
            body = b'{"error": {"status": %d}}' % code
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.mark.parametrize("healthy", [True, False])
def test_status_with_a_token_sends_it_and_a_401_is_not_taken_for_health(tmp_path: Path, healthy: bool) -> None:
    # Regression: a 401 from /api/health counted as `running`, so with a token configured status could never
    # say `unhealthy` (it sent no token)
    db = tmp_path / "t.db"
    assert CliRunner().invoke(cli, ["migrate", "--db", str(db)]).exit_code == 0
    token_file = tmp_path / "token"
    token_file.write_text("tok-1\n")
    token_file.chmod(0o600)
    srv = _health_server("tok-1", healthy)
    try:
        presence.write_started(db, host="127.0.0.1", port=srv.server_address[1], now=datetime.now(UTC))
        runner = CliRunner()
        base = ["status", "--json", "--no-stat", "--db", str(db)]
        blind = orjson.loads(runner.invoke(cli, base, env={}).stdout)["daemon"]
        assert blind["state"] == "running" and blind["health_status"] == 401
        assert "token" in blind["problem"] and "--token-file" in blind["problem"]
        res = runner.invoke(cli, [*base, "--token-file", str(token_file)])
        seen = orjson.loads(res.stdout)["daemon"]
        assert seen["state"] == ("running" if healthy else "unhealthy"), seen
        assert seen["health_status"] == (200 if healthy else 503)
        assert (seen["problem"] is None) == healthy
        wrong = tmp_path / "wrong"
        wrong.write_text("nope\n")
        wrong.chmod(0o600)
        refused = orjson.loads(runner.invoke(cli, [*base, "--token-file", str(wrong)]).stdout)["daemon"]
        assert refused["health_status"] == 401 and "refused the token" in refused["problem"]
    finally:
        srv.shutdown()
        srv.server_close()
