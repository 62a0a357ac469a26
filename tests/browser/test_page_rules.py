"""The page follows the terminal's rules: one printable-text rule for the CLI and the page (bidi and
control characters shown as the same escapes), a table that keeps every column readable whatever a
title's length, and a malformed link that shows a message instead of throwing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from ingestd.report.printable import printable_text
from tests.browser.conftest import Site
from tests.browser.test_live_view import console_errors, js, open_view, post_hook
from tests.support import wait_for

pytestmark = pytest.mark.timeout(300)

ROWS_JS = """
return [...document.querySelectorAll('#sessions-table tbody tr')].map(tr => ({
  id: tr.dataset.sessionId, title: tr.querySelector('a.title').textContent,
  tooltip: tr.querySelector('a.title').getAttribute('title'),
  project: tr.querySelector('td[data-label=Project]').textContent,
  height: tr.getBoundingClientRect().height,
  cells: [...tr.querySelectorAll('td')].map(td => ({label: td.dataset.label, width: td.getBoundingClientRect().width,
                                                  overflow: td.scrollWidth - td.clientWidth}))}));
"""


def test_the_page_escapes_every_character_the_terminal_escapes(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    every = "".join(chr(c) for c in range(0x10000) if not 0xD800 <= c <= 0xDFFF)
    got = browser.execute_async_script(
        "const done = arguments[arguments.length - 1], text = arguments[0];"
        "import('/static/dom.js').then((m) => done(m.printable(text)));",
        every,
    )
    assert got == printable_text(every)


def test_bidi_and_control_characters_in_a_title_and_a_path_show_as_escapes(browser: Any, site: Site) -> None:
    sid = str(uuid.uuid4())
    title = "invoice \u202e00.0$ \x1b[2J done"
    cwd = "/home/u/\u202egnp.exe\u2066/x"
    post_hook(site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": cwd, "session_title": title})
    open_view(browser, site, "#/sessions", "sessions")
    row = wait_for("the session", lambda: next((r for r in js(browser, ROWS_JS) if r["id"] == sid), None))
    assert row["title"] == printable_text(title) == "invoice \\u202e00.0$ \\x1b[2J done"
    assert row["tooltip"] == printable_text(title)
    assert printable_text(cwd) in row["project"] and "\u202e" not in row["project"]


def test_a_title_of_3000_characters_leaves_every_column_readable(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    before = {r["id"]: r for r in js(browser, ROWS_JS)}
    sid = str(uuid.uuid4())
    long_title = ("W" * 40 + " ") * 20 + "X" * 2180  # words and one unbroken run
    post_hook(
        site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "cwd": "/w", "session_title": long_title}
    )
    open_view(browser, site, "#/sessions", "sessions")
    rows = wait_for(
        "the long title", lambda: (lambda rs: rs if any(r["id"] == sid for r in rs) else None)(js(browser, ROWS_JS))
    )
    browser.save_screenshot(str(site.shots / "long-title.png"))
    for r in rows:
        for c in r["cells"]:
            assert c["overflow"] <= 1, (r["id"], c)  # nothing squeezed past its cell
            if c["label"] in ("Started", "Last activity", "Status", "Tokens", "Cost"):
                assert c["width"] >= 40, (r["id"], c)
        if r["id"] in before:  # an unrelated row keeps its height
            assert r["height"] <= before[r["id"]]["height"] * 1.5 + 2, (r["id"], r["height"], before[r["id"]]["height"])
    mine = next(r for r in rows if r["id"] == sid)
    normal = max(b["height"] for b in before.values()) if before else 60
    assert mine["height"] <= normal * 3, (mine["height"], normal)  # at most three lines of title
    assert mine["tooltip"] == mine["title"] and len(mine["title"]) > 200  # the whole title, in its tooltip


@pytest.mark.parametrize(("link", "what"), [("#/session/%E0%A4%A", "a session id"), ("#/search/%E0%A4%A", "a search")])
def test_a_malformed_link_shows_a_message(browser: Any, site: Site, link: str, what: str) -> None:
    browser.get(site.url + "#/sessions")
    browser.get(site.url + link)
    text = wait_for(
        "the message",
        lambda: js(browser, "const b = document.getElementById('bad-link'); return b && b.textContent;"),
    )
    assert "This link is malformed" in text and "%E0%A4%A" in text and f"is not {what}" in text
    assert [e for e in console_errors(browser) if "URIError" in e.get("message", "")] == []
