"""How ingestd writes a file that belongs to the user (Claude Code's ``settings.json``).

- ``detect_style`` / ``render``: the file's layout (indent of spaces or tabs of any width, or one
  line; the space after colons; ASCII escapes; a final newline) is detected and reused, so a
  rewrite in a regular style changes only the lines whose content changes.
- ``write_new`` (``ingestd.files``): a new file with exactly a given mode (a backup keeps the
  original's mode: a 0600 settings file, which may hold secrets in ``env``, must not leave a 0644 copy), never through a
  symlink planted at its name.
- ``splice_install`` / ``splice_uninstall``: ingestd's hooks inserted into or cut out of the
  user's text in place (``ingestd.core.jsonedit``), every other byte kept; checked by parsing back.
- ``backups_of`` / ``prune_backups``: ``<name>.bak-<UTC stamp>[-n]`` copies, the newest
  ``KEEP_BACKUPS`` kept; any other file beside them is never touched.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestd.core import jsonedit

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


def _parses_back(text: str, new: dict[str, Any]) -> str | None:
    """``text`` when it parses back to exactly ``new``, else None (the caller re-renders)."""
    try:
        return text if json.loads(text) == new else None
    except ValueError:
        return None


def splice_install(old_text: str | None, old: dict[str, Any], new: dict[str, Any], style: Style) -> str | None:
    """``old_text`` with ingestd's hooks inserted in place (``ingestd.core.jsonedit``), or None.

    Every byte of the user's text stays where it was; only our members and groups are added (at the
    end of ``hooks``, of an event's list, or a new ``hooks`` member), indented in the file's style.
    None when the change is not a pure insertion the text is
    empty, or the spliced text would not parse back to ``new`` (the caller re-renders instead).
    """
    if not old_text or not old_text.strip():
        return None
    layout = jsonedit.Layout(style.indent, style.key_sep, style.item_sep, style.ascii)
    try:
        root = jsonedit.parse(old_text)
    except ValueError:
        return None
    edits: list[tuple[int, str]] = []
    hooks_span = root.members.get("hooks")
    if hooks_span is None:
        edits.append(jsonedit.insertion(old_text, root, [jsonedit.member("hooks", new["hooks"], layout, 0)], 0, layout))
    else:
        added_events = []
        for ev, groups in new["hooks"].items():
            ev_span = hooks_span.members.get(ev)
            if ev_span is None:
                added_events.append(jsonedit.member(ev, groups, layout, 1))
                continue
            extra = groups[len(old["hooks"][ev]) :]
            if extra:
                pieces = [jsonedit.element(g, layout, 2) for g in extra]
                edits.append(jsonedit.insertion(old_text, ev_span, pieces, 2, layout))
        if added_events:
            edits.append(jsonedit.insertion(old_text, hooks_span, added_events, 1, layout))
    return _parses_back(jsonedit.apply(old_text, edits), new)


def splice_uninstall(old_text: str | None, new: dict[str, Any], is_ours: Callable[[Any], bool]) -> str | None:
    """``old_text`` with ingestd's hooks cut out in place, or None (then the caller re-renders).

    Our hooks (``is_ours``) go with their separators; a matcher group left without hooks goes, an
    event left without groups goes, and ``hooks`` left empty goes, as ``hooksetup.remove_ours``
    decides. The rest of the text is untouched; the result must parse back to ``new``.
    """
    if not old_text or not old_text.strip():
        return None
    try:
        root = jsonedit.parse(old_text)
        doc = json.loads(old_text)
    except ValueError:
        return None
    hooks_span = root.members.get("hooks")
    if hooks_span is None or not isinstance(doc.get("hooks"), dict):
        return None
    ranges: list[tuple[int, int]] = []
    gone_events = []
    for ev, ev_span in hooks_span.members.items():
        groups = doc["hooks"].get(ev)
        if ev_span.kind != "array" or not isinstance(groups, list) or len(groups) != len(ev_span.items):
            continue
        gone_groups = []
        for group, g_span in zip(groups, ev_span.items, strict=True):
            h_span = g_span.members.get("hooks") if g_span.kind == "object" else None
            if not isinstance(group, dict) or h_span is None or not isinstance(group.get("hooks"), list):
                continue
            ours = [s for h, s in zip(group["hooks"], h_span.items, strict=False) if is_ours(h)]
            if not ours:
                continue
            if len(ours) == len(h_span.items):
                gone_groups.append(g_span)
            else:
                ranges += jsonedit.removals(h_span, ours)
        if gone_groups and len(gone_groups) == len(ev_span.items):
            gone_events.append(ev_span)
        elif gone_groups:
            ranges += jsonedit.removals(ev_span, gone_groups)
    if gone_events and len(gone_events) == len(hooks_span.members) and "hooks" not in new:
        ranges += jsonedit.removals(root, [hooks_span])
    elif gone_events:
        ranges += jsonedit.removals(hooks_span, gone_events)
    return _parses_back(jsonedit.remove(old_text, ranges), new)
