"""Reading a file the user named, whole, with a size cap.

A file named on the command line or in a setting (a price list, the config file, the token file,
Claude Code's ``settings.json``) is read into memory whole to be parsed. Without a cap, a wrong
name (``/dev/zero``, a multi-gigabyte log) ended in a ``MemoryError`` traceback or an exhausted
machine; with it, at most ``limit_bytes + 1`` bytes are read and a larger file is a one-line error
(exit 2) naming it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ingestd.errors import ConfigError, IngestdError
from ingestd.filecheck import kind_name

MIB = 1 << 20


def read_capped(path: Path, limit_bytes: int, what: str, error: type[IngestdError] = ConfigError) -> bytes:
    """The bytes of the file at ``path``, refused when longer than ``limit_bytes``. Reads the filesystem.

    Args:
        path: the file: a regular one (a FIFO, device, socket or directory is refused by kind, named
            by its path; a FIFO is opened without waiting for a writer, so a wrong name never hangs).
        limit_bytes: the largest size accepted, in bytes.
        what: what the file is, for the message (``"price file"``).
        error: the ``IngestdError`` class raised for a file that is too large or not a regular file.

    Raises:
        error: the file holds more than ``limit_bytes`` bytes (the message names it and the cap),
            or it is not a regular file (the message names it and its kind).
        OSError: the file cannot be opened or read (``FileNotFoundError`` included): the caller says how.

    The descriptor opened is closed on every path, a refusal or an error included.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        kind = kind_name(os.fstat(fd).st_mode)
        if kind is not None:  # before open(fd): on a directory it raises, naming the fd, not the path
            msg = f"{path} is {kind}, not a regular file: name the {what} itself; nothing was read"
            raise error(msg, path=str(path))
    except BaseException:
        os.close(fd)
        raise
    with open(fd, "rb") as fh:  # owns fd from here: closing fh closes it
        data = fh.read(limit_bytes + 1)
    if len(data) > limit_bytes:
        cap = f"{limit_bytes // MIB} MiB" if limit_bytes % MIB == 0 else f"{limit_bytes} bytes"
        raise error(f"{path}: the {what} is larger than {cap}; is it the right file? nothing was read", path=str(path))
    return data
