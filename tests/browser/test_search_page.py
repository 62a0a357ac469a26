"""The live view's Search page: a transcript line written while the daemon runs is found, its text
shown as text (escapes, never markup), the matched word marked, the result linking to its session."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
import pytest

from ingestd.report.printable import printable_text
from tests.browser.conftest import Site
from tests.browser.test_live_view import js, open_view
from tests.support import wait_for

pytestmark = pytest.mark.timeout(300)

RESULTS_JS = """
return [...document.querySelectorAll('#search-results li.sresult')].map(li => ({
  session: li.dataset.session, kind: li.dataset.kind, href: li.querySelector('a').getAttribute('href'),
  snippet: li.querySelector('.snippet').textContent,
  marks: [...li.querySelectorAll('mark')].map(m => m.textContent),
  injected: li.querySelectorAll('img, script, b').length}));
"""


def test_a_line_written_live_is_found_and_shown_as_text(browser: Any, site: Site) -> None:
    sid = str(uuid.uuid4())
    word = "zebrafish" + uuid.uuid4().hex[:6]
    evil = f"<img src=x onerror=alert(1)><b>{word}</b> \u202eexe.gnp \x1b[2J"
    rec = {"type": "user", "uuid": str(uuid.uuid4()), "sessionId": sid, "cwd": "/w",
           "timestamp": "2026-11-30T10:00:00.000Z", "message": {"role": "user", "content": evil}}  # fmt: skip
    project = site.root / "-w-search"
    project.mkdir(exist_ok=True)
    (project / f"{sid}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    wait_for("the line indexed", lambda: site.cli("search", word)["count"] == 1)
    open_view(browser, site, f"#/search/{word}", "search")
    (r,) = wait_for("the result", lambda: js(browser, RESULTS_JS) or None)
    assert (r["session"], r["kind"], r["href"]) == (sid, "prompt", f"#/session/{sid}")
    assert r["snippet"] == printable_text(evil) and r["marks"] == [word] and r["injected"] == 0
    browser.find_element("css selector", "#search-results a").click()
    wait_for(
        "the session page", lambda: js(browser, "return document.getElementById('main').dataset.view") == "session"
    )


def test_the_search_box_runs_the_query_into_the_link(browser: Any, site: Site) -> None:
    sid = str(uuid.uuid4())
    word = "quokka" + uuid.uuid4().hex[:6]
    rec = {"type": "assistant", "uuid": str(uuid.uuid4()), "sessionId": sid, "cwd": "/w",
           "timestamp": "2026-11-30T10:00:00.000Z",
           "message": {"id": "msg_" + word, "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                       "content": [{"type": "tool_use", "id": "toolu_" + word, "name": "Bash",
                                    "input": {"command": f"grep -r {word} src/"}}]}}  # fmt: skip
    project = site.root / "-w-search"
    project.mkdir(exist_ok=True)
    (project / f"{sid}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    wait_for("the line indexed", lambda: site.cli("search", word)["count"] == 1)
    open_view(browser, site, "#/search", "search")
    box = browser.find_element("css selector", "#s-q")
    box.clear()
    box.send_keys(f"grep {word}\n")
    wait_for("the link", lambda: js(browser, "return location.hash") == f"#/search/grep%20{word}")
    (r,) = wait_for("the result", lambda: js(browser, RESULTS_JS) or None)
    assert (r["session"], r["kind"]) == (sid, "tool") and set(r["marks"]) == {"grep", word}
