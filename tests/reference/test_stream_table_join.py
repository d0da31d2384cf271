"""KStream-KTable join: triggering, lookups, nulls per release, versioned as-of lookups, the
KIP-923 grace buffer, failures, explanations."""
import pytest

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.runtime.engine import run_records
from kssim.reference.model.errors import TopologyError
from kssim.reference.stores.grace_buffer import StreamTableGraceBuffer
from kssim.reference.model.keys import serialized_key
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import StreamTableJoinSpec, TableSpec


def spec(join="inner", versioned=False, retention=None, grace=None):
    table = TableSpec(versioned=True, history_retention_ms=retention) if versioned else TableSpec()
    return StreamTableJoinSpec(join=join, table=table, grace_ms=grace, joiner="concat", joiner_separator="-")


def run(topology, records, release="3.9", explain=False, store="rocksdb", partitions=None):
    """records: (topic, key, value, ts[, partition]) in processing order."""
    inputs = [InputRecord(r[0], r[1], r[2], r[3], r[4] if len(r) > 4 else 0, i) for i, r in enumerate(records)]
    config = RunConfig(store=store, partitions=partitions or {})
    return run_records(topology, profile_for(release), config, inputs, explain=explain)


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


S, T = "left", "right"  # stream, table


# --- triggering and lookups -----------------------------------------------------------------------

def test_only_stream_records_trigger_and_table_updates_are_not_drops():
    r = run(spec("left"), [(S, "k", "A", 1), (T, "k", "a", 2), (T, "k", "b", 3), (S, "k", "B", 4)])
    assert outs(r) == [("k", "A-null", 1, 0), ("k", "B-b", 4, 3)]
    assert drops(r) == []


def test_inner_needs_a_table_value_left_does_not():
    records = [(T, "k", "a", 1), (S, "k", "A", 2), (S, "j", "B", 3), (T, "k", None, 4), (S, "k", "C", 5)]
    assert outs(run(spec("inner"), records)) == [("k", "A-a", 2, 1)]
    assert outs(run(spec("left"), records)) == [("k", "A-a", 2, 1), ("j", "B-null", 3, 2), ("k", "C-null", 5, 4)]


def test_tombstone_for_an_absent_table_key_is_harmless():
    r = run(spec("left"), [(T, "k", None, 1), (S, "k", "A", 2)])
    assert outs(r) == [("k", "A-null", 2, 1)]
    assert drops(r) == []


@pytest.mark.parametrize("release", ["2.2", "2.3", "3.9"])
def test_output_timestamp_is_the_stream_records_in_every_release(release):
    r = run(spec("inner"), [(T, "k", "a", 100), (S, "k", "A", 5)], release=release)
    assert outs(r) == [("k", "A-a", 5, 1)]


def test_unversioned_table_applies_out_of_order_updates_by_arrival():
    r = run(spec("inner"), [(T, "k", "new", 10), (T, "k", "old", 1), (S, "k", "A", 20)])
    assert outs(r) == [("k", "A-old", 20, 2)]


@pytest.mark.parametrize("store", ["rocksdb", "in_memory"])
def test_store_type_does_not_matter_for_a_table(store):
    records = [(T, "k", "a", 5), (T, "k", "b", 1), (S, "k", "A", 3), (T, "k", None, 9), (S, "k", "B", 2)]
    assert outs(run(spec("left"), records, store=store)) == [("k", "A-b", 3, 2), ("k", "B-null", 2, 4)]


def test_tasks_are_independent():
    records = [(T, "k", "a", 1, 0), (S, "k", "A", 2, 1), (S, "k", "B", 3, 0)]
    r = run(spec("left"), records, partitions={"left": 2, "right": 2})
    assert [(o.partition, o.value) for o in r.outputs] == [(1, "A-null"), (0, "B-a")]


# --- nulls, per release -----------------------------------------------------------------------------

@pytest.mark.parametrize("join", ["inner", "left"])
def test_null_value_stream_record_is_dropped_since_kip77(join):
    r = run(spec(join), [(T, "k", "a", 1), (S, "k", None, 2)], release="0.10.2")
    assert outs(r) == []
    assert drops(r) == [(1, DropReason.NULL_VALUE)]


@pytest.mark.parametrize("release", ["0.10.0", "0.10.1"])
def test_null_value_stream_record_is_joined_before_kip77(release):
    r = run(spec("left"), [(T, "k", "a", 1), (S, "k", None, 2), (S, "j", None, 3)], release=release)
    assert outs(r) == [("k", "null-a", 2, 1), ("j", "null-null", 3, 2)]
    assert drops(r) == []


@pytest.mark.parametrize("release", ["0.10.0", "0.10.1"])
def test_inner_join_does_not_exist_before_kip77(release):
    with pytest.raises(TopologyError):
        run(spec("inner"), [(S, "k", "A", 1)], release=release)


@pytest.mark.parametrize("release, join, emitted", [
    ("0.10.0", "left", False), ("3.6", "left", False), ("3.6", "inner", False),
    ("3.7", "left", True), ("3.7", "inner", False), ("3.9", "left", True),
])
def test_null_key_stream_record_emitted_with_null_key_only_by_3_7_left_join(release, join, emitted):
    r = run(spec(join), [(T, "k", "a", 1), (S, None, "A", 2)], release=release)
    if emitted:
        assert outs(r) == [(None, "A-null", 2, 1)]
        assert drops(r) == []
    else:
        assert outs(r) == []
        assert drops(r) == [(1, DropReason.NULL_KEY)]


def test_null_key_and_null_value_is_dropped_even_by_3_7_left_join():
    r = run(spec("left"), [(S, None, None, 2)], release="3.9")
    assert outs(r) == [] and drops(r) == [(0, DropReason.NULL_KEY)]


@pytest.mark.parametrize("release, fails", [("0.10.0", True), ("0.10.1", True), ("0.10.2", False), ("3.9", False)])
def test_null_key_table_record(release, fails):
    r = run(spec("left"), [(T, None, "a", 1), (S, "k", "A", 2)], release=release)
    if fails:
        assert r.failure is not None and r.failure.input_index == 0
        assert r.failure.code is FailureCode.TABLE_SOURCE_NULL_KEY
        assert outs(r) == []
    else:
        assert r.failure is None
        assert drops(r) == [(0, DropReason.NULL_KEY)]
        assert outs(r) == [("k", "A-null", 2, 1)]


# --- versioned tables (3.5+) -------------------------------------------------------------------------

def test_versioned_lookup_is_as_of_the_stream_records_ts():
    records = [(T, "k", "a", 10), (T, "k", "b", 20), (S, "k", "A", 9), (S, "k", "B", 10), (S, "k", "C", 19),
               (S, "k", "D", 20), (S, "k", "E", 100)]
    assert [o[1] for o in outs(run(spec("left", True, 100), records))] == \
        ["A-null", "B-a", "C-a", "D-b", "E-b"]
    # the same records against an unversioned table: always the current value
    assert [o[1] for o in outs(run(spec("left"), records))] == ["A-b", "B-b", "C-b", "D-b", "E-b"]


def test_versioned_table_tombstone_is_a_version():
    records = [(T, "k", "a", 10), (T, "k", None, 20), (S, "k", "A", 15), (S, "k", "B", 20)]
    assert outs(run(spec("inner", True, 100), records)) == [("k", "A-a", 15, 2)]


def test_versioned_lookup_beyond_history_retention_sees_only_the_latest_value():
    records = [(T, "k", "a", 0), (T, "k", "b", 30), (S, "k", "A", 20), (S, "k", "B", 19),
               (T, "j", "x", 15), (S, "j", "C", 19)]
    # observed 30, retention 10: as of 20 the history is there, as of 19 it is not
    assert outs(run(spec("left", True, 10), records)) == \
        [("k", "A-a", 20, 2), ("k", "B-null", 19, 3), ("j", "C-null", 19, 5)]


def test_versioned_table_drops_expired_puts_at_the_retention_edge():
    records = [(T, "k", "a", 20), (T, "k", "x", 9), (T, "k", "y", 10), (S, "k", "A", 9), (S, "k", "B", 10)]
    r = run(spec("left", True, 10), records)
    assert drops(r) == [(1, DropReason.EXPIRED_VERSIONED_PUT)]
    assert outs(r) == [("k", "A-null", 9, 3), ("k", "B-y", 10, 4)]


def test_versioned_table_stream_lookup_below_the_table_clock_is_not_a_drop():
    r = run(spec("inner", True, 0), [(T, "k", "a", 5), (S, "k", "A", 1)])
    assert outs(r) == [] and drops(r) == []


# --- the grace buffer (3.6+, KIP-923) ----------------------------------------------------------------

def test_grace_delays_the_join_until_buffer_time_passes_ts_plus_grace():
    records = [(S, "k", "A", 10), (T, "k", "a", 8), (S, "k", "B", 14), (T, "k", "b", 11), (S, "k", "C", 15)]
    r = run(spec("inner", True, 100, grace=5), records)
    # A@10 waits; a@8 arrives in time; C@15 releases A (10 <= 15 - 5), which joins as of 10 -> a
    assert outs(r) == [("k", "A-a", 10, 4)]


def test_grace_buffer_late_boundary_is_strict():
    buf = StreamTableGraceBuffer(5)
    assert buf.put("k", "A", 20)
    assert buf.put("k", "B", 15)       # 20 - 5 > 15 is false: buffered
    assert not buf.put("k", "C", 14)   # 20 - 5 > 14: late
    assert buf.evict() == [("k", "B", 15, -1)]
    assert len(buf) == 1


def test_late_stream_record_is_joined_at_once_and_does_not_advance_the_buffer():
    records = [(T, "k", "a", 1), (S, "k", "A", 20), (S, "k", "L", 14), (S, "k", "B", 16), (S, "k", "C", 21)]
    r = run(spec("left", True, 100, grace=5), records)
    # L@14 is late (20 - 5 > 14): joined at once; B@16 is not late; C@21 releases 16 <= 16 only
    assert outs(r) == [("k", "L-a", 14, 2), ("k", "B-a", 16, 4)]


def test_grace_zero_joins_at_once_but_in_buffer_order():
    records = [(T, "k", "a", 1), (S, "k", "A", 5), (S, "k", "B", 5), (S, "k", "C", 3)]
    r = run(spec("inner", True, 100, grace=0), records)
    assert outs(r) == [("k", "A-a", 5, 1), ("k", "B-a", 5, 2), ("k", "C-a", 3, 3)]


def test_buffered_records_join_the_table_as_it_is_at_eviction():
    records = [(T, "k", "a", 1), (S, "k", "A", 10), (T, "k", "b", 9), (T, "k", "c", 11), (S, "k", "B", 20)]
    r = run(spec("left", True, 100, grace=5), records)
    assert outs(r) == [("k", "A-b", 10, 4)]  # b@9 arrived after A but is valid at 10; c@11 is not


def test_grace_buffer_releases_equal_timestamps_by_serialized_key_then_arrival():
    records = [(S, "b", "B1", 5), (S, "k10", "K10", 5), (S, "a", "A1", 5), (S, "k9", "K9", 5), (S, "a", "A2", 5),
               (S, "z", "Z", 10)]
    r = run(spec("left", True, 100, grace=3), records)
    assert [o[1] for o in outs(r)] == ["A1-null", "A2-null", "B1-null", "K10-null", "K9-null"]


def test_integer_keys_order_as_their_big_endian_bytes():
    assert serialized_key(1) == b"\x00" * 7 + b"\x01" and serialized_key(-1) == b"\xff" * 8
    assert serialized_key("é") == "é".encode("utf-8")
    buf = StreamTableGraceBuffer(0)
    for k in (-1, 256, 1):
        buf.put(k, "v", 7)
    assert [e[0] for e in buf.evict()] == [1, 256, -1]


def test_grace_buffer_is_not_flushed_at_end_of_input():
    r = run(spec("left", True, 100, grace=5), [(S, "k", "A", 10), (S, "k", "B", 14)])
    assert outs(r) == [] and drops(r) == []


def test_grace_buffer_clock_ignores_dropped_records():
    records = [(S, "k", "A", 10), (S, "k", None, 100), (S, None, "X", 100), (S, "k", "B", 15)]
    r = run(spec("left", True, 1000, grace=5), records, release="3.6")
    assert drops(r) == [(1, DropReason.NULL_VALUE), (2, DropReason.NULL_KEY)]
    # B@15 is not late (buffer time is still 10) and releases A (10 <= 15 - 5); B waits
    assert outs(r) == [("k", "A-null", 10, 3)]


@pytest.mark.parametrize("release, join, fails", [
    ("3.6", "left", False), ("3.7", "left", True), ("3.9", "left", True), ("3.9", "inner", False),
])
def test_null_key_stream_record_with_grace(release, join, fails):
    r = run(spec(join, True, 100, grace=0), [(S, "k", "A", 1), (S, None, "B", 2), (S, "k", "C", 3)], release=release)
    if fails:
        assert r.failure is not None and r.failure.input_index == 1
        assert r.failure.code is FailureCode.GRACE_BUFFER_NULL_KEY
        assert "key cannot be null" in r.failure.message == FailureCode.GRACE_BUFFER_NULL_KEY.message
        assert [o[3] for o in outs(r)] == [0]
    else:
        assert r.failure is None
        assert drops(r) == [(1, DropReason.NULL_KEY)]


# --- emit-on-change in the table source (2.6.0, 2.6.1, 2.7.0) ----------------------------------------

@pytest.mark.parametrize("release, skipped", [("2.5", False), ("2.6", True), ("2.6.2", False), ("2.7", True),
                                              ("2.7.1", False), ("2.8", False)])
def test_idempotent_table_update_is_skipped_only_with_emit_on_change(release, skipped):
    r = run(spec("left"), [(T, "k", "a", 1), (T, "k", "a", 2), (S, "k", "A", 3)], release=release)
    assert outs(r) == [("k", "A-a", 3, 2)]
    assert drops(r) == ([(1, DropReason.IDEMPOTENT_UPDATE)] if skipped else [])


# --- explanations -----------------------------------------------------------------------------------

def test_outputs_and_drops_explain_themselves_only_when_asked():
    records = [(T, "k", "a", 1), (S, "k", "A", 2), (S, "k", None, 3)]
    quiet = run(spec("inner"), records)
    assert quiet.outputs[0].why is None and quiet.drops[0].why is None
    loud = run(spec("inner"), records, explain=True)
    why = loud.outputs[0].why
    assert why.rule == "inner_match"
    assert [(s.side, s.key, s.value, s.ts, s.input_index) for s in why.joined] == [("right", "k", "a", 1, 0)]
    assert loud.drops[0].why.rule == "null_value"


def test_buffered_output_explains_the_buffer_numbers():
    r = run(spec("left", True, 100, grace=5), [(S, "k", "A", 10), (S, "k", "B", 15)], explain=True)
    text = r.outputs[0].why.text
    assert "10 <= buffer time 15 - grace 5 = 10" in text
    assert r.outputs[0].why.rule == "buffered_left_no_match"


def test_expired_put_explains_the_horizon():
    r = run(spec("left", True, 10), [(T, "k", "a", 20), (T, "k", "x", 9)], explain=True)
    assert "9 < observed 20 - history retention 10" in r.drops[0].why.text
