"""The database handle (``Db``), the pragma policy of SPEC §6, and the one place apsw errors
become ``IngestdError``\\ s.

``Db`` is an apsw connection that also holds what is kept per connection while it is open. It is
opened by ``connect`` (to write, or ``readonly``) and ``connect_for_check`` (a check that leaves the
database file's bytes alone); every connection sets and reads back each pragma (WAL,
``foreign_keys=ON``, ``busy_timeout=5000``, ``synchronous``). ``synchronous=FULL`` in WAL mode syncs
the WAL on every commit, which is what lets a 2xx to a hook mean "on disk". The database file is
created 0600 inside a 0700 directory.
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import apsw

from ingestd.core.keys import origin_hash
from ingestd.errors import BusyError, ConfigError, IntegrityError, PragmaError, StorageError
from ingestd.files import not_regular

BUSY_TIMEOUT_MS = 5000
# The writer's page cache, KiB (SQLite's default is 2 MiB). The token_usage B-trees take
# keys in random order (stable ids, message ids, times), so every batch touches pages all
# over them; a cache that holds them saves re-reading those pages in every transaction.
WRITER_CACHE_KIB = 32768
# The -wal file is truncated back to this size after a checkpoint resets it (SQLite keeps it at
# its high-water mark otherwise: a daemon that backfilled a corpus kept a -wal as large as its
# biggest transaction, about the size of the database again, for as long as it ran). 4 MiB is
# the default auto-checkpoint's 1000 pages: what the WAL holds between two checkpoints.
JOURNAL_SIZE_LIMIT_BYTES = 4 * 1024 * 1024

T = TypeVar("T")
S = TypeVar("S")


class Db(apsw.Connection):
    """A connection to an ingestd database, and what is kept for it while it is open.

    Every function that reads or writes the database takes one (``connect``,
    ``connect_for_check`` and the commands' ``open_db`` open it; ``Db(path, flags=...)`` opens one
    without the policy: a snapshot, a backup's copy). What a module keeps per connection lives
    here, not in module-level dictionaries keyed by the connection: the module asks ``state`` for
    its own instance of its state class (the payload codecs, the block caches, the open blocks read
    sealed, the prune receipts' covering set), made on first use and gone with the connection.
    """

    def __init__(self, filename: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(filename, *args, **kwargs)
        self._states: dict[type, object] = {}

    def state(self, kind: type[S]) -> S:
        """This connection's instance of ``kind`` (``kind()`` on first use)."""
        got = self._states.get(kind)
        if got is None:
            got = self._states[kind] = kind()
        return cast(S, got)


# (apsw exception class, ingestd error class), most specific first. Tested table-driven.
_ERROR_MAP: tuple[tuple[type[BaseException], type[StorageError]], ...] = (
    (apsw.BusyError, BusyError),
    (apsw.LockedError, BusyError),
    (apsw.ConstraintError, IntegrityError),
    (apsw.Error, StorageError),
)


DISK_FULL = (
    "database error: {exc}: free space on the disk holding the database (or move it: --db) and run the"
    " command again; what was committed before is kept"
)


READ_ONLY_HINT = (
    ": this user cannot write the database file or the -wal / -shm beside it: check their"
    " permissions (read commands and `backup` work on a database they can only read)"
)


def unwritable(path: Path) -> str | None:
    """Why this user cannot write the database at ``path``, naming the file, or None. Reads only.

    The database file, and its ``-wal`` and ``-shm`` when present: SQLite writes all three, and
    creates the two with the database file's mode, so a user who only read a 0444 copy leaves them
    0444 behind; chmod-ing the database back then still fails with "attempt to write a readonly
    database", naming no file. A missing file is not a reason (it is created), nor is
    read-only media (``connect``'s ``READ_ONLY_MEDIA`` message says what to do there).
    """
    if on_read_only_media(Path(path)):
        return None  # every file there is unwritable: ``connect`` says so, naming the file system
    real = os.path.realpath(path)
    for name, what in ((real, "the database file"), (real + "-wal", "its -wal file"), (real + "-shm", "its -shm file")):
        if os.path.exists(name) and not os.access(name, os.W_OK):
            return (
                f"{name} ({what}) is not writable by this user, so the database cannot be written: give this user"
                f" write access to it (`chmod u+w {name}` as its owner, or chown it); read commands and `backup`"
                " work as it is"
            )
    return None


def require_writable(path: Path) -> None:
    """Refuse, before any write, a database this user cannot write (``unwritable``). Reads only.

    Raises:
        StorageError: naming the file that cannot be written and what to do (``cause="ReadOnlyError"``).
    """
    why = unwritable(path)
    if why is not None:
        raise StorageError(why, cause="ReadOnlyError", path=str(path))


def translate(exc: BaseException) -> StorageError:
    """Map an apsw exception to the ingestd error tree (the only such mapping).

    Args:
        exc: an exception raised by apsw.

    Returns:
        The ``StorageError`` subclass instance to raise ``from exc``.
    """
    if isinstance(exc, apsw.FullError):
        return StorageError(DISK_FULL.format(exc=exc), cause="FullError")
    if isinstance(exc, apsw.ReadOnlyError):
        return StorageError(f"database error: {exc}{READ_ONLY_HINT}", cause="ReadOnlyError")
    for apsw_cls, ours in _ERROR_MAP:
        if isinstance(exc, apsw_cls):
            return ours(f"database error: {exc}", cause=type(exc).__name__)
    return StorageError(f"database error: {exc}", cause=type(exc).__name__)


@contextlib.contextmanager
def storage_errors() -> Iterator[None]:
    """Context manager re-raising apsw errors as ``StorageError`` (``raise ... from e``)."""
    try:
        yield
    except apsw.Error as e:
        raise translate(e) from e


def default_db_path(env: dict[str, str]) -> Path:
    """``$XDG_DATA_HOME/ingestd/ingestd.db``, else ``~/.local/share/ingestd/ingestd.db``.

    Args:
        env: the environment mapping (passed in, never read here implicitly).
    """
    base = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".local/share")
    return Path(base) / "ingestd" / "ingestd.db"


class Reader(Protocol):
    """What a report reads through: a ``Db``, or the central store's ``PgReadConn`` (team mode),
    which takes the same SQL (``ingestd.central.pg``)."""

    def execute(self, sql: str, bindings: Any = None, /) -> Any:
        """Run one statement; its rows (an iterable of tuples, with ``fetchall``)."""


def _set_and_check(conn: Db, name: str, value: str, expect: str) -> None:
    rows = list(conn.execute(f"PRAGMA {name}={value}"))
    got = rows[0][0] if rows else None
    if got is None:
        got = conn.execute(f"PRAGMA {name}").fetchall()[0][0]
    if str(got).lower() != expect:
        raise PragmaError(f"PRAGMA {name} reads back {got!r}, expected {expect!r}", pragma=name)


def apply_policy(conn: Db, *, readonly: bool = False) -> None:
    """Set and read back every pragma of the policy.

    Raises:
        PragmaError: naming the pragma whose value did not take.
    """
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    _set_and_check(conn, "busy_timeout", str(BUSY_TIMEOUT_MS), str(BUSY_TIMEOUT_MS))
    if not readonly:
        _set_and_check(conn, "journal_mode", "WAL", "wal")
        _set_and_check(conn, "cache_size", str(-WRITER_CACHE_KIB), str(-WRITER_CACHE_KIB))
        # Statement journals (every upsert and trigger-firing insert inside a transaction opens
        # one) in memory: in a file they cost a pwrite per page touched per row, about half the
        # time of a token_usage insert.
        _set_and_check(conn, "temp_store", "MEMORY", "2")
        _set_and_check(conn, "journal_size_limit", str(JOURNAL_SIZE_LIMIT_BYTES), str(JOURNAL_SIZE_LIMIT_BYTES))
    _set_and_check(conn, "foreign_keys", "ON", "1")
    # FULL = 2: in WAL mode the WAL is synced at every commit (durable 2xx).
    _set_and_check(conn, "synchronous", "FULL", "2")
    register_functions(conn)


def register_functions(conn: Db) -> None:
    """The SQL functions ingestd's schema calls: ``ingestd_origin_hash(origin)``
    (``ingestd.core.keys.origin_hash``: the log's interned origins, migration 0030, and the
    ``events_raw`` view's INSERT trigger)."""

    def origin_hash_of(*args: apsw.SQLiteValue) -> apsw.SQLiteValue:
        return origin_hash(str(args[0]))

    conn.create_scalar_function("ingestd_origin_hash", origin_hash_of, 1, deterministic=True)


def _private_file(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not path.exists():
        fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
        os.close(fd)


def connect(path: str | os.PathLike[str], *, readonly: bool = False) -> Db:
    """Open a connection with the policy applied.

    Args:
        path: database file; created private (0600, directory 0700) when missing,
            unless ``readonly``. ``":memory:"`` is allowed for tests.
        readonly: open read-only (reports); the file must exist. On read-only media it is
            opened ``immutable`` (``_open_immutable``) instead of failing.

    Raises:
        ConfigError: the path is not a regular file (a device, a FIFO, a directory), by kind.
        StorageError: the file cannot be opened (on read-only media and not ``readonly``: saying
            what can be done, ``READ_ONLY_MEDIA``) or is not a database (naming it, ``NOT_A_DATABASE``).
        PragmaError: a pragma did not take.
    """
    p = str(path)
    wrong = not_regular(Path(p), "database file") if p != ":memory:" else None
    if wrong:  # SQLite would open /dev/null as an empty database, and wait on a FIFO for ever
        raise ConfigError(wrong, path=p)
    try:
        if p != ":memory:" and not readonly:
            _private_file(Path(p))
        flags = apsw.SQLITE_OPEN_READONLY if readonly else apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
        conn = Db(p, flags=flags)
        apply_policy(conn, readonly=readonly or p == ":memory:")
    except apsw.CantOpenError as e:
        if not on_read_only_media(Path(p)):
            raise translate(e) from e
        if not readonly:
            raise StorageError(READ_ONLY_MEDIA.format(path=p), cause="CantOpenError", path=p) from e
        return _open_immutable(Path(p))
    except apsw.NotADBError as e:
        raise StorageError(NOT_A_DATABASE.format(path=p), cause="NotADBError", path=p) from e
    except apsw.Error as e:
        raise translate(e) from e
    return conn


READ_ONLY_MEDIA = (
    "{path} is on a read-only file system and this command writes to the database: read commands"
    " (sessions, cost, tree, status) read it where it is, `backup --dir DIR` and `replay --workdir DIR`"
    " copy it to a writable DIR; for anything else copy the database to a writable place first"
)
NOT_A_DATABASE = "{path} is not an ingestd database (SQLite: file is not a database): check --db"


def connect_for_check(path: Path) -> Db:
    """``connect(path)`` for a check that must leave the database file's bytes as it found them
    (``verify``, ``replay``'s snapshot). The data are the same either way.

    A ``-wal`` a kill -9 left holds committed transactions; SQLite reads them without writing the
    database file (it rebuilds their index in ``-shm``), but the last connection to close copies
    them into the file (a checkpoint) and deletes the ``-wal``. This connection then skips that
    (``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE``): the next writer, the daemon at its start, does it.
    Without such a ``-wal`` closing changes nothing in the file and removes the WAL files as usual.

    Raises:
        StorageError, PragmaError: as ``connect``.
    """
    wal = Path(os.path.realpath(path) + "-wal")  # SQLite names it after the file a link points to
    try:
        pending = wal.stat().st_size > 0  # one look: a last connection may delete it meanwhile
    except FileNotFoundError:
        pending = False
    conn = connect(path)
    if pending:
        conn.config(apsw.SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1)
    return conn


def on_read_only_media(path: Path) -> bool:
    """True when the directory holding ``path`` is on a read-only file system. Reads only."""
    try:
        return bool(os.statvfs(Path(os.path.realpath(path)).parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _open_immutable(path: Path) -> Db:
    """A read-only connection to a database on read-only media.

    A WAL database needs its ``-shm`` file even to be read; on read-only media (a mounted
    backup, a read-only bind mount) that file cannot be created, and the open fails with
    "unable to open database file". Nothing can change the file there, so SQLite may read it as
    ``immutable`` (no locks, no shared memory). A ``-wal`` file left beside it would be ignored:
    a cleanly closed database has none.
    """
    uri = "file:" + urllib.parse.quote(os.path.realpath(path)) + "?mode=ro&immutable=1"
    try:
        conn = Db(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        apply_policy(conn, readonly=True)
    except apsw.Error as e:
        raise translate(e) from e
    return conn


# How often a write connection that shares its process with another writer tries a held lock again.
BUSY_POLL_S = 0.001


class LockWaits:
    """When a connection last found the write lock taken: the daemon's hook writer tells it
    (``poll_when_busy``'s ``on_wait``), the tailer asks it (``recent``) to know whether its
    transactions keep a hook waiting.

    Args:
        window_s: float, seconds a wait counts as recent.
        clock: monotonic seconds.
    """

    def __init__(self, window_s: float = 5.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._window_s = window_s
        self._clock = clock
        self._last: float | None = None

    def note(self) -> None:
        """A wait began now."""
        self._last = self._clock()

    def recent(self) -> bool:
        """Whether a wait began within the window."""
        return self._last is not None and self._clock() - self._last <= self._window_s


def poll_when_busy(
    conn: Db,
    timeout_ms: int = BUSY_TIMEOUT_MS,
    poll_s: float = BUSY_POLL_S,
    on_wait: Callable[[], None] | None = None,
) -> Db:
    """Make ``conn`` wait for a lock another connection holds by trying again every ``poll_s``
    seconds until ``timeout_ms`` (then ``BusyError``, as with ``busy_timeout``); returns ``conn``.
    ``on_wait`` is called as each wait begins (``LockWaits.note``).

    For the daemon's two writers (hooks, tailer), which take turns all the time: SQLite's own
    busy handler sleeps 1, 2, 5, 10, ... 100 ms between tries, so a hook group waiting on a
    tailer transaction began up to 100 ms after the lock was free. ``PRAGMA busy_timeout`` then
    reads 0 (SQLite forgets it for a handler of the caller's).
    """
    monotonic, sleep = time.monotonic, time.sleep
    deadline = 0.0

    def busy(tries: int) -> bool:
        nonlocal deadline
        now = monotonic()
        if tries == 0:
            deadline = now + timeout_ms / 1000
            if on_wait is not None:
                on_wait()
        elif now >= deadline:
            return False
        sleep(poll_s)
        return True

    conn.set_busy_handler(busy)
    return conn


def write_txn(conn: Db, fn: Callable[[Db], T]) -> T:
    """Run ``fn(conn)`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rollback on error).

    Raises:
        StorageError: translated from apsw; nothing of ``fn``'s writes remains.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
    except apsw.Error as e:
        raise translate(e) from e
    try:
        result = fn(conn)
    except BaseException as e:
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
        if isinstance(e, apsw.Error):
            raise translate(e) from e
        raise
    try:
        conn.execute("COMMIT")
    except BaseException as e:  # a commit hook may refuse with its own error (``FileLost``)
        with contextlib.suppress(apsw.Error):
            conn.execute("ROLLBACK")
        if isinstance(e, apsw.Error):
            raise translate(e) from e
        raise
    return result


def scalar(conn: Db, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """First column of the first row, or None."""
    for row in conn.execute(sql, params):
        return row[0]
    return None


def set_meta(conn: Db, key: str, value: str) -> None:
    """Upsert one ``meta`` row in its own short write transaction."""
    write_txn(
        conn,
        lambda c: c.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        ),
    )


def free_bytes(conn: Db) -> int:
    """Bytes of the database file's free pages (``PRAGMA freelist_count`` pages). Read-only."""
    pages: Any = conn.execute("PRAGMA freelist_count").fetchall()[0][0]
    size: Any = conn.execute("PRAGMA page_size").fetchall()[0][0]
    return int(pages) * int(size)
