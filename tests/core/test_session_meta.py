"""sessions title / git branch / version (SPEC §4.1): which evidence names the session, in any order."""

from __future__ import annotations

import itertools

import orjson

from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.projector_support import Model, hook_row

SID = "88888888-8888-4888-8888-888888888888"
ORIGIN = f"-home-u-m/{SID}.jsonl"


def line(i: int, obj: dict[str, object]) -> LogRow:
    return LogRow(i, "jsonl", str(obj["type"]), orjson.dumps(obj), "2026-03-01T00:00:00.000Z", SID, ORIGIN, 0, i * 100)


def hook(i: int, name: str, sec: int, **body: object) -> LogRow:
    return hook_row(SID, i, name, f"2026-01-01T00:00:{sec:02d}.000Z", **body)


def session(rows: list[LogRow]) -> tuple[object, ...]:
    out = set()
    for order in itertools.permutations(rows):
        m = Model()
        m.apply(fold_log(SID, list(order), Ctx())[1])
        out.add(m.tables["sessions"][SID])
    assert len(out) == 1, out  # order independent
    return out.pop()


def rec(i: int, ts: str, **kw: object) -> LogRow:
    body = {"type": "user", "sessionId": SID, "uuid": f"u{i}", "timestamp": ts, "cwd": "/m", **kw}
    return line(i, {**body, "message": {"role": "user", "content": "hi"}})


def test_a_summary_is_not_its_files_title() -> None:
    """A summary belongs to the session of its leafUuid's record, joined by the store
    (``ingestd.store.titles``, tests/store/test_titles.py): the fold alone titles nothing."""
    s = session(
        [line(1, {"type": "summary", "summary": "Old name", "leafUuid": "x"}), rec(2, "2026-01-01T00:00:00.000Z")]
    )
    assert s[8] is None and s[12] is None


def test_newest_hook_session_title_beats_older_titles_and_the_summary() -> None:
    rows = [
        line(1, {"type": "summary", "summary": "Zzz summary sorts last", "leafUuid": "x"}),
        hook(2, "SessionStart", 1, session_title="Zeta first name", source="startup"),
        hook(3, "UserPromptSubmit", 5, session_title="Alpha renamed", prompt="go"),
    ]
    assert session(rows).title == "Alpha renamed" and session(rows).title_source == "session_title"


def test_git_branch_and_version_are_the_newest_records() -> None:
    rows = [
        rec(1, "2026-01-01T00:00:00.000Z", gitBranch="main", version="2.1.39"),
        rec(2, "2026-01-02T00:00:00.000Z", gitBranch="feature/x", version="2.1.42"),
        rec(3, "2026-01-03T00:00:00.000Z", gitBranch="", version="2.1.42"),  # "" = no repo info, not a branch
    ]
    s = session(rows)
    assert (s[6], s[7]) == ("feature/x", "2.1.42")
    assert (s[2], s[3], s[4]) == ("/m", "2026-01-01T00:00:00.000Z", "2026-01-03T00:00:00.000Z")
