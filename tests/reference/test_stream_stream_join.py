"""KStream-KStream join rules, each pinned at its boundary and at the release that switches it.

Records are written ``(side, key, value, ts[, partition])`` with side "L"/"R"; results
``(key, value, ts, input)`` with the concat joiner ("A-a", "A-null").
"""
import pytest

from kssim.reference.runtime.engine import Engine
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, TopologyError
from kssim.reference.model.profiles import DEFAULT_WINDOW_RETENTION_MS as DAY_MS, profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.joins.stream_stream import build, join_settings
from kssim.reference.model.topology import JoinWindowSpec, StreamStreamJoinSpec, check_topology

SEG = 60_000
HALF_DAY = DAY_MS // 2


def spec_of(join="inner", before=10, after=10, grace=0, api="time_difference"):
    return StreamStreamJoinSpec(join=join, window=JoinWindowSpec(before, after, grace), window_api=api,
                                joiner="concat", joiner_separator="-")


class Run:
    def __init__(self, records, *, release="3.9", store="rocksdb", partitions=1, emit_interval=0,
                 wall_clock=None, explain=False, **spec):
        spec = spec_of(**spec)
        profile = profile_for(release)
        check_topology(spec, profile)
        parts = {"left": partitions, "right": partitions} if partitions > 1 else {}
        engine = Engine(spec, profile, RunConfig(store=store, partitions=parts, emit_interval_ms=emit_interval),
                        explain=explain)
        self.outputs = []
        for index, rec in enumerate(records):
            side, key, value, ts = rec[:4]
            if wall_clock is not None:
                for ctx in engine.contexts:
                    ctx.wall_clock_ms = wall_clock[index]
            record = InputRecord("left" if side == "L" else "right", key, value, ts,
                                 rec[4] if len(rec) > 4 else 0, index)
            self.outputs.extend(engine.process(record))
        self.drops = engine.drain_drops()

    @property
    def results(self):
        return [(o.key, o.value, o.ts, o.input_index) for o in self.outputs]

    @property
    def values(self):
        return [o.value for o in self.outputs]

    def dropped(self):
        return [(d.input_index, d.reason) for d in self.drops]


# --- lookup ranges ---------------------------------------------------------------------------

def test_left_record_looks_up_t_minus_before_to_t_plus_after_inclusive():
    records = [("R", "k", "early", 86), ("R", "k", "lo", 87), ("R", "k", "hi", 103), ("R", "k", "late", 104),
               ("L", "k", "A", 100)]
    assert Run(records, before=13, after=3, grace=100).values == ["A-lo", "A-hi"]


def test_right_record_looks_up_t_minus_after_to_t_plus_before_inclusive():
    records = [("L", "k", "early", 96), ("L", "k", "lo", 97), ("L", "k", "hi", 113), ("L", "k", "late", 114),
               ("R", "k", "a", 100)]
    assert Run(records, before=13, after=3, grace=100).values == ["lo-a", "hi-a"]


def test_0_10_0_right_processor_used_the_left_bounds():
    # KAFKA-4153 (0.10.1) swapped them; 0.10.0 looked up [t - before, t + after] on the right too
    records = [("L", "k", "lo", 87), ("L", "k", "in", 97), ("L", "k", "hi", 103), ("L", "k", "far", 113),
               ("R", "k", "a", 100)]
    assert Run(records, release="0.10.0", api="legacy", grace=None, before=13, after=3).values == ["lo-a", "in-a", "hi-a"]
    assert Run(records, release="0.10.1", api="legacy", grace=None, before=13, after=3).values == ["in-a", "hi-a", "far-a"]


def test_range_start_is_clamped_at_zero():
    records = [("R", "k", "a", 0), ("L", "k", "A", 5)]
    assert Run(records, before=10, after=10).values == ["A-a"]


def test_range_end_is_clamped_at_zero_too():
    # after = -5: L@3 only joins R with ts <= -2, but the clamped end 0 lets R@0 in
    records = [("R", "k", "zero", 0), ("L", "k", "A", 3), ("L", "k", "B", 5), ("R", "k", "one", 1)]
    assert Run(records, before=10, after=-5).results == [("k", "A-zero", 3, 1), ("k", "B-zero", 5, 2)]


def test_keys_must_be_equal():
    records = [("L", "k", "A", 1), ("R", "k2", "a", 1), ("R", 1, "b", 1), ("L", True, "B", 1), ("L", 1, "C", 1)]
    assert Run(records).values == ["C-b"]


# --- matches: order, timestamps ------------------------------------------------------------------

def test_matches_come_in_ts_order_then_arrival_order():
    records = [("R", "k", "c", 7), ("R", "k", "a", 5), ("R", "k", "d", 7), ("R", "k", "b", 5), ("L", "k", "A", 6)]
    assert Run(records).values == ["A-a", "A-b", "A-c", "A-d"]


def test_output_ts_is_max_of_both_since_2_3():
    records = [("L", "k", "A", 10), ("R", "k", "a", 4), ("R", "k", "b", 15)]
    assert Run(records, release="2.3", api="legacy", grace=None).results == [("k", "A-a", 10, 1), ("k", "A-b", 15, 2)]
    assert Run(records, release="2.2", api="legacy", grace=None).results == [("k", "A-a", 4, 1), ("k", "A-b", 15, 2)]


def test_equal_timestamps_join():
    records = [("L", "k", "A", 10), ("R", "k", "a", 10)]
    assert Run(records, before=0, after=0, grace=1).results == [("k", "A-a", 10, 1)]


@pytest.mark.parametrize("release,store,joined", [("3.3", "rocksdb", True), ("3.4", "rocksdb", False),
                                                  ("3.9", "in_memory", False)])
def test_a_zero_retention_store_hides_everything_since_3_4(release, store, joined):
    # window 0 and no grace: retention 0, so a fetch starts at observed + 1 (the in-memory store even
    # drops every put: ts <= observed - 0)
    records = [("L", "k", "A", 10), ("R", "k", "a", 10)]
    assert (Run(records, before=0, after=0, grace=0, release=release, store=store).values == ["A-a"]) == joined


# --- eager left/outer results ---------------------------------------------------------------------

@pytest.mark.parametrize("release", ["0.10.2", "2.8", "3.0", "3.9"])
def test_legacy_left_join_emits_unmatched_records_at_once(release):
    records = [("L", "k", "A", 3), ("R", "k", "a", 4), ("R", "j", "x", 5)]
    run = Run(records, join="left", api="legacy", grace=None, release=release)
    assert run.results == [("k", "A-null", 3, 0), ("k", "A-a", 4, 1)]


def test_legacy_outer_join_emits_both_sides_at_once():
    records = [("R", "k", "a", 3), ("L", "k", "A", 4), ("L", "j", "B", 9)]
    assert Run(records, join="outer", api="legacy", grace=None).results == [
        ("k", "null-a", 3, 0), ("k", "A-a", 4, 1), ("j", "B-null", 9, 2)]


def test_legacy_with_explicit_grace_stays_eager():
    records = [("L", "k", "A", 3)]
    assert Run(records, join="left", api="legacy", grace=5).results == [("k", "A-null", 3, 0)]


def test_before_kip77_the_left_join_was_triggered_by_left_records_only():
    records = [("R", "k", "a", 1), ("L", "k", "A", 2), ("R", "k", "b", 3), ("L", "k", "B", 4), ("L", "j", "C", 5)]
    run = Run(records, join="left", api="legacy", grace=None, release="0.10.1")
    assert run.values == ["A-a", "B-a", "B-b", "C-null"]  # right records never look up; left ones are not stored
    assert Run(records, join="left", api="legacy", grace=None, release="0.10.2").values == [
        "A-a", "A-b", "B-a", "B-b", "C-null"]


# --- the spurious-result fix (3.1+) ------------------------------------------------------------------

def test_unjoined_record_is_flushed_only_when_stream_time_passes_ts_plus_after_plus_grace():
    # A@10, after 10, grace 5: open while stream time <= 25
    records = [("L", "k", "A", 10), ("L", "j", "B", 25), ("R", "x", "c", 26)]
    run = Run(records, join="left", grace=5)
    assert run.results == [("k", "A-null", 10, 2)]


def test_flush_comes_before_the_triggering_records_own_results():
    # b@19 does not flush A (10 + 10 >= 19); B@21 does, then joins b
    records = [("L", "k", "A", 10), ("R", "j", "b", 19), ("L", "j", "B", 21)]
    assert Run(records, join="left").results == [("k", "A-null", 10, 2), ("j", "B-b", 21, 2)]


def test_a_late_partner_removes_the_held_record():
    records = [("L", "k", "A", 10), ("R", "k", "a", 20), ("L", "j", "B", 100)]
    assert Run(records, join="left").results == [("k", "A-a", 20, 1)]


def test_a_match_deletes_every_held_value_with_that_ts_and_key():
    records = [("L", "k", "A1", 10), ("L", "k", "A2", 10), ("R", "k", "a", 12), ("L", "j", "B", 100)]
    assert Run(records, join="left").values == ["A1-a", "A2-a"]


def test_held_duplicates_are_flushed_in_arrival_order():
    records = [("L", "k", "A1", 10), ("L", "k", "A2", 10), ("L", "j", "B", 100)]
    assert Run(records, join="left").results == [("k", "A1-null", 10, 2), ("k", "A2-null", 10, 2)]


def test_record_whose_window_already_closed_is_emitted_at_once():
    # stream time 100; B@89: 89 + after 10 = 99 < 100 -> at once; C@90: 100 is not < 100 -> held
    records = [("L", "x", "X", 100), ("L", "j", "B", 89), ("L", "k", "C", 90), ("R", "j", "b", 89)]
    run = Run(records, join="left")
    assert run.results == [("j", "B-null", 89, 1), ("j", "B-b", 89, 3)]


def test_closed_window_check_uses_the_clamped_range_end():
    # after -5: D@0 has range end max(0, -5) = 0, not < stream time 0: held (unclamped it would go at once);
    # X@1 flushes it (0 - 5 + 0 < 1) and, range end 0 < 1, is emitted at once itself
    records = [("L", "j", "D", 0), ("L", "x", "X", 1)]
    run = Run(records, join="left", before=10, after=-5)
    assert run.results == [("j", "D-null", 0, 1), ("x", "X-null", 1, 1)]


def test_right_side_of_a_left_join_never_emits_its_own_unjoined_records():
    records = [("R", "k", "a", 10), ("L", "j", "B", 100), ("R", "x", "c", 200)]
    assert Run(records, join="left").values == ["B-null"]


def test_out_of_order_record_does_not_trigger_the_scan():
    # stream time 50: the record at 45 (not == stream time) runs no scan, A stays held
    records = [("L", "k", "A", 10), ("R", "x", "y", 50), ("L", "k", "B", 30)]
    run = Run(records, join="left", before=100, after=100)
    assert run.values == []


def test_outer_store_flush_order_is_ts_then_right_before_left_then_key_bytes():
    records = [("L", "b", "B", 10), ("R", "r", "r", 10), ("L", "a", "A", 10), ("L", "Z", "Z", 10), ("L", "x", "X", 5),
               ("R", "y", "y", 100)]
    run = Run(records, join="outer")
    assert run.results == [("x", "X-null", 5, 5), ("r", "null-r", 10, 5), ("Z", "Z-null", 10, 5),
                           ("a", "A-null", 10, 5), ("b", "B-null", 10, 5)]


def test_seed_rows_of_the_fix_flush_one_row_later_than_the_kip_table():
    records = [("L", "k", "E", 40), ("L", "k", "F", 60), ("R", "k", "f", 80), ("L", "k", "G", 100),
               ("L", "j", "x", 101), ("L", "j", "y", 121)]
    run = Run(records, join="outer", before=15, after=15, grace=5, explain=True)
    # x@101 is still open at 121 (101 + 15 + 5 >= 121)
    assert run.results == [("k", "E-null", 40, 2), ("k", "F-null", 60, 3), ("k", "null-f", 80, 4),
                           ("k", "G-null", 100, 5)]
    assert run.outputs[0].why.text == "unjoined left E@40 flushed: stream time 80 > 40 + after 15 + grace 5"
    assert run.outputs[0].why.joined[0].input_index == 0


# --- the emission scan per release ------------------------------------------------------------------

@pytest.mark.parametrize("release,emitted", [("3.1", True), ("3.2", False), ("3.7", False), ("3.8", True), ("3.9", True)])
def test_early_exit_bound_per_release(release, emitted):
    # before 100, after 0: A@0 held (range end 0 is not < stream time 0); B@50 scans.
    # 3.1.0 exits early iff minTime >= ST - after - grace (0 >= 50: no) -> flush;
    # 3.1.1-3.7 use the before bound (0 >= 50 - 100: yes) -> no scan (KAFKA-13721);
    # 3.8+ exit iff minTime + after + grace >= ST (0 >= 50: no) -> flush.
    records = [("L", "a", "A", 0), ("L", "b", "B", 50)]
    run = Run(records, join="left", before=100, after=0, release=release)
    assert (("a", "A-null", 0, 1) in run.results) == emitted


def test_scan_before_3_8_stops_at_the_first_entry_with_ts_plus_after_plus_grace_equal_to_stream_time():
    # C@15: A@0 is closed (10 < 15), B@5 is not (5 + 10 >= 15): the walk stops there
    records = [("L", "a", "A", 0), ("L", "b", "B", 5), ("L", "c", "C", 15)]
    assert Run(records, join="left", release="3.7").results == [("a", "A-null", 0, 2)]


def test_early_exit_of_3_8_includes_equality():
    # minTime 0 + after 10 >= stream time 10: B@10 runs no scan and leaves the 1000 ms throttle armed
    # until 1000 only, so C@11 at wall clock 1500 may flush A
    records = [("L", "a", "A", 0), ("L", "b", "B", 10), ("L", "c", "C", 11)]
    run = Run(records, join="left", release="3.8", emit_interval=1000, wall_clock=[0, 1000, 1500])
    assert run.results == [("a", "A-null", 0, 2)]


@pytest.mark.parametrize("release,results", [
    # 3.1-3.7: the right processor judges every entry by its own after bound (window before 2): Y@4 goes
    # although a left record's window is open until 4 + 20 = 24
    ("3.7", [("x", "X-null", 0, 3), ("y", "Y-null", 4, 3), ("r", "null-r", 5, 3)]),
    # 3.8+: per-side look-back: Y@4 is open (left: after 20) and skipped, r@5 (right: before 2) is flushed
    ("3.8", [("x", "X-null", 0, 3), ("r", "null-r", 5, 3)]),
])
def test_scan_continues_past_open_entries_since_3_8(release, results):
    # before 2, after 20: left entries stay open 20 ms, right entries 2 ms
    records = [("L", "x", "X", 0), ("L", "y", "Y", 4), ("R", "r", "r", 5), ("R", "s", "s", 23)]
    run = Run(records, join="outer", before=2, after=20, release=release)
    assert run.results == results


@pytest.mark.parametrize("release,results", [
    ("3.7", [("x", "x-null", 0, 3), ("y", "y-null", 5, 4), ("z", "z-null", 8, 5)]),
    ("3.8", [("x", "x-null", 0, 3), ("y", "y-null", 5, 5), ("z", "z-null", 8, 5)]),
])
def test_min_time_quirk_of_3_8_delays_left_join_flushes(release, results):
    # the digest's example: 3.8+ leaves minTime at the largest remaining ts after a left-join scan
    records = [("L", key, key, ts) for key, ts in [("x", 0), ("y", 5), ("z", 8), ("a", 11), ("b", 16), ("c", 19)]]
    run = Run(records, join="left", before=10, after=10, release=release)
    assert run.results == results


def test_empty_scan_consumes_the_throttle_only_since_3_8():
    # 3.8+: minTime = Long.MAX_VALUE + after overflows, so the first record scans the empty store and
    # arms the 1000 ms throttle against the frozen clock; 3.7 exits early and still flushes A later
    records = [("L", "a", "A", 0), ("L", "b", "B", 100)]
    assert Run(records, join="left", emit_interval=1000, release="3.7").values == ["A-null"]
    assert Run(records, join="left", emit_interval=1000, release="3.8").values == []


def test_throttle_with_a_frozen_clock_allows_one_scan():
    records = [("L", "a", "A", 0), ("L", "b", "B", 100), ("L", "c", "C", 200), ("L", "d", "D", 300)]
    assert Run(records, join="left", emit_interval=1000, release="3.7").values == ["A-null"]
    assert Run(records, join="left", emit_interval=0, release="3.7").values == ["A-null", "B-null", "C-null"]


@pytest.mark.parametrize("release,flushed", [("3.4", ["A-null", "B-null", "C-null"]), ("3.5", ["A-null", "B-null"])])
def test_throttle_rearms_from_now_since_3_5(release, flushed):
    # interval 1000; scans at wall clock 5000, 10000, 10500. Before KAFKA-13817 the next emit time
    # moves on from its previous value (6000 -> 7000), since 3.5 from now (11000 blocks the third scan)
    records = [("L", "a", "A", 0), ("L", "b", "B", 100), ("L", "c", "C", 200), ("L", "d", "D", 300)]
    run = Run(records, join="left", emit_interval=1000, wall_clock=[0, 5000, 10000, 10500], release=release)
    assert run.values == flushed


# --- the shared clock ------------------------------------------------------------------------------

@pytest.mark.parametrize("release,results", [
    ("3.4", [("c", "C-null", 50, 2)]),  # one clock for the instance: partition 1's ts 100 closes C's window
    ("3.4.1", [("a", "A-null", 0, 2)]),  # one clock per task: partition 0 is at 50, scans, holds C
])
def test_time_tracker_is_shared_by_all_tasks_until_3_4_1(release, results):
    records = [("L", "a", "A", 0, 0), ("L", "b", "B", 100, 1), ("L", "c", "C", 50, 0)]
    assert Run(records, join="left", partitions=2, release=release).results == results


@pytest.mark.parametrize("release,results", [
    ("3.6", [("a", "A-null", 0, 2)]),  # the null-value record did not move stream time: B@20 scans, B held
    ("3.7", [("b", "B-null", 20, 2)]),  # it did (KIP-962): B@20 is late, runs no scan, and is emitted at once
])
def test_dropped_records_advance_stream_time_since_3_7(release, results):
    records = [("L", "a", "A", 0), ("R", "x", None, 100), ("L", "b", "B", 20)]
    assert Run(records, join="left", release=release).results == results


def test_null_key_advances_stream_time_since_3_7():
    records = [("L", "a", "A", 0), ("R", None, "n", 100), ("L", "b", "B", 20)]
    assert Run(records, join="left", release="3.7").results == [("b", "B-null", 20, 2)]
    assert Run(records, join="left", release="3.6").results == [("a", "A-null", 0, 2)]


# --- nulls --------------------------------------------------------------------------------------

def test_null_values_were_joined_before_kip77():
    records = [("L", "k", "A", 1), ("R", "k", None, 2), ("L", "k", None, 3)]
    run = Run(records, api="legacy", grace=None, release="0.10.1")
    assert run.results == [("k", "A-null", 2, 1)]  # null-valued records are never stored
    run = Run(records, join="outer", api="legacy", grace=None, release="0.10.1")
    assert run.values == ["A-null", "A-null", "null-null"]


def test_null_values_are_dropped_since_kip77():
    records = [("L", "k", "A", 1), ("R", "k", None, 2), ("L", "k", None, 3)]
    run = Run(records, join="outer", api="legacy", grace=None, release="0.10.2")
    assert run.values == ["A-null"]
    assert run.dropped() == [(1, DropReason.NULL_VALUE), (2, DropReason.NULL_VALUE)]


@pytest.mark.parametrize("join", ["inner", "left", "outer"])
def test_null_keys_never_reach_the_join_before_3_7(join):
    records = [("L", None, "A", 1), ("R", None, "a", 1)]
    run = Run(records, join=join, release="3.6")
    assert run.results == []
    assert run.dropped() == [(0, DropReason.NULL_KEY), (1, DropReason.NULL_KEY)]


@pytest.mark.parametrize("join,results", [
    ("inner", []),
    ("left", [(None, "A-null", 1, 0)]),
    ("outer", [(None, "A-null", 1, 0), (None, "null-a", 2, 1)]),
])
def test_outer_sides_emit_null_key_records_at_once_since_3_7(join, results):
    records = [("L", None, "A", 1), ("R", None, "a", 2), ("L", None, None, 3)]
    for api, grace in (("time_difference", 0), ("legacy", None)):
        run = Run(records, join=join, api=api, grace=grace, release="3.7")
        assert run.results == results
        assert (2, DropReason.NULL_KEY) in run.dropped()


def test_one_sided_left_join_of_0_10_0_fails_on_a_null_key():
    with pytest.raises(KafkaWouldFail) as info:
        Run([("L", None, "A", 1)], join="left", api="legacy", grace=None, release="0.10.0")
    assert info.value.code is FailureCode.STREAM_JOIN_NULL_KEY and info.value.input_index == 0
    run = Run([("L", None, "A", 1)], join="left", api="legacy", grace=None, release="0.10.1")
    assert run.results == [] and run.dropped() == [(0, DropReason.NULL_KEY)]


# --- stores: rocksdb vs in-memory, per release ----------------------------------------------------

@pytest.mark.parametrize("store,joined", [("rocksdb", True), ("in_memory", False)])
def test_a_null_value_moves_only_the_in_memory_store_clock(store, joined):
    # retention 20; the null left record at 100 hides A@5 in memory, not in RocksDB (KAFKA-9921)
    records = [("L", "k", "A", 5), ("L", "k", None, 100), ("R", "k", "a", 10)]
    assert (Run(records, store=store).values == ["A-a"]) == joined


@pytest.mark.parametrize("release,store,values,dropped", [
    ("3.3", "rocksdb", ["B-b"], []),  # segment-granular: B@50 is stored and found
    ("3.4", "rocksdb", [], []),  # stored, but hidden: 50 < 100 - 20 + 1 (KAFKA-12960)
    ("3.9", "in_memory", [], [(1, DropReason.EXPIRED_WINDOW_PUT)]),  # 50 <= 100 - 20: not even stored
])
def test_late_record_visibility_per_store(release, store, values, dropped):
    records = [("L", "x", "X", 100), ("L", "k", "B", 50), ("R", "k", "b", 55)]
    run = Run(records, release=release, store=store)
    assert run.values == values
    assert run.dropped() == dropped


def test_expired_put_is_still_joined_first():
    records = [("R", "k", "a", 45), ("L", "x", "X", 100), ("L", "k", "B", 50)]
    run = Run(records, store="in_memory", explain=True)
    assert run.values == ["B-a"]
    assert run.dropped() == [(2, DropReason.EXPIRED_WINDOW_PUT)]
    assert "50 <= observed 100 - retention 20" in run.drops[0].why.text


def test_rocksdb_expired_put_drops_a_whole_segment():
    records = [("L", "x", "X", 2 * SEG), ("L", "k", "B", SEG - 1), ("L", "k", "C", SEG), ("R", "k", "c", SEG + 1)]
    run = Run(records, release="3.3")
    assert run.dropped() == [(1, DropReason.EXPIRED_WINDOW_PUT)]
    assert run.values == ["C-c"]


def test_rocksdb_null_put_expired_segments_before_2_5_1():
    records = [("L", "k", "A", 5), ("L", "x", None, 2 * SEG), ("R", "k", "a", 10)]
    assert Run(records, release="2.5", api="legacy", grace=0).values == []
    assert Run(records, release="2.5.1", api="legacy", grace=0).values == ["A-a"]


@pytest.mark.parametrize("newest,values", [(2 * HALF_DAY, ["A-a"]), (3 * HALF_DAY - 1, ["A-a"]), (3 * HALF_DAY, [])])
def test_rocksdb_before_2_1_keeps_the_three_newest_half_day_segments(newest, values):
    # 1-day retention: 12 h segments; A@5 lives in segment 0 until segment 3 is created
    records = [("L", "k", "A", 5), ("L", "x", "X", newest), ("R", "k", "a", 10)]
    assert Run(records, release="2.0", api="legacy", grace=None).values == values


@pytest.mark.parametrize("release,values", [("2.1", ["A-a"]), ("2.2", ["A-a", "A-b"])])
def test_rocksdb_2_1_expired_by_task_stream_time(release, values):
    # the right record at 120 000 moves the task's stream time; the next left put deletes segment 0 in 2.1
    records = [("L", "k", "A", 5), ("R", "x", "x", 2 * SEG), ("R", "k", "a", 10), ("L", "y", "Y", 6),
               ("R", "k", "b", 10)]
    assert Run(records, release=release, api="legacy", grace=0).values == values


def test_in_memory_stores_need_stream_joined():
    with pytest.raises(TopologyError):
        Run([("L", "k", "A", 1)], release="2.3", store="in_memory", api="legacy", grace=0)
    assert Run([("L", "k", "A", 1)], release="2.4", store="in_memory", api="legacy", grace=0).values == []


# --- window settings ---------------------------------------------------------------------------

@pytest.mark.parametrize("release,before,after,grace,retention", [
    ("1.1", 10, 5, None, DAY_MS),  # JoinWindows#maintainMs: 1 day
    ("2.1", 10, 5, None, DAY_MS),  # grace = 24 h - 15, retention = 15 + grace
    ("3.9", 10, 5, None, DAY_MS),
    ("3.9", DAY_MS, 5, None, DAY_MS + 5),  # grace max(24 h - size, 0) = 0
    ("3.9", 10, 5, 7, 22),
])
def test_store_retention_is_before_plus_after_plus_grace(release, before, after, grace, retention):
    spec = spec_of(before=before, after=after, grace=grace, api="legacy")
    task = build(spec, profile_for(release), RunConfig(), {})
    assert task.left_store.retention_ms == task.right_store.retention_ms == retention
    assert task.right_store.window_size_ms == before + after


def test_windows_of_a_day_did_not_fit_the_legacy_retention():
    fits = spec_of(before=DAY_MS // 2, after=DAY_MS // 2 - 1, grace=None, api="legacy")
    assert join_settings(fits, profile_for("2.0")).retention_ms == DAY_MS
    check_topology(fits, profile_for("2.0"))
    too_big = spec_of(before=DAY_MS // 2, after=DAY_MS // 2, grace=None, api="legacy")
    with pytest.raises(TopologyError):
        check_topology(too_big, profile_for("2.0"))
    check_topology(too_big, profile_for("2.1"))  # grace() replaced maintainMs in 2.1


def test_time_difference_grace_is_used_as_given():
    settings = join_settings(spec_of(before=10, after=5, grace=3), profile_for("3.1"))
    assert (settings.grace_ms, settings.retention_ms, settings.spurious_result_fix) == (3, 18, True)


# --- explanations and drops --------------------------------------------------------------------------

def test_every_result_is_explained_with_the_stored_records_it_used():
    records = [("R", "k", "a", 4), ("L", "k", "A", 3), ("L", "j", "B", 3), ("L", "k", None, 5), ("R", None, "c", 5),
               ("R", "x", "x", 100)]
    run = Run(records, join="left", before=5, after=5, explain=True)
    assert run.results == [("k", "A-a", 4, 1), ("j", "B-null", 3, 5)]
    match, flush = run.outputs
    assert match.why.rule == "inner_match"
    assert match.why.text.startswith("left A@3 joins right a@4: 4 in [0, 8] = [3 - before 5, 3 + after 5] (clamped at 0)")
    assert [(s.side, s.value, s.ts, s.input_index) for s in match.why.joined] == [("right", "a", 4, 0)]
    assert flush.why.rule == "outer_flush"
    assert [(s.side, s.value, s.input_index) for s in flush.why.joined] == [("left", "B", 2)]
    assert run.dropped() == [(3, DropReason.NULL_VALUE), (4, DropReason.NULL_KEY)]
    assert all(d.why is not None and d.why.text for d in run.drops)


def test_no_explanations_unless_asked():
    run = Run([("R", "k", "a", 4), ("L", "k", "A", 3)])
    assert run.outputs[0].why is None
