"""Splicing into JSON text: spans are exact, insertions keep every other byte (ingestd.core.jsonedit)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingestd.core import jsonedit

TEXT = '{ "a": [1, "x]}\\"", {"b": null}], "c": {} ,"d":true }'


def test_spans_cover_exactly_each_value() -> None:
    root = jsonedit.parse(TEXT)
    assert root.kind == "object" and (root.start, root.end) == (0, len(TEXT))
    a = root.members["a"]
    assert TEXT[a.start : a.end] == '[1, "x]}\\"", {"b": null}]'
    assert [TEXT[i.start : i.end] for i in a.items] == ["1", '"x]}\\""', '{"b": null}']
    assert TEXT[root.members["c"].start : root.members["c"].end] == "{}"
    assert TEXT[root.members["d"].start : root.members["d"].end] == "true"


@pytest.mark.parametrize("bad", ["", "{", '{"a" 1}', "[1,]x", '{"a":1} 2', '"open', "{1: 2}"])
def test_what_is_not_one_json_value_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        jsonedit.parse(bad)


def test_inserting_into_empty_and_full_containers_keeps_the_rest() -> None:
    text = '{\n  "x": [ 1,2 ],\n  "e": {}\n}\n'
    root = jsonedit.parse(text)
    lay = jsonedit.Layout("  ")
    edits = [
        jsonedit.insertion(text, root.members["x"], [jsonedit.element({"k": 3}, lay, 1)], 1, lay),
        jsonedit.insertion(text, root.members["e"], [jsonedit.member("n", [1], lay, 1)], 1, lay),
        jsonedit.insertion(text, root, [jsonedit.member("z", 0, lay, 0)], 0, lay),
    ]
    out = jsonedit.apply(text, edits)
    assert json.loads(out) == {"x": [1, 2, {"k": 3}], "e": {"n": [1]}, "z": 0}
    assert out.startswith('{\n  "x": [ 1,2,\n    {\n      "k": 3\n    } ],\n  "e": {\n    "n": [\n      1\n    ]\n  },')


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
    max_leaves=10,
)


@given(
    doc=st.dictionaries(st.text(max_size=4), json_values, max_size=4),
    new=json_values,
    indent=st.sampled_from([None, 2, "\t"]),
)
def test_appending_a_member_anywhere_round_trips(doc: dict[str, object], new: object, indent: object) -> None:
    text = json.dumps(doc, indent=indent)  # type: ignore[arg-type]
    lay = jsonedit.Layout(
        None if indent is None else (" " * indent if isinstance(indent, int) else str(indent)),
        ": ",
        ", " if indent is None else ",",
    )
    key = "\u2603new" + str(len(doc))
    root = jsonedit.parse(text)
    out = jsonedit.apply(text, [jsonedit.insertion(text, root, [jsonedit.member(key, new, lay, 0)], 0, lay)])
    assert json.loads(out) == {**doc, key: new}
    assert out.startswith(text[: root.end - 1].rstrip())  # everything before the insertion kept


@given(
    items=st.lists(json_values, max_size=6),
    drop=st.sets(st.integers(0, 5)),
    indent=st.sampled_from([None, 2, 4]),
)
def test_removing_any_children_round_trips(items: list[object], drop: set[int], indent: int | None) -> None:
    text = json.dumps({"keep": 1, "list": items, "tail": [0]}, indent=indent)
    root = jsonedit.parse(text)
    lst = root.members["list"]
    gone = [c for i, c in enumerate(lst.items) if i in drop]
    out = jsonedit.remove(text, jsonedit.removals(lst, gone))
    want = [x for i, x in enumerate(items) if i not in drop]
    assert json.loads(out) == {"keep": 1, "list": want, "tail": [0]}
    # members too: drop "keep" and "tail" around the list
    out2 = jsonedit.remove(text, jsonedit.removals(root, [root.members["keep"], root.members["tail"]]))
    assert json.loads(out2) == {"list": items}
