"""A real headless Chromium (Debian's ``chromium`` + ``chromium-driver``) driving the live view.

One browser for the whole session; one daemon per data set, started once per session (``site`` is
parametrised over the repository's ``fixtures/projects`` and the real corpus, which is skipped when
``../shared`` is absent). Tests skip, saying why, only when no Chromium or chromedriver is installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from tests.conftest import CORPUS, REPO
from tests.reliability.daemon import Daemon
from tests.support import free_port

CHROMIUM_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def _find(names: tuple[str, ...], fallback: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return fallback if os.access(fallback, os.X_OK) else None


CHROMIUM = _find(CHROMIUM_CANDIDATES, "/usr/bin/chromium")
CHROMEDRIVER = _find(("chromedriver",), "/usr/bin/chromedriver")


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A headless Chromium through chromedriver, 1280x900, console logged."""
    if CHROMIUM is None or CHROMEDRIVER is None:
        pytest.skip(
            "no Chromium found: install Debian's chromium and chromium-driver (.ci/run does) to run browser tests"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(dir=tmp_path_factory.mktemp("chromium"))
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--no-first-run",
        "--no-default-browser-check",
        "--lang=en-US",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(1280, 900)
    try:
        yield driver
    finally:
        driver.quit()


def cli_json(db: Path, *args: str) -> Any:
    """``ingestd ARGS --db DB --json``, parsed (run in-process: a process per call cost a Python
    start-up each, and the tree test makes one per session)."""
    r = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"])
    assert r.exit_code == 0, (r.stderr[-2000:], r.exception)
    return orjson.loads(r.stdout)


@dataclass
class Site:
    """A running daemon over a copy of a projects tree, and its base URL."""

    name: str
    daemon: Daemon
    root: Path
    shots: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.daemon.port}/"

    def cli(self, *args: str) -> Any:
        return cli_json(self.daemon.db, *args)


DATA_SETS = {"fixtures": REPO / "fixtures" / "projects", "corpus": CORPUS / "claude-projects"}


def _start_site(name: str, tmp: Path) -> Site:
    """A daemon over a private copy of data set ``name``, ingested first so the page starts complete."""
    root = tmp / "projects"
    shutil.copytree(DATA_SETS[name], root)
    return serve_root(name, root, tmp)


def serve_root(name: str, root: Path, tmp: Path) -> Site:
    """Site ``name``: the projects ``root`` ingested into ``tmp/live.db``, then a daemon over it
    (screenshots in ``tmp/screenshots``). The caller stops ``site.daemon``."""
    db = tmp / "live.db"
    r = subprocess.run(
        [sys.executable, "-m", "ingestd", "ingest", "--db", str(db), "--projects", str(root)],
        capture_output=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    daemon = Daemon(db, root, free_port(), tmp / "serve.log")
    daemon.start()
    shots = tmp / "screenshots"
    shots.mkdir()
    return Site(name, daemon, root, shots)


@pytest.fixture(scope="session")
def _sites(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[dict[str, Site]]:
    """Each data set's site, started the first time a test asks for it and kept for the session
    (the tests alternate between data sets; restarting a daemon per switch cost seconds each)."""
    sites: dict[str, Site] = {}
    try:
        yield sites
    finally:
        # Leave the page first: its stream would log refused reconnects into the console.
        browser.get("about:blank")
        for site in sites.values():
            if site.daemon.proc is not None and site.daemon.proc.poll() is None:
                site.daemon.stop()


@pytest.fixture(scope="module", params=sorted(DATA_SETS))
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, _sites: dict[str, Site]) -> Site:
    """The daemon of one data set (the real corpus is skipped when ``../shared`` is absent)."""
    name = request.param
    if not DATA_SETS[name].is_dir():
        pytest.skip(f"real corpus not found at {DATA_SETS[name]}")
    if name not in _sites:
        _sites[name] = _start_site(name, tmp_path_factory.mktemp(f"live-{name}"))
    return _sites[name]
