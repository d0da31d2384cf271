"""Key identity (``reference.model.keys``): keys are equal exactly when their serialized bytes are.

The Hypothesis test pairs JSON values with look-alikes that Python considers equal or that differ
only in ways Kafka's bytes do or do not see: ``1`` / ``1.0`` / ``true`` / ``"1"``, objects with
their fields reordered, lone surrogates (written as ``?`` by Java's UTF-8 encoder) and nestings of
these. ``key_text`` must draw the same line as ``key_identity``.
"""
from __future__ import annotations

import copy
import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from kssim.reference.model.keys import key_identity, key_text, serialized_key

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "?"]

text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=6),  # lone surrogates included
    st.text(st.sampled_from(SURROGATES + ["a", "é"]), max_size=4),
    st.integers(-10**20, 10**20).map(str),  # numeric strings
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.sampled_from(["true", "false", "null", "1", "1.0", ""]),
)
scalars = st.one_of(
    st.booleans(),
    st.integers(-2**64, 2**64),  # beyond a long too
    st.integers(-2**53, 2**53).map(float),  # floats equal to ints
    st.floats(allow_nan=False, allow_infinity=False),
    text,
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(text, children, max_size=3)),
    max_leaves=8,
)


def _replace_surrogates(s: str) -> str:
    return "".join("?" if 0xD800 <= ord(c) <= 0xDFFF else c for c in s)


@st.composite
def look_alike(draw, value):
    """A value Python may call equal to ``value``, or one serialized alike or almost alike."""
    if isinstance(value, bool):
        return draw(st.sampled_from([int(value), float(value), str(value).lower(), value]))
    if isinstance(value, int):
        choices = [str(value), value, -value]
        if abs(value) <= 2**53:
            choices.append(float(value))
        if value in (0, 1):
            choices.append(bool(value))
        return draw(st.sampled_from(choices))
    if isinstance(value, float):
        choices = [json.dumps(value), value, -value]
        if value.is_integer():
            choices.append(int(value))
        return draw(st.sampled_from(choices))
    if isinstance(value, str):
        return draw(st.sampled_from([_replace_surrogates(value), value, value + "\ud800", json.dumps(value)]))
    if isinstance(value, list):
        return [draw(look_alike(v)) for v in value]
    items = [(k, draw(look_alike(v))) for k, v in value.items()]
    return dict(draw(st.permutations(items))) if items else {}


@st.composite
def key_pairs(draw):
    a = draw(json_values)
    b = draw(st.one_of(look_alike(a), json_values))
    return a, b


@settings(max_examples=600, deadline=None)
@given(key_pairs())
@example((1, True))
@example((1, 1.0))
@example((1, "1"))
@example((True, "true"))
@example(({"a": 1, "b": 2}, {"b": 2, "a": 1}))
@example(("\ud800", "?"))
@example(("\x01", True))
@example(([1, {"x": "\udfff"}], [1, {"x": "?"}]))
def test_key_text_draws_the_same_line_as_key_identity(pair):
    a, b = pair
    assert (key_text(a) == key_text(b)) == (key_identity(a) == key_identity(b))
    assert key_identity(a) == key_identity(a) and hash(key_identity(a)) == hash(key_identity(a))


@given(json_values)
@settings(max_examples=300, deadline=None)
def test_identity_is_hashable_and_same_type_keys_share_it_exactly_when_their_bytes_are_equal(value):
    twin = copy.deepcopy(value)  # same JSON value, a fresh object
    assert key_identity(value) == key_identity(twin)
    assert {key_identity(value): 1}[key_identity(twin)] == 1
    assert serialized_key(value) == serialized_key(twin)


def test_python_equal_keys_are_different_keys():
    keys = [1, True, 1.0, "1", [1], {"a": 1}]
    assert len({key_identity(k) for k in keys}) == len(keys)
    assert key_identity({"a": 1, "b": 2}) != key_identity({"b": 2, "a": 1})
    assert key_identity([1, 2]) == key_identity([1, 2])


def test_ascii_strings_are_their_own_identity():
    assert key_identity("k1") == "k1"
    assert key_identity("\ud800x") == "?x" == key_identity("?x")  # Java's UTF-8 writes '?'
    assert key_identity(None) is None and key_text(None) is None
