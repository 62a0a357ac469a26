"""``ingestd export``: transcripts written back from the log, byte for byte, in Claude Code's layout.

Every transcript ingestd read is in the log line by line at its byte offset (``events_raw``
rows of source ``jsonl``, ``origin`` its path relative to the projects root) and every
``.meta.json`` sidecar as one row of the whole file (``event_type`` ``meta``). Export writes
each origin's current generation (the highest ``origin_gen``: a file rewritten in place starts a
new one) back to ``<dest>/<origin>``: lines through ``core.reassemble`` (offsets give back the
terminators and blank lines), a sidecar as its newest row. So the tree is the projects tree
Claude Code wrote (``<slug>/<session>.jsonl``, ``<slug>/<session>/subagents/agent-<id>.jsonl``
and ``.meta.json``, flat ``agent-*.jsonl``), and ``ingestd ingest --projects <dest>`` reads it
as it read the original (the same offsets and bytes: the same keys).

Never overwrites a different file: the whole plan is checked first, and a destination file whose
bytes differ stops the export before anything is written (``InputError`` naming it). A file
with the same bytes is left as it is (``unchanged``). New files are 0600 in 0700 directories
(transcripts are private).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ingestd import files
from ingestd.core.oversized import OVERSIZED
from ingestd.core.reassemble import Piece, Rebuilt, reassemble
from ingestd.core.records import META
from ingestd.errors import InputError
from ingestd.store.connection import Db, storage_errors
from ingestd.store.payload import decode as decode_payload


@dataclass(frozen=True, slots=True)
class Planned:
    """One file of an export.

    Attributes:
        origin: str, its path relative to the projects root (``events_raw.origin``).
        rebuilt: Rebuilt, its bytes or why they cannot be put back.
        state: str, ``new`` (to write), ``unchanged`` (the destination holds these bytes) or
            ``skipped`` (``rebuilt.problem`` says why).
    """

    origin: str
    rebuilt: Rebuilt
    state: str


@dataclass
class Summary:
    """What an export did (``to_json`` is ``export --json``).

    Attributes:
        dest: Path. files: list[Planned], by origin. written: int, files written.
        bytes_written: int, bytes of the files written.
    """

    dest: Path
    files: list[Planned] = field(default_factory=list)
    written: int = 0
    bytes_written: int = 0

    @property
    def skipped(self) -> list[Planned]:
        return [f for f in self.files if f.state == "skipped"]

    def to_json(self) -> dict[str, Any]:
        """``{dest, files, written, unchanged, bytes_written, blank_lines, skipped: [{origin, reason}]}``."""
        return {
            "dest": str(self.dest),
            "files": len(self.files),
            "written": self.written,
            "unchanged": sum(1 for f in self.files if f.state == "unchanged"),
            "bytes_written": self.bytes_written,
            "blank_lines": sum(f.rebuilt.blank_lines for f in self.files),
            "skipped": [{"origin": f.origin, "reason": f.rebuilt.problem} for f in self.skipped],
        }


def origins_of_sessions(conn: Db, session_ids: Iterable[str]) -> set[str]:
    """The transcripts holding any log row of these sessions. Read-only."""
    out: set[str] = set()
    with storage_errors():
        for sid in session_ids:
            out.update(
                str(r[0])
                for r in conn.execute(
                    "SELECT DISTINCT origin FROM events_raw WHERE session_id = ? AND source = 'jsonl'", (sid,)
                )
            )
    return out


def _safe_origin(origin: str) -> PurePosixPath | None:
    """``origin`` as a relative path inside the destination, or None (absolute, ``..``, empty)."""
    p = PurePosixPath(origin)
    if not origin or p.is_absolute() or any(part in ("..", "") for part in p.parts) or "\\" in origin:
        return None
    return p


def rebuild(conn: Db, origins: set[str] | None) -> dict[str, Rebuilt]:
    """Each origin's current generation put back together (``origins`` None: every transcript in
    the log). One pass over the log's transcript rows; holds the selected files' bytes. Read-only."""
    gens: dict[str, int] = {}
    pieces: dict[str, dict[int, Piece]] = {}
    meta: dict[str, bytes] = {}
    with storage_errors():
        rows = conn.execute(
            "SELECT origin, origin_gen, origin_offset, event_type, codec, payload FROM events_raw"
            " WHERE source = 'jsonl' ORDER BY id"
        )
        for origin, gen, offset, event_type, codec, payload in rows:
            if origins is not None and origin not in origins:
                continue
            if gen > gens.get(origin, -1):
                gens[origin] = gen
                pieces[origin] = {}
                meta.pop(origin, None)
            elif gen < gens[origin]:
                continue
            data = decode_payload(conn, codec, payload)
            if event_type == META:
                meta[origin] = data
            else:
                pieces[origin][int(offset)] = Piece(int(offset), data, event_type != OVERSIZED)
        ends = _read_to(conn, gens)
    out = {o: Rebuilt(meta[o], None, 0, 1) for o in meta}
    out.update({o: reassemble(list(p.values()), ends.get(o)) for o, p in pieces.items() if o not in meta})
    return out


def _read_to(conn: Db, gens: dict[str, int]) -> dict[str, int]:
    """The byte offset each origin's current generation was read to, from its tail checkpoint (one
    per origin: an origin two roots name alike is left out). Read-only."""
    got: dict[str, set[int]] = {}
    for origin, gen, offset in conn.execute("SELECT origin, origin_gen, committed_offset FROM ingest_checkpoints"):
        if gens.get(origin) == gen:
            got.setdefault(origin, set()).add(int(offset))
    return {o: next(iter(v)) for o, v in got.items() if len(v) == 1}


def _outside_folder(dest: Path, rel: PurePosixPath) -> Path | None:
    """The first folder on the way from ``dest`` to ``dest / rel``'s file that exists as something
    other than a real directory (a symlink, which would take the file out of the tree, or a file),
    or None. Reads the destination."""
    at = dest
    for part in rel.parts[:-1]:
        at = at / part
        if not os.path.lexists(at):
            return None
        if at.is_symlink() or not at.is_dir():
            return at
    return None


def plan(rebuilt: dict[str, Rebuilt], dest: Path) -> list[Planned]:
    """What to do with each file under ``dest``, by origin. Reads the destination.

    Raises:
        InputError: a destination file exists with other bytes (or is not a file), naming it;
            a folder on its way is a symlink or not a folder; an origin that is not a relative
            path inside the tree.
    """
    out: list[Planned] = []
    for origin in sorted(rebuilt):
        r = rebuilt[origin]
        rel = _safe_origin(origin)
        if rel is None:
            raise InputError(f"the log's transcript path {origin!r} is not a path inside a projects tree")
        if r.data is None:
            out.append(Planned(origin, r, "skipped"))
            continue
        target = dest / rel
        odd = _outside_folder(dest, rel)
        if odd is not None:
            raise InputError(
                f"{odd} is {'a symlink' if odd.is_symlink() else 'not a folder'}: export writes only inside"
                " the tree it was given; export into an empty directory, or move that aside; nothing was written",
                path=str(odd),
            )
        if os.path.lexists(target):
            if not target.is_file() or target.is_symlink() or target.read_bytes() != r.data:
                raise InputError(
                    f"{target} exists with other content: export never overwrites a file; "
                    "export into an empty directory, or move that file aside; nothing was written",
                    path=str(target),
                )
            out.append(Planned(origin, r, "unchanged"))
            continue
        out.append(Planned(origin, r, "new"))
    return out


def _put_new(target: Path, data: bytes) -> bool:
    """Write ``target`` whole (a synced temporary file beside it, then hard-linked into place), only
    if nothing is there: False when something is (a file made after ``plan`` looked)."""
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        files.write_new(tmp, data, 0o600)
        os.link(tmp, target)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def export(conn: Db, dest: Path, origins: set[str] | None) -> Summary:
    """Write the selected transcripts under ``dest`` (``plan`` first: nothing is written when it
    refuses). Reads the log; writes files, each atomically (0600, directories 0700).

    Raises:
        InputError: as ``plan``.
    """
    planned = plan(rebuild(conn, origins), dest)
    summary = Summary(dest, planned)
    for p in planned:
        if p.state != "new" or p.rebuilt.data is None:
            continue
        rel = PurePosixPath(p.origin)
        target = dest / rel
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        odd = _outside_folder(dest, rel)
        if odd is not None:  # made while the export ran
            raise InputError(
                f"{odd} became a symlink or a file during the export; {summary.written} files were written"
            )
        if not _put_new(target, p.rebuilt.data):
            if target.is_file() and not target.is_symlink() and target.read_bytes() == p.rebuilt.data:
                continue
            raise InputError(
                f"{target} was made by another program during the export: export never overwrites a file;"
                f" {summary.written} files were written",
                path=str(target),
            )
        summary.written += 1
        summary.bytes_written += len(p.rebuilt.data)
    return summary
