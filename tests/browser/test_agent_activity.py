"""The session page shows what each agent did, on the real corpus: per tool call its input in a
line, its result's status and size, the whole input and the result's start on demand; per
subagent its prompt and answer; the person's prompts in order; all as text (SPEC §14)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import Site
from tests.browser.test_live_view import _text, js, open_view

pytestmark = pytest.mark.timeout(300)

DOV = "4d5611e5-241a-462a-8d15-5122611a9569"  # spotter-dov: Bash, Read, Grep, an Explore subagent

CALL_JS = """
const tr = document.querySelector(`#tool-calls tr[data-tool-use-id="${arguments[0]}"]`);
if (!tr) return null;
const d = tr.querySelector('details.call');
return {summary: d.querySelector('summary').textContent, open: d.open,
        body: d.innerText, result: tr.querySelector('td[data-label=Result]').textContent,
        tool: tr.querySelector('td[data-label=Tool]').textContent};
"""


def test_the_page_shows_what_each_agent_did(browser: Any, site: Site) -> None:
    if site.name != "corpus":
        pytest.skip("only the real corpus holds the spotter-dov session")
    open_view(browser, site, f"#/session/{DOV}", "session")
    tl = site.cli("sessions", "--all")  # the page's names equal the CLI's
    [row] = [r for r in tl["rows"] if r["session_id"] == DOV]
    assert _text(browser, "session-title") == row["name"] == row["slug"]
    call = js(browser, CALL_JS, "toolu_01UwLnYYWGBvukzh1QE6JpfM")
    assert call["tool"] == "Bash" and call["summary"] == "bd show spotter-dov" and not call["open"]
    assert call["result"] == "ok · 4.0 KiB"
    js(
        browser,
        "document.getElementById('tool-calls').open = true;"
        "document.querySelector('tr[data-tool-use-id=toolu_01UwLnYYWGBvukzh1QE6JpfM] details.call').open = true;",
    )
    call = js(browser, CALL_JS, "toolu_01UwLnYYWGBvukzh1QE6JpfM")
    assert '"description": "Show spotter-dov issue details"' in call["body"]
    assert "○ spotter-dov [EPIC]" in call["body"], "the result's start, on demand"
    prompts = js(browser, "return [...document.querySelectorAll('#prompts > li')].map(li => li.innerText)")
    assert prompts[0].split(" ", 2)[2].startswith("Work on bead spotter-dov."), prompts[0]
    assert not any("<task-notification>" in p for p in prompts)
    spawn = js(
        browser,
        "const a = document.querySelector('.agent[data-agent-id=a2898e3] .spawn'); return a && a.innerText;",
    )
    spawn = " ".join(spawn.split())
    assert spawn.startswith("prompt Very thorough exploration.") and "answer Perfect! Now I have all" in spawn
    browser.save_screenshot(str(site.shots / "session-activity.png"))


def test_a_session_without_title_or_slug_is_named_by_its_first_prompt(browser: Any, site: Site) -> None:
    if site.name != "corpus":
        pytest.skip("only the real corpus holds this session")
    open_view(browser, site, "#/sessions", "sessions")
    name = js(
        browser,
        "const a = document.querySelector('tr[data-session-id^=\"61ddcbba\"] a.title');"
        " return [a.textContent, a.dataset.nameSource];",
    )
    assert name == ["READ THIS https://craigmbrown.com/blindoracle/agents/", "first_prompt"]
