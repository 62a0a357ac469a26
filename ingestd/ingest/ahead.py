"""Work for the writer done ahead of its transaction, on the reading thread or a helper.

A pipelined ingest (``ingestd.ingest.pipeline``) has one writer thread, busy from its first batch
to the end: what it does not have to do shortens the run. Two things are done for it here, each
handed over inside the batch's ``payload_blocks.PreBlocks`` and used by the writer only when it is
exactly what the writer would have made itself, so the stored bytes are the same either way:

- A batch's blocks of lines are planned and compressed with the writer's current codec
  (``payload_blocks.precompress``) once the writer has taken the batch before it.
- On a database with no dictionary yet (a first backfill), the first batch's dictionary is
  trained (``dictionary.pretrain``) as soon as that batch's sample lines are read, on the writer
  thread, which has nothing else to do before its first batch (zstd releases the GIL while it
  trains, so it overlaps the reading of the rest of the batch; a thread of its own would keep a
  malloc arena of the training's memory: +20-27 MiB of peak at c100);
  the first batch is then compressed with it before it is handed over, and later batches with the
  same codec until the writer's own copy of it (``payload.ahead_codecs``) is there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ingestd.core.records import NewLogRow
from ingestd.logs import get_logger
from ingestd.store import dictionary, payload
from ingestd.store.connection import Db
from ingestd.store.dictionary import Pretrained
from ingestd.store.payload import PLAIN, Codecs, ahead_codecs
from ingestd.store.payload_blocks import PreBlocks, precompress

log = get_logger("ingestd.ingest")


class _Trainer:
    """``dictionary.pretrain`` of fixed samples, run by ``spawn`` (the writer thread while it waits for
    its first batch: ``WriterPipe.run_ahead``); ``result`` waits for it."""

    def __init__(self, samples: Sequence[NewLogRow], spawn: Callable[[Callable[[], None]], None]) -> None:
        self.samples = tuple(samples)
        self._got: Pretrained | None = None
        self._done = threading.Event()
        spawn(self._run)

    def _run(self) -> None:
        try:
            self._got = dictionary.pretrain(self.samples)
        except Exception as e:  # on the writer's thread, outside any batch: it must not end it
            log.warning("payload_dictionary_not_trained_ahead", error=repr(e))  # the writer trains itself
            self._got = None
        finally:
            self._done.set()

    def result(self) -> Pretrained | None:
        self._done.wait()
        return self._got


class Ahead:
    """What the reading thread prepares for the writer: see the module docstring.

    Used by one reading thread (``readfile.Batcher``); ``conn`` is the writer's connection, read
    here only before the first batch is handed over (the writer is idle then).
    """

    def __init__(self, conn: Db) -> None:
        self.conn = conn
        # the compressor used on this thread: a copy of the writer's current codec, or of the
        # dictionary trained here for the first batch
        self._codecs: Codecs | None = None
        self._first = True  # no batch handed over yet
        self._fresh: bool | None = None  # the database has no dictionary (known before the first batch)
        self._trainer: _Trainer | None = None

    def _trains(self) -> bool:
        """Whether the first batch trains the dictionary (the database has none); read once, before
        the first batch is handed over."""
        if self._fresh is None:
            self._fresh = payload.codecs_of(self.conn).current == PLAIN
        return self._fresh

    def watch(self, rows: Sequence[NewLogRow], spawn: Callable[[Callable[[], None]], None]) -> None:
        """Called as the first batch grows: has ``spawn`` (``WriterPipe.run_ahead``) train once the
        batch's samples can no longer change."""
        if not self._first or self._trainer is not None or len(rows) < dictionary.TRAIN_ROWS or not self._trains():
            return
        samples = dictionary.sample_rows(rows)
        if dictionary.settled(samples):
            self._trainer = _Trainer(samples, spawn)

    def prepare(self, rows: list[NewLogRow]) -> PreBlocks | None:
        """The batch's blocks planned and compressed ahead (``payload_blocks.precompress``), with the
        dictionary trained ahead for a first batch. Called once the writer has taken the batch before."""
        trained = self._pretrained(rows) if self._first else None
        self._first = False
        if trained is not None and trained.dictionary is not None:
            plain = payload.codecs_of(self.conn)
            new_id = dictionary.dictionary_id(trained.dictionary)
            self._codecs = Codecs({**plain.dictionaries, new_id: trained.dictionary}, plain.level)
        else:
            self._codecs = ahead_codecs(self.conn, self._codecs) or self._codecs
        compress: Any = self._codecs.compress if self._codecs is not None else None
        return precompress(rows, compress, trained)

    def _pretrained(self, rows: list[NewLogRow]) -> Pretrained | None:
        """The first batch's dictionary: the helper's, or trained here when the batch was too small
        to start one early; None when the database has one or the batch is too small to train."""
        if not self._trains():
            return None
        if self._trainer is not None:
            return self._trainer.result()
        samples = dictionary.sample_rows(rows)
        return dictionary.pretrain(samples) if len(samples) >= dictionary.TRAIN_MIN_ROWS else None
