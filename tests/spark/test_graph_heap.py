"""``TopologyTestDriver``'s heap of internal queues on Spark (``spark_backend.graph.heap_order``):
graphs whose inputs reach two or more repartition topics, on small hand-made graphs.

Every case is declared at module level and the whole set runs as one Spark batch; each is compared
byte for byte (outputs in order, drops in order, failure) with the reference engine, whose
``reference/graph/queues.py`` is the heap exactly as ``java.util.PriorityQueue`` runs it. Results
are written ``(topic, key, value, ts, input)``.
"""
from __future__ import annotations

import pytest
from kssim_testing import result_bytes, run_on, scenario

from kssim.reference.model.graph.plan import compile_graph

CASES = {}


def case(name, nodes, inputs, **config):
    """Declare a graph scenario (inputs as ``(topic, key, value, ts)``); returns its name."""
    assert name not in CASES
    CASES[name] = scenario({"graph": nodes}, inputs, **config)
    return name


def branch(source, key, sink="out", aggregation=None):
    """A re-keyed branch of ``source``: select_key, group_by_key, an aggregation, to a sink."""
    return [{"from": source, "select_key": key}, {"group_by_key": {}},
            aggregation or {"aggregate": "string_adder"}, {"to_stream": {}}, {"to": sink}]


FAN_OUT = [{"stream": "s1"}, {"flat_map_values": {"list": [{"concat": ["$value", {"const": "a"}]},
                                                            {"concat": ["$value", {"const": "b"}]}]},
                              "id": "f"}]

# The spec's example: queues A, B, C each get a then b (one timestamp); the heap takes A:a, C:a,
# A:b, C:b, B:a, B:b; with two branches A:a, B:a, A:b, B:b.
ABC_3 = case("abc_three_branches", FAN_OUT + branch("f", {"const": "A"}) + branch("f", {"const": "B"})
             + branch("f", {"const": "C"}), [("s1", "k", "x", 5), ("s1", "k", "y", 5)])
ABC_2 = case("abc_two_branches", FAN_OUT + branch("f", {"const": "A"}) + branch("f", {"const": "B"}),
             [("s1", "k", "x", 5), ("s1", "k", "y", 7)])

# Equal timestamps everywhere, several inputs, three topics and two sinks: ties are left in heap
# order, whatever the topics' write order.
TIES = case("equal_timestamps", FAN_OUT + branch("f", "$key", "o1") + branch("f", "$value", "o2")
            + branch("f", {"const": "C"}, "o1", {"count": {}}),
            [("s1", "k", "x", 3), ("s1", "j", "y", 3), ("s1", "k", "z", 3), ("s1", None, "w", 3)])

# Three re-keyed branches (explicit repartition topics) of a fan-out merged into one aggregation:
# the merge reads three queues, taken as the spec's example says (A, C, A, C, B, B on one
# timestamp), and the aggregate's text spells the order it saw them in.
MERGED = case("merge_of_three_repartitioned_branches", FAN_OUT + [
    {"from": "f", "select_key": {"const": "g"}}, {"repartition": {}, "id": "x"},
    {"from": "f", "map": {"key": {"const": "g"}, "value": {"concat": ["$value", {"const": "!"}]}}},
    {"repartition": {}, "id": "y"},
    {"from": "f", "map": {"key": {"const": "g"}, "value": {"concat": ["$value", {"const": "?"}]}}},
    {"repartition": {}, "id": "z"},
    {"from": "x", "merge": "y", "id": "xy"}, {"merge": "z"}, {"group_by_key": {}}, {"aggregate": "string_adder"},
    {"to_stream": {}}, {"to": "out"}],
    [("s1", "k", "a", 10), ("s1", "k", "b", 4), ("s1", "j", "c", 4), ("s1", "k", "d", 12)])

# A stream-stream join of two re-keyed branches of one input: both sides are repartitioned, the
# heap decides which side's record the join sees first (and so which side emits the result).
JOINED = case("join_of_two_rekeyed_branches", [
    {"stream": "s1", "id": "s"},
    {"from": "s", "select_key": {"field": "g"}, "id": "l"},
    {"from": "s", "map": {"key": {"field": "g"}, "value": {"field": "n"}}, "id": "r"},
    {"from": "l", "outer_join": {"other": "r", "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0},
                                 "joiner": "concat"}},
    {"to": "out"}],
    [("s1", "k", {"g": "a", "n": 1}, 10), ("s1", "k", {"g": "a", "n": 2}, 10), ("s1", "j", {"g": "b", "n": 3}, 3),
     ("s1", "k", {"g": "a", "n": 4}, 30), ("s1", "k", {"g": None, "n": 5}, 31)])

# A chain of two topics (an aggregation re-grouped): the second topic's records wait behind the
# first topic's (a1, a2, b1, b2), and out-of-order timestamps give the aggregations' max
# timestamps to the second queue.
CHAIN = case("chain_of_two_topics_out_of_order", FAN_OUT + [
    {"select_key": "$value"}, {"group_by_key": {}}, {"count": {}},
    {"group_by": {"key": {"const": "all"}, "value": "$value"}}, {"aggregate": "string_adder"},
    {"to_stream": {}}, {"to": "out"}],
    [("s1", "k", "x", 10), ("s1", "k", "x", 4), ("s1", "k", "y", 2), ("s1", "k", "x", 20), ("s1", "k", "y", 1)])

# Two branches feeding a table-table join: each side an aggregation of its own topic; the side
# whose change the heap takes first joins with the other's previous row.
TABLE_JOIN = case("table_join_of_two_aggregations", [
    {"stream": "s1", "id": "s"},
    {"from": "s", "group_by": {"key": {"field": "g"}}}, {"count": {}, "id": "c"},
    {"from": "s", "group_by": {"key": {"field": "g"}}}, {"aggregate": "sum", "id": "t"},
    {"from": "c", "join": {"other": "t", "joiner": "pair"}}, {"to_stream": {}}, {"to": "out"}],
    [("s1", "k", {"g": "a", "n": 1}, 5), ("s1", "k", {"g": "a", "n": 2}, 3), ("s1", "k", {"g": "b", "n": 3}, 5),
     ("s1", "k", {"g": "a", "n": 4}, 9)])

# A windowed aggregation behind two topics: its stream time (the max it has seen) follows the
# heap's take order, so a late record is dropped or not as Kafka drops it.
WINDOWED = case("windowed_behind_two_topics", [
    {"stream": "s1", "id": "s"},
    {"from": "s", "select_key": {"const": "w"}}, {"repartition": {}, "id": "x"},
    {"from": "s", "map": {"key": {"const": "w"}, "value": {"const": "m"}}}, {"repartition": {}, "id": "y"},
    {"from": "x", "merge": "y"}, {"group_by_key": {}},
    {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}}}, {"aggregate": "string_adder"},
    {"to_stream": {}}, {"to": "out"}],
    [("s1", "k", "a", 25), ("s1", "k", "b", 12), ("s1", "k", "c", 30), ("s1", "k", "d", 19)])

# A queue that a deeper level writes moves the others on ties: the merge's aggregation (level 6)
# reads queues X and Y; X's takes also write Z, but only at level 10, through a chain of
# map_values. When Z enters the heap, Y's second record is taken before X's (xb! before xb). The
# first pass ranks the merge's arrivals without Z's writes, the check at the end finds the
# aggregation saw another order, and the second pass (Z's writes as the prediction) settles.
LATE_QUEUE = case("a_deeper_queue_reorders_ties", FAN_OUT + [
    {"from": "f", "select_key": {"const": "g"}}, {"repartition": {}, "id": "x"},
    {"from": "f", "map": {"key": {"const": "g"}, "value": {"concat": ["$value", {"const": "!"}]}}},
    {"repartition": {}, "id": "y"},
    {"from": "x", "merge": "y"}, {"group_by_key": {}}, {"aggregate": "string_adder"}, {"to_stream": {}},
    {"to": "out"},
    {"from": "x", "map_values": "$value"}, {"map_values": "$value"}, {"map_values": "$value"},
    {"map_values": "$value"}, {"map_values": "$value"}, {"select_key": {"const": "d"}},
    {"repartition": {}}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "out2"}],
    [("s1", "k", "x", 5), ("s1", "k", "y", 5)])


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
    return [(o.topic, o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason.code, d.node) for d in result.drops]


def test_every_case_needs_the_heap():
    from kssim.spark_backend.graph.heap_order import needs_heap

    for name, sc in CASES.items():
        assert needs_heap(compile_graph(sc.topology, sc.profile, sc.config.store)), name


@pytest.mark.parametrize("name", list(CASES))
def test_same_bytes_as_the_reference(results, reference, name):
    assert not isinstance(results[name], Exception), results[name]
    assert result_bytes(results[name]) == result_bytes(reference[name])
    assert drops(results[name]) == drops(reference[name])


def test_the_spec_example_three_branches(results):
    got = [(k, v) for _, k, v, _, i in records(results[ABC_3]) if i == 0]
    assert got == [("A", "0+xa"), ("C", "0+xa"), ("A", "0+xa+xb"), ("C", "0+xa+xb"), ("B", "0+xa"),
                   ("B", "0+xa+xb")]


def test_the_spec_example_two_branches(results):
    got = [(k, v) for _, k, v, _, i in records(results[ABC_2]) if i == 0]
    assert got == [("A", "0+xa"), ("B", "0+xa"), ("A", "0+xa+xb"), ("B", "0+xa+xb")]


def test_take_ranks_replay_java_priority_queue():
    from kssim.spark_backend.graph.heap_order import take_ranks

    root = (0, 0)
    # the spec's example as writes: a and b to A, B, C in that order, one timestamp
    order = [("A", "a"), ("B", "a"), ("C", "a"), ("A", "b"), ("B", "b"), ("C", "b")]
    writes = {root: [((0, 1, n), topic, 5) for n, (topic, _) in enumerate(order)]}
    ranks = take_ranks(0, writes)
    taken = [order[ident[2]] for ident, _ in sorted(ranks.items(), key=lambda kv: kv[1])]
    assert taken == [("A", "a"), ("C", "a"), ("A", "b"), ("C", "b"), ("B", "a"), ("B", "b")]


def test_take_ranks_of_a_chain_wait_behind_the_first_topic():
    from kssim.spark_backend.graph.heap_order import take_ranks

    # the input writes a1, a2 to A; each A take writes one record to B (same timestamp): A's queue
    # stays in the heap's root, so B waits (a1, a2, b1, b2), not depth-first (a1, b1, a2, b2)
    a1, a2, b1, b2 = (0, 1, 0), (0, 1, 1), (0, 1, 0, 0, 7), (0, 1, 1, 0, 7)
    writes = {(0, 0): [(a1, "A", 5), (a2, "A", 5)], a1: [(b1, "B", 5)], a2: [(b2, "B", 5)]}
    ranks = take_ranks(0, writes)
    assert sorted(ranks, key=ranks.get) == [a1, a2, b1, b2]
    # a smaller timestamp on B is taken first
    writes[a1] = [(b1, "B", 1)]
    ranks = take_ranks(0, writes)
    assert sorted(ranks, key=ranks.get) == [a1, b1, a2, b2]


def test_a_byte_bounded_suppress_behind_two_topics_is_refused_by_name():
    from kssim.spark_backend.graph.heap_order import refusal

    suppress = {"suppress": {"until": "time_limit", "time_limit_ms": 10,
                             "buffer": {"max_records": None, "max_bytes": 1000, "when_full": "emit_early"}}}
    graph = [{"stream": "s1", "id": "s"},
             {"from": "s", "select_key": {"const": "a"}}, {"repartition": {}, "id": "x"},
             {"from": "s", "select_key": {"const": "b"}}, {"repartition": {}, "id": "y"},
             {"from": "x", "merge": "y"}, {"group_by_key": {}}, {"count": {}}, suppress, {"to_stream": {}},
             {"to": "out"}]
    sc = scenario({"graph": graph}, [("s1", "k", 1, 1)])
    why = refusal(compile_graph(sc.topology, sc.profile, sc.config.store))
    assert why is not None and "graph[8]" in why and "max_bytes" in why


def test_a_deeper_queue_reorders_the_ties_of_earlier_ones(results):
    got = [v for t, _, v, _, i in records(results[LATE_QUEUE]) if t == "out" and i == 0]
    assert got == ["0+xa", "0+xa+xa!", "0+xa+xa!+xb!", "0+xa+xa!+xb!+xb"]
