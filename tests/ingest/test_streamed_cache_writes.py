"""Streamed parts of one message: cache writes are merged from the raw fields (SPEC §4.4), so the
buckets never count more than was billed (a regression: an aggregate-only part and a part with the
5m/1h breakdown counted 5m 100 + 1h 40 = 140 for 100 billed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.store.connection import connect
from tests.usage_rows import BY_BUCKET

SID = "cccccccc-0000-4000-8000-000000000001"


def part(i: int, usage: dict[str, Any]) -> str:
    rec = {
        "type": "assistant",
        "sessionId": SID,
        "uuid": f"u{i}",
        "cwd": "/tmp/s",
        "timestamp": f"2026-02-01T10:00:0{i}.000Z",
        "requestId": "rq1",
        "message": {"id": "msg_s", "model": "claude-sonnet-4-5-20250929", "role": "assistant", "usage": usage},
    }
    return json.dumps(rec) + "\n"


def buckets(tmp_path: Path, parts: list[dict[str, Any]]) -> dict[str, int]:
    d = tmp_path / "p" / "-tmp-s"
    d.mkdir(parents=True)
    (d / f"{SID}.jsonl").write_text("".join(part(i, u) for i, u in enumerate(parts)))
    db = tmp_path / "x.db"
    res = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    return dict(connect(db).execute(f"SELECT bucket, tokens FROM {BY_BUCKET} WHERE message_id = 'msg_s'").fetchall())


AGG_ONLY = {"input_tokens": 1, "output_tokens": 1, "cache_creation_input_tokens": 100}
SPLIT = {
    "input_tokens": 1,
    "output_tokens": 9,
    "cache_creation_input_tokens": 100,
    "cache_creation": {"ephemeral_5m_input_tokens": 60, "ephemeral_1h_input_tokens": 40},
}
SPLIT_NO_AGG = {k: v for k, v in SPLIT.items() if k != "cache_creation_input_tokens"}


@pytest.mark.parametrize("later", [SPLIT, SPLIT_NO_AGG], ids=["with-aggregate", "breakdown-only"])
@pytest.mark.parametrize("first_agg", [True, False], ids=["aggregate-first", "breakdown-first"])
def test_cache_writes_of_streamed_parts_never_exceed_the_billed_total(
    tmp_path: Path, later: dict[str, Any], first_agg: bool
) -> None:
    parts = [AGG_ONLY, later] if first_agg else [later, AGG_ONLY]
    got = buckets(tmp_path, parts)
    assert (got["cache_write_5m"], got["cache_write_1h"]) == (60, 40)
    assert got["output"] == 9


def test_a_larger_aggregate_on_another_part_still_counts_in_5m(tmp_path: Path) -> None:
    # what the breakdown does not explain of the largest aggregate is 5-minute writes, as for one part
    got = buckets(tmp_path, [SPLIT, {**AGG_ONLY, "cache_creation_input_tokens": 130}])
    assert (got["cache_write_5m"], got["cache_write_1h"]) == (90, 40)
