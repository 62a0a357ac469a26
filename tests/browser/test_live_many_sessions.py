"""The live view's search and project filter reach every session, not the first page.

Was: the page fetched the 200 newest sessions and filtered those: with more, searching the oldest id
said "0 of the 200 most recent" and the project menu listed only the projects of those 200 (37 of
40). Now both go through the read API (``search``, ``project_is``, ``/api/projects``) over every
session, and the page shows a bounded list of what matches.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from tests.browser.conftest import Site
from tests.browser.test_live_view import _filter, _shown_ids, js, open_view, post_hook
from tests.reliability.daemon import Daemon
from tests.support import free_port, wait_for

pytestmark = pytest.mark.timeout(300)

N_SESSIONS = 230  # more than a page (200)
OLD_PROJECTS = 3  # only the 30 oldest sessions are in these: no row of the first page names them


def _sid(i: int) -> str:
    return f"{i:08x}-0000-4000-8000-{i:012x}"


def _project(i: int) -> str:
    return f"/work/old-{i % OLD_PROJECTS}" if i < 30 else f"/work/p-{i % 37:02d}"


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Site]:
    tmp = tmp_path_factory.mktemp("live-many")
    root = tmp / "projects"
    for i in range(N_SESSIONS):
        folder = root / _project(i).replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        line = {
            "type": "user",
            "sessionId": _sid(i),
            "uuid": f"u-{i}",
            "timestamp": f"2026-01-01T{i // 60:02d}:{i % 60:02d}:00.000Z",  # session 0 is the oldest
            "cwd": _project(i),
            "message": {"role": "user", "content": "hello"},
        }
        (folder / f"{_sid(i)}.jsonl").write_bytes(orjson.dumps(line) + b"\n")
    db = tmp / "many.db"
    cmd = [sys.executable, "-m", "ingestd", "ingest", "--db", str(db), "--projects", str(root)]
    r = subprocess.run(cmd, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()[-2000:]
    daemon = Daemon(db, root, free_port(), tmp / "serve.log")
    daemon.start()
    (tmp / "shots").mkdir()
    try:
        yield Site("many", daemon, root, tmp / "shots")
    finally:
        browser.get("about:blank")
        daemon.stop()


def test_search_and_project_filter_reach_sessions_beyond_the_first_page(browser: Any, many: Site) -> None:
    open_view(browser, many, "#/sessions", "sessions")
    count = lambda: browser.find_element("id", "sessions-count").text  # noqa: E731
    assert len(_shown_ids(browser)) == 200 and count() == f"200 of {N_SESSIONS} sessions"
    assert js(browser, "return document.getElementById('sessions-more').hidden") is False
    assert _sid(0) not in _shown_ids(browser)
    # the oldest session, by an id prefix
    _filter(browser, "f-search", _sid(0)[:8].upper(), [_sid(0)])
    assert count() == "1 of 1 sessions matching"
    _filter(browser, "f-search", "", None)
    # every project is in the menu, those of the oldest sessions only too
    wait_for("the menu", lambda: len(js(browser, "return document.getElementById('f-project').options")) > 1)
    options = js(browser, "return [...document.getElementById('f-project').options].map(o => o.value)")
    assert options[0] == "" and options[1:] == sorted({_project(i) for i in range(N_SESSIONS)})
    assert len(options) - 1 == 37 + OLD_PROJECTS
    want = [_sid(i) for i in reversed(range(30)) if _project(i) == "/work/old-1"]
    _filter(browser, "f-project", "/work/old-1", want)
    assert count() == f"{len(want)} of {len(want)} sessions matching"
    # "Show more" pages through everything
    _filter(browser, "f-project", "", None)
    wait_for("the first page", lambda: len(_shown_ids(browser)) == 200)
    js(browser, "document.getElementById('sessions-more').click()")
    wait_for("every session", lambda: len(_shown_ids(browser)) == N_SESSIONS)
    assert _shown_ids(browser)[-1] == _sid(0)
    assert js(browser, "return document.getElementById('sessions-more').hidden") is True
    browser.save_screenshot(str(many.shots / "many.png"))


def _menu_fetches(browser: Any) -> int:
    entries = "performance.getEntriesByType('resource')"
    return int(js(browser, f"return {entries}.filter(e => e.name.includes('/api/projects')).length"))


def test_project_menu_is_fetched_once_per_load_and_on_live_changes_not_per_keystroke(browser: Any, many: Site) -> None:
    """Was: every refresh fetched ``/api/projects`` (a grouped scan of every session) again, including
    each pause in typing in the search box. Now the menu is fetched on the first refresh, on a live
    change and when it is 30 s old."""
    open_view(browser, many, "#/sessions", "sessions")
    wait_for("the menu", lambda: _menu_fetches(browser) >= 1)
    first = _menu_fetches(browser)
    for value in (_sid(1)[:4], _sid(1)[:6], ""):
        _filter(browser, "f-search", value, None)
    _filter(browser, "f-status", "working", None)
    _filter(browser, "f-status", "", None)
    assert _menu_fetches(browser) == first
    post_hook(many, {"hook_event_name": "UserPromptSubmit", "session_id": _sid(N_SESSIONS + 1), "cwd": "/work/new"})
    wait_for("a live change fetches the menu again", lambda: _menu_fetches(browser) > first)
    menu = "return [...document.getElementById('f-project').options].map(o => o.value)"
    wait_for("the new project in the menu", lambda: "/work/new" in js(browser, menu))
