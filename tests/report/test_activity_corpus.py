"""What each agent did, read back from the real corpus's log: each call's input and result, each
subagent's prompt and answer, the person's prompts, and a name for every session without a title."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.report.sessions import sessions_report
from ingestd.report.timeline import timeline_report
from ingestd.report.window import Window
from ingestd.store.connection import Db, connect
from tests.conftest import CORPUS

PROJECTS = CORPUS / "claude-projects"
DOV = "4d5611e5-241a-462a-8d15-5122611a9569"  # spotter-dov: Bash, Read, Grep, a Task, a compaction summary


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Db]:
    if not PROJECTS.is_dir():
        pytest.skip(f"real corpus not found at {PROJECTS}")
    db = tmp_path_factory.mktemp("activity") / "real.db"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(PROJECTS)])
    assert r.exit_code == 0, r.output
    conn = connect(db, readonly=True)
    yield conn
    conn.close()


def test_every_call_says_what_it_did(real: Db) -> None:
    doc = timeline_report(real, DOV)
    calls = {c["tool_use_id"]: c for c in doc["tool_calls"]}
    first = calls["toolu_01UwLnYYWGBvukzh1QE6JpfM"]
    assert first["tool_name"] == "Bash" and first["input_summary"] == "bd show spotter-dov"
    assert '"description": "Show spotter-dov issue details"' in first["input"]
    assert first["result"]["is_error"] is False and first["result"]["size_bytes"] == 4128
    assert first["result"]["preview"].startswith("○ spotter-dov [EPIC]")
    summaries = {c["input_summary"] for c in doc["tool_calls"]}
    assert "/home/user/projects/spotter-worktrees/spotter-dov/lib/spotter_web/live/session_live.ex" in summaries
    assert any(s.startswith("@show_debug  in /home/user/") for s in summaries), "a Grep's pattern and path"
    described = [c for c in doc["tool_calls"] if c["input_summary"]]
    assert len(described) == len(doc["tool_calls"]), "every call of a transcript has its input"
    assert all(c["result"] is not None for c in doc["tool_calls"] if c["status"] in ("completed", "failed"))


def test_a_subagent_has_its_prompt_and_answer(real: Db) -> None:
    spawn = timeline_report(real, DOV)["spawns"]["a2898e3"]
    assert spawn["prompt"].startswith("Very thorough exploration. I need to understand:")
    assert "Comprehensive Exploration Report" in spawn["answer"]


def test_the_persons_prompts_in_order(real: Db) -> None:
    prompts = timeline_report(real, DOV)["prompts"]
    texts = [p["text"] for p in prompts]
    assert texts[0].startswith("Work on bead spotter-dov.") and "continue" in texts
    assert not any(t.startswith(("This session is being continued", "<task-notification>")) for t in texts)
    assert [p["at"] for p in prompts] == sorted(p["at"] for p in prompts)


def test_every_session_without_a_title_is_named(real: Db) -> None:
    rows = sessions_report(real, window=Window(None, None))["rows"]
    by_id = {r["session_id"][:8]: r for r in rows}
    assert (by_id["61ddcbba"]["name"], by_id["61ddcbba"]["name_source"]) == (
        "READ THIS https://craigmbrown.com/blindoracle/agents/",
        "first_prompt",
    )
    assert by_id["4d5611e5"]["name_source"] == "slug" and by_id["4d5611e5"]["first_prompt"] is None
    for r in rows:
        if r["title"]:
            assert (r["name"], r["name_source"]) == (r["title"], "title")
        elif r["slug"]:
            assert (r["name"], r["name_source"]) == (r["slug"], "slug")
    unnamed = [r["session_id"] for r in rows if r["name"] is None]
    assert len(unnamed) <= 1, unnamed  # only a session whose log holds no prompt at all


def test_the_terminal_shows_the_first_prompt_where_there_is_no_title(tmp_path: Path, real: Db) -> None:
    from io import StringIO

    from rich.console import Console

    from ingestd.report.render import render_sessions
    from ingestd.report.window import resolve_zone

    doc = sessions_report(real, window=Window(None, None))
    out = StringIO()
    render_sessions(Console(file=out, width=160), doc, resolve_zone("UTC", {}), None)
    [line] = [x for x in out.getvalue().splitlines() if "61ddcbba" in x]
    assert "“READ THIS https://craigmbrown.com" in line
