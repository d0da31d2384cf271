"""The expression and predicate language of topology graphs (``reference.model.graph.expressions``).

Each form is evaluated on representative keys and values (nulls, non-objects, the edges of a Java
long, floorMod signs, UTF-16 order), the JSON rules are checked against what Jackson and Java do
(TEXT, serialized bytes, equality), every malformed form must be an error at its exact path, and
generated expressions must survive a round trip through their JSON form.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kssim.reference.model.graph import expressions as ex
from kssim.reference.model.graph.expressions import (LONG_MAX, LONG_MIN, Add, And, Cmp, Concat, Const, Field, IsNull,
                                               KeyField, KeyRef, ListExpr, Mod, Not, ObjectExpr, Or, ValueRef,
                                               compile_expr, compile_pred, expr_to_json, java_double, json_equal,
                                               parse_expr, parse_pred, pred_to_json, reads_key, serialize, text,
                                               utf16_compare, wrap_long)


class Bad(Exception):
    """What the test's ``fail`` builds: the path and the message, kept apart."""

    def __init__(self, where, message):
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


def fail(where, message):
    return Bad(where, message)


W = "topology.graph[2].select_key"


def ev(expr_json, key=None, value=None):
    return compile_expr(parse_expr(expr_json, W, fail))(key, value)


def holds(pred_json, key=None, value=None):
    return compile_pred(parse_pred(pred_json, "topology.graph[1].filter", fail))(key, value)


# --- references and fields ---------------------------------------------------------------------

def test_key_and_value_refs_return_the_record_as_is():
    value = {"a": [1, 2]}
    assert ev("$value", "k", value) is value
    assert ev("$key", {"key": "k", "start": 0, "end": 10}, 1) == {"key": "k", "start": 0, "end": 10}
    assert ev("$key", None, 1) is None
    assert ev("$value", "k", None) is None


@pytest.mark.parametrize("value", [None, "a", 5, True, 1.5, [{"n": 1}], {"m": 1}, {"n": None}])
def test_field_is_null_unless_the_value_is_an_object_holding_the_name(value):
    assert ev({"field": "n"}, "k", value) is None


def test_field_reads_a_member_of_any_type():
    assert ev({"field": "n"}, None, {"n": 3}) == 3
    assert ev({"field": "n"}, None, {"n": {"x": [1]}}) == {"x": [1]}
    assert ev({"field": "n"}, None, {"n": False}) is False
    assert ev({"field": ""}, None, {"": "empty name"}) == "empty name"


def test_key_field_reads_the_key_including_a_windowed_one():
    windowed = {"key": {"g": "x"}, "start": 100, "end": 110}
    assert ev({"key_field": "start"}, windowed, "v") == 100
    assert ev({"key_field": "key"}, windowed, "v") == {"g": "x"}
    assert ev({"key_field": "g"}, "plain", {"g": 1}) is None
    assert ev({"key_field": "g"}, None, {"g": 1}) is None


# --- const, object, list, concat ----------------------------------------------------------------

@pytest.mark.parametrize("const", [None, 0, -1, "s", True, 1.5, [], {}, [None, {"a": [1]}], {"b": 2, "a": 1}])
def test_const_is_its_json_value(const):
    assert ev({"const": const}, "k", "v") == const
    assert type(ev({"const": const}, "k", "v")) is type(const)


def test_object_keeps_member_order_and_null_members():
    result = ev({"object": {"z": "$key", "a": {"field": "missing"}, "m": {"const": 1}}}, "k", {"x": 1})
    assert result == {"z": "k", "a": None, "m": 1}
    assert list(result) == ["z", "a", "m"]
    assert serialize(result) == b'{"z":"k","a":null,"m":1}'
    assert ev({"object": {}}, "k", "v") == {}


def test_list_keeps_order_and_null_elements():
    assert ev({"list": ["$value", {"field": "q"}, "$key"]}, "k", "v") == ["v", None, "k"]
    assert ev({"list": []}, "k", "v") == []


def test_concat_joins_the_text_of_each_part():
    value = {"s": "x", "i": -12, "b": True, "o": {"b": 1, "a": "é\"\n"}, "l": [1, None, "t"], "f": 1.5}
    parts = [{"field": n} for n in ("s", "i", "b", "o", "l", "f", "missing")]
    assert ev({"concat": parts}, None, value) == 'x-12true{"b":1,"a":"é\\"\\n"}[1,null,"t"]1.5null'
    assert ev({"concat": ["$key", {"const": "|"}]}, None, None) == "null|"
    assert ev({"concat": []}, "k", "v") == ""
    assert ev({"concat": ["$value"]}, "k", 7) == "7"


# --- add and mod ---------------------------------------------------------------------------------

@pytest.mark.parametrize("a, b, expected", [
    (1, 2, 3),
    (-5, 3, -2),
    (LONG_MAX, 1, LONG_MIN),
    (LONG_MIN, -1, LONG_MAX),
    (LONG_MAX, LONG_MAX, -2),
    (LONG_MIN, LONG_MIN, 0),
    (True, 1, None),          # bool is not an integer
    (1, False, None),
    (1.0, 1, None),           # a float is not an integer
    (None, 1, None),
    (1, None, None),
    ("1", 1, None),
    ([1], 1, None),
    (LONG_MAX + 1, 0, None),  # beyond a long: not an integer
])
def test_add_wraps_as_a_java_long_and_is_null_unless_both_are_integers(a, b, expected):
    result = ev({"add": [{"field": "a"}, {"field": "b"}]}, None, {"a": a, "b": b})
    assert result == expected and type(result) is type(expected)


@pytest.mark.parametrize("x, divisor, expected", [
    (7, 3, 1), (-7, 3, 2), (7, -3, -2), (-7, -3, -1), (0, 5, 0), (6, -3, 0),
    (LONG_MIN, -1, 0), (LONG_MIN, 7, 6), (LONG_MAX, LONG_MIN, -1), (-1, LONG_MAX, LONG_MAX - 1),
    (True, 3, None), (2.0, 3, None), (None, 3, None), ("7", 3, None),
])
def test_mod_is_java_floor_mod(x, divisor, expected):
    result = ev({"mod": ["$value", divisor]}, None, x)
    assert result == expected and type(result) is type(expected)


def test_wrap_long():
    assert wrap_long(1 << 63) == LONG_MIN
    assert wrap_long(-(1 << 63) - 1) == LONG_MAX
    assert wrap_long(1 << 64) == 0
    assert wrap_long(5) == 5


# --- predicates ------------------------------------------------------------------------------------

NULL_RULES = [
    # left, right, ==, !=, <, <=, >, >=
    (None, None, True, False, False, False, False, False),
    (None, 1, False, True, False, False, False, False),
    ("a", None, False, True, False, False, False, False),
    (1, 1, True, False, False, True, False, True),
    (1, 2, False, True, True, True, False, False),
    (3, -2, False, True, False, False, True, True),
    ("b", "a", False, True, False, False, True, True),
    ("a", "ab", False, True, True, True, False, False),
    (1, "1", False, True, False, False, False, False),   # other pairs of types: never ordered
    (True, 1, False, True, False, False, False, False),
    (True, False, False, True, False, False, False, False),
    (1.5, 2.5, False, True, False, False, False, False),
    (1, 1.0, False, True, False, False, False, False),
    ([1], [1], True, False, False, False, False, False),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True, False, False, False, False, False),
    (LONG_MAX + 1, 0, False, True, False, False, False, False),
]


@pytest.mark.parametrize("left, right, expected", [(row[0], row[1], list(row[2:])) for row in NULL_RULES])
def test_cmp_operators(left, right, expected):
    value = {"l": left, "r": right}
    got = [holds({"cmp": [{"field": "l"}, op, {"field": "r"}]}, None, value) for op in ex.CMP_OPS]
    assert got == expected


def test_string_order_is_by_utf16_code_units_as_java():
    # Python orders code points ("\uffff" < "\U0001F600"); Java's compareTo sees \uD83D first
    emoji, last_bmp = "\U0001F600", "\uffff"
    assert last_bmp < emoji  # Python's own order, the trap
    value = {"l": emoji, "r": last_bmp}
    assert holds({"cmp": [{"field": "l"}, "<", {"field": "r"}]}, None, value)
    assert not holds({"cmp": [{"field": "l"}, ">=", {"field": "r"}]}, None, value)
    assert utf16_compare(emoji, last_bmp) == -1
    assert utf16_compare("\ue000", "\U00010000") == 1
    assert utf16_compare("a", "a\U00010000") == -1
    assert utf16_compare("é", "é") == 0
    assert utf16_compare("Z", "a") == -1


def _reference_units(s):
    units = []
    for char in s:
        code = ord(char)
        if code >= 0x10000:
            code -= 0x10000
            units += [0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)]
        else:
            units.append(code)
    return units


@settings(max_examples=300)
@given(st.text(max_size=5), st.text(max_size=5))
def test_utf16_compare_matches_a_unit_by_unit_reference(a, b):
    ua, ub = _reference_units(a), _reference_units(b)
    assert utf16_compare(a, b) == (ua > ub) - (ua < ub)


def test_is_null_not_and_or():
    assert holds({"is_null": {"field": "x"}}, None, {"x": None})
    assert holds({"is_null": {"field": "x"}}, None, "not an object")
    assert not holds({"is_null": "$value"}, None, 0)
    assert holds({"not": {"is_null": "$value"}}, None, 0)
    assert holds({"and": []}) and not holds({"or": []})
    yes, no = {"is_null": "$key"}, {"not": {"is_null": "$key"}}
    for n in range(1, 5):
        for true_at in range(-1, n):
            preds = [yes if i == true_at else no for i in range(n)]
            assert holds({"or": preds}) == (true_at >= 0)
            preds = [no if i == true_at else yes for i in range(n)]
            assert holds({"and": preds}) == (true_at < 0)


def test_predicates_return_bools():
    for pred in ({"cmp": ["$value", "<", {"const": 3}]}, {"cmp": ["$value", "==", {"const": 1}]},
                 {"is_null": "$value"}, {"and": [{"is_null": "$key"}]}, {"or": []}):
        assert holds(pred, None, 1) in (True, False)
        assert type(holds(pred, None, 1)) is bool


# --- TEXT, bytes, equality ----------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    (None, "null"), ("plain é", "plain é"), ("", ""), (0, "0"), (-42, "-42"), (LONG_MIN, str(LONG_MIN)),
    (True, "true"), (False, "false"), ([], "[]"), ({}, "{}"),
    ({"b": [1, {"c": None}], "a": "q\"\\\t\x01\x7f€😀"},
     '{"b":[1,{"c":null}],"a":"q\\"\\\\\\t\\u0001\x7f€😀"}'),
    ([True, "x", 1.5], '[true,"x",1.5]'),
    (1.0, "1.0"), (1e20, "1.0E20"), (-0.0, "-0.0"),
])
def test_text(value, expected):
    assert text(value) == expected


@pytest.mark.parametrize("x, java", [
    (1.0, "1.0"), (100.0, "100.0"), (1.5, "1.5"), (-2.25, "-2.25"), (0.0, "0.0"), (-0.0, "-0.0"),
    (9999999.0, "9999999.0"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (0.001, "0.001"),
    (0.0001, "1.0E-4"), (3.3e-4, "3.3E-4"), (0.1, "0.1"), (123456.789, "123456.789"), (1e20, "1.0E20"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (5e-324, "4.9E-324"), (-1.5e-10, "-1.5E-10"),
    (float("inf"), "Infinity"), (float("-inf"), "-Infinity"),
])
def test_java_double(x, java):
    assert java_double(x) == java


def test_serialize_is_jacksons_compact_utf8():
    assert serialize(None) is None
    assert serialize("k") == b'"k"'
    assert serialize(1) == b"1"
    assert serialize(LONG_MIN) == b"-9223372036854775808"
    assert serialize(True) == b"true"
    assert serialize([]) == b"[]"
    assert serialize({"b": 2, "a": [None, 1.5]}) == b'{"b":2,"a":[null,1.5]}'
    assert serialize({"a": 1, "b": 2}) != serialize({"b": 2, "a": 1})  # two different keys
    # named escapes, other control characters \u00XX upper-case, DEL and non-ASCII as is
    assert serialize('"\\\b\t\n\f\r\x00\x1f\x1a\x7f/é€') == (
        b'"\\"\\\\\\b\\t\\n\\f\\r\\u0000\\u001F\\u001A\x7f/' + "é€".encode() + b'"')
    assert serialize({"\n": "x"}) == b'{"\\n":"x"}'  # member names are escaped too


def test_serialize_escapes_utf16_surrogates_as_jacksons_utf8_writer_does():
    assert serialize("\U0001F600") == b'"\\uD83D\\uDE00"'
    assert serialize("\ud800x") == b'"\\uD800x"'  # a lone surrogate does not crash
    # the same Java string, however Python holds it: one key
    assert serialize("\ud83d\ude00") == serialize("\U0001F600")
    # TEXT (JsonNode#toString, a String writer) keeps the character
    assert text({"e": "\U0001F600"}) == '{"e":"\U0001F600"}'


json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(LONG_MIN, LONG_MAX), st.integers(-2 ** 70, 2 ** 70),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=6),
    st.text(st.characters(codec=None), max_size=4),
)
json_values = st.recursive(
    json_scalars,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(st.text(max_size=3), children,
                                                                                max_size=3)),
    max_leaves=10,
)


def _same(a, b):
    """Equal, types and member order included (what the bytes keep)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[n], b[n]) for n in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, float):
        return a == b and str(a) == str(b)
    return a == b


def _combine_surrogates(value):
    # a decoder reads \uD83D\uDE00 as one character; write the original the same way
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    if isinstance(value, list):
        return [_combine_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_combine_surrogates(n): _combine_surrogates(v) for n, v in value.items()}
    return value


@settings(max_examples=300)
@given(json_values)
def test_serialized_bytes_are_compact_json_that_reads_back_as_the_value(value):
    data = serialize(value)
    if value is None:
        assert data is None
        return
    decoded = data.decode("utf-8")  # always valid UTF-8
    assert all(ord(c) >= 0x20 for c in decoded)
    assert not any(0xD800 <= ord(c) <= 0xDFFF or ord(c) > 0xFFFF for c in decoded)
    assert _same(json.loads(decoded), _combine_surrogates(value))
    assert json_equal(json.loads(decoded), _combine_surrogates(value))


def _has_surrogates(value):
    return any(0xD800 <= ord(c) <= 0xDFFF or ord(c) > 0xFFFF for c in json.dumps(value, ensure_ascii=False))


@settings(max_examples=200)
@given(json_values)
def test_text_of_containers_is_the_serialized_form_with_surrogates_as_they_are(value):
    if not isinstance(value, (dict, list)):
        return
    if _has_surrogates(value):
        assert _same(json.loads(text(value)), value)
    else:
        assert text(value) == serialize(value).decode("utf-8")


def test_json_equal_corner_cases():
    assert not json_equal(True, 1) and not json_equal(1, True) and not json_equal(False, 0)
    assert not json_equal(1, 1.0)
    assert json_equal(1, 1) and json_equal(2 ** 70, 2 ** 70)
    assert not json_equal("1", 1)
    assert json_equal({"a": 1, "b": [1, {"c": None}]}, {"b": [1, {"c": None}], "a": 1})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal({"a": 1, "b": 2}, {"a": 1})
    assert not json_equal({"a": None}, {"b": None})
    assert not json_equal({"a": None}, {})
    assert not json_equal([1, 2], [2, 1]) and not json_equal([1], [1, None])
    assert not json_equal([True], [1])
    assert json_equal(None, None) and not json_equal(None, "null")
    assert not json_equal(0.0, -0.0) and json_equal(1.5, 1.5)
    assert not json_equal({}, [])


@settings(max_examples=200)
@given(json_values)
def test_json_equal_is_reflexive_and_ignores_member_order(value):
    assert json_equal(value, value)

    def reorder(v):
        if isinstance(v, dict):
            return {n: reorder(v[n]) for n in reversed(list(v))}
        if isinstance(v, list):
            return [reorder(e) for e in v]
        return v
    assert json_equal(value, reorder(value))
    assert json_equal(reorder(value), value)


# --- parse errors -------------------------------------------------------------------------------

EXPR_ERRORS = [
    ("$val", W, '"$key" or "$value"'),
    ("", W, '"$key" or "$value"'),
    (3, W, "not an expression"),
    (True, W, "not an expression"),
    (None, W, "not an expression"),
    (["$key"], W, "not an expression"),
    ({}, W, "empty object"),
    ({"field": "a", "const": 1}, W, "several forms"),
    ({"fields": "a"}, W + ".fields", "unknown field"),
    ({"field": "a", "x": 1}, W + ".x", "unknown field"),
    ({"cmp": ["$key", "==", "$value"]}, W + ".cmp", "predicate"),
    ({"field": 3}, W + ".field", "must be a string"),
    ({"field": None}, W + ".field", "must be a string"),
    ({"key_field": ["a"]}, W + ".key_field", "must be a string"),
    ({"concat": "$key"}, W + ".concat", "must be a list"),
    ({"concat": ["$key", 1]}, W + ".concat[1]", "not an expression"),
    ({"concat": ["$key", {"field": 1}]}, W + ".concat[1].field", "must be a string"),
    ({"list": {}}, W + ".list", "must be a list"),
    ({"list": [{"list": ["x"]}]}, W + ".list[0].list[0]", '"$key" or "$value"'),
    ({"object": ["a"]}, W + ".object", "must be an object"),
    ({"object": {"a": "$key", "b": 2}}, W + ".object.b", "not an expression"),
    ({"add": ["$key"]}, W + ".add", "two expressions"),
    ({"add": ["$key", "$value", "$key"]}, W + ".add", "two expressions"),
    ({"add": {"a": 1}}, W + ".add", "two expressions"),
    ({"add": ["$key", 1]}, W + ".add[1]", "not an expression"),
    ({"mod": ["$key", 0]}, W + ".mod[1]", "must not be 0"),
    ({"mod": ["$key", True]}, W + ".mod[1]", "integer literal"),
    ({"mod": ["$key", 2.0]}, W + ".mod[1]", "integer literal"),
    ({"mod": ["$key", {"const": 2}]}, W + ".mod[1]", "integer literal"),
    ({"mod": ["$key", 1 << 63]}, W + ".mod[1]", "Java long"),
    ({"mod": ["$key"]}, W + ".mod", "[EXPR, INT]"),
    ({"mod": 3}, W + ".mod", "[EXPR, INT]"),
    ({"mod": [7, 3]}, W + ".mod[0]", "not an expression"),
    ({"const": (1, 2)}, W + ".const", "not a JSON value"),
    ({"const": {"a": [float("nan")]}}, W + ".const.a[0]", "not a JSON number"),
]


@pytest.mark.parametrize("obj, where, message", EXPR_ERRORS)
def test_malformed_expressions_are_errors_at_their_path(obj, where, message):
    with pytest.raises(Bad) as error:
        parse_expr(obj, W, fail)
    assert error.value.where == where
    assert message in error.value.message


P = "topology.graph[1].filter"
PRED_ERRORS = [
    (True, P, '{"and": []}'),
    ("$value", P, "not a predicate"),
    ([], P, "not a predicate"),
    ({}, P, "empty object"),
    ({"is_null": "$key", "not": {"is_null": "$key"}}, P, "several forms"),
    ({"field": "a"}, P + ".field", "expression"),
    ({"cmp": ["$key", "=", "$value"]}, P + ".cmp[1]", "==, !=, <, <=, >, >="),
    ({"cmp": ["$key", None, "$value"]}, P + ".cmp[1]", "==, !=, <, <=, >, >="),
    ({"cmp": ["$key", "=="]}, P + ".cmp", "[EXPR, OP, EXPR]"),
    ({"cmp": "$key"}, P + ".cmp", "[EXPR, OP, EXPR]"),
    ({"cmp": [1, "==", "$value"]}, P + ".cmp[0]", "not an expression"),
    ({"cmp": ["$key", "==", "k"]}, P + ".cmp[2]", '"$key" or "$value"'),
    ({"is_null": 1}, P + ".is_null", "not an expression"),
    ({"is_null": {"cmp": []}}, P + ".is_null.cmp", "predicate"),
    ({"not": "$key"}, P + ".not", "not a predicate"),
    ({"not": {"is_null": {"concat": [{"field": 1}]}}}, P + ".not.is_null.concat[0].field", "must be a string"),
    ({"and": {"is_null": "$key"}}, P + ".and", "must be a list"),
    ({"or": [{"is_null": "$key"}, {"nope": 1}]}, P + ".or[1].nope", "unknown field"),
    ({"and": [{"or": [{"cmp": ["$key", "<", {"mod": ["$key", 0]}]}]}]}, P + ".and[0].or[0].cmp[2].mod[1]",
     "must not be 0"),
]


@pytest.mark.parametrize("obj, where, message", PRED_ERRORS)
def test_malformed_predicates_are_errors_at_their_path(obj, where, message):
    with pytest.raises(Bad) as error:
        parse_pred(obj, P, fail)
    assert error.value.where == where
    assert message in error.value.message


def test_error_messages_say_what_is_allowed():
    with pytest.raises(Bad) as error:
        parse_expr({}, W, fail)
    for form in ex.EXPR_FORMS:
        assert form in error.value.message
    with pytest.raises(Bad) as error:
        parse_pred(7, P, fail)
    for form in ex.PRED_FORMS:
        assert form in error.value.message


# --- forms, round trips, reads_key ---------------------------------------------------------------

def test_parsed_forms():
    assert parse_expr("$key", W, fail) == KeyRef()
    assert parse_expr({"object": {"b": "$value", "a": {"key_field": "x"}}}, W, fail) == ObjectExpr(
        (("b", ValueRef()), ("a", KeyField("x"))))
    assert parse_expr({"mod": [{"add": ["$key", {"const": 1}]}, -3]}, W, fail) == Mod(
        Add(KeyRef(), Const(1)), -3)
    assert parse_pred({"or": [{"not": {"is_null": {"field": "a"}}}, {"cmp": ["$key", "<=", {"list": []}]}]},
                      P, fail) == Or((Not(IsNull(Field("a"))), Cmp(KeyRef(), "<=", ListExpr(()))))
    assert parse_expr({"concat": []}, W, fail) == Concat(())
    assert parse_pred({"and": []}, P, fail) == And(())


def test_const_equality_follows_json_types_and_member_order():
    assert Const({"a": [1, None]}) == Const({"a": [1, None]})
    assert hash(Const({"a": [1, None]})) == hash(Const({"a": [1, None]}))
    assert Const(1) != Const(True) and Const(1) != Const(1.0) and Const(1) != Const("1")
    assert Const(None) != Const("null")
    assert Const({"a": 1, "b": 2}) != Const({"b": 2, "a": 1})  # different bytes, different results
    assert Const(0.0) != Const(-0.0)


def test_reads_key():
    reading = [
        "$key", {"key_field": "a"}, {"concat": ["$value", "$key"]}, {"object": {"a": {"list": [{"key_field": "x"}]}}},
        {"add": [{"const": 1}, "$key"]}, {"mod": ["$key", 3]},
    ]
    not_reading = ["$value", {"field": "key"}, {"const": "$key"}, {"concat": [{"field": "a"}, {"const": 1}]},
                   {"object": {"key": "$value"}}, {"list": []}]
    for obj in reading:
        assert reads_key(parse_expr(obj, W, fail)), obj
        assert reads_key(parse_pred({"not": {"cmp": [{"const": 1}, "==", obj]}}, P, fail))
    for obj in not_reading:
        assert not reads_key(parse_expr(obj, W, fail)), obj
        assert not reads_key(parse_pred({"and": [{"is_null": obj}, {"or": []}]}, P, fail))


names = st.text(max_size=3)
consts = json_values.filter(lambda v: not isinstance(v, float) or v == v)
exprs = st.recursive(
    st.one_of(st.just("$key"), st.just("$value"), names.map(lambda n: {"field": n}),
              names.map(lambda n: {"key_field": n}), consts.map(lambda v: {"const": v})),
    lambda children: st.one_of(
        st.lists(children, max_size=3).map(lambda ps: {"concat": ps}),
        st.lists(children, max_size=3).map(lambda ps: {"list": ps}),
        st.dictionaries(names, children, max_size=3).map(lambda ms: {"object": ms}),
        st.tuples(children, children).map(lambda p: {"add": list(p)}),
        st.tuples(children, st.integers(LONG_MIN, LONG_MAX).filter(bool)).map(lambda p: {"mod": list(p)}),
    ),
    max_leaves=8,
)
preds = st.recursive(
    st.one_of(st.tuples(exprs, st.sampled_from(ex.CMP_OPS), exprs).map(lambda t: {"cmp": list(t)}),
              exprs.map(lambda e: {"is_null": e})),
    lambda children: st.one_of(children.map(lambda p: {"not": p}),
                               st.lists(children, max_size=3).map(lambda ps: {"and": ps}),
                               st.lists(children, max_size=3).map(lambda ps: {"or": ps})),
    max_leaves=6,
)


@settings(max_examples=300)
@given(exprs)
def test_expressions_round_trip_through_json(obj):
    expr = parse_expr(obj, W, fail)
    assert expr_to_json(expr) == obj
    again = parse_expr(expr_to_json(expr), W, fail)
    assert again == expr and hash(again) == hash(expr)


@settings(max_examples=200)
@given(preds, json_values, json_values)
def test_predicates_round_trip_and_evaluate_to_bools(obj, key, value):
    pred = parse_pred(obj, P, fail)
    assert parse_pred(pred_to_json(pred), P, fail) == pred
    assert pred_to_json(pred) == obj
    assert type(compile_pred(pred)(key, value)) is bool


@settings(max_examples=200)
@given(exprs, json_values, json_values)
def test_expressions_evaluate_to_json_without_touching_the_record(obj, key, value):
    before_key, before_value = serialize(key), serialize(value)
    result = compile_expr(parse_expr(obj, W, fail))(key, value)
    serialize(result)  # a JSON value (or null) that the serde can write
    assert serialize(key) == before_key and serialize(value) == before_value


def test_to_json_rejects_what_is_not_a_form():
    with pytest.raises(TypeError):
        expr_to_json(IsNull(KeyRef()))
    with pytest.raises(TypeError):
        pred_to_json(KeyRef())
    with pytest.raises(TypeError):
        compile_expr({"field": "a"})
