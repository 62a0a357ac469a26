"""``python -m ingestd.demo`` exits non-zero when a step fails, so ``make demo`` can fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ingestd import demo

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "projects"


def test_every_step_succeeds_on_the_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([str(FIXTURES)]) == 0
    out, err = capsys.readouterr()
    assert "sessions 4" in out and "== sessions" in out and "== cost" in out
    # the busiest session's tree is shown (the fixtures' spawning session has the edges)
    assert "== tree " in out and "demo:" not in err


def test_a_tree_without_sessions_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([str(tmp_path)]) == 1
    assert "demo: failed: ingest (no session found), tree (no session has agents)" in capsys.readouterr().err


def test_a_missing_corpus_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main([str(tmp_path / "nope")]) == 2
    out, err = capsys.readouterr()
    assert err == f"demo: no corpus at {tmp_path / 'nope'}\n" and out == ""  # said, and nothing ran


def test_a_failing_ingest_fails_with_its_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = Path(os.environ["INGESTD_CONFIG"])  # the file the autouse fixture points INGESTD_CONFIG at
    config.write_text('retention_days = "x"\n')
    assert demo.main([str(FIXTURES)]) == 1
    err = capsys.readouterr().err
    assert "demo: ingest failed: unknown setting(s) in the config file: retention_days" in err
    assert "Traceback" not in err


def test_a_failing_report_fails_the_demo_after_the_others_ran(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = demo._run

    def cost_misused(args: list[str]) -> bool:
        # the real command, given an option it does not have: a real click usage error
        return real([*args, "--no-such-option"] if args[0] == "cost" else args)

    monkeypatch.setattr(demo, "_run", cost_misused)
    assert demo.main([str(FIXTURES)]) == 1
    out, err = capsys.readouterr()
    assert "No such option '--no-such-option'" in err and err.rstrip().endswith("demo: failed: cost")
    assert "== tree " in out  # the steps before it ran


def test_run_reports_a_command_s_failure(tmp_path: Path) -> None:
    from ingestd.commands.ingest import run_ingest

    db = tmp_path / "x.db"
    run_ingest(db, (FIXTURES,), show_progress=False)
    assert demo._run(["sessions", "--db", str(db)]) is True
    assert demo._run(["tree", "no-such-session", "--db", str(db)]) is False  # IngestdError: exit 1
    assert demo._run(["sessions", "--db", str(db), "--bogus"]) is False  # click usage error
