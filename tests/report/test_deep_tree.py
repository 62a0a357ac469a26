"""A chain of agents 2000 deep (SPEC §4.3: depth unbounded) builds, renders and serialises.

Regression: ``ingestd tree`` and ``/api/sessions/{id}/tree`` crashed with RecursionError
on a chain ~330 deep (``--json``: orjson's "Recursion limit reached" from ~130), and a rendered
chain of 200 shrank every label to one character a line.
"""

from __future__ import annotations

import io
import json
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from ingestd import deepjson
from ingestd.cli import cli
from ingestd.commands._common import write_all
from ingestd.http.api import add_api_routes
from ingestd.report.tree import tree_report
from ingestd.store.connection import connect

DEPTH = 2000
SID = "12121212-0000-4000-8000-000000002000"


def _spawn(agent: str | None, child: str, i: int) -> str:
    tu = f"toolu_{i:06d}"
    a: dict[str, Any] = {
        "type": "assistant", "sessionId": SID, "uuid": f"ua{i}", "isSidechain": agent is not None, "cwd": "/c",
        "timestamp": "2026-11-30T10:00:00.000Z", "requestId": f"rq{i}",
        "message": {
            "id": f"msg_{i}", "model": "claude-sonnet-4-5-20250929", "role": "assistant",
            "content": [{"type": "tool_use", "id": tu, "name": "Task",
                         "input": {"description": f"level {i}", "subagent_type": "general-purpose", "prompt": "go"}}],
            "usage": {"input_tokens": 1, "output_tokens": 1},
        },
    }  # fmt: skip
    u: dict[str, Any] = {
        "type": "user", "sessionId": SID, "uuid": f"uu{i}", "isSidechain": agent is not None, "cwd": "/c",
        "timestamp": "2026-11-30T10:00:01.000Z",
        "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tu, "content": "done"}]},
        "toolUseResult": {"status": "completed", "agentId": child, "content": [{"type": "text", "text": "ok"}]},
    }  # fmt: skip
    if agent:
        a["agentId"] = u["agentId"] = agent
    return json.dumps(a) + "\n" + json.dumps(u) + "\n"


def make_chain(root: Path, n: int) -> Path:
    """A session whose main agent spawns a0, which spawns a1, ... a(n-1): a chain n agents deep."""
    base = root / "-tmp-chain"
    sub = base / SID / "subagents"
    sub.mkdir(parents=True)
    ids = [f"a{i:06x}" for i in range(n)]
    (base / f"{SID}.jsonl").write_text(_spawn(None, ids[0], 0))
    for i, aid in enumerate(ids[:-1]):
        (sub / f"agent-{aid}.jsonl").write_text(_spawn(aid, ids[i + 1], i + 1))
    leaf = {"type": "user", "sessionId": SID, "agentId": ids[-1], "uuid": "last", "isSidechain": True, "cwd": "/c",
            "timestamp": "2026-11-30T10:00:02.000Z", "message": {"role": "user", "content": "leaf"}}  # fmt: skip
    (sub / f"agent-{ids[-1]}.jsonl").write_text(json.dumps(leaf) + "\n")
    return root


@pytest.fixture(scope="module")
def chain_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("chain")
    projects = make_chain(tmp / "projects", DEPTH)
    db = tmp / "c.db"
    r = CliRunner().invoke(cli, ["ingest", "--projects", str(projects), "--db", str(db)])
    assert r.exit_code == 0, r.output
    return db


def test_the_tree_of_a_2000_deep_chain_is_built(chain_db: Path) -> None:
    doc = tree_report(connect(chain_db, readonly=True), SID)
    node, depth = doc["tree"], 0
    while node["children"]:
        assert node["subtree"]["tokens"] == 2 * (DEPTH - depth)  # 2 tokens an agent but the leaf
        (node,) = node["children"]
        depth += 1
    assert (depth, node["depth"], node["agent_id"]) == (DEPTH, DEPTH, f"a{DEPTH - 1:06x}")
    assert doc["orphans"] == [] and doc["agents"] == DEPTH + 1


def test_tree_json_of_a_2000_deep_chain_is_the_whole_tree(chain_db: Path) -> None:
    r = CliRunner().invoke(cli, ["tree", SID[:8], "--db", str(chain_db), "--json"])
    assert r.exit_code == 0, r.output
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)  # only for the standard parser reading the answer back
    try:
        doc = json.loads(r.output)
    finally:
        sys.setrecursionlimit(old)
    node, depth = doc["tree"], 0
    while node["children"]:
        (node,) = node["children"]
        depth += 1
    assert (depth, node["agent_id"]) == (DEPTH, f"a{DEPTH - 1:06x}")
    want = tree_report(connect(chain_db, readonly=True), SID)
    assert r.output.encode() == deepjson.dumps(want, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"
    # Regression: two spaces a level made this 491 MB (1.76 GB peak RSS); now ~10 MB
    assert len(r.output) < 20_000_000
    assert max(len(line) - len(line.lstrip(" ")) for line in r.output.splitlines()) == 2 * deepjson.MAX_INDENT_LEVELS


def test_tree_render_of_a_2000_deep_chain_keeps_labels_readable(chain_db: Path) -> None:
    r = CliRunner().invoke(cli, ["tree", SID[:8], "--db", str(chain_db)], terminal_width=80)
    assert r.exit_code == 0, r.output
    assert f"depth {DEPTH}, under a0007ce" in r.output  # the deepest agent, listed flat, says where it sits
    assert all(len(line) <= 80 for line in r.output.splitlines())
    assert "“level 1999”" in r.output  # whole phrases, not one character a line


async def test_api_tree_of_a_2000_deep_chain(aiohttp_client: Any, chain_db: Path) -> None:
    app = web.Application()
    add_api_routes(app, db_path=chain_db)
    client = await aiohttp_client(app)
    resp = await client.get(f"/api/sessions/{SID}/tree")
    assert resp.status == 200
    body = await resp.read()
    assert body == deepjson.dumps(tree_report(connect(chain_db, readonly=True), SID))


def test_deep_json_writes_the_bytes_orjson_writes() -> None:
    doc = {"a": [1, 2, {"b": None, "c": [], "d": {}, "e": 'x\u00e9"\u2028'}], "f": 1.5, "g": True, "h": [[[]]]}
    for option in (0, orjson.OPT_INDENT_2, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS):
        assert b"".join(deepjson._deep_chunks(doc, option)) == orjson.dumps(doc, option=option)
    deep: dict[str, Any] = {"children": []}
    node = deep
    for _ in range(300):
        node["children"].append({"children": []})
        node = node["children"][0]
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(deep)
    assert deepjson.dumps(deep).count(b"children") == 301


def _deep_doc(depth: int) -> dict[str, Any]:
    doc: dict[str, Any] = {"children": []}
    node = doc
    for i in range(depth):
        child: dict[str, Any] = {f"k{j}": j * i for j in range(20)} | {"children": []}
        node["children"].append(child)
        node = child
    return doc


def test_deep_json_memory_is_linear_in_the_output() -> None:
    """Regression: each scalar's orjson buffer (4 KiB) was kept until the join."""
    doc = _deep_doc(2000)
    tracemalloc.start()
    try:
        size = sum(len(chunk) for chunk in deepjson.chunks(doc, orjson.OPT_INDENT_2))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert size < 5_000_000
    assert peak < 2 * deepjson.CHUNK_BYTES + 1_000_000  # main: ~170 MB


def test_deep_json_chunks_join_to_dumps() -> None:
    doc = _deep_doc(400)
    pieces = list(deepjson.chunks(doc, orjson.OPT_INDENT_2))
    assert len(pieces) > 1 and all(len(p) < 2 * deepjson.CHUNK_BYTES for p in pieces)
    assert json.loads(b"".join(pieces)) == doc  # (dumps is this join: comparing with it proves nothing)


class _Short(io.RawIOBase):
    """A stream taking at most ``most`` bytes a write (0: none at all)."""

    def __init__(self, most: int) -> None:
        self.most, self.got = most, bytearray()

    def writable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        n = min(len(b), self.most)
        self.got += bytes(b[:n])
        return n


def test_write_all_writes_what_a_short_write_left() -> None:
    out = _Short(1000)
    write_all(out, bytes(range(256)) * 40)
    assert out.got == bytes(range(256)) * 40


def test_write_all_refuses_a_stream_taking_nothing() -> None:
    with pytest.raises(OSError, match="accepted none"):
        write_all(_Short(0), b"{}")
