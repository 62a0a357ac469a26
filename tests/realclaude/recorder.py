"""A loopback recorder of what Claude Code sends out besides its API calls: hook bodies, OTLP exports
and status-line input.

Routes (``Recorder.url`` + path):

- ``POST /hooks/http/<Event>``: an ``type: "http"`` hook (``http_hooks`` builds the settings);
- ``POST /hooks/command/<Event>``: a ``type: "command"`` hook, relayed by ``relay.py`` (stdin posted
  here; ``command_hooks`` builds the settings);
- ``POST /v1/logs``, ``/v1/metrics``, ``/v1/traces``: OTLP/HTTP exports (``otel_env`` points Claude
  Code here), answered as the OTLP spec says: an empty ``Export*ServiceResponse`` (``{}`` in JSON,
  zero bytes in protobuf);
- ``POST /statusline``: the status-line command's stdin, relayed by ``relay.py --print``.

Hooks are answered ``200`` with an empty body (the answer a pure observer gives; Claude Code reads it
as ``{}``) unless ``answers`` maps the event to another body. Each request is one ``Hit``.
"""

from __future__ import annotations

import shlex
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web

from tests.realclaude.loopback import Server

RELAY = Path(__file__).with_name("relay.py")


@dataclass(frozen=True, slots=True)
class Hit:
    """One request to the recorder.

    Attributes:
        kind: str, ``http`` / ``command`` (hooks), ``otlp``, ``statusline``.
        name: str, the hook event, the OTLP signal (``logs``, ``metrics``, ``traces``) or ``statusline``.
        headers: dict[str, str]. body: bytes, exactly as received.
    """

    kind: str
    name: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return orjson.loads(self.body)


@dataclass
class Recorder:
    """``with Recorder() as rec:`` serves on ``rec.url`` until the block ends; ``rec.hits`` in arrival order.

    Attributes:
        answers: dict[str, bytes], an event's answer body instead of the empty one.
    """

    answers: dict[str, bytes] = field(default_factory=dict)
    hits: list[Hit] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/hooks/{kind}/{name}", self._hook)
        app.router.add_post("/v1/{signal}", self._otlp)
        app.router.add_post("/statusline", self._statusline)
        self._server = Server(app, name="recorder")

    @property
    def url(self) -> str:
        return self._server.url

    def __enter__(self) -> Recorder:
        self._server.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.stop()

    def of(self, kind: str, name: str | None = None) -> list[Hit]:
        """The hits of ``kind`` (and ``name``), in arrival order."""
        with self._lock:
            return [h for h in self.hits if h.kind == kind and (name is None or h.name == name)]

    def hook_bodies(self) -> list[dict[str, Any]]:
        """Every hook body (either kind), parsed, in arrival order."""
        return [h.json() for h in self.hits if h.kind in ("http", "command")]

    def events(self) -> list[str]:
        """The ``hook_event_name`` of every hook body, in arrival order."""
        return [str(b.get("hook_event_name")) for b in self.hook_bodies()]

    def _add(self, hit: Hit) -> None:
        with self._lock:
            self.hits.append(hit)

    async def _hook(self, req: web.Request) -> web.Response:
        name = req.match_info["name"]
        self._add(Hit(req.match_info["kind"], name, dict(req.headers), await req.read()))
        return web.Response(body=self.answers.get(name, b""), content_type="application/json")

    async def _otlp(self, req: web.Request) -> web.Response:
        self._add(Hit("otlp", req.match_info["signal"], dict(req.headers), await req.read()))
        if req.content_type == "application/x-protobuf":
            return web.Response(body=b"", content_type="application/x-protobuf")
        return web.Response(body=b"{}", content_type="application/json")

    async def _statusline(self, req: web.Request) -> web.Response:
        self._add(Hit("statusline", "statusline", dict(req.headers), await req.read()))
        return web.Response(body=b"")

    # -- settings that point Claude Code here --------------------------------------------------

    def http_hooks(self, events: list[str] | tuple[str, ...], *, timeout_s: int = 5) -> dict[str, Any]:
        """A settings ``hooks`` block: an http hook posting each of ``events`` to this recorder."""
        return {
            ev: [{"hooks": [{"type": "http", "url": f"{self.url}/hooks/http/{ev}", "timeout": timeout_s}]}]
            for ev in events
        }

    def command_hooks(self, events: list[str] | tuple[str, ...], *, timeout_s: int = 5) -> dict[str, Any]:
        """A settings ``hooks`` block: a command hook (``relay.py``) posting each event's stdin here."""
        return {
            ev: [{"hooks": [{"type": "command", "command": self.relay(f"/hooks/command/{ev}"), "timeout": timeout_s}]}]
            for ev in events
        }

    def relay(self, path: str, *, prints: str | None = None) -> str:
        """The command line that posts its stdin to ``path`` here (and prints ``prints``)."""
        argv = [sys.executable, str(RELAY), self.url + path]
        if prints is not None:
            argv += ["--print", prints]
        return " ".join(shlex.quote(a) for a in argv)

    def status_line(self, prints: str = "standin status") -> dict[str, Any]:
        """A settings ``statusLine`` block whose command posts its stdin here."""
        return {"type": "command", "command": self.relay("/statusline", prints=prints), "padding": 0}

    def otel_env(self, protocol: str = "http/json", *, logs: bool = True, metrics: bool = True) -> dict[str, str]:
        """The environment that makes Claude Code export OTLP to this recorder (``protocol``:
        ``http/json`` or ``http/protobuf``), quickly: logs every 500 ms, metrics every 1 s."""
        env = {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1",
            "OTEL_EXPORTER_OTLP_ENDPOINT": self.url,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol,
            "OTEL_LOGS_EXPORT_INTERVAL": "500",
            "OTEL_METRIC_EXPORT_INTERVAL": "1000",
        }
        if logs:
            env["OTEL_LOGS_EXPORTER"] = "otlp"
        if metrics:
            env["OTEL_METRICS_EXPORTER"] = "otlp"
        return env
