"""The session page links a teammate that ran as a session of its own (agent teams, tmux mode)
and its lead both ways, the teammate's tokens and cost beside the lead's, never added."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Site, serve_root
from tests.browser.test_live_view import js, open_view
from tests.report import test_tmux_teammates as tm

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("teammates")
    root = tmp / "projects"
    tm._write(root, "-home-u-app", tm.LEAD, tm.lead_records())
    tm._write(root, "-home-u-app-relay", tm.MATE, tm.mate_records())
    site = serve_root("teammates", root, tmp)
    try:
        yield site
    finally:
        browser.get("about:blank")
        site.daemon.stop()


def test_the_session_page_links_a_teammate_session_and_its_lead(browser: Any, site: Site) -> None:
    open_view(browser, site, f"#/session/{tm.LEAD}", "session")
    mates = js(
        browser,
        "return [...document.querySelectorAll('#teammate-sessions .teammate-session')].map(e =>"
        " [e.dataset.sessionId, e.querySelector('a').getAttribute('href'), e.innerText]);",
    )
    assert len(mates) == 1 and mates[0][0] == tm.MATE and mates[0][1] == f"#/session/{tm.MATE}"
    assert mates[0][2].startswith(f"alice {tm.MATE[:8]} 130 tokens")
    open_view(browser, site, f"#/session/{tm.MATE}", "session")
    link = js(
        browser,
        "const a = document.querySelector('#teammate-of a');"
        " return a && [a.getAttribute('href'), a.parentNode.innerText];",
    )
    assert link == [f"#/session/{tm.LEAD}", f"alice of {tm.LEAD[:8]} (spawn name)"]
    browser.save_screenshot(str(Path(site.shots) / "teammate.png"))
