"""pytest fixtures for tests against a real Claude Code (``tests/conftest.py`` imports them, so every
test can ask for them).

- ``claude_code`` (session): the Claude Code 2.1.332 executable, found or installed once per machine
  (``tests.realclaude.claude.find_or_install``); the test is skipped, with the reason, when npm or the
  package cannot be had.
- ``standin``: a running stand-in of the Anthropic Messages API (``tests.realclaude.standin``), with
  ``request-id`` headers; set ``standin.script`` before running Claude Code.
- ``recorder``: a running loopback recorder of hook bodies, OTLP exports and status-line input
  (``tests.realclaude.recorder``).
- ``claude``: a ``Claude`` runner for ``claude_code`` against ``standin`` in homes under the test's
  ``tmp_path``: ``claude.run(prompt, settings=..., env=..., args=..., timeout_s=...)``,
  ``claude.sdk(...)`` (stream-json, control requests), ``claude.interactive(...)`` (a pseudo-terminal).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realclaude.claude import Claude, Unavailable, find_or_install
from tests.realclaude.recorder import Recorder
from tests.realclaude.standin import StandIn


@pytest.fixture(scope="session")
def claude_code() -> Path:
    """The Claude Code executable (skip with the reason when it cannot be had)."""
    try:
        return find_or_install()
    except Unavailable as e:
        pytest.skip(f"a real Claude Code is not available: {e}")


@pytest.fixture
def standin() -> Iterator[StandIn]:
    """A stand-in Messages API on 127.0.0.1 (``request-id`` headers on), stopped after the test."""
    with StandIn(request_ids=True) as api:
        yield api


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A recorder of hooks, OTLP and status-line input on 127.0.0.1, stopped after the test."""
    with Recorder() as rec:
        yield rec


@pytest.fixture
def claude(claude_code: Path, standin: StandIn, tmp_path: Path) -> Claude:
    """A runner of ``claude_code`` against ``standin``, its homes under ``tmp_path/claude``."""
    return Claude(claude_code, tmp_path / "claude", standin.url)
