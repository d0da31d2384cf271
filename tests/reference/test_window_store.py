"""The join's window stores and outer-join store, rule by rule, at their boundaries.

RocksDB segments are 60 000 ms for any retention up to 120 000 ms, so timestamps cross segments at
multiples of 60 000 (segment 0: 0..59 999, segment 1: 60 000..119 999, ...).
"""
import pytest

from kssim.reference.model.keys import key_identity, serialized_key
from kssim.reference.stores.outer_join_store import LEFT_SIDE, RIGHT_SIDE, OuterJoinStore
from kssim.reference.stores.window_store import InMemoryWindowStore, RocksDBWindowStore, segment_interval

SEG = 60_000


def rocks(retention=20, *, release="3.9", **overrides):
    """A RocksDB join store with the switches of a release line (see stream_stream_join._window_store)."""
    eras = {
        "0.10.2": dict(live_segments=3, strict_fetch=False, null_put_noop=False, fetch_from_first_segment=True),
        "2.0": dict(live_segments=3, strict_fetch=False, null_put_noop=False),
        "2.1": dict(task_clock=True, strict_fetch=False, null_put_noop=False),
        "2.5": dict(strict_fetch=False, null_put_noop=False),
        "3.3": dict(strict_fetch=False),
        "3.9": dict(),
    }
    options = dict(eras[release])
    options.update(overrides)
    return RocksDBWindowStore(retention, 10, **options)


def values(entries):
    return [e[2] for e in entries]


def stamped(entries):
    return [(e[0], e[2]) for e in entries]


# --- common to both flavours --------------------------------------------------------------------

@pytest.mark.parametrize("make", [lambda: rocks(1000), lambda: InMemoryWindowStore(1000, 10)], ids=["rocksdb", "in_memory"])
def test_fetch_is_ascending_ts_then_insertion_order(make):
    store = make()
    for value, ts in [("a", 7), ("b", 5), ("c", 7), ("d", 5), ("e", 6), ("f", 7)]:
        assert store.put("k", value, ts)
    assert stamped(store.fetch("k", 0, 100)) == [(5, "b"), (5, "d"), (6, "e"), (7, "a"), (7, "c"), (7, "f")]


@pytest.mark.parametrize("make", [lambda: rocks(1000), lambda: InMemoryWindowStore(1000, 10)], ids=["rocksdb", "in_memory"])
def test_fetch_bounds_are_inclusive_and_per_key(make):
    store = make()
    for ts in (9, 10, 15, 20, 21):
        store.put("k", f"v{ts}", ts)
    store.put("other", "x", 15)
    assert values(store.fetch("k", 10, 20)) == ["v10", "v15", "v20"]
    assert values(store.fetch("k", 15, 15)) == ["v15"]
    assert values(store.fetch("k", 16, 19)) == []
    assert values(store.fetch("missing", 0, 100)) == []


@pytest.mark.parametrize("make", [lambda: rocks(1000), lambda: InMemoryWindowStore(1000, 10)], ids=["rocksdb", "in_memory"])
def test_keys_are_compared_exactly(make):
    store = make()
    store.put("k", "a", 5)
    store.put("k1", "b", 5)
    assert values(store.fetch("k", 0, 10)) == ["a"]


def test_segment_interval_is_half_the_retention_but_at_least_one_minute():
    assert segment_interval(20) == SEG
    assert segment_interval(120_000) == SEG
    assert segment_interval(120_002) == 60_001
    assert segment_interval(86_400_000) == 43_200_000
    assert rocks(300_000).segment_interval_ms == 150_000


# --- RocksDB since 2.2: segments live while >= segmentId(observed - retention) ----------------------

def test_rocksdb_put_is_dropped_only_when_its_whole_segment_expired():
    store = rocks(20, release="3.3")
    assert store.put("k", "new", 120_019)  # observed 120 019 - retention 20 = 119 999 -> segment 1 is the oldest live
    assert not store.put("k", "seg0", 59_999)  # segment 0: expired
    assert store.put("k", "seg1", 60_000)  # segment 1: still live, although 60 019 ms older than observed
    assert store.put("other", "x", 120_020)  # observed - retention = 120 000 -> segment 2 is the oldest live
    assert not store.put("k", "seg1-again", 60_001)


def test_rocksdb_before_3_4_finds_everything_in_a_live_segment():
    store = rocks(20, release="3.3")
    store.put("k", "old", 5)
    store.put("k", "new", 59_999)  # observed - retention = 59 979: still segment 0
    assert values(store.fetch("k", 0, 60_000)) == ["old", "new"]
    store.put("k", "next", 60_020)  # observed - retention = 60 000 -> segment 0 is deleted
    assert values(store.fetch("k", 0, 70_000)) == ["next"]


def test_rocksdb_since_3_4_hides_records_older_than_retention():
    store = rocks(20)
    store.put("k", "a", 80)
    store.put("k", "b", 81)
    store.put("k", "c", 100)  # observed 100: visible from 100 - 20 + 1 = 81
    assert values(store.fetch("k", 0, 200)) == ["b", "c"]
    assert store.put("k", "late", 50)  # same live segment: stored, but hidden
    assert values(store.fetch("k", 0, 80)) == []
    assert store.entries("k")[0][2] == "late"


def test_rocksdb_fetch_range_above_the_visible_floor_only():
    store = rocks(20)
    store.put("k", "a", 100)
    assert values(store.fetch("k", 0, 80)) == []  # to < observed - retention + 1: nothing
    assert values(store.fetch("k", 0, 81)) == []
    assert values(store.fetch("k", 81, 100)) == ["a"]


def test_rocksdb_segment_of_a_negative_clock_is_zero():
    # Java truncates: (10 - 20) / 60000 == 0, so nothing has expired yet
    store = rocks(20, release="3.3")
    assert store.min_live_segment() == 0
    store.put("k", "a", 10)
    assert store.min_live_segment() == 0
    assert store.put("k", "b", 0)


def test_rocksdb_null_put_is_a_no_op_since_2_5_1():
    store = rocks(20, release="3.3")
    store.put("k", "a", 5)
    assert store.put("k", None, 130_000)
    assert store.observed_ms == 5
    assert values(store.fetch("k", 0, 10)) == ["a"]


def test_rocksdb_null_put_advanced_the_clock_before_2_5_1():
    store = rocks(20, release="2.5")
    store.put("k", "a", 5)
    assert store.put("other", None, 130_000)
    assert store.observed_ms == 130_000
    assert values(store.fetch("k", 0, 10)) == []  # segment 0 went with the null put
    assert store.entries("k") == []


def test_in_memory_null_put_advances_the_clock():
    store = InMemoryWindowStore(20, 10)
    store.put("k", "a", 5)
    store.put("k", None, 100)
    assert store.observed_ms == 100
    assert values(store.fetch("k", 0, 100)) == []


# --- RocksDB before 2.1: the three newest segments live --------------------------------------------

def test_rocksdb_before_2_1_keeps_the_three_newest_segments():
    store = rocks(20, release="2.0")
    store.put("k", "seg0", 5)
    store.put("other", "x", 2 * SEG)  # segments 0..2 live
    assert values(store.fetch("k", 0, 10)) == ["seg0"]
    assert store.put("k", "seg0-late", 6)
    store.put("other", "y", 3 * SEG)  # segments 1..3 live
    assert values(store.fetch("k", 0, 10)) == []
    assert not store.put("k", "seg0-too-late", 7)
    assert store.put("k", "seg1", SEG)


def test_rocksdb_before_2_1_ignores_retention_inside_live_segments():
    store = rocks(20, release="2.0")
    store.put("k", "a", 0)
    store.put("k", "b", SEG - 1)
    assert values(store.fetch("k", 0, SEG)) == ["a", "b"]


def test_rocksdb_0_10_2_never_searches_segments_before_the_first_one_created():
    store = rocks(20, release="0.10.2")
    store.put("k", "first", 2 * SEG)
    assert store.put("k", "older", 10)  # segment 0 is within the three newest: stored
    assert values(store.fetch("k", 0, 20)) == []  # Segments#minSegmentId = 2
    fixed = rocks(20, release="2.0")
    fixed.put("k", "first", 2 * SEG)
    fixed.put("k", "older", 10)
    assert values(fixed.fetch("k", 0, 20)) == ["older"]


def test_rocksdb_0_10_2_first_segment_counts_null_puts():
    store = rocks(20, release="0.10.2")
    store.put("k", None, 2 * SEG)  # creates segment 2 before any value lands
    store.put("k", "older", 10)
    assert values(store.fetch("k", 0, 20)) == []


# --- RocksDB 2.1: the task's stream time ------------------------------------------------------------

def test_rocksdb_2_1_expires_by_task_stream_time_at_the_next_put():
    store = rocks(20, release="2.1")
    store.put("k", "a", 5)
    store.observe(2 * SEG)  # another record of the task (other side) moved the task's stream time
    assert values(store.fetch("k", 0, 10)) == ["a"]  # segments are only deleted by a put
    assert store.observed_ms == 2 * SEG
    assert store.put("other", "x", 6) is False  # segment 0 < segmentId(120 000 - 20) = 1: expired
    assert values(store.fetch("k", 0, 10)) == []


def test_rocksdb_since_2_2_ignores_the_task_clock():
    store = rocks(20, release="3.3")
    store.put("k", "a", 5)
    store.observe(2 * SEG)
    assert store.put("other", "x", 6)
    assert values(store.fetch("k", 0, 10)) == ["a"]


# --- in-memory: strict retention -----------------------------------------------------------------

def test_in_memory_put_is_dropped_iff_ts_at_or_below_observed_minus_retention():
    store = InMemoryWindowStore(20, 10)
    store.put("k", "now", 100)
    assert not store.put("k", "edge", 80)  # 80 <= 100 - 20
    assert store.put("k", "inside", 81)
    assert values(store.fetch("k", 0, 100)) == ["inside", "now"]


def test_in_memory_fetch_hides_records_as_time_moves_on():
    store = InMemoryWindowStore(20, 10)
    store.put("k", "a", 81)
    store.put("k", "b", 100)
    assert values(store.fetch("k", 0, 200)) == ["a", "b"]
    store.put("other", "x", 101)
    assert values(store.fetch("k", 0, 200)) == ["b"]


def test_memory_is_trimmed_as_time_moves_on():
    for store in (rocks(20), InMemoryWindowStore(20, 10)):
        for ts in range(0, 10 * SEG, 997):
            store.put(f"k{ts % 7}", "v", ts)
        assert all(e[0] >= 7 * SEG for k in store.keys() for e in store.entries(k))
        assert len(store) < 200


# --- the outer-join store (3.1+) -----------------------------------------------------------------

def test_outer_store_orders_by_ts_then_right_before_left_then_key_bytes():
    store = OuterJoinStore()
    for ts, side, key in [(10, LEFT_SIDE, "b"), (10, LEFT_SIDE, "a"), (10, RIGHT_SIDE, "z"), (9, LEFT_SIDE, "z"),
                          (10, LEFT_SIDE, "B"), (11, RIGHT_SIDE, "a")]:
        store.put(ts, side, key, key_identity(key), f"{key}@{ts}", -1)
    assert [(ts, side, key) for ts, side, key, _, _ in store.flattened()] == [
        (9, LEFT_SIDE, "z"), (10, RIGHT_SIDE, "z"), (10, LEFT_SIDE, "B"), (10, LEFT_SIDE, "a"),
        (10, LEFT_SIDE, "b"), (11, RIGHT_SIDE, "a")]


def test_outer_store_keys_compare_as_utf8_bytes():
    store = OuterJoinStore()
    for key in ["é", "z", "Z", "aa", "a"]:
        store.put(1, LEFT_SIDE, key, key_identity(key), key, -1)
    assert [key for _, _, key, _, _ in store.flattened()] == ["Z", "a", "aa", "z", "é"]


def test_outer_store_integer_keys_sort_like_twos_complement_bytes():
    keys = [-1, 3, 0, 256, -300]
    store = OuterJoinStore()
    for key in keys:
        store.put(1, LEFT_SIDE, key, key_identity(key), key, -1)
    assert [key for _, _, key, _, _ in store.flattened()] == [0, 3, 256, -300, -1]


def test_outer_store_keeps_values_of_one_entry_in_insertion_order_and_deletes_them_together():
    store = OuterJoinStore()
    kid = key_identity("k")
    store.put(5, LEFT_SIDE, "k", kid, "A1", 0)
    store.put(5, LEFT_SIDE, "k", kid, "A2", 1)
    store.put(5, RIGHT_SIDE, "k", kid, "a", 2)
    assert [(v, i) for _, _, _, v, i in store.flattened()] == [("a", 2), ("A1", 0), ("A2", 1)]
    assert store.delete(5, LEFT_SIDE, kid)
    assert not store.delete(5, LEFT_SIDE, kid)
    assert [v for _, _, _, v, _ in store.flattened()] == ["a"]
    assert len(store) == 1


def test_serialized_key_distinguishes_types():
    assert serialized_key("a") == b"a"
    assert serialized_key(1) == b"\x00" * 7 + b"\x01"
    assert serialized_key(True) == b"\x01"
    assert serialized_key(1.5) != serialized_key(1)
    assert serialized_key({"a": 1}) == b'{"a":1}'
