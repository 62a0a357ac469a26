"""The reference's JSON examples of ``sessions``, ``cost`` and ``status`` have the keys the commands print.

Was: the ``status --json`` example lacked ``host`` and ``stalls`` and showed schema 7, the sessions
example's unpriced entry lacked ``reasons`` and ``web_search_requests``. Each example is compared
with the real output on the report fixture (``fixtures/reports/fixture.sql``), key by key at every
level; an object holding a ``"..."`` key is abridged and only checked for what it shows.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from tests.report.report_fixture import ROOT, build_fixture_db


def _example(heading: str) -> Any:
    text = (ROOT / "docs" / "reference.md").read_text()
    start = text.index(f"### `ingestd {heading}")
    block = re.search(r"```json\n(.*?)```", text[start:], re.S)
    assert block is not None, heading
    return orjson.loads(block.group(1))


def _differences(shown: Any, real: Any, path: str = "$") -> list[str]:
    """Keys the example lacks or invents, at every level. An empty real object is a map of data
    (``by_reason`` with no reasons), not a shape; list items are matched by ``session_id`` when they have one."""
    if isinstance(shown, dict) and isinstance(real, dict):
        out = []
        lacks, invents = set(real) - set(shown), set(shown) - set(real) - {"..."}
        if lacks and "..." not in shown:
            out.append(f"{path}: missing {sorted(lacks)}")
        if invents and real:
            out.append(f"{path}: not printed {sorted(invents)}")
        for k in set(shown) & set(real):
            out += _differences(shown[k], real[k], f"{path}.{k}")
        return out
    if isinstance(shown, list) and isinstance(real, list) and shown and real:
        first = shown[0]
        same = [r for r in real if isinstance(first, dict) and r.get("session_id") == first.get("session_id")]
        return _differences(first, (same or real)[0], f"{path}[0]")
    return []


@pytest.mark.parametrize(
    ("heading", "args"),
    [
        ("sessions", ["sessions", "--json"]),
        (
            "cost",
            [
                "cost",
                "--json",
                "--by",
                "day",
                "--tz",
                "America/New_York",
                "--since",
                "2025-03-09",
                "--until",
                "2025-03-09",
            ],
        ),
        ("status", ["status", "--json", "--no-stat"]),
    ],
)
def test_the_readme_example_has_the_keys_of_the_real_output(tmp_path: Path, heading: str, args: list[str]) -> None:
    db = build_fixture_db(tmp_path / "ingestd.db")
    res = CliRunner().invoke(cli, [*args, "--db", str(db)], env={"TZ": "UTC"})
    assert res.exit_code == 0, res.output
    shown, real = _example(heading), orjson.loads(res.stdout)
    assert _differences(shown, real) == []
    if heading == "status":  # a fresh database is at the newest migration: the example names it
        assert shown["schema"] == real["schema"]
