"""``ingestd.logs``: the logger's name is on every line once configured (what ``get_logger`` promises)."""

from __future__ import annotations

import io
from collections.abc import Iterator

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
