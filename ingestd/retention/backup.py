"""Online backups and their retention (SPEC §8).

``backup`` copies the live database with SQLite's backup API in one step: in WAL
mode that is one read transaction, a consistent snapshot that never blocks the
writer. The copy is written to a private temporary file (0600), checked with
``PRAGMA integrity_check``, synced and linked into place as
``<stem>-YYYYMMDDTHHMMSS.mmmZ.db``, where ``<stem>`` is the database file's name without ``.db``
(``ingestd`` for the default ``ingestd.db``), and the stamp is UTC to the millisecond: names sort by
time and two backups in one second do not collide; a name already taken moves on by a millisecond,
never overwriting. Then the backup retention runs and ``meta.last_backup_at`` is recorded. Names of
the older form ``<stem>-YYYYMMDDTHHMMSSZ.db`` are still recognised by retention.

Retention: a backup is deleted when it is older than ``retention_days`` *and* not among the
``keep_newest`` newest *of its own database* (the same stem). Two databases in one folder share
the default ``backups/`` folder: before the stem was in the name, the second one's backups were
named like the first's and its retention deleted the other's. Age comes from the name, never the
file's mtime.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw

from ingestd.core.timefmt import format_utc
from ingestd.errors import CheckFailed, StorageError
from ingestd.settings import Settings
from ingestd.store.connection import Db, connect, on_read_only_media, scalar, set_meta, translate, unwritable

NAME_RE = re.compile(r"^(.+)-(\d{8}T\d{6})(?:\.(\d{3}))?Z\.db$")
STAMP_FORMAT = "%Y%m%dT%H%M%S"
DEFAULT_STEM = "ingestd"


def backup_stem(db_path: Path) -> str:
    """The name backups of ``db_path`` start with: its real file name without ``.db``.

    The real path, so a symlink to the database names its backups as the database does.
    """
    name = Path(os.path.realpath(db_path)).name
    return name.removesuffix(".db") or DEFAULT_STEM


def backup_name(now: datetime, stem: str = DEFAULT_STEM) -> str:
    """``<stem>-YYYYMMDDTHHMMSS.mmmZ.db`` for an aware ``now`` (milliseconds, truncated). Pure."""
    t = now.astimezone(UTC)
    return f"{stem}-{t.strftime(STAMP_FORMAT)}.{t.microsecond // 1000:03d}Z.db"


def taken_at(name: str, stem: str = DEFAULT_STEM) -> datetime | None:
    """The UTC instant in a backup file name of ``stem``'s database, or None when the name is not
    one of its backups (another database's, or not a backup). Pure."""
    m = NAME_RE.match(name)
    if not m or m.group(1) != stem:
        return None
    t = datetime.strptime(m.group(2), STAMP_FORMAT).replace(tzinfo=UTC)
    return t + timedelta(milliseconds=int(m.group(3) or 0))


def default_backup_dir(db_path: Path) -> Path:
    """A ``backups/`` folder next to the database."""
    return db_path.parent / "backups"


def backup_dir_from(settings: Settings, db_path: Path) -> Path:
    """``backup_dir`` when set, else ``backups/`` next to the database.

    A relative ``backup_dir`` from the environment or the config file is taken from the database's
    directory, not from whatever directory a command (or the service, in ``/``) runs in: the daemon's
    scheduled backups, ``ingestd backup`` and ``prune``'s retention then use one directory. A flag's
    relative path (``--dir``) is the shell's, from its working directory.
    """
    d = settings.get_opt_str("backup_dir")
    if not d:
        return default_backup_dir(db_path)
    p = Path(d).expanduser()
    if p.is_absolute() or settings.sources.get("backup_dir") == "argument":
        return p
    return Path(os.path.abspath(db_path)).parent / p


def to_delete(
    names: list[str], now: datetime, retention_days: int, keep_newest: int, stem: str = DEFAULT_STEM
) -> list[str]:
    """The backups retention removes: older than ``retention_days`` and not among the newest ``keep_newest``.

    Names that are not ``<stem>-<stamp>.db`` (another database's backups, other files) are never
    touched. Pure.

    Returns:
        Names to delete, oldest first.
    """
    dated = sorted(((t, n) for n in names if (t := taken_at(n, stem)) is not None), reverse=True)
    limit = now - timedelta(days=retention_days)
    return sorted(n for i, (t, n) in enumerate(dated) if i >= keep_newest and t < limit)


@dataclass(frozen=True, slots=True)
class RetentionResult:
    """Backup retention outcome.

    Attributes:
        directory: str.
        deleted: list[str], file names removed (or that would be, in a dry run).
        kept: list[str], backup file names left, oldest first.
        dry_run: bool.
    """

    directory: str
    deleted: list[str]
    kept: list[str]
    dry_run: bool = False

    def to_json(self) -> dict[str, object]:
        """JSON shape."""
        return {"directory": self.directory, "deleted": self.deleted, "kept": self.kept, "dry_run": self.dry_run}


def apply_retention(
    directory: Path,
    *,
    now: datetime,
    retention_days: int,
    keep_newest: int,
    dry_run: bool = False,
    stem: str = DEFAULT_STEM,
) -> RetentionResult:
    """Delete the backups of ``stem``'s database that ``to_delete`` names in ``directory`` (nothing
    with ``dry_run``). Touches the filesystem."""
    if not directory.is_dir():
        return RetentionResult(str(directory), [], [], dry_run)
    names = sorted(p.name for p in directory.iterdir() if taken_at(p.name, stem) is not None)
    gone = to_delete(names, now, retention_days, keep_newest, stem)
    if not dry_run:
        for n in gone:
            with contextlib.suppress(FileNotFoundError):
                (directory / n).unlink()
    return RetentionResult(str(directory), gone, [n for n in names if n not in gone], dry_run)


@dataclass(frozen=True, slots=True)
class BackupResult:
    """A finished backup.

    Attributes:
        path: str, the backup file.
        bytes: int, its size.
        taken_at: str, canonical UTC (the ``now`` passed in).
        integrity: str, ``ok``.
        elapsed_s: float, wall time of the copy and check.
        retention: RetentionResult.
        counts: dict[str, int], rows per table in the copy (``events_raw``, ``token_usage``, ``events``).
    """

    path: str
    bytes: int
    taken_at: str
    integrity: str
    elapsed_s: float
    retention: RetentionResult
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        """JSON shape."""
        return {
            "path": self.path,
            "bytes": self.bytes,
            "taken_at": self.taken_at,
            "integrity": self.integrity,
            "elapsed_s": round(self.elapsed_s, 3),
            "counts": self.counts,
            "retention": self.retention.to_json(),
        }


def _private_new_file(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    os.close(fd)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _free_bytes(directory: Path) -> int:
    """Bytes an unprivileged writer may still use on ``directory``'s file system."""
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def _no_space(directory: Path, needed: int) -> StorageError | None:
    """The error to raise when ``directory`` has less than ``needed`` bytes free, else None."""
    free = _free_bytes(directory)
    if free >= needed:
        return None
    return StorageError(
        f"no space left on {directory}: {needed} bytes needed, {free} free; free some space there "
        "(or, for a backup, pass --dir on another disk)",
        path=str(directory),
        needed_bytes=needed,
        free_bytes=free,
    )


def _remove_partial(dest_path: Path) -> None:
    """Remove a copy that did not finish, and the journal SQLite may have left beside it."""
    for suffix in ("", "-journal", "-wal", "-shm"):
        dest_path.with_name(dest_path.name + suffix).unlink(missing_ok=True)


def copy_database(src: Db, dest_path: Path) -> None:
    """Copy ``src`` into a new file ``dest_path`` (0600) with the backup API, in one consistent step.

    The copy needs the database's size (page count x page size) free where it goes: checked
    before it starts, and again when it fails (a full disk made SQLite say "not an error").

    Raises:
        StorageError: ``no space left on <dir>: N bytes needed``, or the copy failed otherwise
            (``dest_path`` and any journal beside it are removed).
    """
    needed = int(scalar(src, "PRAGMA page_count")) * int(scalar(src, "PRAGMA page_size"))
    if (short := _no_space(dest_path.parent, needed)) is not None:
        raise short
    _private_new_file(dest_path)
    try:
        dest = Db(str(dest_path))
        try:
            with dest.backup("main", src, "main") as b:
                while not b.step(-1):
                    pass
            # The copy keeps the source's WAL header; leave it a single self-contained file.
            dest.execute("PRAGMA journal_mode=DELETE")
        finally:
            dest.close()
    except BaseException as e:
        _remove_partial(dest_path)
        if isinstance(e, apsw.Error | OSError) and (short := _no_space(dest_path.parent, needed)) is not None:
            raise short from e
        if isinstance(e, apsw.Error):
            raise translate(e) from e
        raise


def check_copy(path: Path) -> tuple[str, dict[str, int]]:
    """``PRAGMA integrity_check`` and a few row counts of a backup file. Read-only.

    Raises:
        CheckFailed: the copy is not ``ok``.
    """
    try:
        conn = Db(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check(20)")]
            counts: dict[str, int] = {}
            for t in ("events_raw", "token_usage", "events"):
                found = "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?"
                if conn.execute(found, (t,)).fetchall():
                    counts[t] = int(str(conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]))
        finally:
            conn.close()
    except apsw.Error as e:
        raise translate(e) from e
    if rows != ["ok"]:
        raise CheckFailed(f"backup {path} failed integrity_check: {'; '.join(rows)}", path=str(path))
    return "ok", counts


def _link_new(partial: Path, out_dir: Path, now: datetime, stem: str) -> Path:
    """Give ``partial`` the first free backup name at or after ``now`` (ms steps); never overwrites.

    The name is claimed with an exclusive create before the rename, so two backups racing for one
    name both survive.
    """
    stamp = now
    while True:
        final = out_dir / backup_name(stamp, stem)
        try:
            os.close(os.open(final, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            stamp += timedelta(milliseconds=1)
            continue
        os.replace(partial, final)
        return final


@contextlib.contextmanager
def _new_dir(out_dir: Path) -> Iterator[None]:
    """Create ``out_dir`` (0700) and any missing parent; when the block fails, remove again the
    folders this made, deepest first, if nothing is in them."""
    made: list[Path] = []
    d = out_dir
    while not d.exists() and d != d.parent:
        made.append(d)
        d = d.parent
    out_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        yield
    except BaseException:
        for d in made:
            with contextlib.suppress(OSError):
                d.rmdir()
        raise


def _copy_into(src: Db, out_dir: Path, now: datetime, stem: str) -> tuple[Path, str, dict[str, int]]:
    """Copy ``src`` into ``out_dir`` under a partial name, check it, sync it and give it its backup
    name: ``(the backup's path, integrity, row counts)``. A copy that fails is removed.

    Raises:
        StorageError, CheckFailed: as ``copy_database`` and ``check_copy``.
    """
    partial = out_dir / f".{backup_name(now, stem)}.partial"
    _remove_partial(partial)
    copy_database(src, partial)
    try:
        integrity, counts = check_copy(partial)
    except BaseException:
        _remove_partial(partial)
        raise
    _fsync(partial)
    final = _link_new(partial, out_dir, now, stem)
    os.chmod(final, 0o600)
    with contextlib.suppress(OSError):
        _fsync(out_dir)
    return final, integrity, counts


def backup(
    db_path: Path,
    *,
    now: datetime,
    directory: Path | None = None,
    retention_days: int = 30,
    keep_newest: int = 7,
) -> BackupResult:
    """Take an online, consistent, checked backup of ``db_path``, then apply backup retention.

    Args:
        db_path: the live database (the daemon may be writing to it).
        now: aware datetime; names the file and is recorded as ``meta.last_backup_at`` (not for a
            database on read-only media or that this user cannot write (``unwritable``), which is
            opened read-only and only copied).
        directory: where backups go (created 0700 once the database is open; removed again, if
            this call made it, when the backup fails); default ``default_backup_dir(db_path)``.
        retention_days: backups older than this may go ...
        keep_newest: ... but this many newest always stay.

    Returns:
        A ``BackupResult``.

    Raises:
        StorageError: the copy failed.
        CheckFailed: the copy failed ``integrity_check`` (it is removed).
    """
    started = time.monotonic()
    out_dir = directory if directory is not None else default_backup_dir(db_path)
    stem = backup_stem(db_path)
    # A copy only reads the database: one on read-only media (a mounted backup) or that this user
    # may only read is opened read-only, copied, and nothing is recorded in it (opened for writing,
    # a read-only file fails with "attempt to write a readonly database")
    read_only = on_read_only_media(db_path) or unwritable(db_path) is not None
    src = connect(db_path, readonly=read_only)
    try:
        with _new_dir(out_dir):  # only once the source is open: a failure leaves no empty folder behind
            final, integrity, counts = _copy_into(src, out_dir, now, stem)
            size = final.stat().st_size
            if not read_only:
                set_meta(src, "last_backup_at", format_utc(now))
    finally:
        src.close()
    elapsed = time.monotonic() - started
    retention = apply_retention(
        out_dir, now=now, retention_days=retention_days, keep_newest=max(keep_newest, 1), stem=stem
    )
    return BackupResult(str(final), size, format_utc(now), integrity, elapsed, retention, counts)
