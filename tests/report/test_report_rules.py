"""Rules the reports must keep: cost reads the rollup, prefixes resolve or fail clearly, trees add up,
local days follow daylight saving, unpriced usage is never shown as $0."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from rich.console import Console

from ingestd.cli import cli
from ingestd.errors import ConfigError, InputError
from ingestd.report.cost import cost_report
from ingestd.report.render import render_cost, render_sessions, usd
from ingestd.report.sessions import sessions_report
from ingestd.report.tree import resolve_session, tree_report
from ingestd.report.treeview import render_tree
from ingestd.report.window import Window, local_zone, make_window, resolve_zone
from ingestd.store import rollup
from ingestd.store.connection import connect, write_txn

NY = resolve_zone("America/New_York", {})
UTCZ = resolve_zone("UTC", {})
NOW = datetime(2025, 12, 1, tzinfo=UTC)
ALL = Window(None, None)


def test_cost_reads_the_rollup(report_db: Path) -> None:
    """Cost reads the rollup, not a scan of token_usage (a tampered rollup row moves the answer); only the agent
    grouping scans, and says so."""
    conn = connect(report_db)
    before = cost_report(conn, by="day", window=ALL, zone=NY)
    write_txn(conn, rollup.rebuild)
    assert rollup.differences(conn) == []
    assert cost_report(conn, by="day", window=ALL, zone=NY) == before
    # Tamper with one rollup row: the answer follows the rollup, not token_usage.
    conn.execute("UPDATE token_usage_rollup SET output = output + 1000000 WHERE model = 'claude-opus-4-6'")
    after = cost_report(conn, by="day", window=ALL, zone=NY)
    assert after["totals"]["output"] == before["totals"]["output"] + 1_000_000
    assert Decimal(after["cost_usd"]) == Decimal(before["cost_usd"]) + Decimal(25)
    # The agent grouping is the one that reads token_usage, and says so.
    by_agent = cost_report(conn, by="agent", window=ALL, zone=NY)
    assert by_agent["source"] == "token_usage"
    assert by_agent["totals"] == before["totals"]


def test_groupings_agree_on_totals(report_db: Path) -> None:
    """Every grouping of cost gives the same totals, cost and unpriced part, and its rows add up to its total."""
    conn = connect(report_db, readonly=True)
    docs = [
        cost_report(conn, by=by, window=ALL, zone=NY) for by in (None, "day", "model", "session", "project", "agent")
    ]
    keys = ("totals", "cost_usd", "unpriced", "billed_messages")
    for d in docs[1:]:
        assert {k: d[k] for k in keys} == {k: docs[0][k] for k in keys}
        assert sum(Decimal(r["cost_usd"]) for r in d["rows"]) == Decimal(d["cost_usd"])
    assert docs[0]["billed_messages"] == 12
    assert docs[0]["unpriced"] == {
        "claude-mystery-9": {"tokens": 330, "messages": 2, "web_search_requests": 0, "reasons": ["no_rate"]}
    }


def test_local_days_follow_dst() -> None:
    spring = make_window("2025-03-09", "2025-03-09", NY, NOW)
    fall = make_window("2025-11-02", "2025-11-02", NY, NOW)
    assert spring.until is not None and spring.since is not None
    assert fall.until is not None and fall.since is not None
    assert (spring.until - spring.since).total_seconds() == 23 * 3600
    assert (fall.until - fall.since).total_seconds() == 25 * 3600
    kathmandu = make_window("2025-03-09", None, resolve_zone("Asia/Kathmandu", {}), NOW)
    assert kathmandu.since_slot == "2025-03-08T18:15Z"


def test_window_spellings() -> None:
    """Each spelling of a window (instants, durations, today / yesterday in the zone) gives its bounds; an
    unknown word, a reversed window or an unknown zone is refused."""
    w = make_window("2025-03-09T10:07:00Z", "2025-03-09T10:31:00Z", UTCZ, NOW)
    assert (w.since_slot, w.until_slot) == ("2025-03-09T10:00Z", "2025-03-09T10:45Z")
    assert make_window("2d", None, UTCZ, NOW).since_utc == "2025-11-29T00:00:00.000Z"
    assert make_window("2025-03-09T01:00", None, NY, NOW).since_utc == "2025-03-09T06:00:00.000Z"
    # today / yesterday are local days of the zone (NOW is 2025-11-30 19:00 in New York)
    assert make_window("today", "today", NY, NOW).to_json() == {
        "since": "2025-11-30T05:00:00.000Z",
        "until": "2025-12-01T05:00:00.000Z",
    }
    assert make_window("yesterday", "yesterday", UTCZ, NOW).to_json() == {
        "since": "2025-11-30T00:00:00.000Z",
        "until": "2025-12-01T00:00:00.000Z",
    }
    assert make_window("Today", None, UTCZ, NOW).since_utc == "2025-12-01T00:00:00.000Z"
    assert make_window("36h", None, UTCZ, NOW).since_utc == "2025-11-29T12:00:00.000Z"
    with pytest.raises(ConfigError):
        make_window("tomorrow", None, UTCZ, NOW)
    with pytest.raises(ConfigError):
        make_window("2025-03-10", "2025-03-09", UTCZ, NOW)
    with pytest.raises(ConfigError):
        resolve_zone("Mars/Olympus", {})


def test_local_zone_from_env_and_localtime(tmp_path: Path) -> None:
    assert local_zone({"TZ": "Europe/Paris"}).name == "Europe/Paris"
    link = tmp_path / "localtime"
    link.symlink_to("/usr/share/zoneinfo/America/New_York")
    assert local_zone({}, link).name == "America/New_York"
    assert local_zone({}, tmp_path / "missing").name == "UTC"


def test_session_prefix(report_db: Path) -> None:
    """A unique prefix names its session; an ambiguous or unknown one is refused with its reason."""
    conn = connect(report_db, readonly=True)
    assert resolve_session(conn, "a1") == "a1111111-1111-4111-8111-111111111111"
    with pytest.raises(InputError) as e:
        resolve_session(conn, "b22")
    assert e.value.context["reason"] == "ambiguous"
    with pytest.raises(InputError) as e:
        resolve_session(conn, "zz")
    assert e.value.context["reason"] == "not_found"


@pytest.mark.parametrize("prefix", ["b22", "zzz"])
def test_tree_cli_prefix_errors_exit_2(report_db: Path, prefix: str) -> None:
    result = CliRunner().invoke(cli, ["tree", prefix, "--db", str(report_db)])
    assert result.exit_code == 2
    assert "session" in result.stderr


def test_tree_adds_up(report_db: Path) -> None:
    """The tree's subtrees, orphans, compaction agents and unattributed part add up to the session's cost."""
    doc = tree_report(connect(report_db, readonly=True), "a1")
    parts = [doc["tree"]["subtree"], *(n["subtree"] for n in doc["orphans"] + doc["compaction_agents"])]
    parts.append(doc["unattributed"])
    assert sum(Decimal(p["cost_usd"]) for p in parts) == Decimal(doc["session"]["cost_usd"])
    assert sum(p["tokens"] for p in parts) == doc["session"]["tokens"]
    explore = doc["tree"]["children"][0]
    assert explore["edge"]["source"] == "tool_use"
    general = explore["children"][0]
    assert (general["depth"], general["edge"]["source"], general["parent_agent_id"]) == (2, "directory", "a-explore-1")
    assert [o["agent_id"] for o in doc["orphans"]] == ["a-orphan-3"]
    assert doc["orphans"][0]["orphan_reason"] == "no_parent_evidence"


def test_unpriced_is_never_zero_dollars(report_db: Path) -> None:
    assert str(usd({"cost_usd": "0", "cost_complete": False})) == "unpriced"
    assert str(usd({"cost_usd": "1.234", "cost_complete": False})) == "$1.23+?"
    assert str(usd({"cost_usd": "0.00001", "cost_complete": True})) == "<$0.0001"
    conn = connect(report_db, readonly=True)
    console = Console(width=160, record=True)
    render_cost(console, cost_report(conn, by="model", window=ALL, zone=NY), None)
    render_sessions(console, sessions_report(conn, window=ALL), NY, "/home/dev")
    render_tree(console, tree_report(conn, "b222"), NY, "/home/dev")
    text = console.export_text()
    assert "claude-mystery-9" in text and "unpriced" in text
    assert "$0.0035+?" in text
    assert "~/code/beta" in text
    assert "ORPHAN" not in text.split("session b2222222")[1]


def _json(db: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--db", str(db), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout)


def _agent_ids(node: dict[str, Any]) -> list[str]:
    return [node["agent_id"], *(a for c in node["children"] for a in _agent_ids(c))]


def test_each_terminal_view_shows_what_its_json_says(report_db: Path) -> None:
    """The terminal views carry their ``--json`` documents' facts: every session (short id, status),
    every agent of the tree, every day of cost with its billed messages, the schema version."""

    def text(*args: str) -> str:
        result = CliRunner(env={"COLUMNS": "200"}).invoke(cli, [*args, "--db", str(report_db)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    sessions, shown = _json(report_db, "sessions"), text("sessions")
    assert sessions["rows"] and f"{len(sessions['rows'])} sessions" in shown
    for r in sessions["rows"]:
        (line,) = [ln for ln in shown.splitlines() if r["session_id"][:8] in ln]
        assert r["status"] in line
    tree, shown = _json(report_db, "tree", "a1"), text("tree", "a1")
    ids = _agent_ids(tree["tree"]) + [a for n in tree["orphans"] + tree["compaction_agents"] for a in _agent_ids(n)]
    assert len(ids) >= 4 and all(a[:8] in shown or a in shown for a in ids)
    cost, shown = _json(report_db, "cost", "--by", "day"), text("cost", "--by", "day")
    for r in cost["rows"]:
        (line,) = [ln for ln in shown.splitlines() if ln.startswith(r["day"])]
        assert line.split()[-2] == str(r["billed_messages"]), line
    status = _json(report_db, "status")
    assert f"{status['schema']['version']} ({status['schema']['name']})" in text("status")


def test_a_session_prefix_is_a_prefix_of_the_exact_text(report_db: Path) -> None:
    conn = connect(report_db, readonly=True)
    assert resolve_session(conn, "a1") == "a1111111-1111-4111-8111-111111111111"
    assert resolve_session(conn, "a1111111-1111-4111-8111-111111111111") == "a1111111-1111-4111-8111-111111111111"


@pytest.mark.parametrize("given", ["A1", "a1111111-1111-4111-8111-111111111111".upper(), "\ta1 \n", " a1", "a1 "])
def test_a_session_id_is_never_trimmed_or_case_folded(report_db: Path, given: str) -> None:
    # an id with spaces around it opened the session it was trimmed to (another one)
    with pytest.raises(InputError, match="no session id starts with") as e:
        resolve_session(connect(report_db, readonly=True), given)
    assert e.value.context["reason"] == "not_found"


def test_cli_window_errors_name_the_options(report_db: Path) -> None:
    result = CliRunner().invoke(cli, ["cost", "--since", "2025-03-10", "--until", "2025-03-01", "--db", str(report_db)])
    assert result.exit_code == 2
    assert "--since (" in result.stderr and "--until (" in result.stderr
    result = CliRunner().invoke(cli, ["sessions", "--until", "soon", "--db", str(report_db)])
    assert "--until: cannot read 'soon'" in result.stderr


def test_tree_json_errors_go_to_stderr_with_nothing_on_stdout(report_db: Path) -> None:
    result = CliRunner().invoke(cli, ["tree", "zzz", "--json", "--db", str(report_db)])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "no session id starts with 'zzz'" in result.stderr


def test_counts_are_singular_for_one_and_the_main_agent_id_is_whole(report_db: Path) -> None:
    conn = connect(report_db, readonly=True)
    console = Console(width=200, record=True)
    render_sessions(console, sessions_report(conn, window=ALL, limit=1), NY, None)
    render_tree(console, tree_report(conn, "a1"), NY, None)
    text = console.export_text()
    assert "newest 1 of 3 sessions (" in text and "1 sessions" not in text
    # the header names the session (= the main agent) in full; the tree shortens it
    assert "session a1111111-1111-4111-8111-111111111111" in text and "main a1111111 " in text
    status = render_status_text(report_db)
    assert "1 file tracked" in status and "1 files" not in status


def render_status_text(db: Path) -> str:
    result = CliRunner().invoke(cli, ["status", "--db", str(db)], env={"COLUMNS": "200"}, catch_exceptions=False)
    return result.stdout


def test_status_shows_skipped_lines_as_a_total_then_by_reason(report_db: Path) -> None:
    conn = connect(report_db)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM ingest_stats WHERE name LIKE 'skipped.%'")
    conn.execute("INSERT INTO ingest_stats (name, value) VALUES ('skipped.not_json', 2), ('skipped.not_object', 1)")
    for i in (1, 2):
        conn.execute(
            "INSERT INTO events_raw (idempotency_key, source, event_type, payload, codec, received_at, origin)"
            " SELECT idempotency_key || ?, source, event_type, payload, codec, received_at, origin FROM events_raw"
            " WHERE event_type = 'invalid' LIMIT 1",
            (str(i),),
        )
    conn.execute("COMMIT")
    conn.close()
    doc = run_status_json(report_db)
    assert doc["skipped"] == {"lines": 3, "by_reason": {"not_json": 2, "not_object": 1}}
    line = next(x for x in render_status_text(report_db).splitlines() if "skipped lines" in x)
    assert "3 lines (by reason: not_json 2, not_object 1)" in line


def run_status_json(db: Path) -> dict[str, object]:
    import orjson

    result = CliRunner().invoke(cli, ["status", "--json", "--db", str(db)], catch_exceptions=False)
    doc: dict[str, object] = orjson.loads(result.stdout)
    return doc
