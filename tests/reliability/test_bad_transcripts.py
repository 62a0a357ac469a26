"""The bad-input catalogue, transcript side (SPEC §3, §7, §12): a counted skip, never a crash.

Each case writes some files into a projects root that already holds a good session (the
baseline), runs the ingest code once per write step, and checks the expected outcome: how many
log rows appeared, which lines were counted as skipped (``invalid``, by reason) or recovered,
plus a case-specific check. Always: no exception, the baseline's log rows and projections are
unchanged, and a rerun over the same tree inserts nothing.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from ingestd.core.framing import split_lines
from ingestd.core.uncounted import USAGE_NOT_COUNTED
from ingestd.core.validate import MAX_TOKENS, UNDATED
from ingestd.ingest.backfill import ingest_roots
from ingestd.ingest.summary import Summary
from ingestd.store.connection import connect
from ingestd.store.migrate import migrate
from tests.reliability.support import SID, assert_kept, assert_replay_ok, q, snapshot
from tests.usage_rows import BY_BUCKET

NOW = "2026-01-02T00:00:00.000Z"
SLUG = "-home-dev-proj"
BAD = "22222222-3333-4444-8555-666666666666"
MAIN = f"{SLUG}/{BAD}.jsonl"
MB = 1 << 20


def rec(kind: str = "user", **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "type": kind,
        "uuid": f"u-{kind}-{len(kw)}",
        "sessionId": BAD,
        "timestamp": "2026-01-01T10:00:00.000Z",
        "cwd": "/home/dev/proj",
    }
    if kind == "user":
        base["message"] = {"role": "user", "content": "hi"}
    return {**base, **kw}


def asst(mid: str = "msg_bad", model: str = "claude-opus-4-6", usage: Any = None, **kw: Any) -> dict[str, Any]:
    u = {"input_tokens": 10, "output_tokens": 20} if usage is None else usage
    msg = {"id": mid, "model": model, "role": "assistant", "content": [{"type": "text", "text": "ok"}], "usage": u}
    return rec("assistant", **{"requestId": f"req_{mid}", "message": msg, **kw})


def line(obj: Any) -> bytes:
    return orjson.dumps(obj) + b"\n"


# A write step: (path relative to the root, bytes to append) or a callable doing anything to the root.
Step = list[tuple[str, bytes] | Callable[[Path, Path], None]]


@dataclass(frozen=True)
class Case:
    """Files written step by step; what the log must hold afterwards (``rows`` new log rows)."""

    id: str
    steps: list[Step]
    rows: int
    skipped: dict[str, int] = field(default_factory=dict)
    recovered: int = 0
    check: Callable[[Path], None] | None = None


def tokens(db: Path, mid: str = "msg_bad") -> dict[str, int]:
    return dict(q(db, f"SELECT bucket, tokens FROM {BY_BUCKET} WHERE message_id = ?", (mid,)))


def expect_tokens(inp: int, out: int) -> Callable[[Path], None]:
    def check(db: Path) -> None:
        got = tokens(db)
        assert len(got) == 5  # one message, five buckets
        assert (got["input"], got["output"]) == (inp, out)

    return check


def no_message(db: Path) -> None:
    assert tokens(db) == {}


def undated_usage(db: Path) -> None:
    """No record of the file has a valid time: the message is in no bucket (never at the read
    time), and its quarantine row says its usage is not counted."""
    assert tokens(db) == {}
    details = [r[0] for r in q(db, "SELECT detail FROM quarantine WHERE reason = 'timestamp' ORDER BY raw_event_id")]
    assert details[0] == f"timestamp 'yesterday' is not an instant in 2000-2099, {UNDATED}{USAGE_NOT_COUNTED}"
    assert all(d.endswith(UNDATED) for d in details[1:])


def event_types(*expected: str) -> Callable[[Path], None]:
    def check(db: Path) -> None:
        got = [r[0] for r in q(db, "SELECT event_type FROM events_raw WHERE session_id = ? ORDER BY id", (BAD,))]
        assert got == list(expected)

    return check


def symlink_to_outside(name: str, *, directory: bool) -> Callable[[Path, Path], None]:
    def make(root: Path, outside: Path) -> None:
        target = outside / ("d" if directory else "o.jsonl")
        if directory:
            target.mkdir(exist_ok=True)
            (target / f"{BAD}.jsonl").write_bytes(line(rec()))
        else:
            target.write_bytes(line(rec()))
        (root / SLUG / name).symlink_to(target)

    return make


def mkdir(rel: str) -> Callable[[Path, Path], None]:
    return lambda root, _o: (root / rel).mkdir(parents=True)


def fifo(rel: str) -> Callable[[Path, Path], None]:
    return lambda root, _o: os.mkfifo(root / rel)


def truncate(rel: str, size: int) -> Callable[[Path, Path], None]:
    def cut(root: Path, _o: Path) -> None:
        with open(root / rel, "r+b") as fh:
            fh.truncate(size)

    return cut


def reset_keeps_old_rows(db: Path) -> None:
    assert q(db, "SELECT count(*) FROM events_raw WHERE event_type = 'file_reset'") == [(1,)]
    assert tokens(db)["output"] == 20  # read before the truncation: kept
    assert tokens(db, "msg_new")["output"] == 20


def escaped_origin(db: Path) -> None:
    assert q(db, "SELECT origin FROM events_raw WHERE session_id = ?", (BAD,)) == [(f"{SLUG}/caf\\xff.jsonl",)]


def model_of_larger_output(db: Path) -> None:
    assert {r[0] for r in q(db, "SELECT model FROM token_usage WHERE message_id = 'msg_bad'")} == {"claude-sonnet-4-5"}
    assert tokens(db)["output"] == 900
    assert tokens(db)["input"] == 10


BINARY = bytes(random.Random(7).randrange(256) for _ in range(64 * 1024))
BINARY_LINES = len(split_lines(BINARY)[0])
HUGE_LINE = line(rec(message={"role": "user", "content": "x" * (20 * MB)}))
DEEP = 100_000
CASES = [
    Case("empty-file", [[(MAIN, b"")]], 0),
    Case("blank-lines-only", [[(MAIN, b"\n\n  \r\n\t\n")]], 0),
    Case("not-json", [[(MAIN, b"this is not json\n")]], 1, {"not_json": 1}, check=event_types("invalid")),
    Case("json-array", [[(MAIN, b'[{"type":"user"}]\n')]], 1, {"not_object": 1}),
    Case("json-string", [[(MAIN, b'"user"\n')]], 1, {"not_object": 1}),
    Case("json-number-and-null", [[(MAIN, b"42\nnull\ntrue\n")]], 3, {"not_object": 3}),
    Case("truncated-object", [[(MAIN, line(rec())[:-9] + b"\n")]], 1, {"not_json": 1}),
    # too deep to take apart is said as such (a regression: it read `not_json`)
    Case("deep-array-100k", [[(MAIN, b"[" * DEEP + b"]" * DEEP + b"\n")]], 1, {"too_deep": 1}),
    Case("deep-object-100k", [[(MAIN, b'{"a":' * DEEP + b"1" + b"}" * DEEP + b"\n")]], 1, {"too_deep": 1}),
    Case(
        "deep-900-with-lone-surrogate",
        [[(MAIN, b'{"type":"user","x":"\\ud800","y":' + b"[" * 900 + b"]" * 900 + b"}\n")]],
        1,
        {"too_deep": 1},
    ),
    Case(
        "deep-500-parseable",
        [[(MAIN, b'{"type":"user","sessionId":"' + BAD.encode() + b'","y":' + b"[" * 500 + b"]" * 500 + b"}\n")]],
        1,
        check=event_types("user"),
    ),
    Case(
        "lone-surrogate-recovered",
        [[(MAIN, line(asst())[:-2] + b',"cut":"\\ud83d"}\n')]],
        1,
        recovered=1,
        check=expect_tokens(10, 20),
    ),
    Case(
        "invalid-utf8-recovered",
        [[(MAIN, line(asst(text="caf")).replace(b'"caf"', b'"caf\xff\xfe"'))]],
        1,
        recovered=1,
        check=expect_tokens(10, 20),
    ),
    Case("nul-bytes-raw", [[(MAIN, b'{"type":"user",\x00"x":1}\n\x00\x00\x00\n')]], 2, {"not_json": 2}),
    Case(
        "nul-escaped-in-text",
        [[(MAIN, line(rec(message={"role": "user", "content": "a\x00b"})))]],
        1,
        check=event_types("user"),
    ),
    Case(
        "huge-float-1e400",
        [
            [
                (
                    MAIN,
                    line(asst(usage={"output_tokens": 5})).replace(
                        b'"output_tokens":5', b'"input_tokens":1e400,"output_tokens":5'
                    ),
                )
            ]
        ],
        1,
        recovered=1,
        check=expect_tokens(0, 5),
    ),
    Case(
        "usage-400-digits",
        [
            [
                (
                    MAIN,
                    line(asst(usage={"output_tokens": 5})).replace(
                        b'"output_tokens":5', b'"input_tokens":1' + b"0" * 400 + b',"output_tokens":5'
                    ),
                )
            ]
        ],
        1,
        recovered=1,
        check=expect_tokens(0, 5),
    ),
    Case(
        "usage-over-int64",
        [
            [
                (
                    MAIN,
                    line(asst(usage={"input_tokens": 424242, "output_tokens": 5})).replace(
                        b"424242", str(2**64 - 1).encode()
                    ),
                )
            ]
        ],
        1,
        check=expect_tokens(0, 5),
    ),
    Case(
        "usage-over-bound",
        [[(MAIN, line(asst(usage={"input_tokens": MAX_TOKENS + 1, "output_tokens": 5})))]],
        1,
        check=expect_tokens(0, 5),
    ),
    Case(
        "usage-strings",
        [[(MAIN, line(asst(usage={"input_tokens": "10", "output_tokens": "20"})))]],
        1,
        check=expect_tokens(0, 0),
    ),
    Case(
        "usage-negative",
        [
            [
                (
                    MAIN,
                    line(
                        asst(
                            usage={
                                "input_tokens": -10,
                                "output_tokens": -1,
                                "cache_creation_input_tokens": -5,
                                "cache_creation": {"ephemeral_5m_input_tokens": -3},
                            }
                        )
                    ),
                )
            ]
        ],
        1,
        check=expect_tokens(0, 0),
    ),
    Case(
        "usage-null-fields",
        [[(MAIN, line(asst(usage={"input_tokens": None, "output_tokens": 7, "cache_creation": None})))]],
        1,
        check=expect_tokens(0, 7),
    ),
    Case("usage-not-an-object", [[(MAIN, line(asst(usage="lots")))]], 1),
    Case(
        "usage-floats-and-bools",
        [[(MAIN, line(asst(usage={"input_tokens": 1.5, "output_tokens": True})))]],
        1,
        check=expect_tokens(0, 0),
    ),
    Case(
        "message-id-reused-with-another-model",
        [
            [(MAIN, line(asst(usage={"input_tokens": 10, "output_tokens": 3})))],
            [
                (
                    MAIN,
                    line(asst(model="claude-sonnet-4-5", usage={"input_tokens": 10, "output_tokens": 900}, uuid="u2")),
                )
            ],
        ],
        2,
        check=model_of_larger_output,
    ),
    Case(
        "message-wrong-types",
        [
            [
                (
                    MAIN,
                    line(asst(message=None))
                    + line(asst(message="x"))
                    + line(asst(message={"id": 5, "model": [], "content": 7, "usage": {"input_tokens": 3}})),
                )
            ]
        ],
        3,
        check=no_message,
    ),
    Case(
        "content-blocks-wrong-types",
        [
            [
                (
                    MAIN,
                    line(
                        asst(
                            message={
                                "id": "msg_bad",
                                "model": "m",
                                "content": [
                                    5,
                                    None,
                                    {"type": "tool_use", "id": 5, "name": 7, "input": "x"},
                                    {
                                        "type": "tool_use",
                                        "id": "toolu_1",
                                        "name": "Task",
                                        "input": {"subagent_type": 5, "prompt": {}},
                                    },
                                ],
                                "usage": {"output_tokens": 2},
                            }
                        )
                    )
                    + line(
                        rec(
                            message={
                                "content": [{"type": "tool_result", "tool_use_id": 5, "content": {}, "is_error": "y"}]
                            },
                            toolUseResult={"agentId": 5, "usage": "x"},
                        )
                    ),
                )
            ]
        ],
        2,
        check=expect_tokens(0, 2),
    ),
    Case(
        "record-field-types",
        [
            [
                (
                    MAIN,
                    line(
                        rec(
                            type=5,
                            sessionId=None,
                            timestamp=12345,
                            cwd=[1],
                            version={},
                            gitBranch=5,
                            isSidechain="x",
                            agentId=7,
                        )
                    )
                    + line(
                        rec("system", subtype="compact_boundary", compactMetadata={"trigger": 5, "preTokens": 424242})
                    ).replace(b"424242", b"1" + b"0" * 30)
                    + line(rec("progress", data={"type": "agent_progress", "agentId": 5, "message": "x"}))
                    + line({"type": "summary", "summary": 5, "leafUuid": []}),
                )
            ]
        ],
        4,
    ),
    Case(
        "timestamps-garbage",
        [
            [
                (
                    MAIN,
                    line(asst(timestamp="yesterday"))
                    + line(rec(timestamp="9999-99-99T99:99Z"))
                    + line(rec(timestamp="+10000-01-01T00:00:00Z")),
                )
            ]
        ],
        3,
        check=undated_usage,
    ),
    Case("unknown-record-type", [[(MAIN, line(rec("hologram", payload={"x": 1})))]], 1, check=event_types("hologram")),
    Case("crlf-line-endings", [[(MAIN, line(rec())[:-1] + b"\r\n")]], 1, check=event_types("user")),
    Case(
        "torn-line-completed-later",
        [[(MAIN, line(asst())[:40])], [(MAIN, line(asst())[40:])]],
        1,
        check=expect_tokens(10, 20),
    ),
    Case("torn-tail-never-completed", [[(MAIN, line(rec()) + line(asst())[:-1])]], 1, check=no_message),
    Case("twenty-mib-line", [[(MAIN, HUGE_LINE)]], 1, check=event_types("user")),
    Case("binary-file", [[(MAIN, BINARY)]], BINARY_LINES),
    Case(
        "directory-named-like-a-transcript", [[mkdir(f"{SLUG}/x.jsonl"), mkdir(f"{SLUG}/{BAD}/subagents/y.jsonl")]], 0
    ),
    Case("fifo-named-like-a-transcript", [[fifo(f"{SLUG}/pipe.jsonl")]], 0),
    Case("symlink-file-out-of-root", [[symlink_to_outside("l.jsonl", directory=False)]], 0),
    Case("symlink-dir-out-of-root", [[symlink_to_outside("linked", directory=True)]], 0),
    Case("dangling-symlink", [[lambda root, _o: (root / SLUG / "gone.jsonl").symlink_to(root / "nowhere")]], 0),
    Case("symlink-loop", [[lambda root, _o: (root / SLUG / "loop").symlink_to(root / SLUG)]], 0),
    Case("non-utf8-file-name", [[(f"{SLUG}/caf\udcff.jsonl", line(rec()))]], 1, check=escaped_origin),
    Case("meta-sidecar-not-json", [[(f"{SLUG}/{BAD}/subagents/agent-a1.meta.json", b"\xff{not json")]], 1),
    Case("meta-sidecar-array", [[(f"{SLUG}/{BAD}/subagents/agent-a1.meta.json", b"[1,2,3]")]], 1),
    Case(
        "file-truncated-then-regrown",
        [[(MAIN, line(rec()) + line(asst()))], [truncate(MAIN, 0)], [(MAIN, line(asst(mid="msg_new")))]],
        3,
        check=reset_keeps_old_rows,
    ),
]


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "projects"
    (root / SLUG).mkdir(parents=True)
    good = [
        rec(sessionId=SID, uuid="g1"),
        asst(mid="msg_good", sessionId=SID, uuid="g2"),
        rec("system", sessionId=SID, uuid="g3", subtype="turn_duration", durationMs=5),
    ]
    (root / SLUG / f"{SID}.jsonl").write_bytes(b"".join(line(r) for r in good))
    outside = tmp_path / "outside"
    outside.mkdir()
    db = tmp_path / "t.db"
    conn = connect(db)
    migrate(conn)
    ingest_roots(conn, [root], now=NOW)
    conn.close()
    return root, outside, db


def _apply(step: Step, root: Path, outside: Path) -> None:
    for w in step:
        if callable(w):
            w(root, outside)
            continue
        rel, data = w
        path = os.path.join(os.fsencode(root), os.fsencode(rel))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "ab") as fh:
            fh.write(data)


def _ingest(root: Path, db: Path) -> Summary:
    conn = connect(db)
    try:
        return ingest_roots(conn, [root], now=NOW)
    finally:
        conn.close()


def test_catalogue_is_at_least_forty_with_distinct_ids() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert len(ids) >= 40


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_transcript_input(tree: tuple[Path, Path, Path], case: Case) -> None:
    root, outside, db = tree
    before = snapshot(db)
    skipped: dict[str, int] = {}
    recovered = 0
    for step in case.steps:
        _apply(step, root, outside)
        s = _ingest(root, db)
        for k, v in s.skipped.items():
            skipped[k] = skipped.get(k, 0) + v
        recovered += s.recovered
    after = snapshot(db)
    new = after["events_raw"][len(before["events_raw"]) :]
    assert len([r for r in new if r[2] != "ingestd"]) == case.rows
    assert skipped == case.skipped
    assert recovered == case.recovered
    invalid = q(db, "SELECT count(*) FROM events_raw WHERE event_type = 'invalid'")[0][0]
    assert invalid == sum(case.skipped.values())  # every counted skip is kept in the log
    assert_kept(before, after, session=SID)
    if case.check is not None:
        case.check(db)
    # a rerun over the same tree inserts nothing and changes nothing
    assert _ingest(root, db).rows_inserted == 0
    assert snapshot(db) == after


def test_every_bad_input_together_replays_equal(tree: tuple[Path, Path, Path], tmp_path: Path) -> None:
    root, _outside, db = tree
    for case in CASES:
        if case.id in {"twenty-mib-line", "message-id-reused-with-another-model"}:
            continue  # covered alone; keeps this test fast
        sub = Path(case.id.replace("-", "_"))
        for step in case.steps:
            for w in step:
                if callable(w):
                    continue  # tree-shaping cases are checked alone
                rel, data = w
                path = root / SLUG / sub / Path(rel).name
                path.parent.mkdir(parents=True, exist_ok=True)
                with open(path, "ab") as fh:
                    fh.write(data)
    _ingest(root, db)
    (tmp_path / "replay").mkdir()
    assert_replay_ok(db, tmp_path / "replay")


def _as_nobody(fn: Callable[[], int]) -> int:
    """Run ``fn`` in a forked child that dropped root (so file permissions apply); its result.

    The modules the standard library imports on first use are imported here first: where Python
    lives under a home only root may enter (``/root`` 0700), the child could not import them."""
    import _strptime  # noqa: F401  (datetime.strptime's)

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(r)
        code = 0
        try:
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            os.write(w, str(fn()).encode())
        except BaseException as e:
            os.write(w, f"error {type(e).__name__}: {e}".encode())
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        out = fh.read().decode()
    os.waitpid(pid, 0)
    if out.startswith("error"):
        raise AssertionError(out)
    return int(out)


def test_unreadable_file_is_skipped_and_counted_the_rest_ingested() -> None:
    # Root reads a chmod 000 file anyway: as root the ingest runs in a child that dropped to
    # nobody, where the permission bites as it does for any other user. (pytest's tmp_path sits
    # in a directory private to root, so the work goes in its own /tmp dir.)
    work = Path(tempfile.mkdtemp(prefix="ingestd-nobody-"))
    try:
        _unreadable(work)
    finally:
        shutil.rmtree(work)


def _unreadable(work: Path) -> None:
    root = work / "projects"
    (root / SLUG).mkdir(parents=True)
    locked = root / SLUG / f"{BAD}.jsonl"
    locked.write_bytes(line(rec()))
    locked.chmod(0o000)
    (root / SLUG / f"{SID}.jsonl").write_bytes(line(rec(sessionId=SID)))
    db = work / "u.db"
    conn = connect(db)
    migrate(conn)
    conn.close()
    as_root = os.geteuid() == 0
    if as_root:
        for p in [work, root, root / SLUG]:
            p.chmod(0o755)
        for p in work.iterdir():
            if p.is_file():
                os.chown(p, 65534, 65534)
        os.chown(work, 65534, 65534)

    def run() -> int:
        c = connect(db)
        try:
            s = ingest_roots(c, [root], now=NOW)
        finally:
            c.close()
        return s.files_unreadable * 1000 + s.rows_inserted

    try:
        got = _as_nobody(run) if as_root else run()
    except AssertionError as e:
        if "Operation not permitted" in str(e):
            pytest.skip("cannot drop privileges here")
        raise
    assert got == 1 * 1000 + 1  # one file unreadable, the other's line stored
    # once readable, the next run picks the file up: nothing was lost
    locked.chmod(0o644)
    assert _ingest(root, db).rows_inserted == 1
    assert q(db, "SELECT count(*) FROM events_raw WHERE session_id = ?", (BAD,)) == [(1,)]
