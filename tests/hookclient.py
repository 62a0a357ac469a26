"""What a real hook client sends: Claude Code's ``type: "http"`` hooks and ``ingestd.forward``.

Both POST ``Content-Type: application/json`` with ``Host: 127.0.0.1:<port>`` and no ``Origin``
(FORMATS.md §7.3; ``ingestd/forward.py``). Tests that post hook bodies use these headers, and
the corpus's real hook bodies come from ``corpus_hook_bodies``.
"""

from __future__ import annotations

from pathlib import Path

JSON_HEADERS = {"Content-Type": "application/json"}


def corpus_hook_bodies(corpus: Path, per_file: int = 3) -> list[tuple[str, bytes]]:
    """``(source/Event, body)`` for the first ``per_file`` lines of every ``corpus/hooks/*/*.jsonl``."""
    out = []
    for f in sorted((corpus / "hooks").glob("*/*.jsonl")):
        lines = [ln for ln in f.read_bytes().splitlines() if ln.strip()]
        out += [(f"{f.parent.name}/{f.stem}", ln) for ln in lines[:per_file]]
    return out
