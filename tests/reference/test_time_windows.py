"""Time-windowed aggregations (tumbling, hopping): window edges, grace edges, equal timestamps,
nulls, old values, emit on window close and the windows its store loses, release rules, tasks,
explanations, the window store, and what check_topology rejects."""
import pytest

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import ScenarioError, TopologyError
from kssim.reference.model.profiles import profile_for, time_window_settings
from kssim.reference.model.records import NO_OLD_VALUE, InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import TimeWindowSpec, WindowAggregateSpec, check_topology
from kssim.reference.runtime.engine import run_records
from kssim.reference.stores.time_window_store import IN_MEMORY, ROCKSDB, TIME_ORDERED, TimeWindowStore
from kssim.reference.model.windows import window_starts
from kssim.reference.windows.time_window import java_hashmap_order

from kssim_testing import scenario


def spec(size, advance=None, grace=0, aggregation="count", emit="on_update", send_old_values=False, retention_ms=None):
    return WindowAggregateSpec(window=TimeWindowSpec(size, advance or size, grace), aggregation=aggregation,
                               emit=emit, send_old_values=send_old_values, retention_ms=retention_ms)


def run(topology, records, release="3.9", explain=False, store="rocksdb", partitions=None):
    """records: (key, value, ts[, partition]) in processing order."""
    inputs = [InputRecord("input", r[0], r[1], r[2], r[3] if len(r) > 3 else 0, i) for i, r in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(store=store, partitions=partitions or {}), inputs,
                       explain=explain)


def outs(result):
    return [(o.key["key"], o.key["start"], o.key["end"], o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


# --- windowsFor: window edges -----------------------------------------------------------------

@pytest.mark.parametrize("ts, size, advance, starts", [
    (0, 10, 10, [0]), (9, 10, 10, [0]), (10, 10, 10, [10]),  # start inclusive, end exclusive
    (3, 10, 5, [0]),  # no window starts below 0: ts 3 is only in [0,10)
    (7, 10, 5, [0, 5]), (10, 10, 5, [5, 10]), (14, 10, 5, [5, 10]),
    (12, 10, 3, [3, 6, 9, 12]),
    (-1, 10, 5, []),  # a negative timestamp belongs to no window
])
def test_windows_for(ts, size, advance, starts):
    assert list(window_starts(ts, size, advance)) == starts


@pytest.mark.parametrize("ts, size, advance, starts", [
    (14, 10, 3, [3, 6, 9, 12]),  # [3,13) does not contain 14: one window too early
    (14, 10, 5, [5, 10]),  # a size that is a multiple of the advance: the same windows as later
    (1, 10, 3, [0]),
])
def test_windows_for_before_kafka_3784(ts, size, advance, starts):
    assert list(window_starts(ts, size, advance, fixed=False)) == starts


def test_record_updates_a_window_it_is_not_in_at_0_10_0_only():
    before = run(spec(10, 3, grace=None), [("k", "a", 14)], release="0.10.0")
    after = run(spec(10, 3, grace=None), [("k", "a", 14)], release="0.10.1")
    assert [o[1] for o in outs(before)] == [3, 6, 9, 12]
    assert [o[1] for o in outs(after)] == [6, 9, 12]


def test_java_hashmap_order_of_window_starts():
    assert java_hashmap_order([5, 10]) == [5, 10]
    assert java_hashmap_order([15, 20]) == [20, 15]  # buckets 15 and 4 of 16
    assert java_hashmap_order([86400001, 86400002]) == [86400002, 86400001]  # spread mixes the high bits in
    # 13 entries resize the table to 32 buckets: 16..28 no longer wrap around
    assert java_hashmap_order(list(range(4, 30, 2))) == list(range(4, 30, 2))
    # 12 entries stay in 16 buckets: 16 and 18 wrap to buckets 0 and 2; 20 shares bucket 4 with 4, after it
    assert java_hashmap_order(list(range(4, 28, 2))) == [16, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 14]


@pytest.mark.parametrize("release, starts", [
    # stored windows first (ascending), then the new ones in HashMap order
    ("1.1", [20, 15, 15, 10]),
    ("2.0", [15, 20, 10, 15]),
])
def test_update_order_of_a_records_windows(release, starts):
    r = run(spec(10, 5, grace=None), [("A", "x", 22), ("A", "y", 17)], release=release)
    assert [o[1] for o in outs(r)] == starts


def test_tumbling_window_end_is_exclusive():
    r = run(spec(10, grace=100), [("k", "A", 0), ("k", "B", 9), ("k", "C", 10)])
    assert outs(r) == [("k", 0, 10, 1, 0, 0), ("k", 0, 10, 2, 9, 1), ("k", 10, 20, 1, 10, 2)]


def test_hopping_count_with_grace_as_verified_against_kafka():
    # digest C.1 (size 10, advance 5, grace 3), verified with TopologyTestDriver
    r = run(spec(10, 5, grace=3), [("k", "a", 3), ("k", "b", 7), ("k", "c", 12), ("k", "d", 25), ("k", "e", 14),
                                    ("k", "f", 9), ("k", "g", 30), ("k", "h", 2)])
    assert outs(r) == [
        ("k", 0, 10, 1, 3, 0),
        ("k", 0, 10, 2, 7, 1), ("k", 5, 15, 1, 7, 1),
        ("k", 5, 15, 2, 12, 2), ("k", 10, 20, 1, 12, 2),
        ("k", 20, 30, 1, 25, 3), ("k", 25, 35, 1, 25, 3),
        ("k", 25, 35, 2, 30, 6), ("k", 30, 40, 1, 30, 6),
    ]
    # @14 (close 22): [5,15) and [10,20) both too late; @9: [0,10), [5,15); @2: [0,10)
    assert drops(r) == [(4, DropReason.EXPIRED_WINDOW)] * 2 + [(5, DropReason.EXPIRED_WINDOW)] * 2 + \
        [(7, DropReason.EXPIRED_WINDOW)]


# --- grace edges ------------------------------------------------------------------------------

@pytest.mark.parametrize("grace, live", [(5, False), (6, True)])
def test_window_closes_when_its_end_reaches_stream_time_minus_grace(grace, live):
    # stream time 25: close time 20 (grace 5) or 19 (grace 6); [10,20) lives while its end 20 > close time
    r = run(spec(10, grace=grace), [("k", "A", 25), ("k", "B", 19)])
    if live:
        assert outs(r) == [("k", 20, 30, 1, 25, 0), ("k", 10, 20, 1, 19, 1)]
        assert drops(r) == []
    else:
        assert outs(r) == [("k", 20, 30, 1, 25, 0)]
        assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]


def test_a_hopping_record_updates_its_live_windows_and_skips_the_closed_ones():
    r = run(spec(10, 5, grace=0), [("k", "A", 14), ("k", "B", 9)])  # close time 14: [0,10) closed, [5,15) live
    assert outs(r)[-1] == ("k", 5, 15, 2, 14, 1)
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]


def test_stream_time_counts_late_records_and_is_per_task_not_per_key():
    r = run(spec(10, grace=0), [("k", "A", 30), ("j", "B", 15)])
    assert outs(r) == [("k", 30, 40, 1, 30, 0)]
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]


# --- equal timestamps, output timestamps, nulls, old values -------------------------------------

def test_equal_timestamps_update_the_same_window():
    r = run(spec(10), [("k", "A", 5), ("k", "B", 5), ("k", "C", 5)])
    assert [o[3:5] for o in outs(r)] == [(1, 5), (2, 5), (3, 5)]


def test_output_ts_is_the_max_record_ts_of_the_window_since_2_3():
    records = [("k", "A", 8), ("k", "B", 3)]
    assert [o[4] for o in outs(run(spec(10, grace=10), records))] == [8, 8]
    assert [o[4] for o in outs(run(spec(10, grace=10), records, release="2.2"))] == [8, 3]


def test_null_key_is_dropped_and_does_not_move_stream_time():
    r = run(spec(10), [("k", "A", 5), (None, "B", 100), ("k", "C", 6)])
    assert outs(r) == [("k", 0, 10, 1, 5, 0), ("k", 0, 10, 2, 6, 2)]
    assert drops(r) == [(1, DropReason.NULL_KEY)]


def test_in_2_1_the_task_stream_time_closes_windows_and_null_keys_move_it():
    records = [("k", "A", 5), (None, "B", 100), ("k", "C", 6)]
    r = run(spec(10, grace=0), records, release="2.1")
    assert outs(r) == [("k", 0, 10, 1, 5, 0)]
    assert drops(r) == [(1, DropReason.NULL_KEY), (2, DropReason.EXPIRED_WINDOW)]
    assert len(run(spec(10, grace=0), records, release="2.2").outputs) == 2


def test_null_values_are_aggregated():
    r = run(spec(10, aggregation="string_adder"), [("k", None, 1), ("k", "A", 2)])
    assert [o[3] for o in outs(r)] == ["0+null", "0+null+A"]
    assert [o[3] for o in outs(run(spec(10), [("k", None, 1)]))] == [1]


def test_sum_of_a_null_value_kills_the_application():
    r = run(spec(10, aggregation="sum"), [("k", 5, 1), ("k", None, 2), ("k", 1, 3)])
    assert outs(r) == [("k", 0, 10, 5, 1, 0)]
    assert r.failure.code is FailureCode.AGGREGATOR_NULL_VALUE and r.failure.input_index == 1


def test_a_reduce_that_becomes_null_deletes_its_window():
    r = run(spec(10, aggregation="string_reduce"), [("k", None, 1), ("k", "A", 2), ("k", "B", 3)])
    # null first value: the window is deleted (null aggregate), so A starts it afresh at ts 2
    assert [o[3:5] for o in outs(r)] == [(None, 1), ("A", 2), ("A+B", 3)]


def test_send_old_values_reports_the_initializer_for_a_new_window():
    r = run(spec(10, send_old_values=True), [("k", "A", 1), ("k", "B", 2)])
    assert [(o.value, o.old_value) for o in r.outputs] == [(1, 0), (2, 1)]
    plain = run(spec(10), [("k", "A", 1)])
    assert plain.outputs[0].old_value is NO_OLD_VALUE


# --- emit on window close ---------------------------------------------------------------------

def test_emit_final_emits_each_window_once_when_it_closes():
    r = run(spec(10, grace=2, emit="on_window_close"), [("k", "A", 1), ("j", "B", 5), ("k", "C", 11), ("k", "D", 12)])
    assert outs(r) == [("j", 0, 10, 1, 5, 3), ("k", 0, 10, 1, 1, 3)]  # by start, then key bytes


def test_emit_final_waits_until_the_close_time_passes_a_new_window():
    # KStreamWindowAggregateTest#shouldNotEmitFinalIfNotProgressEnough, shape: hop 10/5, grace 5
    r = run(spec(10, 5, grace=5, emit="on_window_close"),
            [("k", "A", 0), ("k", "B", 14), ("k", "C", 15), ("k", "D", 20), ("k", "E", 24)])
    assert outs(r) == [("k", 0, 10, 1, 0, 2), ("k", 5, 15, 1, 14, 3)]


def test_emit_final_loses_windows_its_store_hides_before_the_close_check():
    # digest C.1 caveat: hop 10/5, grace 3 (retention 13); after @25 nothing of [0,10), [5,15), [10,20)
    records = [("k", "a", 3), ("k", "b", 7), ("k", "c", 12), ("k", "d", 25)]
    r = run(spec(10, 5, grace=3, emit="on_window_close"), records)
    assert outs(r) == []
    assert drops(r) == [(3, DropReason.UNEMITTED_WINDOW)] * 3
    kept = run(spec(10, 5, grace=3, emit="on_window_close", retention_ms=100), records)
    assert outs(kept) == [("k", 0, 10, 2, 7, 3), ("k", 5, 15, 2, 12, 3), ("k", 10, 20, 1, 12, 3)]
    assert drops(kept) == []


def test_emit_final_windows_are_lost_since_3_4_not_in_3_3():
    # the 3.4 retention filter (KAFKA-12960); nothing about emit-final changed between 3.7 and 3.8
    records = [("k", "a", 3), ("k", "b", 7), ("k", "c", 12), ("k", "d", 25)]
    topology = spec(10, 5, grace=3, emit="on_window_close")
    assert len(run(topology, records, release="3.3").outputs) == 3
    for release in ("3.4", "3.7", "3.8", "3.9", "4.0"):
        assert run(topology, records, release=release).outputs == ()
    assert outs(run(topology, records, release="3.7")) == outs(run(topology, records, release="3.8"))


@pytest.mark.parametrize("store, emitted", [("rocksdb", True), ("in_memory", False)])
def test_emit_final_store_boundary_differs_between_rocksdb_and_in_memory(store, emitted):
    # observed 10, retention 10: RocksDB's time-ordered store shows start >= 0, in memory start > 0
    r = run(spec(10, emit="on_window_close"), [("k", "A", 0), ("k", "B", 10)], store=store)
    assert outs(r) == ([("k", 0, 10, 1, 0, 1)] if emitted else [])
    assert drops(r) == ([] if emitted else [(1, DropReason.UNEMITTED_WINDOW)])


def test_emit_final_send_old_values_reports_a_null_old_value():
    r = run(spec(10, emit="on_window_close", send_old_values=True), [("k", "A", 1), ("k", "B", 10)])
    assert [(o.value, o.old_value) for o in r.outputs] == [(1, None)]


def test_an_idle_partition_never_closes_its_windows():
    records = [("k1", "A", 1, 0), ("k2", "B", 2, 1), ("k1", "C", 12, 0), ("k1", "D", 25, 0)]
    r = run(spec(10, emit="on_window_close"), records, partitions={"input": 2})
    assert [(o.partition, o.key["key"], o.key["start"]) for o in r.outputs] == [(0, "k1", 0), (0, "k1", 10)]
    one = run(spec(10, emit="on_window_close"), [r_[:3] for r_ in records])
    assert [(o.key["key"], o.key["start"]) for o in one.outputs] == [("k1", 0), ("k2", 0), ("k1", 10)]


def test_several_partitions_give_the_same_bytes_every_run():
    records = [(f"k{i % 7}", i, (i * 37) % 101, i % 3) for i in range(200)]
    topology = spec(10, 5, grace=4, emit="on_window_close")
    first = run(topology, records, partitions={"input": 3}, explain=True)
    second = run(topology, records, partitions={"input": 3}, explain=True)
    assert first.outputs == second.outputs and first.drops == second.drops
    assert [o.why.text for o in first.outputs] == [o.why.text for o in second.outputs]


# --- release rules ----------------------------------------------------------------------------

def test_before_2_1_there_is_no_grace_and_late_records_still_update():
    r = run(spec(10, grace=None), [("k", "A", 100), ("k", "B", 5)], release="2.0")
    assert outs(r) == [("k", 100, 110, 1, 100, 0), ("k", 0, 10, 1, 5, 1)]
    assert drops(r) == []


def test_before_2_1_a_window_of_an_expired_segment_is_forwarded_but_not_stored():
    # maintainMs 1 day, three 12 h segments: a window four segments back is gone
    day = 24 * 3600 * 1000
    r = run(spec(10, grace=None), [("k", "A", 0), ("k", "B", 2 * day), ("k", "C", 1), ("k", "D", 2)], release="2.0")
    assert outs(r) == [("k", 0, 10, 1, 0, 0), ("k", 2 * day, 2 * day + 10, 1, 2 * day, 1), ("k", 0, 10, 1, 1, 2),
                       ("k", 0, 10, 1, 2, 3)]
    assert drops(r) == [(2, DropReason.EXPIRED_WINDOW_PUT), (3, DropReason.EXPIRED_WINDOW_PUT)]


def test_legacy_builder_default_grace_is_a_day_minus_the_size():
    day = 24 * 3600 * 1000
    r = run(spec(10, grace=None), [("k", "A", day + 5), ("k", "B", 5), ("k", "C", 12)], explain=True)
    # close time = (day + 5) - (day - 10) = 15: [0,10) is closed, [10,20) is not
    assert outs(r)[1:] == [("k", 10, 20, 1, 12, 2)]
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW)]
    assert "grace 86399990 (the legacy builder's default, max(1 day - size, 0))" in r.drops[0].why.text


def test_time_window_settings_per_release():
    day = 24 * 3600 * 1000
    assert time_window_settings(profile_for("2.0"), 10, None, None).grace_ms is None
    assert time_window_settings(profile_for("2.0"), 10, None, None).retention_ms == day
    s28 = time_window_settings(profile_for("2.8"), 10, 5, None)
    assert (s28.grace_ms, s28.retention_ms, s28.maintain_ms) == (5, day, True)
    s30 = time_window_settings(profile_for("3.0"), 10, 5, None)
    assert (s30.grace_ms, s30.retention_ms, s30.maintain_ms) == (5, 15, False)
    assert time_window_settings(profile_for("3.9"), 10, None, None).grace_ms == day - 10
    assert time_window_settings(profile_for("3.9"), 10, 5, 99).retention_ms == 99


# --- explanations -----------------------------------------------------------------------------

def test_explanations_name_the_rule_and_the_numbers():
    r = run(spec(10, 5, grace=3), [("k", "a", 3), ("k", "b", 25), ("k", "c", 9)], explain=True)
    first = r.outputs[0].why
    assert first.rule == "window_update" and "new window [0,10) of k: initializer 0 + a@3 -> 1" in first.text
    late = [d.why.text for d in r.drops]
    assert late == ["input k:c@9 is too late for window [0,10): its end 10 <= close time 22 = stream time 25 - grace 3; "
                    "skipped for that window only ('Skipping record for expired window')",
                    "input k:c@9 is too late for window [5,15): its end 15 <= close time 22 = stream time 25 - grace 3; "
                    "skipped for that window only ('Skipping record for expired window')"]


def test_explain_lists_the_windows_emit_final_loses_and_why():
    r = run(spec(10, 5, grace=3, emit="on_window_close"), [("k", "a", 3), ("k", "b", 7), ("k", "c", 12), ("k", "d", 25)],
            explain=True)
    lost = [d.why for d in r.drops]
    assert [w.rule for w in lost] == ["unemitted_window"] * 3
    assert lost[2].text == (
        "window [10,20) of k (value 1, last updated by input 2) is never emitted: the close check (stream time 25, "
        "close time 22, window starts [0,12]) came after the RocksDB time-ordered (emit-final) window store had hidden "
        "it: start 10 < observed 25 - retention 13 = 12 [window_fetch_hides_expired, KAFKA-12960]; observed time = "
        "newest window start written (moved there by input 3); retention 13 = size 10 + grace 3")


def test_explain_of_an_emitted_final_window():
    r = run(spec(10, grace=2, emit="on_window_close"), [("k", "A", 1), ("k", "B", 12)], explain=True)
    assert r.outputs[0].why.rule == "window_closed"
    assert r.outputs[0].why.text == (
        "window [0,10) of k closed: close time 10 = stream time 12 - grace 2 >= its end 10; the close check fetched "
        "window starts [0,0] and emits its final value 1 (last updated by input 0) at its max record ts 1")


# --- the window store -------------------------------------------------------------------------

def test_window_store_visibility_per_flavour():
    # observed 100, retention 30: RocksDB (3.4+) and in-memory show start >= 71, time-ordered start >= 70
    for flavour, first_shown in ((ROCKSDB, 71), (IN_MEMORY, 71), (TIME_ORDERED, 70)):
        store = TimeWindowStore(flavour, 30)
        for start in (69, 70, 71, 100):
            store.put("k", start, (start, start, "k", 0))
        assert [s for s in (69, 70, 71, 100) if store.get("k", s) is not None] == \
            [s for s in (69, 70, 71, 100) if s >= first_shown]


def test_window_store_before_3_4_expires_whole_segments():
    store = TimeWindowStore(ROCKSDB, 30, strict_reads=False)  # segments of 60 000 ms
    store.put("k", 0, (1, 0, "k", 0))
    store.put("k", 100, (1, 100, "k", 1))
    assert store.get("k", 0) is not None  # still in a live segment
    store.put("k", 60_100, (1, 60_100, "k", 2))  # min live segment = (60100 - 30) // 60000 = 1
    assert store.get("k", 0) is None and store.get("k", 100) is None
    assert store.put("k", 5, (1, 5, "k", 3)) is False  # a put into a deleted segment is dropped


def test_in_memory_store_drops_a_put_at_or_below_observed_minus_retention():
    store = TimeWindowStore(IN_MEMORY, 10)
    store.put("k", 20, (1, 20, "k", 0))
    assert store.put("k", 10, (1, 10, "k", 1)) is False
    assert store.put("k", 11, (1, 11, "k", 2)) is True


def test_fetch_all_orders_by_start_then_serialized_key_and_reports_lost_windows():
    store = TimeWindowStore(TIME_ORDERED, 10, track_unemitted=True)
    for key, start in (("b", 0), ("a", 0), ("k", 5)):
        store.put(key, start, (1, start, key, 0))
    shown, lost = store.fetch_all(0, 0)
    assert [e[2] for _, e in shown] == ["a", "b"] and lost == []
    store.put("k", 20, (1, 20, "k", 3), 3)  # hides starts < 10: window 5 was never fetched
    shown, lost = store.fetch_all(1, 10)
    assert shown == [] and [(w.start, w.key_id, w.hidden_by_input) for w in lost] == [(5, "k", 3)]


# --- check_topology: what Kafka's API rejects ----------------------------------------------------

@pytest.mark.parametrize("topology, release, field", [
    ({"size_ms": 0, "grace_ms": 0}, "3.9", "topology.size_ms"),
    ({"size_ms": 10, "advance_ms": 11, "grace_ms": 0}, "3.9", "topology.advance_ms"),
    ({"size_ms": 10, "advance_ms": 0, "grace_ms": 0}, "3.9", "topology.advance_ms"),
    ({"size_ms": 10, "grace_ms": -1}, "3.9", "topology.grace_ms"),
    ({"size_ms": 10, "grace_ms": None}, "4.0", "topology.grace_ms"),
    ({"size_ms": 10, "grace_ms": 5}, "2.0", "topology.grace_ms"),
    ({"size_ms": 10, "grace_ms": 0, "emit": "on_window_close"}, "3.2", "topology.emit"),
    ({"size_ms": 10, "grace_ms": 5, "retention_ms": 14}, "3.9", "topology.retention_ms"),
    ({"size_ms": 10, "grace_ms": None, "retention_ms": 1000}, "3.9", "topology.retention_ms"),
    ({"size_ms": 10, "grace_ms": 24 * 3600 * 1000}, "2.8", "topology.grace_ms"),
])
def test_check_topology_rejects_what_kafka_rejects(topology, release, field):
    doc = {"operator": "window_aggregate", "aggregation": "count", **topology}
    with pytest.raises(ScenarioError) as error:
        scenario(doc, [], semantics=release)
    assert field in str(error.value)


def test_a_grace_that_fits_maintain_ms_or_a_retention_is_accepted_before_3_0():
    day = 24 * 3600 * 1000
    scenario({"operator": "window_aggregate", "size_ms": 10, "grace_ms": day - 10}, [], semantics="2.8")
    scenario({"operator": "window_aggregate", "size_ms": 10, "grace_ms": day, "retention_ms": 2 * day}, [],
             semantics="2.8")
    scenario({"operator": "window_aggregate", "size_ms": 10, "grace_ms": day}, [], semantics="3.0")


def test_in_memory_window_stores_exist_since_2_3():
    topology = spec(10, grace=0)
    with pytest.raises(TopologyError) as error:
        check_topology(topology, profile_for("2.2"), "in_memory")
    assert error.value.field == "config.store"
    check_topology(topology, profile_for("2.3"), "in_memory")


def test_0_10_2_reads_skip_segments_older_than_the_first_one_created():
    # 12 h segments (maintainMs 1 day / 2): A lands in segment 1 first, so segment 0 (created by B)
    # is never read in 0.10.2: C finds no window and starts it again (fixed by KAFKA-4851 in 0.11)
    half_day = 12 * 3600 * 1000
    records = [("k", "A", half_day), ("k", "B", 1), ("k", "C", 2)]
    assert [o[3] for o in outs(run(spec(10, grace=None), records, release="0.10.2"))] == [1, 1, 1]
    assert [o[3] for o in outs(run(spec(10, grace=None), records, release="0.11.0"))] == [1, 1, 2]


def test_a_negative_timestamp_belongs_to_no_window():
    # the loader rejects negative timestamps; records built in code can still carry one
    r = run(spec(10), [("k", "A", -5), ("k", "B", 5)], explain=True)
    assert outs(r) == [("k", 0, 10, 1, 5, 1)]
    assert drops(r) == [(0, DropReason.NO_WINDOW)]
    assert "belongs to no time window" in r.drops[0].why.text
