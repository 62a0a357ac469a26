"""Log payloads stored compressed, read back byte for byte (SPEC §3, §11, migration 0013,
``ingestd.store.payload``)."""

from __future__ import annotations

import apsw
import orjson
import pytest
import zstandard

from ingestd.core.records import NewLogRow
from ingestd.errors import StorageError
from ingestd.projection.verify import check_append_only, check_payloads
from ingestd.store import dictionary as zdict
from ingestd.store import payload
from ingestd.store import payload_blocks as blocks
from ingestd.store import payload_open as opened
from ingestd.store.connection import connect, write_txn
from ingestd.store.writer import apply_batch
from tests.store.conftest import stored

T = "2026-01-01T00:00:00.000Z"


@pytest.fixture(autouse=True)
def _per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are the per-row codecs': a few lines stay stored alone, not in their transcript's
    open block (migration 0019; tests/store/test_payload_open.py)."""
    monkeypatch.setattr(opened, "has_tables", lambda conn: False)


def _line(i: int) -> bytes:
    return orjson.dumps(
        {
            "type": "user",
            "sessionId": f"s{i % 7}",
            "uuid": f"u-{i}",
            "timestamp": T,
            "cwd": "/home/dev/code/project",
            "message": {"role": "user", "content": f"request number {i}: please look at module {i * 31 % 97}"},
        }
    )


def _rows(n: int, start: int = 0, origin: str = "p/a.jsonl") -> list[NewLogRow]:
    return [
        NewLogRow(f"k:{origin}:{i}", "jsonl", "user", _line(i), T, f"s{i % 7}", origin, 0, i * 1000)
        for i in range(start, start + n)
    ]


def test_codecs_round_trip_every_kind_of_payload() -> None:
    samples = [_line(i) for i in range(400)]
    dictionary = zstandard.train_dictionary(zdict.DICT_BYTES, samples).as_bytes()
    odd = [
        b"",
        b"\n",
        b'{"a": "\xff\xfe broken utf-8 \xed\xa0\x80 lone surrogate"}',
        bytes(range(256)) * 40,
        _line(5) * 3000,  # about 0.5 MB on one line
    ]
    for codecs in (payload.Codecs({}), payload.Codecs({1: None}), payload.Codecs({1: None, 2: dictionary})):
        for data in (*samples[:20], *odd):
            codec, blob = codecs.encode(data)
            assert codecs.decode(codec, blob) == data
            assert codecs.size_of(codec, blob) == len(data)
            assert codec == payload.RAW or len(blob) < len(data)
    with_dict = payload.Codecs({1: None, 2: dictionary})
    plain = payload.Codecs({1: None})
    line = _line(1234)
    assert with_dict.encode(line)[0] == 2
    assert len(with_dict.encode(line)[1]) < len(plain.encode(line)[1]) < len(line)
    # incompressible bytes are kept as they are
    noise = bytes((i * 7919 + 13) % 251 for i in range(64))
    assert plain.encode(noise) == (payload.RAW, noise)


def test_an_unknown_codec_or_a_damaged_value_is_a_storage_error() -> None:
    codecs = payload.Codecs({1: None})
    with pytest.raises(StorageError, match="codec 9"):
        codecs.decode(9, b"whatever")
    codec, blob = codecs.encode(_line(1) * 10)
    with pytest.raises(StorageError, match="does not decode"):
        codecs.decode(codec, blob[:-7])


def test_rows_before_the_dictionary_are_plain_zstd_then_the_dictionary_is_trained_andstored(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zdict, "TRAIN_MIN_ROWS", 300)
    monkeypatch.setattr(zdict, "TRAIN_ROWS", 400)
    monkeypatch.setattr(blocks, "BLOCK_MIN_BYTES", 10**9)  # the per-row codecs (blocks: test_payload_blocks)
    apply_batch(conn, _rows(200))
    assert {c for _, c, _ in stored(conn)} == {payload.PLAIN}
    assert conn.execute("SELECT count(*) FROM payload_codecs").fetchall() == [(1,)]
    apply_batch(conn, _rows(200, start=200))
    (dict_id, size) = conn.execute("SELECT id, length(dictionary) FROM payload_codecs WHERE id > 1").fetchall()[0]
    assert dict_id >= 2 and size > 1000
    codecs = [c for _, c, _ in stored(conn)]
    assert codecs == [payload.PLAIN] * 200 + [dict_id] * 200
    # every row reads back as the bytes written, whichever codec
    want = {r.idempotency_key: r.payload for r in _rows(400)}
    for key, codec, blob in stored(conn):
        assert payload.decode(conn, codec, blob) == want[key]
    # the idempotency key is the row's own: the same rows again insert nothing
    assert apply_batch(conn, _rows(400)).inserted == 0
    assert check_payloads(conn).ok


def test_a_dictionary_trained_in_a_rolled_back_batch_is_never_referenced(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zdict, "TRAIN_MIN_ROWS", 100)

    def boom(c: apsw.Connection) -> None:
        c.executemany(
            "INSERT INTO events_raw (idempotency_key, source, event_type, payload, received_at, session_id,"
            " origin, origin_gen, origin_offset, codec) VALUES (?,?,?,?,?,?,?,?,?,?)",
            payload.encode_rows(c, _rows(150)),
        )
        raise RuntimeError("the batch fails after its rows were encoded")

    with pytest.raises(RuntimeError):
        write_txn(conn, boom)
    assert conn.execute("SELECT count(*) FROM payload_codecs").fetchall() == [(1,)]
    # another connection trains and commits its own dictionary, which takes the same id
    other = connect(conn.filename)
    apply_batch(other, _rows(150, start=1000, origin="p/b.jsonl"))
    apply_batch(conn, _rows(150))
    assert conn.execute("SELECT count(*) FROM payload_codecs").fetchall() == [(2,)]
    [(dict_id,)] = conn.execute("SELECT id FROM payload_codecs WHERE id > 1").fetchall()
    assert {c for _, c, _ in stored(conn)} == {dict_id}
    want = {r.idempotency_key: r.payload for r in (*_rows(150), *_rows(150, start=1000, origin="p/b.jsonl"))}
    for c in (conn, other):
        for key, codec, blob in stored(c):
            assert payload.decode(c, codec, blob) == want[key]
    assert check_payloads(conn).ok


def test_the_codecs_table_is_append_only_and_verify_probes_it(conn: apsw.Connection) -> None:
    apply_batch(conn, _rows(3))
    for sql in (
        "UPDATE payload_codecs SET dictionary = x'00' WHERE id = 1",
        "DELETE FROM payload_codecs WHERE id = 1",
        "UPDATE events_raw SET codec = 0",
        "UPDATE log_rows SET codec = 0",
    ):
        with pytest.raises(apsw.ConstraintError, match="append-only"):
            conn.execute(sql)
    assert check_append_only(conn).ok
    conn.execute("DROP TRIGGER payload_codecs_no_delete")
    got = check_append_only(conn)
    assert not got.ok
    assert any("payload_codecs_no_delete is missing" in d for d in got.details)


def test_verify_names_a_payload_that_does_not_decode(conn: apsw.Connection) -> None:
    apply_batch(conn, _rows(5))
    assert check_payloads(conn).details == ["every payload decodes (codec 1: 5)"]
    conn.execute("DROP TRIGGER log_rows_no_update")
    conn.execute("UPDATE log_rows SET payload = x'28b52ffd00' WHERE id = 2")
    conn.execute("UPDATE log_rows SET codec = 7 WHERE id = 4")
    got = check_payloads(conn)
    assert not got.ok
    assert [d.split(":")[0] for d in got.details] == ["events_raw row 2", "events_raw row 4"]


def test_a_failed_training_is_retried_once_the_log_has_doubled(
    conn: apsw.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(zdict, "TRAIN_MIN_ROWS", 100)
    calls: list[int] = []

    def refuse(*args: object, **kw: object) -> object:
        calls.append(len(args[1]))  # type: ignore[arg-type]
        raise zstandard.ZstdError("cannot train dict")

    monkeypatch.setattr(zstandard, "train_dictionary", refuse)
    apply_batch(conn, _rows(100))
    for i in range(5):  # small commits, as a daemon's: no new attempt each time
        apply_batch(conn, _rows(10, start=100 + 10 * i))
    assert len(calls) == 1
    apply_batch(conn, _rows(60, start=200))  # the log has doubled since the failure
    assert len(calls) == 2
    assert {c for _, c, _ in stored(conn)} == {payload.PLAIN}
    assert check_payloads(conn).ok
