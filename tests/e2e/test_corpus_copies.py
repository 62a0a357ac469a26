"""The real corpus copied twice (``COPIES``) with its agent ids unchanged (SPEC §4.2).

Each copy gets its own session ids (every UUID of the copy is rewritten the same way, so the copies
are new sessions of one long archive) and its own message ids (otherwise the copies would be resumed
sessions contesting one billed call, a different rule, SPEC §4.4), but every agent id stays as it
is: ``a2898e3``, ``acompact-…``, the 17-hex ids. Before agents were keyed by ``(session_id, id)``
every copy after the first lost its agents (two copies would show it; it was 20 copies, 300 MB of
log, 80 s of `make test`). Every session's tree must equal the single copy's,
and ``cost --by session`` must sum to the total exactly. Skipped when ``../shared/corpus`` is absent.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import apsw
import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.ingest.backfill import ingest_roots
from ingestd.report.cost import cost_report
from ingestd.report.tree import tree_report
from ingestd.report.window import Window, resolve_zone
from tests.ingest.support import new_db

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "claude-projects"
pytestmark = [
    pytest.mark.skipif(not CORPUS.is_dir(), reason=f"real corpus not found at {CORPUS}"),
    # the module's archive (COPIES copies of the corpus) is built in the first test's setup
    pytest.mark.timeout(900),
]

COPIES = 2  # the first copy and one more: the second lost every agent before
NOW = "2026-12-01T00:00:00.000Z"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
UTC = resolve_zone("UTC", {})


def _uuid(u: str, k: int) -> str:
    """Copy ``k``'s spelling of UUID ``u``: its first group shifted by ``k`` golden-ratio steps (mod 2**32)."""
    return u if k == 0 else f"{(int(u[:8], 16) + k * 0x9E3779B1) % (1 << 32):08x}{u[8:]}"


def _ids() -> set[str]:
    found: set[str] = set()
    for p in CORPUS.rglob("*"):
        found.update(UUID.findall(p.relative_to(CORPUS).as_posix()))
        if p.is_file():
            found.update(UUID.findall(p.read_bytes().decode("utf-8", "replace")))
    return found


IDS = _ids() if CORPUS.is_dir() else set()
BACK = {k: {_uuid(u, k): u for u in IDS} for k in range(COPIES)}


UUID_B = re.compile(UUID.pattern.encode())
FORWARD = {k: {u.encode(): _uuid(u, k).encode() for u in IDS} for k in range(1, COPIES)}


def _copy(src: Path, dst: Path, k: int) -> None:
    fwd = FORWARD.get(k, {})
    for path in sorted(src.rglob("*")):
        if path.is_dir():
            continue
        rel = path.relative_to(src).as_posix()
        out = dst / UUID.sub(lambda m: _uuid(m.group(0), k), rel)
        out.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        if k:
            data = UUID_B.sub(lambda m: fwd[m.group(0)], data).replace(b'"id":"msg_', b'"id":"msg_c%02d_' % k)
        out.write_bytes(data)


def _original(doc: Any, k: int) -> Any:
    """``doc`` with copy ``k``'s session / record / message ids spelled as in the original corpus."""
    text = orjson.dumps(doc).decode()
    text = UUID.sub(lambda m: BACK[k].get(m.group(0), m.group(0)), text)
    return orjson.loads(text.replace(f"msg_c{k:02d}_", "msg_"))


def test_the_copy_rewrite_is_one_to_one() -> None:
    """Copy k never spells an id of the original or of another copy (else copies would merge)."""
    spelled = {_uuid(u, k) for u in IDS for k in range(COPIES)}
    assert len(IDS) > 100 and len(spelled) == len(IDS) * COPIES


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[apsw.Connection, apsw.Connection, Path]:
    """(single copy's db, the copies' db, the copies' db path)."""
    base = tmp_path_factory.mktemp("copies")
    roots = []
    for k in range(COPIES):
        root = base / f"root{k:02d}"
        _copy(CORPUS, root, k)
        roots.append(root)
    single = new_db(base / "single.db")
    ingest_roots(single, [roots[0]], now=NOW)
    many_path = base / "many.db"
    many = new_db(many_path)
    ingest_roots(many, roots, now=NOW)
    return single, many, many_path


def _sessions(conn: apsw.Connection) -> list[str]:
    return [str(r[0]) for r in conn.execute("SELECT id FROM sessions ORDER BY id")]


def test_every_copy_keeps_every_tree(archive: tuple[apsw.Connection, apsw.Connection, Path]) -> None:
    single, many, _ = archive
    originals = _sessions(single)
    assert len(originals) == 21
    assert len(_sessions(many)) == COPIES * len(originals)
    # agent ids are shared across the copies: every agent id of the corpus that no copy renames (a
    # main agent is named by its session id, a ``sidechain-<uuid>`` by one) is in every copy's tree
    per_id = "SELECT id, count(*) FROM agents GROUP BY id"
    once = {str(a): int(n) for a, n in single.execute(per_id) if not UUID.search(str(a))}
    assert len(once) >= 19
    kept = {str(a): int(n) for a, n in many.execute(per_id) if not UUID.search(str(a))}
    assert kept == {a: COPIES * n for a, n in once.items()}
    assert (
        many.execute("SELECT count(*) FROM agents").fetchall()[0][0]
        == COPIES * (single.execute("SELECT count(*) FROM agents").fetchall()[0][0])
    )
    for sid in originals:
        want = tree_report(single, sid)
        for k in range(COPIES):
            assert _original(tree_report(many, _uuid(sid, k)), k) == want, (sid, k)


def test_cost_by_session_sums_exactly(archive: tuple[apsw.Connection, apsw.Connection, Path]) -> None:
    single, many, _ = archive
    one = cost_report(single, by="session", window=Window(None, None), zone=UTC)
    doc = cost_report(many, by="session", window=Window(None, None), zone=UTC)
    assert Decimal(doc["cost_usd"]) == COPIES * Decimal(one["cost_usd"])
    assert doc["tokens"] == COPIES * one["tokens"]
    assert sum(Decimal(r["cost_usd"]) for r in doc["rows"]) == Decimal(doc["cost_usd"])
    assert sum(r["tokens"] for r in doc["rows"]) == doc["tokens"]
    per = {r["session_id"]: (r["cost_usd"], r["tokens"]) for r in one["rows"]}
    got: dict[str, list[tuple[str, int]]] = {}
    for r in doc["rows"]:
        sid = next(BACK[k][r["session_id"]] for k in range(COPIES) if r["session_id"] in BACK[k])
        got.setdefault(sid, []).append((r["cost_usd"], r["tokens"]))
    assert got == {sid: [v] * COPIES for sid, v in per.items()}


@pytest.mark.slow
def test_replay_and_verify_exit_0(archive: tuple[apsw.Connection, apsw.Connection, Path]) -> None:
    _, _, path = archive
    runner = CliRunner()
    for args in (["replay", "--db", str(path)], ["verify", "--db", str(path)]):
        res = runner.invoke(cli, args)
        assert res.exit_code == 0, (args, res.output)
