"""The live view in a real headless Chromium, against a real daemon (SPEC §14).

Every test runs twice: on ``fixtures/projects`` (always) and on the real corpus (skipped when
``../shared`` is absent). The DOM is compared with the CLI's ``--json`` for the same data; pixels are
never compared, but each view's screenshot is saved under the test's temporary directory.
"""

from __future__ import annotations

import http.client
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import orjson
import pytest

from tests.browser.conftest import Site
from tests.reliability.support import q
from tests.support import wait_for

pytestmark = pytest.mark.timeout(300)

LIVE_DEADLINE_S = 1.0  # SPEC §14: a hook or a transcript append shows within a second
XSS_TITLE = "<img src=x onerror=alert(1)>"
XSS_PROMPT = "<script>alert(2)</script>"
XSS_TYPE = '"><svg onload=alert(3)>'


# ---- helpers ---------------------------------------------------------------------------------------


def js(browser: Any, script: str, *args: Any) -> Any:
    return browser.execute_script(script, *args)


def open_view(browser: Any, site: Site, fragment: str, view: str) -> None:
    """Navigate to ``fragment`` and wait until that view has drawn fresh data with the stream open."""
    started_ms = time.time() * 1000
    if browser.current_url == site.url + fragment:
        browser.refresh()  # the same fragment fires no hashchange
    else:
        browser.get(site.url + fragment)
    wait_for(
        f"view {view} ready",
        lambda: js(
            browser,
            "const m = document.getElementById('main');"
            "return m && m.dataset.view === arguments[0] && m.dataset.state === 'ready'"
            " && Number(m.dataset.refreshedAt) >= arguments[1];",
            view,
            started_ms,
        ),
    )
    wait_for("live stream open", lambda: js(browser, "return document.getElementById('live').dataset.state === 'on'"))


def console_errors(browser: Any) -> list[dict[str, Any]]:
    return [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]


@pytest.fixture(autouse=True)
def _clean_console(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test starts with an empty console log and (unless it says otherwise) ends without errors."""
    if "browser" not in request.fixturenames:
        yield
        return
    browser = request.getfixturevalue("browser")
    browser.get_log("browser")
    yield
    if request.node.get_closest_marker("console_errors_checked") is None:
        assert console_errors(browser) == []


def fmt_tokens(n: int) -> str:
    return f"{n:,}"


def assert_cost_shown(el: dict[str, Any], usage: dict[str, Any]) -> None:
    """The exact cost is on the element; the text is that value rounded, never $0 for unpriced usage."""
    assert el["cost"] == usage["cost_usd"]
    text = el["costText"]
    if usage["unpriced"]:
        assert "unpriced" in text
    if usage["cost_usd"] == "0":
        assert "$" not in text or usage["tokens"] == 0 or not usage["unpriced"]
        return
    shown = text.split()[0]
    exact = Decimal(usage["cost_usd"])
    if shown == "<$0.0001":
        assert exact < Decimal("0.0001")
        return
    value = Decimal(shown.lstrip("$"))
    places = -value.as_tuple().exponent  # type: ignore[operator]
    assert abs(value - exact) <= Decimal(1).scaleb(-places) / 2 + Decimal("1e-12"), (shown, exact)


def post_hook(site: Site, body: dict[str, Any], path: str = "/hooks") -> None:
    """POST ``body`` as JSON to the site's daemon at ``path``; asserts a 200."""
    conn = http.client.HTTPConnection("127.0.0.1", site.daemon.port, timeout=10)
    try:
        conn.request("POST", path, body=orjson.dumps(body), headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200, resp.status
    finally:
        conn.close()


def flatten(node: dict[str, Any], section: str, out: dict[str, tuple[str, dict[str, Any]]]) -> None:
    out[node["agent_id"]] = (section, node)
    for child in node["children"]:
        flatten(child, section, out)


SESSION_ROWS_JS = """
return [...document.querySelectorAll('#sessions-table tbody tr')].map(tr => {
  const cost = tr.querySelector('.cost');
  const sid = tr.querySelector('.sid .shortid');
  return {id: tr.dataset.sessionId, title: tr.querySelector('a.title').textContent,
          nameSource: tr.querySelector('a.title').dataset.nameSource,
          shortId: sid.querySelector('.mono').textContent, fullId: sid.querySelector('.mono').title,
          tokens: tr.querySelector('.tokens').textContent, cost: cost.dataset.costUsd,
          costText: cost.textContent, status: tr.querySelector('.status').textContent,
          agents: tr.querySelector('td[data-label=Agents]').textContent};
});
"""

AGENTS_JS = """
return [...document.querySelectorAll('.agent')].map(a => {
  const costs = a.querySelectorAll(':scope > .facts .cost');
  const section = a.closest('section').id;
  return {id: a.dataset.agentId, status: a.dataset.status, section,
          name: a.querySelector('.name').textContent,
          desc: a.querySelector('.desc') ? a.querySelector('.desc').textContent : null,
          own: a.querySelector('.own-tokens').textContent, cost: costs[0].dataset.costUsd,
          costText: costs[0].textContent,
          subtree: a.querySelector('.subtree-tokens') ? a.querySelector('.subtree-tokens').textContent : null,
          subtreeCost: costs[1] ? costs[1].dataset.costUsd : null};
});
"""


# ---- the views equal the CLI ---------------------------------------------------------------------------


def test_sessions_list_shows_the_cli_rows(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    browser.save_screenshot(str(site.shots / "sessions.png"))
    shown = js(browser, SESSION_ROWS_JS)
    want = site.cli("sessions", "--all")["rows"]
    assert [r["id"] for r in shown] == [r["session_id"] for r in want]  # same sessions, newest activity first
    for el, row in zip(shown, want, strict=True):
        assert el["tokens"] == fmt_tokens(row["tokens"])
        assert el["status"] == row["status"]
        assert el["agents"] == str(row["agents"])
        assert el["title"] == (row["name"] or "untitled")  # the title, else the slug, else the first prompt
        assert el["nameSource"] == (row["name_source"] or "none")
        assert el["shortId"] == row["session_id"][:8] and el["fullId"] == row["session_id"]
        assert_cost_shown(el, row)


def _shown_ids(browser: Any) -> list[str]:
    return [r["id"] for r in js(browser, SESSION_ROWS_JS)]


def _set(browser: Any, element_id: str, value: str, event: str) -> None:
    js(
        browser,
        "const e = document.getElementById(arguments[0]); e.value = arguments[1];"
        " e.dispatchEvent(new Event(arguments[2], {bubbles: true}));",
        element_id,
        value,
        event,
    )


def _filter(browser: Any, element_id: str, value: str, want: list[str] | None) -> None:
    """Set a filter and wait for the list the daemon answers with (``want``: those ids, in order;
    None: any fresh list)."""
    before = js(browser, "return Number(document.getElementById('main').dataset.refreshedAt)")
    _set(browser, element_id, value, "input")
    fresh = "return Number(document.getElementById('main').dataset.refreshedAt) > arguments[0]"
    wait_for(f"{element_id} = {value!r} answered", lambda: js(browser, fresh, before))
    if want is not None:
        wait_for(f"{element_id} = {value!r} shown", lambda: _shown_ids(browser) == want)


def test_sessions_filter_by_project_status_dates_and_search(browser: Any, site: Site) -> None:
    sid = str(uuid.uuid4())
    post_hook(site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "session_title": "Find The Needle"})
    open_view(browser, site, "#/sessions", "sessions")
    rows = site.cli("sessions", "--all")["rows"]
    wait_for("the titled session", lambda: sid in _shown_ids(browser))
    # search: an id prefix, then a title (case-insensitive)
    target = rows[-1]["session_id"]
    _filter(browser, "f-search", target[:6], [r["session_id"] for r in rows if r["session_id"].startswith(target[:6])])
    _filter(browser, "f-search", "the needle", [sid])
    _filter(browser, "f-search", "", None)
    # project: the select lists every project; choosing one keeps exactly its sessions
    path = next(r["project_path"] for r in rows if r["project_path"])
    options = js(browser, "return [...document.getElementById('f-project').options].map(o => o.value)")
    projects = {r["project_path"] or r["project_slug"] for r in site.cli("sessions", "--all")["rows"]}
    assert options[0] == "" and set(options[1:]) == projects - {None}
    _filter(browser, "f-project", path, [r["session_id"] for r in rows if r["project_path"] == path])
    _filter(browser, "f-project", "", None)
    # status
    status = rows[-1]["status"]
    now = site.cli("sessions", "--all")["rows"]
    _filter(browser, "f-status", status, [r["session_id"] for r in now if r["status"] == status])
    _filter(browser, "f-status", "", None)
    # dates: the read API's window in the browser's zone, as the CLI with the same --tz
    zone = js(browser, "return Intl.DateTimeFormat().resolvedOptions().timeZone")
    last = rows[-1]["last_activity_at"] or rows[-1]["started_at"]
    day = datetime.fromisoformat(last.replace("Z", "+00:00")).astimezone(ZoneInfo(zone)).date().isoformat()
    before = js(browser, "return Number(document.getElementById('main').dataset.refreshedAt)")
    _set(browser, "f-since", day, "change")
    _set(browser, "f-until", day, "change")
    wait_for(
        "the dated list",
        lambda: (
            js(browser, "return Number(document.getElementById('main').dataset.refreshedAt) > arguments[0]", before)
            and "chosen dates" in browser.find_element("id", "sessions-count").text
        ),
    )
    want = site.cli("sessions", "--all", "--since", day, "--until", day, "--tz", zone)["rows"]
    wait_for("the window's sessions", lambda: _shown_ids(browser) == [r["session_id"] for r in want])
    assert rows[-1]["session_id"] in _shown_ids(browser)


def test_each_session_shows_the_tree_of_the_cli(browser: Any, site: Site) -> None:
    sessions = site.cli("sessions", "--all")["rows"]
    biggest = max(sessions, key=lambda r: (r["agents"], r["tokens"]))["session_id"]
    for row in sessions:
        sid = row["session_id"]
        open_view(browser, site, f"#/session/{sid}", "session")
        tree = site.cli("tree", sid)
        want: dict[str, tuple[str, dict[str, Any]]] = {}
        if tree["tree"] is not None:
            flatten(tree["tree"], "agent-tree", want)
        for n in tree["orphans"]:
            flatten(n, "orphans", want)
        for n in tree["compaction_agents"]:
            flatten(n, "compaction-agents", want)
        shown = {a["id"]: a for a in js(browser, AGENTS_JS)}
        assert set(shown) == set(want), sid
        assert len(shown) == tree["agents"]
        for aid, (section, node) in want.items():
            el = shown[aid]
            assert el["section"] == section
            assert el["status"] == node["status"]
            assert el["own"] == fmt_tokens(node["own"]["tokens"])
            assert_cost_shown(el, node["own"])
            if node["children"]:
                assert el["subtree"] == fmt_tokens(node["subtree"]["tokens"])
                assert el["subtreeCost"] == node["subtree"]["cost_usd"]
            assert el["desc"] == node["description"]
        unattributed = js(browser, "const u = document.getElementById('unattributed'); return u && u.textContent")
        assert bool(unattributed) == (tree["unattributed"] is not None)
        calls = q(site.daemon.db, "SELECT count(*) FROM tool_calls WHERE session_id = ?", (sid,))[0][0]
        assert js(browser, "return document.querySelectorAll('#tool-calls tbody tr').length") == calls
        compactions = q(
            site.daemon.db, "SELECT count(*) FROM compactions WHERE session_id = ? AND occurred_at IS NOT NULL", (sid,)
        )[0][0]
        drawn = js(
            browser,
            "const t = document.getElementById('timeline');"
            "return t ? t.querySelectorAll('.compaction').length + Number(t.dataset.hiddenCompactions) : 0",
        )
        assert drawn == compactions, "each compaction drawn, or counted as outside the stretch shown"
        if sid == biggest:
            browser.save_screenshot(str(site.shots / "session.png"))


def _cost_matches_cli(browser: Any, site: Site, zone: str, *window: str) -> None:
    """The cost view's totals and rows (per day, model, project) equal ``ingestd cost --json``."""
    totals = js(
        browser,
        "const t = document.getElementById('cost-totals');"
        "return {tokens: t.dataset.tokens, cost: t.dataset.costUsd,"
        " buckets: Object.fromEntries([...t.querySelectorAll('dd[data-bucket]')]"
        ".map(d => [d.dataset.bucket, d.textContent]))};",
    )
    for by in ("day", "model", "project"):
        want = site.cli("cost", "--by", by, "--tz", zone, *window)
        assert totals["tokens"] == str(want["tokens"]) and totals["cost"] == want["cost_usd"]
        assert totals["buckets"] == {b: fmt_tokens(n) for b, n in want["totals"].items()}
        rows = js(
            browser,
            "return [...document.querySelectorAll('#cost-by-' + arguments[0] + ' .crow')]"
            ".map(r => ({key: r.dataset.key,"
            " tokens: r.querySelector('.tokens').textContent, cost: r.querySelector('.cost').dataset.costUsd,"
            " costText: r.querySelector('.cost').textContent, segs: r.querySelectorAll('.seg').length}));",
            by,
        )
        assert [r["key"] for r in rows] == [r["key"] for r in want["rows"]], by
        for el, row in zip(rows, want["rows"], strict=True):
            assert el["tokens"] == fmt_tokens(row["tokens"])
            assert el["segs"] == sum(1 for n in row["totals"].values() if n)  # stacked by bucket
            assert_cost_shown(el, row)


def _redrawn(browser: Any, what: str, change: Callable[[], None], done: Callable[[], bool]) -> None:
    before = js(browser, "return Number(document.getElementById('main').dataset.refreshedAt)")
    change()
    wait_for(
        what,
        lambda: (
            js(browser, "return Number(document.getElementById('main').dataset.refreshedAt) > arguments[0]", before)
            and done()
        ),
    )


def test_cost_view_equals_the_cli_in_a_chosen_zone_and_window(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.keys import Keys

    open_view(browser, site, "#/cost", "cost")
    zone = "America/New_York"
    field = browser.find_element("id", "c-tz")

    def type_zone() -> None:
        field.clear()
        field.send_keys(zone, Keys.TAB)  # a change event

    day_heading = "return document.getElementById('cost-by-day').querySelector('h2').textContent"
    _redrawn(browser, "cost in the chosen zone", type_zone, lambda: zone in js(browser, day_heading))
    browser.save_screenshot(str(site.shots / "cost.png"))
    _cost_matches_cli(browser, site, zone)
    # one local day of that zone: the busiest
    days = site.cli("cost", "--by", "day", "--tz", zone)["rows"]
    day = max(days, key=lambda r: r["tokens"])["day"]

    def pick_day() -> None:
        _set(browser, "c-since", day, "change")
        _set(browser, "c-until", day, "change")

    one_row = "return document.querySelectorAll('#cost-by-day .crow').length === 1"
    _redrawn(browser, "cost of one day", pick_day, lambda: js(browser, one_row))
    _cost_matches_cli(browser, site, zone, "--since", day, "--until", day)


CHART_JS = """
return Array.from(document.querySelectorAll('#cost-chart .col'), (c) => ({
  day: c.dataset.day, usd: Number(c.dataset.usd),
  models: Array.from(c.querySelectorAll('.mseg'), (m) => m.dataset.model),
}));
"""


def test_the_cost_chart_draws_every_day_or_week_stacked_by_model_as_the_cli_says(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/cost", "cost")
    tz = js(browser, "return document.getElementById('c-tz').value")
    rows = site.cli("cost", "--by", "day,model", "--tz", tz)["rows"]
    assert rows, "the site has usage"
    days = sorted({date.fromisoformat(r["day"]) for r in rows})
    weekly = (days[-1] - days[0]).days + 1 > 120
    start = (lambda d: d - timedelta(days=d.weekday())) if weekly else (lambda d: d)
    expected: dict[str, dict[str, Decimal]] = {}
    d = start(days[0])
    while d <= days[-1]:
        expected[d.isoformat()] = {}
        d += timedelta(days=7 if weekly else 1)
    for r in rows:
        col = expected[start(date.fromisoformat(r["day"])).isoformat()]
        col[r["model"]] = col.get(r["model"], Decimal(0)) + Decimal(r["cost_usd"])
    drawn = js(browser, CHART_JS)
    assert js(browser, "return document.getElementById('cost-chart').dataset.unit") == ("week" if weekly else "day")
    assert [c["day"] for c in drawn] == list(expected), "one column per day (or week), gaps included"
    for c in drawn:
        want = expected[c["day"]]
        assert abs(c["usd"] - float(sum(want.values(), Decimal(0)))) < 1e-6, c["day"]
        assert sorted(c["models"]) == sorted(m for m, usd in want.items() if usd), c["day"]
    busiest = max(drawn, key=lambda c: c["usd"])
    height = js(
        browser,
        "const b = document.querySelector(`#cost-chart .col[data-day='${arguments[0]}'] .colbar`);"
        "return b.getBoundingClientRect().height / b.parentElement.getBoundingClientRect().height;",
        busiest["day"],
    )
    assert height > 0.99, "the costliest column is the full height"


def test_health_view_shows_the_status(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/health", "health")
    browser.save_screenshot(str(site.shots / "health.png"))
    status = site.cli("status", "--no-stat")
    assert browser.find_element("id", "daemon-status").text == "ok"
    assert browser.find_element("id", "skipped-lines").text == fmt_tokens(status["skipped"]["lines"])
    text = browser.find_element("id", "health-body").text
    for label in ("Last transcript read", "Tail lag", "Skipped lines", "Last prune", "Last backup"):
        assert label in text


# ---- reading it: keyboard, narrow screens, themes --------------------------------------------------------


def test_keyboard_reaches_the_views_and_opens_a_session(browser: Any, site: Site) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    open_view(browser, site, "#/sessions", "sessions")
    browser.refresh()  # a fresh load: focus starts at the top of the document
    wait_for(
        "sessions after reload", lambda: js(browser, "return document.getElementById('main').dataset.state") == "ready"
    )
    first = js(browser, "return document.querySelector('#sessions-table tbody tr').dataset.sessionId")
    reached: list[str] = []
    for _ in range(40):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        focused = js(browser, "const a = document.activeElement; return a.getAttribute('href') || a.id || a.tagName")
        reached.append(focused)
        if focused == f"#/session/{first}":
            break
    assert {"#/cost", "#/health"} <= set(reached), reached
    assert reached[-1] == f"#/session/{first}", reached
    ActionChains(browser).send_keys(Keys.ENTER).perform()
    wait_for(
        "the session opened from the keyboard", lambda: js(browser, "return location.hash") == f"#/session/{first}"
    )
    wait_for("its tree", lambda: js(browser, "return document.querySelectorAll('.agent').length > 0"))


def luminance(rgb: str) -> float:
    parts = [float(x) for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    return (0.2126 * parts[0] + 0.7152 * parts[1] + 0.0722 * parts[2]) / 255


def test_light_and_dark_system_themes_are_both_readable(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    colours = "const s = getComputedStyle(document.body); return [s.backgroundColor, s.color];"
    try:
        for scheme, dark in (("light", False), ("dark", True)):
            browser.execute_cdp_cmd(
                "Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]}
            )
            bg, fg = js(browser, colours)
            assert (luminance(bg) < 0.3) == dark and (luminance(fg) > 0.7) == dark, (scheme, bg, fg)
            assert abs(luminance(bg) - luminance(fg)) > 0.6  # contrast
            browser.save_screenshot(str(site.shots / f"sessions-{scheme}.png"))
    finally:
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


OVERFLOW_JS = """
const w = document.documentElement.clientWidth;
const over = [...document.querySelectorAll('body *')].filter(e => {
  const r = e.getBoundingClientRect();
  return r.width > 0 && r.right > w + 0.5;
}).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right));
return {scroll: document.documentElement.scrollWidth, width: w, over: over.slice(0, 5)};
"""


def test_nothing_overflows_horizontally_at_390_px(browser: Any, site: Site) -> None:
    sessions = site.cli("sessions", "--all")["rows"]
    biggest = max(sessions, key=lambda r: (r["agents"], r["tokens"]))["session_id"]
    browser.set_window_size(390, 844)
    try:
        for fragment, view in (
            ("#/sessions", "sessions"),
            (f"#/session/{biggest}", "session"),
            ("#/cost", "cost"),
            ("#/health", "health"),
        ):
            open_view(browser, site, fragment, view)
            js(browser, "for (const d of document.querySelectorAll('details')) d.open = true;")
            got = js(browser, OVERFLOW_JS)
            assert got["width"] <= 390
            assert got["scroll"] <= got["width"] and got["over"] == [], (view, got)
            browser.save_screenshot(str(site.shots / f"{view}-390.png"))
    finally:
        browser.set_window_size(1280, 900)


# ---- hostile text ----------------------------------------------------------------------------------------


def _text(browser: Any, element_id: str) -> str:
    """The rendered text of the element ``element_id``, found and read in one script."""
    return str(js(browser, f"return document.getElementById({element_id!r}).innerText"))


def test_hostile_titles_prompts_and_descriptions_render_as_text(browser: Any, site: Site) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    sid = str(uuid.uuid4())
    base = {"session_id": sid, "cwd": "/tmp/<b>proj</b>", "transcript_path": f"/tmp/x/{XSS_TYPE}/{sid}.jsonl"}
    post_hook(site, {**base, "hook_event_name": "SessionStart", "source": "startup"})
    post_hook(site, {**base, "hook_event_name": "UserPromptSubmit", "session_title": XSS_TITLE, "prompt": XSS_PROMPT})
    task = {"description": XSS_PROMPT, "prompt": XSS_TITLE, "subagent_type": XSS_TYPE}
    post_hook(
        site,
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Task", "tool_use_id": "toolu_x1", "tool_input": task},
    )
    post_hook(
        site,
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Task",
            "tool_use_id": "toolu_x1",
            "tool_input": task,
            "tool_response": {
                "status": "completed",
                "agentId": "a0x55e1",
                "content": [{"type": "text", "text": XSS_PROMPT}],
            },
        },
    )
    post_hook(
        site,
        {**base, "hook_event_name": "PreToolUse", "tool_name": XSS_TYPE, "tool_use_id": "toolu_x2", "tool_input": {}},
    )
    bash = {"command": XSS_TITLE + " && echo done", "description": XSS_PROMPT}
    post_hook(
        site,
        {**base, "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_x3", "tool_input": bash},
    )
    post_hook(
        site,
        {
            **base,
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_use_id": "toolu_x3",
            "tool_input": bash,
            "tool_response": {"stdout": XSS_TYPE, "stderr": "", "interrupted": False},
        },
    )
    open_view(browser, site, "#/sessions", "sessions")
    row = wait_for(
        "the hostile session in the list",
        lambda: next((r for r in js(browser, SESSION_ROWS_JS) if r["id"] == sid), None),
    )
    assert row["title"] == XSS_TITLE
    open_view(browser, site, f"#/session/{sid}", "session")
    js(browser, "for (const d of document.querySelectorAll('details')) d.open = true;")
    browser.save_screenshot(str(site.shots / "hostile.png"))
    # read in one script each: the live view may re-render between a find and a read (a stale element)
    assert _text(browser, "session-title") == XSS_TITLE
    agents = {a["id"]: a for a in js(browser, AGENTS_JS)}
    assert agents["a0x55e1"]["desc"] == XSS_PROMPT and agents["a0x55e1"]["name"] == XSS_TYPE
    assert XSS_TYPE in _text(browser, "tool-calls")
    calls = js(
        browser,
        "const t = document.getElementById('tool-calls');"
        "for (const d of t.querySelectorAll('details')) d.open = true; t.open = true;"
        "return t.innerText",
    )
    assert XSS_TITLE + " && echo done" in calls, "the hostile Bash command, as text"
    assert '"description": "' + XSS_PROMPT + '"' in calls and "ok · 23 B" in calls, "its input and result on demand"
    assert _text(browser, "prompts").strip().endswith(XSS_PROMPT), "the hostile prompt, as text"
    assert "/tmp/<b>proj</b>" in _text(browser, "session-body")
    injected = "return document.querySelectorAll('img, svg, iframe, object, embed, b, script:not([src])').length"
    assert js(browser, injected) == 0
    assert js(browser, "return document.querySelectorAll('script').length") == 1  # app.js only
    with pytest.raises(NoAlertPresentException):
        _ = browser.switch_to.alert.text


# ---- live -------------------------------------------------------------------------------------------------


def test_a_posted_hook_shows_within_a_second_without_reload(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    js(browser, "window.__noReload = 1;")
    sid = str(uuid.uuid4())
    title = f"live title {sid[:8]}"
    t0 = time.monotonic()
    post_hook(site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "session_title": title, "prompt": "hi"})
    wait_for(
        "the posted session on the page",
        lambda: js(
            browser,
            "const tr = document.querySelector(`tr[data-session-id='${arguments[0]}']`);"
            "return tr && tr.querySelector('a.title').textContent === arguments[1];",
            sid,
            title,
        ),
        timeout_s=10,
    )
    latency = time.monotonic() - t0
    print(f"hook -> page: {latency * 1000:.0f} ms ({site.name})")
    assert latency <= LIVE_DEADLINE_S, f"the hook took {latency:.2f} s to show"
    assert js(browser, "return window.__noReload") == 1
    # the newest activity is on top, as in the CLI
    assert js(browser, SESSION_ROWS_JS)[0]["id"] == site.cli("sessions", "--all")["rows"][0]["session_id"] == sid
    # an open session view follows its session too: a new tool call joins its timeline
    open_view(browser, site, f"#/session/{sid}", "session")
    js(browser, "window.__noReload = 2;")
    t0 = time.monotonic()
    post_hook(
        site,
        {"hook_event_name": "PreToolUse", "session_id": sid, "tool_name": "Bash", "tool_use_id": "toolu_live_1"},
    )
    wait_for(
        "the new tool call on the session's timeline",
        lambda: js(browser, "return !!document.querySelector(\"#timeline .bar[data-tool-use-id='toolu_live_1']\")"),
        timeout_s=10,
    )
    latency = time.monotonic() - t0
    print(f"hook -> session view: {latency * 1000:.0f} ms ({site.name})")
    assert latency <= LIVE_DEADLINE_S, f"the tool call took {latency:.2f} s to show"
    assert js(browser, "return window.__noReload") == 2


def test_what_the_reader_opened_stays_open_while_hooks_arrive(browser: Any, site: Site) -> None:
    sid = str(uuid.uuid4())
    bash = {"command": "make test", "description": "run the suite"}
    post_hook(site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": "go\n" + "x" * 400})
    for n in (1, 2):
        call = {"session_id": sid, "tool_name": "Bash", "tool_use_id": f"toolu_keep_{n}", "tool_input": bash}
        post_hook(site, {**call, "hook_event_name": "PreToolUse"})
        post_hook(site, {**call, "hook_event_name": "PostToolUse", "tool_response": {"stdout": "ok"}})
    open_view(browser, site, f"#/session/{sid}", "session")
    opened = (
        "for (const k of ['tool-calls', 'call:toolu_keep_1', 'prompt:0'])"
        "  document.querySelector(`details[data-key='${k}']`).open = true;"
    )
    js(browser, opened)
    refreshed = js(browser, "return document.getElementById('main').dataset.refreshedAt")
    call = {"session_id": sid, "tool_name": "Bash", "tool_use_id": "toolu_keep_3", "tool_input": bash}
    post_hook(site, {**call, "hook_event_name": "PreToolUse"})
    wait_for(
        "the redraw with the new call",
        lambda: js(browser, "return !!document.querySelector(\"tr[data-tool-use-id='toolu_keep_3']\")"),
        timeout_s=10,
    )
    assert js(browser, "return document.getElementById('main').dataset.refreshedAt") != refreshed
    state = js(
        browser,
        "const all = document.querySelectorAll('details[data-key]');"
        "return Object.fromEntries(Array.from(all, (d) => [d.dataset.key, d.open]))",
    )
    assert state["tool-calls"] and state["call:toolu_keep_1"] and state["prompt:0"], state
    assert not state["call:toolu_keep_2"] and not state["call:toolu_keep_3"], state


def _assistant_line(sid: str, cwd: str, model: str = "claude-opus-4-6") -> bytes:
    n = uuid.uuid4().hex
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    return (
        orjson.dumps(
            {
                "type": "assistant",
                "uuid": f"live-{n}",
                "sessionId": sid,
                "timestamp": now,
                "cwd": cwd,
                "requestId": f"req_live_{n}",
                "message": {
                    "id": f"msg_live_{n}",
                    "model": model,
                    "role": "assistant",
                    "content": [{"type": "text", "text": "appended"}],
                    "usage": {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 7},
                },
            }
        )
        + b"\n"
    )


def _main_transcript(root: Path, sid: str) -> Path:
    found = sorted(root.glob(f"*/{sid}.jsonl"))
    assert found, sid
    return found[0]


def test_an_appended_transcript_line_shows_within_a_second(browser: Any, site: Site) -> None:
    rows = site.cli("sessions", "--all")["rows"]
    row = next(r for r in rows if list(site.root.glob(f"*/{r['session_id']}.jsonl")) and r["project_path"])
    sid = row["session_id"]
    open_view(browser, site, "#/sessions", "sessions")
    js(browser, "window.__noReload = 1;")
    want = fmt_tokens(row["tokens"] + 15)
    path = _main_transcript(site.root, sid)
    t0 = time.monotonic()
    with path.open("ab") as fh:
        fh.write(_assistant_line(sid, row["project_path"]))
    wait_for(
        "the appended usage on the page",
        lambda: js(
            browser,
            "const tr = document.querySelector(`tr[data-session-id='${arguments[0]}']`);"
            "return tr && tr.querySelector('.tokens').textContent === arguments[1];",
            sid,
            want,
        ),
        timeout_s=10,
    )
    latency = time.monotonic() - t0
    print(f"transcript append -> page: {latency * 1000:.0f} ms ({site.name})")
    assert latency <= LIVE_DEADLINE_S, f"the appended line took {latency:.2f} s to show"
    assert js(browser, "return window.__noReload") == 1
    after = next(r for r in site.cli("sessions", "--all")["rows"] if r["session_id"] == sid)
    assert after["tokens"] == row["tokens"] + 15


def _tool_lines(sid: str, cwd: str, start: datetime, n: int, tag: str) -> bytes:
    """``n`` Bash calls (a tool_use and its tool_result each), a minute apart from ``start``."""
    out = b""
    for i in range(n):
        at = start + timedelta(minutes=i)
        use, done = (
            at.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            (at + timedelta(seconds=20)).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        )
        tid = f"toolu_{tag}_{i}"
        base = {"sessionId": sid, "cwd": cwd, "isSidechain": False}
        assistant = {
            **base,
            "type": "assistant",
            "uuid": f"u-{tag}-{i}",
            "timestamp": use,
            "message": {
                "id": f"msg_{tag}_{i}",
                "role": "assistant",
                "model": "claude-opus-4-6",
                "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"echo {tag} {i}"}}],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
        result = {
            **base,
            "type": "user",
            "uuid": f"r-{tag}-{i}",
            "timestamp": done,
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": "ok"}]},
        }
        out += orjson.dumps(assistant) + b"\n" + orjson.dumps(result) + b"\n"
    return out


TIMELINE_JS = """
const t = document.getElementById('timeline');
const bars = Object.fromEntries(
  Array.from(t.querySelectorAll('.bar'), (b) => [b.dataset.toolUseId, parseFloat(b.style.left)]));
return {mode: t.dataset.mode, stretches: Number(t.dataset.stretches), hidden: Number(t.dataset.hiddenCalls),
        bars, gaps: Array.from(t.querySelectorAll('.track .gap'), (g) => g.title),
        idle: Array.from(t.querySelectorAll('.axis-idle'), (g) => g.textContent)};
"""


def test_a_resumed_session_s_timeline_shows_its_last_stretch_or_every_stretch_with_the_idle_collapsed(
    browser: Any, site: Site
) -> None:
    sid = str(uuid.uuid4())
    cwd = "/tmp/timeline-proj"
    folder = site.root / "-tmp-timeline-proj"
    folder.mkdir(exist_ok=True)
    first = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
    resumed = first + timedelta(days=3, hours=4)
    (folder / f"{sid}.jsonl").write_bytes(
        _tool_lines(sid, cwd, first, 5, "early") + _tool_lines(sid, cwd, resumed, 3, "late")
    )
    wait_for(
        "the new transcript projected",
        lambda: any(r["session_id"] == sid for r in site.cli("sessions", "--all")["rows"]),
    )
    open_view(browser, site, f"#/session/{sid}", "session")
    last = js(browser, TIMELINE_JS)
    assert last["mode"] == "last" and last["stretches"] == 2
    assert sorted(last["bars"]) == [f"toolu_late_{i}" for i in range(3)], "the last stretch fills the width"
    assert last["hidden"] == 5 and "5 tool calls in 1 earlier stretch not drawn" in _text(browser, "timeline-hidden")
    assert last["bars"]["toolu_late_0"] == 0 and last["bars"]["toolu_late_2"] > 50
    _set(browser, "timeline-mode", "active", "change")
    active = js(browser, TIMELINE_JS)
    assert active["mode"] == "active" and active["hidden"] == 0 and len(active["bars"]) == 8
    assert active["gaps"] and set(active["gaps"]) == {"idle 3 d 3 h"}, (
        "the gap says how long (3 d 4 h less the 4 min 20 s)"
    )
    assert active["idle"] == ["3 d 3 h idle"]
    # each stretch is drawn at its own scale: the late calls are not squeezed into the last pixels
    assert active["bars"]["toolu_late_0"] < 80 and active["bars"]["toolu_early_4"] < active["bars"]["toolu_late_0"]
    browser.save_screenshot(str(site.shots / "timeline.png"))
    _set(browser, "timeline-mode", "whole", "change")
    whole = js(browser, TIMELINE_JS)
    assert whole["gaps"] == [] and whole["bars"]["toolu_late_0"] > 95, "the whole span: 3 days squeeze the rest"
    # a redraw (a hook for the session) keeps the chosen mode
    post_hook(site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "prompt": "again"})
    wait_for("a redraw", lambda: "again" in _text(browser, "prompts-panel"), timeout_s=10)
    assert js(browser, TIMELINE_JS)["mode"] == "whole"


def test_the_page_works_under_localhost_too(browser: Any, site: Site) -> None:
    url = f"http://localhost:{site.daemon.port}/#/cost"
    browser.get(url)
    try:
        wait_for(
            "the cost view via localhost",
            lambda: js(browser, "const m = document.getElementById('main'); return m.dataset.state === 'ready'"),
        )
        wait_for(
            "live via localhost", lambda: js(browser, "return document.getElementById('live').dataset.state") == "on"
        )
        assert js(browser, "return document.getElementById('cost-totals').dataset.tokens") == str(
            site.cli("cost")["tokens"]
        )
    finally:
        browser.get("about:blank")


def test_a_new_transcript_with_unpriced_usage_shows_apart_never_as_zero_dollars(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    sid = str(uuid.uuid4())
    folder = site.root / "-tmp-unpriced"
    folder.mkdir(exist_ok=True)
    (folder / f"{sid}.jsonl").write_bytes(_assistant_line(sid, "/tmp/unpriced", model="claude-unpriced-test-1"))
    row = wait_for(
        "the new transcript's session",
        lambda: next((r for r in js(browser, SESSION_ROWS_JS) if r["id"] == sid), None),
        timeout_s=10,
    )
    want = next(r for r in site.cli("sessions", "--all")["rows"] if r["session_id"] == sid)
    assert want["cost_usd"] == "0" and want["unpriced"] == {
        "claude-unpriced-test-1": {"tokens": 15, "messages": 1, "web_search_requests": 0, "reasons": ["no_rate"]}
    }
    assert row["tokens"] == "15" and row["cost"] == "0"
    assert row["costText"] == "unpriced" and "$" not in row["costText"]
    title = js(browser, "return document.querySelector(`tr[data-session-id='${arguments[0]}'] .unpriced`).title", sid)
    assert "claude-unpriced-test-1" in title


@pytest.mark.console_errors_checked
def test_the_page_reconnects_after_a_daemon_restart(browser: Any, site: Site) -> None:
    open_view(browser, site, "#/sessions", "sessions")
    js(browser, "window.__noReload = 1;")
    boot = js(browser, "return document.body.dataset.boot")
    assert site.daemon.stop() == 0
    wait_for("the page to notice", lambda: js(browser, "return document.getElementById('live').dataset.state") == "off")
    site.daemon.start()
    wait_for(
        "the stream to come back",
        lambda: js(browser, "return document.getElementById('live').dataset.state") == "on",
        timeout_s=20,
    )
    assert js(browser, "return document.body.dataset.boot") != boot  # a new daemon run answered
    sid = str(uuid.uuid4())
    post_hook(site, {"hook_event_name": "UserPromptSubmit", "session_id": sid, "session_title": "after restart"})
    wait_for("a hook after the restart", lambda: sid in [r["id"] for r in js(browser, SESSION_ROWS_JS)], timeout_s=5)
    assert js(browser, "return window.__noReload") == 1
    # While the daemon was down the browser logs its failed reconnects; nothing else may be an error.
    others = [e for e in console_errors(browser) if "ERR_CONNECTION_REFUSED" not in e["message"]]
    assert others == []
