"""A one-slot hand-off from the reader to a single writer thread, so an ingest uses both cores.

A cold ``ingestd ingest`` alternates two kinds of work: framing, decoding and hashing the next
lines (Python, holding the GIL) and writing the previous batch (``apply_batch``: the fold in
Python, then SQLite statements, triggers, the WAL and ``fsync``, during which apsw releases the
GIL). Run one after the other they leave a core idle; with the writes on their own thread the
next batch is read while the last one is written.

Determinism: there is exactly one writer thread and batches are applied in the order they were
handed over, each exactly as the sequential path would apply it (same rows, same checkpoints,
same transaction boundaries), so the log's ids, the keys and every projection row are the same
whatever the scheduling. After a batch fails no later batch is applied (a later checkpoint
must never commit past rows that did not), and the error is raised in the reader at its next
hand-off or at ``close``.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class _Task:
    """A callable run on the writer thread between items (``WriterPipe.run_ahead``)."""

    def __init__(self, fn: Callable[[], None]) -> None:
        self.fn = fn


class WriterPipe(Generic[T]):
    """Applies items with ``apply`` on one background thread, in order, at most one waiting.

    Memory: the reader builds one batch, one waits in the slot and one is being written, so at
    most three batches are alive at once.
    """

    def __init__(self, apply: Callable[[T], None], name: str = "ingest-writer") -> None:
        self._apply = apply
        self._q: queue.Queue[object] = queue.Queue(maxsize=1)
        self._error: BaseException | None = None  # not yet raised in the reader
        self._failed = False  # once set, nothing more is applied
        self._closed = False
        self._taken = threading.Condition()  # notified when the writer takes an item from the slot
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            item = self._q.get()
            with self._taken:
                self._taken.notify()
            if item is _DONE:
                return
            if isinstance(item, _Task):
                item.fn()  # never raises (run_ahead's contract)
                continue
            if self._failed:
                continue  # a batch failed: drop the rest, never commit past it
            try:
                self._apply(item)  # type: ignore[arg-type]
            except BaseException as e:  # re-raised in the reader (put / close)
                self._failed = True
                self._error = e

    def _raise(self) -> None:
        if self._error is not None:
            err, self._error = self._error, None
            raise err

    def put(self, item: T, prepare: Callable[[T], T] | None = None) -> None:
        """Hand ``item`` to the writer (blocks while the slot is taken).

        Args:
            item: the next item.
            prepare: applied to ``item`` on this thread once the slot is free (the writer has
                taken the item before and is applying it), so that what it does overlaps that
                apply and sees the state the applies before it left (``Batcher.prepare``).

        Raises:
            whatever an earlier ``apply`` raised (that item and every later one were not applied).
        """
        if self._closed:
            raise RuntimeError("put on a closed WriterPipe")
        self._raise()
        if self._failed:
            raise RuntimeError("put after a failed apply")
        if prepare is not None:
            self.wait_free()  # one producer: once free, the slot stays free until this put
            item = prepare(item)
        self._q.put(item)

    def wait_free(self) -> None:
        """Block until the slot is free: the writer has taken every item handed over (it may
        still be applying the last). A producer that calls this before it builds its next item
        holds at most two in memory (the one being applied, the one being built)."""
        with self._taken:
            self._taken.wait_for(self._q.empty)

    def run_ahead(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the writer thread before the next item (blocks while the slot is taken):
        work for the writer done while it would otherwise wait, on its own thread (a first
        dictionary's training, ``ingestd.ingest.ahead``: no thread started for it, no malloc arena
        of its own holding the training's memory). ``fn`` must not raise; it is not an item (no
        ``apply``, skipped by nothing)."""
        if self._closed:
            raise RuntimeError("run_ahead on a closed WriterPipe")
        self._q.put(_Task(fn))

    def close(self) -> None:
        """Wait until every item handed over is applied (or dropped after a failure), stop the thread.

        Raises:
            whatever an ``apply`` raised.
        """
        if not self._closed:
            self._closed = True
            self._q.put(_DONE)
            self._thread.join()
        self._raise()
