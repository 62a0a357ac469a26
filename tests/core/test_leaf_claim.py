"""A summary's leaf (SPEC §4.1, ``core.blocks.leaf_claim`` / ``best_leaf``): the smallest (session id,
time) among the records with the ``uuid`` its ``leafUuid`` names; a record without a session, or with
another uuid, makes no claim; a record's refused timestamp gives way to its read time."""

from __future__ import annotations

import itertools

from ingestd.core.blocks import best_leaf, leaf_claim

READ = "2026-03-01T00:00:00.000Z"


def test_only_the_named_record_with_a_session_claims() -> None:
    rec = {"uuid": "u1", "timestamp": "2026-01-01T00:00:00Z"}
    assert leaf_claim(rec, "s", READ, "u1") == ("s", "2026-01-01T00:00:00.000Z")
    assert leaf_claim(rec, "s", READ, "u2") is None
    assert leaf_claim(rec, None, READ, "u1") is None
    assert leaf_claim(None, "s", READ, "u1") is None
    assert leaf_claim({"uuid": "u1", "timestamp": "yesterday"}, "s", READ, "u1") == ("s", READ)


def test_the_leaf_is_the_smallest_claim_in_any_order() -> None:
    claims = [
        ("b", "2026-01-01T00:00:00.000Z"),
        None,
        ("a", "2026-01-02T00:00:00.000Z"),
        ("a", "2026-01-01T00:00:00.000Z"),
    ]
    for order in itertools.permutations(claims):
        assert best_leaf(order) == ("a", "2026-01-01T00:00:00.000Z")
    assert best_leaf([None, None]) is None
