"""The Spark backend's KStream-KStream join, rule by rule at its boundaries and release switches.

Every case below is declared at module level and the whole set runs as one Spark batch (one
session, a few jobs), so each test only reads its case's result. Records are written
``(side, key, value, ts[, partition])`` with side "L"/"R"; results ``(key, value, ts, input)``
with the concat joiner ("A-a", "A-null"). Each expectation is derived in the comment above it
from the Kafka rule it pins. The 415 conformance files of the operator are run here too.
"""
from __future__ import annotations

import os

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all, result_bytes

from kssim.reference.model.codes import FailureCode
from kssim.reference.model.scenario import scenario_from_dict
from kssim.spark_backend.joins import stream_stream_outer as outer
from kssim.spark_backend.joins import stream_stream_settings as settings

SEG = 60_000  # RocksDB's minimum segment interval
DAY = 24 * 60 * 60 * 1000
HALF_DAY = DAY // 2  # the segment interval of a 1-day retention

CASES = {}


def case(name, records, *, release="3.9", join="inner", before=10, after=10, grace=0, api="time_difference",
         store="rocksdb", partitions=1, order="as_listed", emit_interval=0):
    """Declare a scenario (run with every other one in one batch); returns its name."""
    inputs = []
    for rec in records:
        side, key, value, ts = rec[:4]
        item = {"topic": "left" if side == "L" else "right", "key": key, "value": value, "ts": ts}
        if len(rec) > 4:
            item["partition"] = rec[4]
        inputs.append(item)
    config = {"order": order, "store": store, "emit_interval_ms": emit_interval}
    if partitions > 1:
        config["partitions"] = {"left": partitions, "right": partitions}
    doc = {"format": "kssim-scenario/1", "name": name, "semantics": release, "config": config, "inputs": inputs,
           "topology": {"operator": "stream_stream_join", "join": join, "window_api": api, "joiner": "concat",
                        "joiner_separator": "-",
                        "window": {"before_ms": before, "after_ms": after, "grace_ms": grace}}}
    assert name not in CASES
    CASES[name] = scenario_from_dict(doc)
    return name


FILES = conformance_files("stream_stream_join")


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    names = list(CASES)
    scenarios = [CASES[n] for n in names] + load_all(FILES)
    out = run_scenarios(scenarios, spark)
    return dict(zip(names + FILES, zip(scenarios, out)))


def run(results, name):
    scenario, result = results[name]
    assert not isinstance(result, Exception), result
    return result


def outs(results, name):
    return [(o.key, o.value, o.ts, o.input_index) for o in run(results, name).outputs]


def values(results, name):
    return [o.value for o in run(results, name).outputs]


def dropped(results, name):
    return [(d.input_index, str(d.reason)) for d in run(results, name).drops]


# --- lookup ranges (KStreamKStreamJoin: [max(0, t - joinBefore), max(0, t + joinAfter)]) ----------

# left processor, before 13 / after 3: A@100 looks up right records in [87, 103]
LEFT_RANGE = case("left-range", [("R", "k", "early", 86), ("R", "k", "lo", 87), ("R", "k", "hi", 103),
                                 ("R", "k", "late", 104), ("L", "k", "A", 100)], before=13, after=3, grace=100)
# right processor, bounds swapped since KAFKA-4153: a@100 looks up left records in [97, 113]
RIGHT_RANGE = case("right-range", [("L", "k", "early", 96), ("L", "k", "lo", 97), ("L", "k", "hi", 113),
                                   ("L", "k", "late", 114), ("R", "k", "a", 100)], before=13, after=3, grace=100)
UNSWAPPED = {rel: case(f"unswapped-{rel}", [("L", "k", "lo", 87), ("L", "k", "in", 97), ("L", "k", "hi", 103),
                                           ("L", "k", "far", 113), ("R", "k", "a", 100)],
                       release=rel, api="legacy", grace=None, before=13, after=3) for rel in ("0.10.0", "0.10.1")}


def test_left_record_looks_up_t_minus_before_to_t_plus_after_inclusive(results):
    assert outs(results, LEFT_RANGE) == [("k", "A-lo", 100, 4), ("k", "A-hi", 103, 4)]


def test_right_record_looks_up_t_minus_after_to_t_plus_before_inclusive(results):
    assert values(results, RIGHT_RANGE) == ["lo-a", "hi-a"]


def test_right_processor_used_the_left_bounds_until_0_10_1(results):
    # 0.10.0: [100 - 13, 100 + 3]; 0.10.1: [100 - 3, 100 + 13]; results carry the trigger's ts
    assert outs(results, UNSWAPPED["0.10.0"]) == [("k", "lo-a", 100, 4), ("k", "in-a", 100, 4), ("k", "hi-a", 100, 4)]
    assert values(results, UNSWAPPED["0.10.1"]) == ["in-a", "hi-a", "far-a"]


# range start clamped at 0: A@5 with before 10 looks up [0, 15]
CLAMP_START = case("clamp-start", [("R", "k", "a", 0), ("L", "k", "A", 5)])
# after -5: the range end max(0, t - 5) is 0 for t <= 5, so R@0 is found by L@3 and L@5; R@1 looks
# up left records in [1 + 5, 1 + 10] and finds none
CLAMP_END = case("clamp-end", [("R", "k", "zero", 0), ("L", "k", "A", 3), ("L", "k", "B", 5), ("R", "k", "one", 1)],
                 before=10, after=-5)


def test_range_start_is_clamped_at_zero(results):
    assert outs(results, CLAMP_START) == [("k", "A-a", 5, 1)]


def test_range_end_is_clamped_at_zero(results):
    assert outs(results, CLAMP_END) == [("k", "A-zero", 3, 1), ("k", "B-zero", 5, 2)]


# keys join by JSON equality: the string "1" and true are not the integer 1
KEY_TYPES = case("key-types", [("L", "k", "A", 1), ("R", "k2", "a", 1), ("R", 1, "b", 1), ("R", "1", "s", 1),
                               ("L", True, "B", 1), ("L", 1, "C", 1)])


def test_keys_must_be_equal_json_values(results):
    assert values(results, KEY_TYPES) == ["C-b"]


# --- matches: fetch order and timestamps ----------------------------------------------------------

# the window store iterates by ts, then by insertion (the duplicate-retaining sequence number)
MATCH_ORDER = case("match-order", [("R", "k", "c", 7), ("R", "k", "a", 5), ("R", "k", "d", 7), ("R", "k", "b", 5),
                                   ("L", "k", "A", 6)])
TS_OF = {rel: case(f"ts-{rel}", [("L", "k", "A", 10), ("R", "k", "a", 4), ("R", "k", "b", 15)], release=rel,
                   api="legacy", grace=None) for rel in ("2.2", "2.3")}


def test_matches_come_in_ts_order_then_arrival_order(results):
    assert outs(results, MATCH_ORDER) == [("k", "A-a", 6, 4), ("k", "A-b", 6, 4), ("k", "A-c", 7, 4),
                                          ("k", "A-d", 7, 4)]


def test_output_ts_is_the_max_of_both_since_2_3(results):
    # KAFKA-6455: before 2.3 the triggering record's ts (a@4 joins A@10 at 4)
    assert outs(results, TS_OF["2.3"]) == [("k", "A-a", 10, 1), ("k", "A-b", 15, 2)]
    assert outs(results, TS_OF["2.2"]) == [("k", "A-a", 4, 1), ("k", "A-b", 15, 2)]


# --- window stores: retention, visibility, expired puts --------------------------------------------

# window 10/10, no grace: retention 20. X@100 moves the left store's clock to 100; B@50 is then
#  - RocksDB 3.3: stored (segment 0 is live: 0 >= segmentId(100 - 20)) and found by b@55;
#  - RocksDB 3.4+: stored but hidden (KAFKA-12960: a fetch starts at 100 - 20 + 1 = 81);
#  - in memory: not stored (50 <= 100 - 20), an expired put.
HIDDEN = {(rel, store): case(f"hidden-{rel}-{store}", [("L", "x", "X", 100), ("L", "k", "B", 50), ("R", "k", "b", 55)],
                             release=rel, store=store)
          for rel, store in (("3.3", "rocksdb"), ("3.4", "rocksdb"), ("3.9", "in_memory"))}
# window 0, no grace: retention 0 hides even an equal-ts record since 3.4 (fetch from clock + 1);
# in memory every put is expired (ts <= clock - 0)
ZERO_RETENTION = {(rel, store): case(f"zero-{rel}-{store}", [("L", "k", "A", 10), ("R", "k", "a", 10)], release=rel,
                                     store=store, before=0, after=0)
                  for rel, store in (("3.3", "rocksdb"), ("3.4", "rocksdb"), ("3.9", "in_memory"))}
# the expired put is still joined first: B@50 finds a@45 (right clock 45: fetch from 26)
EXPIRED_BUT_JOINED = case("expired-joined", [("R", "k", "a", 45), ("L", "x", "X", 100), ("L", "k", "B", 50)],
                          store="in_memory")


@pytest.mark.parametrize("release,store,joined,drops", [
    ("3.3", "rocksdb", ["B-b"], []), ("3.4", "rocksdb", [], []), ("3.9", "in_memory", [], [(1, "expired_window_put")])])
def test_late_record_visibility_per_store_and_release(results, release, store, joined, drops):
    assert values(results, HIDDEN[(release, store)]) == joined
    assert dropped(results, HIDDEN[(release, store)]) == drops


@pytest.mark.parametrize("release,store,joined", [("3.3", "rocksdb", True), ("3.4", "rocksdb", False),
                                                  ("3.9", "in_memory", False)])
def test_zero_retention_store(results, release, store, joined):
    assert (values(results, ZERO_RETENTION[(release, store)]) == ["A-a"]) == joined
    expected_drops = [(0, "expired_window_put"), (1, "expired_window_put")] if store == "in_memory" else []
    assert dropped(results, ZERO_RETENTION[(release, store)]) == expected_drops


def test_expired_put_is_still_joined(results):
    assert values(results, EXPIRED_BUT_JOINED) == ["B-a"]
    assert dropped(results, EXPIRED_BUT_JOINED) == [(2, "expired_window_put")]


# retention 20: a null-value put moves an in-memory store's clock to 100 (A@5 hidden), but is a
# no-op for RocksDB since KAFKA-9921 (2.5.1)
NULL_PUT = {store: case(f"null-put-{store}", [("L", "k", "A", 5), ("L", "k", None, 100), ("R", "k", "a", 10)],
                        store=store) for store in ("rocksdb", "in_memory")}
# before 2.5.1 the RocksDB null put at 120 000 still advanced the clock: segment 0 is dead
# (segmentId(120000 - 20) = 1), so a@10 cannot find A@5
NULL_PUT_SEGMENT = {rel: case(f"null-put-segment-{rel}", [("L", "k", "A", 5), ("L", "x", None, 2 * SEG),
                                                         ("R", "k", "a", 10)], release=rel, api="legacy")
                    for rel in ("2.5", "2.5.1")}


@pytest.mark.parametrize("store,joined", [("rocksdb", True), ("in_memory", False)])
def test_a_null_value_moves_only_the_in_memory_store_clock(results, store, joined):
    assert (values(results, NULL_PUT[store]) == ["A-a"]) == joined
    assert dropped(results, NULL_PUT[store]) == [(1, "null_value")]


def test_rocksdb_null_put_expired_segments_before_2_5_1(results):
    assert values(results, NULL_PUT_SEGMENT["2.5"]) == []
    assert values(results, NULL_PUT_SEGMENT["2.5.1"]) == ["A-a"]


# before 2.1 a RocksDB window store keeps the 3 newest segments (1-day retention: 12 h segments);
# A@5 (segment 0) lives until a put lands in segment 3
NEWEST_SEGMENTS = {newest: case(f"newest-{newest}", [("L", "k", "A", 5), ("L", "x", "X", newest), ("R", "k", "a", 10)],
                                release="2.0", api="legacy", grace=None)
                   for newest in (2 * HALF_DAY, 3 * HALF_DAY - 1, 3 * HALF_DAY)}


# a put into segment 0 once segment 3 exists is rejected; segment 1 is still live
OLD_SEGMENT_PUT = case("old-segment-put", [("L", "x", "X", 3 * HALF_DAY), ("L", "k", "A", 5), ("L", "k", "B", HALF_DAY),
                                           ("R", "k", "b", HALF_DAY + 1)], release="2.0", api="legacy", grace=None)


@pytest.mark.parametrize("newest,joined", [(2 * HALF_DAY, True), (3 * HALF_DAY - 1, True), (3 * HALF_DAY, False)])
def test_rocksdb_before_2_1_keeps_the_three_newest_segments(results, newest, joined):
    assert (values(results, NEWEST_SEGMENTS[newest]) == ["A-a"]) == joined


def test_rocksdb_before_2_1_rejects_puts_older_than_the_three_newest_segments(results):
    assert values(results, OLD_SEGMENT_PUT) == ["B-b"]
    assert dropped(results, OLD_SEGMENT_PUT) == [(1, "expired_window_put")]


# 2.1 expired segments by the task's stream time at the store's put: x@120000 (right) moves the
# task's time; the left put Y@6 then kills segment 0 (and is itself rejected), so b@10 misses A@5,
# which a@10 (before Y's put) still found. 2.2+ use the store's own clock (KAFKA-7895): the left
# store's is 6. The right puts a@10 and b@10 land in a segment dead since x@120000 in both.
TASK_TIME = {rel: case(f"task-time-{rel}", [("L", "k", "A", 5), ("R", "x", "x", 2 * SEG), ("R", "k", "a", 10),
                                           ("L", "y", "Y", 6), ("R", "k", "b", 10)], release=rel, api="legacy")
             for rel in ("2.1", "2.2")}


def test_rocksdb_2_1_expired_by_the_tasks_stream_time(results):
    assert values(results, TASK_TIME["2.1"]) == ["A-a"]
    assert dropped(results, TASK_TIME["2.1"]) == [(2, "expired_window_put"), (3, "expired_window_put"),
                                                  (4, "expired_window_put")]
    assert values(results, TASK_TIME["2.2"]) == ["A-a", "A-b"]
    assert dropped(results, TASK_TIME["2.2"]) == [(2, "expired_window_put"), (4, "expired_window_put")]


# 0.10.2 (Segments#minSegmentId, fixed in 0.11.0.1): a fetch never reads segments older than the
# first one the store created. X@12h creates segment 1 first; A@5 goes into segment 0 (still live:
# 0 > 1 - 3) but stays invisible to a@10
FIRST_SEGMENT = {rel: case(f"first-segment-{rel}", [("L", "x", "X", HALF_DAY), ("L", "k", "A", 5), ("R", "k", "a", 10)],
                           release=rel, api="legacy", grace=None) for rel in ("0.10.2", "0.11.0")}


def test_0_10_2_fetches_skip_segments_older_than_the_first(results):
    assert values(results, FIRST_SEGMENT["0.10.2"]) == []
    assert outs(results, FIRST_SEGMENT["0.11.0"]) == [("k", "A-a", 10, 2)]


# RocksDB 3.3: X@2 SEG kills segment 0, so B@SEG-1 is rejected as a put (and would be hidden);
# C@SEG (segment 1) is stored and found by c@SEG+1
SEGMENT_PUT = case("segment-put", [("L", "x", "X", 2 * SEG), ("L", "k", "B", SEG - 1), ("L", "k", "C", SEG),
                                   ("R", "k", "c", SEG + 1)], release="3.3")


def test_rocksdb_rejects_a_put_into_a_dead_segment(results):
    assert values(results, SEGMENT_PUT) == ["C-c"]
    assert dropped(results, SEGMENT_PUT) == [(1, "expired_window_put")]


# --- eager left/outer results (before 3.1, and JoinWindows.of since) -------------------------------

EAGER_LEFT = {rel: case(f"eager-left-{rel}", [("L", "k", "A", 3), ("R", "k", "a", 4), ("R", "j", "x", 5)], join="left",
                        api="legacy", grace=None, release=rel) for rel in ("0.10.2", "2.8", "3.9")}
EAGER_OUTER = case("eager-outer", [("R", "k", "a", 3), ("L", "k", "A", 4), ("L", "j", "B", 9)], join="outer",
                   api="legacy", grace=None)
EAGER_WITH_GRACE = case("eager-with-grace", [("L", "k", "A", 3)], join="left", api="legacy", grace=5)


@pytest.mark.parametrize("release", ["0.10.2", "2.8", "3.9"])
def test_legacy_left_join_emits_unmatched_records_at_once(results, release):
    assert outs(results, EAGER_LEFT[release]) == [("k", "A-null", 3, 0), ("k", "A-a", 4, 1)]


def test_legacy_outer_join_emits_both_sides_at_once(results):
    assert outs(results, EAGER_OUTER) == [("k", "null-a", 3, 0), ("k", "A-a", 4, 1), ("j", "B-null", 9, 2)]
    assert outs(results, EAGER_WITH_GRACE) == [("k", "A-null", 3, 0)]


# before KIP-77 leftJoin had one processor: right records are only stored, left ones only look up
# (a null right record is only a no-op delete there: ignored, a null_value drop)
ONE_SIDED = {rel: case(f"one-sided-{rel}", [("R", "k", "a", 1), ("L", "k", "A", 2), ("R", "k", "b", 3),
                                           ("L", "k", "B", 4), ("L", "j", "C", 5), ("R", "k", None, 6)],
                       join="left", api="legacy", grace=None, release=rel) for rel in ("0.10.1", "0.10.2")}


def test_before_kip77_the_left_join_was_triggered_by_left_records_only(results):
    assert values(results, ONE_SIDED["0.10.1"]) == ["A-a", "B-a", "B-b", "C-null"]
    assert values(results, ONE_SIDED["0.10.2"]) == ["A-a", "A-b", "B-a", "B-b", "C-null"]
    assert dropped(results, ONE_SIDED["0.10.1"]) == dropped(results, ONE_SIDED["0.10.2"]) == [(5, "null_value")]


# --- the spurious-result fix (3.1+, ofTimeDifference*) ---------------------------------------------

# A@10, after 10, grace 5: open while stream time <= 25; c@26 flushes it (at A's own ts)
FLUSH_EDGE = case("flush-edge", [("L", "k", "A", 10), ("L", "j", "B", 25), ("R", "x", "c", 26)], join="left", grace=5)
# b@19 exits early (minTime 10 + 10 >= 19); B@21 flushes A, then joins b: the flush comes first
FLUSH_FIRST = case("flush-first", [("L", "k", "A", 10), ("R", "j", "b", 19), ("L", "j", "B", 21)], join="left")
LATE_PARTNER = case("late-partner", [("L", "k", "A", 10), ("R", "k", "a", 20), ("L", "j", "B", 100)], join="left")
# one outer entry per (ts, side, key): a match deletes all its values
SAME_TS_DELETED = case("same-ts-deleted", [("L", "k", "A1", 10), ("L", "k", "A2", 10), ("R", "k", "a", 12),
                                           ("L", "j", "B", 100)], join="left")
SAME_TS_FLUSHED = case("same-ts-flushed", [("L", "k", "A1", 10), ("L", "k", "A2", 10), ("L", "j", "B", 100)],
                       join="left")


def test_unjoined_record_is_flushed_only_when_stream_time_passes_ts_plus_after_plus_grace(results):
    assert outs(results, FLUSH_EDGE) == [("k", "A-null", 10, 2)]


def test_flush_comes_before_the_triggering_records_own_results(results):
    assert outs(results, FLUSH_FIRST) == [("k", "A-null", 10, 2), ("j", "B-b", 21, 2)]


def test_a_late_partner_removes_the_held_record(results):
    assert outs(results, LATE_PARTNER) == [("k", "A-a", 20, 1)]


def test_a_match_deletes_every_held_value_of_its_ts_and_key(results):
    assert values(results, SAME_TS_DELETED) == ["A1-a", "A2-a"]
    assert outs(results, SAME_TS_FLUSHED) == [("k", "A1-null", 10, 2), ("k", "A2-null", 10, 2)]


# stream time 100: B@89 (89 + 10 < 100) is emitted at once and not held, so its late partner b@89
# still joins it; C@90 (range end 100 is not < 100) is held
CLOSED_AT_ONCE = case("closed-at-once", [("L", "x", "X", 100), ("L", "j", "B", 89), ("L", "k", "C", 90),
                                         ("R", "j", "b", 89)], join="left")
# after -5: D@0 has range end max(0, -5) = 0, not < stream time 0: held; X@1 flushes it (0 - 5 < 1)
# and, range end 0 < 1, is emitted at once itself
CLAMPED_CLOSE = case("clamped-close", [("L", "j", "D", 0), ("L", "x", "X", 1)], join="left", before=10, after=-5)
RIGHT_OF_LEFT_JOIN = case("right-of-left", [("R", "k", "a", 10), ("L", "j", "B", 100), ("R", "x", "c", 200)],
                          join="left")


def test_record_whose_window_already_closed_is_emitted_at_once(results):
    assert outs(results, CLOSED_AT_ONCE) == [("j", "B-null", 89, 1), ("j", "B-b", 89, 3)]


def test_closed_window_check_uses_the_clamped_range_end(results):
    assert outs(results, CLAMPED_CLOSE) == [("j", "D-null", 0, 1), ("x", "X-null", 1, 1)]


def test_right_side_of_a_left_join_never_emits_its_own_unjoined_records(results):
    assert outs(results, RIGHT_OF_LEFT_JOIN) == [("j", "B-null", 100, 2)]


# the outer store iterates by (ts, side byte: right 0 before left 1, key bytes)
STORE_ORDER = case("store-order", [("L", "b", "B", 10), ("R", "r", "r", 10), ("L", "a", "A", 10), ("L", "Z", "Z", 10),
                                   ("L", "x", "X", 5), ("R", "y", "y", 100)], join="outer")
# integer keys serialize as 8-byte big-endian longs: 2 < 10 < -1 (sign bit set) as unsigned bytes
INT_KEY_ORDER = case("int-key-order", [("L", 10, "A", 10), ("L", 2, "B", 10), ("L", -1, "C", 10),
                                       ("L", "y", "Y", 100)], join="left")


def test_outer_store_flush_order_is_ts_then_right_before_left_then_key_bytes(results):
    assert outs(results, STORE_ORDER) == [("x", "X-null", 5, 5), ("r", "null-r", 10, 5), ("Z", "Z-null", 10, 5),
                                          ("a", "A-null", 10, 5), ("b", "B-null", 10, 5)]
    assert outs(results, INT_KEY_ORDER) == [(2, "B-null", 10, 3), (10, "A-null", 10, 3), (-1, "C-null", 10, 3)]


# --- the emission scan per release ------------------------------------------------------------------

# before 100, after 0: A@0 is held (range end 0 is not < 0); at B@50 the scan
#  - 3.1.0 exits early iff minTime 0 >= 50 - after 0 - grace 0: no, and flushes A;
#  - 3.1.1-3.7 exit iff 0 >= 50 - before 100 (KAFKA-13721): yes, A stays;
#  - 3.8+ exit iff 0 + after 0 + grace 0 >= 50: no, and flush A.
EARLY_EXIT = {rel: case(f"early-exit-{rel}", [("L", "a", "A", 0), ("L", "b", "B", 50)], join="left", before=100,
                        after=0, release=rel) for rel in ("3.1", "3.1.1", "3.7", "3.8", "3.9")}


@pytest.mark.parametrize("release,emitted", [("3.1", True), ("3.1.1", False), ("3.7", False), ("3.8", True),
                                             ("3.9", True)])
def test_early_exit_bound_per_release(results, release, emitted):
    assert (outs(results, EARLY_EXIT[release]) == [("a", "A-null", 0, 1)]) == emitted


# before 3.8 the walk stops at the first entry with ts + after + grace >= stream time: C@15 flushes
# A@0 but not B@5 (5 + 10 >= 15)
FIRST_OPEN = case("first-open", [("L", "a", "A", 0), ("L", "b", "B", 5), ("L", "c", "C", 15)], join="left",
                  release="3.7")
# before 2, after 20 (left entries stay open 20 ms, right ones 2 ms). At s@23:
#  - 3.7 judges every entry by the right processor's bound (before 2): X@0, Y@4, r@5 all go;
#  - 3.8+ judge each entry by its own side: Y@4 (left, 4 + 20 >= 23) stays, X@0 and r@5 go.
PER_SIDE = {rel: case(f"per-side-{rel}", [("L", "x", "X", 0), ("L", "y", "Y", 4), ("R", "r", "r", 5),
                                         ("R", "s", "s", 23)], join="outer", before=2, after=20, release=rel)
            for rel in ("3.7", "3.8")}
# the digest's example of the 3.8 minTime overwrite: the scan at a@11 leaves minTime at the largest
# ts it visited (z@8), so b@16 exits early and y@5 comes out together with z@8 at c@19
MIN_TIME = {rel: case(f"min-time-{rel}", [("L", k, k, ts) for k, ts in (("x", 0), ("y", 5), ("z", 8), ("a", 11),
                                                                        ("b", 16), ("c", 19))],
                      join="left", release=rel) for rel in ("3.7", "3.8")}


# 3.8+, before 2 / after 20: at s@11 every entry is open (X@0, Y@11 left; r@10 right), so the walk
# stops at the value after the one that opened the second side: minTime = Y's 11, not r's 10. Then
# t@13 exits early (11 + 2 >= 13) and u@14 flushes r@10 and s@11 together
BOTH_OPEN = case("both-open", [("L", "x", "X", 0), ("R", "r", "r", 10), ("L", "y", "Y", 11), ("R", "s", "s", 11),
                               ("R", "t", "t", 13), ("R", "u", "u", 14)], join="outer", before=2, after=20)


def test_min_time_after_a_walk_that_found_both_sides_open(results):
    assert outs(results, BOTH_OPEN) == [("r", "null-r", 10, 5), ("s", "null-s", 11, 5)]


# 3.1-3.7, before 100 / after 0: B@200's walk emits A@0 and leaves minTime at A's ts (the last
# entry it visited, not Long.MAX_VALUE), so C@250 does not exit early (0 < 250 - 100) and flushes B@200
WALKED_ALL = case("walked-all", [("L", "a", "A", 0), ("L", "b", "B", 200), ("L", "c", "C", 250)], join="left",
                  before=100, after=0, release="3.7")


def test_scan_before_3_8_stops_at_the_first_open_entry(results):
    assert outs(results, FIRST_OPEN) == [("a", "A-null", 0, 2)]


def test_a_walk_that_emptied_the_store_leaves_min_time_at_the_last_entry(results):
    assert outs(results, WALKED_ALL) == [("a", "A-null", 0, 1), ("b", "B-null", 200, 2)]


@pytest.mark.parametrize("release,expected", [
    ("3.7", [("x", "X-null", 0, 3), ("y", "Y-null", 4, 3), ("r", "null-r", 5, 3)]),
    ("3.8", [("x", "X-null", 0, 3), ("r", "null-r", 5, 3)])])
def test_scan_judges_entries_by_their_own_side_since_3_8(results, release, expected):
    assert outs(results, PER_SIDE[release]) == expected


@pytest.mark.parametrize("release,expected", [
    ("3.7", [("x", "x-null", 0, 3), ("y", "y-null", 5, 4), ("z", "z-null", 8, 5)]),
    ("3.8", [("x", "x-null", 0, 3), ("y", "y-null", 5, 5), ("z", "z-null", 8, 5)])])
def test_min_time_overwrite_of_3_8_delays_left_join_flushes(results, release, expected):
    assert outs(results, MIN_TIME[release]) == expected


# emit interval 1000 against a wall clock frozen at 0: one scan per tracker ever passes the
# throttle. 3.7 exits early on the empty store (minTime = Long.MAX_VALUE) and scans at B@100;
# 3.8+ overflow (MAX + after) and spend the throttle on the empty store at A@0
THROTTLE = {(rel, interval): case(f"throttle-{rel}-{interval}", [("L", "a", "A", 0), ("L", "b", "B", 100),
                                                                ("L", "c", "C", 200), ("L", "d", "D", 300)],
                                  join="left", release=rel, emit_interval=interval)
            for rel, interval in (("3.7", 1000), ("3.7", 0), ("3.8", 1000))}


def test_throttle_with_a_frozen_clock(results):
    assert values(results, THROTTLE[("3.7", 1000)]) == ["A-null"]
    assert values(results, THROTTLE[("3.7", 0)]) == ["A-null", "B-null", "C-null"]
    assert values(results, THROTTLE[("3.8", 1000)]) == []


# --- the shared clock ----------------------------------------------------------------------------

# 3.1-3.4.0: one tracker per instance: B@100 (partition 1) moves the clock C@50 (partition 0) sees,
# so C is emitted at once and A is never flushed. 3.4.1+ (KAFKA-14862): per task, C@50 scans
# partition 0's store, flushes A and is held.
SHARED_CLOCK = {rel: case(f"shared-clock-{rel}", [("L", "a", "A", 0, 0), ("L", "b", "B", 100, 1), ("L", "c", "C", 50, 0)],
                          join="left", partitions=2, release=rel) for rel in ("3.4", "3.4.1")}
# the null-valued right record at 100 moves the clock since KIP-962 (3.7): B@20 is then late
DROPPED_CLOCK = {rel: case(f"dropped-clock-{rel}", [("L", "a", "A", 0), ("R", "x", None, 100), ("L", "b", "B", 20)],
                           join="left", release=rel) for rel in ("3.6", "3.7")}
NULL_KEY_CLOCK = case("null-key-clock", [("L", "a", "A", 0), ("R", None, "n", 100), ("L", "b", "B", 20)], join="left",
                      release="3.7")


@pytest.mark.parametrize("release,expected", [("3.4", [("c", "C-null", 50, 2)]), ("3.4.1", [("a", "A-null", 0, 2)])])
def test_time_tracker_is_shared_by_all_tasks_until_3_4_1(results, release, expected):
    assert outs(results, SHARED_CLOCK[release]) == expected
    assert {o.partition for o in run(results, SHARED_CLOCK[release]).outputs} == {0}


def test_dropped_records_advance_stream_time_since_3_7(results):
    assert outs(results, DROPPED_CLOCK["3.6"]) == [("a", "A-null", 0, 2)]
    assert outs(results, DROPPED_CLOCK["3.7"]) == [("b", "B-null", 20, 2)]
    assert outs(results, NULL_KEY_CLOCK) == [("b", "B-null", 20, 2)]
    assert dropped(results, NULL_KEY_CLOCK) == [(1, "null_key")]


# --- nulls ----------------------------------------------------------------------------------------

NULL_VALUES = {(rel, join): case(f"null-values-{rel}-{join}", [("L", "k", "A", 1), ("R", "k", None, 2),
                                                              ("L", "k", None, 3)],
                                 join=join, api="legacy", grace=None, release=rel)
               for rel, join in (("0.10.1", "inner"), ("0.10.1", "outer"), ("0.10.2", "outer"))}
NULL_KEYS_3_6 = {join: case(f"null-keys-3.6-{join}", [("L", None, "A", 1), ("R", None, "a", 1)], join=join,
                            release="3.6") for join in ("inner", "left", "outer")}
NULL_KEYS_3_7 = {(join, api): case(f"null-keys-3.7-{join}-{api}", [("L", None, "A", 1), ("R", None, "a", 2),
                                                                  ("L", None, None, 3)],
                                   join=join, api=api, grace=0 if api == "time_difference" else None, release="3.7")
                 for join in ("inner", "left", "outer") for api in ("time_difference", "legacy")}
NULL_KEY_0_10 = {rel: case(f"null-key-{rel}", [("L", None, "A", 1)], join="left", api="legacy", grace=None, release=rel)
                 for rel in ("0.10.0", "0.10.1")}


def test_null_values_were_joined_before_kip77(results):
    # a null value joins (joiner(A, null) for the right record at 2) but is never stored
    assert outs(results, NULL_VALUES[("0.10.1", "inner")]) == [("k", "A-null", 2, 1)]
    assert values(results, NULL_VALUES[("0.10.1", "outer")]) == ["A-null", "A-null", "null-null"]
    assert dropped(results, NULL_VALUES[("0.10.1", "inner")]) == []


def test_null_values_are_dropped_since_kip77(results):
    assert values(results, NULL_VALUES[("0.10.2", "outer")]) == ["A-null"]
    assert dropped(results, NULL_VALUES[("0.10.2", "outer")]) == [(1, "null_value"), (2, "null_value")]


@pytest.mark.parametrize("join", ["inner", "left", "outer"])
def test_null_keys_never_reach_the_join_before_3_7(results, join):
    assert outs(results, NULL_KEYS_3_6[join]) == []
    assert dropped(results, NULL_KEYS_3_6[join]) == [(0, "null_key"), (1, "null_key")]


@pytest.mark.parametrize("api", ["time_difference", "legacy"])
@pytest.mark.parametrize("join,expected", [
    ("inner", []), ("left", [(None, "A-null", 1, 0)]), ("outer", [(None, "A-null", 1, 0), (None, "null-a", 2, 1)])])
def test_outer_sides_emit_null_key_records_at_once_since_3_7(results, join, api, expected):
    assert outs(results, NULL_KEYS_3_7[(join, api)]) == expected
    assert (2, "null_key") in dropped(results, NULL_KEYS_3_7[(join, api)])


def test_one_sided_left_join_of_0_10_0_fails_on_a_null_key(results):
    failure = run(results, NULL_KEY_0_10["0.10.0"]).failure
    assert failure is not None and failure.input_index == 0
    # the shared code, and with it the reference's message (KStreamKStreamJoin's exception)
    assert failure.code is FailureCode.STREAM_JOIN_NULL_KEY and failure.message == FailureCode.STREAM_JOIN_NULL_KEY.message
    assert run(results, NULL_KEY_0_10["0.10.1"]).failure is None
    assert dropped(results, NULL_KEY_0_10["0.10.1"]) == [(0, "null_key")]


# --- processing order and partitions -----------------------------------------------------------------

# timestamp_sync over two partitions: task 0 takes a@3 before A@5, task 1 B@1 before b@2; each
# result goes to its task's partition
TWO_TASKS = case("two-tasks", [("L", "k", "A", 5, 0), ("L", "k", "B", 1, 1), ("R", "k", "a", 3, 0),
                               ("R", "k", "b", 2, 1)], partitions=2, order="timestamp_sync")


def test_timestamp_sync_over_two_tasks(results):
    by_partition = sorted((o.partition, o.key, o.value, o.ts, o.input_index) for o in run(results, TWO_TASKS).outputs)
    assert by_partition == [(0, "k", "A-a", 5, 0), (1, "k", "B-b", 2, 3)]


# --- settings, the replay's arithmetic ---------------------------------------------------------------

@pytest.mark.parametrize("release,api,before,after,grace,retention,segment", [
    ("1.1", "legacy", 10, 5, None, DAY, HALF_DAY),  # JoinWindows#maintainMs: 1 day, 3 segments
    ("2.1", "legacy", 10, 5, None, DAY, HALF_DAY),  # grace 24 h - 15
    ("3.9", "legacy", DAY, 5, None, DAY + 5, (DAY + 5) // 2),  # grace max(24 h - size, 0) = 0
    ("3.9", "legacy", 10, 5, 7, 22, SEG),
    ("3.9", "time_difference", 10, 10, 0, 20, SEG),
])
def test_store_retention_and_segment_interval(release, api, before, after, grace, retention, segment):
    doc = {"format": "kssim-scenario/1", "name": "s", "semantics": release, "inputs": [],
           "topology": {"operator": "stream_stream_join", "join": "inner", "window_api": api,
                        "window": {"before_ms": before, "after_ms": after, "grace_ms": grace}}}
    fields = settings.config_fields(scenario_from_dict(doc))
    assert (fields["ss_retention"], fields["ss_segment"]) == (retention, segment)


def test_java_long_wraps_like_the_early_exit_of_3_8():
    assert outer.java_long(outer.LONG_MAX + 10) < 0
    assert outer.java_long(outer.LONG_MAX + 0) == outer.LONG_MAX
    assert outer.java_long(-5) == -5


# --- the conformance corpus and determinism ----------------------------------------------------------

def test_the_corpus_is_all_there():
    assert len(FILES) == 415


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(results, path):
    assert_conforms(*results[path])


def test_results_do_not_depend_on_shuffle_partitions(spark, results):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    names = sorted(CASES)
    scenarios = [CASES[n] for n in names]
    expected = [result_bytes(results[n][1]) for n in names]
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        for partitions in ("1", "7"):
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
            assert [result_bytes(r) for r in run_scenarios(scenarios, spark)] == expected
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)

