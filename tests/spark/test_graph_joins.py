"""Join nodes of topology graphs on Spark (``spark_backend.graph.join_stages``,
``foreign_key_stages``): stream x stream, stream x table, table x table, foreign key, rule by rule
on small hand-made graphs.

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

# A stream joined with a suppressed table (untilTimeLimit 10): the suppress node's value getter
# (KTableSuppressProcessorSupplier#view) answers a buffered key with the buffer's prior value, the
# old value of the update that first buffered it (null at input 1: a was new; r2 at input 4, not
# the parent's r3), any other key with the parent's row (r4 at input 7, after a's eviction at 40).
# Spark reads the table as the last change the suppress forwarded, which is the same value here.
SUPPRESSED = {"suppress": {"until": "time_limit", "time_limit_ms": 10}, "id": "sup"}
ST_SUPPRESSED = case("st_suppressed_table", [
    {"table": "t1"}, SUPPRESSED, {"stream": "s1"}, {"left_join": {"other": "sup", "joiner": "concat"}},
    {"to": "out"}],
    [("t1", "a", "r1", 1), ("s1", "a", "v1", 2), ("t1", "a", "r2", 20), ("t1", "a", "r3", 22),
     ("s1", "a", "v2", 23), ("s1", "b", "v3", 24), ("t1", "a", "r4", 40), ("s1", "a", "v4", 41)])

# --- foreign-key joins (spark_backend.graph.foreign_key_stages) ------------------------------------


def fk_join(join, tail=None, left=None, **arg):
    """Table t1 (left) joined on foreign key ``fk`` with table t2 (right), then ``tail``."""
    arg = dict({"other": "r", "foreign_key": {"field": "fk"}, "joiner": "pair"}, **arg)
    return [left or {"table": "t1", "id": "l"}, {"table": "t2", "id": "r"}, {"from": "l", join: arg}] + (
        tail or [{"to_stream": {}}, {"to": "out"}])


# A new left row subscribes to x (inner: PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE), its response joins X at
# max(left ts, right ts); the move to FK y sends DELETE_KEY_NO_PROPAGATE to x, then
# PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE to y: one result, with Y. x's later update finds no subscriber.
FK_MOVE = case("fk_move", fk_join("join"),
               [("t2", "x", "X", 1), ("t2", "y", "Y", 2), ("t1", "k", {"fk": "x"}, 3), ("t1", "k", {"fk": "y"}, 4),
                ("t2", "x", "X2", 5)])

# A right tombstone answers every subscriber (prefix scan) at the right record's ts: the inner join
# retracts its result, the left join joins null. The delete of a key nobody subscribes to: nothing.
RIGHT_DELETE = [("t1", "k", {"fk": "x"}, 1), ("t2", "x", "X", 2), ("t2", "x", None, 3), ("t2", "z", None, 4)]
FK_DELETE_INNER = case("fk_right_delete_inner", fk_join("join"), RIGHT_DELETE)
FK_DELETE_LEFT = case("fk_right_delete_left", fk_join("left_join"), RIGHT_DELETE)

# 3.9 left join (KIP-962): a null FK subscribes with a null key, answered with null at once; the move
# from x to a null FK sends DELETE_KEY_AND_PROPAGATE to x first (3.7-4.0), so two results.
FK_NULL_LEFT = case("fk_null_fk_left", fk_join("left_join"),
                    [("t2", "x", "X", 1), ("t1", "k", {"n": 1}, 2), ("t1", "k", {"fk": "x"}, 3),
                     ("t1", "k", {"n": 2}, 4)])

# 3.9 inner join: a null new FK drops the update and leaves x's subscription (KAFKA-16434), whose
# next response carries the old value's hash: stale. Back to x from a null old FK: dropped too.
FK_NULL_INNER = case("fk_null_fk_inner_stale", fk_join("join"),
                     [("t1", "k", {"fk": "x"}, 1), ("t1", "k", {"n": 2}, 2), ("t2", "x", "X", 3),
                      ("t1", "k", {"fk": "x"}, 4)])

# A right update's responses follow the subscription store's key order: string PKs by their bytes,
# then the others by their JSON bytes ("10" before "2").
FK_SCAN = case("fk_scan_order", fk_join("join"),
               [("t1", "b", {"fk": "x"}, 1), ("t1", 10, {"fk": "x"}, 2), ("t1", "a", {"fk": "x"}, 3),
                ("t1", 2, {"fk": "x"}, 4), ("t2", "x", "X", 5)])

# One input changes the right table twice (flat_map_values -> to_table): each change answers the
# subscribers in their order, the second after the first.
FK_RIGHT_TWICE = case("fk_right_twice", [
    {"table": "t1", "id": "l"}, {"stream": "s1"}, {"flat_map_values": {"field": "items"}}, {"to_table": {}, "id": "r"},
    {"from": "l", "left_join": {"other": "r", "foreign_key": {"field": "fk"}, "joiner": "concat"}},
    {"to_stream": {}}, {"to": "out"}],
    [("t1", "k", {"fk": "x"}, 1), ("t1", "j", {"fk": "x"}, 2), ("s1", "x", {"items": ["X1", "X2"]}, 3),
     ("s1", "x", {"items": [None]}, 4)])

# KIP-914: the join drops an out-of-order update of its versioned left table; no subscription moves.
FK_VERSIONED = case("fk_versioned_left", fk_join("left_join", left=dict(VERSIONED_T1, id="l")),
                    [("t2", "x", "X", 1), ("t1", "k", {"fk": "x"}, 20), ("t1", "k", {"fk": "y"}, 10),
                     ("t2", "x", "X2", 30)])

# 2.7.0, KIP-557: the filter after the join asks for old values, so the result table is materialized
# and skips a result whose serialized value equals the stored one: 1 and "1" both join to "1+X".
FK_EMIT_ON_CHANGE = case("fk_result_emit_on_change", fk_join(
    "join", [{"filter": {"not": {"is_null": "$value"}}}, {"to_stream": {}}, {"to": "out"}],
    foreign_key={"const": "x"}, joiner="concat"),
    [("t2", "x", "X", 1), ("t1", "k", 1, 2), ("t1", "k", "1", 3), ("t1", "k", None, 4)], semantics="2.7")


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


def test_stream_table_join_reads_a_suppressed_table_through_its_buffers_prior_value(results):
    assert records(results[ST_SUPPRESSED]) == [("a", "v1+null", 2, 1), ("a", "v2+r2", 23, 4), ("b", "v3+null", 24, 5),
                                               ("a", "v4+r4", 41, 7)]


@pytest.mark.parametrize("nodes", [
    # table x table: a buffered key is read at timestamp -1 (the join's result takes the record's
    # ts), Spark would take the last eviction's: refused, on either side and through a filter
    [{"table": "t1", "id": "l"}, {"table": "t2"}, SUPPRESSED, {"from": "l", "join": {"other": "sup"}},
     {"to_stream": {}}, {"to": "out"}],
    [{"table": "t2"}, SUPPRESSED, {"table": "t1", "id": "r"}, {"from": "sup", "left_join": {"other": "r"}},
     {"to_stream": {}}, {"to": "out"}],
    [{"table": "t1", "id": "l"}, {"table": "t2"}, SUPPRESSED, {"filter": {"cmp": ["$value", "!=", {"const": 1}]}, "id": "f"},
     {"from": "l", "outer_join": {"other": "f"}}, {"to_stream": {}}, {"to": "out"}],
    # stream x table over a versioned table: an out-of-order update leaves the buffer as a latest
    # change, while the getter reads the parent's latest row
    [{"table": "t1", "materialized": {"versioned": True, "history_retention_ms": 100}}, SUPPRESSED,
     {"stream": "s1"}, {"left_join": {"other": "sup"}}, {"to": "out"}],
])
def test_a_join_reading_a_suppressed_table_is_refused_by_name(nodes):
    from kssim.reference.model.graph.plan import compile_graph
    from kssim.spark_backend.graph.runner import unsupported

    s = scenario({"graph": nodes}, [])
    refusal = unsupported(compile_graph(s.topology, s.profile, s.config.store), s.config)
    join = next(i for i, n in enumerate(nodes) if any("join" in k for k in n))
    assert f"graph node topology.graph[{join}] (" in str(refusal) and "suppressed table" in str(refusal)


def test_fk_join_follows_a_change_of_the_foreign_key(results):
    assert records(results[FK_MOVE]) == [("k", [{"fk": "x"}, "X"], 3, 2), ("k", [{"fk": "y"}, "Y"], 4, 3)]


def test_fk_join_right_tombstone_inner_and_left(results):
    assert records(results[FK_DELETE_INNER]) == [("k", [{"fk": "x"}, "X"], 2, 1), ("k", None, 3, 2)]
    assert records(results[FK_DELETE_LEFT]) == [("k", [{"fk": "x"}, None], 1, 0), ("k", [{"fk": "x"}, "X"], 2, 1),
                                                ("k", [{"fk": "x"}, None], 3, 2)]


def test_fk_left_join_with_a_null_foreign_key(results):
    r = results[FK_NULL_LEFT]
    assert records(r) == [("k", [{"n": 1}, None], 2, 1), ("k", [{"fk": "x"}, "X"], 3, 2),
                          ("k", [{"n": 2}, None], 4, 3), ("k", [{"n": 2}, None], 4, 3)]
    assert drops(r) == []


def test_fk_inner_join_null_foreign_key_leaves_a_stale_subscription(results):
    r = results[FK_NULL_INNER]
    assert records(r) == []
    assert drops(r) == [(1, "null_foreign_key", "graph[2] join"), (2, "stale_fk_response", "graph[2] join"),
                        (3, "null_foreign_key", "graph[2] join")]


def test_fk_join_right_update_answers_subscribers_in_store_order(results):
    assert [(o.key, o.input_index) for o in results[FK_SCAN].outputs] == [("a", 4), ("b", 4), (10, 4), (2, 4)]


def test_fk_join_one_input_changing_the_right_table_twice(results):
    assert records(results[FK_RIGHT_TWICE]) == [
        ("k", '{"fk":"x"}+null', 1, 0), ("j", '{"fk":"x"}+null', 2, 1),
        ("j", '{"fk":"x"}+X1', 3, 2), ("k", '{"fk":"x"}+X1', 3, 2), ("j", '{"fk":"x"}+X2', 3, 2),
        ("k", '{"fk":"x"}+X2', 3, 2), ("j", '{"fk":"x"}+null', 4, 3), ("k", '{"fk":"x"}+null', 4, 3)]


def test_fk_join_drops_out_of_order_versioned_left_updates(results):
    r = results[FK_VERSIONED]
    assert records(r) == [("k", [{"fk": "x"}, "X"], 20, 1), ("k", [{"fk": "x"}, "X2"], 30, 3)]
    assert drops(r) == [(2, "out_of_order_versioned_update", "graph[2] left_join")]


def test_fk_join_result_table_skips_an_equal_joined_value(results):
    r = results[FK_EMIT_ON_CHANGE]
    assert records(r) == [("k", "1+X", 2, 1), ("k", None, 4, 3)]
    assert drops(r) == [(2, "idempotent_update", "graph[2] join")]


FK = {"foreign_key": {"field": "fk"}}


@pytest.mark.parametrize("nodes, why", [
    # the same table on both sides: Kafka's first take updates both before any subscription is taken
    ([{"table": "t1", "id": "l"}, {"from": "l", "map_values": {"field": "r"}, "id": "r"},
      {"from": "l", "join": dict(other="r", **FK)}, {"to_stream": {}}, {"to": "out"}], "reaches both of its sides"),
    # two left changes of one input: Kafka's responses read the left table after both
    ([{"stream": "s1"}, {"flat_map_values": {"field": "items"}}, {"to_table": {}, "id": "l"},
      {"table": "t2", "id": "r"}, {"from": "l", "join": dict(other="r", **FK)}, {"to_stream": {}}, {"to": "out"}],
     "left table more than once"),
    # a repartition topic and the FK's topics: the heap of queues orders them by timestamp
    (fk_join("join", [{"group_by": {"key": {"const": "all"}, "value": "$value"}}, {"count": {}}, {"to_stream": {}},
                      {"to": "out"}]), "another internal topic"),
    (fk_join("join", [{"suppress": {"until": "time_limit", "time_limit_ms": 10}}, {"to_stream": {}}, {"to": "out"}]),
     "a suppress reads its results"),
])
def test_fk_join_shapes_not_run_exactly_are_refused_by_name(nodes, why):
    from kssim.reference.model.graph.plan import compile_graph
    from kssim.spark_backend.graph.runner import unsupported

    s = scenario({"graph": nodes}, [])
    refusal = str(unsupported(compile_graph(s.topology, s.profile, s.config.store), s.config))
    join = next(i for i, n in enumerate(nodes) if "foreign_key" in str(n))
    assert f"graph node topology.graph[{join}] (join: foreign-key join)" in refusal and why in refusal, refusal
