"""How ingestd writes a file that belongs to the user (Claude Code's ``settings.json``).

- ``detect_style`` / ``render``: the file's layout (indent of spaces or tabs of any width, or one
  line; the space after colons; ASCII escapes; a final newline) is detected and reused, so a
  rewrite in a regular style changes only the lines whose content changes.
- ``write_new``: a new file with exactly a given mode (a backup keeps the original's mode: a 0600
  settings file, which may hold secrets in ``env``, must not leave a 0644 copy), never through a
  symlink planted at its name.
- ``backups_of`` / ``prune_backups``: ``<name>.bak-<UTC stamp>[-n]`` copies, the newest
  ``KEEP_BACKUPS`` kept; any other file beside them is never touched.
"""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KEEP_BACKUPS = 5
BACKUP_NAME = re.compile(r"\.bak-(\d{8}T\d{6}Z)(?:-(\d+))?$")


@dataclass(frozen=True, slots=True)
class Style:
    """How a settings file is laid out.

    Attributes:
        indent: str | None, one level of indentation (``"  "``, ``"\\t"``, ...); None: all on one line.
        key_sep: str, between a key and its value (``": "`` or ``":"``).
        item_sep: str, between items on one line (``", "`` or ``","``; with an indent, ``","``).
        ascii: bool, non-ASCII characters written as ``\\u`` escapes.
        newline: bool, a final newline.
    """

    indent: str | None = "  "
    key_sep: str = ": "
    item_sep: str = ","
    ascii: bool = False
    newline: bool = True


CLAUDE_STYLE = Style()  # as Claude Code writes the file (JSON.stringify(settings, null, 2))


def detect_style(text: str | None) -> Style:
    """The layout of ``text`` (``CLAUDE_STYLE`` for a missing or blank file). Pure."""
    if text is None or not text.strip():
        return CLAUDE_STYLE
    body = text.strip()
    indent = None
    for line in body.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and stripped != line:
            indent = line[: len(line) - len(stripped)]
            break
    m = re.search(r'"\s*:(\s?)', body)
    key_sep = ":" + (m.group(1) if m else " ")
    item_sep = ","
    if indent is None and "\n" not in body:
        item_sep = ", " if ", " in body else ","
    return Style(indent, key_sep, item_sep, "\\u" in body and body.isascii(), text.endswith("\n"))


def render(settings: dict[str, Any], style: Style = CLAUDE_STYLE) -> str:
    """Settings laid out in ``style`` (default: as Claude Code writes them), key order kept."""
    out = json.dumps(
        settings, indent=style.indent, separators=(style.item_sep, style.key_sep), ensure_ascii=style.ascii
    )
    return out + ("\n" if style.newline else "")


def write_new(path: Path, data: str, mode: int) -> None:
    """Create ``path`` (it must not exist, and is never a symlink followed) with exactly ``mode``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        os.fchmod(fh.fileno(), mode)  # exactly the mode, whatever the umask
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def backups_of(path: Path) -> list[Path]:
    """The backups ``apply_plan`` made of ``path`` (``<name>.bak-<stamp>[-n]``), oldest first. Reads only."""
    found = []
    for b in path.parent.glob(f"{glob.escape(path.name)}.bak-*"):
        m = BACKUP_NAME.search(b.name)
        if m and b.name == f"{path.name}{m.group(0)}":
            found.append((m.group(1), int(m.group(2) or 0), b))
    return [b for _, _, b in sorted(found)]


def prune_backups(path: Path, keep: int = KEEP_BACKUPS) -> list[Path]:
    """Delete all but the newest ``keep`` backups of ``path``; returns the deleted ones (other files never)."""
    found = backups_of(path)
    old = found[: max(0, len(found) - keep)]
    for b in old:
        b.unlink(missing_ok=True)
    return old
