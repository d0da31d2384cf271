"""The levels a graph runs in on Spark (``spark_backend.graph.runner.node_levels``): a node whose
output for a record depends on that record alone runs in the level of its deepest input (no
checkpoint, shuffle or job of its own); a node with a store runs one level after its inputs;
graphs ordered by TopologyTestDriver's heap of internal queues keep one level per node depth.
Then graphs whose levels hold chains of such nodes (the same stage at several depths of one
level, branches, a merge of two levels) against the reference engine."""
from __future__ import annotations

import pytest
from kssim_testing import run_on, scenario
from test_graph_heap import CASES as HEAP_CASES

from kssim.reference.model.graph.plan import compile_graph

S, T = "s1", "t1"


def _levels(sc):
    from kssim.spark_backend.graph.batch import GraphBatch
    from kssim.spark_backend.graph.runner import node_levels
    from kssim.spark_backend.graph.stages import stage_of

    plan = compile_graph(sc.topology, sc.profile, sc.config.store)
    batch = GraphBatch(None, [sc], [0], [plan])
    names = {(0, n.node.index): stage_of(n.node, plan.graph.nodes) for n in plan.nodes}
    return [level for (_, _), level in sorted(node_levels(batch, names).items())], batch


WINDOWED_COUNT = {"graph": [{"stream": S}, {"select_key": {"field": "user"}}, {"group_by_key": {}},
                            {"windowed_by": {"time": {"size_ms": 60_000, "grace_ms": 1_000}}}, {"count": {}},
                            {"to_stream": {}}, {"to": "out"}]}
TABLE_SUM = {"graph": [{"table": T}, {"group_by": {"key": {"field": "g"}, "value": {"field": "n"}}},
                       {"aggregate": "sum"}, {"to_stream": {}}, {"to": "out"}]}


def test_stateless_nodes_run_in_their_inputs_level():
    # the re-key, the repartition's read-back and the window's pass-through all run with the
    # source; the count and what follows it one level later
    assert _levels(scenario(WINDOWED_COUNT, []))[0] == [0, 0, 0, 0, 1, 1, 1]
    # the table's regroup runs with the table source (its store is the level's), the sum after
    assert _levels(scenario(TABLE_SUM, []))[0] == [0, 0, 1, 1, 1]


def test_graphs_ordered_by_the_heap_keep_a_level_per_depth():
    for name, sc in HEAP_CASES.items():
        levels, batch = _levels(sc)
        assert levels == [batch.depths[(0, i)] for i in range(len(levels))], name


#: a level holding the same stages at several depths (filters and mappers in a chain, a branch
#: of each), a merge of records from two levels, a re-key between two aggregations
CHAINS = {
    "chain_of_filters": scenario({"graph": [
        {"stream": S},
        {"filter": {"cmp": [{"field": "n"}, ">", {"const": 0}]}},
        {"map_values": {"object": {"n": {"add": [{"field": "n"}, {"const": 1}]}, "g": {"field": "g"}}}},
        {"filter": {"cmp": [{"field": "n"}, ">", {"const": 2}]}},
        {"map_values": {"object": {"n": {"add": [{"field": "n"}, {"const": 10}]}, "g": {"field": "g"}}}},
        {"filter": {"cmp": [{"field": "n"}, "<", {"const": 16}]}},
        {"to": "out"}]},
        [(S, "a", {"n": 0, "g": "x"}, 1), (S, "b", {"n": 2, "g": "y"}, 2), (S, "c", {"n": 4, "g": "x"}, 3),
         (S, "d", {"n": 9, "g": "y"}, 4), (S, None, {"n": 3, "g": "x"}, 5)]),
    "merge_of_two_levels": scenario({"graph": [
        {"stream": S, "id": "input"},
        {"group_by_key": {}},
        {"count": {}},
        {"to_stream": {}},
        {"map_values": {"object": {"count": "$value"}}},
        {"merge": "input"},
        {"filter": {"not": {"is_null": "$value"}}},
        {"to": "out"}]},
        [(S, "a", {"n": 1}, 1), (S, "a", {"n": 2}, 2), (S, "b", None, 3), (S, "a", {"n": 3}, 4)]),
    "rekey_between_aggregations": scenario({"graph": [
        {"table": T},
        {"group_by": {"key": {"field": "g"}}},
        {"count": {}},
        {"filter": {"cmp": ["$value", ">", {"const": 1}]}},
        {"to_stream": {}},
        {"select_key": {"const": "all"}},
        {"group_by_key": {}},
        {"count": {}},
        {"to_stream": {}},
        {"to": "out"}]},
        [(T, "k1", {"g": "a"}, 1), (T, "k2", {"g": "a"}, 2), (T, "k3", {"g": "b"}, 3), (T, "k4", {"g": "b"}, 4),
         (T, "k1", {"g": "b"}, 5), (T, "k2", None, 6)]),
}
NAMES = sorted(CHAINS)


#: the cases' run in batches of two scenarios (the runner's GRAPH_BATCH), and how many batches ran
BATCHES = []


@pytest.fixture(scope="module")
def results(spark):
    from kssim.spark_backend.graph import runner as graph_runner
    from kssim.spark_backend.runtime.runner import run_scenarios

    size, run_batch = graph_runner.GRAPH_BATCH, graph_runner._run_batch
    graph_runner.GRAPH_BATCH = 2

    def counted(spark, runnable, plans):
        BATCHES.append(len(runnable))
        return run_batch(spark, runnable, plans)
    graph_runner._run_batch = counted
    try:
        return dict(zip(NAMES, run_scenarios([CHAINS[n] for n in NAMES], spark)))
    finally:
        graph_runner.GRAPH_BATCH, graph_runner._run_batch = size, run_batch


def test_the_cases_ran_in_batches_of_two(results):
    assert len(NAMES) > 2 and BATCHES == [2] * (len(NAMES) // 2) + [1] * (len(NAMES) % 2)


@pytest.fixture(scope="module")
def reference():
    return dict(zip(NAMES, run_on("reference", [CHAINS[n] for n in NAMES])))


def test_the_chains_fuse():
    levels, _ = _levels(CHAINS["chain_of_filters"])
    assert levels == [0] * 7
    # the merge takes the source's records from level 0's checkpoint, the count's from its own level
    assert _levels(CHAINS["merge_of_two_levels"])[0] == [0, 0, 1, 1, 1, 1, 1, 1]
    # two repartition topics behind one input: the heap orders them, a level per depth
    assert _levels(CHAINS["rekey_between_aggregations"])[0] == list(range(10))


@pytest.mark.parametrize("name", NAMES)
def test_spark_agrees_with_the_reference_engine(results, reference, name):
    got, want = results[name], reference[name]
    assert not isinstance(got, Exception), got
    assert want.outputs, name  # the case shows something
    assert [tuple(o[:7]) for o in got.outputs] == [tuple(o[:7]) for o in want.outputs]
    assert [(d.input_index, d.reason, d.node) for d in got.drops] == \
        [(d.input_index, d.reason, d.node) for d in want.drops]
    assert (got.failure is None) == (want.failure is None)


def test_settings_shared_by_every_instance_are_literals_and_give_the_join_s_rows(spark):  # noqa: F811
    from kssim.spark_backend.graph.batch import GraphBatch

    batch = GraphBatch(spark, [], [], [])
    frame = spark.createDataFrame([(sid, node, sid * 10 + node) for sid in range(3) for node in range(3)],
                                  "sid INT, node INT, x INT")
    ddl = "sid INT, node INT, size BIGINT, name STRING"
    shared = [(0, 1, 5, "count"), (2, 2, 5, "count")]
    one = [(1, 0, 7, None)]
    apart = [(0, 1, 5, "count"), (2, 2, 6, "sum")]
    for rows in (shared, one, apart):
        settled = batch.settled(frame, rows, ddl)
        joined = frame.join(batch.frame(rows, ddl), ["sid", "node"])
        assert sorted(settled.select(*joined.columns).collect()) == sorted(joined.collect())
        # settings the instances share are literals (no inner join brings them), else joined
        plan = settled.select("size")._jdf.queryExecution().optimizedPlan().toString()
        assert ("Join Inner" in plan) == (rows is apart), plan
