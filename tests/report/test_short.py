"""Shortening names for narrow terminals without two of them looking the same."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from ingestd.report.short import cut, cut_start, flow, short_ids, short_models, unique_suffixes


def test_projects_get_their_shortest_unique_suffix() -> None:
    paths = [
        "/home/user/projects/spotter",
        "/home/user/projects/spotter-worktrees/spotter-dov",
        "/home/user/wt/a/spotter",
        "C:\\Users\\user\\Project",
        "/spotter",
    ]
    assert unique_suffixes([*paths, None, "/home/user/projects/spotter"]) == {
        "/home/user/projects/spotter": "projects/spotter",
        "/home/user/projects/spotter-worktrees/spotter-dov": "spotter-dov",
        "/home/user/wt/a/spotter": "a/spotter",
        "C:\\Users\\user\\Project": "Project",
        "/spotter": "spotter",  # a suffix of the others: all its components, still distinct
    }


@given(st.lists(st.lists(st.sampled_from(["a", "b", "spotter", "x-y"]), min_size=1, max_size=4), max_size=8))
def test_shortened_projects_are_never_confused(parts: list[list[str]]) -> None:
    paths = ["/" + "/".join(p) for p in parts]
    short = unique_suffixes(paths)
    distinct = set(paths)
    assert len({short[p] for p in distinct}) == len(distinct)
    assert all(p.endswith(short[p]) for p in distinct)


def test_agent_ids_are_shortened_unambiguously() -> None:
    ids = [
        "sidechain-07609b35-1460-4e48-9405-489d2cb36227",
        "sidechain-07609b35-9999-4e48-9405-489d2cb36227",
        "sidechain-6f3e1b41-a31b-4bc0-809b-2b19276914ca",
        "acompact-946d2b",
        "a0123456789abcdef",
        "a-explore-1",
    ]
    assert short_ids(ids) == {
        "sidechain-07609b35-1460-4e48-9405-489d2cb36227": "07609b35-1",
        "sidechain-07609b35-9999-4e48-9405-489d2cb36227": "07609b35-9",
        "sidechain-6f3e1b41-a31b-4bc0-809b-2b19276914ca": "6f3e1b41",
        "acompact-946d2b": "acompact-946d2b",
        "a0123456789abcdef": "a0123456",
        "a-explore-1": "a-explore-1",
    }


@given(st.lists(st.text("ab-0123456789", min_size=1, max_size=30), max_size=12))
def test_short_ids_never_collide(ids: list[str]) -> None:
    short = short_ids(ids)
    distinct = set(ids)
    shown = [short[i] for i in distinct]
    assert len(set(shown)) == len(distinct)
    assert all(short[i] in i for i in distinct)


def test_flow_breaks_between_phrases_only() -> None:
    assert flow(["own 2.47M tok $1.09", "subtree 12.0M tok $20.16", "tools 3"], 30) == [
        "own 2.47M tok $1.09",
        "subtree 12.0M tok $20.16",
        "tools 3",
    ]
    assert flow(["a", "b", "", "a-phrase-longer-than-the-width"], 5) == ["a  b", "a-phrase-longer-than-the-width"]


def test_cut_marks_the_cut_end_and_fits_wide_characters() -> None:
    assert cut("spotter", 7) == "spotter"
    assert cut("spotter-dov", 7) == "spotte…"
    assert cut_start("spotter-dov", 7) == "…er-dov"
    assert cut("日本語のタイトル", 6) == "日本…"  # two cells each: never one past the width
    assert cut_start("日本語のタイトル", 6) == "…トル"
    assert cut("abc", 1) == "…"
    assert cut_start("abc", 1) == "…"


@given(st.text("ab日-", max_size=12), st.integers(1, 14))
def test_cut_fits_the_width(text: str, width: int) -> None:
    """A cut text fits its width in terminal cells, ends (or starts) with an ellipsis when it was cut, and is
    left alone when it fits."""
    for f in (cut, cut_start):
        got = f(text, width)
        assert cell_len(got) <= width
        assert got == text or (got.endswith("…") if f is cut else got.startswith("…"))


def test_model_ids_lose_their_family_prefix_and_snapshot_date_unless_two_would_then_read_the_same() -> None:
    models = [
        "claude-opus-4-1-20250805",
        "claude-opus-4-6",
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-5-20251201",
        "<synthetic>",
        "claude-",
        "gpt-5",
    ]
    assert short_models([*models, None]) == {
        "claude-opus-4-1-20250805": "opus-4-1",
        "claude-opus-4-6": "opus-4-6",
        "claude-sonnet-4-5-20250929": "claude-sonnet-4-5-20250929",  # two snapshots of one model: whole
        "claude-sonnet-4-5-20251201": "claude-sonnet-4-5-20251201",
        "<synthetic>": "<synthetic>",
        "claude-": "claude-",  # nothing left: whole
        "gpt-5": "gpt-5",
    }


@given(st.lists(st.from_regex(r"(claude-)?[a-z]{1,3}(-[0-9])?(-[0-9]{8})?", fullmatch=True), max_size=8))
def test_short_model_names_are_never_confused(models: list[str]) -> None:
    short = short_models(models)
    assert len(set(short.values())) == len(short) == len(set(models))
