"""The live view's tree code (``session.js``: ``treeItem``, ``walk``) handles a chain of agents
thousands deep without recursion, keeping the DOM shape and order (run with node when present)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

JS = Path(__file__).resolve().parents[2] / "ingestd" / "http" / "static" / "session.js"


def li(name: str, *kids: dict[str, object]) -> dict[str, object]:
    """The ``h`` stand-in's shape of ``treeItem``'s ``<li>`` for agent ``name`` with ``kids``."""
    if not kids:
        return {"t": "li", "c": [name]}
    return {"t": "li", "c": [{"t": "details", "c": [{"t": "summary", "c": [name]}, {"t": "ul", "c": list(kids)}]}]}


def test_tree_js_is_depth_safe_and_keeps_its_shape() -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node")
    src = JS.read_text()
    funcs = "\n".join(re.search(rf"^function {n}\(.*?^}}", src, re.S | re.M).group(0) for n in ("treeItem", "walk"))  # type: ignore[union-attr]
    script = (
        "const h = (t, a, ...c) => ({ t, c: c.flat().filter((x) => x != null) });\n"
        "const agentCard = (n) => n.agent_id;\n" + funcs + "\n"
        "let root = { agent_id: 'r', children: [] }, cur = root;\n"
        "for (let i = 0; i < 20000; i++) {\n"
        "  const n = { agent_id: 'a' + i, children: [] }; cur.children.push(n); cur = n;\n"
        "}\n"
        "if (walk(root, new Map()).size !== 20001 || treeItem(root).t !== 'li') throw new Error('deep');\n"
        "const s = { agent_id: 'm', children: [{ agent_id: 'x', children: [{ agent_id: 'y', children: [] }] },"
        " { agent_id: 'z', children: [] }] };\n"
        "console.log(JSON.stringify(treeItem(s)) + ' ' + [...walk(s, new Map()).keys()].join(','));\n"
    )
    r = subprocess.run([node, "-e", script], capture_output=True, text=True, timeout=60, check=True)

    shape, order = r.stdout.strip().rsplit(" ", 1)
    assert json.loads(shape) == li("m", li("x", li("y")), li("z"))
    assert order == "m,x,y,z"
