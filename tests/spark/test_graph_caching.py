"""Record caches (``config.caching: true``) of topology graphs on Spark
(``spark_backend.graph.cache_stage``): small hand-made graphs at the rules' boundaries, all in one
batched run, each checked against what Kafka Streams does under ``TopologyTestDriver`` (worked out
by hand below: the driver commits after every record it takes, which flushes the caches) and
against the reference engine (outputs, drops, failure).

The rules: several updates of one key within one take become one (the last, with the value before
the first), a cache flushes after everything else its take caused, keys in the order of their last
put, caches in store-creation order (a flush that reaches another cache in the same commit is
flushed after it), a change null -> null is not forwarded since 2.2
[``record_cache_skips_null_changes``], a flushed change feeds a repartition topic like any other;
a foreign-key join's materialized result; and what is refused by name (a join whose value getter
can read a cached table ahead of its flush)."""
from __future__ import annotations

import pytest
from kssim_testing import run_on, scenario

from kssim.reference.model.errors import UnsupportedOperator
from kssim.reference.model.graph.plan import compile_graph

S, T = "s", "t"
TWICE = {"flat_map_values": {"list": ["$value", "$value"]}}  # one input, two updates of its key


def _cached(topology, inputs, semantics="3.9"):
    return scenario(topology, inputs, semantics=semantics, caching=True)


_COUNT = {"graph": [{"stream": S}, TWICE, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}]}
#: the count's changes re-grouped under one key (KIP-904: one record per change) and summed
_COUNT_REGROUPED = {"graph": [{"stream": S}, TWICE, {"group_by_key": {}}, {"count": {}},
                              {"group_by": {"key": {"const": "all"}, "value": "$value"}}, {"reduce": "sum"},
                              {"to_stream": {}}, {"to": "o"}]}
#: a count, and the sum of its results in the same sub-topology (no repartition): two caches, one take
_CHAINED = {"graph": [{"stream": S}, TWICE, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}, "id": "a"},
                      {"group_by_key": {}}, {"reduce": "sum"}, {"to_stream": {}}, {"to": "o"},
                      {"from": "a", "to": "raw"}]}
#: the input also goes straight to a sink: written at once, the count at the commit
_COUNT_AND_RAW = {"graph": [{"stream": S, "id": "s"}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}},
                            {"to": "o"}, {"from": "s", "to": "raw"}]}
#: a table materialized for a join's getter, its changes to a sink
_TABLE_CHANGES = {"graph": [{"table": T, "id": "t"}, {"stream": S}, {"left_join": {"other": "t", "joiner": "pair"}},
                            {"to": "o"}, {"to_stream": {}, "from": "t"}, {"to": "p"}]}
#: a tombstone for a key the table never held, a row, a stream record for the absent key
_TOMBSTONE_FIRST = [(T, "x", None, 1), (T, "k", 1, 2), (S, "x", 5, 3)]
_SLIDING = {"graph": [{"stream": S}, TWICE, {"group_by_key": {}},
                      {"windowed_by": {"sliding": {"time_difference_ms": 5, "grace_ms": 100}}}, {"count": {}},
                      {"to_stream": {}}, {"to": "o"}]}
_SESSIONS = {"graph": [{"stream": S}, {"group_by_key": {}}, {"windowed_by": {"session": {"gap_ms": 5, "grace_ms": 100}}},
                       {"aggregate": "list"}, {"to_stream": {}}, {"to": "o"}]}
#: a foreign-key join's result materialized (old values asked for by the table-table left join)
_FK_RESULT = {"graph": [{"table": T, "id": "t"}, {"table": "u", "id": "u"},
                        {"from": "t", "join": {"other": "u", "foreign_key": {"field": "fk"}, "joiner": "pair"},
                         "id": "j"},
                        {"table": "v", "id": "v"}, {"from": "j", "left_join": {"other": "v", "joiner": "pair"}},
                        {"to_stream": {}}, {"to": "o"}, {"from": "j", "to_stream": {}}, {"to": "r"}]}
_EMIT_FINAL = {"graph": [{"stream": S}, TWICE, {"group_by_key": {}},
                         {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}, "emit": "on_window_close"}},
                         {"count": {}}, {"to_stream": {}}, {"to": "o"}]}

SCENARIOS = {
    "one_key_twice": _cached(_COUNT, [(S, "k", 1, 1), (S, "k", 2, 2)]),
    "into_repartition": _cached(_COUNT_REGROUPED, [(S, "k", 1, 1), (S, "k", 2, 2), (S, "j", 2, 3)]),
    "chained": _cached(_CHAINED, [(S, "k", 1, 1), (S, "k", 2, 2)]),
    "after_other_outputs": _cached(_COUNT_AND_RAW, [(S, "k", 1, 1), (S, "k", 2, 2)]),
    "uncached": scenario(_COUNT_AND_RAW, [(S, "k", 1, 1), (S, "k", 2, 2)]),
    "null_change_2.1": _cached(_TABLE_CHANGES, _TOMBSTONE_FIRST, semantics="2.1"),
    "null_change_2.2": _cached(_TABLE_CHANGES, _TOMBSTONE_FIRST, semantics="2.2"),
    # ts 8 (last input but one): re-puts 7-12, 5-10, 3-8, then puts 9-14 and the three again
    "sliding_last_put_order": _cached(_SLIDING, [(S, "k", 1, 10), (S, "k", 2, 12), (S, "k", 3, 8), (S, "k", 4, 30)]),
    # ts 15 merges the sessions at 10 and 20: their deletes (flushed before, old values) and the new one
    "session_merge": _cached(_SESSIONS, [(S, "k", 1, 10), (S, "k", 2, 20), (S, "k", 3, 15), (S, "k", 4, 30)]),
    # a's result is deleted at input 5; the tombstone of a at input 8 deletes nothing: not forwarded
    "fk_result": _cached(_FK_RESULT, [(T, "a", {"fk": "x"}, 1), ("u", "x", 1, 2), ("v", "a", 9, 3),
                                      (T, "b", {"fk": "x"}, 3), ("u", "x", 2, 4), (T, "a", {"fk": "y"}, 5),
                                      (T, "c", {"fk": "q"}, 6), ("u", "x", None, 7), (T, "a", None, 8)]),
    # emit on window close: no cache (the processor forwards itself), one result per window
    "emit_final": _cached(_EMIT_FINAL, [(S, "k", 1, 1), (S, "k", 2, 12)]),
}
NAMES = sorted(SCENARIOS)


@pytest.fixture(scope="module")
def results(spark):
    from kssim.spark_backend.runtime.runner import run_scenarios

    return dict(zip(NAMES, run_scenarios([SCENARIOS[n] for n in NAMES], spark)))


@pytest.fixture(scope="module")
def reference():
    return dict(zip(NAMES, run_on("reference", [SCENARIOS[n] for n in NAMES])))


def _out(result, topic=None):
    return [(o.topic, o.key, o.value, o.ts, o.input_index) for o in result.outputs if topic in (None, o.topic)]


def _kv(result):
    return [(o.key, o.value) for o in result.outputs]


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


def test_several_updates_of_one_key_in_one_take_become_one(results):
    # uncached: 1, 2 at input 0 and 3, 4 at input 1
    assert _out(results["one_key_twice"]) == [("o", "k", 2, 1, 0), ("o", "k", 4, 2, 1)]


def test_a_flushed_change_feeds_a_repartition_topic_with_the_value_before_the_take(results):
    # the count's flush: Change(2, null) (a first update has no old value), then Change(4, 2): the
    # sum re-grouped by one key adds 2, then subtracts 2 and adds 4; j's count adds 2
    assert _kv(results["into_repartition"]) == [("all", 2), ("all", 4), ("all", 6)]


def test_a_flush_that_reaches_a_later_cache_is_flushed_after_it_in_the_same_commit(results):
    # the count's flush (2) goes to raw and the sum's cache; the sum (created after) flushes next
    assert _out(results["chained"]) == [("raw", "k", 2, 1, 0), ("o", "k", 2, 1, 0), ("raw", "k", 4, 2, 1),
                                        ("o", "k", 6, 2, 1)]


def test_a_cache_flushes_after_everything_else_its_take_caused(results):
    assert _out(results["uncached"]) == [("o", "k", 1, 1, 0), ("raw", "k", 1, 1, 0), ("o", "k", 2, 2, 1),
                                         ("raw", "k", 2, 2, 1)]
    assert _out(results["after_other_outputs"]) == [("raw", "k", 1, 1, 0), ("o", "k", 1, 1, 0),
                                                    ("raw", "k", 2, 2, 1), ("o", "k", 2, 2, 1)]


def test_a_null_change_is_not_forwarded_since_2_2(results):
    # the tombstone for x (never held): Change(null, null), forwarded by 2.1's cache, not by 2.2's
    assert _out(results["null_change_2.1"], "p") == [("p", "x", None, 1, 0), ("p", "k", 1, 2, 1)]
    assert _out(results["null_change_2.2"], "p") == [("p", "k", 1, 2, 1)]
    for name in ("null_change_2.1", "null_change_2.2"):
        assert _out(results[name], "o") == [("o", "x", [5, None], 3, 2)]


def test_window_keys_are_flushed_in_the_order_of_their_last_put(results):
    def window(start, end):
        return {"key": "k", "start": start, "end": end}

    assert _kv(results["sliding_last_put_order"]) == [
        (window(5, 10), 2), (window(11, 16), 2), (window(7, 12), 4),
        (window(9, 14), 4), (window(7, 12), 6), (window(5, 10), 4), (window(3, 8), 2), (window(25, 30), 2)]


def test_merged_sessions_are_deleted_and_the_merged_one_forwarded(results):
    def session(start, end):
        return {"key": "k", "start": start, "end": end}

    assert _kv(results["session_merge"]) == [(session(10, 10), [1]), (session(20, 20), [2]), (session(10, 10), None),
                                             (session(20, 20), None), (session(10, 20), [1, 2, 3]),
                                             (session(30, 30), [4])]


def test_emit_on_window_close_has_no_cache(results):
    assert _kv(results["emit_final"]) == [({"key": "k", "start": 0, "end": 10}, 2)]


# --- what is refused by name -------------------------------------------------------------------------

def _refusal(topology, inputs=()):
    from kssim.spark_backend.graph.runner import unsupported

    sc = _cached(topology, list(inputs))
    return unsupported(compile_graph(sc.topology, sc.profile, sc.config.store), sc.config)


def test_a_join_that_can_read_a_cached_table_ahead_of_its_flush_is_refused_by_name():
    # one record of t updates t (cached: the join reads it) and, through to_table u, reaches the
    # join's other side before t's cache is flushed: Kafka's getter reads t's new value
    graph = {"graph": [{"table": T, "id": "t"}, {"to_stream": {}}, {"to_table": {}, "id": "u"},
                       {"from": "t", "join": {"other": "u", "joiner": "pair"}}, {"to_stream": {}}, {"to": "o"}]}
    refusal = _refusal(graph)
    assert isinstance(refusal, UnsupportedOperator)
    assert "topology.graph[3] (join)" in str(refusal) and "config.caching" in str(refusal)
    # without caches the same graph runs
    from kssim.spark_backend.graph.runner import unsupported

    plain = scenario(graph, [])
    assert unsupported(compile_graph(plain.topology, plain.profile), plain.config) is None


def test_tables_of_other_topics_joined_are_not_refused():
    assert _refusal(_TABLE_CHANGES) is None


def test_a_foreign_key_join_result_cache_skips_a_null_change(results):
    # one response per take: the cache shows only in the null change of a's second delete
    assert [o[:3] for o in _out(results["fk_result"], "r")] == [
        ("r", "a", [{"fk": "x"}, 1]), ("r", "b", [{"fk": "x"}, 1]), ("r", "a", [{"fk": "x"}, 2]),
        ("r", "b", [{"fk": "x"}, 2]), ("r", "a", None), ("r", "b", None)]
