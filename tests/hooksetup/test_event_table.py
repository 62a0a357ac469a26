"""The table of hook events ``hooks install`` works from (``hooksetup.EVENT_TABLE``) is the one of the
Claude Code the end-to-end tests run: every event its bundle knows, each installed with a handler
Claude Code runs for it, and only the events whose empty answer changes nothing observable left out.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ingestd.claude import hooksetup
from ingestd.cli import cli
from tests.realclaude.claude import VERSION
from tests.realclaude.scenarios import BEHAVIOUR_CHANGING, EVENTS

FIXTURE_HOOKS = Path(__file__).resolve().parents[2] / "fixtures" / f"claude-{VERSION}" / "hooks"


def test_the_table_is_every_event_of_the_claude_code_the_tests_run_in_its_order() -> None:
    assert hooksetup.CLAUDE_CODE_VERSION == VERSION
    assert tuple(e.name for e in hooksetup.EVENT_TABLE) == EVENTS


def test_left_out_are_the_events_whose_answer_changes_behaviour_or_blocks_the_display() -> None:
    assert set(hooksetup.NOT_INSTALLED) == {*BEHAVIOUR_CHANGING, "MessageDisplay"}
    for name in hooksetup.NOT_INSTALLED:
        assert hooksetup.EVENTS_BY_NAME[name].why.startswith("left out:")


def test_each_event_is_installed_with_a_handler_claude_code_ran_for_it() -> None:
    """The captures say which hook kinds received each event (an http and a command hook on every
    one): an event that never reached an http hook gets the command forwarder."""
    kinds: dict[str, set[str]] = {}
    for path in FIXTURE_HOOKS.glob("*.jsonl"):
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            kinds.setdefault(entry["body"]["hook_event_name"], set()).update(entry["kinds"])
    for e in hooksetup.EVENT_TABLE:
        if e.name not in kinds:  # PermissionDenied, TeammateIdle: read from the bundle only
            assert e.takes_http, e.name
            continue
        assert e.takes_http == ("http" in kinds[e.name]), e.name
        if e.install is not None:
            assert e.install == (hooksetup.HTTP if e.takes_http else hooksetup.COMMAND), e.name


def test_print_and_dry_run_list_every_event_and_why(tmp_path: Path) -> None:
    runner = CliRunner()
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")}
    (tmp_path / ".claude").mkdir()
    for args in (["hooks", "print", "--port", "7391"], ["hooks", "install", "--dry-run", "--port", "7391"]):
        r = runner.invoke(cli, args, env=env)
        assert r.exit_code == 0, r.output
        listed = [ln.split() for ln in r.stderr.splitlines() if ln.startswith("  ")]
        assert [row[0] for row in listed] == list(EVENTS)
        assert {row[0] for row in listed if row[1] == "-"} == set(hooksetup.NOT_INSTALLED)
        assert "synchronously before every piece of assistant text" in r.stderr
        assert "replaces git's worktree creation" in r.stderr
    printed = json.loads(runner.invoke(cli, ["hooks", "print", "--port", "7391"], env=env).stdout)
    assert set(printed["hooks"]) == {*hooksetup.HTTP_EVENTS, *hooksetup.COMMAND_ONLY_EVENTS}
