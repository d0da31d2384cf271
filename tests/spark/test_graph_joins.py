"""Join nodes of topology graphs on Spark (``spark_backend.graph.join_stages``): stream x stream,
stream x table, table x table, rule by rule on small hand-made graphs.

Every case is declared at module level and the whole set runs as one Spark batch; each test reads
its case's result, checks the records, drops and failure derived in its comments from Kafka's
rule, and that the reference engine gives the same bytes. Results are written
``(key, value, ts, input)``; drops ``(input, reason code, node)``.
"""
from __future__ import annotations

import pytest
from kssim_testing import result_bytes, run_on, scenario

from kssim.reference.model.codes import FailureCode

CASES = {}


def case(name, nodes, inputs, **config):
    """Declare a graph scenario (inputs as ``(topic, key, value, ts)``); returns its name."""
    assert name not in CASES
    CASES[name] = scenario({"graph": nodes}, inputs, **config)
    return name


WINDOW_10 = {"before_ms": 10, "after_ms": 10, "grace_ms": 0}
TWO_STREAMS = [{"stream": "s1", "id": "a"}, {"stream": "s2", "id": "b"}]
VERSIONED_T1 = {"table": "t1", "materialized": {"versioned": True, "history_retention_ms": 100}, "id": "t"}

# In-memory window stores (retention = before + after + grace = 20) reject a put at or below their
# clock minus the retention: the left record at 175 comes after the left one at 200 (175 <= 180),
# but it is joined first (the right record at 170 is visible: right clock 170 - 20 + 1 = 151), so
# its result reaches the filter below (which drops it) before the join drops the put.
SS_EXPIRED = case("ss_expired_put", TWO_STREAMS + [
    {"from": "a", "join": {"other": "b", "window": WINDOW_10, "joiner": "concat"}},
    {"filter": {"cmp": ["$value", "!=", {"const": "b+r"}]}}, {"to": "out"}],
    [("s2", "k", "r", 170), ("s1", "k", "a", 200), ("s1", "k", "b", 175), ("s1", "k", None, 210),
     ("s1", None, "c", 210), ("s2", "k", "q", 199)], store="in_memory")

# ofTimeDifference outer join (the spurious-result fix): "a"@10 waits in the outer store until the
# stream time passes 10 + after 5; the right record at 30 moves it to 30 and its scan emits
# a+null (ts 10) at input 1. KIP-962: an outer join forwards a null-key record at once.
SS_OUTER = case("ss_outer_fix", TWO_STREAMS + [
    {"from": "a", "outer_join": {"other": "b", "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
                                 "joiner": "concat"}}, {"to": "out"}],
    [("s1", "k", "a", 10), ("s2", "j", "x", 30), ("s1", "k", "b", 31), ("s2", None, "n", 32)])

# The table is read through the filter's value getter: after {"n": 1} fails the filter, the
# join sees no row. KIP-962: a left join joins a null-key record with null at once; a null value
# is dropped by the join.
ST_FILTERED = case("st_filtered_table", [
    {"table": "t1"}, {"filter": {"cmp": [{"field": "n"}, ">=", {"const": 2}]}, "id": "ft"},
    {"stream": "s1"}, {"left_join": {"other": "ft", "joiner": "pair"}}, {"to": "out"}],
    [("t1", "a", {"n": 3}, 1), ("s1", "a", 10, 2), ("t1", "a", {"n": 1}, 3), ("s1", "a", 11, 4),
     ("s1", None, 12, 5), ("s1", "b", None, 6)])

# A versioned table source read as of the stream record's ts, through the grace buffer (KIP-923):
# "s"@15 waits until the buffer time reaches 20 (input 4), by then the out-of-order put v12@12
# is the version valid at 15; "t"@21 leaves at input 5 and sees v20.
ST_VERSIONED = case("st_versioned_grace", [
    VERSIONED_T1, {"stream": "s1"}, {"join": {"other": "t", "grace_ms": 5, "joiner": "concat"}}, {"to": "out"}],
    [("t1", "a", "v10", 10), ("t1", "a", "v20", 20), ("s1", "a", "s", 15), ("t1", "a", "v12", 12),
     ("s1", "a", "t", 21), ("s1", "b", "u", 30)])

# 3.9: a left join with a grace period puts a null-key record into its buffer, which throws.
ST_GRACE_NULL_KEY = case("st_grace_null_key", [
    VERSIONED_T1, {"stream": "s1"}, {"left_join": {"other": "t", "grace_ms": 5, "joiner": "concat"}},
    {"to": "out"}],
    [("t1", "a", "v", 1), ("s1", "a", "x", 2), ("s1", "a", "y", 10), ("s1", None, "z", 11), ("s1", "a", "w", 30)])

# Outer join of two tables; output ts the max of both rows' (KAFKA-6455). The filter after the join
# makes it send old values, so the delete of the last row (input 3: new null, old "null+r1") is
# forwarded as a tombstone; a delete of a key neither table holds (input 4) emits nothing.
TT_OUTER = case("tt_outer", [
    {"table": "t1", "id": "l"}, {"table": "t2", "id": "r"},
    {"from": "l", "outer_join": {"other": "r", "joiner": "concat"}},
    {"filter": {"cmp": ["$value", "!=", {"const": "zzz"}]}}, {"to_stream": {}}, {"to": "out"}],
    [("t1", "a", "l1", 5), ("t2", "a", "r1", 3), ("t1", "a", None, 7), ("t2", "a", None, 8), ("t2", "b", None, 9)])

# KIP-914: the join ignores an out-of-order update of its versioned left table (l10 after l20);
# the right side's update joins the latest left version.
TT_VERSIONED = case("tt_versioned_left", [
    dict(VERSIONED_T1, id="l"), {"table": "t2", "id": "r"},
    {"from": "l", "left_join": {"other": "r", "joiner": "concat"}}, {"to_stream": {}}, {"to": "out"}],
    [("t2", "a", "r", 1), ("t1", "a", "l20", 20), ("t1", "a", "l10", 10), ("t2", "a", "r2", 30)])


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    names = list(CASES)
    return dict(zip(names, run_scenarios([CASES[n] for n in names], spark)))


@pytest.fixture(scope="module")
def reference():
    names = list(CASES)
    return dict(zip(names, run_on("reference", [CASES[n] for n in names])))


def records(result):
    assert not isinstance(result, Exception), result
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason.code, d.node) for d in result.drops]


@pytest.mark.parametrize("name", list(CASES))
def test_same_bytes_as_the_reference(results, reference, name):
    assert result_bytes(results[name]) == result_bytes(reference[name])
    assert drops(results[name]) == drops(reference[name])


def test_stream_stream_join_drops_an_expired_put_after_forwarding_its_result(results):
    r = results[SS_EXPIRED]
    assert records(r) == [("k", "a+q", 200, 5)]
    assert drops(r) == [(2, "filtered", "graph[3] filter"), (2, "expired_window_put", "graph[2] join"),
                        (3, "null_value", "graph[2] join"), (4, "null_key", "graph[2] join")]


def test_stream_stream_outer_join_emits_unjoined_records_when_stream_time_passes(results):
    assert records(results[SS_OUTER]) == [("k", "a+null", 10, 1), (None, "null+n", 32, 3)]


def test_stream_table_join_reads_the_table_through_its_value_getter(results):
    r = results[ST_FILTERED]
    assert records(r) == [("a", [10, {"n": 3}], 2, 1), ("a", [11, None], 4, 3), (None, [12, None], 5, 4)]
    assert drops(r) == [(5, "null_value", "graph[3] left_join")]


def test_stream_table_join_looks_a_versioned_table_up_as_of_the_buffered_record(results):
    assert records(results[ST_VERSIONED]) == [("a", "s+v12", 15, 4), ("a", "t+v20", 21, 5)]


def test_stream_table_left_join_with_grace_fails_on_a_null_key(results):
    r = results[ST_GRACE_NULL_KEY]
    assert records(r) == [("a", "x+v", 2, 2)]
    assert r.failure.input_index == 3 and r.failure.code is FailureCode.GRACE_BUFFER_NULL_KEY


def test_table_table_outer_join(results):
    assert records(results[TT_OUTER]) == [("a", "l1+null", 5, 0), ("a", "l1+r1", 5, 1), ("a", "null+r1", 7, 2),
                                          ("a", None, 8, 3)]


def test_table_table_join_drops_out_of_order_versioned_updates(results):
    r = results[TT_VERSIONED]
    assert records(r) == [("a", "l20+r", 20, 1), ("a", "l20+r2", 30, 3)]
    assert drops(r) == [(2, "out_of_order_versioned_update", "graph[2] left_join")]
