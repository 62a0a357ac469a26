"""What a transcript record gives the full-text index (SPEC §17 search): its search documents. Pure.

A document is one piece of text a user would look for, with where it came from:

- ``prompt``: a user record's own text (a string ``content`` or its ``text`` blocks); never an
  injected record (``isMeta``) nor a tool result;
- ``summary``: the compaction summary a user record carries (``isCompactSummary``);
- ``text``: an assistant record's ``text`` blocks (thinking is not indexed);
- ``tool``: a ``tool_use`` block's input: the tool's name, then each string value of its input
  (nested ones too: an MCP tool's arguments), key by key (``command``, ``file_path``, ``pattern``,
  ``url``, ``description``, ``prompt``, ...), each value cut to ``MAX_VALUE_CHARS``;
- ``title``: a ``custom-title`` / ``ai-title`` record's title, a ``summary`` record's summary.

Every document's text is at most ``MAX_DOC_CHARS`` characters (its head: the index is for finding,
the log keeps every byte) in the form every store can hold (``storable`` without its length bound).
A document's key is its log row and its place in the record (``seq``); ``doc_id`` packs both into
one integer (``raw_event_id * SEQ_SPAN + seq``), the full-text index's rowid, so a rebuild gives
every document the same id. Hook deliveries are not indexed: the transcripts hold the same prompts
and tool inputs, for history too.
"""

from __future__ import annotations

from typing import Any

from ingestd.core.records import LogRow, path_info
from ingestd.core.rows import SearchDocRow
from ingestd.core.storable import storable
from ingestd.core.validate import valid_time

KINDS = ("prompt", "text", "tool", "title", "summary")
SEQ_SPAN = 256  # documents per log row at most (content blocks past it are not indexed)
MAX_DOC_CHARS = 4096
MAX_VALUE_CHARS = 1024
_TITLE_FIELDS = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _strings(value: Any, key: str, out: list[str], depth: int = 0) -> None:
    """Append ``key: value`` for every non-empty string inside ``value`` (dicts and lists walked,
    at most 8 levels deep)."""
    if depth > 8:
        return
    if isinstance(value, str):
        if value.strip():
            out.append(f"{key}: {value[:MAX_VALUE_CHARS]}" if key else value[:MAX_VALUE_CHARS])
    elif isinstance(value, dict):
        for k, v in value.items():
            _strings(v, str(k), out, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _strings(v, key, out, depth + 1)


def tool_text(name: Any, tool_input: Any) -> str:
    """The indexed text of one tool call: ``name`` then ``key: value`` per string of its input."""
    parts: list[str] = [name] if isinstance(name, str) and name else []
    _strings(tool_input, "", parts)
    return "\n".join(parts)


def _doc(
    row: LogRow,
    seq: int,
    session_id: str,
    agent_id: str | None,
    kind: str,
    at: str | None,
    label: str | None,
    uuid: str | None,
    text: str,
) -> SearchDocRow:
    body = storable(text[:MAX_DOC_CHARS], limit=None)
    return SearchDocRow(
        row.id * SEQ_SPAN + seq,
        row.id,
        seq,
        session_id,
        agent_id,
        kind,
        at,
        None if label is None else storable(label),
        None if uuid is None else storable(uuid),
        body,
    )


def docs(row: LogRow, obj: dict[str, Any], session_id: str) -> list[SearchDocRow]:
    """The search documents of one transcript record.

    Args:
        row: its log row (source ``jsonl``). obj: the decoded record. session_id: the session it
            was folded into.

    Returns:
        The record's documents in ``seq`` order (empty for records with no text of their own:
        tool results, progress copies, system records, injected context).
    """
    kind = obj.get("type")
    field = _TITLE_FIELDS.get(kind) if isinstance(kind, str) else None
    if field is not None:
        v = obj.get(field)
        return (
            [_doc(row, 0, session_id, None, "title", None, kind, None, v)] if isinstance(v, str) and v.strip() else []
        )
    if kind not in ("user", "assistant"):
        return []
    msg = obj.get("message")
    if not isinstance(msg, dict) or obj.get("isMeta") is True:
        return []
    aid = obj.get("agentId")
    agent = aid if isinstance(aid, str) and aid else path_info(row.origin).agent_id
    at = valid_time(obj.get("timestamp"))
    u = obj.get("uuid")
    uuid = u if isinstance(u, str) and u else None
    out: list[SearchDocRow] = []
    for seq, b in enumerate(_blocks(msg.get("content"))[:SEQ_SPAN]):
        if not isinstance(b, dict):
            continue
        t = b.get("type")
        if t == "text" and isinstance(b.get("text"), str) and b["text"].strip():
            summary = obj.get("isCompactSummary") is True
            dk = "text" if kind == "assistant" else "summary" if summary else "prompt"
            out.append(_doc(row, seq, session_id, agent, dk, at, None, uuid, b["text"]))
        elif t == "tool_use" and kind == "assistant":
            name = b.get("name")
            text = tool_text(name, b.get("input"))
            if text:
                label = name if isinstance(name, str) and name else None
                out.append(_doc(row, seq, session_id, agent, "tool", at, label, uuid, text))
    return out
