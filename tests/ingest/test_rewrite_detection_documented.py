"""What docs/reference.md says about rewritten transcripts is exactly what ``ingest`` detects.

Regression: the docs said "a truncated or rewritten file is re-read as a new generation", but a
rewrite is seen only when the file shrank below the committed offset or the ``HEAD_BYTES`` bytes
just before it changed. They now say that, and names what is missed; this pins both.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.ingest.readfile import HEAD_BYTES

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "fixtures" / "projects" / "-home-u-proj" / "44444444-4444-4444-8444-444444444444.jsonl"


def ingest(db: Path, projects: Path) -> dict[str, int]:
    r = CliRunner().invoke(cli, ["ingest", "--db", str(db), "--projects", str(projects), "--json"])
    assert r.exit_code == 0, r.output
    doc: dict[str, int] = json.loads(r.stdout)
    return doc


def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    projects = tmp_path / "projects"
    (projects / "-p").mkdir(parents=True)
    f = projects / "-p" / SOURCE.name
    shutil.copyfile(SOURCE, f)
    db = tmp_path / "x.db"
    ingest(db, projects)
    return db, projects, f


def bump(f: Path) -> None:
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))


def test_the_readme_states_the_rule_with_the_code_s_window() -> None:
    text = " ".join((ROOT / "docs" / "reference.md").read_text().split())
    assert f"or the {HEAD_BYTES} bytes just before that offset are not what was read there" in text
    assert "a truncated or rewritten file is re-read as a new generation" not in text


def test_a_shorter_file_is_a_new_generation(tmp_path: Path) -> None:
    db, projects, f = setup(tmp_path)
    data = f.read_bytes()
    f.write_bytes(data[: data.index(b"\n") + 1])
    assert ingest(db, projects)["resets"] == 1


def test_a_change_in_the_last_head_bytes_is_a_new_generation(tmp_path: Path) -> None:
    db, projects, f = setup(tmp_path)
    data = bytearray(f.read_bytes())
    data[-2] = ord(" ") if data[-2] != ord(" ") else ord("\t")  # inside the last line, before its newline
    f.write_bytes(bytes(data))
    bump(f)
    assert ingest(db, projects)["resets"] == 1


def test_an_edit_further_back_that_keeps_the_length_is_not_seen(tmp_path: Path) -> None:
    # the limit the reference names: only the last HEAD_BYTES before the offset are compared
    db, projects, f = setup(tmp_path)
    data = bytearray(f.read_bytes())
    assert len(data) > 2 * HEAD_BYTES
    i = data.index(b'"', 0)  # a byte near the start, far before the offset
    data[i] = ord("'")
    f.write_bytes(bytes(data))
    bump(f)
    assert ingest(db, projects)["resets"] == 0
