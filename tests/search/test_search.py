"""Full-text search: the documents a record gives, the index on the real corpus, the CLI and the API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web
from click.testing import CliRunner

from ingestd.cli import cli
from ingestd.core.records import LogRow
from ingestd.core.search import MAX_DOC_CHARS, SEQ_SPAN, docs
from ingestd.http.api import add_api_routes
from tests.conftest import CORPUS

PROJECTS = CORPUS / "claude-projects"
needs_corpus = pytest.mark.skipif(not PROJECTS.is_dir(), reason=f"real corpus not found at {PROJECTS}")
SID = "263940d8-4431-44ba-9f77-4eb54b5f81f0"
TS = "2025-08-24T20:25:00.000Z"


def row(obj: dict[str, Any], rid: int = 7, origin: str = f"-p/{SID}.jsonl") -> LogRow:
    return LogRow(rid, "jsonl", str(obj.get("type")), orjson.dumps(obj), TS, SID, origin, 0, 0, obj)


def run(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def test_a_prompt_a_reply_and_a_tool_call_are_documents_a_tool_result_and_injected_context_are_not() -> None:
    prompt = {"type": "user", "uuid": "u1", "timestamp": TS, "message": {"role": "user", "content": "fix the parser"}}
    meta = {"type": "user", "isMeta": True, "timestamp": TS, "message": {"role": "user", "content": "<caveat>"}}
    result = {
        "type": "user",
        "timestamp": TS,
        "message": {"content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
    }
    reply = {
        "type": "assistant", "uuid": "a1", "timestamp": TS,
        "message": {"id": "m", "content": [
            {"type": "thinking", "thinking": "secret plan"},
            {"type": "text", "text": "Running the tests."},
            {"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": "pytest -x", "description": "run"}},
        ]},
    }  # fmt: skip
    assert [(d.kind, d.text) for d in docs(row(prompt), prompt, SID)] == [("prompt", "fix the parser")]
    assert docs(row(meta), meta, SID) == [] and docs(row(result), result, SID) == []
    got = docs(row(reply, rid=9), reply, SID)
    assert [(d.kind, d.seq, d.label, d.text) for d in got] == [
        ("text", 1, None, "Running the tests."),
        ("tool", 2, "Bash", "Bash\ncommand: pytest -x\ndescription: run"),
    ]
    assert [d.doc_id for d in got] == [9 * SEQ_SPAN + 1, 9 * SEQ_SPAN + 2]
    assert {(d.session_id, d.agent_id, d.occurred_at, d.uuid) for d in got} == {(SID, None, TS, "a1")}


def test_a_subagent_file_names_the_agent_titles_and_summaries_are_their_own_kinds() -> None:
    sub = {"type": "user", "timestamp": TS, "message": {"content": [{"type": "text", "text": "explore"}]}}
    (d,) = docs(row(sub, origin=f"-p/{SID}/subagents/agent-abc.jsonl"), sub, SID)
    assert (d.kind, d.agent_id) == ("prompt", "abc")
    title = {"type": "custom-title", "customTitle": "Release prep", "sessionId": SID}
    (t,) = docs(row(title), title, SID)
    assert (t.kind, t.label, t.text, t.occurred_at) == ("title", "custom-title", "Release prep", None)
    summary = {
        "type": "user",
        "isCompactSummary": True,
        "timestamp": TS,
        "message": {"content": "This session is being continued"},
    }
    assert [d.kind for d in docs(row(summary), summary, SID)] == ["summary"]


def test_text_is_cut_to_the_documents_bound_and_made_storable() -> None:
    obj = {"type": "user", "timestamp": TS, "message": {"content": "a\x00b " + "x" * 10_000}}
    (d,) = docs(row(obj), obj, SID)
    assert len(d.text) == MAX_DOC_CHARS and "\x00" not in d.text and d.text.startswith("a\u2400b ")


@pytest.fixture(scope="module")
def corpus_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not PROJECTS.is_dir():
        pytest.skip(f"real corpus not found at {PROJECTS}")
    tmp = tmp_path_factory.mktemp("search")
    db = tmp / "s.db"
    r = run("ingest", "--db", str(db), "--projects", str(PROJECTS))
    assert r.exit_code == 0, r.output
    return db


def search(db: Path, *args: str) -> Any:
    r = run("search", "--db", str(db), "--json", *args)
    assert r.exit_code == 0, r.output
    return orjson.loads(r.stdout)


def corpus_commands(limit: int) -> list[tuple[str, str]]:
    """(session id, Bash command) of the first ``limit`` Bash calls of main session files, read
    with plain json: the test's own reading of the corpus."""
    out: list[tuple[str, str]] = []
    for f in sorted(PROJECTS.glob("*/*.jsonl")):
        if f.name.startswith("agent-"):
            continue
        for line in f.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            msg = rec.get("message") if isinstance(rec, dict) else None
            content = msg.get("content") if isinstance(msg, dict) else None
            for b in content if isinstance(content, list) else []:
                if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Bash":
                    cmd = (b.get("input") or {}).get("command")
                    if isinstance(cmd, str) and len(cmd.split()) >= 2 and rec.get("sessionId"):
                        out.append((rec["sessionId"], cmd))
            if len(out) >= limit:
                return out
    return out


@needs_corpus
def test_every_bash_command_of_the_corpus_is_found_in_its_session(corpus_db: Path) -> None:
    cmds = corpus_commands(12)
    assert len(cmds) == 12
    for sid, cmd in cmds:
        words = " ".join(cmd.split()[:6])
        doc = search(corpus_db, "--kind", "tool", "--session", sid, "--limit", "1000", words)
        assert doc["count"] >= 1, (sid, words)
        assert {r["session_id"] for r in doc["results"]} == {sid}
        assert all(r["kind"] == "tool" for r in doc["results"])


@needs_corpus
def test_filters_and_sorting(corpus_db: Path) -> None:
    everything = search(corpus_db, "--limit", "1000", "test")
    assert everything["count"] > 50 and {r["kind"] for r in everything["results"]} >= {"prompt", "tool", "text"}
    prompts = search(corpus_db, "--kind", "prompt", "--limit", "1000", "test")
    assert prompts["count"] > 0 and {r["kind"] for r in prompts["results"]} == {"prompt"}
    linear = search(corpus_db, "--project", "linear-agent", "--limit", "1000", "test")
    assert linear["count"] > 0 and {r["session_id"] for r in linear["results"]} == {SID}
    recent = search(corpus_db, "--since", "2026-01-01", "--tz", "UTC", "--limit", "1000", "test")
    assert recent["count"] < everything["count"]
    assert all(r["occurred_at"] >= "2026-01-01" for r in recent["results"])
    newest = search(corpus_db, "--sort", "time", "--limit", "30", "test")
    times = [r["occurred_at"] for r in newest["results"]]
    assert times == sorted(times, reverse=True)
    few = search(corpus_db, "--limit", "3", "test")
    assert few["count"] == 3 and few["limited"] is True


@needs_corpus
def test_a_path_needs_no_quoting_and_the_hits_are_marked(corpus_db: Path) -> None:
    doc = search(corpus_db, "src/__tests__/features/cycle.service.test.ts")
    assert doc["count"] > 0
    for r in doc["results"]:
        hits = [p["text"] for p in r["snippet"] if p["hit"]]
        assert {"src", "tests", "features", "cycle", "service", "test", "ts"} <= set(hits)
        assert "src/__tests__/features/cycle.service.test.ts" in "".join(p["text"] for p in r["snippet"])


@needs_corpus
def test_fts_syntax_is_opt_in_and_an_error_is_a_message(corpus_db: Path) -> None:
    r = run("search", "--db", str(corpus_db), "--fts", '"unclosed AND')
    assert r.exit_code == 2 and "not valid FTS5 syntax" in r.output and "Traceback" not in r.output
    either = search(corpus_db, "--fts", "--limit", "1000", "pytest OR vitest")
    one = search(corpus_db, "--limit", "1000", "pytest")
    assert either["count"] >= one["count"] >= 1
    literal = search(corpus_db, '"unclosed AND')  # without --fts: literal words, no error
    assert literal["count"] == 0
    r = run("search", "--db", str(corpus_db), "   ")
    assert r.exit_code == 2 and "empty" in r.output


@needs_corpus
def test_the_terminal_shows_two_lines_per_result_within_80_columns(corpus_db: Path) -> None:
    r = CliRunner().invoke(cli, ["search", "--db", str(corpus_db), "--limit", "5", "test"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert len(lines) == 11 and lines[-1].startswith("5 results for")
    assert max(len(line) for line in lines) <= 80


def test_hostile_text_is_escaped_on_the_terminal_and_exact_in_json(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    evil = "deploy \x1b[2J\u202eexe.gnp done"
    rec = {"type": "user", "uuid": "u", "sessionId": SID, "timestamp": TS, "message": {"role": "user", "content": evil}}
    (root / f"{SID}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    db = tmp_path / "h.db"
    assert run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects")).exit_code == 0
    doc = search(db, "deploy")
    assert "".join(p["text"] for p in doc["results"][0]["snippet"]) == evil
    out = run("search", "--db", str(db), "deploy").output
    assert "\x1b" not in out and "\u202e" not in out and "\\x1b[2J\\u202eexe.gnp" in out


def test_a_record_copied_into_a_resumed_session_is_one_result(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    rec = {
        "type": "user",
        "uuid": "same-uuid",
        "timestamp": TS,
        "message": {"role": "user", "content": "unique needle"},
    }
    (root / "s1.jsonl").write_bytes(orjson.dumps({**rec, "sessionId": "s1"}) + b"\n")
    (root / "s2.jsonl").write_bytes(orjson.dumps({**rec, "sessionId": "s2"}) + b"\n")
    db = tmp_path / "c.db"
    assert run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects")).exit_code == 0
    doc = search(db, "needle")
    assert doc["count"] == 1


def test_a_line_appended_later_is_found_and_replay_rebuilds_the_same_index(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    f = root / f"{SID}.jsonl"
    first = {"type": "user", "uuid": "u1", "sessionId": SID, "timestamp": TS, "message": {"content": "alpha"}}
    f.write_bytes(orjson.dumps(first) + b"\n")
    db = tmp_path / "r.db"
    args = ("ingest", "--db", str(db), "--projects", str(tmp_path / "projects"))
    assert run(*args).exit_code == 0
    assert search(db, "bravo")["count"] == 0
    with f.open("ab") as fh:
        fh.write(orjson.dumps({**first, "uuid": "u2", "message": {"content": "bravo"}}) + b"\n")
    assert run(*args).exit_code == 0
    assert search(db, "bravo")["count"] == 1
    r = run("replay", "--db", str(db))
    assert r.exit_code == 0, r.output
    assert run("verify", "--db", str(db)).exit_code == 0


@needs_corpus
def test_status_reports_the_index_size_within_40_percent_of_the_database(corpus_db: Path) -> None:
    r = run("status", "--db", str(corpus_db), "--json", "--no-stat")
    assert r.exit_code == 0, r.output
    db = orjson.loads(r.stdout)["database"]
    assert db["search"]["documents"] > 1000
    assert 0 < db["search"]["bytes"] < 0.4 * db["size_bytes"]


@needs_corpus
async def test_the_api_answers_as_the_cli(aiohttp_client: Any, corpus_db: Path, tmp_path: Path) -> None:
    db = tmp_path / "api.db"
    shutil.copy(corpus_db, db)
    app = web.Application()
    add_api_routes(app, db_path=db)
    client = await aiohttp_client(app)
    resp = await client.get("/api/search", params={"q": "npm test", "kind": "tool", "limit": "7"})
    assert resp.status == 200
    assert await resp.json() == search(db, "--kind", "tool", "--limit", "7", "npm", "test")
    for params in ({"q": ""}, {"q": "x", "kind": "nope"}, {"q": "(", "fts": "1"}, {"q": "x", "limit": "0"}):
        resp = await client.get("/api/search", params=params)
        doc = await resp.json()
        assert resp.status == 400 and doc["error"]["code"] == "bad_parameter", (params, doc)


def test_the_snippet_marks_every_word_around_the_first_match() -> None:
    from ingestd.report.search import SNIPPET_CHARS, query_words, snippet

    text = "x " * 200 + "Run the Tests now; testing again " + "y " * 200
    parts = snippet(text, query_words("test*", fts=True))
    assert [p["text"] for p in parts if p["hit"]] == ["Tests", "testing"]
    assert parts[0]["text"] == "…" and parts[-1]["text"] == "…"
    assert len("".join(p["text"] for p in parts)) <= SNIPPET_CHARS + 2
    assert [p["text"] for p in snippet("Café au lait", ["lait"]) if p["hit"]] == ["lait"]
    assert query_words('"a b" AND c NOT d*', fts=True) == ["a", "b", "c", "d*"]
    assert snippet("no match here", ["zzz"]) == [{"text": "no match here", "hit": False}]


def test_a_reprojection_rebuilds_the_index_without_stale_entries(tmp_path: Path) -> None:
    from ingestd.core.touch import Ctx
    from ingestd.projection.reproject import ensure_current
    from ingestd.store.connection import connect

    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    rec = {"type": "user", "uuid": "u1", "sessionId": SID, "timestamp": TS, "message": {"content": "kestrel"}}
    (root / f"{SID}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    db = tmp_path / "p.db"
    assert run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects")).exit_code == 0
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'projection_revision'")
    assert ensure_current(conn, db, ctx=Ctx()) is not None
    conn.execute("INSERT INTO search_fts (search_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT count(*) FROM search_fts WHERE search_fts MATCH 'kestrel'").fetchall() == [(1,)]
    conn.close()
    assert search(db, "kestrel")["count"] == 1


async def test_a_nul_in_the_query_separates_words_and_a_yes_no_parameter_takes_only_yes_or_no(
    aiohttp_client: Any, tmp_path: Path
) -> None:
    """FTS5's query parser ends a string at a NUL; the tokenizer reads it as a space."""
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    rec = {"type": "user", "uuid": "u", "sessionId": SID, "timestamp": TS, "message": {"content": "alpha bravo"}}
    (root / f"{SID}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    db = tmp_path / "n.db"
    assert run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects")).exit_code == 0
    app = web.Application()
    add_api_routes(app, db_path=db)
    client = await aiohttp_client(app)
    for params in ({"q": "alpha\x00bravo"}, {"q": "alpha\x00bravo", "fts": "1"}, {"q": "alpha\x00", "fts": "true"}):
        resp = await client.get("/api/search", params=params)
        doc = await resp.json()
        assert resp.status == 200 and doc["count"] == 1, (params, doc)
    resp = await client.get("/api/search", params={"q": "\x00"})
    assert resp.status == 400 and "empty" in (await resp.json())["error"]["message"]
    for path, params in (("/api/search", {"q": "alpha", "fts": "yes"}), ("/api/blocks", {"active": "maybe"})):
        resp = await client.get(path, params=params)
        doc = await resp.json()
        assert resp.status == 400 and doc["error"]["code"] == "bad_parameter", (path, doc)
        assert "must be 1 or 0" in doc["error"]["message"]
    for path, params in (("/api/search", {"q": "alpha", "fts": "0"}), ("/api/blocks", {"active": "false"})):
        assert (await client.get(path, params=params)).status == 200


@pytest.mark.parametrize(
    ("query", "detail"),
    [("*", "(unknown special query)"), ("col:foo", "(no such column: col)"), ("NOT", '(syntax error near "NOT")')],
)
def test_an_fts_error_names_the_whole_reason(tmp_path: Path, query: str, detail: str) -> None:
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    rec = {"type": "user", "uuid": "u", "sessionId": SID, "timestamp": TS, "message": {"content": "alpha"}}
    (root / f"{SID}.jsonl").write_bytes(orjson.dumps(rec) + b"\n")
    db = tmp_path / "e.db"
    assert run("ingest", "--db", str(db), "--projects", str(tmp_path / "projects")).exit_code == 0
    r = run("search", "--db", str(db), "--fts", query)
    assert r.exit_code == 2 and f"is not valid FTS5 syntax {detail};" in r.output, r.output
