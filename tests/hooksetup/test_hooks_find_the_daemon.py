"""``hooks install`` sends the hooks where the running daemon listens, which ``serve --port`` (a flag
no setting records) may have moved: option > running daemon > INGESTD_* / config file > default."""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.commands.hooks import resolve_address
from ingestd.daemon import presence
from ingestd.errors import ConfigError
from ingestd.settings import resolve
from tests.hooksetup.test_hook_address import addresses


def _daemon(address: str, pid: int = 4242) -> presence.Presence:
    return presence.Presence("running", pid, address, None, None, None, None, 200, None, "x.serve.json")


@pytest.mark.parametrize(
    ("flags", "daemon", "env", "expected"),
    [
        ((None, None), None, {}, ("127.0.0.1", 7391, "the default")),
        (
            (None, None),
            None,
            {"INGESTD_PORT": "9000"},
            ("127.0.0.1", 9000, "host from the default, port from INGESTD_PORT"),
        ),
        ((None, None), "127.0.0.1:8123", {"INGESTD_PORT": "9000"}, ("127.0.0.1", 8123, "the daemon running")),
        ((None, None), "0.0.0.0:8123", {}, ("127.0.0.1", 8123, "the daemon running")),
        ((None, None), ":::8123", {}, ("::1", 8123, "the daemon running")),
        (
            (None, 9100),
            "10.1.2.3:8123",
            {},
            ("10.1.2.3", 9100, "host from the daemon running on this database (pid 4242), port from --port"),
        ),
        (("::1", 9100), "10.1.2.3:8123", {}, ("::1", 9100, "the --host and --port options")),
    ],
    ids=["default", "env", "daemon-over-env", "wildcard", "ipv6-wildcard", "flag-port", "flags"],
)
def test_precedence(
    flags: tuple[str | None, int | None], daemon: str | None, env: dict[str, str], expected: Any
) -> None:
    """The address written into the hooks: the flags, then a running daemon's, then the settings, each saying
    where it came from."""
    settings = resolve({"host": flags[0], "port": flags[1]}, env, {})
    got = resolve_address(*flags, None if daemon is None else _daemon(daemon), settings)
    assert (got.host, got.port) == expected[:2]
    assert got.source.startswith(expected[2])


def test_port_zero_needs_a_running_daemon() -> None:
    settings = resolve({}, {"INGESTD_PORT": "0"}, {})
    with pytest.raises(ConfigError, match="no daemon runs on this database"):
        resolve_address(None, None, None, settings)
    assert resolve_address(None, None, _daemon("127.0.0.1:45678"), settings).port == 45678


def _install(home: Path, *args: str) -> Any:
    return CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home)}, catch_exceptions=False)


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/api/health" else 404)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def test_install_follows_serve_port_given_on_the_command_line(tmp_path: Path) -> None:
    # Regression: `serve --port P` then `hooks install` wrote 7391 (the setting's default): hooks to nowhere.
    # The daemon is faked at its edge: the state file a running `serve` writes (with its bound port,
    # tests/daemon/test_status_daemon.py) naming this live process, and a health answer on that port.
    home, db = tmp_path / "home", tmp_path / "h.db"
    (home / ".claude").mkdir(parents=True)
    db.touch()
    server = HTTPServer(("127.0.0.1", 0), _Health)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        presence.write_started(db, host="127.0.0.1", port=port, now=datetime.now(UTC))
        assert presence.detect(db, datetime.now(UTC)).running
        r = _install(home, "install", "--db", str(db))
        assert r.exit_code == 0, r.output
        pid = os.getpid()
        assert (
            f"hooks post to http://127.0.0.1:{port}/hooks (the daemon running on this database (pid {pid}))" in r.stderr
        )
        assert addresses(json.loads((home / ".claude" / "settings.json").read_text())) == {f"127.0.0.1:{port}"}
        printed = _install(home, "print", "--db", str(db))
        assert addresses(json.loads(printed.stdout)) == {f"127.0.0.1:{port}"}
        # an explicit option still wins over the running daemon
        assert addresses(json.loads(_install(home, "print", "--db", str(db), "--port", "9999").stdout)) == {
            "127.0.0.1:9999"
        }
    finally:
        server.shutdown()
        server.server_close()
    presence.write_stopped(db, now=datetime.now(UTC))
    # stopped: back to the settings
    r = _install(home, "print", "--db", str(db))
    assert addresses(json.loads(r.stdout)) == {"127.0.0.1:7391"}
    assert "(the default)" in r.stderr


def test_install_finds_a_stalled_daemon_without_probing_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # its health does not change the address; a stuck daemon made every install wait for the probe
    home, db = tmp_path / "home", tmp_path / "h.db"
    (home / ".claude").mkdir(parents=True)
    db.touch()

    def no_probe(*a: Any, **kw: Any) -> Any:
        raise AssertionError("hooks install probed the daemon's health")

    monkeypatch.setattr(presence, "probe_health", no_probe)
    presence.write_started(db, host="127.0.0.1", port=45678, now=datetime.now(UTC))
    try:
        r = _install(home, "print", "--db", str(db))
        assert r.exit_code == 0, r.output
        assert addresses(json.loads(r.stdout)) == {"127.0.0.1:45678"}
    finally:
        presence.write_stopped(db, now=datetime.now(UTC))
