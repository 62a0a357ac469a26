"""A hook key never collapses two different deliveries, and identical bytes of an event with a
natural identity are one row (SPEC §3; ``ingestd.core.hookkeys``).

Every real body is used: ``../shared/corpus/hooks/`` (Claude Code 1.0.48 to 2.1.119) and
``fixtures/claude-2.1.332/hooks/`` (every event 2.1.332 fired). For each, every field is mutated in
turn (each leaf changed, each key removed, a key added to each object): the mutated delivery's
key differs from the original's. The same bytes sent again get the original's key when the event
has a natural identity (rule 2) and a key of its own otherwise (rule 3: never collapse).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestd.core import hookkeys
from ingestd.core.hookkeys import HookEvent, idempotency_key, parse_body

REPO = Path(__file__).resolve().parents[2]
CORPUS_HOOKS = REPO.parent / "shared" / "corpus" / "hooks"
FIXTURE_HOOKS = REPO / "fixtures" / "claude-2.1.332" / "hooks"
MAX_PATHS = 400  # a body's fields mutated (tool_response can hold thousands of leaves)


def _bodies() -> list[tuple[str, bytes]]:
    """(where, body bytes) of every real hook body: the corpus's lines as captured, the fixtures' bodies."""
    out: list[tuple[str, bytes]] = []
    if CORPUS_HOOKS.is_dir():
        for path in sorted(CORPUS_HOOKS.rglob("*.jsonl")):
            for i, line in enumerate(path.read_bytes().splitlines()):
                if isinstance(parse_body(line), HookEvent):
                    out.append((f"{path.relative_to(CORPUS_HOOKS)}:{i + 1}", line))
    for path in sorted(FIXTURE_HOOKS.glob("*.jsonl")):
        for i, line in enumerate(path.read_bytes().splitlines()):
            out.append((f"claude-2.1.332/{path.name}:{i + 1}", orjson.dumps(orjson.loads(line)["body"])))
    return out


BODIES = _bodies()


def _doc(body: bytes) -> dict[str, Any]:
    """The body as the receiver decodes it (leniently: real bodies carry lone surrogates)."""
    ev = parse_body(body)
    assert isinstance(ev, HookEvent)
    return ev.body


def _key(body: bytes, counter: int) -> str:
    ev = parse_body(body)
    assert isinstance(ev, HookEvent)
    return idempotency_key(ev, header_key=None, received_ns=1_000_000, instance="test", counter=counter)


def _changed(v: Any) -> Any:
    """Another JSON value in place of ``v``."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v + 0.5
    if isinstance(v, str):
        return v + "x"
    if v is None:
        return 0
    return None


def mutations(doc: Any, limit: int = MAX_PATHS) -> Iterator[Any]:
    """Copies of ``doc`` each differing from it in one field: a leaf changed, a key removed, a key added."""
    paths: list[tuple[Any, ...]] = []

    def walk(v: Any, path: tuple[Any, ...]) -> None:
        if len(paths) >= limit:
            return
        paths.append(path)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, (*path, k))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, (*path, i))

    walk(doc, ())
    for path in paths:
        parent_path, leaf = path[:-1], path[-1] if path else None
        target = doc
        for p in path:
            target = target[p]
        if isinstance(target, dict):
            yield _set(doc, path, {**target, "zz_added": 1})
        elif not isinstance(target, list):
            yield _set(doc, path, _changed(target))
        if path and isinstance(leaf, str):
            parent = doc
            for p in parent_path:
                parent = parent[p]
            yield _set(doc, parent_path, {k: x for k, x in parent.items() if k != leaf})


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: _set(doc[head], rest, value)}
    out = list(doc)
    out[head] = _set(doc[head], rest, value)
    return out


def test_the_real_bodies_cover_every_event_that_fired() -> None:
    names = {_doc(b)["hook_event_name"] for _, b in BODIES}
    assert len(names) >= 32 and {"PostToolBatch", "SubagentStop", "PreSkillShellCommand"} <= names


@pytest.mark.parametrize(("where", "body"), BODIES, ids=[w for w, _ in BODIES])
def test_any_changed_field_is_another_row_and_the_same_bytes_are_one_only_with_an_identity(
    where: str, body: bytes
) -> None:
    first = _key(body, counter=0)
    ev = parse_body(body)
    assert isinstance(ev, HookEvent)
    again = _key(body, counter=1)
    if hookkeys.identity(ev) is not None:
        assert again == first, "the same bytes of an event with a natural identity are one row"
    else:
        assert again != first and first.startswith("h:r:"), "an event without identity never collapses"
    doc = _doc(body)
    for i, mutated in enumerate(mutations(doc)):
        m = orjson.dumps(mutated)
        if not isinstance(parse_body(m), HookEvent):
            continue  # no longer an event (the event name or session id removed): refused, no key
        assert _key(m, counter=2 + i) != first, (where, mutated)


def test_a_refired_subagent_stop_is_a_second_row() -> None:
    """A Stop hook that blocks makes Claude Code fire SubagentStop again for the same agent, with
    another body: both are kept (a 2xx for a body then missing from the log broke SPEC §3)."""
    line = (FIXTURE_HOOKS / "SubagentStop.jsonl").read_bytes().splitlines()[0]
    first = orjson.loads(line)["body"]
    refired = {**first, "stop_hook_active": True, "last_assistant_message": "Checked again."}
    a, b = orjson.dumps(first), orjson.dumps(refired)
    assert _key(a, 0) != _key(b, 1)
    assert _key(a, 0) == _key(a, 1)  # the settings-plus-plugin double of one firing: one row


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(BODIES),
    st.text(min_size=1, max_size=8),
    st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8)),
)
def test_a_key_added_anywhere_at_the_top_is_another_row(pair: tuple[str, bytes], name: str, value: Any) -> None:
    _, body = pair
    doc = _doc(body)
    if name in doc:
        return
    assert _key(orjson.dumps({**doc, name: value}), 1) != _key(body, 0)
