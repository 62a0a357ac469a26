"""How ingestd writes a file that belongs to the user (Claude Code's ``settings.json``).

- ``detect_style`` / ``render``: the file's layout (indent of spaces or tabs of any width, or one
  line; the space after colons; ASCII escapes; a final newline) is detected and reused, so a
  rewrite in a regular style changes only the lines whose content changes.
- ``write_new`` (``ingestd.files``): a new file with exactly a given mode (a backup keeps the
  original's mode: a 0600 settings file, which may hold secrets in ``env``, must not leave a 0644 copy), never through a
  symlink planted at its name.
- ``splice_install`` / ``splice_uninstall``: ingestd's hooks and ``env`` entries inserted into or
  cut out of the user's text in place (``ingestd.core.jsonedit``), every other byte kept; checked
  by parsing back.
- ``loads``: the text parsed so that writing it back changes nothing the user wrote: every number
  keeps its text (``1e400`` is no ``Infinity``, ``1.50`` stays ``1.50``: ``render`` writes it back as
  it was), and what Claude Code's own parser and ``json.loads`` would read differently is refused
  with its place (``SettingsText``): a key twice in one object (``json.loads`` keeps the last
  silently; a rewrite dropped the first), ``NaN`` / ``Infinity`` (not JSON), a lone surrogate escape
  (``"\\ud800"``: no UTF-8 text can hold it).
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


class SettingsText(ValueError):
    """Settings text ``loads`` refuses: valid for ``json.loads``, but not written back unchanged."""


class _Float(float):
    """A JSON number with a fraction or exponent, and its text (``1e400``: ``inf``, written ``1e400``)."""

    text: str

    def __new__(cls, text: str) -> _Float:
        self = super().__new__(cls, text)
        self.text = text
        return self


class _Int(int):
    """A JSON integer and its text (``-0`` stays ``-0``)."""

    text: str

    def __new__(cls, text: str) -> _Int:
        self = super().__new__(cls, text)
        self.text = text
        return self


def _constant(name: str) -> Any:
    raise SettingsText(f"{name} is not JSON (Claude Code cannot read it)")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise SettingsText(f"the key {json.dumps(k)} appears twice in one object (which one counts is unclear)")
        out[k] = v
    return out


def _surrogate(value: Any) -> str | None:
    """The first string (key or value) in ``value`` holding a lone surrogate, or None."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if any("\ud800" <= c <= "\udfff" for c in v):
                return v
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return None


def loads(text: str) -> Any:
    """``text`` parsed, numbers keeping their text (see module docstring).

    Raises:
        json.JSONDecodeError: not JSON.
        SettingsText: a duplicate key, ``NaN`` / ``Infinity``, or a lone surrogate escape (the message says which).
        RecursionError: nested too deeply.
    """
    doc = json.loads(text, parse_float=_Float, parse_int=_Int, parse_constant=_constant, object_pairs_hook=_pairs)
    bad = _surrogate(doc)
    if bad is not None:
        shown = json.dumps(bad)[:80]
        raise SettingsText(f"the string {shown} holds a lone surrogate escape (half of a character): no UTF-8 text can")
    return doc


def _raw_numbers(value: Any, found: list[str]) -> Any:
    """``value`` with every number whose text ``json.dumps`` would change replaced by a placeholder
    string naming its place in ``found`` (which gets the text)."""
    if isinstance(value, _Float | _Int) and value.text != json.dumps(value, allow_nan=True):
        found.append(value.text)
        return f"\x00ingestd-number-{len(found) - 1}\x00"
    if isinstance(value, dict):
        return {k: _raw_numbers(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_raw_numbers(v, found) for v in value]
    return value


def render(settings: dict[str, Any], style: Style = CLAUDE_STYLE) -> str:
    """Settings laid out in ``style`` (default: as Claude Code writes them), key order kept, numbers
    read by ``loads`` written with their own text.

    Raises:
        ValueError: a float that is not a JSON number (``nan``, ``inf``) not read by ``loads``:
            never written as ``NaN`` / ``Infinity``.
    """
    found: list[str] = []
    doc = _raw_numbers(settings, found)
    out = json.dumps(
        doc, indent=style.indent, separators=(style.item_sep, style.key_sep), ensure_ascii=style.ascii, allow_nan=False
    )
    for i, text in enumerate(found):
        out = out.replace(json.dumps(f"\x00ingestd-number-{i}\x00", ensure_ascii=style.ascii), text, 1)
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
        return text if loads(text) == new else None
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
    if root.kind != "object":
        return None
    edits: list[tuple[int, str]] = []
    at_root: list[str] = []  # new top-level members, in ``new``'s order, appended in one insertion
    env_span = root.members.get("env")
    old_env, new_env = old.get("env"), new.get("env")
    if isinstance(new_env, dict) and new_env != old_env:
        if env_span is None:
            at_root.append(jsonedit.member("env", new_env, layout, 0))
        elif env_span.kind == "object" and isinstance(old_env, dict) and list(new_env)[: len(old_env)] == list(old_env):
            added = [jsonedit.member(k, v, layout, 1) for k, v in new_env.items() if k not in old_env]
            edits.append(jsonedit.insertion(old_text, env_span, added, 1, layout))
        else:
            return None
    hooks_span = root.members.get("hooks")
    if hooks_span is None:
        at_root.append(jsonedit.member("hooks", new["hooks"], layout, 0))
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
    if at_root:
        edits.append(jsonedit.insertion(old_text, root, at_root, 0, layout))
    return _parses_back(jsonedit.apply(old_text, edits), new)


def splice_uninstall(old_text: str | None, new: dict[str, Any], is_ours: Callable[[Any], bool]) -> str | None:
    """``old_text`` with ingestd's hooks and ``env`` entries cut out in place, or None (then the
    caller re-renders).

    Our hooks (``is_ours``) go with their separators; a matcher group left without hooks goes, an
    event left without groups goes, and ``hooks`` left empty goes, as ``hooksetup.remove_ours``
    decides; so do the ``env`` entries ``new`` no longer has (``env`` itself when ``new`` has
    none). The rest of the text is untouched (an install spliced in place and its uninstall give
    the file back byte for byte); the result must parse back to ``new``.
    """
    if not old_text or not old_text.strip():
        return None
    try:
        root = jsonedit.parse(old_text)
        doc = loads(old_text)
    except ValueError:
        return None
    if root.kind != "object" or not isinstance(doc, dict):
        return None
    ranges: list[tuple[int, int]] = []
    gone_at_root: list[jsonedit.Span] = []
    env_span = root.members.get("env")
    if env_span is not None and isinstance(doc.get("env"), dict):
        if "env" not in new:
            gone_at_root.append(env_span)
        elif env_span.kind == "object" and isinstance(new["env"], dict):
            gone_env = [sp for k, sp in env_span.members.items() if k not in new["env"]]
            if gone_env:
                ranges += jsonedit.removals(env_span, gone_env)
    hooks_span = root.members.get("hooks")
    if hooks_span is not None and isinstance(doc.get("hooks"), dict):
        new_hooks = new.get("hooks")
        kept: dict[str, Any] = new_hooks if isinstance(new_hooks, dict) else {}
        gone_events, hook_ranges = _hook_removals(doc["hooks"], hooks_span, is_ours, kept)
        ranges += hook_ranges
        if gone_events and len(gone_events) == len(hooks_span.members) and "hooks" not in new:
            gone_at_root.append(hooks_span)
        elif gone_events:
            ranges += jsonedit.removals(hooks_span, gone_events)
    if gone_at_root:
        ranges += jsonedit.removals(root, gone_at_root)
    if not ranges:
        return None
    return _parses_back(jsonedit.remove(old_text, ranges), new)


def _hook_removals(
    hooks: dict[str, Any], hooks_span: jsonedit.Span, is_ours: Callable[[Any], bool], kept: dict[str, Any]
) -> tuple[list[jsonedit.Span], list[tuple[int, int]]]:
    """The events of ``hooks`` left with no group once ours go, and the ranges that cut our hooks
    and emptied groups out of the events that stay; an event ``kept`` (the new ``hooks``) has
    stays, emptied to its brackets (the empty list the user's file had before install)."""
    ranges: list[tuple[int, int]] = []
    gone_events = []
    for ev, ev_span in hooks_span.members.items():
        groups = hooks.get(ev)
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
        if gone_groups and len(gone_groups) == len(ev_span.items) and ev not in kept:
            gone_events.append(ev_span)
        elif gone_groups:
            ranges += jsonedit.removals(ev_span, gone_groups)
    return gone_events, ranges
