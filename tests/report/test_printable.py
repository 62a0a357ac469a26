"""Text from transcripts never drives the terminal: control characters and bidi overrides in titles,
project paths, tool names and model ids are spelt out on the terminal and kept exactly in --json."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.report.printable import printable, printable_text

SID = "e5c00000-0000-4000-8000-000000000000"
TITLE = "Title \x1b[31mRED\x1b[0m\rOVERWRITE\u202eRTL"
CWD = "/w/\x1b]0;PWNED\x07\x1b[2Jp"
TOOL = "Bash\x1b[5mblink"
MODEL = "claude-\x1b[2Jx"


def test_printable_spells_out_controls_and_bidi_only() -> None:
    assert printable_text(TITLE) == "Title \\x1b[31mRED\\x1b[0m\\x0dOVERWRITE\\u202eRTL"
    assert printable_text("plain é 漢字 🎉") == "plain é 漢字 🎉"
    assert printable({"a\x07": ["\x1b", 1, None]}) == {"a\\x07": ["\\x1b", 1, None]}
    for ch in "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069":
        # a bidi control alone (no control character beside it) is spelt out too
        assert printable_text(f"a{ch}b") == f"a\\u{ord(ch):04x}b"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("projects")
    proj = root / "-w-p"
    proj.mkdir()
    base = {"sessionId": SID, "cwd": CWD, "version": "2.1.42"}
    recs = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-01T10:00:00.000Z",
         "message": {"role": "user", "content": "go"}},
        {**base, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-01T10:00:01.000Z",
         "message": {"id": "msg_e1", "model": MODEL, "role": "assistant",
                     "content": [{"type": "tool_use", "id": "toolu_e1", "name": TOOL, "input": {}}],
                     "usage": {"input_tokens": 3, "output_tokens": 4}}},
        {"type": "custom-title", "customTitle": TITLE, "sessionId": SID},
    ]  # fmt: skip
    (proj / f"{SID}.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in recs))
    path = tmp_path_factory.mktemp("db") / "e.db"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(path), "--projects", str(root)])
    assert r.exit_code == 0, r.output
    return path


@pytest.mark.parametrize(
    "args",
    [["sessions"], ["tree", SID[:8]], ["cost", "--by", "project"], ["cost", "--by", "model"], ["status", "--no-stat"]],
)
def test_the_terminal_gets_no_control_characters(db: Path, args: list[str]) -> None:
    r = CliRunner().invoke(cli, [*args, "--db", str(db)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out and "\u202e" not in out
    assert "\\x1b" in out or args[0] == "status"


def test_json_keeps_the_exact_text(db: Path) -> None:
    r = CliRunner().invoke(cli, ["sessions", "--db", str(db), "--json"])
    [row] = orjson.loads(r.stdout)["rows"]
    assert row["title"] == TITLE and row["project_path"] == CWD
