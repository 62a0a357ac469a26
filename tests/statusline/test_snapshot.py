"""Which status-line input is a snapshot, its log key, its sample row and what is flagged."""

from __future__ import annotations

import copy

import orjson
import pytest

from ingestd.core import statusline as sl
from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.timefmt import from_epoch_ns
from ingestd.core.touch import Ctx
from tests.statusline.documented import AT, NOW, SESSION, documented, log_row, real_inputs


def snap(doc: dict[str, object]) -> sl.Snapshot:
    parsed = sl.parse_input(orjson.dumps(doc))
    assert isinstance(parsed, sl.Snapshot)
    return parsed


row = log_row


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "invalid_json"),
        (b"{not json", "invalid_json"),
        (b"[1]", "invalid_json"),
        (b'{"a": 1}', "missing_session_id"),
        (b'{"session_id": "  "}', "missing_session_id"),
        (b'{"session_id": 7}', "missing_session_id"),
    ],
)
def test_what_is_not_a_snapshot(body: bytes, reason: str) -> None:
    got = sl.parse_input(body)
    assert isinstance(got, sl.NotASnapshot) and got.reason == reason


def test_the_key_is_the_session_and_the_snapshot_not_the_timers() -> None:
    doc = documented(NOW)
    base = sl.snapshot_key(snap(doc))
    later = copy.deepcopy(doc)
    later["cost"]["total_duration_ms"] += 5000  # type: ignore[index]
    later["prompt_cache"] = {"warm": True, "expires_at": 1}
    assert sl.snapshot_key(snap(later)) == base
    for change in (
        lambda d: d["rate_limits"]["five_hour"].update(used_percentage=43),
        lambda d: d["cost"].update(total_cost_usd=1.3),
        lambda d: d["context_window"].update(used_percentage=26),
        lambda d: d["model"].update(id="claude-sonnet-4-5-20250929"),
        lambda d: d.update(session_id="another"),
    ):
        other = copy.deepcopy(doc)
        change(other)
        assert sl.snapshot_key(snap(other)) != base


def test_the_documented_input_gives_its_official_numbers() -> None:
    doc = documented(NOW)
    r = sl.sample_row(row(doc), doc)
    assert r.session_id == SESSION and r.sampled_at == AT and r.model == "claude-opus-4-1-20250805"
    assert (r.five_hour_pct, r.five_hour_flag) == (42.5, None)
    assert r.five_hour_resets_at == from_epoch_ns(int(NOW + 7200) * 10**9)
    assert (r.seven_day_pct, r.seven_day_flag) == (13.0, None)
    assert r.seven_day_resets_at == from_epoch_ns(int(NOW + 3 * 86400) * 10**9)
    assert (r.cc_cost_usd, r.context_used_pct, r.cc_version) == (1.2345, 25.0, "2.1.332")


def test_real_inputs_have_no_limits_and_nothing_flagged() -> None:
    for doc in real_inputs():
        r = sl.sample_row(row(doc), doc)
        assert r.five_hour_pct is r.seven_day_pct is r.five_hour_flag is r.seven_day_flag is None
        assert r.cc_cost_usd is not None and r.cc_version == "2.1.332"
    first = real_inputs()[0]  # before the first response: percentages null
    assert sl.sample_row(row(first), first).context_used_pct is None


def test_every_input_the_decoder_takes_has_a_key_as_orjson_would_write_it() -> None:
    """Integers past 64 bits (the decoder keeps those past a float's range as int) and nesting
    past orjson's 255 levels, in any part of the snapshot."""
    head = b'{"session_id": "' + SESSION.encode() + b'", '
    bodies = [
        head + b'"context_window": {"used_percentage": ' + b"[" * 500 + b"]" * 500 + b"}}",
        head + b'"cost": {"total_cost_usd": 1' + b"0" * 400 + b"}}",
    ]
    keys = set()
    for body in bodies:
        got = sl.parse_input(body)
        assert isinstance(got, sl.Snapshot)
        keys.add(sl.snapshot_key(got))
    assert len(keys) == 2
    part = sl.snapshot_part(documented(NOW))
    assert sl.canonical_json(part) == orjson.dumps(part, option=orjson.OPT_SORT_KEYS)  # logged keys stay


def test_an_integer_past_a_floats_range_is_flagged_never_raised() -> None:
    from datetime import UTC, datetime, timedelta

    at = datetime.fromtimestamp(NOW, tz=UTC)
    assert sl.window_of({"used_percentage": 10**400, "resets_at": NOW + 60}, timedelta(hours=5), at)[::2] == (
        None,
        sl.BAD_PERCENTAGE,
    )
    assert sl.window_of({"used_percentage": 30, "resets_at": 10**400}, timedelta(hours=5), at) == (
        30.0,
        None,
        sl.RESET_ABSURD,
    )


@pytest.mark.parametrize(
    ("window", "flag", "pct", "reset"),
    [
        ({"used_percentage": None, "resets_at": None}, sl.NULL, None, False),
        ({"used_percentage": 30}, sl.NULL, 30.0, False),
        ({"used_percentage": 130, "resets_at": NOW + 60}, sl.BAD_PERCENTAGE, None, True),
        ({"used_percentage": "30", "resets_at": NOW + 60}, sl.BAD_PERCENTAGE, None, True),
        ({"used_percentage": True, "resets_at": NOW + 60}, sl.BAD_PERCENTAGE, None, True),
        ({"used_percentage": 30, "resets_at": NOW - 3600}, sl.RESET_PAST, 30.0, True),
        ({"used_percentage": 30, "resets_at": NOW + 86400}, sl.RESET_ABSURD, 30.0, True),
        ({"used_percentage": 30, "resets_at": 1e300}, sl.RESET_ABSURD, 30.0, False),
        ({"used_percentage": 30, "resets_at": "soon"}, sl.RESET_ABSURD, 30.0, False),
        ("full", sl.BAD_PERCENTAGE, None, False),
    ],
)
def test_unsound_windows_are_stored_and_flagged(window: object, flag: str, pct: float | None, reset: bool) -> None:
    doc = documented(NOW)
    doc["rate_limits"]["five_hour"] = window  # type: ignore[index]
    r = sl.sample_row(row(doc), doc)
    assert (r.five_hour_flag, r.five_hour_pct, r.five_hour_resets_at is not None) == (flag, pct, reset)
    assert r.seven_day_flag is None and r.seven_day_pct == 13.0  # the other window stays sound


def test_the_fold_makes_one_sample_per_row_and_no_session_evidence() -> None:
    docs = [documented(NOW), documented(NOW + 60, cost={"total_cost_usd": 2.0})]
    rows = [row(d, i + 1) for i, d in enumerate(docs)]
    _, ch = fold_log(SESSION, rows, Ctx())
    _, backwards = fold_log(SESSION, rows[::-1], Ctx())
    assert sorted(ch.rate_limit_samples) == sorted(backwards.rate_limit_samples)
    assert [s.raw_event_id for s in sorted(ch.rate_limit_samples)] == [1, 2]
    assert not ch.agents and not ch.token_usage and not ch.events
    assert ch.sessions[0].started_at is None  # a status line is not the session's activity


def test_an_undecodable_logged_row_makes_no_sample() -> None:
    bad = LogRow(1, sl.SOURCE, sl.EVENT_TYPE, b"{torn", AT, SESSION, sl.ORIGIN)
    _, ch = fold_log(SESSION, [bad], Ctx())
    assert ch.rate_limit_samples == []
