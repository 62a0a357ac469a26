"""What a real Claude Code 2.1.332 hands its status-line command, checked live in its interactive UI
(docs/claude-code.md §2): the status line runs only there, never under ``claude -p``."""

from __future__ import annotations

import json
from typing import Any

from tests.realclaude import standin as s
from tests.realclaude.capture import OUT
from tests.realclaude.claude import Claude
from tests.realclaude.recorder import Recorder


def shape(doc: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON document (``context_window.current_usage.input_tokens``)."""
    if not isinstance(doc, dict):
        return set()
    out = set()
    for k, v in doc.items():
        out.add(prefix + k)
        out |= shape(v, prefix + k + ".")
    return out


def test_status_line_input_before_and_after_a_prompt(claude: Claude, standin: s.StandIn, recorder: Recorder) -> None:
    standin.script = s.script(s.conversation("SL-TEST", s.text("Hello.")))
    with claude.interactive(settings={"statusLine": recorder.status_line("ok")}) as term:
        term.wait("the first status line", lambda: recorder.of("statusline"))
        term.submit("SL-TEST hi")
        term.wait(
            "a status line with usage",
            lambda: any(h.json()["context_window"]["current_usage"] for h in recorder.of("statusline")),
        )
    inputs = [h.json() for h in recorder.of("statusline")]
    before, after = inputs[0], inputs[-1]
    sid = claude.runs[-1].session_id
    assert {d["session_id"] for d in inputs} == {sid}
    assert before["context_window"]["current_usage"] is None and before["context_window"]["used_percentage"] is None
    assert before["cost"]["total_cost_usd"] == 0 and "prompt_id" not in before
    assert after["model"] == {"id": "claude-sonnet-4-5-20250929", "display_name": "Sonnet 4.5"}
    assert after["workspace"]["current_dir"] == str(claude.home() / "proj") and after["version"] == "2.1.332"
    usage = after["context_window"]["current_usage"]
    assert usage == {
        "input_tokens": 1200,
        "output_tokens": 7,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 5000,
    }
    assert after["cost"]["total_cost_usd"] > 0
    assert after["prompt_cache"]["warm"] is True and after["prompt_cache"]["ttl"] == "5m"
    assert "rate_limits" not in after  # only for Pro/Max subscriptions, never with an API key
    samples = [json.loads(p.read_text()) for p in sorted((OUT / "statusline").glob("input-*.json"))]
    assert shape(next(d for d in samples if d["context_window"]["current_usage"])) == shape(after)
    assert shape(samples[0]) == shape(before)
