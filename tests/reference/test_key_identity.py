"""Every join of the reference keys its stores by serialized bytes, as Kafka does.

Python calls ``1 == True == 1.0`` and ``{"a": 1, "b": 2} == {"b": 2, "a": 1}``; Kafka compares
the key serde's bytes, so these are different keys (``reference.model.keys``). List and object
keys, unhashable in Python, work as any other key. Outputs keep the input record's own key.
"""
import pytest

from kssim.reference.model.keys import key_identity
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import (JoinWindowSpec, StreamStreamJoinSpec, StreamTableJoinSpec, TableSpec,
                                      TableTableJoinSpec)
from kssim.reference.runtime.engine import run_records
from kssim.reference.stores.outer_join_store import LEFT_SIDE, RIGHT_SIDE, OuterJoinStore

L, R = "left", "right"
VERSIONED = TableSpec(versioned=True, history_retention_ms=100)


def run(topology, records, release="3.9", explain=False):
    """records: (topic, key, value, ts) in processing order; outputs as (key, value, ts, input)."""
    inputs = [InputRecord(r[0], r[1], r[2], r[3], 0, i) for i, r in enumerate(records)]
    result = run_records(topology, profile_for(release), RunConfig(), inputs, explain=explain)
    assert result.failure is None
    if explain:
        assert all(o.why is not None and o.why.describe() for o in result.outputs)
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def table_table(join="inner", left=TableSpec(), right=TableSpec()):
    return TableTableJoinSpec(join=join, left_table=left, right_table=right, joiner="concat", joiner_separator="-")


def stream_table(join="inner", table=TableSpec(), grace=None):
    return StreamTableJoinSpec(join=join, table=table, grace_ms=grace, joiner="concat", joiner_separator="-")


def stream_stream(join="inner", grace=0):
    return StreamStreamJoinSpec(join=join, window=JoinWindowSpec(5, 5, grace), window_api="time_difference",
                                joiner="concat", joiner_separator="-")


OBJ = {"a": 1, "b": 2}
OBJ_REORDERED = {"b": 2, "a": 1}  # == OBJ in Python, other bytes for a JSON serde


# --- table-table ------------------------------------------------------------------------------------

@pytest.mark.parametrize("left,right", [(None, None), (None, VERSIONED), (VERSIONED, VERSIONED)])
def test_table_table_keys_equal_in_python_but_not_in_bytes_never_join(left, right):
    topology = table_table(left=left or TableSpec(), right=right or TableSpec())
    assert run(topology, [(R, True, "t", 1), (R, 1.0, "f", 2), (L, 1, "A", 3)]) == []
    assert run(topology, [(L, 1, "A", 1), (R, True, "t", 2), (R, 1.0, "f", 3), (R, "1", "s", 4)]) == []


def test_table_table_outer_join_keeps_each_key_and_its_own_value():
    records = [(L, 1, "A", 1), (R, True, "t", 2), (R, 1.0, "f", 3), (L, True, "B", 4)]
    assert run(table_table("outer"), records, explain=True) == [
        (1, "A-null", 1, 0), (True, "null-t", 2, 1), (1.0, "null-f", 3, 2), (True, "B-t", 4, 3)]


@pytest.mark.parametrize("right", [TableSpec(), VERSIONED])
def test_table_table_list_and_object_keys(right):
    records = [(R, ["k", 1], "x", 1), (R, OBJ, "o", 2), (L, ["k", 1], "A", 3), (L, OBJ_REORDERED, "B", 4),
               (L, {"a": 1, "b": 2}, "C", 5), (R, ["k", 1], None, 6)]
    assert run(table_table(right=right), records, explain=True) == [
        (["k", 1], "A-x", 3, 2), ({"a": 1, "b": 2}, "C-o", 5, 4), (["k", 1], None, 6, 5)]


def test_table_table_a_lone_surrogate_is_the_key_java_writes():
    # Java's UTF-8 encoder writes a lone surrogate as '?': the two keys are the same bytes
    assert run(table_table(), [(R, "k\ud800", "x", 1), (L, "k?", "A", 2)]) == [("k?", "A-x", 2, 1)]


# --- stream-table -----------------------------------------------------------------------------------

@pytest.mark.parametrize("table", [TableSpec(), VERSIONED])
def test_stream_table_lookups_compare_serialized_keys(table):
    records = [(R, True, "t", 1), (R, 1.0, "f", 1), (L, 1, "A", 2), (L, True, "B", 3), (L, "1", "C", 4)]
    assert run(stream_table(table=table), records) == [(True, "B-t", 3, 3)]
    assert run(stream_table("left", table=table), records, explain=True) == [
        (1, "A-null", 2, 2), (True, "B-t", 3, 3), ("1", "C-null", 4, 4)]


@pytest.mark.parametrize("table", [TableSpec(), VERSIONED])
def test_stream_table_list_and_object_keys(table):
    records = [(R, ["k", 1], "x", 1), (R, OBJ, "o", 1), (L, ["k", 1], "A", 2), (L, OBJ_REORDERED, "B", 3),
               (L, {"a": 1, "b": 2}, "C", 4)]
    assert run(stream_table("left", table=table), records, explain=True) == [
        (["k", 1], "A-x", 2, 2), (OBJ_REORDERED, "B-null", 3, 3), ({"a": 1, "b": 2}, "C-o", 4, 4)]


def test_stream_table_grace_buffer_with_list_and_object_keys():
    # buffered records are released by input 5 in (ts, key bytes) order, then looked up by identity
    records = [(R, ["k"], "x", 1), (R, OBJ, "o", 1), (L, OBJ, "B", 2), (L, ["k"], "A", 2),
               (L, OBJ_REORDERED, "C", 2), (L, "z", "Z", 20)]
    assert run(stream_table("left", table=VERSIONED, grace=5), records, explain=True) == [
        (["k"], "A-x", 2, 5), ({"a": 1, "b": 2}, "B-o", 2, 5), (OBJ_REORDERED, "C-null", 2, 5)]


# --- stream-stream ----------------------------------------------------------------------------------

@pytest.mark.parametrize("join", ["inner", "left", "outer"])
def test_stream_stream_keys_equal_in_python_but_not_in_bytes_never_join(join):
    records = [(L, 1, "A", 1), (R, True, "t", 2), (R, 1.0, "f", 3), (R, "1", "s", 4)]
    assert run(stream_stream(join), records) == []  # no match; left/outer hold the records (windows open)
    flushed = run(stream_stream(join), records + [(L, "x", "X", 100)], explain=True)
    assert flushed == {"inner": [], "left": [(1, "A-null", 1, 4)],
                       "outer": [(1, "A-null", 1, 4), (True, "null-t", 2, 4), (1.0, "null-f", 3, 4),
                                 ("1", "null-s", 4, 4)]}[join]


def test_stream_stream_list_and_object_keys():
    records = [(L, ["k", 1], "A", 1), (L, OBJ, "B", 2), (R, ["k", 1], "a", 3), (R, OBJ_REORDERED, "b", 4),
               (R, {"a": 1, "b": 2}, "c", 5)]
    assert run(stream_stream(), records, explain=True) == [(["k", 1], "A-a", 3, 2), ({"a": 1, "b": 2}, "B-c", 5, 4)]


def test_stream_stream_outer_store_keeps_keys_of_equal_bytes_apart():
    # "\x01" and true are both the byte 0x01: a match of true must not delete the unjoined "\x01"
    records = [(L, "\x01", "A", 1), (L, True, "B", 1), (R, True, "b", 2), (L, "x", "X", 100)]
    assert run(stream_stream("outer"), records, explain=True) == [(True, "B-b", 2, 2), ("\x01", "A-null", 1, 3)]


def test_outer_store_orders_by_bytes_and_separates_types_of_equal_bytes():
    store = OuterJoinStore()
    for key in [True, "\x01", "\x00", 1, 1.0]:
        store.put(1, LEFT_SIDE, key, key_identity(key), key, -1)
    store.put(1, RIGHT_SIDE, "\x01", key_identity("\x01"), "r", -1)
    # bytes 00 < 00..01 (the long 1) < 01 (true, then "\x01": equal bytes, kept apart) < 3f f0.. (1.0)
    assert [k for _, side, k, _, _ in store.flattened() if side == LEFT_SIDE] == ["\x00", 1, True, "\x01", 1.0]
    assert len(store) == 6
    store.delete_matched(LEFT_SIDE, key_identity(True), [(1,)])
    assert [k for _, side, k, _, _ in store.flattened() if side == LEFT_SIDE] == ["\x00", 1, "\x01", 1.0]
