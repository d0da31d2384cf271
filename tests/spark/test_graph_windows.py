"""Windowed aggregations and ``suppress`` in topology graphs on Spark
(``spark_backend.graph.window_stages``): small hand-made graphs, every one in one batched run, each
checked against what Kafka Streams does (worked out by hand below) and against the reference
engine (outputs, drops, failure): tumbling counts with a null key and a late record, hopping sums
up to an aggregator failure, session merges, emit-on-window-close, suppress until the window
closes and until a time limit, on windowed and on plain keys, and bounded buffers (records and
bytes, the latter behind a repartition topic, whose name the size estimate counts)."""
from __future__ import annotations

import pytest
from kssim_testing import run_on, scenario

from kssim.reference.model.codes import DropReason, FailureCode

S1 = "s1"


def _graph(*nodes):
    return {"graph": [{"stream": S1}, *nodes, {"to_stream": {}}, {"to": "out"}]}


def _time(size, advance, grace, emit=None):
    window = {"time": {"size_ms": size, "advance_ms": advance, "grace_ms": grace}}
    return {"windowed_by": dict(window, **({"emit": emit} if emit else {}))}


SCENARIOS = {
    # a null key and a record too late for its only window are dropped by the aggregation
    "tumbling_count": scenario(_graph({"group_by_key": {}}, _time(10, 10, 0), {"count": {}}),
                               [(S1, "a", 1, 1), (S1, "a", 2, 5), (S1, None, 3, 6), (S1, "a", 4, 12),
                                (S1, "a", 5, 8)]),
    # two windows per record, forwarded by start; the graphs' sum adds a null value as 0
    "hopping_sum": scenario(_graph({"group_by_key": {}}, _time(10, 5, 100), {"aggregate": "sum"}),
                                  [(S1, "a", 3, 7), (S1, "a", 4, 8), (S1, "a", None, 9), (S1, "a", 1, 9)]),
    # a record between two sessions merges them: both are deleted, the merged one forwarded
    "session_merge": scenario(_graph({"group_by_key": {}}, {"windowed_by": {"session": {"gap_ms": 5, "grace_ms": 10}}},
                                     {"count": {}}),
                              [(S1, "a", 1, 0), (S1, "a", 1, 10), (S1, "a", 1, 4), (S1, "a", 1, 7)]),
    # each window once, by the record whose stream time closes it, in start then key order
    "emit_final": scenario(_graph({"group_by_key": {}}, _time(10, 10, 0, "on_window_close"), {"count": {}}),
                           [(S1, "b", 1, 1), (S1, "a", 1, 2), (S1, "a", 1, 3), (S1, "a", 1, 15)]),
    # the final count of each window, when the stream time passes its end (grace 0)
    "suppress_window_close": scenario(_graph({"group_by_key": {}}, _time(10, 10, 0), {"count": {}},
                                             {"suppress": {"until": "window_close"}}),
                                      [(S1, "a", 1, 1), (S1, "a", 1, 2), (S1, "a", 1, 10), (S1, "a", 1, 25)]),
    # plain keys: a key's latest count once the stream time is 5 past the change that buffered it
    # (a buffered key keeps its buffer time: c, buffered at 6, goes at 20 with its count of 2)
    "suppress_time_limit": scenario(_graph({"group_by_key": {}}, {"count": {}},
                                           {"suppress": {"until": "time_limit", "time_limit_ms": 5}}),
                                    [(S1, "a", 1, 0), (S1, "b", 1, 1), (S1, "a", 1, 3), (S1, "c", 1, 6),
                                     (S1, "c", 1, 20)]),
    "suppress_shut_down": scenario(_graph({"group_by_key": {}}, {"count": {}},
                                          {"suppress": {"until": "time_limit", "time_limit_ms": 100,
                                                        "buffer": {"max_records": 1, "when_full": "shut_down"}}}),
                                   [(S1, "a", 1, 0), (S1, "a", 1, 1), (S1, "b", 1, 2), (S1, "c", 1, 3)]),
    "suppress_emit_early": scenario(_graph({"group_by_key": {}}, {"count": {}},
                                           {"suppress": {"until": "time_limit", "time_limit_ms": 100,
                                                         "buffer": {"max_records": 1, "when_full": "emit_early"}}}),
                                    [(S1, "a", 1, 0), (S1, "b", 1, 1), (S1, "a", 1, 2)]),
    # window_totals (the JVM's running totals) on each side of its release rules: 2.2 forwards at
    # the record's ts, 2.3 at the window's max; 2.1 (the task's stream time) runs the operator.
    # One window of the late record (ts 6 at stream time 12, grace 0) is expired, the other live;
    # the null key moves 2.1's stream time (the task's) only: there the last record is too late
    **{f"hopping_count_{release}": scenario(
        _graph({"group_by_key": {}}, _time(10, 5, 0), {"count": {}}),
        [(S1, "a", 1, 7), (S1, "b", 1, 12), (S1, "a", 1, 6), (S1, None, 1, 30), (S1, "a", 1, 13)],
        semantics=release) for release in ("2.1", "2.2", "2.3")},
    # INT(v): anything but a JSON integer within a long adds 0; the sum wraps as a Java long
    "hopping_sum_not_integers": scenario(
        _graph({"group_by_key": {}}, _time(10, 5, 50), {"aggregate": "sum"}),
        [(S1, "a", "7", 1), (S1, "a", 1.5, 2), (S1, "a", True, 3), (S1, "a", 1 << 63, 4),
         (S1, "a", (1 << 63) - 1, 5), (S1, "a", 1, 6), (S1, "a", {"n": 1}, 7)]),
    # a record whose last window would end past Long.MAX fails before any window is updated
    "tumbling_count_long_max": scenario(_graph({"group_by_key": {}}, _time(10, 10, 0), {"count": {}}),
                                        [(S1, "a", 1, 3), (S1, "a", 1, (1 << 63) - 5), (S1, "a", 1, 4)]),
    # the count reads a repartition topic: the buffered size counts that topic's name
    "suppress_bytes_after_repartition": scenario(
        _graph({"group_by": {"key": {"field": "g"}}}, {"count": {}},
               {"suppress": {"until": "time_limit", "time_limit_ms": 100,
                             "buffer": {"max_bytes": 150, "when_full": "emit_early"}}}),
        [(S1, "k", {"g": "a"}, 0), (S1, "k", {"g": "b"}, 1), (S1, "k", {"g": "a"}, 2), (S1, "k", {"g": "c"}, 3)]),
}
NAMES = sorted(SCENARIOS)


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    ran = run_scenarios([SCENARIOS[n] for n in NAMES], spark)
    return dict(zip(NAMES, ran))


@pytest.fixture(scope="module")
def reference():
    return dict(zip(NAMES, run_on("reference", [SCENARIOS[n] for n in NAMES])))


def _outputs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def _drops(result):
    return [(d.input_index, d.reason, d.node) for d in result.drops]


def _failure(result):
    return None if result.failure is None else (result.failure.input_index, result.failure.code)


def _w(key, start, end):
    return {"key": key, "start": start, "end": end}


@pytest.mark.parametrize("name", NAMES)
def test_spark_agrees_with_the_reference_engine(results, reference, name):
    got, want = results[name], reference[name]
    assert not isinstance(got, Exception), got
    assert [tuple(o[:7]) for o in got.outputs] == [tuple(o[:7]) for o in want.outputs]
    assert _drops(got) == _drops(want)
    assert _failure(got) == _failure(want)


def test_tumbling_count_drops_the_null_key_and_the_late_record(results):
    r = results["tumbling_count"]
    assert _outputs(r) == [(_w("a", 0, 10), 1, 1, 0), (_w("a", 0, 10), 2, 5, 1), (_w("a", 10, 20), 1, 12, 3)]
    assert [(i, reason) for i, reason, _ in _drops(r)] == [(2, DropReason.NULL_KEY), (4, DropReason.EXPIRED_WINDOW)]
    assert all(node == "graph[3] count" for _, _, node in _drops(r))


def test_native_window_totals_follow_the_output_timestamp_rule(results):
    """2.2: the record's ts; 2.3: the window's max record ts (KAFKA-6455). The late record (6, at
    stream time 12) updates [5,15) only: [0,10) ended at 10 <= 12 - grace 0."""
    for release, ts in (("2.2", 6), ("2.3", 7)):
        assert [o for o in _outputs(results[f"hopping_count_{release}"]) if o[3] == 2] == [(_w("a", 5, 15), 2, ts, 2)]
        assert [(i, reason) for i, reason, _ in _drops(results[f"hopping_count_{release}"])] == \
            [(2, DropReason.EXPIRED_WINDOW), (3, DropReason.NULL_KEY)]
    # 2.1: the null key's 30 is the task's stream time: both windows of the last record are closed
    assert [(i, reason) for i, reason, _ in _drops(results["hopping_count_2.1"])][-2:] == \
        [(4, DropReason.EXPIRED_WINDOW), (4, DropReason.EXPIRED_WINDOW)]


def test_native_window_sum_adds_only_long_integers(results):
    sums = [o[1] for o in _outputs(results["hopping_sum_not_integers"]) if o[0] == _w("a", 0, 10)]
    assert sums == [0, 0, 0, 0, (1 << 63) - 1, -(1 << 63), -(1 << 63)]


def test_native_window_at_long_max_fails_before_updating(results):
    r = results["tumbling_count_long_max"]
    assert _outputs(r) == [(_w("a", 0, 10), 1, 3, 0)]
    assert _failure(r) == (1, FailureCode.WINDOW_ILLEGAL_ARGUMENT)


def test_hopping_sum_forwards_by_window_start_and_folds_with_the_graph_sum(results):
    """The operator folds with the graph's named ``sum`` (a null value is 0), not format 1's
    (whose null value is an ``aggregator_null_value`` failure)."""
    r = results["hopping_sum"]
    assert _outputs(r) == [(_w("a", 0, 10), 3, 7, 0), (_w("a", 5, 15), 3, 7, 0),
                           (_w("a", 0, 10), 7, 8, 1), (_w("a", 5, 15), 7, 8, 1),
                           (_w("a", 0, 10), 7, 9, 2), (_w("a", 5, 15), 7, 9, 2),
                           (_w("a", 0, 10), 8, 9, 3), (_w("a", 5, 15), 8, 9, 3)]
    assert _failure(r) is None


def test_session_merge_deletes_the_merged_sessions(results):
    keys_values = [(k, v, i) for k, v, _, i in _outputs(results["session_merge"])]
    assert keys_values == [
        (_w("a", 0, 0), 1, 0), (_w("a", 10, 10), 1, 1),
        (_w("a", 0, 0), None, 2), (_w("a", 0, 4), 2, 2),
        (_w("a", 0, 4), None, 3), (_w("a", 10, 10), None, 3), (_w("a", 0, 10), 4, 3)]


def test_emit_final_forwards_each_closed_window_once(results):
    assert _outputs(results["emit_final"]) == [(_w("a", 0, 10), 2, 3, 3), (_w("b", 0, 10), 1, 1, 3)]


def test_suppress_until_window_close_forwards_final_counts(results):
    assert _outputs(results["suppress_window_close"]) == [(_w("a", 0, 10), 2, 2, 2), (_w("a", 10, 20), 1, 10, 3)]


def test_suppress_until_time_limit_on_plain_keys(results):
    assert _outputs(results["suppress_time_limit"]) == [("a", 2, 3, 3), ("b", 1, 1, 3), ("c", 2, 20, 4)]


def test_a_full_shut_down_buffer_fails_at_the_second_key(results):
    r = results["suppress_shut_down"]
    assert _outputs(r) == []
    assert _failure(r) == (2, FailureCode.SUPPRESS_BUFFER_FULL)


def test_a_full_emit_early_buffer_evicts_the_first_entry(results):
    assert _outputs(results["suppress_emit_early"]) == [("a", 1, 0, 1), ("b", 1, 1, 2)]


def test_a_byte_bound_counts_the_repartition_topic(results):
    """Each buffered count measures ~97 bytes with the repartition topic's name (~47 with the input
    topic's ``s1``, under which three keys would fit in 150 bytes and nothing would be evicted)."""
    from kssim.reference.model.graph.plan import compile_graph

    from kssim.spark_backend.graph.batch import GraphBatch
    from kssim.spark_backend.graph.window_stages import record_topics

    sc = SCENARIOS["suppress_bytes_after_repartition"]
    plan = compile_graph(sc.topology, sc.profile)
    topic, = plan.internal_topics
    batch = GraphBatch(None, [sc], [0], [plan])
    assert record_topics(batch, batch.instance(0, 3)) == (S1, topic)
    assert _outputs(results["suppress_bytes_after_repartition"]) == [("a", 1, 0, 1), ("b", 1, 1, 2), ("a", 2, 2, 3)]
