"""The live view's page and assets (SPEC §14): ``GET /`` and ``GET /static/{name}``.

The files ship inside the package (``ingestd/http/static``, package data): plain HTML, CSS and
JavaScript modules (``app.js`` imports the views), no build step and nothing fetched from the
network. Only the files named in ``ASSETS`` are served (no directory walking), read once when the
routes are registered.

Every page response carries a Content-Security-Policy that allows only the daemon's own scripts,
styles, images and connections (no inline script, no ``eval``, no framing), with ``nosniff`` and
no referrer. The page itself builds its DOM with ``textContent`` only, so a session title or a task
description such as ``<img src=x onerror=alert(1)>`` shows as text; the policy is the second wall.
The Host and Origin rules of SPEC §10 are the app's middleware and cover these routes too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from aiohttp import web

STATIC_DIR = Path(__file__).resolve().parent / "static"

# name -> content type; nothing else under /static is served.
ASSETS: dict[str, str] = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "dom.js": "text/javascript; charset=utf-8",
    "sessions.js": "text/javascript; charset=utf-8",
    "session.js": "text/javascript; charset=utf-8",
    "cost.js": "text/javascript; charset=utf-8",
    "health.js": "text/javascript; charset=utf-8",
    "search.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

PAGE_HEADERS: dict[str, str] = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def _asset_handler(body: bytes, content_type: str) -> Callable[[web.Request], Awaitable[web.Response]]:
    etag = '"' + hashlib.blake2b(body, digest_size=8).hexdigest() + '"'

    async def handle(request: web.Request) -> web.Response:
        headers = {**PAGE_HEADERS, "Cache-Control": "no-cache", "ETag": etag}
        if request.headers.get("If-None-Match") == etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers={**headers, "Content-Type": content_type})

    return handle


def add_page_routes(app: web.Application, static_dir: Path = STATIC_DIR) -> None:
    """Register ``GET /`` (the page) and ``GET /static/{name}`` for each file of ``ASSETS``.

    Raises:
        FileNotFoundError: an asset is missing from the package (a broken install).
    """
    for name, content_type in ASSETS.items():
        handler = _asset_handler((static_dir / name).read_bytes(), content_type)
        if name == "index.html":
            app.router.add_get("/", handler)
        else:
            app.router.add_get(f"/static/{name}", handler)
