"""Reading one transcript file past its checkpoint into batches of log rows (SPEC §7).

``read_file`` frames the bytes after the committed offset (or re-reads a rewritten file under a new
generation, with a ``file_reset`` row); ``Batcher`` holds the rows and checkpoints and applies them.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ingestd.core.decode import UNDECODABLE, decode_line
from ingestd.core.framing import HEAD_BYTES as HEAD
from ingestd.core.framing import MAX_LINE_BYTES, Framer, Line, Oversized
from ingestd.core.framing import TAIL_BYTES as TAIL
from ingestd.core.keys import jsonl_key, jsonl_key_of_digest, origin_hash, reset_key, short_hash
from ingestd.core.oversized import marker_payload, usage_lost
from ingestd.core.records import FILE_RESET, META, NewLogRow, line_row, oversized_row, path_info
from ingestd.core.revision import INGEST_REVISION
from ingestd.core.rows import Checkpoint
from ingestd.core.timefmt import parse
from ingestd.core.touch import Ctx
from ingestd.core.watchdog import WATCHDOG_WINDOW_S
from ingestd.errors import InputError
from ingestd.files import MIB, TooLarge, read_bounded
from ingestd.ingest.scan import Found
from ingestd.ingest.summary import Summary
from ingestd.logs import get_logger
from ingestd.store.connection import Db
from ingestd.store.writer import Backoff, FoldCache, apply_isolating

log = get_logger("ingestd.ingest")

HEAD_BYTES = 64
CHUNK_BYTES = 8 << 20
# The fewest rows a batch fitted to a transaction budget holds (``Tailing.txn_budget_s``): each
# transaction has a cost of its own (the commit's fsync, the watchdog pass, the checkpoints).
TXN_MIN_ROWS = 16
# A complete JSON object at the end of a file without its newline is read once the file has not
# grown for this long: Claude Code writes each line with its newline, so a tail this old is the
# last line of a file nobody writes any more (a copy, a crash), not one being written.
TORN_TAIL_GRACE_S = 30.0
# a subagent's .meta.json is a few hundred bytes; past this it is logged as an oversized marker
META_MAX_BYTES = MIB

Progress = Callable[[int], None]
# one file to read: (the root's checkpoint key, the file, its checkpoint columns or None)
Plan = tuple[str, Found, tuple[Any, ...] | None]


def _head_hash(path: str, offset: int) -> str:
    if offset <= 0:
        return ""
    start = max(0, offset - HEAD_BYTES)
    with open(path, "rb") as fh:
        fh.seek(start)
        return short_hash(fh.read(offset - start))


@dataclass
class Tailing:
    """What an ingest run reads and writes with beyond its batches; the daemon's tailer keeps one
    across ``ingest_roots`` calls (SPEC §7), a one-shot run has its own (``Tailing.one_shot``).

    Attributes:
        cache: ``FoldCache``, fold states reused across calls (one thread at a time: the reading one,
            or ``write``'s while the reading one waits).
        framers: dict (root, origin) -> (generation, ``Framer``): framers of files whose last line is
            still torn; the next read resumes where this one stopped (one pass over a growing line).
            None: not kept (a one-shot run reads each file once).
        backoff: retries of transient refusals (``ingestd.store.writer``); the daemon's retries
            until they clear, reported as a stall; None: ``Backoff()``'s default.
        should_stop: polled between chunks; True stops reading (shutdown) after committing.
        component: str, the part a stall is reported under.
        write: runs a write (a callable) on the thread that writes and returns its result (or raises
            what it raised), the caller waiting meanwhile; None: on the calling thread. The tailer's
            writes run on a thread at the daemon's priority while its reading runs lower.
        txn_budget_s: float, seconds a write transaction should take at most while ``contended``
            (the daemon's: a hook group that finds the lock taken waits for the whole of one): a
            transaction that took longer makes the next batches smaller in proportion, down to
            ``TXN_MIN_ROWS``; one that took under half of it, or any once nobody waits, doubles them,
            up to the run's ``batch_rows``. None: ``batch_rows`` rows each.
        contended: whether another writer waited for the lock lately (``LockWaits.recent``); None:
            always taken as so.
        rows_limit: int, the rows of the next batch as the budget last fitted it (kept across calls;
            None: ``batch_rows``).
    """

    cache: FoldCache = field(default_factory=FoldCache)
    framers: dict[tuple[str, str], tuple[int, Framer]] | None = field(default_factory=dict)
    backoff: Backoff | None = None
    should_stop: Callable[[], bool] | None = None
    component: str = "tailer"
    write: Callable[[Callable[[], Any]], Any] | None = None
    txn_budget_s: float | None = None
    contended: Callable[[], bool] | None = None
    rows_limit: int | None = None

    def run_write(self, fn: Callable[[], Any]) -> Any:
        """Run the write ``fn`` through ``write``, or here when there is none; its result."""
        return fn() if self.write is None else self.write(fn)

    @classmethod
    def one_shot(cls) -> Tailing:
        """A one-shot run's (``ingestd ingest``): no framer kept; a transient refusal
        (busy past the busy timeout, a full disk, an I/O error) is retried briefly, then raised."""
        return cls(framers=None, backoff=Backoff(first_s=0.1, max_s=1.0, max_attempts=4), component="ingest")


class Batcher:
    """Log rows and checkpoints of one ingest run, applied in batches (``flush``); see ``ingest_roots``."""

    def __init__(
        self,
        conn: Db,
        ctx: Ctx,
        summary: Summary,
        batch_rows: int,
        tail: Tailing,
        watchdog_window_s: int = WATCHDOG_WINDOW_S,
    ) -> None:
        self.conn = conn
        # the fold cache, the kept framers, the retries, the stop flag, the stall's component
        self.tail = tail
        self.ctx = ctx
        self.summary = summary
        self.batch_rows = batch_rows
        # the rows a batch holds before it is written: batch_rows, or fewer as the budget fits it
        self.limit = min(batch_rows, tail.rows_limit or batch_rows)
        self.watchdog_window_s = watchdog_window_s
        self.rows: list[NewLogRow] = []
        self.cps: list[Checkpoint] = []
        self.skipped: collections.Counter[str] = collections.Counter()
        self.max_line_bytes = MAX_LINE_BYTES
        self.tail_grace_s = TORN_TAIL_GRACE_S

    def flush(self) -> None:
        if not self.rows and not self.cps:
            return
        rows, cps = self.rows, self.cps
        self.rows = []
        self.cps = []
        t0 = time.perf_counter()
        self.tail.run_write(lambda: self._apply(rows, cps))  # one at a time: the same order and boundaries
        self._fit(len(rows), time.perf_counter() - t0)

    def _fit(self, rows: int, elapsed_s: float) -> None:
        """Fit ``limit`` to the tailing's transaction budget after a write of ``rows`` rows that took
        ``elapsed_s`` (``Tailing.txn_budget_s``; nothing without one)."""
        budget = self.tail.txn_budget_s
        if budget is None or rows == 0:
            return
        waited = self.tail.contended is None or self.tail.contended()
        if waited and elapsed_s > budget:
            self.limit = max(TXN_MIN_ROWS, min(self.limit, int(rows * budget / elapsed_s)))
        elif (not waited or elapsed_s < budget / 2) and rows >= self.limit:
            self.limit = min(self.batch_rows, self.limit * 2)
        self.tail.rows_limit = self.limit

    def _apply(self, rows: list[NewLogRow], cps: list[Checkpoint]) -> None:
        res = apply_isolating(
            self.conn,
            rows,
            checkpoints=cps,
            component=self.tail.component,
            backoff=self.tail.backoff,
            ctx=self.ctx,
            cache=self.tail.cache,
            watchdog_window_s=self.watchdog_window_s,
        )
        self.summary.rows_inserted += res.inserted
        self.summary.isolated += len(res.isolated)
        for r in rows:
            if r.idempotency_key in res.log_ids:
                if r.reason:
                    self.skipped[r.reason] += 1
                if r.recovered:
                    self.summary.recovered += 1


def read_file(
    b: Batcher,
    root: str,
    f: Found,
    cp: tuple[Any, ...] | None,
    now: str,
    progress: Progress | None,
) -> None:
    """Append ``f``'s new lines (and a reset row if it was rewritten) to the batcher ``b``.

    Args:
        b: the batch being built (flushed whenever it holds ``b.limit`` rows).
        root: str, the projects root's checkpoint key; f: the file; cp: its checkpoint row
            (``_CHECKPOINT_COLUMNS`` order) or None; now: canonical UTC read time.
        progress: called with the number of bytes just read.

    Raises:
        OSError: the file cannot be opened or read (the caller skips it; its offset is kept).
    """
    origin = f.origin
    oh = origin_hash(origin)
    sid = path_info(origin).session_id
    gen, offset = _resume(b, f, cp, oh, sid, now)
    if f.is_meta:
        _read_meta(b, root, f, oh, sid, gen, now)
        b.summary.files_read += 1
        return
    framer = _framer(b, root, f, gen, offset)
    done = _read_lines(b, root, f, framer, oh, sid, gen, now, progress)
    b.summary.files_read += 1  # opened and read: counted once it was
    if not done:
        return  # shutting down: what was framed commits, the rest is read next time
    if framer.pending and _ended(f, framer, now, b.tail_grace_s):
        ln = framer.end_line()
        if ln is not None:
            b.summary.lines += 1
            b.summary.tails_read += 1
            b.rows.append(_row(b, ln, origin, oh, gen, now, sid))
    if framer.pending:
        b.summary.unread_bytes += framer.pending
        b.summary.files_unread += 1
    framers = b.tail.framers
    if framers is not None:
        if framer.pending:
            framers[(root, origin)] = (gen, framer)
        else:
            framers.pop((root, origin), None)
    b.cps.append(_cp(root, f, sid, gen, framer.offset, now))


def idle(mtime_ns: int, now: str, grace_s: float) -> bool:
    """Whether a file last changed at ``mtime_ns`` has not grown for ``grace_s`` seconds at ``now``."""
    at = parse(now)
    return at is not None and mtime_ns <= int(at.timestamp() * 1e9) - int(grace_s * 1e9)


def _ended(f: Found, framer: Framer, now: str, grace_s: float) -> bool:
    """Whether ``f``'s torn tail is its last line: a JSON object (or blank) that stayed as it is, the
    file idle past ``grace_s`` and no longer than what was read (a line written meanwhile waits)."""
    tail = framer.tail()
    if tail is None or not (tail.isspace() or decode_line(tail).obj is not None):
        return False
    try:
        st = os.stat(f.path)
    except OSError:
        return False
    return st.st_size == framer.read and idle(st.st_mtime_ns, now, grace_s)


def read_plans(b: Batcher, plans: Sequence[Plan], now: str, progress: Progress | None) -> None:
    """Read the planned files into ``b`` in order, flushing whenever a batch is full and at the end."""
    summary = b.summary
    for root_s, f, cp in plans:
        try:
            read_file(b, root_s, f, cp, now, progress)
        except FileNotFoundError:
            # removed between discovery and reading (a cleanup, the root deleted): its log rows
            # are kept; said and counted, so the summary does not call it read
            summary.files_vanished += 1
            log.warning("file_vanished", origin=f.origin, hint="removed before it was read; its log rows are kept")
            continue
        except (OSError, InputError) as e:
            # One unreadable file (EACCES, EIO, made a FIFO since the scan, ...) must not stop the
            # others: its complete lines read so far are kept (keys make a re-read harmless), its
            # checkpoint is not advanced.
            summary.files_unreadable += 1
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            log.warning("file_unreadable", origin=f.origin, error=why)
            continue
        if len(b.rows) >= b.limit:
            b.flush()
    b.flush()


def _resume(b: Batcher, f: Found, cp: tuple[Any, ...] | None, oh: str, sid: str | None, now: str) -> tuple[int, int]:
    """(generation, offset) to read ``f`` from: its checkpoint's, or 0 under a new generation (with
    a ``file_reset`` row) when the file shrank or the bytes before the offset changed."""
    if cp is None:
        return 0, 0
    gen, offset, head, rev = int(cp[0]), int(cp[1]), str(cp[2]), int(cp[3])
    if rev != INGEST_REVISION:
        return gen, 0
    if f.size < offset or (offset > 0 and _head_hash(f.path, offset) != head):
        gen += 1
        payload = orjson.dumps({"origin": f.origin, "gen": gen, "reason": "rewritten"})
        b.rows.append(NewLogRow(reset_key(oh, gen), "ingestd", FILE_RESET, payload, now, sid, f.origin, gen))
        b.summary.resets += 1
        return gen, 0
    return gen, offset


def _read_meta(b: Batcher, root: str, f: Found, oh: str, sid: str | None, gen: int, now: str) -> None:
    """A subagent's ``.meta.json``: one row of the whole file, re-read whole when it changes.

    A sidecar is a few hundred bytes; one larger than ``META_MAX_BYTES`` is never held whole: it is
    logged as a marker row (``meta``, the ``{"oversized": ...}`` payload of an oversized line: length,
    hash, head and tail), warned about (``sidecar_oversized``) and counted in ``oversized``.
    """
    got = read_bounded(Path(f.path), META_MAX_BYTES, "subagent sidecar", InputError, head_bytes=HEAD, tail_bytes=TAIL)
    if isinstance(got, TooLarge):
        ov = Oversized(0, got.length, got.digest, got.head, got.tail)
        data = marker_payload(ov)
        key = jsonl_key_of_digest(oh, gen, 0, got.digest)
        b.summary.oversized += 1
        log.warning("sidecar_oversized", origin=f.origin, length=got.length, cap=META_MAX_BYTES)
        length = got.length
    else:
        data = got
        key = jsonl_key(oh, gen, 0, data)
        length = len(data)
    b.rows.append(NewLogRow(key, "jsonl", META, data, now, sid, f.origin, gen, 0, obj=decode_line(data).obj))
    b.summary.bytes += length
    b.cps.append(Checkpoint(root, f.origin, sid, gen, length, f.size, f.mtime_ns, f.inode, "", INGEST_REVISION, now))


def _read_lines(
    b: Batcher,
    root: str,
    f: Found,
    framer: Framer,
    oh: str,
    sid: str | None,
    gen: int,
    now: str,
    progress: Progress | None,
) -> bool:
    """Frame ``f`` from ``framer.read`` to its end into rows of ``b``; False when told to stop."""
    with open(f.path, "rb") as fh:
        fh.seek(framer.read)
        while True:
            if b.tail.should_stop is not None and b.tail.should_stop():
                return False
            chunk = fh.read(CHUNK_BYTES)
            if not chunk:
                return True
            b.summary.bytes += len(chunk)
            if progress is not None:
                progress(len(chunk))
            lines = framer.feed(chunk)
            b.summary.lines += len(lines)
            last = len(lines) - 1
            for i, ln in enumerate(lines):
                b.rows.append(_row(b, ln, f.origin, oh, gen, now, sid))
                if len(b.rows) >= b.limit:
                    # a transaction of at most limit rows, however many lines a chunk holds;
                    # mid-file: size -1 so the fingerprint cannot match until the file is read to
                    # its end; the offset is where the next line starts
                    resume = framer.offset if i == last else lines[i + 1].offset
                    b.cps.append(_cp(root, f, sid, gen, resume, now, size=-1))
                    b.flush()


def _row(b: Batcher, ln: Line | Oversized, origin: str, oh: str, gen: int, now: str, sid: str | None) -> NewLogRow:
    """The log row of one framed line. An oversized line, and a line that is JSON but cannot be
    decoded (``decode.UNDECODABLE``: salvaged from head and tail), is logged, saying whether its usage
    is lost (an assistant message's usage in neither its head nor its tail)."""
    if isinstance(ln, Line):
        row = line_row(ln, origin=origin, origin_hash=oh, gen=gen, received_at=now, path_session=sid)
        if row.reason in UNDECODABLE:
            lost = usage_lost(row.obj)  # the record salvaged from its head and tail
            log.warning("line_undecodable", origin=origin, offset=ln.offset, reason=row.reason, usage_lost=lost)
        return row
    b.summary.oversized += 1
    row = oversized_row(ln, origin=origin, origin_hash=oh, gen=gen, received_at=now, path_session=sid)
    lost = usage_lost(row.obj)
    log.warning("line_oversized", origin=origin, offset=ln.offset, length=ln.length, reason=ln.reason, usage_lost=lost)
    return row


def _framer(b: Batcher, root: str, f: Found, gen: int, offset: int) -> Framer:
    """A framer for ``f`` from its committed ``offset``: the tailer's kept one when it stopped at
    that same line of the same generation and the file still reaches where it read to."""
    if b.tail.framers is not None:
        kept = b.tail.framers.pop((root, f.origin), None)
        if kept is not None:
            kgen, fr = kept
            if kgen == gen and fr.offset == offset and fr.read <= f.size and fr.max_line_bytes == b.max_line_bytes:
                return fr
    return Framer(offset, b.max_line_bytes)


def _cp(root: str, f: Found, sid: str | None, gen: int, offset: int, now: str, size: int | None = None) -> Checkpoint:
    return Checkpoint(
        root,
        f.origin,
        sid,
        gen,
        offset,
        f.size if size is None else size,
        f.mtime_ns,
        f.inode,
        _head_hash(f.path, offset),
        INGEST_REVISION,
        now,
    )
