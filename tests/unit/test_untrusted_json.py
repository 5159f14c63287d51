"""`app.untrusted_json.loads`: json.loads with a bound on nesting, a ValueError beyond it."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.untrusted_json import MAX_DEPTH, JSONNestingError, loads


def nested(depth: int, kind: str = "[") -> str:
    if kind == "[":
        return "[" * depth + "]" * depth
    return '{"k":' * depth + "1" + "}" * depth


def depth_of(value: object) -> int:
    depth, level = 0, [value]
    while level:
        containers = [item for item in level if isinstance(item, (list, dict))]
        if not containers:
            return depth
        depth += 1
        level = [child for item in containers for child in (item.values() if isinstance(item, dict) else item)]
    return depth


@pytest.mark.parametrize("kind", ["[", "{"])
def test_max_depth_is_read_and_one_more_is_refused_at_the_first_bracket_too_many(kind):
    assert depth_of(loads(nested(MAX_DEPTH, kind))) == MAX_DEPTH
    with pytest.raises(JSONNestingError) as refused:
        loads(nested(MAX_DEPTH + 1, kind))
    assert isinstance(refused.value, ValueError)
    opening = 1 if kind == "[" else len('{"k":')
    assert refused.value.pos == MAX_DEPTH * opening


def test_far_deeper_and_unterminated_text_is_refused_not_a_recursion_error():
    for text in (nested(100_000), "[" * 100_000, '{"a":' * 5_000):
        with pytest.raises(JSONNestingError):
            loads(text)
        with pytest.raises(JSONNestingError):
            loads(text.encode())


def test_text_that_fails_before_it_nests_too_deep_fails_as_json_loads_says():
    # Closing brackets first; an unterminated string of escaped quotes 300 levels down.
    for text in ("]" * 10 + "[" * 5_000, "[" * 300 + '"' + '\\"' * 20_000):
        with pytest.raises(json.JSONDecodeError) as refused:
            loads(text)
        assert not isinstance(refused.value, JSONNestingError)


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"code": "[" * 5_000 + '\\"{' * 300, "list": [[1, "]]]"]]})
    assert loads(text) == json.loads(text)


def test_other_failures_stay_what_json_loads_raises():
    with pytest.raises(json.JSONDecodeError) as malformed:
        loads('{"a": }')
    assert not isinstance(malformed.value, JSONNestingError)
    with pytest.raises(UnicodeDecodeError):
        loads(b'"\xff"')


def nestings(max_leaves: int = 40) -> st.SearchStrategy[object]:
    scalars = st.one_of(st.integers(), st.text(alphabet='[]{}"\\ab', max_size=6), st.none())
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3), st.dictionaries(st.text(alphabet="[{a", max_size=3), children, max_size=3)
        ),
        max_leaves=max_leaves,
    )


@settings(max_examples=150, deadline=None)
@given(value=nestings(), wrap=st.integers(min_value=MAX_DEPTH - 12, max_value=MAX_DEPTH + 2))
def test_refused_exactly_when_deeper_than_max_depth(value, wrap):
    wrapped: object = value
    for index in range(wrap):
        wrapped = [wrapped] if index % 2 else {"[": wrapped, "x": "]}"}
    text = json.dumps(wrapped)
    if depth_of(wrapped) > MAX_DEPTH:
        with pytest.raises(JSONNestingError):
            loads(text)
    else:
        assert loads(text) == json.loads(text)
