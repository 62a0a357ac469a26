"""The ``otlp_port`` setting: a real ``ingestd serve`` also listens on a second port, where an OTLP
exporter that names no port posts, under the same rules."""

from __future__ import annotations

import http.client
from pathlib import Path

import apsw
import pytest

from tests.otlp.bodies import api_request_pb, pb_logs
from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for


def _post(port: int, body: bytes, headers: dict[str, str]) -> int:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("POST", "/v1/logs", body=body, headers=headers)
        r = c.getresponse()
        r.read()
        return r.status
    finally:
        c.close()


def test_exports_on_the_otlp_port_are_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    otlp_port = free_port()
    monkeypatch.setenv("INGESTD_OTLP_PORT", str(otlp_port))
    d = Daemon.in_dir(tmp_path)
    d.start()
    try:
        pb = {"Content-Type": "application/x-protobuf"}
        assert _post(otlp_port, pb_logs([api_request_pb(seq=1)]), pb) == 200
        # the same Origin rule as on the daemon's own port
        assert _post(otlp_port, pb_logs([api_request_pb(seq=2)]), {**pb, "Origin": "https://evil.example"}) == 403

        def logged() -> int:
            conn = apsw.Connection(str(d.db), flags=apsw.SQLITE_OPEN_READONLY)
            try:
                return int(conn.execute("SELECT count(*) FROM otel_requests").fetchall()[0][0])
            finally:
                conn.close()

        wait_for("the export in otel_requests", lambda: logged() == 1, 15)
    finally:
        d.stop()
