"""The tailer: catch up once, then follow every projects root (SPEC §7).

Filesystem events come from ``watchfiles.awatch`` (new files, appends, truncation,
deletion), with a periodic full rescan as a safety net for anything a watcher can
miss. The change source is a parameter, so tests script events without sleeping.

The tailer decides only *which* files to look at. Reading past the committed offset,
holding back a torn tail, detecting a rewrite and committing rows with their checkpoint
is the ingest code's job (``ingestd.ingest``), called through ``ingest``. A deleted or
moved transcript is never a reason to delete anything: its change is logged and ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from ingestd.errors import IngestdError
from ingestd.http.health import TAILER, Health
from ingestd.logs import get_logger

log = get_logger("ingestd.tailer")

# First retry of a failed ingest, seconds; doubled per consecutive failure up to the rescan interval.
RETRY_FIRST_S = 0.5

# (change kind, path): watchfiles' Change values are 1 added, 2 modified, 3 deleted.
ChangeBatch = set[tuple[Any, str]]
ChangeSource = Callable[[Sequence[Path], asyncio.Event], AsyncIterator[ChangeBatch]]
# ingest(None) = full scan of every root; ingest(paths) = just these files.
IngestFn = Callable[[Sequence[Path] | None], Awaitable[Any]]


def relevant(path: Path) -> bool:
    """Transcripts and their ``.meta.json`` sidecars; every other file is ignored."""
    name = path.name
    return name.endswith(".jsonl") or name.endswith(".meta.json")


ADDED = 1  # watchfiles.Change.added


def transcripts_under(folder: Path) -> list[Path]:
    """Every transcript and sidecar under ``folder`` (symlinked folders not descended), sorted."""
    out: list[Path] = []
    for dirpath, _dirnames, filenames in os.walk(folder, followlinks=False):
        out += [Path(dirpath, n) for n in filenames if relevant(Path(n))]
    return sorted(out)


# How often the real change source checks that each root is still the directory it watches.
ROOT_CHECK_S = 0.5

RootIds = tuple[tuple[int, int] | None, ...]


def root_ids(roots: Sequence[Path]) -> RootIds:
    """Each root's identity ``(st_dev, st_ino)``, None where no directory is there now."""
    out: list[tuple[int, int] | None] = []
    for r in roots:
        try:
            st = os.stat(r)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None)
    return tuple(out)


def _log_roots(roots: Sequence[Path], before: RootIds | None, now: RootIds) -> None:
    """Say which roots are missing, appeared or were replaced since ``before`` (None: at start)."""
    for r, was, is_ in zip(roots, before or (None,) * len(roots), now, strict=True):
        if is_ is None and (before is None or was is not None):
            log.warning(
                "projects_root_missing",
                root=str(r),
                hint=f"its transcripts are read once it exists (checked every {ROOT_CHECK_S} s)",
            )
        elif is_ is not None and before is not None and was != is_:
            log.info("projects_root_appeared" if was is None else "projects_root_replaced", root=str(r))


async def _roots_changed(roots: Sequence[Path], armed: RootIds, stop: asyncio.Event, check_s: float) -> None:
    """Return once a root is no longer the directory ``armed`` names (gone, appeared, replaced) or at stop.

    A plain sleep per check (a ``wait_for`` on ``stop`` made a task and a timer each time: a third
    of an idle daemon's CPU); at stop the caller cancels this task.
    """
    while not stop.is_set():
        await asyncio.sleep(check_s)
        if root_ids(roots) != armed:
            return


def _set_on_done(event: asyncio.Event, _task: asyncio.Task[None]) -> None:
    event.set()


async def _next(changes: AsyncIterator[Any]) -> ChangeBatch | None:
    """The next batch, or None once the watcher has ended."""
    batch: ChangeBatch | None = await anext(changes, None)
    return batch


async def watch_changes(
    roots: Sequence[Path], stop: asyncio.Event, *, check_s: float = ROOT_CHECK_S
) -> AsyncIterator[ChangeBatch]:
    """The real change source: ``watchfiles.awatch`` over the roots that exist, re-armed as they change.

    An inotify watch follows a directory, not its name: a root missing at start, or moved away
    and made again, was never watched again, and its lines waited for the rescan (a minute)
    for the life of the daemon. So every ``check_s`` seconds the roots' identities are compared
    with those being watched; on a change the watcher is made again over what exists now, and
    one batch naming each root that exists (``(1, root)``: ``Tailer.handle`` reads the whole
    root) catches up on what landed there while it was not watched.
    """
    import watchfiles

    armed: RootIds | None = None
    while not stop.is_set():
        now = root_ids(roots)
        _log_roots(roots, armed, now)
        rearmed, armed = armed is not None, now
        inner = asyncio.Event()  # ends this watcher: the roots changed, or the daemon stops
        monitor = asyncio.create_task(_roots_changed(roots, armed, stop, check_s))
        monitor.add_done_callback(functools.partial(_set_on_done, inner))
        first: asyncio.Future[ChangeBatch | None] | None = None
        try:
            existing = [str(r) for r, i in zip(roots, armed, strict=True) if i is not None]
            if not existing:
                await inner.wait()
                continue
            # rust_timeout=0: with a timeout (5 s by default on Linux) watchfiles, on each quiet
            # timeout, clears its change set after having seen it empty, and an event landing in
            # between is dropped (watchfiles src/lib.rs ``watch``): an append left for the next
            # rescan. The event ``inner``, checked every ``step``, is what ends the wait.
            changes = watchfiles.awatch(*existing, stop_event=inner, debounce=50, step=20, rust_timeout=0)
            if not rearmed:  # the watcher registers within the caller's step (``Tailer.run``)
                async for got in changes:
                    yield got
                continue
            first = asyncio.ensure_future(_next(changes))
            await asyncio.sleep(0)  # the watcher registers on its first step, before the catch-up
            yield {(watchfiles.Change.added, r) for r in existing}
            batch: ChangeBatch | None = await first
            while batch is not None:
                yield batch
                batch = await _next(changes)
        finally:
            monitor.cancel()
            if first is not None and not first.done():
                first.cancel()


class Tailer:
    """Follows the roots until ``stop`` is set.

    Args:
        roots: the projects roots.
        ingest: see ``IngestFn``; runs the ingest code (``IngestRunner``: its own thread and connection).
        changes: the change source (default ``watch_changes``).
        rescan_interval_s: float, seconds between safety-net rescans.
        health: told when an ingest starts, ends or fails (part ``"tailer"``).
    """

    def __init__(
        self,
        roots: Sequence[Path],
        ingest: IngestFn,
        *,
        changes: ChangeSource = watch_changes,
        rescan_interval_s: float = 60.0,
        health: Health | None = None,
    ) -> None:
        self.roots = list(roots)
        self._root_strs = frozenset(str(r) for r in self.roots)  # as the re-armed watcher names them
        self._ingest = ingest
        self._changes = changes
        self._rescan_interval_s = rescan_interval_s
        self._health = health if health is not None else Health()
        self._lock = asyncio.Lock()
        self.caught_up = asyncio.Event()
        self.batches_seen = 0  # change batches handled (tests wait on it instead of sleeping)
        self._failures = 0  # consecutive failed ingests (the retry backs off)
        self._retry = asyncio.Event()  # set when a failed ingest's retry is due
        self._retry_at: asyncio.TimerHandle | None = None

    async def _run_ingest(self, paths: Sequence[Path] | None) -> None:
        """Ingest; a failure is logged and a full rescan retried soon (backing off).

        A failed ingest committed nothing, and the change that asked for it will not be
        reported again: without the retry its lines waited for the next periodic rescan (a
        minute by default). Any exception is caught here: one escaping ended the consumer,
        which stopped following changes for good without a word until shutdown.
        """
        files = None if paths is None else len(paths)
        async with self._lock:
            self._health.busy(TAILER)
            try:
                await self._ingest(paths)
            except (IngestdError, OSError) as e:
                self._health.failed(TAILER, f"ingest failed: {e}")
                log.error("ingest_failed", error=str(e), files=files)
            except Exception as e:
                self._health.failed(TAILER, f"ingest crashed: {e!r}")
                log.exception("ingest_crashed", error=repr(e), files=files)
            else:
                self._health.ok(TAILER)
                self._failures = 0
                return
        self._failures += 1
        delay = min(self._rescan_interval_s, RETRY_FIRST_S * 2 ** min(self._failures - 1, 16))
        if self._retry_at is not None:
            self._retry_at.cancel()
        self._retry_at = asyncio.get_running_loop().call_later(delay, self._retry.set)

    async def _pause(self, stop: asyncio.Event, seconds: float) -> None:
        """Until ``stop`` is set, a retry is due, or ``seconds`` have passed."""
        waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self._retry.wait())]
        try:
            await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()  # not awaited: that would swallow our own cancellation

    async def handle(self, batch: ChangeBatch) -> list[Path]:
        """Ingest the files a change batch names; returns them (gone files are skipped).

        A folder added names every transcript under it (``transcripts_under``, walked off the
        loop: a restored project of thousands of files held up every hook meanwhile); the ingest
        code applies the usual rules to each (no symlink out of the root).

        A change naming a root itself (the watcher re-armed over a root that appeared or was
        replaced: ``watch_changes``) asks for a full scan, since nothing watched what landed there.
        """
        if any(raw in self._root_strs for _kind, raw in batch):
            await self._run_ingest(None)
            self.batches_seen += 1
            return []
        todo: dict[Path, None] = {}  # in order, each once
        for kind, raw in sorted(batch, key=lambda c: c[1]):
            p = Path(raw)
            if int(kind) == ADDED and p.is_dir():
                # a folder moved in whole (a project copied or restored): the watcher names the
                # folder, never the transcripts it already held
                todo.update(dict.fromkeys(await asyncio.to_thread(transcripts_under, p)))
                continue
            if not relevant(p):
                continue
            if not p.is_file():
                log.info("transcript_gone", path=raw)
                continue
            todo[p] = None
        files = list(todo)
        if files:
            await self._run_ingest(files)
        self.batches_seen += 1
        return files

    async def _rescan_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._pause(stop, self._rescan_interval_s)
            self._retry.clear()
            if not stop.is_set():
                await self._run_ingest(None)

    async def _consume(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async for batch in self._changes(self.roots, stop):
                    await self.caught_up.wait()
                    await self.handle(batch)
                    if stop.is_set():
                        break
                return
            except Exception as e:
                # A watched root vanished (OSError) or the watcher failed (watchfiles raises
                # RuntimeError subclasses, e.g. when the kernel's event queue overflows): the
                # rescans keep ingesting; try the watcher again after one rescan interval.
                log.error("watcher_failed", error=repr(e))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._rescan_interval_s)

    async def run(self, stop: asyncio.Event) -> None:
        """Start watching, catch up (full scan), then handle changes and rescan periodically.

        The watcher starts *before* the catch-up, so a line appended after the catch-up read
        its file is never missed; its changes are handled once the catch-up is done.
        """
        consumer = asyncio.create_task(self._consume(stop))
        await asyncio.sleep(0)  # the watcher registers on the consumer's first step
        rescans: asyncio.Task[None] | None = None
        try:
            await self._run_ingest(None)
            self.caught_up.set()
            rescans = asyncio.create_task(self._rescan_loop(stop))
            await consumer
        finally:
            if self._retry_at is not None:
                self._retry_at.cancel()
            for task in (consumer, rescans):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
