"""``ingestd.logs``: the logger's name is on every line once configured (what ``get_logger`` promises)."""

from __future__ import annotations

import io
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import structlog

from ingestd import logs


@pytest.fixture
def restore_structlog() -> Iterator[None]:
    saved = structlog.get_config()
    configured = logs._configured
    yield
    structlog.configure(**saved)
    logs._configured = configured


def test_get_logger_names_every_line(restore_structlog: None) -> None:
    out = io.StringIO()
    log = logs.get_logger("ingestd.test")  # taken before configure: it follows it lazily
    logs.configure(stream=out, force=True)
    log.info("hello", rows=3)
    logs.get_logger("ingestd.other").warning("again")
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert [(d["logger"], d["event"], d["level"]) for d in lines] == [
        ("ingestd.test", "hello", "info"),
        ("ingestd.other", "again", "warning"),
    ]
    assert lines[0]["rows"] == 3


def test_after_its_first_line_a_logger_calls_structlog_directly(
    restore_structlog: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Regression: every call went through _Lazy.__getattr__ (and structlog's lazy proxy): 2 µs a filtered line
    out = io.StringIO()
    logs.configure(stream=out, force=True)
    log = logs.get_logger("ingestd.test")
    log.info("first")
    looked_up: list[str] = []
    resolve = logs._Lazy.__getattr__

    def counting(self: logs._Lazy, attr: str) -> object:
        looked_up.append(attr)
        return resolve(self, attr)

    monkeypatch.setattr(logs._Lazy, "__getattr__", counting)
    log.info("second", rows=2)
    log.debug("filtered")
    assert looked_up == ["debug"]  # only the attribute not used before
    log.debug("filtered again")
    assert looked_up == ["debug"]
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert [(d["logger"], d["event"]) for d in lines] == [("ingestd.test", "first"), ("ingestd.test", "second")]


def test_the_cli_and_its_loggers_do_not_import_structlog_until_a_line_is_logged() -> None:
    # a fresh interpreter: this test process loaded structlog already (conftest)
    code = (
        "import sys, ingestd.cli\n"
        "from ingestd.logs import get_logger\n"
        "log = get_logger('ingestd.test')\n"
        "assert 'structlog' not in sys.modules and 'rich' not in sys.modules, 'imported early'\n"
        "log.debug('now')\n"
        "assert 'structlog' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_logger_bound_before_a_new_configuration_follows_it(restore_structlog: None) -> None:
    # serve reconfigures with --log-level after the CLI has logged: a logger that already logged
    # under the first configuration must log at the new level, to the new stream
    first, second = io.StringIO(), io.StringIO()
    logs.configure(stream=first, level="info", force=True)
    log = logs.get_logger("ingestd.test")
    log.info("before")
    log.debug("filtered")
    logs.configure(stream=second, level="debug", force=True)
    log.debug("after")
    assert [orjson.loads(x)["event"] for x in first.getvalue().splitlines()] == ["before"]
    assert [orjson.loads(x)["event"] for x in second.getvalue().splitlines()] == ["after"]


def test_enabled_follows_the_configured_level(restore_structlog: None) -> None:
    logs.configure(stream=io.StringIO(), force=True)
    assert not logs.enabled("debug")
    assert logs.enabled("info") and logs.enabled("warning") and logs.enabled("error")
    logs.configure(level="debug", stream=io.StringIO(), force=True)
    assert logs.enabled("debug")
    logs.configure(level="warning", stream=io.StringIO(), force=True)
    assert not logs.enabled("info") and logs.enabled("error")


def test_a_cold_ingest_that_logs_nothing_never_imports_structlog(tmp_path: Path) -> None:
    # a filtered debug line (the dictionary's, a WAL checkpoint's) would load structlog and rich
    projects = tmp_path / "projects" / "p"
    projects.mkdir(parents=True)
    line = {"type": "user", "sessionId": "s1", "timestamp": "2026-01-01T00:00:00.000Z", "message": {"content": "hi"}}
    rows = [
        orjson.dumps({**line, "uuid": f"u{i}", "message": {"content": f"hello {i} " * (i % 40)}}) for i in range(9000)
    ]
    (projects / "s1.jsonl").write_bytes(b"\n".join(rows) + b"\n")
    code = (
        "import sys\n"
        "from ingestd.store.walcheckpoint import WalCheckpointer\n"
        "WalCheckpointer.__init__.__kwdefaults__['wal_pages'] = 1\n"  # a checkpoint at every commit
        "from ingestd.commands.ingest import run_ingest\n"
        "from pathlib import Path\n"
        f"run_ingest(Path({str(tmp_path / 'i.db')!r}), (Path({str(tmp_path / 'projects')!r}),), show_progress=False)\n"
        "import apsw\n"
        f"c = apsw.Connection({str(tmp_path / 'i.db')!r})\n"
        "print(c.execute('SELECT count(*) FROM payload_codecs WHERE dictionary IS NOT NULL').fetchall()[0][0],"
        " 'structlog' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.split() == ["1", "False"], out.stderr
