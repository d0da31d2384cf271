"""The Python API builds topology graphs (``../shared/spec/topology-graphs.md``): the four
applications of issue 18 with the records Kafka gives (each also written by hand as a JSON graph
and run as a scenario: both agree), Python callables, ``Topology.describe()``, ``to_scenario``
and the errors."""
from __future__ import annotations

import json

import pytest

from kssim.reference.api import (
    BufferConfig, IllegalArgumentError, JoinWindows, Joined, Materialized, Stores, StreamsBuilder, Suppressed,
    TimeWindows, TopologyError, TopologyTestDriver, UnsavableTopologyError, ValueJoiner, Windowed,
)
from kssim.reference.model.aggregations import aggregation_from_callables
from kssim.reference.model.graph.describe import describe_graph
from kssim.reference.model.graph.nodes import GraphTopology
from kssim.reference.model.scenario import scenario_from_dict
from kssim.reference.runtime.engine import run_scenario


def run(topology, inputs, release="3.9", **options):
    """Pipe ``(topic, key, value, ts)`` inputs through the driver; every sink topic's records as
    ``(topic, key, value, ts, input index)``, topic by topic, in the order written."""
    driver = TopologyTestDriver(topology, release=release, **options)
    topics = {}
    for topic, key, value, ts in inputs:
        topics.setdefault(topic, driver.create_input_topic(topic)).pipe_input(key, value, ts=ts)
    out = []
    for topic in driver.output_topics:
        for rec in driver.create_output_topic(topic).read_records_to_list():
            key = rec.key.as_dict() if isinstance(rec.key, Windowed) else rec.key
            out.append((rec.topic, key, rec.value, rec.ts, rec.input_index))
    return out


def run_json(graph, inputs, release="3.9"):
    """The same, for a graph written by hand and run as a scenario file."""
    doc = {"format": "kssim-scenario/1", "name": "t", "semantics": release, "topology": {"graph": graph},
           "inputs": [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in inputs]}
    outputs = run_scenario(scenario_from_dict(doc)).outputs
    return sorted(((o.topic, o.key, o.value, o.ts, o.input_index) for o in outputs),
                  key=lambda o: (list(dict.fromkeys(x.topic for x in outputs)).index(o[0])))


# --- the four applications ----------------------------------------------------------------------

PAGE_VIEWS = [("pageViews", "alice", "/home", 1), ("pageViews", "bob", "/a", 2), ("pageViews", "alice", "/b", 3),
              ("pageViews", None, "/c", 4), ("pageViews", "bob", None, 5)]


def test_page_views_group_by_key_count():
    b = StreamsBuilder()
    b.stream("pageViews").group_by_key().count().to_stream().to("pageViewCounts")
    topology = b.build()
    assert topology.is_graph
    # a count per key, every update (caches off); a null key and a null value are skipped
    expected = [("pageViewCounts", "alice", 1, 1, 0), ("pageViewCounts", "bob", 1, 2, 1),
                ("pageViewCounts", "alice", 2, 3, 2)]
    assert run(topology, PAGE_VIEWS) == expected
    graph = [{"stream": "pageViews"}, {"group_by_key": {}}, {"count": {}}, {"to_stream": {}}, {"to": "pageViewCounts"}]
    assert run_json(graph, PAGE_VIEWS) == expected
    driver = TopologyTestDriver(topology)
    source = driver.create_input_topic("pageViews")
    for _, key, value, ts in PAGE_VIEWS:
        source.pipe_input(key, value, ts=ts)
    assert [(d.input_index, d.reason.code) for d in driver.drops()] == [(3, "null_key"), (4, "null_value")]


ORDERS = [("customers", "c1", "Ann", 0), ("orders", "o1", {"customer": "c1", "amount": 5}, 1),
          ("orders", "o2", {"customer": "c2", "amount": 7}, 2), ("customers", "c2", "Bob", 3),
          ("orders", "o3", {"customer": "c2", "amount": 9}, 4)]
ENRICHED = [("enriched", "c1", [{"customer": "c1", "amount": 5}, "Ann"], 1, 1),
            ("enriched", "c2", [{"customer": "c2", "amount": 9}, "Bob"], 4, 4)]
ENRICH_GRAPH = [{"table": "customers", "id": "customers"}, {"stream": "orders"},
                {"select_key": {"field": "customer"}}, {"join": {"other": "customers", "joiner": "pair"}},
                {"to": "enriched"}]


@pytest.mark.parametrize("select_key, joiner", [
    ({"field": "customer"}, "pair"),
    (lambda order_id, order: order["customer"], lambda order, customer: [order, customer]),
], ids=["json", "callables"])
def test_select_key_before_a_join_with_a_table(select_key, joiner):
    b = StreamsBuilder()
    customers = b.table("customers")
    b.stream("orders").select_key(select_key).join(customers, joiner).to("enriched")
    topology = b.build()
    # re-keyed by customer, repartitioned, joined with the customer's row at that time: o2 finds no
    # customer c2 yet (an inner join emits nothing), o3 finds Bob
    assert run(topology, ORDERS) == ENRICHED
    assert run_json(ENRICH_GRAPH, ORDERS) == ENRICHED
    assert "KSTREAM-KEY-SELECT" in topology.describe() and "-repartition" in topology.describe()


ACCOUNTS = [("accounts", "u1", {"region": "eu", "balance": 10}, 1), ("accounts", "u2", {"region": "eu", "balance": 5}, 2),
            ("accounts", "u1", {"region": "us", "balance": 7}, 3), ("accounts", "u2", None, 4),
            ("accounts", "u1", {"region": "us", "balance": 8}, 5)]
# u1 moves from eu to us: subtract from eu first, then add to us (two records); u2's tombstone
# subtracts 5 (the aggregate stays, at 0); u1's change within us is one record (subtract and add)
TOTALS = [("totals", "eu", 10, 1, 0), ("totals", "eu", 15, 2, 1), ("totals", "eu", 5, 3, 2), ("totals", "us", 7, 3, 2),
          ("totals", "eu", 0, 4, 3), ("totals", "us", 8, 5, 4)]


@pytest.mark.parametrize("group", [
    lambda t: t.group_by(lambda user, account: (account["region"], account["balance"])).aggregate(
        lambda: 0, lambda region, balance, total: total + balance, lambda region, balance, total: total - balance),
    lambda t: t.group_by({"key": {"field": "region"}, "value": {"field": "balance"}}).aggregate("sum"),
    lambda t: t.group_by({"key": {"field": "region"}, "value": {"field": "balance"}}).reduce("sum"),
    lambda t: t.group_by(lambda user, account: (account["region"], account["balance"])).reduce(
        lambda total, balance: total + balance, lambda total, balance: total - balance),
    lambda t: t.group_by({"key": {"field": "region"}, "value": {"field": "balance"}}).aggregate(
        aggregation_from_callables(lambda: 0, lambda region, balance, total: total + balance),
        lambda region, balance, total: total - balance),
], ids=["aggregate-callables", "aggregate-sum", "reduce-sum", "reduce-callables", "aggregation-and-subtractor"])
def test_ktable_group_by_aggregate_with_adder_and_subtractor(group):
    b = StreamsBuilder()
    group(b.table("accounts")).to_stream().to("totals")
    assert run(b.build(), ACCOUNTS) == TOTALS
    graph = [{"table": "accounts"}, {"group_by": {"key": {"field": "region"}, "value": {"field": "balance"}}},
             {"aggregate": "sum"}, {"to_stream": {}}, {"to": "totals"}]
    assert run_json(graph, ACCOUNTS) == TOTALS


def test_ktable_group_by_count():
    b = StreamsBuilder()
    b.table("accounts").group_by({"key": {"field": "region"}}).count().to_stream().to("totals")
    assert [r[1:3] for r in run(b.build(), ACCOUNTS)] == [("eu", 1), ("eu", 2), ("eu", 1), ("us", 1), ("eu", 0),
                                                          ("us", 1)]


CUSTOMER_ORDERS = [("customers", "c1", "Ann", 0), ("customers", "c2", "Bob", 0)] + [
    ("orders", order, {"customer": customer}, ts)
    for order, customer, ts in [("o1", "c1", 1), ("o2", "c1", 5), ("o3", "c2", 7), ("o4", "c1", 12), ("o5", "c2", 25)]]
# windows of 10 ms, grace 0: stream time 12 closes [0, 10) (both keys, in key order, each at its
# last record's ts), 25 closes [10, 20); [20, 30) of c2 stays open
COUNTS = [("customerOrderCounts", {"key": "c1", "start": 0, "end": 10}, 2, 5, 5),
          ("customerOrderCounts", {"key": "c2", "start": 0, "end": 10}, 1, 7, 5),
          ("customerOrderCounts", {"key": "c1", "start": 10, "end": 20}, 1, 12, 6)]


def _orders_per_customer(select_key, joiner):
    b = StreamsBuilder()
    customers = b.table("customers")
    (b.stream("orders").select_key(select_key).join(customers, joiner)
     .group_by_key().windowed_by(TimeWindows.of_size_and_grace(10, 0)).count()
     .suppress(Suppressed.until_window_closes(BufferConfig.unbounded())).to_stream().to("customerOrderCounts"))
    return b.build()


@pytest.mark.parametrize("select_key, joiner", [
    ({"field": "customer"}, "pair"),
    (lambda order_id, order: order["customer"], lambda order, customer: {"order": order, "customer": customer}),
], ids=["json", "callables"])
def test_a_join_feeding_a_suppressed_windowed_count(select_key, joiner):
    topology = _orders_per_customer(select_key, joiner)
    assert run(topology, CUSTOMER_ORDERS) == COUNTS
    graph = [{"table": "customers", "id": "customers"}, {"stream": "orders"}, {"select_key": {"field": "customer"}},
             {"join": {"other": "customers", "joiner": "pair"}}, {"group_by_key": {}},
             {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}}}, {"count": {}},
             {"suppress": {"until": "window_close"}}, {"to_stream": {}}, {"to": "customerOrderCounts"}]
    assert run_json(graph, CUSTOMER_ORDERS) == COUNTS
    driver = TopologyTestDriver(topology)
    for topic, key, value, ts in CUSTOMER_ORDERS:
        driver.create_input_topic(topic).pipe_input(key, value, ts=ts)
    assert driver.create_output_topic("customerOrderCounts").read_key_values_to_map() == {
        Windowed("c1", 0, 10): 2, Windowed("c2", 0, 10): 1, Windowed("c1", 10, 20): 1}


# --- the other operations, as JSON and as callables ------------------------------------------------

WORDS = [("lines", "a", "hello big world", 1), ("lines", "b", None, 2), ("lines", "c", "big", 3)]


@pytest.mark.parametrize("build", [
    lambda s: s.flat_map_values(lambda line: line.split()).filter(lambda k, w: w != "hello")
    .group_by(lambda k, w: w).count(),
    lambda s: s.flat_map_values(lambda k, line: (w for w in line.split())).filter_not(lambda k, w: w == "hello")
    .map(lambda k, w: (w, w)).group_by_key().count(),
], ids=["value-mapper", "key-value-mapper"])
def test_word_count_with_callables(build):
    b = StreamsBuilder()
    build(b.stream("lines")).to_stream().to("counts")
    # a null line: the callable gets None; flat_map_values of None is no record
    b2 = StreamsBuilder()
    build(b2.stream("lines").filter(lambda k, v: v is not None)).to_stream().to("counts")
    assert run(b2.build(), WORDS) == [("counts", "big", 1, 1, 0), ("counts", "world", 1, 1, 0),
                                      ("counts", "big", 2, 3, 2)]


def test_stateless_operations_json_and_callables_agree():
    inputs = [("s", "k1", {"n": 1, "g": "x"}, 1), ("s", "k2", {"n": -2, "g": "y"}, 2), ("t", "k3", {"n": 5, "g": "x"}, 3)]

    def program(json_form: bool):
        b = StreamsBuilder()
        s, t = b.stream("s"), b.stream("t")
        merged = s.merge(t)
        if json_form:
            positive = merged.filter({"cmp": [{"field": "n"}, ">", {"const": 0}]})
            positive.map_values({"concat": ["$key", {"const": ":"}, {"field": "n"}]}).to("texts")
            positive.map({"key": {"field": "g"}, "value": {"field": "n"}}).repartition().to("by_group")
        else:
            positive = merged.filter(lambda k, v: v["n"] > 0)
            positive.map_values(lambda k, v: f"{k}:{v['n']}").to("texts")
            positive.map(lambda k, v: (v["g"], v["n"])).repartition().to("by_group")
        return b.build()

    expected = [("texts", "k1", "k1:1", 1, 0), ("texts", "k3", "k3:5", 3, 2),
                ("by_group", "x", 1, 1, 0), ("by_group", "x", 5, 3, 2)]
    assert run(program(True), inputs) == expected
    assert run(program(False), inputs) == expected
    assert program(True).describe() == program(False).describe()


def test_table_operations_and_to_table():
    inputs = [("s", "k", 1, 1), ("s", "k", 3, 2), ("s", "j", 2, 3)]
    b = StreamsBuilder()
    table = b.stream("s").to_table()
    odd = table.filter(lambda k, v: v % 2 == 1).map_values(lambda v: v * 10)
    odd.to_stream().to("odd")
    # KTable#filter without old values: a row that does not pass is a delete (k's 2 never passed)
    assert run(b.build(), inputs) == [("odd", "k", 10, 1, 0), ("odd", "k", 30, 2, 1), ("odd", "j", None, 3, 2)]


def test_every_join_kind_between_any_two_nodes():
    inputs = [("a", "k", 1, 1), ("b", "k", 2, 2), ("ta", "k", 3, 3), ("tb", "k", 4, 4)]
    b = StreamsBuilder()
    a, bs = b.stream("a").map_values(lambda v: v * 10), b.stream("b")
    ta, tb = b.table("ta").map_values(lambda v: v * 10), b.table("tb")
    a.outer_join(bs, ValueJoiner.concat("&"), JoinWindows.of_time_difference_and_grace(5, 0)).to("stream_stream")
    bs.left_join(ta, lambda l, r: [l, r]).to("stream_table")
    ta.outer_join(tb, "pair").to_stream().to("table_table")
    tb.left_join(ta, lambda v: "k", lambda l, r: {"l": l, "r": r}).to_stream().to("foreign_key")
    out = run(b.build(), inputs)
    # the outer join's 10 finds 2 within 5 ms (no null result: ofTimeDifferenceAndGrace, KIP-633); b's 2
    # finds no row of ta yet; the foreign key "k" of tb's 4 finds ta's 30
    assert out == [
        ("stream_stream", "k", "10&2", 2, 1),
        ("stream_table", "k", [2, None], 2, 1),
        ("table_table", "k", [30, None], 3, 2), ("table_table", "k", [30, 4], 4, 3),
        ("foreign_key", "k", {"l": 4, "r": 30}, 4, 3),
    ]


def test_a_stream_table_join_with_a_grace_period_on_a_versioned_table():
    b = StreamsBuilder()
    table = b.table("t", Materialized.as_(Stores.persistent_versioned_key_value_store("t-store", 10)))
    b.stream("s").join(table, "pair", Joined.with_grace_period(5)).to("o")
    topology = b.build()
    assert topology.is_graph
    assert topology.spec.source[0] == {"table": "t", "id": "t", "materialized": {"versioned": True,
                                                                                 "history_retention_ms": 10}}
    out = run(topology, [("t", "k", "a", 1), ("s", "k", "x", 3), ("s", "j", "y", 9)])
    assert out == [("o", "k", ["x", "a"], 3, 2)]  # held for the grace period: emitted at stream time 9 > 3 + 5


def test_several_sinks_and_one_topic_written_twice():
    b = StreamsBuilder()
    s = b.stream("in")
    s.filter({"cmp": ["$value", "<", {"const": 10}]}).to("small")
    s.filter_not({"cmp": ["$value", "<", {"const": 10}]}).to("big")
    s.map_values({"const": "seen"}).to("small")
    topology = b.build()
    assert TopologyTestDriver(topology).output_topics == ("small", "big")
    assert run(topology, [("in", "k", 3, 1), ("in", "k", 30, 2)]) == [
        ("small", "k", 3, 1, 0), ("small", "k", "seen", 1, 0), ("small", "k", "seen", 2, 1), ("big", "k", 30, 2, 1)]


def test_record_caches_can_be_turned_on_for_graphs():
    b = StreamsBuilder()
    b.stream("in").flat_map_values(lambda v: [v, v]).group_by_key().count().to_stream().to("out")
    inputs = [("in", "k", "a", 1)]
    assert [r[2] for r in run(b.build(), inputs)] == [1, 2]
    assert [r[2] for r in run(b.build(), inputs, caching=True)] == [2]  # one update per key and record


# --- format 1 stays format 1 ---------------------------------------------------------------------

def test_a_format1_program_still_builds_format1s_spec():
    b = StreamsBuilder()
    b.stream("left").join(b.stream("right"), "pair", JoinWindows.of_time_difference_and_grace(5, 0)).to("output")
    topology = b.build()
    assert not topology.is_graph and topology.spec.operator == "stream_stream_join"
    # the same join of other topics is a graph
    b = StreamsBuilder()
    b.stream("orders").join(b.stream("payments"), "pair", JoinWindows.of_time_difference_and_grace(5, 0)).to("paid")
    assert b.build().is_graph


# --- describe and to_scenario ------------------------------------------------------------------------

def test_describe_prints_kafkas_topology_description():
    topology = _orders_per_customer(lambda k, v: v["customer"], lambda o, c: [o, c])
    graph = [{"table": "customers", "id": "customers"}, {"stream": "orders"}, {"select_key": {"field": "customer"}},
             {"join": {"other": "customers"}}, {"group_by_key": {}},
             {"windowed_by": {"time": {"size_ms": 10, "grace_ms": 0}}}, {"count": {}},
             {"suppress": {"until": "window_close"}}, {"to_stream": {}}, {"to": "customerOrderCounts"}]
    text = topology.describe()
    assert text == describe_graph(graph)
    assert text.startswith("Topologies:\n   Sub-topology: 0\n")
    assert "KTABLE-SUPPRESS" in text and "Sink: KSTREAM-SINK-" in text


def test_to_scenario_writes_a_graph_file_that_runs_like_the_driver(tmp_path):
    b = StreamsBuilder()
    customers = b.table("customers")
    b.stream("orders").select_key({"field": "customer"}).join(customers, ValueJoiner.concat("/")).to("enriched")
    topology = b.build()
    driver = TopologyTestDriver(topology)
    for topic, key, value, ts in ORDERS:
        driver.create_input_topic(topic).pipe_input(key, value, ts=ts)
    records = driver.create_output_topic("enriched").read_records_to_list()
    doc = topology.to_scenario(ORDERS, name="enriched", expected=records)
    assert doc["topology"] == {"graph": [
        {"table": "customers", "id": "customers"}, {"stream": "orders"}, {"select_key": {"field": "customer"}},
        {"join": {"other": "customers", "joiner": "concat", "joiner_separator": "/"}}, {"to": "enriched"}]}
    assert doc["expected"][0] == {"topic": "enriched", "key": "c1", "value": '{"customer":"c1","amount":5}/Ann',
                                  "ts": 1, "after_input": 1}
    path = tmp_path / "enriched.json"
    path.write_text(json.dumps(doc))
    scenario = scenario_from_dict(json.loads(path.read_text()))
    assert isinstance(scenario.topology, GraphTopology) and scenario.topology == topology.spec
    result = run_scenario(scenario)
    assert [(o.key, o.value, o.ts, o.input_index) for o in result.outputs] == \
        [(r.key, r.value, r.ts, r.input_index) for r in records]
    # several sink topics: expected tuples name their topic
    b = StreamsBuilder()
    s = b.stream("in")
    s.to("x")
    s.to("y")
    doc = b.build().to_scenario([("in", "k", 1, 0)], name="two", expected=[("x", "k", 1, 0), ("y", "k", 1, 0)],
                                caching=True)
    assert scenario_from_dict(doc).config.caching
    with pytest.raises(TypeError, match="topic, key, value, ts"):
        b.build().to_scenario([], name="two", expected=[("k", 1, 0)])


def test_a_graph_with_a_callable_cannot_be_saved():
    def region_of(user, account):
        return account["region"], account["balance"]

    b = StreamsBuilder()
    b.table("accounts").group_by(region_of).aggregate("sum").to_stream().to("totals")
    with pytest.raises(UnsavableTopologyError, match=r"graph node 1 \(group_by\).*region_of"):
        b.build().to_scenario(ACCOUNTS, name="x")
    b = StreamsBuilder()
    b.stream("s").group_by_key().aggregate(lambda: 0, lambda k, v, agg: agg + 1).to_stream().to("o")
    with pytest.raises(UnsavableTopologyError, match=r"graph node 2 \(aggregate\): its function"):
        b.build().to_scenario([], name="x")


# --- errors ----------------------------------------------------------------------------------------

def test_bad_expressions_are_refused_at_the_call():
    s = StreamsBuilder().stream("s")
    with pytest.raises(TopologyError, match="cmp"):
        s.filter({"cmp": ["$key", "~", {"const": 1}]})
    with pytest.raises(TopologyError):
        s.map_values("value")  # a bare string other than $key / $value
    with pytest.raises(TypeError, match="predicate can't be null"):
        s.filter(None)
    with pytest.raises(TypeError, match="key, value"):
        s.map({"key": "$key"})
    with pytest.raises(IllegalArgumentError, match="unknown aggregation 'median'"):
        s.group_by_key().aggregate("median")
    with pytest.raises(TypeError, match="subtractor can't be null"):
        StreamsBuilder().table("t").group_by({"key": "$value"}).aggregate(lambda: 0, lambda k, v, a: a)


def test_what_a_graph_cannot_hold_names_the_call():
    b = StreamsBuilder()
    counts = b.stream("s").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5)).count()
    counts.to_stream().group_by_key().count().to_stream().to("o")
    with pytest.raises(TopologyError) as info:
        b.build()
    assert info.value.field == "topology.graph[5].group_by_key"
    assert "windowed keys" in info.value.message and "group_by_key()" in info.value.message
    # a topic both read and written
    b = StreamsBuilder()
    b.stream("s").to("s")
    with pytest.raises(TopologyError, match="either a source or a sink"):
        b.build()
    # toTable of windowed keys, untilWindowCloses of plain keys: at the call, as Kafka
    with pytest.raises(TopologyError, match="needs plain keys"):
        counts.to_stream().to_table()
    with pytest.raises(TopologyError, match="only defined for windowed computations"):
        StreamsBuilder().table("t").filter(lambda k, v: True).suppress(Suppressed.until_window_closes(None))


def test_format1_only_options_are_refused_in_a_graph():
    b = StreamsBuilder()
    counts = b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5)) \
        .count(Materialized.with_retention(100))
    counts.to_stream().filter(lambda k, v: True).to("output")
    with pytest.raises(TopologyError, match=r"with_retention \(.*\) exists only in format 1"):
        b.build()
    b = StreamsBuilder()
    joined = b.table("left").join(b.table("right"), "pair").enable_sending_old_values()
    joined.to_stream().to("output")
    joined.to_stream().to("copy")
    with pytest.raises(TopologyError, match="enable_sending_old_values.*exactly once"):
        b.build()


def test_the_driver_checks_the_graph_under_its_release():
    b = StreamsBuilder()
    b.stream("s").repartition().to("o")
    topology = b.build()
    with pytest.raises(TopologyError, match="2.5") as info:
        TopologyTestDriver(topology, release="2.5")
    assert info.value.field == "topology.graph[1].repartition"
    TopologyTestDriver(topology, release="2.6")
    with pytest.raises(IllegalArgumentError, match="Unknown topic: o"):
        TopologyTestDriver(topology).create_input_topic("o")
    with pytest.raises(IllegalArgumentError, match="graphs"):
        b = StreamsBuilder()
        b.stream("left").join(b.stream("right"), "pair", JoinWindows.of(1)).to("output")
        TopologyTestDriver(b.build(), caching=True)


def test_the_readme_example_prints_what_it_says():
    from kssim_testing import readme_example

    printed, promised = readme_example("Topology graphs in Python")
    assert printed == promised


def test_a_python_subtractor_is_called_with_the_groups_key():
    from kssim.reference.api import StreamsBuilder, TopologyTestDriver

    seen = []

    def subtract(key, value, aggregate):
        seen.append(key)
        return aggregate - value["n"]

    builder = StreamsBuilder()
    (builder.table("accounts")
     .group_by(lambda k, v: (v["region"], v))
     .aggregate(lambda: 0, lambda k, v, agg: agg + v["n"], subtract)
     .to_stream().to("totals"))
    driver = TopologyTestDriver(builder.build())
    accounts = driver.create_input_topic("accounts")
    accounts.pipe_input("a1", {"region": "eu", "n": 5}, 1)
    accounts.pipe_input("a1", {"region": "us", "n": 7}, 2)
    assert seen == ["eu"]
