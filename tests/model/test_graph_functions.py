"""The named functions of topology graphs (``reference.model.graph.functions``): aggregations,
reducers, grouped-table subtractors and joiners, as the spec's tables define them, built as format
1's ``Aggregation`` so the windowed operators can run them.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kssim.reference.model.aggregations import Aggregation
from kssim.reference.model.graph.expressions import LONG_MAX, LONG_MIN
from kssim.reference.model.graph.functions import (AGGREGATE_NAMES, JOINER_NAMES, REDUCE_NAMES, graph_aggregation,
                                             graph_count, graph_joiner, graph_reducer, graph_subtractor, int_value,
                                             parse_function_name)


def run(aggregation: Aggregation, values, key="k"):
    """The aggregates a grouped stream's aggregation emits for ``values``, in order."""
    aggregate = aggregation.initial()
    results = []
    for value in values:
        aggregate = aggregation.add(key, value, aggregate)
        results.append(aggregate)
    return results


def test_name_lists():
    assert AGGREGATE_NAMES == ("count", "sum", "string_adder", "list")
    assert REDUCE_NAMES == ("sum", "string_reduce")
    assert JOINER_NAMES == ("pair", "concat")


@pytest.mark.parametrize("value, expected", [
    (5, 5), (-3, -3), (LONG_MIN, LONG_MIN), (None, 0), (True, 0), (False, 0), (1.5, 0), (2.0, 0),
    ("7", 0), ([1], 0), ({"n": 1}, 0), (LONG_MAX + 1, 0),
])
def test_int_value(value, expected):
    assert int_value(value) == expected and type(int_value(value)) is int


# --- aggregations --------------------------------------------------------------------------------

def test_aggregations_are_format_1_aggregations():
    for name in AGGREGATE_NAMES:
        aggregation = graph_aggregation(name)
        assert isinstance(aggregation, Aggregation)
        assert not aggregation.is_reduce
        assert aggregation.name == name
    assert isinstance(graph_count(), Aggregation) and not graph_count().is_reduce


def test_count():
    count = graph_aggregation("count")
    assert count.initial() == 0
    assert run(count, ["a", None, {"x": 1}]) == [1, 2, 3]
    assert count.add("k", "v", LONG_MAX) == LONG_MIN  # a Java long
    assert count.merge("k", 2, 5) == 7
    assert count.merge("k", LONG_MAX, 1) == LONG_MIN


@settings(max_examples=100)
@given(st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=2), st.booleans()), max_size=8))
def test_count_is_aggregate_count(values):
    assert run(graph_count(), values) == run(graph_aggregation("count"), values)
    assert graph_count().merge("k", 3, 4) == graph_aggregation("count").merge("k", 3, 4)


def test_sum_counts_non_integers_as_zero_and_wraps():
    total = graph_aggregation("sum")
    assert total.initial() == 0
    assert run(total, [3, "4", 1.5, True, None, {"n": 2}, [7], -10]) == [3, 3, 3, 3, 3, 3, 3, -7]
    assert run(total, [LONG_MAX, 1]) == [LONG_MAX, LONG_MIN]
    assert run(total, [LONG_MIN, -1]) == [LONG_MIN, LONG_MAX]
    assert total.merge("k", LONG_MAX, 2) == LONG_MIN + 1


def test_string_adder_prints_json_text():
    adder = graph_aggregation("string_adder")
    assert adder.initial() == "0"
    assert run(adder, ["a", None, 3, True, {"b": 1, "a": "é\n"}, [1, None], 1.5]) == [
        "0+a", "0+a+null", "0+a+null+3", "0+a+null+3+true", '0+a+null+3+true+{"b":1,"a":"é\\n"}',
        '0+a+null+3+true+{"b":1,"a":"é\\n"}+[1,null]', '0+a+null+3+true+{"b":1,"a":"é\\n"}+[1,null]+1.5']
    assert adder.merge("k", "0+a", "0+b") == "0+a+0+b"
    assert adder.merge("k", None, "0+b") == "null+0+b"


def test_list_appends_without_mutating():
    lists = graph_aggregation("list")
    first, second = lists.initial(), lists.initial()
    assert first == [] and first is not second  # a fresh list per group
    aggregate = [1]
    result = lists.add("k", {"a": 1}, aggregate)
    assert result == [1, {"a": 1}] and aggregate == [1]
    assert run(lists, ["x", None, 2]) == [["x"], ["x", None], ["x", None, 2]]
    a, b = [1, 2], [3]
    assert lists.merge("k", a, b) == [1, 2, 3] and a == [1, 2] and b == [3]


def test_unknown_names_are_value_errors_naming_the_known_ones():
    with pytest.raises(ValueError, match="string_adder"):
        graph_aggregation("string_reduce")
    with pytest.raises(ValueError, match="string_reduce"):
        graph_reducer("count")
    with pytest.raises(ValueError, match="pair, concat"):
        graph_joiner("tuple")


# --- reducers ------------------------------------------------------------------------------------

def test_reducers_take_the_first_value_as_it_is():
    for name in REDUCE_NAMES:
        reducer = graph_reducer(name)
        assert isinstance(reducer, Aggregation) and reducer.is_reduce and reducer.initial() is None
    assert run(graph_reducer("sum"), ["x", 2, 3]) == ["x", 2, 5]  # INT("x") = 0
    assert run(graph_reducer("sum"), [{"a": 1}]) == [{"a": 1}]
    assert run(graph_reducer("sum"), [LONG_MAX, 1]) == [LONG_MAX, LONG_MIN]
    assert run(graph_reducer("sum"), [1, None, True, 4]) == [1, 1, 1, 5]
    assert run(graph_reducer("string_reduce"), ["a", "b", None, {"c": [1]}]) == [
        "a", "a+b", "a+b+null", 'a+b+null+{"c":[1]}']
    assert run(graph_reducer("string_reduce"), [7, 8]) == [7, "7+8"]


def test_reducers_merge_sessions_with_the_reducer():
    assert graph_reducer("sum").merge("k", 2, 3) == 5
    assert graph_reducer("sum").merge("k", "2", 3) == 3
    assert graph_reducer("sum").merge("k", None, 3) == 3  # no aggregate yet: the other one
    assert graph_reducer("string_reduce").merge("k", "a+b", "c") == "a+b+c"
    assert graph_reducer("string_reduce").merge("k", None, "c") == "c"


# --- subtractors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind, name, agg, value, expected", [
    ("count", None, 3, "v", 2),
    ("count", "count", 0, None, -1),
    ("count", None, LONG_MIN, "v", LONG_MAX),
    ("aggregate", "count", 3, "v", 2),
    ("aggregate", "sum", 10, 4, 6),
    ("aggregate", "sum", 10, "4", 10),
    ("aggregate", "sum", 10, True, 10),
    ("aggregate", "sum", LONG_MIN, 1, LONG_MAX),
    ("aggregate", "string_adder", "0+a", "a", "0+a-a"),
    ("aggregate", "string_adder", "0+a", {"x": None}, '0+a-{"x":null}'),
    ("aggregate", "string_adder", "0", None, "0-null"),
    ("reduce", "sum", 10, 4, 6),
    ("reduce", "sum", "first", 4, -4),
    ("reduce", "sum", LONG_MIN, 1, LONG_MAX),
    ("reduce", "string_reduce", "a+b", "a", "a+b-a"),
    ("reduce", "string_reduce", 5, 1.5, "5-1.5"),
])
def test_subtractors(kind, name, agg, value, expected):
    assert graph_subtractor(kind, name)(agg, value) == expected


def test_list_subtractor_removes_the_first_json_equal_element():
    subtract = graph_subtractor("aggregate", "list")
    agg = [1, True, {"a": 1, "b": 2}, 1, {"b": 2, "a": 1}]
    assert subtract(agg, 1) == [True, {"a": 1, "b": 2}, 1, {"b": 2, "a": 1}]
    assert subtract(agg, True) == [1, {"a": 1, "b": 2}, 1, {"b": 2, "a": 1}]  # True is not 1
    assert subtract(agg, {"b": 2, "a": 1}) == [1, True, 1, {"b": 2, "a": 1}]  # member order ignored
    result = subtract(agg, "absent")
    assert result == agg and result is not agg  # unchanged, a copy
    assert agg == [1, True, {"a": 1, "b": 2}, 1, {"b": 2, "a": 1}]  # never mutated
    assert subtract([None, 1], None) == [1]
    assert subtract([1.0], 1) == [1.0]
    assert subtract([], 1) == []


def test_adder_then_subtractor_spell_the_order_kafka_applies():
    adder, subtract = graph_aggregation("string_adder"), graph_subtractor("aggregate", "string_adder")
    agg = adder.initial()
    agg = adder.add("g", "a", agg)
    agg = subtract(agg, "a")
    agg = adder.add("g", "b", agg)
    assert agg == "0+a-a+b"


def test_unknown_subtractors():
    with pytest.raises(ValueError, match="known"):
        graph_subtractor("reduce", "list")
    with pytest.raises(ValueError, match="known"):
        graph_subtractor("aggregate", "string_reduce")
    with pytest.raises(ValueError, match="kind"):
        graph_subtractor("windowed", "sum")


# --- joiners -------------------------------------------------------------------------------------

def test_pair_joiner():
    pair = graph_joiner("pair")
    assert pair("a", None) == ["a", None]
    assert pair(None, {"b": 1}) == [None, {"b": 1}]


def test_concat_joiner_prints_text():
    concat = graph_joiner("concat")
    assert concat("a", "b") == "a+b"
    assert concat("a", None) == "a+null"
    assert concat(None, 3) == "null+3"
    assert concat({"x": [1, "é"]}, False) == '{"x":[1,"é"]}+false'
    assert graph_joiner("concat", " | ")("a", 1.0) == "a | 1.0"
    assert graph_joiner("concat", "")(1, 2) == "12"


# --- names ----------------------------------------------------------------------------------------

class Bad(Exception):
    def __init__(self, where, message):
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


def test_parse_function_name():
    where = "topology.graph[3].aggregate"
    assert parse_function_name("list", where, Bad, AGGREGATE_NAMES) == "list"
    with pytest.raises(Bad) as error:
        parse_function_name("string_reduce", where, Bad, AGGREGATE_NAMES)
    assert error.value.where == where
    assert "string_reduce" in error.value.message and "count, sum, string_adder, list" in error.value.message
    with pytest.raises(Bad) as error:
        parse_function_name({"name": "sum"}, "topology.graph[3].reduce", Bad, REDUCE_NAMES)
    assert error.value.where == "topology.graph[3].reduce"
    assert "sum, string_reduce" in error.value.message
    with pytest.raises(Bad):
        parse_function_name(None, where, Bad, AGGREGATE_NAMES)
