"""A blank ``sessionId`` (empty or only white space) is no identity: a transcript line's falls back
to the session its path names, and a hook body with one is refused with 400 (SPEC §3, §4.1).

Regression: a hook with ``session_id: "   "`` was stored as a session that ``tree``
and the API could not reach (they strip what they are given), and a transcript line too.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ingestd.core.decode import TOO_DEEP
from ingestd.core.framing import Line, Oversized
from ingestd.core.hookkeys import Rejected, parse_body
from ingestd.core.projector import decode_row
from ingestd.core.records import line_row, oversized_row


@pytest.mark.parametrize("sid", ["", "   ", "\t\n", "\u3000"])
def test_a_blank_transcript_session_id_is_the_paths(sid: str) -> None:
    data = json.dumps({"type": "user", "sessionId": sid, "uuid": "u1"}).encode()
    row = line_row(Line(0, data), origin="o", origin_hash="h", gen=0, received_at="t", path_session="p")
    assert row.session_id == "p"


@pytest.mark.parametrize("sid", ["", "   ", "\t\n"])
def test_a_blank_hook_session_id_is_refused(sid: str) -> None:
    got = parse_body(json.dumps({"hook_event_name": "Stop", "session_id": sid}).encode())
    assert isinstance(got, Rejected) and got.reason == "missing_session_id"


def test_a_session_id_with_spaces_around_is_kept_as_given() -> None:
    data = json.dumps({"type": "user", "sessionId": " s ", "uuid": "u1"}).encode()
    row = line_row(Line(0, data), origin="o", origin_hash="h", gen=0, received_at="t", path_session="p")
    assert row.session_id == " s "


def _too_deep(sid: str) -> bytes:
    """A user line nested past orjson's limit (1024 levels), ``sid`` in its head."""
    head = json.dumps({"type": "user", "sessionId": sid, "uuid": "u1"})[:-1].encode()
    return head + b', "message": {"content": ' + b"[" * 1100 + b"]" * 1100 + b"}}"


@pytest.mark.parametrize("sid", ["", "   ", "\t\n"])
def test_a_blank_session_id_in_a_too_deep_line_is_the_paths(sid: str) -> None:
    data = _too_deep(sid)
    row = line_row(Line(0, data), origin="o", origin_hash="h", gen=0, received_at="t", path_session="p")
    assert row.reason == TOO_DEEP
    assert row.session_id == "p"


def test_a_too_deep_lines_own_session_id_is_kept() -> None:
    row = line_row(Line(0, _too_deep("s1")), origin="o", origin_hash="h", gen=0, received_at="t", path_session="p")
    assert row.session_id == "s1"


@pytest.mark.parametrize(("sid", "want"), [("   ", "p"), ("", "p"), ("s1", "s1")])
def test_an_oversized_lines_session_id_blank_or_not(sid: str, want: str) -> None:
    head = json.dumps({"type": "user", "sessionId": sid, "uuid": "u1"})[:-1].encode() + b', "message": '
    ov = Oversized(offset=0, length=10 << 20, digest="d" * 16, head=head, tail=b'"}}')
    row = oversized_row(ov, origin="o", origin_hash="h", gen=0, received_at="t", path_session="p")
    assert row.session_id == want


def test_a_too_deep_line_carries_its_salvaged_record() -> None:
    # the projector takes it as it is (``projector.decode_row``) instead of decoding and salvaging again
    row = line_row(Line(0, _too_deep("s1")), origin="o", origin_hash="h", gen=0, received_at="t", path_session="p")
    assert row.obj == {"type": "user", "sessionId": "s1", "uuid": "u1"}
    assert row.obj == decode_row(row.logged(1)) == decode_row(replace(row.logged(1), obj=None))
