"""The stand-in Messages API speaks the API's wire format and follows its script (no Claude Code needed)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from tests.realclaude import standin as s


def post(api: s.StandIn, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(
        api.url + "/v1/messages?beta=true", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The (event, data) pairs of an SSE body."""
    out = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def assemble(evs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The message a streaming client reassembles from the events (as the SDK does)."""
    msg: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for name, data in evs:
        if name == "message_start":
            msg = data["message"]
        elif name == "content_block_start":
            msg["content"].append(dict(data["content_block"]))
        elif name == "content_block_delta":
            block, delta = msg["content"][data["index"]], data["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            else:
                partial[data["index"]] = partial.get(data["index"], "") + delta["partial_json"]
        elif name == "content_block_stop" and data["index"] in partial:
            msg["content"][data["index"]]["input"] = json.loads(partial[data["index"]])
        elif name == "message_delta":
            msg["stop_reason"] = data["delta"]["stop_reason"]
            msg["usage"].update(data["usage"])
    return msg


TOOLS = [{"name": "Read", "input_schema": {"type": "object"}}]


def request(text: str, *, assistants: int = 0, stream: bool = True, tools: list[Any] = TOOLS) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<reminder/>"}, {"type": "text", "text": text}]}
    ]
    for _ in range(assistants):
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
            {"role": "user", "content": "more"},
        ]
    return {
        "model": "claude-sonnet-4-5-20250929",
        "messages": messages,
        "tools": tools,
        "stream": stream,
        "max_tokens": 100,
    }


def test_a_stream_is_the_apis_event_sequence_and_reassembles_to_the_turn() -> None:
    usage = s.Usage(
        input_tokens=11, output_tokens=22, cache_read_input_tokens=33, cache_creation_5m=44, cache_creation_1h=55
    )
    turn = s.tool("Read", {"file_path": "/home/user/a b.txt"}, say="Let me look.", usage=usage)
    with s.StandIn(s.script(s.conversation("MARK", turn))) as api:
        status, headers, raw = post(api, request("MARK go"))
    assert status == 200 and headers["Content-Type"].startswith("text/event-stream")
    evs = events(raw)
    names = [n for n, _ in evs]
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    assert evs[0][1]["message"]["usage"]["output_tokens"] == 1  # as the API: the final count comes last
    msg = assemble(evs)
    assert msg["id"] == "msg_standin_0001" and msg["model"] == "claude-sonnet-4-5-20250929"
    assert msg["stop_reason"] == "tool_use"
    assert msg["content"][0] == {"type": "text", "text": "Let me look."}
    assert msg["content"][1] == {
        "type": "tool_use",
        "id": "toolu_standin_0001",
        "name": "Read",
        "input": {"file_path": "/home/user/a b.txt"},
    }
    assert msg["usage"]["output_tokens"] == 22 and msg["usage"]["input_tokens"] == 11
    assert msg["usage"]["cache_read_input_tokens"] == 33 and msg["usage"]["cache_creation_input_tokens"] == 99
    assert msg["usage"]["cache_creation"] == {"ephemeral_5m_input_tokens": 44, "ephemeral_1h_input_tokens": 55}


def test_turns_follow_the_assistant_messages_and_end_in_text() -> None:
    conv = s.conversation("MARK", s.read("/a"), s.text("first"))
    with s.StandIn(s.script(conv)) as api:
        replies = [assemble(events(post(api, request("MARK", assistants=n))[2])) for n in range(4)]
    assert [r["stop_reason"] for r in replies] == ["tool_use", "end_turn", "end_turn", "end_turn"]
    assert [r["content"][0].get("text") for r in replies[1:]] == ["first", "first", "first"]
    assert [r.turn for r in api.messages()] == [0, 1, 2, 3]


def test_a_conversation_past_a_tool_turn_ends_with_text() -> None:
    assert s.conversation("M", s.read("/a")).turn(1).stop_reason == "end_turn"


def test_requests_without_tools_or_marker_get_the_fallback() -> None:
    with s.StandIn(s.script(s.conversation("MARK", s.read("/a")), fallback=s.text("title"))) as api:
        titled = assemble(events(post(api, request("MARK in a title request", tools=[]))[2]))
        other = assemble(events(post(api, request("no marker here"))[2]))
    assert titled["content"] == [{"type": "text", "text": "title"}] == other["content"]
    assert [r.conversation for r in api.messages()] == [None, None]


def test_a_non_streaming_request_gets_one_message() -> None:
    with s.StandIn(s.script(s.conversation("MARK", s.text("hello there")))) as api:
        status, _, raw = post(api, request("MARK", stream=False))
    body = json.loads(raw)
    assert status == 200 and body["content"] == [{"type": "text", "text": "hello there"}]
    assert body["stop_reason"] == "end_turn" and body["usage"]["output_tokens"] == 7


@pytest.mark.parametrize("request_ids", [True, False])
def test_request_id_header_only_when_asked(request_ids: bool) -> None:
    with s.StandIn(s.script(s.conversation("MARK", s.text("x"))), request_ids=request_ids) as api:
        _, headers, _ = post(api, request("MARK"))
    assert headers.get("request-id") == ("req_standin_0001" if request_ids else None)


def test_an_error_turn_is_an_api_error_answer() -> None:
    with s.StandIn(s.script(s.conversation("MARK", s.api_error(429, "rate_limit_error")))) as api:
        status, _, raw = post(api, request("MARK"))
    assert status == 429
    assert json.loads(raw)["error"]["type"] == "rate_limit_error"


def test_other_paths_are_recorded() -> None:
    with s.StandIn() as api:
        req = urllib.request.Request(api.url + "/api/hello", method="HEAD")
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert resp.status == 200
    assert [(r.method, r.path) for r in api.requests] == [("HEAD", "/api/hello")]
