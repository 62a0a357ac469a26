"""Real transcript records copied from ``../shared/corpus/`` for the billing rules' tests.

Each is a line Claude Code wrote, parsed; a test adds the usage field under test as the public
sources describe it (FORMATS.md §3) and changes nothing else.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson

# corpus/claude-projects/-home-user-projects-spotter/491e126e-1e71-469c-ade2-fcc8af567c74.jsonl,
# Claude Code 2.1.38, the first assistant record whose usage has `iterations` (its tool input cut).
_OPUS_46 = (
    b'{"parentUuid":"5ac64fa3-3d58-4acf-a03b-c4ae943aabdd","isSidechain":false,"userType":"external",'
    b'"cwd":"/home/user/projects/spotter","sessionId":"491e126e-1e71-469c-ade2-fcc8af567c74","version":"2.1.38",'
    b'"gitBranch":"master","slug":"humble-seeking-umbrella","message":{"model":"claude-opus-4-6",'
    b'"id":"msg_0179FgGtJzf3MkRAWS4a4tbE","type":"message","role":"assistant","content":[{"type":"tool_use",'
    b'"id":"toolu_01RsKEmE8Mc3wD8Vex5b6Zne","name":"AskUserQuestion","input":{"questions":[]},'
    b'"caller":{"type":"direct"}}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,'
    b'"cache_creation_input_tokens":762,"cache_read_input_tokens":34903,"output_tokens":472,'
    b'"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},"service_tier":"standard",'
    b'"cache_creation":{"ephemeral_1h_input_tokens":762,"ephemeral_5m_input_tokens":0},"inference_geo":"",'
    b'"iterations":[]}},"requestId":"req_011CY18jHAewmXYczL1WUztG","type":"assistant",'
    b'"uuid":"5a870ee3-92dd-48a0-9e23-b50e820810ae","timestamp":"2026-02-10T21:55:43.858Z"}'
)

# The record's own usage priced at claude-opus-4-6's list rates (USD per MTok: input 5, output 25,
# cache read 0.5, 1h write 10): 1*5 + 472*25 + 34,903*0.5 + 762*10 = 36,876.5 -> $0.0368765.
OPUS_46_COST = "0.0368765"


def opus_46_record(**usage: Any) -> dict[str, Any]:
    """The corpus record above, its ``message.usage`` updated with ``usage``."""
    rec: dict[str, Any] = orjson.loads(_OPUS_46)
    rec["message"]["usage"].update(copy.deepcopy(usage))
    return rec
