"""Files: checked before they are trusted, rewritten whole atomically, read whole with a cap.

Checks (``problems``, ``require_safe``): files are checked the way ssh's ``StrictModes`` checks keys (SPEC §10).

The database, its ``-wal`` and ``-shm``, the daemon's ``.lock``, the backups and the token file
must be owned by the user running ingestd and not writable by group or others (the token file
not readable by them either), and the directory holding each must not be writable by others
unless it has the sticky bit (``/tmp`` is 1777: others can create files there but not replace
yours). Why: a database someone else can write can be given forged history (or be swapped for
another one), and SQLite creates the WAL and shared-memory files with the database's mode and
owner, so one loose file makes the next ones loose too. A token readable by others is no secret.

A file that does not exist yet passes (ingestd creates its own files 0600 in a 0700 directory);
only its directory is checked. Symlinks are followed (the file that is used is the one checked).

``problems`` is read-only and returns every finding; ``require_safe`` raises on the first ones
with the file's name and the command that fixes it.

Atomic writes (``replace``, ``write_new``): a small file is written so a reader sees the old bytes
or the new ones, never a part. Every file ingestd rewrites whole goes through ``replace``: the daemon's state file
(``ingestd.daemon.presence``), the stalls mirror (``ingestd.store.stall``), the service unit
(``ingestd.claude.service``) and Claude Code's ``settings.json`` (``ingestd.claude.hooksetup``); new private
files through ``write_new``.

Capped reads (``read_capped``): a file named on the command line or in a setting (a price list, the
config file, the token file, Claude Code's ``settings.json``) is read into memory whole to be
parsed. Without a cap, a wrong name (``/dev/zero``, a multi-gigabyte log) ended in a ``MemoryError``
traceback or an exhausted machine; with it, at most ``limit_bytes + 1`` bytes are read and a larger
file is a one-line error (exit 2) naming it. A file that is kept whatever it holds (a subagent's
``.meta.json``) is read with ``read_bounded``: past the cap, its length, hash, head and tail, never the
whole; a small file ingestd wrote itself (state, stalls, pid) with ``read_small``: past its cap, none.
"""

from __future__ import annotations

import os
import pwd
import shlex
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from hashlib import blake2b
from pathlib import Path

from ingestd.errors import ConfigError, IngestdError


@dataclass(frozen=True, slots=True)
class Finding:
    """One unsafe file or directory.

    Attributes:
        path: str, the file or directory.
        problem: str, what is wrong, e.g. ``mode 0666: writable by group and others``.
        fix: str, the shell command that fixes it.
    """

    path: str
    problem: str
    fix: str


def user_name(uid: int) -> str:
    """The login name of ``uid`` (its number when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _who(bits: int) -> str:
    parts = [w for w, m in (("group", 0o070), ("others", 0o007)) if bits & m]
    return " and ".join(parts)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_name(mode: int) -> str | None:
    """What a non-regular file is, from its ``st_mode`` (``"a FIFO (named pipe)"``); None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def not_regular(path: Path, what: str = "file") -> str | None:
    """Why ``path`` cannot be used as a ``what`` (a regular file), without opening it; None when it
    is a regular file or does not exist. Symlinks are followed. Reads the filesystem (``stat``).

    The answer is one sentence naming the path and its kind (``/dev/null is a character device,
    not a regular file``): the fix is naming another file, never changing this one.
    """
    try:
        kind = kind_name(path.stat().st_mode)
    except OSError:
        return None  # missing or unreadable: the caller's open says so
    return None if kind is None else f"{path} is {kind}, not a regular {what}: name a regular {what}"


def file_problems(
    path: Path, *, secret: bool = False, uid: int | None = None, directory: bool = False
) -> list[Finding]:
    """What is unsafe about the file at ``path`` itself (nothing when it does not exist).

    A path that is not a regular file (a directory when ``directory``) is one finding, by kind,
    whose fix is naming another file; a path not owned by the user running ingestd is never told
    to be ``chmod``-ed unless the fix also says to ``chown`` it: a file of root's accepted as the
    config file (``uid=0``) is to be replaced by a file of the user's own.

    Args:
        path: the file (symlinks followed).
        secret: True for the token file: not readable by group or others either.
        uid: the user who must own it (default: the effective uid).
        directory: ``path`` must be a directory (a backups directory), not a regular file.
    """
    me = os.geteuid() if uid is None else uid
    try:
        st = path.stat()
    except FileNotFoundError:
        return []
    except OSError as e:
        return [Finding(str(path), f"cannot be checked ({e.strerror})", f"ls -l {shlex.quote(str(path))}")]
    q = shlex.quote(str(path))
    kind = kind_name(st.st_mode)
    if kind != ("a directory" if directory else None):
        want = "a directory" if directory else "a regular file"
        return [Finding(str(path), f"is {kind or 'a regular file'}, not {want}", f"name {want} instead of {q}")]
    out = []
    if st.st_uid != me:
        out.append(
            Finding(
                str(path),
                f"owned by {user_name(st.st_uid)}, not by {user_name(me)} (who runs ingestd)",
                f"chown {shlex.quote(user_name(me))} {q}",
            )
        )
    mode = stat.S_IMODE(st.st_mode)
    loose = mode & (0o077 if secret else 0o022)
    if loose:
        what = "readable or writable" if secret and loose & 0o044 else "writable"
        private = "700" if stat.S_ISDIR(st.st_mode) else "600"
        # a file of an accepted owner other than the user (root's config) cannot be chmod-ed by the user
        theirs = st.st_uid == me != os.geteuid()
        mine = f"use a {'directory' if directory else 'file'} of your own instead of {q}"
        fix = mine if theirs else f"chmod {private} {q}"
        out.append(Finding(str(path), f"mode {mode:04o}: {what} by {_who(loose)}", fix))
    return out


def dir_problems(directory: Path) -> list[Finding]:
    """What is unsafe about a directory holding ingestd's files: writable by others without the sticky bit."""
    try:
        st = directory.stat()
    except OSError:
        return []  # a missing directory is created private by whoever creates the file
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o002 and not mode & stat.S_ISVTX:
        return [
            Finding(
                str(directory),
                f"directory mode {mode:04o}: others can replace the files in it (writable, no sticky bit)",
                f"chmod o-w {shlex.quote(str(directory))}",
            )
        ]
    return []


def problems(files: Iterable[Path], *, secret: bool = False, uid: int | None = None) -> list[Finding]:
    """Findings for each file and, once each, the directory holding it (the symlink's target's)."""
    out: list[Finding] = []
    seen: set[Path] = set()
    for f in files:
        out.extend(file_problems(f, secret=secret, uid=uid))
        parent = Path(os.path.realpath(f)).parent
        if parent not in seen:
            seen.add(parent)
            out.extend(dir_problems(parent))
    return out


def database_files(db_path: Path) -> list[Path]:
    """The database and the files beside it that SQLite and the daemon use: ``-wal``, ``-shm``, ``.lock``."""
    real = Path(os.path.realpath(db_path))
    return [real, *(real.with_name(real.name + s) for s in ("-wal", "-shm", ".lock"))]


def store_problems(db_path: Path, backup_dir: Path | None = None) -> list[Finding]:
    """Findings for everything a command that writes the database touches. Reads only.

    The database and the files beside it (``database_files``); with ``backup_dir``, also that
    directory itself (writable by group or others is refused, like a file) and the backups in it,
    or, when it does not exist yet, the nearest existing directory above it (where it will be
    created, 0700).
    """
    found = problems(database_files(db_path))
    if backup_dir is None:
        return found
    if backup_dir.is_dir():
        found += problems([backup_dir / n for n in sorted(os.listdir(backup_dir)) if n.endswith(".db")])
        more = file_problems(backup_dir, directory=True)  # stricter than the holding-directory check problems() made
    elif backup_dir.exists():
        more = file_problems(backup_dir, directory=True)  # a file where the directory should be
    else:
        above = Path(os.path.realpath(backup_dir)).parent
        while not above.exists() and above != above.parent:
            above = above.parent
        more = dir_problems(above)
    seen = {g.path for g in found}  # one finding a path: a directory with backups was reported twice
    return found + [f for f in more if f.path not in seen]


def require_safe(findings: list[Finding]) -> None:
    """Raise when there is any finding, naming each file, what is wrong and the command that fixes it.

    Raises:
        ConfigError: with ``path`` and ``fix`` of the first finding in its context.
    """
    if not findings:
        return
    lines = [f"{f.path}: {f.problem}; fix: {f.fix}" for f in findings]
    loose = any(not f.problem.startswith("is ") for f in findings)  # not only wrong kinds (file_problems)
    why = "files others can change or read" if loose else "a path that is not the kind of file needed"
    raise ConfigError(
        f"refusing to use {why}: " + " | ".join(lines),
        path=findings[0].path,
        fix=findings[0].fix,
    )


def write_new(path: Path, data: bytes | str, mode: int) -> None:
    """Create ``path`` (it must not exist, and is never a symlink followed) with exactly ``mode``; fsynced.

    Raises:
        FileExistsError: ``path`` exists (a symlink included).
        OSError: the directory refuses the file.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), mode)  # exactly the mode, whatever the umask
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
        fh.flush()
        os.fsync(fh.fileno())


def replace(path: Path, data: bytes | str, mode: int, before_rename: Callable[[], None] | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file beside it, renamed over it.

    The temporary name (``.<name>.tmp<pid>``) is this process's own, so two processes writing
    one file never share a half-written temporary; a left-over one of this pid is replaced.
    ``path`` itself is replaced, not followed: resolve a symlink first to write through it.
    ``before_rename`` runs once the temporary file is written and synced, right before the rename
    (a file of the user's re-read there, so a change made meanwhile is not overwritten); what it
    raises stops the replace (the temporary file removed, ``path`` untouched).

    Raises:
        OSError: the directory refuses the file or the rename.
        whatever ``before_rename`` raises.
    """
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        write_new(tmp, data, mode)
        if before_rename is not None:
            before_rename()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class TooLarge:
    """What ``read_bounded`` keeps of a file longer than its cap: never the whole file.

    Attributes:
        length: int, the file's size in bytes as read to its end.
        digest: str, blake2b-8 hex of all those bytes (the hash a transcript line's key uses).
        head: bytes, its first ``head_bytes``; tail: bytes, its last ``tail_bytes`` (they overlap
            on a file shorter than both).
    """

    length: int
    digest: str
    head: bytes
    tail: bytes


def _open_regular(path: Path, what: str, error: type[IngestdError]) -> int:
    """A read-only descriptor on ``path``, refused (``error``) when it is not a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        kind = kind_name(os.fstat(fd).st_mode)
        if kind is not None:  # before open(fd): on a directory it raises, naming the fd, not the path
            msg = f"{path} is {kind}, not a regular file: name the {what} itself; nothing was read"
            raise error(msg, path=str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bounded(
    path: Path,
    limit_bytes: int,
    what: str,
    error: type[IngestdError] = ConfigError,
    *,
    head_bytes: int = 4 << 10,
    tail_bytes: int = 64 << 10,
) -> bytes | TooLarge:
    """The bytes of the file at ``path``, or, when it holds more than ``limit_bytes``, a ``TooLarge``
    (its length, hash, head and tail), read in 1 MiB chunks so memory stays under ``limit_bytes`` plus
    ``tail_bytes`` plus a chunk whatever its size. Reads the filesystem.

    For a file that is kept whatever it holds (a subagent's ``.meta.json`` is logged like a
    transcript line: an oversized one as a marker). Errors as ``read_capped``'s, a larger file excepted.
    """
    fd = _open_regular(path, what, error)
    with open(fd, "rb") as fh:  # owns fd from here: closing fh closes it
        data = fh.read(limit_bytes + 1)
        if len(data) <= limit_bytes:
            return data
        hasher = blake2b(data, digest_size=8)
        head = data[:head_bytes]
        tail = bytearray(data[-tail_bytes:] if tail_bytes else b"")
        length = len(data)
        del data
        while chunk := fh.read(MIB):
            hasher.update(chunk)
            length += len(chunk)
            if tail_bytes:
                tail += chunk
                del tail[: max(0, len(tail) - tail_bytes)]
    return TooLarge(length, hasher.hexdigest(), head, bytes(tail))


def read_capped(path: Path, limit_bytes: int, what: str, error: type[IngestdError] = ConfigError) -> bytes:
    """The bytes of the file at ``path``, refused when longer than ``limit_bytes``. Reads the filesystem.

    Args:
        path: the file: a regular one (a FIFO, device, socket or directory is refused by kind, named
            by its path; a FIFO is opened without waiting for a writer, so a wrong name never hangs).
        limit_bytes: the largest size accepted, in bytes.
        what: what the file is, for the message (``"price file"``).
        error: the ``IngestdError`` class raised for a file that is too large or not a regular file.

    Raises:
        error: the file holds more than ``limit_bytes`` bytes (the message names it and the cap;
            ``limit_bytes`` in its context), or it is not a regular file (the message names it and its kind).
        OSError: the file cannot be opened or read (``FileNotFoundError`` included): the caller says how.

    The descriptor opened is closed on every path, a refusal or an error included. At most
    ``limit_bytes + 1`` bytes are read.
    """
    fd = _open_regular(path, what, error)
    with open(fd, "rb") as fh:  # owns fd from here: closing fh closes it
        data = fh.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        cap = f"{limit_bytes // MIB} MiB" if limit_bytes % MIB == 0 else f"{limit_bytes} bytes"
        raise error(
            f"{path}: the {what} is larger than {cap}; is it the right file? nothing was read",
            path=str(path),
            limit_bytes=limit_bytes,
        )
    return data


def read_small(path: Path, limit_bytes: int, what: str) -> bytes | None:
    """The bytes of a small file ingestd wrote itself (a state file, a pid file), or None when it is
    missing, unreadable, not a regular file or larger than ``limit_bytes`` (a file replaced by
    something else is no state). Never raises on I/O; reads at most ``limit_bytes + 1`` bytes."""
    try:
        return read_capped(path, limit_bytes, what)
    except (OSError, IngestdError):
        return None
