"""The session page shows Claude Code's own totals beside ingestd's (whether they agree), the
session's work by prompt and the session it was forked from, from sessions a real Claude Code
2.1.332 wrote (``fixtures/claude-2.1.332/projects`` and ``fork``)."""

from __future__ import annotations

import http.client
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import Site, cli_json, serve_root
from tests.browser.test_live_view import _text, js, open_view
from tests.conftest import REPO
from tests.support import wait_for

pytestmark = pytest.mark.timeout(300)

SID = "f062db45-0619-43b9-910c-e628426ea014"


@pytest.fixture(scope="module", params=["projects", "fork"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("live-2.1.332")
    root = tmp / "projects"
    shutil.copytree(
        REPO / "fixtures" / "claude-2.1.332" / request.param, root, ignore=shutil.ignore_patterns("*.jsonl")
    )
    for f in (REPO / "fixtures" / "claude-2.1.332" / request.param).glob("-*/*.jsonl"):
        shutil.copy(f, root / f.parent.name / f.name)
    site = serve_root(request.param, root, tmp)
    try:
        yield site
    finally:
        browser.get("about:blank")
        site.daemon.stop()


def test_the_session_page_shows_claude_codes_totals_and_the_work_by_prompt(browser: Any, site: Site) -> None:
    if site.name != "projects":
        pytest.skip("only the fixtures/claude-2.1.332/projects site holds the sample session")
    open_view(browser, site, f"#/session/{SID}", "session")
    own = js(
        browser, "const e = document.getElementById('cc-cost-state'); return e && [e.innerText, e.dataset.agrees];"
    )
    assert own == ["$0.0132 (cost-state, agrees with ingestd)", "true"]
    rows = js(
        browser,
        "return [...document.querySelectorAll('#by-prompt tbody tr')].map(tr =>"
        " [tr.dataset.promptId, ...[...tr.cells].map(c => c.innerText)]);",
    )
    doc = cli_json(site.daemon.db, "tree", SID, "--by", "prompt")
    (p,) = doc["prompts"]
    assert len(rows) == 1 and rows[0][0] == p["prompt_id"]
    assert rows[0][1] == "1" and rows[0][3] == "please read hello.txt" and rows[0][5] == "1"
    assert rows[0][7] == "$0.0132"
    assert "please read hello.txt" in _text(browser, "by-prompt-panel")
    browser.save_screenshot(str(Path(site.shots) / "by-prompt.png"))


def test_the_session_page_links_a_fork_and_its_parent(browser: Any, site: Site) -> None:
    if site.name != "fork":
        pytest.skip("only the fixtures/claude-2.1.332/fork site holds the fork")
    parent, fork = "5bef1beb-81ea-4964-9285-56bf5cae4858", "df57242f-6ae9-451c-862f-c9a1325efb71"
    open_view(browser, site, f"#/session/{fork}", "session")
    link = js(
        browser,
        "const a = document.querySelector('#forked-from a');"
        " return a && [a.getAttribute('href'), a.parentNode.innerText];",
    )
    assert link == [f"#/session/{parent}", "5bef1beb (compaction root)"]
    open_view(browser, site, f"#/session/{parent}", "session")
    assert js(browser, "return [...document.querySelectorAll('#forks a')].map(a => a.getAttribute('href'));") == [
        f"#/session/{fork}"
    ]


def test_the_session_page_shows_the_sessions_telemetry(browser: Any, site: Site) -> None:
    """The first logs export of the same real run (``../shared/live-2.1.332/otlp``), posted to the
    daemon: both requests matched to the transcript's messages, none only in the telemetry."""
    if site.name != "projects":
        pytest.skip("only the fixtures/claude-2.1.332/projects site holds the sample session")
    capture = REPO.parent / "shared" / "live-2.1.332" / "otlp" / "logs-1.json"
    if not capture.is_file():
        pytest.skip("../shared/live-2.1.332 is absent")
    open_view(browser, site, f"#/session/{SID}", "session")
    assert js(browser, "return document.getElementById('telemetry').innerText;").startswith("— (no telemetry")
    body = capture.read_bytes()
    conn = http.client.HTTPConnection("127.0.0.1", site.daemon.port, timeout=10)
    conn.request("POST", "/v1/logs", body, {"Content-Type": "application/json"})
    assert conn.getresponse().status == 200
    conn.close()
    want = "2 API requests: 2 matched to transcript messages (0 disagree), 0 in telemetry only; its cost $0.0132"
    script = "const e = document.getElementById('telemetry-requests'); return e && e.innerText;"
    wait_for("the telemetry shown", lambda: js(browser, script) == want)
    assert js(browser, "return document.getElementById('telemetry-requests').dataset.disagreements;") == "0"
    assert js(browser, "return document.getElementById('telemetry-errors');") is None
