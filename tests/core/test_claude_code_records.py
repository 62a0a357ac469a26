"""The record types of Claude Code 2.1.3xx transcripts: ``cost-state`` is Claude Code's own totals
(``sessions.cc_cost_usd``, ``cc_model_usage``), ``last-prompt`` the session's latest prompt, and
``promptId`` / ``turnPosition`` on user records (with the hooks' ``prompt_id``) the ``prompts``
table; none of them, nor ``api-request*``, ``attachment``, ``atis-latch``, ``tools-used``, is usage.

Built from the session a real Claude Code 2.1.332 wrote (``fixtures/claude-2.1.332/projects``).
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import orjson

from ingestd.core import rows
from ingestd.core.projector import fold_log
from ingestd.core.records import LogRow
from ingestd.core.touch import Ctx
from tests.core.claude_fixtures import deliveries, hook_rows
from tests.core.projector_support import Model, tree_rows

PROJECTS = Path(__file__).resolve().parents[2] / "fixtures" / "claude-2.1.332" / "projects"
SID = "f062db45-0619-43b9-910c-e628426ea014"
MODEL = "claude-sonnet-4-5-20250929"
PROMPT = "047ad564-5b8f-4283-921a-ec6682a6562c"
READ_AT = "2026-12-02T00:00:00.000Z"  # after the records' times (a later one would be refused)


def _rows() -> list[LogRow]:
    return [dataclasses.replace(r, received_at=READ_AT) for r in tree_rows(PROJECTS)]


def _model(rs: list[LogRow]) -> Model:
    m = Model()
    m.apply(fold_log(SID, rs, Ctx())[1])
    return m


def test_the_sample_session_projects_claude_codes_totals_its_prompt_and_no_other_usage() -> None:
    rs = _rows()
    kinds = {r.event_type for r in rs}
    assert {"cost-state", "last-prompt", "api-request", "api-request-blob", "api-request-shape"} <= kinds
    assert {"atis-latch", "tools-used", "attachment"} <= kinds
    m = _model(rs)
    s = m.tables["sessions"][SID]
    assert s.cc_cost_usd == 0.013155 and s.last_prompt == "please read hello.txt"
    assert m.tables["cc_model_usage"] == {
        (SID, MODEL): rows.CcModelUsageRow(SID, MODEL, 2400, 47, 10000, 600, 0, 0, 0.013155)
    }
    assert m.tables["prompts"] == {
        (SID, PROMPT): rows.PromptRow(
            SID, PROMPT, 0, "please read hello.txt", "2026-12-01T22:24:32.745Z", "2026-12-01T22:24:32.840Z"
        )
    }
    # the billed messages are the two assistant records, and they alone
    assert sorted(m.tables["tokens"]) == ["msg_fake_5bcb83bfdf724b0f8f4c", "msg_fake_891c00748060441794e2"]
    assert m.totals() == {"input": 2400, "output": 47, "cache_read": 10000, "cache_write_5m": 600, "cache_write_1h": 0}
    assert m.tables["tools"][(SID, "toolu_fake_3c563426613a49ec")].prompt_id == PROMPT


def test_any_order_of_the_records_makes_the_same_tables() -> None:
    rs = _rows()
    want = _model(rs).tables
    for seed in range(4):
        shuffled = list(rs)
        random.Random(seed).shuffle(shuffled)
        assert _model(shuffled).tables == want


def _cost_state(offset: int, usage: dict[str, Any], total: object, row_id: int) -> LogRow:
    body = {"type": "cost-state", "sessionId": SID, "totalCostUSD": total, "modelUsage": usage}
    origin = f"-home-user-proj/{SID}.jsonl"
    return LogRow(row_id, "jsonl", "cost-state", orjson.dumps(body), READ_AT, SID, origin, 0, offset)


def _usage(n: int, usd: float) -> dict[str, Any]:
    return {
        "inputTokens": n,
        "outputTokens": 7,
        "cacheReadInputTokens": 0,
        "cacheCreationInputTokens": 300,
        "cacheCreationEphemeral5mInputTokens": 300,
        "cacheCreationEphemeral1hInputTokens": 0,
        "webSearchRequests": 0,
        "costUSD": usd,
    }


def test_the_latest_cost_state_by_place_wins_and_a_model_it_drops_keeps_no_figures() -> None:
    early = _cost_state(100, {MODEL: _usage(1200, 0.5), "claude-haiku-4-5-20251001": _usage(10, 0.01)}, 0.51, 1)
    late = _cost_state(900, {MODEL: _usage(2400, 1.0)}, 1.0, 2)
    for order in ([early, late], [late, early]):
        m = _model(order)
        assert m.tables["sessions"][SID].cc_cost_usd == 1.0
        usage = m.tables["cc_model_usage"]
        assert usage[(SID, MODEL)].input_tokens == 2400 and usage[(SID, MODEL)].cost_usd == 1.0
        assert usage[(SID, "claude-haiku-4-5-20251001")] == rows.CcModelUsageRow(
            SID, "claude-haiku-4-5-20251001", *(None,) * 7
        )


def test_ill_typed_cost_state_fields_are_none_and_never_a_crash() -> None:
    bad = {
        "inputTokens": "2400",
        "outputTokens": True,
        "cacheReadInputTokens": -1,
        "cacheCreationInputTokens": 1 << 50,
        "webSearchRequests": 1.5,
        "costUSD": float("nan"),
    }
    m = _model([_cost_state(1, {MODEL: bad, "": _usage(1, 1.0), "x": "not an object"}, "12", 1)])
    assert m.tables["sessions"][SID].cc_cost_usd is None
    assert m.tables["cc_model_usage"] == {(SID, MODEL): rows.CcModelUsageRow(SID, MODEL, *(None,) * 7)}
    assert _model([_cost_state(1, "none", None, 1)]).tables["cc_model_usage"] == {}
    # a total split over no cache kinds: the aggregate is 5-minute writes (the API's default)
    old = _usage(5, 0.1)
    del old["cacheCreationEphemeral5mInputTokens"], old["cacheCreationEphemeral1hInputTokens"]
    got = _model([_cost_state(1, {MODEL: old}, 0.1, 1)]).tables["cc_model_usage"][(SID, MODEL)]
    assert (got.cache_write_5m_tokens, got.cache_write_1h_tokens) == (300, 0)


def test_hooks_name_prompts_and_a_notice_delivered_as_a_prompt_is_no_prompt_text() -> None:
    bodies = deliveries("tasks")
    sid = str(bodies[0]["session_id"])
    submit = next(b for b in bodies if b["hook_event_name"] == "UserPromptSubmit")
    pid = str(submit["prompt_id"])
    notice = {
        **submit,
        "prompt_id": "p-notice",
        "prompt": "<task-notification><task-id>b9</task-id><status>completed</status></task-notification>",
    }
    m = Model()
    m.apply(fold_log(sid, hook_rows([*bodies, notice]), Ctx())[1])
    prompts = {k[1]: v for k, v in m.tables["prompts"].items()}
    assert prompts[pid].text == submit["prompt"]
    named = [e.occurred_at for e in m.tables["events"].values() if e.prompt_id == pid]
    assert (prompts[pid].first_at, prompts[pid].last_at) == (min(named), max(named))
    assert prompts["p-notice"].text is None
