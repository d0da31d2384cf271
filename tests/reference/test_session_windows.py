"""Session-windowed aggregations: merging (order, tombstones, timestamps), grace and the late drop,
the session stores' visibility rules, emit on window close and the sessions it loses, release
rules, tasks, explanations, and what check_topology rejects.

Expectations are derived from Kafka's code (``KStreamSessionWindowAggregate``, the session stores)
at the release tags; the digest examples (``kafka-semantics-fk-windows.md`` B.2, B.4) were verified
against real Kafka."""
import inspect

import pytest

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import TopologyError
from kssim.reference.model.profiles import RULES_BY_NAME, profile_for, session_window_settings
from kssim.reference.model.records import NO_OLD_VALUE, InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import SessionAggregateSpec, check_topology
from kssim.reference.runtime.engine import run_records
from kssim.reference.stores.session_store import InMemorySessionStore, RocksDBSessionStore, make_session_store

from kssim_testing import scenario

DAY = 24 * 60 * 60 * 1000


def spec(gap, grace=0, aggregation="count", emit="on_update", send_old_values=False, retention_ms=None):
    return SessionAggregateSpec(gap_ms=gap, grace_ms=grace, aggregation=aggregation, emit=emit,
                                send_old_values=send_old_values, retention_ms=retention_ms)


def run(topology, records, release="3.9", explain=False, store="rocksdb", partitions=None):
    """records: (key, value, ts[, partition]) in processing order."""
    inputs = [InputRecord("input", r[0], r[1], r[2], r[3] if len(r) > 3 else 0, i) for i, r in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(store=store, partitions=partitions or {}), inputs,
                       explain=explain)


def outs(result):
    """(key, start, end, value, ts, input) of every output."""
    return [(o.key["key"], o.key["start"], o.key["end"], o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


# --- merging ----------------------------------------------------------------------------------

def test_records_within_the_gap_merge_and_the_old_session_is_tombstoned_at_its_end():
    r = run(spec(10), [("k", "A", 0), ("k", "B", 5), ("k", "C", 30)])
    assert outs(r) == [
        ("k", 0, 0, 1, 0, 0),
        ("k", 0, 0, None, 0, 1), ("k", 0, 5, 2, 5, 1),  # [0,0] merged away, then [0,5]
        ("k", 30, 30, 1, 30, 2),  # 30 - 10 > 5: a new session
    ]


def test_gap_bounds_are_inclusive_on_both_sides():
    # a session ending at ts - gap, and one starting at ts + gap, both merge
    r = run(spec(10, grace=100), [("k", "A", 0), ("k", "B", 20), ("k", "C", 10)])
    assert outs(r)[-1] == ("k", 0, 20, 3, 20, 2)
    r = run(spec(10, grace=100), [("k", "A", 0), ("k", "B", 21), ("k", "C", 10)])
    assert outs(r)[-1] == ("k", 0, 10, 2, 10, 2)  # 21 > 10 + 10: not merged


def test_a_bridging_record_merges_sessions_on_both_sides_in_store_order():
    # string_adder: init "0", add agg+"+"+v, merge a+"+"+b; the candidates fold left to right (ascending end)
    r = run(spec(10, grace=100, aggregation="string_adder"), [("k", "a", 0), ("k", "c", 20), ("k", "b", 10)])
    assert outs(r)[2:] == [
        ("k", 0, 0, None, 0, 2), ("k", 20, 20, None, 20, 2),
        ("k", 0, 20, "0+0+a+0+c+b", 20, 2),
    ]


def test_reduce_folds_the_sessions_then_the_value():
    # digest B.3: "c" in [20,20] plus "d"@12 gives "c+d"
    r = run(spec(10, grace=100, aggregation="string_reduce"), [("k", "c", 20), ("k", "d", 12)])
    assert outs(r) == [("k", 20, 20, "c", 20, 0), ("k", 20, 20, None, 20, 1), ("k", 12, 20, "c+d", 20, 1)]


def test_a_record_inside_a_session_tombstones_and_re_emits_the_same_window():
    r = run(spec(10, grace=100), [("k", "A", 5), ("k", "B", 15), ("k", "C", 10)])
    assert outs(r)[-2:] == [("k", 5, 15, None, 15, 2), ("k", 5, 15, 3, 15, 2)]


def test_a_duplicate_single_point_session_is_overwritten_in_place_without_tombstone():
    r = run(spec(10), [("k", "A", 7), ("k", "B", 7)])
    assert outs(r) == [("k", 7, 7, 1, 7, 0), ("k", 7, 7, 2, 7, 1)]


def test_keys_are_separate_sessions_and_compare_by_identity():
    r = run(spec(10), [("k", "A", 0), (1, "B", 1), ("1", "C", 2), (1, "D", 3)])
    assert outs(r) == [("k", 0, 0, 1, 0, 0), (1, 1, 1, 1, 1, 1), ("1", 2, 2, 1, 2, 2),
                       (1, 1, 1, None, 1, 3), (1, 1, 3, 2, 3, 3)]


# --- nulls ------------------------------------------------------------------------------------

def test_null_key_is_dropped_and_null_value_is_counted():
    r = run(spec(10), [(None, "A", 0), ("k", None, 1), ("k", "B", 2)])
    assert outs(r) == [("k", 1, 1, 1, 1, 1), ("k", 1, 1, None, 1, 2), ("k", 1, 2, 2, 2, 2)]
    assert drops(r) == [(0, DropReason.NULL_KEY)]


def test_null_key_does_not_move_stream_time_since_2_2_but_does_in_2_1():
    # gap 5, grace 10: k@90, a null key @110, k@91 merging into [90,91]; 2.2: stream time 91, close 81;
    # 2.1: the task's stream time 110, close 100, and 91 <= 100 is late
    records = [("k", "A", 90), (None, "X", 110), ("k", "B", 91)]
    assert drops(run(spec(5, grace=10), records, release="2.2")) == [(1, DropReason.NULL_KEY)]
    assert drops(run(spec(5, grace=10), records, release="2.1")) == [(1, DropReason.NULL_KEY),
                                                                     (2, DropReason.EXPIRED_WINDOW)]


def test_sum_of_a_null_value_fails_after_the_tombstones_since_2_1():
    records = [("k", 1, 0), ("k", None, 5)]
    r = run(spec(10, aggregation="sum"), records)
    assert r.failure is not None and r.failure.code is FailureCode.AGGREGATOR_NULL_VALUE
    assert outs(r) == [("k", 0, 0, 1, 0, 0), ("k", 0, 0, None, 0, 1)]
    # before 2.1 the aggregator runs before the merged-away sessions are removed: no tombstone
    r = run(spec(10, grace=None, aggregation="sum"), records, release="2.0")
    assert r.failure.code is FailureCode.AGGREGATOR_NULL_VALUE
    assert outs(r) == [("k", 0, 0, 1, 0, 0)]


def test_reduce_with_a_null_first_value_forwards_a_null_result_that_is_not_stored():
    # 3.9: Change(null, null) is forwarded, the put of null deletes; the next value starts afresh
    r = run(spec(10, aggregation="string_reduce"), [("k", None, 0), ("k", "b", 3)])
    assert outs(r) == [("k", 0, 0, None, 0, 0), ("k", 3, 3, "b", 3, 1)]
    # 1.1 forwards through the zero-byte caching layer, which skips a null write replacing nothing
    r = run(spec(10, grace=None, aggregation="string_reduce"), [("k", None, 0), ("k", "b", 3)], release="1.1")
    assert outs(r) == [("k", 3, 3, "b", 3, 1)]


# --- grace and the late drop --------------------------------------------------------------------

def test_late_check_uses_the_merged_window_as_verified_against_kafka():
    # digest B.2: stream time 100, gap 10, grace 5 -> close 85
    r = run(spec(10, grace=5), [("k", "A", 100), ("k", "B", 80), ("k", "C", 86), ("k", "D", 84), ("k", "E", 76)])
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]
    assert outs(r)[1:] == [
        ("k", 86, 86, 1, 86, 2),
        ("k", 86, 86, None, 86, 3), ("k", 84, 86, 2, 86, 3),  # older than close, merges into a live session
        ("k", 84, 86, None, 86, 4), ("k", 76, 86, 3, 86, 4),  # 76 + 10 >= 84
    ]


@pytest.mark.parametrize("release, close", [("3.0", 100 - 5 - 10), ("2.8", 100 - 5)])
def test_close_time_includes_the_gap_since_3_0(release, close):
    r = run(spec(10, grace=5), [("k", "A", 100), ("j", "B", close - 1), ("j", "C", close)], release=release)
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]
    assert outs(r)[-1] == ("j", close, close, 1, close, 2)


@pytest.mark.parametrize("release, dropped", [("2.2", True), ("2.2.1", False), ("2.1", True), ("2.3", False)])
def test_a_session_ending_at_the_close_time_is_late_only_before_2_2_1(release, dropped):
    r = run(spec(10, grace=5), [("k", "A", 100), ("j", "B", 95)], release=release)
    assert (drops(r) == [(1, DropReason.EXPIRED_WINDOW)]) == dropped


def test_before_2_1_there_is_no_grace_and_nothing_is_late():
    r = run(spec(10, grace=None), [("k", "A", 10_000_000), ("k", "B", 0)], release="1.1")
    assert drops(r) == [] and outs(r)[-1] == ("k", 0, 0, 1, 0, 1)


def test_legacy_grace_is_a_day_minus_the_gap():
    settings = session_window_settings(profile_for("2.3"), 1000, None, None)
    assert settings.grace_ms == DAY - 1000 and settings.retention_ms == DAY and settings.default_grace
    # close = stream time DAY + 10 - grace (DAY - 1000) = 1010: [1010,1010] lives, [5,5] is late
    r = run(spec(1000, grace=None), [("k", "A", DAY + 10), ("j", "B", 1010), ("i", "C", 5)], release="2.3")
    assert drops(r) == [(2, DropReason.EXPIRED_WINDOW)]


# --- timestamps and old values by release --------------------------------------------------------

def test_output_timestamps_by_release():
    records = [("k", "A", 10), ("k", "B", 5)]
    # 2.3+: the session's end, for the result and the tombstone
    assert [o[4] for o in outs(run(spec(10, grace=100), records, release="2.3"))] == [10, 10, 10]
    # 2.1-2.2 (no caching layer, KAFKA-6998): the record's ts
    assert [o[4] for o in outs(run(spec(10, grace=100), records, release="2.2"))] == [10, 5, 5]
    # before 2.1 the zero-byte caching layer forwards at the cache entry's ts: the session's end
    assert [o[4] for o in outs(run(spec(10, grace=None), records, release="2.0"))] == [10, 10, 10]


def test_tombstones_carry_the_merged_away_aggregate_as_old_value():
    r = run(spec(10, send_old_values=True), [("k", "A", 0), ("k", "B", 5)])
    olds = [(o.value, o.old_value) for o in r.outputs]
    assert olds == [(1, None), (None, 1), (2, None)]  # results always have a null old value
    r = run(spec(10), [("k", "A", 0), ("k", "B", 5)])
    assert all(o.old_value is NO_OLD_VALUE for o in r.outputs)


def test_0_10_2_forwards_no_tombstones():
    # the 0.10.2 caching layer never finds the session a write replaces (KAFKA-5172)
    r = run(spec(10, grace=None), [("k", "A", 0), ("k", "B", 5)], release="0.10.2")
    assert outs(r) == [("k", 0, 0, 1, 0, 0), ("k", 0, 5, 2, 5, 1)]
    r = run(spec(10, grace=None), [("k", "A", 0), ("k", "B", 5)], release="0.11.0")
    assert outs(r) == [("k", 0, 0, 1, 0, 0), ("k", 0, 0, None, 0, 1), ("k", 0, 5, 2, 5, 1)]


def test_before_2_1_old_values_are_read_from_the_store_by_the_caching_layer():
    # the [7,7] overwrite: the cache's fetchPrevious finds the stored [7,7] and reports it as old
    r = run(spec(10, grace=None, send_old_values=True), [("k", "A", 7), ("k", "B", 7)], release="1.1")
    assert [(o.value, o.old_value) for o in r.outputs] == [(1, None), (2, 1)]
    r = run(spec(10, send_old_values=True), [("k", "A", 7), ("k", "B", 7)], release="3.9")
    assert [(o.value, o.old_value) for o in r.outputs] == [(1, None), (2, None)]


# --- the stores -----------------------------------------------------------------------------------

def test_the_store_hides_sessions_older_than_its_retention_as_verified_against_kafka():
    # digest B.2: gap 10, grace 5 (retention 15); [0,5] and [20,20], then @12 -> [12,20] count 2
    records = [("k", "A", 0), ("k", "B", 5), ("k", "C", 20), ("k", "D", 12)]
    for store in ("rocksdb", "in_memory"):
        r = run(spec(10, grace=5), records, store=store)
        assert outs(r)[-2:] == [("k", 20, 20, None, 20, 3), ("k", 12, 20, 2, 20, 3)], store
    # before 3.4 (KAFKA-12960) RocksDB finds everything in a live segment: [0,5] merges too
    r = run(spec(10, grace=5), records, release="3.3")
    assert outs(r)[-1] == ("k", 0, 20, 4, 20, 3)


def test_0_11_to_2_1_0_lookups_miss_sessions_ending_after_ts_plus_gap():
    # [10,30] exists; @12 with gap 5 reaches its start (12 + 5 >= 10) but it ends after 17
    records = [("k", "A", 10), ("k", "B", 14), ("k", "C", 18), ("k", "D", 22), ("k", "E", 26), ("k", "F", 30),
               ("k", "G", 12)]
    # a new session inside [10,30] (its ts is its end: 1.1 forwards through the caching layer)
    assert outs(run(spec(5, grace=None), records, release="1.1"))[-1] == ("k", 12, 12, 1, 12, 6)
    assert outs(run(spec(5, grace=1000), records, release="2.1.1"))[-1][:4] == ("k", 10, 30, 7)
    assert outs(run(spec(5, grace=None), records, release="0.10.2"))[-1][:4] == ("k", 10, 30, 7)


def test_session_store_find_is_in_end_then_start_order_with_inclusive_bounds():
    for store in (RocksDBSessionStore(1000), InMemorySessionStore(1000)):
        for s, e in [(5, 9), (0, 2), (20, 30), (12, 14)]:
            assert store.put("k", "k", s, e, f"{s}-{e}")
        store.put("other", "other", 3, 4, "x")
        assert [x[2] for x in store.find("k", 2, 20)] == ["0-2", "5-9", "12-14", "20-30"]
        assert [x[2] for x in store.find("k", 3, 19)] == ["5-9", "12-14"]
        assert list(store.find("missing", 0, 100)) == []


def test_rocksdb_put_into_a_dead_segment_is_dropped():
    store = RocksDBSessionStore(20)  # 60 000 ms segments
    assert store.put("k", "k", 120_019, 120_019, 1)  # clock 120 019 - 20 -> segment 1 is the oldest live
    assert not store.put("k", "k", 59_999, 59_999, 1)
    assert store.put("k", "k", 60_000, 60_000, 1)


def test_legacy_rocksdb_keeps_the_three_newest_segments():
    store = make_session_store(profile_for("1.1"), "rocksdb", DAY, False)  # 12 h segments
    half = DAY // 2
    assert store.put("k", "k", 0, 0, 1)
    assert store.put("k", "k", 3 * half, 3 * half, 1)  # segment 3: segment 0 is deleted
    assert list(store.find("k", 0, 10)) == []
    assert not store.put("k", "k", 5, 5, 1)
    assert store.put("k", "k", half + 1, half + 1, 1)


def test_legacy_expired_put_is_still_forwarded():
    half = DAY // 2
    r = run(spec(10, grace=None), [("k", "A", 0), ("k", "B", 3 * half), ("k", "C", 5)], release="1.1")
    assert outs(r)[-1] == ("k", 5, 5, 1, 5, 2)
    assert drops(r) == [(2, DropReason.EXPIRED_WINDOW_PUT)]


def test_in_memory_put_at_the_retention_edge_is_dropped_but_forwarded():
    # gap 10, grace 0 (retention 10): stream time 100 -> close 90; [90,90] is not late but 90 <= 100 - 10
    r = run(spec(10), [("k", "A", 100), ("j", "B", 90)], store="in_memory")
    assert outs(r)[-1] == ("j", 90, 90, 1, 90, 1)
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW_PUT)]
    assert drops(run(spec(10), [("k", "A", 100), ("j", "B", 90)])) == []  # RocksDB stores it (hidden)


def test_range_fetch_orders_by_end_then_start_then_key_bytes_on_rocksdb():
    store = RocksDBSessionStore(1000, time_ordered=True)
    store.put("b", "b", 1, 5, "b1-5")
    store.put("a", "a", 3, 5, "a3-5")
    store.put("a", "a", 0, 2, "a0-2")
    store.put("c", "c", 2, 5, "c2-5")
    assert [x[3] for x in store.find_by_end(0, 5)] == ["a0-2", "b1-5", "c2-5", "a3-5"]
    memory = InMemorySessionStore(1000, time_ordered=True)
    for k, s, e in [("b", 1, 5), ("a", 3, 5), ("a", 0, 2), ("c", 2, 5)]:
        memory.put(k, k, s, e, f"{k}{s}-{e}")
    assert [x[3] for x in memory.find_by_end(0, 5)] == ["a0-2", "a3-5", "b1-5", "c2-5"]


def test_store_methods_state_their_cost():
    for cls in (RocksDBSessionStore, InMemorySessionStore):
        for name, member in inspect.getmembers(cls, inspect.isfunction):
            if name.startswith("_") or name.startswith("explain"):
                continue
            assert "Cost:" in (member.__doc__ or ""), f"{cls.__name__}.{name} has no cost in its docstring"


# --- emit on window close ----------------------------------------------------------------------

B4 = [("k", "A", 0), ("k", "B", 5), ("k", "C", 20), ("k", "D", 12), ("k", "E", 100)]


def test_emit_final_as_verified_against_kafka():
    # digest B.4 (gap 10, grace 5): at @100 it emits [0,5]=2 @5 and [12,20]=2 @20; nothing is forwarded before
    r = run(spec(10, grace=5, emit="on_window_close"), B4)
    assert outs(r) == [("k", 0, 5, 2, 5, 4), ("k", 12, 20, 2, 20, 4)]


def test_emit_final_in_memory_loses_the_sessions_its_store_forgets():
    r = run(spec(10, grace=5, emit="on_window_close"), B4, store="in_memory")
    assert outs(r) == []
    # the close checks of @20 and @100 first forget [0,5] (5 < 20 - 15 + 1) and [12,20] (20 < 100 - 15 + 1)
    assert drops(r) == [(2, DropReason.UNEMITTED_WINDOW), (4, DropReason.UNEMITTED_WINDOW)]
    # with a longer retention the in-memory store forgets nothing here: @12 then also finds [0,5]
    # (as RocksDB before 3.4 does) and merges both into [0,20], emitted when @100 closes it
    r = run(spec(10, grace=5, emit="on_window_close", retention_ms=1000), B4, store="in_memory")
    assert outs(r) == [("k", 0, 20, 4, 20, 4)] and drops(r) == []


def test_emit_final_leaked_iterators_keep_the_in_memory_store_from_forgetting_in_3_6_0():
    # the first emission (at @20, range [0, 4]) finds nothing: its leaked iterator pins expiry at 0
    records = [("k", "A", 0), ("k", "B", 5), ("j", "C", 20), ("k", "D", 12), ("j", "E", 100)]
    r = run(spec(10, grace=5, emit="on_window_close"), records, store="in_memory", release="3.6")
    assert outs(r) == [("k", 12, 12, 1, 12, 4), ("j", 20, 20, 1, 20, 4)]
    assert drops(r) == [(2, DropReason.UNEMITTED_WINDOW)]  # [0,5] was forgotten before the first emission
    r = run(spec(10, grace=5, emit="on_window_close"), records, store="in_memory", release="3.7")
    assert outs(r) == []


def test_emit_final_sessions_stay_in_the_store_after_emission():
    # gap 10, grace 0, retention 100: j@11 (close 1) emits [0,0]; k@9 (not late: 9 >= 1) still finds it
    # and merges it into [0,9], without a tombstone; j@30 (close 20) emits [0,9] and j's [11,11]
    records = [("k", "A", 0), ("j", "B", 11), ("k", "C", 9), ("j", "D", 30)]
    r = run(spec(10, emit="on_window_close", retention_ms=100), records)
    assert outs(r) == [("k", 0, 0, 1, 0, 1), ("k", 0, 9, 2, 9, 3), ("j", 11, 11, 1, 11, 3)]
    # with the default retention (gap + grace) the lookup of k@9 no longer sees [0,0] (0 < 11 - 10 + 1)
    r = run(spec(10, emit="on_window_close"), records)
    assert outs(r) == [("k", 0, 0, 1, 0, 1), ("k", 9, 9, 1, 9, 3), ("j", 11, 11, 1, 11, 3)]


def test_emit_final_waits_for_the_close_time_to_move_and_skips_empty_ranges():
    r = run(spec(10, emit="on_window_close"), [("k", "A", 5), ("j", "B", 15), ("j", "C", 16), ("j", "D", 16)])
    # close 5, 6, 6: [5,5] closes when the close time passes 5
    assert outs(r) == [("k", 5, 5, 1, 5, 2)]


def test_emit_final_late_records_are_dropped_without_emission():
    r = run(spec(10, emit="on_window_close"), [("k", "A", 5), ("j", "B", 16), ("i", "C", 1)])
    assert drops(r) == [(2, DropReason.EXPIRED_WINDOW)]
    assert outs(r) == [("k", 5, 5, 1, 5, 1)]


# --- tasks ----------------------------------------------------------------------------------------

def test_stream_time_is_per_task():
    # partition 1 is far ahead; partition 0's session at 0 is not late for its own task
    r = run(spec(10), [("k", "A", 1000, 1), ("k", "B", 0, 0), ("k", "C", 5, 0)], partitions={"input": 2})
    assert outs(r) == [("k", 1000, 1000, 1, 1000, 0), ("k", 0, 0, 1, 0, 1), ("k", 0, 0, None, 0, 2),
                       ("k", 0, 5, 2, 5, 2)]
    assert [o.partition for o in r.outputs] == [1, 0, 0, 0]
    assert drops(r) == []


def test_same_input_gives_identical_output():
    records = [(f"k{i % 7}", f"v{i}", (i * 37) % 101) for i in range(300)]
    a = run(spec(9, grace=20, aggregation="string_adder"), records)
    b = run(spec(9, grace=20, aggregation="string_adder"), records)
    assert a.outputs == b.outputs and drops(a) == drops(b)


# --- explanations ------------------------------------------------------------------------------------

def test_explanations_name_the_rule_and_the_numbers():
    r = run(spec(10, grace=5), [("k", "A", 100), ("k", "B", 80), ("k", "C", 86), ("k", "D", 84)], explain=True)
    late = r.drops[0].why.describe()
    assert "close time 85 = stream time 100 - grace 5 - gap 10" in late and "session_close_includes_gap" in late
    merged = r.outputs[-1].why.describe()
    assert "[86,86]=1" in merged and "into [84,86]" in merged and "session_output_ts_window_end" in merged
    tomb = r.outputs[-2].why
    assert tomb.rule == "session_merged_away" and "merged into [84,86]" in tomb.text
    assert all(o.why is not None for o in r.outputs) and all(d.why is not None for d in r.drops)


def test_explanations_say_which_sessions_the_store_hid():
    r = run(spec(10, grace=5), [("k", "A", 0), ("k", "B", 5), ("k", "C", 20), ("k", "D", 12)], explain=True)
    text = r.outputs[-1].why.text
    assert "not merged with [0,5]=2" in text and "store clock 20 - retention 15 + 1 = 6" in text
    assert "window_fetch_hides_expired" in text


def test_emit_final_explanations_name_the_closing_record():
    r = run(spec(10, grace=5, emit="on_window_close"), B4, explain=True)
    why = r.outputs[0].why
    assert why.rule == "session_emit_final"
    assert "k:E@100 moved the close time to 85" in why.text and "[5, 84]" in why.text
    r = run(spec(10, grace=5, emit="on_window_close"), B4, explain=True, store="in_memory")
    lost = r.drops[0].why.text
    assert "session [0,5]=2 of key k is never emitted" in lost and "5 < store clock 20 - retention 15 + 1" in lost


def test_explanations_before_2_1_name_the_caching_layer():
    r = run(spec(10, grace=None), [("k", "A", 0), ("k", "B", 5)], release="1.1", explain=True)
    assert all("zero_cache_strips_caching_layer" in o.why.text for o in r.outputs)
    assert "no grace before 2.1" in r.outputs[-1].why.text


# --- release rules and topology checks -----------------------------------------------------------

@pytest.mark.parametrize("name", [
    "session_windows", "session_fetch_end_bounded", "zero_cache_strips_caching_layer",
    "session_cache_finds_previous", "session_own_stream_time", "session_late_before_close",
    "session_output_ts_window_end", "session_retention_gap_plus_grace", "session_close_includes_gap",
    "session_emit_final_iterator_leak"])
def test_session_rules_are_registered_with_a_reference(name):
    assert RULES_BY_NAME[name].ref


@pytest.mark.parametrize("release, leaks", [("3.2", False), ("3.3", True), ("3.5", True), ("3.5.2", False),
                                            ("3.6", True), ("3.6.1", False), ("3.7", False)])
def test_emit_final_iterator_leak_releases(release, leaks):
    assert profile_for(release).session_emit_final_iterator_leak == leaks


def test_default_retention_by_release():
    assert session_window_settings(profile_for("2.8"), 10, 5, None).retention_ms == DAY
    assert session_window_settings(profile_for("3.0"), 10, 5, None).retention_ms == 15
    assert session_window_settings(profile_for("3.9"), 10, 5, 500).retention_ms == 500
    assert session_window_settings(profile_for("1.1"), 10, None, None).grace_ms is None


def check(topology, release="3.9", store=None):
    check_topology(topology, profile_for(release), store)


@pytest.mark.parametrize("topology, release, field", [
    (spec(0), "3.9", "topology.gap_ms"),
    (spec(-5), "3.9", "topology.gap_ms"),
    (spec(10, grace=-1), "3.9", "topology.grace_ms"),
    (spec(10, grace=None), "4.0", "topology.grace_ms"),  # SessionWindows.with was removed (KAFKA-16332)
    (spec(10, grace=0), "2.0", "topology.grace_ms"),  # no grace before 2.1
    (spec(10, grace=None, retention_ms=100), "2.0", "topology.retention_ms"),
    (spec(10, grace=5, retention_ms=14), "3.9", "topology.retention_ms"),  # below gap + grace
    (spec(10, grace=None, retention_ms=DAY - 1), "2.8", "topology.retention_ms"),  # gap + default grace = 1 day
    (spec(10, grace=DAY), "2.8", "topology.grace_ms"),  # does not fit maintainMs without withRetention
    (spec(10, emit="on_window_close"), "3.2", "topology.emit"),
])
def test_check_topology_rejects(topology, release, field):
    with pytest.raises(TopologyError) as err:
        check(topology, release)
    assert err.value.field == field


def test_check_topology_accepts():
    check(spec(10, grace=None), "3.9")
    check(spec(10, grace=None), "1.1")
    check(spec(10, grace=DAY, retention_ms=DAY + 10), "2.8")
    check(spec(10, grace=DAY), "3.0")
    check(spec(10, grace=5, retention_ms=15), "3.9")


def test_in_memory_session_stores_exist_from_2_3():
    with pytest.raises(TopologyError):
        check(spec(10), "2.2", store="in_memory")
    check(spec(10), "2.3", store="in_memory")


def test_a_scenario_file_with_a_bad_session_topology_is_rejected_naming_the_field():
    from kssim.reference.model.errors import ScenarioError

    with pytest.raises(ScenarioError) as err:
        scenario({"operator": "session_aggregate", "gap_ms": 0, "grace_ms": 0}, [("input", "k", "v", 1)])
    assert "gap_ms" in str(err.value)
