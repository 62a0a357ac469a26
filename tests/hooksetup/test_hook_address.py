"""The installed hooks go where ``serve`` listens: a specific address as it is, a wildcard on loopback."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.daemon.bind import reach_host
from tests.reliability.support import q
from tests.support import free_port, wait_for

SID = "5eed0000-0000-4000-8000-000000000001"


def run(home: Path, *args: str, env: dict[str, str] | None = None) -> Any:
    return CliRunner().invoke(cli, ["hooks", *args], env={"HOME": str(home), **(env or {})}, catch_exceptions=False)


def addresses(doc: dict[str, Any]) -> set[str]:
    """``host:port`` of every http hook's URL and every forwarder's ``--url``."""
    urls = {h["url"] for gs in doc["hooks"].values() for g in gs for h in g["hooks"] if h["type"] == "http"}
    for gs in doc["hooks"].values():
        for g in gs:
            for h in g["hooks"]:
                if h["type"] == "command":
                    argv = shlex.split(h["command"])
                    urls.add(argv[argv.index("--url") + 1])
    return {u.removeprefix("http://").removesuffix("/hooks") for u in urls}


def test_reach_host() -> None:
    """The address hooks use to reach a daemon bound to a wildcard is loopback of the same family; a named host
    is kept."""
    assert [reach_host(h) for h in ("0.0.0.0", "", "::", "127.0.0.1", "::1", "10.1.2.3", "devbox.lan")] == [
        "127.0.0.1",
        "127.0.0.1",
        "::1",
        "127.0.0.1",
        "::1",
        "10.1.2.3",
        "devbox.lan",
    ]


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ({"INGESTD_HOST": "10.1.2.3"}, "10.1.2.3:7391"),
        (("--host", "10.1.2.3"), "10.1.2.3:7391"),
        ({"INGESTD_HOST": "fd00::5"}, "[fd00::5]:7391"),
        ({"INGESTD_HOST": "0.0.0.0"}, "127.0.0.1:7391"),
        ({"INGESTD_HOST": "::"}, "[::1]:7391"),
    ],
    ids=["setting", "flag", "ipv6", "wildcard", "ipv6-wildcard"],
)
def test_the_hooks_follow_the_bound_address(tmp_path: Path, how: Any, expected: str) -> None:
    # Regression: any address but ::1 / localhost became 127.0.0.1, where a daemon bound to 10.1.2.3 does not listen
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env, flags = (how, ()) if isinstance(how, dict) else ({}, how)
    r = run(home, "install", *flags, "--token-env", "T", env=env)
    assert r.exit_code == 0, r.output
    doc = json.loads((home / ".claude" / "settings.json").read_text())
    assert addresses(doc) == {expected}
    assert addresses(json.loads(run(home, "print", *flags, env=env).stdout)) == {expected}
    # a reinstall elsewhere replaces them (they are recognised by their mark, not a loopback URL)
    assert run(home, "install", "--host", "127.0.0.1").exit_code == 0
    assert addresses(json.loads((home / ".claude" / "settings.json").read_text())) == {"127.0.0.1:7391"}


def test_beyond_loopback_without_a_token_is_a_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    r = run(home, "install", "--host", "10.1.2.3")
    assert r.exit_code == 0
    assert "warning: a daemon on 10.1.2.3 requires a token; without --token-env NAME" in r.stderr
    assert "requires a token" not in run(home, "install", "--host", "10.1.2.3", "--token-env", "T").stderr


def _health(host: str, port: int) -> int | None:
    c = http.client.HTTPConnection(host, port, timeout=1)
    try:
        c.request("GET", "/api/health")
        return c.getresponse().status
    except OSError:
        return None
    finally:
        c.close()


def _can_bind(host: str) -> bool:
    try:
        with socket.socket() as s:
            s.bind((host, 0))
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _can_bind("127.0.0.2"), reason="127.0.0.2 is not an address of this machine")
def test_installed_hooks_reach_a_daemon_bound_to_one_other_address(tmp_path: Path) -> None:
    # 127.0.0.2 is not one of the loopback names: the daemon binds it only with a token, and
    # listens there alone, as on a 10.x address
    home, root, db = tmp_path / "home", tmp_path / "projects", tmp_path / "h.db"
    (home / ".claude").mkdir(parents=True)
    root.mkdir()
    port = free_port()
    secret = "tok-" + os.urandom(8).hex()
    env = {**os.environ, "MY_TOKEN": secret, "INGESTD_HOST": "127.0.0.2", "INGESTD_SCHEDULE_ENABLED": "false"}
    argv = [sys.executable, "-m", "ingestd", "serve", "--db", str(db), "--projects", str(root), "--no-tail"]
    with (tmp_path / "serve.log").open("wb") as log:
        proc = subprocess.Popen([*argv, "--port", str(port), "--token-env", "MY_TOKEN"], env=env, stderr=log)
    try:
        r = run(home, "install", "--port", str(port), "--token-env", "MY_TOKEN", env={"INGESTD_HOST": "127.0.0.2"})
        assert r.exit_code == 0, r.output
        doc = json.loads((home / ".claude" / "settings.json").read_text())
        [start] = [h for g in doc["hooks"]["SessionStart"] for h in g["hooks"]]
        [stop] = [h for g in doc["hooks"]["Stop"] for h in g["hooks"]]
        wait_for("the daemon on 127.0.0.2", lambda: _health("127.0.0.2", port) is not None or proc.poll() is not None)
        assert proc.poll() is None
        body = json.dumps({"hook_event_name": "SessionStart", "session_id": SID, "source": "startup"}).encode()
        subprocess.run(start["command"], shell=True, input=body, env=env, timeout=10, check=True)
        wait_for(
            "the forwarded SessionStart", lambda: q(db, "SELECT 1 FROM events_raw WHERE event_type = 'SessionStart'")
        )
        # the http hook as Claude Code sends it: its URL, its headers with the token expanded
        url = stop["url"].removeprefix("http://").removesuffix("/hooks")
        headers = {k: v.replace("${MY_TOKEN}", secret) for k, v in stop["headers"].items()}
        c = http.client.HTTPConnection(url.rsplit(":", 1)[0], int(url.rsplit(":", 1)[1]), timeout=5)
        stop_body = json.dumps({"hook_event_name": "Stop", "session_id": SID}).encode()
        c.request("POST", "/hooks", body=stop_body, headers={**headers, "Content-Type": "application/json"})
        resp = c.getresponse()
        assert (resp.status, resp.read()) == (200, b"")
        c.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert {r[0] for r in q(db, "SELECT event_type FROM events_raw WHERE session_id = ?", (SID,))} == {
        "SessionStart",
        "Stop",
    }
