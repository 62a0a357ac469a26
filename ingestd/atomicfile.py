"""Writing a small file so a reader sees the old bytes or the new ones, never a part.

Every file ingestd rewrites whole goes through ``replace``: the daemon's state file
(``ingestd.daemon.presence``), the stalls mirror (``ingestd.store.stall``), the service unit
(``ingestd.service``) and Claude Code's ``settings.json`` (``ingestd.hooksetup``); new private
files through ``write_new``.
"""

from __future__ import annotations

import os
from pathlib import Path


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


def replace(path: Path, data: bytes | str, mode: int) -> None:
    """Replace ``path`` with ``data`` atomically: a temporary file beside it, renamed over it.

    The temporary name (``.<name>.tmp<pid>``) is this process's own, so two processes writing
    one file never share a half-written temporary; a left-over one of this pid is replaced.
    ``path`` itself is replaced, not followed: resolve a symlink first to write through it.

    Raises:
        OSError: the directory refuses the file or the rename.
    """
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        write_new(tmp, data, mode)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
