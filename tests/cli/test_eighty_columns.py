"""Every command at ``COLUMNS=80`` on the real corpus: the answer first, no line wider than 80
cells, each row of a list on a line of its own (a long message hangs under its row, indented;
the terminal never wraps one), and ``status`` on one 80x24 screen."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from rich.cells import cell_len

from ingestd.cli import cli
from tests.conftest import CORPUS

PROJECTS = CORPUS / "claude-projects"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A database of the real corpus (read from ``../shared``, never written)."""
    if not PROJECTS.is_dir():
        pytest.skip(f"real corpus not found at {PROJECTS}")
    db = tmp_path_factory.mktemp("eighty") / "real.db"
    r = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(PROJECTS)])
    assert r.exit_code == 0, r.output
    yield db


def run(db: Path, *args: str, code: int = 0) -> str:
    r = CliRunner().invoke(cli, [*args, "--db", str(db)], env={"COLUMNS": "80", "LINES": "24"})
    assert r.exit_code == code, r.output
    lines = r.stdout.splitlines()
    wide = [line for line in lines if cell_len(line) > 80]
    assert not wide, (args, wide)
    return r.stdout


def as_json(db: Path, *args: str) -> Any:
    r = CliRunner().invoke(cli, [*args, "--json", "--db", str(db)])
    return orjson.loads(r.stdout)


def test_status_leads_with_the_answer_on_one_screen(real: Path) -> None:
    text = run(real, "status")
    lines = text.splitlines()
    assert len(lines) <= 23, "status fits 80x24 with the prompt"
    heads = [line.split("  ")[0] for line in lines[:8] if line and not line.startswith(" ")]
    assert heads[:5] == ["ingestd status", "daemon", "last hook", "last transcript", "tail lag"], lines[:8]
    assert lines[2].strip().startswith("fix: ingestd service install"), "the problem's fix under it"
    assert "payload_open_blocks" not in text and "schema_version" not in text, "row counts are --verbose"
    assert "--verbose" in text
    verbose = run(real, "status", "--verbose")
    assert "payload_open_blocks" in verbose and "rows per table" in verbose
    assert as_json(real, "status")["rows"]["payload_open_blocks"] >= 0, "--json keeps the counts"


def test_sessions_rows_are_one_line_each(real: Path) -> None:
    doc = as_json(real, "sessions", "--all")
    text = run(real, "sessions", "--all")
    for r in doc["rows"]:
        assert sum(1 for line in text.splitlines() if r["session_id"][:8] in line) == 1, r["session_id"]
    screen = run(real, "sessions").splitlines()
    assert len(screen) <= 23 and screen[0].startswith("newest "), "the header stays on an 80x24 screen"


def test_tree_of_every_session_fits(real: Path) -> None:
    for r in as_json(real, "sessions", "--all")["rows"]:
        run(real, "tree", r["session_id"])


@pytest.mark.parametrize("by", [None, "model", "session", "project", "agent", "day"])
def test_cost_fits(real: Path, by: str | None) -> None:
    args = ["cost"] if by is None else ["cost", "--by", by]
    doc = as_json(real, *args)
    text = run(real, *args)
    if by == "model":
        for r in doc["rows"]:
            assert sum(1 for line in text.splitlines() if line.startswith(r["model"] + " ")) == 1, r["model"]


@pytest.mark.parametrize("by", ["day,model", "month,model", "model,day"])
def test_cost_by_a_period_and_model_is_one_line_a_row_with_unambiguous_model_names(real: Path, by: str) -> None:
    doc = as_json(real, "cost", "--by", by)
    lines = run(real, "cost", "--by", by).splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("───")) + 1
    body = lines[start : start + len(doc["rows"])]
    assert all(not line.startswith(" ") for line in body), body  # a table, not a block per row
    period = by.replace("model", "").strip(",")
    cells = [line.split()[:2] for line in body]
    shown = [(c[0], c[1]) if by.endswith("model") else (c[1], c[0]) for c in cells]  # (period, model)
    assert len(set(shown)) == len(doc["rows"])  # every row's names tell it apart
    for r, (p, m) in zip(doc["rows"], shown, strict=True):
        assert r[period] == p and m in r["model"]
    assert lines[start + len(doc["rows"]) + 1].startswith("total")


def _marked_rows(text: str, marks: tuple[str, ...]) -> list[str]:
    """The lines that start a row (a mark at column 0); the others hang under one, indented."""
    lines = text.splitlines()
    assert all(line.startswith(marks) or line.startswith(" ") for line in lines if line), lines
    return [line for line in lines if line.startswith(marks)]


def test_verify_is_one_row_per_check(real: Path) -> None:
    doc = as_json(real, "verify")
    rows = _marked_rows(run(real, "verify"), ("ok ", "FAIL"))
    assert [r.split()[1].rstrip(":") for r in rows] == [c["name"] for c in doc["checks"]]


def test_doctor_is_one_row_per_finding(real: Path) -> None:
    r = CliRunner().invoke(cli, ["doctor", "--db", str(real), "--json"])
    doc = orjson.loads(r.stdout)
    text = CliRunner().invoke(cli, ["doctor", "--db", str(real)], env={"COLUMNS": "80"}).stdout
    assert max(cell_len(line) for line in text.splitlines()) <= 80
    rows = _marked_rows(text, ("ok ", "fix ", "note ", "warn"))
    assert len(rows) == len(doc["findings"]) and [x.split()[1] for x in rows] == [f["check"] for f in doc["findings"]]


def test_pricing_list_is_one_row_per_price(real: Path) -> None:
    doc = as_json(real, "pricing", "list")
    text = run(real, "pricing", "list")
    assert sum(1 for line in text.splitlines() if line.startswith("claude-")) == len(doc["rows"])
    assert "web $0.01" in text, "the web-search fee is shown"
    flat = " ".join(text.split())
    assert all(r["source"] in flat for r in doc["rows"]), "every source whole, under the table"


@pytest.mark.parametrize(
    "args",
    [
        ("prune", "--dry-run"),
        ("limits",),
        ("migrate", "--status"),
        ("replay",),
    ],
)
def test_the_other_commands_fit(real: Path, args: tuple[str, ...]) -> None:
    run(real, *args)
