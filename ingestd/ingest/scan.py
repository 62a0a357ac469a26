"""Discovery of transcripts under a projects root (SPEC §7), read-only.

Every ``*.jsonl`` (main session files, ``<session>/subagents/agent-*.jsonl`` including
``workflows/wf_*``, flat 2.0.x ``agent-*.jsonl``) and ``*.meta.json`` sidecar. Symlinks are
never followed out of the root (a symlinked directory is not descended at all); each one passed
over is logged (``symlink_not_followed``, with its target), never skipped without a word, once a
process (the daemon rescans every minute) unless its target changes.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ingestd.logs import get_logger

log = get_logger("ingestd.ingest")


@dataclass(frozen=True, slots=True)
class Found:
    """One discovered file.

    Attributes:
        path: str, absolute path.
        origin: str, path relative to the root with ``/`` separators (``text_name``).
        size: int, bytes; mtime_ns: int, ns; inode: int.
        is_meta: bool, a ``.meta.json`` sidecar (logged whole as one row).
    """

    path: str
    origin: str
    size: int
    mtime_ns: int
    inode: int
    is_meta: bool


def text_name(name: str) -> str:
    """A file system name as storable text: bytes that are not UTF-8 spelled ``\\xNN``.

    Python hands such bytes over as lone surrogates (``surrogateescape``), which SQLite text
    cannot hold: one transcript named so once aborted every ingest of its root. Claude Code
    never writes such names (UUIDs, ``-``-encoded slugs), so the spelling cannot collide with
    a name it wrote.
    """
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _inside(path: str, root_real: str) -> bool:
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real + os.sep)


# The symlinks already named (path, target): the daemon walks its roots again at every rescan,
# and would say the same warnings every minute for its whole life. Named again when its
# target changes. Bounded by the symlinks in the roots.
_said: set[tuple[str, str]] = set()


def _passed_over(root_s: str, path: str, why: str) -> None:
    """Log a symlink ``discover`` does not follow (once a process): what it is, where it points, how to have it read."""
    target = os.path.realpath(path)
    if (path, target) in _said:
        return
    _said.add((path, target))
    log.warning(
        "symlink_not_followed",
        path=text_name(os.path.relpath(path, root_s)),
        target=text_name(target),
        reason=why,
        hint="move the folder under the projects root, or give its real path as another --projects root",
    )


def _unreadable(root_s: str, kind: str, e: OSError, out: list[tuple[str, str]] | None) -> None:
    """A directory that cannot be listed or a file that cannot be examined under the root: logged
    (``dir_unreadable`` / ``file_unreadable``, once a process per path and error, as the daemon
    walks again every minute) and appended to ``out`` as ``(kind, relative path)``."""
    path = text_name(os.path.relpath(str(e.filename or root_s), root_s))
    if out is not None:
        out.append((kind, path))
    said = (f"{kind}:{path}", e.strerror or str(e))
    if said in _said:
        return
    _said.add(said)
    log.warning(
        f"{kind}_unreadable",
        path=path,
        error=e.strerror or str(e),
        hint="its transcripts are not read: give this user read access (and search, for a folder)",
    )


def discover(root: Path, unreadable: list[tuple[str, str]] | None = None) -> list[Found]:
    """Every transcript and sidecar under ``root``, sorted by origin (a session's files together).

    Args:
        root: the projects root.
        unreadable: when given, each folder that cannot be listed and each transcript that cannot be
            examined (permissions, I/O errors) is appended as ``("dir" | "file", path relative to
            the root)``; either way each is logged (``_unreadable``), never skipped without a word.

    Returns:
        list of ``Found``; unreadable entries are skipped.

    Raises:
        OSError: ``root`` itself cannot be listed.
    """
    root_s = os.path.abspath(root)
    root_real = os.path.realpath(root_s)
    prefix = root_s if root_s.endswith(os.sep) else root_s + os.sep  # every walked path starts so
    out: list[Found] = []
    # one os.scandir a folder: an entry's type comes with the listing (d_type), so a file costs one
    # lstat and a folder none (os.walk with an islink, a path join and an lstat each: 1.5x the time)
    folders = [root_s]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as entries:
                inner: list[str] = []
                for e in entries:
                    try:
                        if e.is_dir(follow_symlinks=False):
                            inner.append(e.path)
                            continue
                    except OSError:
                        pass  # a type the listing did not give and lstat refused: examined as a file
                    found = _examine(e, root_s, prefix, root_real, unreadable)
                    if found is not None:
                        out.append(found)
                folders.extend(reversed(inner))  # the first listed walked first, as os.walk does
        except OSError as err:
            if folder is root_s:
                raise  # an unreadable root is fatal, not an empty tree
            if not isinstance(err, FileNotFoundError):  # removed while walking: nothing to read
                _unreadable(root_s, "dir", err, unreadable)  # a folder that cannot be listed
    out.sort(key=lambda f: f.origin)
    return out


def _leads_to_folder(e: os.DirEntry[str]) -> bool:
    """Whether a symlink's target is a folder; False when the target cannot be examined (then the
    link is judged as a file: out of the root, or unreadable inside it)."""
    try:
        return e.is_dir()
    except OSError:
        return False


def _examine(
    e: os.DirEntry[str],
    root_s: str,
    prefix: str,
    root_real: str,
    unreadable: list[tuple[str, str]] | None,
) -> Found | None:
    """One listed entry that is not a folder: its ``Found`` when it is a transcript or sidecar (a
    symlink to one inside the root included), else None; a symlinked folder or a symlink out of
    the root is logged (``_passed_over``), an entry that cannot be examined too (``_unreadable``)."""
    full, name = e.path, e.name
    is_meta = name.endswith(".meta.json")
    wanted = is_meta or name.endswith(".jsonl")
    try:
        link = e.is_symlink()
        if link and _leads_to_folder(e):
            _passed_over(root_s, full, "a symlinked folder is not descended")
            return None
        if not wanted:
            return None
        if link:
            if not _inside(full, root_real):
                _passed_over(root_s, full, "a symlink out of the projects root is not read")
                return None
            st = os.stat(full)
        else:
            st = e.stat(follow_symlinks=False)
    except FileNotFoundError:
        return None  # removed since the folder was listed
    except OSError as err:  # a folder that can be listed but not searched, an I/O error
        if not wanted:
            return None  # none of ours
        if err.filename is None:
            err.filename = full
        _unreadable(root_s, "file", err, unreadable)
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    origin = text_name(full[len(prefix) :].replace(os.sep, "/"))
    return Found(full, origin, st.st_size, st.st_mtime_ns, st.st_ino, is_meta)


def found_at(root: Path, path: Path) -> Found | None:
    """One file under ``root`` as ``discover`` would report it, without walking the root.

    The tailer's entry point: a change names a few files, and listing a large root for
    them would cost work proportional to the whole history. The same rules as
    ``discover``: transcripts and sidecars only, no symlinked directory on the way, no
    symlink out of the root.

    Returns:
        the ``Found``, or None when ``path`` is not such a file under ``root`` (or is gone).
    """
    root_s = os.path.abspath(root)
    full = os.path.abspath(path)
    name = os.path.basename(full)
    is_meta = name.endswith(".meta.json")
    if not (name.endswith(".jsonl") or is_meta) or not full.startswith(root_s + os.sep):
        return None
    d = os.path.dirname(full)
    while d != root_s:
        if os.path.islink(d):
            return None
        d = os.path.dirname(d)
    if os.path.islink(full) and not _inside(full, os.path.realpath(root_s)):
        return None
    try:
        st = os.stat(full)
    except OSError:
        return None
    if not os.path.isfile(full):
        return None
    origin = text_name(os.path.relpath(full, root_s).replace(os.sep, "/"))
    return Found(full, origin, st.st_size, st.st_mtime_ns, st.st_ino, is_meta)
