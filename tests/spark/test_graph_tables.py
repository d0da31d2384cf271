"""Table nodes and non-windowed aggregations of topology graphs on Spark
(``spark_backend.graph.table_stages``, ``aggregate_stages``): small hand-made graphs at the
releases on either side of a rule, all in one batched run, each checked against what Kafka Streams
does (worked out by hand below) and against the reference engine (outputs, drops, failure).

The boundaries: KIP-904's single re-group record (3.4 | 3.5), the subtract before the add
(0.10.0 | 0.10.1), KAFKA-10077's filter with old values (2.6 | 2.7), KIP-557's emit-on-change
(2.7.0 | 2.8), the grouped stream's null key (0.10.0 | 0.10.1), null value (1.0 | 1.1) and output
timestamp (2.2 | 2.3), versioned tables (3.5+: expired puts, out-of-order updates, filters that
keep null changes); and a long sum that wraps, a null group key, list and string subtractors, the
Python API's callables."""
from __future__ import annotations

import pytest
from kssim_testing import run_on, scenario

from kssim.reference.model.codes import DropReason, FailureCode

T, S = "t1", "s1"
LONG_MAX = (1 << 63) - 1


def _out(*nodes, source=None):
    return {"graph": [source or {"table": T}, *nodes, {"to_stream": {}}, {"to": "out"}]}


def _regroup(aggregation, value="$value", source=None):
    return _out({"group_by": {"key": {"field": "g"}, "value": value}}, aggregation, source=source)


_SUM_BY_G = _regroup({"aggregate": "sum"}, {"field": "n"})
#: k moves within group a (1 -> 5), then to group b
_MOVES = [(T, "k", {"g": "a", "n": 1}, 1), (T, "k", {"g": "a", "n": 5}, 2), (T, "k", {"g": "b", "n": 5}, 3)]
_COUNT_THEN_FILTER = _out({"group_by": {"key": {"field": "g"}}}, {"count": {}},
                          {"filter": {"cmp": ["$value", ">", {"const": 1}]}})
_TWO_IN_A = [(T, "k1", {"g": "a"}, 1), (T, "k2", {"g": "a"}, 2)]
_COUNT_BY_G = _regroup({"count": {}})
#: the same row twice (the second is idempotent), then a tombstone for a key never seen
_REPEATS = [(T, "k1", {"g": "a"}, 1), (T, "k1", {"g": "a"}, 2), (T, "k9", None, 3)]
_STREAM_COUNT = {"graph": [{"stream": S}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "out"}]}
#: an older record, a null value, a null key
_STREAM_RECORDS = [(S, "a", 1, 5), (S, "a", 1, 3), (S, "a", None, 4), (S, None, 1, 6)]
_VERSIONED = {"table": T, "materialized": {"versioned": True, "history_retention_ms": 10}}

SCENARIOS = {
    "kip904_3.4": scenario(_SUM_BY_G, _MOVES, semantics="3.4"),
    "kip904_3.5": scenario(_SUM_BY_G, _MOVES, semantics="3.5"),
    "add_first_0.10.0": scenario(_SUM_BY_G, _MOVES, semantics="0.10.0"),
    "kafka10077_2.6": scenario(_COUNT_THEN_FILTER, _TWO_IN_A, semantics="2.6"),
    "kafka10077_2.7": scenario(_COUNT_THEN_FILTER, _TWO_IN_A, semantics="2.7"),
    "emit_on_change_2.7.0": scenario(_COUNT_BY_G, _REPEATS, semantics="2.7.0"),
    "emit_on_change_2.8": scenario(_COUNT_BY_G, _REPEATS, semantics="2.8"),
    "stream_count_0.10.0": scenario(_STREAM_COUNT, _STREAM_RECORDS, semantics="0.10.0"),
    "stream_count_1.0": scenario(_STREAM_COUNT, _STREAM_RECORDS, semantics="1.0"),
    "stream_count_2.2": scenario(_STREAM_COUNT, _STREAM_RECORDS, semantics="2.2"),
    "stream_count_2.3": scenario(_STREAM_COUNT, _STREAM_RECORDS, semantics="2.3"),
    # the store's clock reaches 30 (k2): k1 at 15 is expired (15 < 30 - 10); k1 at 25 is its newest
    # version (moves k1 from a to b); k1 at 22 is older than 25: out of order, not re-grouped
    "versioned_regroup": scenario(_regroup({"count": {}}, "$key", source=_VERSIONED),
                                  [(T, "k1", {"g": "a"}, 10), (T, "k2", {"g": "a"}, 30), (T, "k1", {"g": "b"}, 15),
                                   (T, "k1", {"g": "b"}, 25), (T, "k1", {"g": "c"}, 22)], semantics="3.5"),
    # a versioned lineage keeps null changes: both values failing still forwards a delete
    "versioned_filter": scenario(_out({"filter": {"cmp": [{"field": "n"}, ">", {"const": 1}]}}, source=_VERSIONED),
                                 [(T, "k", {"n": 0}, 1), (T, "k", {"n": 2}, 2), (T, "k", {"n": 0}, 3),
                                  (T, "k", {"n": 0}, 4)], semantics="3.9"),
    "long_wrap": scenario({"graph": [{"stream": S}, {"group_by_key": {}}, {"reduce": "sum"}, {"to_stream": {}},
                                     {"to": "out"}]},
                          [(S, "a", LONG_MAX, 1), (S, "a", 1, 2)]),
    # a missing group field: a null group key, dropped by the re-grouping (the add still goes on)
    "null_group_key": scenario(_regroup({"aggregate": "list"}), [(T, "k", {"g": "a"}, 1), (T, "k", {"x": 1}, 2)]),
    "string_reduce": scenario(_regroup({"reduce": "string_reduce"}, {"field": "s"}),
                              [(T, "k1", {"g": "a", "s": "x"}, 1), (T, "k2", {"g": "a", "s": "y"}, 2),
                               (T, "k1", None, 3)]),
    # running totals (spark_backend/graph/running_totals.py): a stream sum that wraps both ways
    # and reads non-integers as 0; a table sum whose first record only subtracts (no aggregate
    # yet: nothing subtracted, a null aggregate) and whose timestamps go back (the max stays)
    "stream_sum_wraps": scenario({"graph": [{"stream": S}, {"group_by_key": {}}, {"aggregate": "sum"},
                                            {"to_stream": {}}, {"to": "out"}]},
                                 [(S, "a", LONG_MAX, 5), (S, "a", 2, 4), (S, "a", "7", 6), (S, "a", 1.5, 7),
                                  (S, "a", -(1 << 63), 8), (S, "a", -2, 9), (S, "b", 10 ** 19, 1)]),
    # JSON-equal group keys whose members come in another order (KIP-904 compares them as values)
    "kip904_reordered_object_key": scenario(_regroup({"count": {}}), [(T, "k1", {"g": {"x": 1, "y": 2}}, 1),
                                                                       (T, "k1", {"g": {"y": 2, "x": 1}}, 2)],
                                            semantics="3.5"),
    "table_sum_totals": scenario(_regroup({"aggregate": "sum"}, {"field": "n"}),
                                 [(T, "k1", None, 9), (T, "k1", {"g": "a", "n": LONG_MAX}, 5),
                                  (T, "k2", {"g": "a", "n": 1}, 3), (T, "k1", {"g": "b", "n": 2}, 7),
                                  (T, "k2", {"g": "a", "n": "x"}, 6), (T, "k2", None, 8)], semantics="3.9"),
}


def _python_api_scenario():
    """``KGroupedTable#aggregate(initializer, adder, subtractor)`` with Python callables (the
    Python API's graph; Spark ships the callables to its workers)."""
    import attrs

    from kssim.reference.api.builder import StreamsBuilder

    builder = StreamsBuilder()
    builder.table(T).group_by(lambda k, v: (v["g"], v["n"])).aggregate(
        lambda: 100, lambda k, v, agg: agg + v, lambda k, v, agg: agg - 2 * v).to_stream().to("out")
    inputs = [(T, "k1", {"g": "a", "n": 1}, 1), (T, "k1", {"g": "a", "n": 3}, 2), (T, "k1", None, 3)]
    return attrs.evolve(scenario(_SUM_BY_G, inputs), topology=builder.build().spec)


SCENARIOS["python_api"] = _python_api_scenario()
NAMES = sorted(SCENARIOS)


@pytest.fixture(scope="module")
def results(spark):
    from kssim.spark_backend.runtime.runner import run_scenarios

    return dict(zip(NAMES, run_scenarios([SCENARIOS[n] for n in NAMES], spark)))


@pytest.fixture(scope="module")
def reference():
    return dict(zip(NAMES, run_on("reference", [SCENARIOS[n] for n in NAMES])))


def _outputs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def _kv(result):
    return [(o.key, o.value) for o in result.outputs]


def _drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


def _failure(result):
    return None if result.failure is None else (result.failure.input_index, result.failure.code)


@pytest.mark.parametrize("name", NAMES)
def test_spark_agrees_with_the_reference_engine(results, reference, name):
    got, want = results[name], reference[name]
    assert not isinstance(got, Exception), got
    assert [tuple(o[:7]) for o in got.outputs] == [tuple(o[:7]) for o in want.outputs]
    assert [(d.input_index, d.reason, d.node) for d in got.drops] == \
        [(d.input_index, d.reason, d.node) for d in want.drops]
    assert _failure(got) == _failure(want)


def test_kip904_one_record_per_change_within_a_group_since_3_5(results):
    # 3.4: a move within group a is a subtract (sum 0) then an add (5); 3.5: one record, sum 5 once
    assert _kv(results["kip904_3.4"]) == [("a", 1), ("a", 0), ("a", 5), ("a", 0), ("b", 5)]
    assert _kv(results["kip904_3.5"]) == [("a", 1), ("a", 5), ("a", 0), ("b", 5)]


def test_before_0_10_1_the_add_goes_before_the_subtract(results):
    assert _kv(results["add_first_0.10.0"]) == [("a", 1), ("a", 6), ("a", 5), ("b", 5), ("a", 0)]


def test_kafka10077_a_filter_of_an_aggregate_skips_null_changes_since_2_7(results):
    # the first count (1) fails: 2.6 forwards a delete, 2.7 (old values: null -> null) drops it
    assert _kv(results["kafka10077_2.6"]) == [("a", None), ("a", 2)]
    assert _kv(results["kafka10077_2.7"]) == [("a", 2)]
    assert _drops(results["kafka10077_2.7"]) == [(0, DropReason.FILTERED)]


def test_kip557_skips_idempotent_updates_only_in_2_6_0_to_2_7_0(results):
    on, off = results["emit_on_change_2.7.0"], results["emit_on_change_2.8"]
    assert _kv(on) == [("a", 1)]
    assert _drops(on) == [(1, DropReason.IDEMPOTENT_UPDATE), (2, DropReason.IDEMPOTENT_UPDATE)]
    assert _kv(off) == [("a", 1), ("a", 0), ("a", 1)]
    assert _drops(off) == []


def test_grouped_stream_null_key_null_value_and_timestamp_rules(results):
    assert _failure(results["stream_count_0.10.0"]) == (3, FailureCode.AGGREGATION_NULL_KEY)
    assert _outputs(results["stream_count_1.0"]) == [("a", 1, 5, 0), ("a", 2, 3, 1), ("a", 2, 4, 2)]
    assert _drops(results["stream_count_1.0"]) == [(3, DropReason.NULL_KEY)]
    assert _outputs(results["stream_count_2.2"]) == [("a", 1, 5, 0), ("a", 2, 3, 1)]
    assert _outputs(results["stream_count_2.3"]) == [("a", 1, 5, 0), ("a", 2, 5, 1)]
    assert _drops(results["stream_count_2.3"]) == [(2, DropReason.NULL_VALUE), (3, DropReason.NULL_KEY)]


def test_versioned_table_expired_puts_and_out_of_order_updates(results):
    r = results["versioned_regroup"]
    assert _drops(r) == [(2, DropReason.EXPIRED_VERSIONED_PUT), (4, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]
    assert _kv(r) == [("a", 1), ("a", 2), ("a", 1), ("b", 1)]  # a move between groups: subtract, add


def test_a_versioned_lineage_filter_forwards_null_changes(results):
    assert _kv(results["versioned_filter"]) == [("k", None), ("k", {"n": 2}), ("k", None), ("k", None)]
    assert _drops(results["versioned_filter"]) == []


def test_a_long_sum_wraps(results):
    assert _kv(results["long_wrap"]) == [("a", LONG_MAX), ("a", -(1 << 63))]


def test_a_null_group_key_is_dropped_and_the_subtract_still_sent(results):
    r = results["null_group_key"]
    assert _drops(r) == [(1, DropReason.NULL_GROUP_KEY)]
    assert _kv(r) == [("a", [{"g": "a"}]), ("a", [])]


def test_kip904_compares_group_keys_as_json_values(results):
    # one record (the keys are equal as JSON values), to the new key's store entry (its serialized
    # bytes differ): no aggregate there yet, so no subtract; the old entry keeps its count
    assert _kv(results["kip904_reordered_object_key"]) == [({"x": 1, "y": 2}, 1), ({"y": 2, "x": 1}, 1)]


def test_python_api_callables_add_and_subtract(results):
    # 100 + 1; one record (KIP-904): 101 - 2*1 + 3; the tombstone subtracts 2*3
    assert _kv(results["python_api"]) == [("a", 101), ("a", 102), ("a", 96)]


def test_string_reduce_subtracts_and_keeps_the_group(results):
    assert _kv(results["string_reduce"]) == [("a", "x"), ("a", "x+y"), ("a", "x+y-x")]


def test_running_totals_wrap_and_read_non_integers_as_zero(results):
    # MAX, MAX+2 wraps to MIN+1, "7" and 1.5 add 0, + MIN wraps to 1, -2 gives -1; 10^19 is no long
    assert _outputs(results["stream_sum_wraps"]) == [
        ("a", LONG_MAX, 5, 0), ("a", -(1 << 63) + 1, 5, 1), ("a", -(1 << 63) + 1, 6, 2), ("a", -(1 << 63) + 1, 7, 3),
        ("a", 1, 8, 4), ("a", -1, 9, 5), ("b", 0, 1, 6)]


def test_a_table_sum_subtracts_only_once_an_aggregate_exists(results):
    # k1's tombstone first: no group, nothing sent. MAX in a; k2 adds 1 (wraps, ts max 5);
    # k1 moves to b: a loses MAX, b gets 2; k2's "x" (KIP-904: one record) and its tombstone
    assert _outputs(results["table_sum_totals"]) == [
        ("a", LONG_MAX, 5, 1), ("a", -(1 << 63), 5, 2), ("a", 1, 7, 3), ("b", 2, 7, 3), ("a", 0, 7, 4),
        ("a", 0, 8, 5)]
