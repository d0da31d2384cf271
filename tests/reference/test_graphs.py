"""Topology graphs on the reference engine: the loader's errors (node and field named), the plan
(repartition topics, null-key filters, old values, materialization), TopologyTestDriver's heap and
the behaviours between operators that single-operator scenarios cannot show."""
import pytest

from kssim.reference.graph.queues import InternalQueues
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.graph.plan import compile_graph
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.scenario import scenario_from_dict
from kssim.reference.runtime.engine import run_scenario


def scenario(graph, inputs=(), semantics="3.9", config=None):
    doc = {"format": "kssim-scenario/1", "name": "t", "semantics": semantics, "topology": {"graph": graph},
           "inputs": list(inputs)}
    if config is not None:
        doc["config"] = config
    return scenario_from_dict(doc)


def rec(topic, key, value, ts):
    return {"topic": topic, "key": key, "value": value, "ts": ts}


def outputs(s):
    return [(o.topic, o.key, o.value, o.ts, o.input_index) for o in run_scenario(s).outputs]


# --- the loader: every bad graph names the node and the field ------------------------------------

@pytest.mark.parametrize("graph, where, words", [
    ([{"stream": "s"}, {"filter": {"cmp": ["$key", "~", {"const": 1}]}}, {"to": "o"}],
     "topology.graph[1].filter.cmp[1]", "=="),
    ([{"stream": "s"}, {"count": {}}, {"to": "o"}], "topology.graph[1]", "grouped"),
    ([{"stream": "s"}, {"to": "o"}, {"to": "p"}], "topology.graph[2]", "sink"),
    ([{"stream": "s"}, {"select_key": "$key", "from": "x"}, {"to": "o"}], "topology.graph[1].from", "earlier"),
    ([{"stream": "s", "id": "a"}, {"stream": "t", "id": "a"}, {"to": "o"}], "topology.graph[1].id", "already"),
    ([{"stream": "s"}, {"map_values": "$value"}], "topology.graph", "no sink"),
    ([{"stream": "s"}, {"to": "s"}], "topology.graph[1].to", "source"),
    ([{"stream": "s", "id": "a"}, {"table": "t", "id": "b"}, {"outer_join": {"other": "b"}, "from": "a"},
      {"to": "o"}], "topology.graph[2].outer_join", "stream-table join"),
    ([{"stream": "s", "id": "a"}, {"stream": "t", "id": "b"}, {"join": {"other": "b"}, "from": "a"}, {"to": "o"}],
     "topology.graph[2].join.window", "window"),
    ([{"table": "t", "id": "a"}, {"table": "u", "id": "b"},
      {"join": {"other": "b", "foreign_key": "$key"}, "from": "a"}, {"to_stream": {}}, {"to": "o"}],
     "topology.graph[2].join.foreign_key", "left value only"),
    ([{"stream": "s"}, {"group_by_key": {}}, {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}}},
      {"count": {}}, {"group_by": {"key": "$key"}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}],
     "topology.graph[4].group_by", "windowed keys"),
    ([{"stream": "s"}, {"group_by_key": {}}, {"windowed_by": {"time": {"size_ms": 0, "grace_ms": 0}}},
      {"count": {}}, {"to_stream": {}}, {"to": "o"}], "topology.graph[2].windowed_by.size_ms", "above 0"),
    ([{"table": "t"}, {"suppress": {"until": "window_close"}}, {"to_stream": {}}, {"to": "o"}],
     "topology.graph[1].suppress.until", "windowed"),
    ([{"stream": "s"}, {"group_by_key": {}}, {"aggregate": "median"}, {"to_stream": {}}, {"to": "o"}],
     "topology.graph[2].aggregate", "median"),
])
def test_a_bad_graph_names_node_and_field(graph, where, words):
    with pytest.raises(ScenarioError) as err:
        scenario(graph)
    assert err.value.where == where
    assert words in err.value.message


def test_an_operation_a_release_lacks_names_node_and_release():
    graph = [{"stream": "s"}, {"repartition": {}}, {"to": "o"}]
    with pytest.raises(ScenarioError) as err:
        scenario(graph, semantics="2.5")
    assert err.value.where == "topology.graph[1].repartition"
    assert "2.5" in err.value.message
    scenario(graph, semantics="2.6")  # KIP-221 arrived in 2.6


def test_a_graph_takes_no_partitions_and_no_timestamp_order():
    for config in ({"partitions": {"s": 2}}, {"order": "timestamp_sync"}):
        with pytest.raises(ScenarioError) as err:
            scenario([{"stream": "s"}, {"to": "o"}], config=config)
        assert err.value.where.startswith("config.")


def test_expected_records_name_a_sink_topic():
    doc = {"format": "kssim-scenario/1", "name": "t", "topology": {"graph": [{"stream": "s"}, {"to": "o"}]},
           "inputs": [rec("s", "k", 1, 0)], "expected": [{"topic": "output", "key": "k", "value": 1, "ts": 0}]}
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(doc)
    assert err.value.where == "expected[0].topic"


# --- TopologyTestDriver's heap ------------------------------------------------------------------

def _drain(queues):
    out = []
    while queues:
        r = queues.take()
        out.append(f"{r[0]}:{r[2]}")
    return out


def test_internal_queues_are_taken_in_java_heap_order_not_fifo():
    # the spec's example: one input fans out into three queues, two records each, equal timestamps
    queues = InternalQueues()
    for element in "ab":
        for topic in "ABC":
            queues.append((topic, None, element, 5, None))
    assert _drain(queues) == ["A:a", "C:a", "A:b", "C:b", "B:a", "B:b"]


def test_the_queue_with_the_smallest_head_timestamp_goes_first():
    queues = InternalQueues()
    queues.append(("A", None, "late", 9, None))
    queues.append(("B", None, "early", 1, None))
    queues.append(("A", None, "next", 0, None))  # behind A's head: A still waits for its head (9)
    assert _drain(queues) == ["B:early", "A:late", "A:next"]


# --- the plan -----------------------------------------------------------------------------------

def _plan(graph, release="3.9"):
    return compile_graph(scenario(graph, semantics=release).topology, profile_for(release))


REKEYED_AGGREGATION = [{"stream": "s"}, {"select_key": {"field": "g"}}, {"group_by_key": {}}, {"count": {}},
                       {"to_stream": {}}, {"to": "o"}]


def test_a_rekeyed_aggregation_gets_a_repartition_topic_that_drops_null_keys():
    plan = _plan(REKEYED_AGGREGATION)
    (edge,) = plan.nodes[2].children
    assert edge.child == 3 and edge.drops_null_keys
    assert edge.repartition == "KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition"  # Kafka's name
    assert plan.internal_topics == (edge.repartition,)
    plain = _plan([{"stream": "s"}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}])
    assert plain.internal_topics == ()


def test_null_keys_cross_a_repartition_topic_only_towards_a_left_or_outer_join_since_3_7():
    graph = [{"stream": "s"}, {"select_key": {"field": "g"}, "id": "r"}, {"table": "t", "id": "t"},
             {"left_join": {"other": "t"}, "from": "r"}, {"to": "o"}]
    (edge,) = _plan(graph).nodes[1].children
    assert edge.repartition is not None and not edge.drops_null_keys
    (edge,) = _plan(graph, "3.6").nodes[1].children
    assert edge.drops_null_keys  # before KIP-962 every repartition filter drops them
    inner = [dict(n) for n in graph]
    inner[3] = {"join": {"other": "t"}, "from": "r"}
    assert _plan(inner).nodes[1].children[0].drops_null_keys


def test_table_group_by_asks_its_source_for_old_values_and_materializes_it():
    plan = _plan([{"table": "t"}, {"group_by": {"key": {"field": "g"}}}, {"count": {}}, {"to_stream": {}},
                  {"to": "o"}])
    assert plan.nodes[0].send_old_values and plan.nodes[0].materialized
    assert plan.nodes[2].children[0].repartition is None  # count -> to_stream: no topic behind
    assert plan.nodes[1].children[0].repartition is not None


def test_a_filter_on_an_aggregation_sends_old_values_since_2_7():
    graph = [{"stream": "s"}, {"group_by_key": {}}, {"count": {}}, {"filter": {"cmp": ["$value", ">", {"const": 1}]}},
             {"to_stream": {}}, {"to": "o"}]
    assert _plan(graph).nodes[3].send_old_values
    assert not _plan(graph, "2.6").nodes[3].send_old_values
    on_source = [{"table": "t"}, {"filter": {"is_null": "$value"}}, {"to_stream": {}}, {"to": "o"}]
    assert not _plan(on_source).nodes[1].send_old_values  # an unmaterialized source is not forced


# --- behaviours between operators ----------------------------------------------------------------

def test_table_group_by_emits_twice_before_3_5_and_once_since_when_the_group_stays():
    graph = [{"table": "t"}, {"group_by": {"key": {"field": "g"}, "value": {"field": "n"}}}, {"aggregate": "sum"},
             {"to_stream": {}}, {"to": "o"}]
    inputs = [rec("t", "k", {"g": "a", "n": 1}, 1), rec("t", "k", {"g": "a", "n": 5}, 2)]
    assert [o[1:4] for o in outputs(scenario(graph, inputs, "3.5"))] == [("a", 1, 1), ("a", 5, 2)]
    assert [o[1:4] for o in outputs(scenario(graph, inputs, "3.4"))] == [("a", 1, 1), ("a", 0, 2), ("a", 5, 2)]


def test_a_filtered_table_sends_a_delete_for_a_row_that_never_passed():
    graph = [{"table": "t"}, {"filter": {"cmp": [{"field": "n"}, ">", {"const": 2}]}}, {"to_stream": {}},
             {"to": "o"}]
    got = outputs(scenario(graph, [rec("t", "k", {"n": 1}, 1), rec("t", "k", {"n": 3}, 2)]))
    assert got == [("o", "k", None, 1, 0), ("o", "k", {"n": 3}, 2, 1)]


def test_a_rekeyed_record_reaches_the_aggregation_through_the_repartition_topic():
    graph = REKEYED_AGGREGATION[:4] + [{"to_stream": {}}, {"to": "o"}]
    inputs = [rec("s", "k1", {"g": "a"}, 1), rec("s", "k2", {"g": "a"}, 2), rec("s", "k3", {"g": None}, 3)]
    result = run_scenario(scenario(graph, inputs))
    assert [(o.key, o.value, o.input_index) for o in result.outputs] == [("a", 1, 0), ("a", 2, 1)]
    assert [(d.input_index, d.reason.code) for d in result.drops] == [(2, "null_key")]


def test_caching_merges_one_records_updates_and_forwards_no_tombstone_for_an_absent_key():
    graph = [{"table": "t", "id": "t"}, {"stream": "s"}, {"left_join": {"other": "t"}}, {"to": "o"},
             {"to_stream": {}, "from": "t"}, {"to": "p"}]
    inputs = [rec("t", "x", None, 1), rec("t", "k", 1, 2)]
    plain = outputs(scenario(graph, inputs))
    cached = outputs(scenario(graph, inputs, config={"caching": True}))
    assert ("p", "x", None, 1, 0) in plain
    assert ("p", "x", None, 1, 0) not in cached
    assert ("p", "k", 1, 2, 1) in cached


# --- explanations across nodes ---------------------------------------------------------------------

def test_explain_gives_the_path_across_the_repartition_and_drops_name_their_node():
    graph = [{"stream": "s"}, {"select_key": {"field": "g"}, "id": "r"}, {"table": "t", "id": "t"},
             {"join": {"other": "t"}, "from": "r"}, {"to": "o"}]
    inputs = [rec("t", "a", 1, 1), rec("s", "k", {"g": "a"}, 2), rec("s", "k", None, 3)]
    result = run_scenario(scenario(graph, inputs), explain=True)
    (out,) = result.outputs
    text = out.why.text
    # the repartition topic has the name Kafka gives it (Topology#describe)
    hops = ["graph[0] stream", "graph[1] select_key: key -> a", "KSTREAM-KEY-SELECT-0000000001-repartition",
            "graph[3] join"]
    assert all(h in text for h in hops) and [text.index(h) for h in hops] == sorted(text.index(h) for h in hops)
    # a null value re-keyed by a field has a null key: the filter before the topic drops it (inner join behind)
    (drop,) = result.drops
    topic = "KSTREAM-KEY-SELECT-0000000001-repartition"
    assert (drop.input_index, drop.reason.code, drop.node) == (2, "null_key", topic)
    assert run_scenario(scenario(graph, inputs)).drops[0].node == topic  # without explanations too


def test_a_window_cache_merges_one_records_updates_of_a_window():
    # one input, two elements of flat_map_values, one window: two results uncached, one cached
    graph = [{"stream": "s"}, {"flat_map_values": {"list": ["$value", "$value"]}}, {"group_by_key": {}},
             {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}}}, {"count": {}}, {"to_stream": {}},
             {"to": "o"}]
    inputs = [rec("s", "k", "a", 3)]
    window = {"key": "k", "start": 0, "end": 10}
    assert [o[1:3] for o in outputs(scenario(graph, inputs))] == [(window, 1), (window, 2)]
    assert [o[1:3] for o in outputs(scenario(graph, inputs, config={"caching": True}))] == [(window, 2)]


def test_a_session_cache_forwards_at_the_sessions_end_after_the_records_other_output():
    graph = [{"stream": "s", "id": "s"}, {"group_by_key": {}},
             {"windowed_by": {"session": {"gap_ms": 5, "grace_ms": 0}}}, {"count": {}}, {"to_stream": {}},
             {"to": "o"}, {"from": "s", "to": "raw"}]
    inputs = [rec("s", "k", "a", 3)]
    plain = outputs(scenario(graph, inputs))
    cached = outputs(scenario(graph, inputs, config={"caching": True}))
    session = ("o", {"key": "k", "start": 3, "end": 3}, 1, 3, 0)
    assert plain == [session, ("raw", "k", "a", 3, 0)]
    assert cached == [("raw", "k", "a", 3, 0), session]  # the cache forwards at the commit, after the rest


def test_an_fk_join_result_with_a_cache_gives_what_the_driver_reads_uncached():
    # the result store is cached (old values asked for by group_by); one response a record, so the
    # driver's commit after each makes the cache invisible here
    graph = [{"table": "t", "id": "t"}, {"table": "u", "id": "u"},
             {"join": {"other": "u", "foreign_key": {"field": "fk"}}, "from": "t"},
             {"group_by": {"key": {"const": "all"}}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}]
    inputs = [rec("u", "x", 1, 1), rec("t", "a", {"fk": "x"}, 2), rec("t", "b", {"fk": "x"}, 3),
              rec("u", "x", 2, 4), rec("t", "a", {"fk": "y"}, 5)]
    plain = outputs(scenario(graph, inputs))
    # KIP-904: a result update that keeps its group is one record, one output (2, 2 at input 3)
    assert [o[2] for o in plain] == [1, 2, 2, 2, 1]
    assert outputs(scenario(graph, inputs, config={"caching": True})) == plain


# --- release rules of graphs ---------------------------------------------------------------------

def test_before_1_1_a_stream_aggregation_reforwards_its_aggregate_on_a_null_value():
    graph = [{"stream": "s"}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}]
    inputs = [rec("s", "k", "a", 1), rec("s", "k", None, 2)]
    assert [o[1:4] for o in outputs(scenario(graph, inputs, "1.0"))] == [("k", 1, 1), ("k", 1, 2)]
    assert [o[1:4] for o in outputs(scenario(graph, inputs, "1.1"))] == [("k", 1, 1)]


def test_before_2_3_an_aggregation_result_has_the_records_timestamp():
    graph = [{"stream": "s"}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}]
    inputs = [rec("s", "k", "a", 5), rec("s", "k", "b", 3)]
    assert [o[3] for o in outputs(scenario(graph, inputs, "2.2"))] == [5, 3]
    assert [o[3] for o in outputs(scenario(graph, inputs, "2.3"))] == [5, 5]


def test_0_10_0_sends_the_add_record_of_a_table_group_by_first():
    graph = [{"table": "t"}, {"group_by": {"key": {"field": "g"}, "value": {"field": "n"}}}, {"aggregate": "sum"},
             {"to_stream": {}}, {"to": "o"}]
    inputs = [rec("t", "k", {"g": "a", "n": 1}, 1), rec("t", "k", {"g": "b", "n": 5}, 2)]
    assert [o[1:3] for o in outputs(scenario(graph, inputs, "0.10.0"))][1:] == [("b", 5), ("a", 0)]
    assert [o[1:3] for o in outputs(scenario(graph, inputs, "0.10.1"))][1:] == [("a", 0), ("b", 5)]


def test_every_graph_of_the_corpus_runs_with_explanations():
    # explanations go through other code paths (an FK join's out-of-order right update reads the store)
    import glob
    import os

    from kssim_testing import CONFORMANCE_GRAPHS
    from kssim.reference.model.scenario import load_scenario

    files = sorted(glob.glob(os.path.join(CONFORMANCE_GRAPHS, "**", "*.json"), recursive=True))
    assert len(files) >= 375
    for path in files:
        plain, explained = run_scenario(load_scenario(path)), run_scenario(load_scenario(path), explain=True)
        assert [o[:6] for o in explained.outputs] == [o[:6] for o in plain.outputs], path
        assert all(o.why is not None for o in explained.outputs), path


def test_two_joins_of_one_rekeyed_stream_share_its_topic_and_its_filter():
    graph = [{"stream": "s"}, {"select_key": {"field": "g"}, "id": "r"}, {"table": "t", "id": "t"},
             {"join": {"other": "t"}, "from": "r"}, {"to": "o"},
             {"left_join": {"other": "t"}, "from": "r"}, {"to": "p"}]
    plan = _plan(graph)
    inner, left = plan.nodes[1].children
    assert inner.repartition == left.repartition and plan.internal_topics == (inner.repartition,)
    assert not inner.drops_null_keys and not left.drops_null_keys  # the left join needs them: one filter
    got = outputs(scenario(graph, [rec("s", "k", {"n": 1}, 1)]))
    assert got == [("p", None, [{"n": 1}, None], 1, 0)]  # the inner join drops it, the left join emits it


def test_the_plan_places_each_node_in_kafkas_sub_topology():
    graph = [{"table": "customers", "id": "c"}, {"stream": "orders"}, {"select_key": {"field": "customer"}},
             {"join": {"other": "c"}}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "o"}]
    plan = _plan(graph)
    # the re-keying side is sub-topology 1 (it ends at the repartition sink); the join and what
    # follows read the repartition topic with the table, in sub-topology 0 (Topology#describe)
    assert plan.subtopologies == (0, 1, 1, 0, 0, 0, 0, 0)


# --- a suppressed table read through its value getter ---------------------------------------------
# KTableSuppressProcessorSupplier#view (2.3+, KAFKA-8199): a key the buffer holds is read as the
# buffer's prior value (the old value of the update that first buffered it) at timestamp -1
# (RecordQueue.UNKNOWN), no row when that prior value is null; any other key through the parent's
# getter. Suppress: untilTimeLimit 10 on the right table r.

_SUPPRESSED_RIGHT_INPUTS = [
    rec("r", "a", "r1", 1),    # 0: a buffered at 1, prior null (a new row)
    rec("l", "a", "l1", 2),    # 1: a buffered, prior null: no row (the parent has r1)
    rec("r", "a", "r2", 20),   # 2: stream time 20 >= 1 + 10: a evicted, Change(r2, r1)@20 reaches the join
    rec("r", "a", "r3", 22),   # 3: a buffered again at 22, prior r2
    rec("l", "a", "l2", 5),    # 4: a read as r2 at ts -1: joined at the left record's ts 5 (parent: r3@22)
    rec("r", "b", "x", 40),    # 5: b buffered at 40 (prior null); 40 >= 22 + 10: a evicted, Change(r3, r2)@22
    rec("l", "b", "m", 41),    # 6: b buffered, prior null: no row (the parent has x)
    rec("l", "a", "l3", 42),   # 7: a not buffered: the parent's row r3@22
]


@pytest.mark.parametrize("join, expected", [
    ("join", [("o", "a", ["l1", "r2"], 20, 2), ("o", "a", ["l2", "r2"], 5, 4), ("o", "a", ["l2", "r3"], 22, 5),
              ("o", "a", ["l3", "r3"], 42, 7)]),
    ("left_join", [("o", "a", ["l1", None], 2, 1), ("o", "a", ["l1", "r2"], 20, 2), ("o", "a", ["l2", "r2"], 5, 4),
                   ("o", "a", ["l2", "r3"], 22, 5), ("o", "b", ["m", None], 41, 6), ("o", "a", ["l3", "r3"], 42, 7)]),
])
def test_a_suppressed_table_joined_as_other_side_is_read_through_its_buffers_prior_value(join, expected):
    graph = [{"table": "l", "id": "L"}, {"table": "r"},
             {"suppress": {"until": "time_limit", "time_limit_ms": 10}, "id": "S"},
             {join: {"other": "S"}, "from": "L"}, {"to_stream": {}}, {"to": "o"}]
    assert outputs(scenario(graph, _SUPPRESSED_RIGHT_INPUTS)) == expected


def test_a_stream_joined_with_a_suppressed_table_reads_the_buffers_prior_value():
    graph = [{"table": "r"}, {"suppress": {"until": "time_limit", "time_limit_ms": 10}, "id": "S"},
             {"stream": "s"}, {"left_join": {"other": "S"}}, {"to": "o"}]
    inputs = [rec("r", "a", "r1", 1), rec("s", "a", "v1", 2),   # a buffered, prior null: no row
              rec("r", "a", "r2", 20), rec("r", "a", "r3", 22),  # a evicted at 20, buffered again (prior r2)
              rec("s", "a", "v2", 23),                           # the prior value r2, not the parent's r3
              rec("s", "b", "v3", 24),                           # b in neither
              rec("r", "a", "r4", 40),                           # 40 >= 22 + 10: a evicted
              rec("s", "a", "v4", 41)]                           # the parent's row r4
    assert outputs(scenario(graph, inputs)) == [
        ("o", "a", ["v1", None], 2, 1), ("o", "a", ["v2", "r2"], 23, 4), ("o", "b", ["v3", None], 24, 5),
        ("o", "a", ["v4", "r4"], 41, 7)]


@pytest.mark.parametrize("graph", [
    [{"table": "l", "id": "L"}, {"table": "r"}, {"suppress": {"until": "time_limit", "time_limit_ms": 10}, "id": "S"},
     {"join": {"other": "S"}, "from": "L"}, {"to_stream": {}}, {"to": "o"}],
    [{"table": "r"}, {"suppress": {"until": "time_limit", "time_limit_ms": 10}, "id": "S"},
     {"stream": "s"}, {"join": {"other": "S"}}, {"to": "o"}],
])
def test_before_2_3_a_suppressed_table_has_no_value_getter(graph):
    # 2.1-2.2: the suppressed KTable's supplier is a plain ProcessorSupplier, which
    # KTableImpl#valueGetterSupplier casts to KTableProcessorSupplier (ClassCastException)
    with pytest.raises(ScenarioError) as err:
        scenario(graph, semantics="2.2")
    assert err.value.where.endswith("join")
    assert "KAFKA-8199" in err.value.message and "topology.graph[" in err.value.message
    scenario(graph, semantics="2.3")
