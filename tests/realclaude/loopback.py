"""An aiohttp application served on 127.0.0.1 from a thread of its own.

Tests run Claude Code synchronously (a subprocess), so the servers it talks to (the stand-in API, the
recorder) cannot share the test's event loop: each runs its own loop on a daemon thread, on a free
port chosen by the kernel (no race between choosing a port and binding it).
"""

from __future__ import annotations

import asyncio
import threading

from aiohttp import web


class Server:
    """Serves ``app`` on ``url`` between ``start()`` and ``stop()``."""

    def __init__(self, app: web.Application, *, name: str = "loopback") -> None:
        self._app = app
        self._name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve())
            except BaseException as e:  # reported to start(), which raises it
                failed.append(e)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        if not ready.wait(30):
            raise RuntimeError("the stand-in server did not start in 30 s")
        if failed:
            raise failed[0]

    async def _serve(self) -> None:
        self._runner = web.AppRunner(self._app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = int(server.sockets[0].getsockname()[1])  # type: ignore[union-attr]

    async def _cleanup(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(30)
        self._loop = None
