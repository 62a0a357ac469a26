"""A stand-in for the Anthropic Messages API on loopback, scripted turn by turn.

Claude Code (``claude -p``) talks to it through ``ANTHROPIC_BASE_URL``. It answers
``POST /v1/messages`` as the real API does: a server-sent-event stream (``message_start``, ``ping``,
``content_block_start`` / ``_delta`` / ``_stop`` per block, ``message_delta`` with the stop reason and
the usage, ``message_stop``), or one JSON ``Message`` when the request asks for no stream; and
``POST /v1/messages/count_tokens``, ``HEAD /api/hello``. Anything else is recorded and answered 404.

What it answers is a ``Script``: conversations, each recognised by a marker string in the text of the
request's first user message (a prompt given to ``claude -p``, or the prompt of an ``Agent`` spawn,
which is the subagent's first message) and answered by its turns in order, the turn being the number
of assistant messages already in the request. A request no conversation claims, and every request
that offers no tools (a title, a summary, any other auxiliary call), gets ``Script.fallback``. Past
its last turn a conversation repeats its last turn when that is plain text and answers a short text
otherwise, so a conversation always ends.

Numbers are deterministic: every answer reports its turn's ``Usage``; message ids count up
(``msg_standin_0001``...), tool-use ids likewise (``toolu_standin_0001``...), and with
``request_ids=True`` each answer carries a ``request-id: req_standin_0001`` header (the real API
always sends one; Claude Code copies it into the transcript's ``requestId`` and OTel's
``request_id``). Without it, records carry no request id, as in ``../shared/live-2.1.332``.

Every request is kept (``StandIn.requests``: path, headers, parsed body, which conversation and turn
answered it) for tests to assert on.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from tests.realclaude.loopback import Server


@dataclass(frozen=True, slots=True)
class Usage:
    """The usage one answer reports (tokens).

    Attributes:
        input_tokens: int, uncached input.
        output_tokens: int.
        cache_read_input_tokens: int.
        cache_creation_5m: int, cache writes with the 5-minute TTL.
        cache_creation_1h: int, cache writes with the 1-hour TTL.
    """

    input_tokens: int = 1200
    output_tokens: int = 40
    cache_read_input_tokens: int = 5000
    cache_creation_5m: int = 300
    cache_creation_1h: int = 0

    def as_api(self, *, output_tokens: int | None = None) -> dict[str, Any]:
        """The API's ``usage`` object (``output_tokens`` overridden for ``message_start``'s 1)."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_5m + self.cache_creation_1h,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.cache_creation_5m,
                "ephemeral_1h_input_tokens": self.cache_creation_1h,
            },
            "output_tokens": self.output_tokens if output_tokens is None else output_tokens,
            "service_tier": "standard",
        }


@dataclass(frozen=True, slots=True)
class Text:
    """A text content block."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool_use content block: Claude Code runs tool ``name`` with ``input`` (``id`` is assigned)."""

    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant answer: its content blocks, stop reason and usage.

    Build one with ``text``, ``tool``, ``read``, ``bash`` or ``agent``; ``error`` makes the API answer
    an HTTP error instead (``status``, the error ``type``), which ends Claude Code's turn with an API
    error (StopFailure) once its retries are spent.
    """

    blocks: tuple[Text | ToolUse, ...]
    usage: Usage = Usage()
    error_status: int | None = None
    error_type: str = "api_error"

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


def text(s: str, usage: Usage = Usage(output_tokens=7)) -> Turn:
    """A plain text answer that ends the agent's turn."""
    return Turn((Text(s),), usage)


def tool(name: str, tool_input: dict[str, Any], *, say: str | None = None, usage: Usage = Usage()) -> Turn:
    """An answer calling tool ``name`` (after the text ``say``, when given)."""
    blocks: tuple[Text | ToolUse, ...] = (ToolUse(name, tool_input),)
    return Turn(((Text(say), *blocks) if say else blocks), usage)


def tools(*calls: tuple[str, dict[str, Any]], usage: Usage = Usage()) -> Turn:
    """One answer calling several tools at once (one batch: PostToolBatch fires once for it)."""
    return Turn(tuple(ToolUse(n, i) for n, i in calls), usage)


def read(path: str, usage: Usage = Usage()) -> Turn:
    """Read the file at ``path`` (absolute, as the Read tool requires)."""
    return tool("Read", {"file_path": path}, usage=usage)


def bash(command: str, description: str = "Run a command", usage: Usage = Usage()) -> Turn:
    """Run ``command`` with the Bash tool."""
    return tool("Bash", {"command": command, "description": description}, usage=usage)


def agent(
    prompt: str,
    *,
    description: str = "Check a file",
    subagent_type: str = "general-purpose",
    background: bool | None = None,
    usage: Usage = Usage(),
) -> Turn:
    """Spawn a subagent with the Agent tool. Its ``prompt`` is the subagent's first message, so a
    ``Conversation`` whose marker is in it scripts the subagent. ``background=None`` leaves Claude
    Code's default (2.1.332: asynchronous, the tool result is ``async_launched`` and the end arrives
    as a ``<task-notification>``); ``False`` makes the spawn wait for the subagent's answer."""
    spec: dict[str, Any] = {"description": description, "prompt": prompt, "subagent_type": subagent_type}
    if background is not None:
        spec["run_in_background"] = background
    return tool("Agent", spec, usage=usage)


def api_error(status: int = 500, error_type: str = "api_error") -> Turn:
    """An HTTP error answer (``{"type": "error", "error": {"type": error_type, ...}}``)."""
    return Turn((), Usage(), error_status=status, error_type=error_type)


@dataclass(frozen=True, slots=True)
class Conversation:
    """The turns of one agent's conversation, recognised by ``marker`` in its first user message."""

    marker: str
    turns: tuple[Turn, ...]

    def turn(self, index: int) -> Turn:
        if index < len(self.turns):
            return self.turns[index]
        last = self.turns[-1] if self.turns else None
        if last is not None and last.stop_reason == "end_turn" and last.error_status is None:
            return last
        return text("Done.")


def conversation(marker: str, *turns: Turn) -> Conversation:
    """A conversation recognised by ``marker`` (a string in its prompt) and answered by ``turns``."""
    return Conversation(marker, turns)


@dataclass(frozen=True, slots=True)
class Script:
    """What the stand-in answers: the first conversation whose marker the request's first user message
    holds, else ``fallback`` (auxiliary calls)."""

    conversations: tuple[Conversation, ...] = ()
    fallback: Turn = field(default_factory=lambda: text("OK", Usage(input_tokens=50, output_tokens=3)))

    def choose(self, body: dict[str, Any]) -> tuple[Conversation | None, int]:
        """The conversation a request belongs to (None: the fallback) and its turn index. A request
        offering no tools is never an agent's turn: it is an auxiliary call (2.1.332 sends the session
        title request, which quotes the prompt, with ``tools: []``)."""
        messages = body.get("messages") or ()
        assistants = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        if not body.get("tools"):
            return None, assistants
        first = first_user_text(messages)
        for c in self.conversations:
            if c.marker in first:
                return c, assistants
        return None, assistants


def script(*conversations: Conversation, fallback: Turn | None = None) -> Script:
    """A ``Script`` of ``conversations`` (and the answer to every other request)."""
    return Script(conversations) if fallback is None else Script(conversations, fallback)


def first_user_text(messages: Any) -> str:
    """The text of the first ``user`` message of a request (its text blocks joined by newlines)."""
    for m in messages or ():
        if isinstance(m, dict) and m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
            return ""
    return ""


@dataclass(frozen=True, slots=True)
class Request:
    """One request the stand-in received.

    Attributes:
        method: str. path: str, with the query string. headers: dict[str, str].
        body: Any, the parsed JSON body (None when empty or not JSON).
        conversation: str | None, the marker of the conversation that answered, None for the fallback
            or a non-messages request.
        turn: int, that conversation's turn index (assistant messages already in the request).
        message_id: str | None, the id of the answer, when it was a message.
        usage: Usage | None, the usage that answer reported (None for an error answer or no message).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    conversation: str | None = None
    turn: int = 0
    message_id: str | None = None
    usage: Usage | None = None

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages"


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


class StandIn:
    """The stand-in server. ``with StandIn(script) as api:`` serves on ``api.url`` (127.0.0.1, a free
    port) from a thread of its own until the block ends; ``api.requests`` lists what it received.
    ``script`` may be replaced between runs (``api.script = ...``)."""

    def __init__(self, script: Script | None = None, *, request_ids: bool = False) -> None:
        self.script = script or Script()
        self.request_ids = request_ids
        self.requests: list[Request] = []
        self._ids = itertools.count(1)
        self._tool_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server = Server(self._app(), name="standin")

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> StandIn:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def messages(self, marker: str | None = None) -> list[Request]:
        """The ``POST /v1/messages`` requests (of the conversation ``marker``, when given), in arrival order."""
        return [r for r in self.requests if r.is_messages and (marker is None or r.conversation == marker)]

    def usage_total(self, marker: str | None = None) -> Usage:
        """The usage the answers reported, summed (those of conversation ``marker``, when given)."""
        used = [r.usage for r in self.messages(marker) if r.usage is not None]
        return Usage(
            sum(u.input_tokens for u in used),
            sum(u.output_tokens for u in used),
            sum(u.cache_read_input_tokens for u in used),
            sum(u.cache_creation_5m for u in used),
            sum(u.cache_creation_1h for u in used),
        )

    def _next(self, ids: itertools.count[int] | None = None) -> int:
        with self._lock:
            return next(self._ids if ids is None else ids)

    def _app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        return app

    async def _handle(self, req: web.Request) -> web.StreamResponse:
        raw = await req.read()
        try:
            body = orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            body = None
        path = req.path
        seen = Request(req.method, req.path_qs, dict(req.headers), body)
        if req.method == "POST" and path == "/v1/messages" and isinstance(body, dict):
            conv, index = self.script.choose(body)
            turn = conv.turn(index) if conv else self.script.fallback
            n = self._next()
            msg_id = f"msg_standin_{n:04d}"
            usage = None if turn.error_status is not None else turn.usage
            marker = conv.marker if conv else None
            self.requests.append(Request(seen.method, seen.path, seen.headers, body, marker, index, msg_id, usage))
            return await self._answer(req, body, turn, n, msg_id)
        self.requests.append(seen)
        if req.method == "POST" and path == "/v1/messages/count_tokens":
            return web.json_response({"input_tokens": 1200})
        if path == "/api/hello":
            return web.Response(status=200)
        return web.json_response({"type": "error", "error": {"type": "not_found_error", "message": path}}, status=404)

    def _headers(self, n: int) -> dict[str, str]:
        return {"request-id": f"req_standin_{n:04d}"} if self.request_ids else {}

    async def _answer(
        self, req: web.Request, body: dict[str, Any], turn: Turn, n: int, msg_id: str
    ) -> web.StreamResponse:
        headers = self._headers(n)
        if turn.error_status is not None:
            err = {"type": "error", "error": {"type": turn.error_type, "message": "stand-in error"}}
            return web.json_response(err, status=turn.error_status, headers=headers)
        model = str(body.get("model") or "claude-sonnet-4-5-20250929")
        blocks = [self._block(b) for b in turn.blocks]
        if not body.get("stream"):
            message = self._message(msg_id, model, turn)
            message["content"] = blocks
            message["stop_reason"] = turn.stop_reason
            return web.json_response(message, headers=headers)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8", **headers})
        resp.headers["Cache-Control"] = "no-cache"
        await resp.prepare(req)
        for chunk in self._events(msg_id, model, turn, blocks):
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    def _block(self, b: Text | ToolUse) -> dict[str, Any]:
        if isinstance(b, Text):
            return {"type": "text", "text": b.text}
        return {
            "type": "tool_use",
            "id": f"toolu_standin_{self._next(self._tool_ids):04d}",
            "name": b.name,
            "input": b.input,
        }

    @staticmethod
    def _message(msg_id: str, model: str, turn: Turn) -> dict[str, Any]:
        return {
            "id": msg_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": turn.usage.as_api(),
        }

    def _events(self, msg_id: str, model: str, turn: Turn, blocks: Sequence[dict[str, Any]]) -> Iterator[bytes]:
        start = self._message(msg_id, model, turn)
        start["usage"] = turn.usage.as_api(output_tokens=1)
        yield _sse("message_start", {"type": "message_start", "message": start})
        yield _sse("ping", {"type": "ping"})
        for i, b in enumerate(blocks):
            if b["type"] == "text":
                yield _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                )
                words = b["text"].split(" ")
                for j, w in enumerate(words):
                    piece = w if j == len(words) - 1 else w + " "
                    yield _sse(
                        "content_block_delta",
                        {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}},
                    )
            else:
                opening = {**b, "input": {}}
                yield _sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": opening})
                js = orjson.dumps(b["input"]).decode()
                half = len(js) // 2
                for part in (js[:half], js[half:]):
                    yield _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": part},
                        },
                    )
            yield _sse("content_block_stop", {"type": "content_block_stop", "index": i})
        delta_usage = turn.usage.as_api()
        delta_usage.pop("cache_creation")
        delta_usage.pop("service_tier")
        yield _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
                "usage": delta_usage,
            },
        )
        yield _sse("message_stop", {"type": "message_stop"})
