"""The KIP-889 versioned key-value store (RocksDBVersionedStore semantics) and the plain
key-value store of unversioned tables."""
import pytest

from kssim.reference.stores.kv_store import PUT_IS_LATEST, PUT_NOT_LATEST, PUT_NOT_PUT, KeyValueStore
from kssim.reference.stores.versioned_store import VersionedKeyValueStore


def value_at(store, key, ts):
    row = store.get_as_of(key, ts)
    return None if row is None else row[0]


def latest_value(store, key):
    row = store.get(key)
    return None if row is None else row[0]


# --- put outcomes -------------------------------------------------------------------------------

def test_first_put_later_put_and_equal_timestamp_are_latest():
    s = VersionedKeyValueStore(100)
    assert s.put("k", "a", 10) == PUT_IS_LATEST
    assert s.put("k", "b", 20) == PUT_IS_LATEST
    assert s.put("k", "c", 20) == PUT_IS_LATEST  # same ts as the newest: replaces it
    assert latest_value(s, "k") == "c"
    assert value_at(s, "k", 19) == "a"


def test_older_put_is_history_not_latest():
    s = VersionedKeyValueStore(100)
    s.put("k", "a", 10)
    s.put("k", "c", 30)
    assert s.put("k", "b", 20) == PUT_NOT_LATEST
    assert latest_value(s, "k") == "c"
    assert [value_at(s, "k", t) for t in (9, 10, 19, 20, 29, 30)] == [None, "a", "a", "b", "b", "c"]


def test_older_put_at_an_existing_version_replaces_it_and_keeps_its_validity():
    s = VersionedKeyValueStore(100)
    s.put("k", "a", 10)
    s.put("k", "c", 30)
    assert s.put("k", "A", 10) == PUT_NOT_LATEST
    assert [value_at(s, "k", t) for t in (10, 29, 30)] == ["A", "A", "c"]


def test_expired_put_boundary_is_strict_and_does_not_advance_time():
    s = VersionedKeyValueStore(10)
    s.put("k", "a", 20)
    assert s.put("k", "x", 9) == PUT_NOT_PUT  # 9 < 20 - 10
    assert s.observed_stream_time == 20
    assert value_at(s, "k", 9) is None
    assert s.put("k", "b", 10) == PUT_NOT_LATEST  # 10 == 20 - 10: still accepted
    assert value_at(s, "k", 15) == "b"


def test_zero_history_retention_accepts_only_puts_at_or_after_observed_time():
    s = VersionedKeyValueStore(0)
    s.put("k", "a", 5)
    assert s.put("k", "x", 4) == PUT_NOT_PUT
    assert s.put("j", "y", 5) == PUT_IS_LATEST  # another key, at the observed time: fine
    assert s.put("k", "b", 5) == PUT_IS_LATEST


def test_observed_time_is_per_store_and_advanced_by_other_keys():
    s = VersionedKeyValueStore(10)
    s.put("other", "o", 50)
    assert s.put("k", "a", 39) == PUT_NOT_PUT
    assert s.put("k", "a", 40) == PUT_IS_LATEST


def test_reads_never_advance_observed_time():
    s = VersionedKeyValueStore(10)
    s.put("k", "a", 5)
    s.get_as_of("k", 1000)
    s.get("k")
    assert s.observed_stream_time == 5
    assert s.put("k", "old", 0) == PUT_NOT_LATEST


# --- tombstones ---------------------------------------------------------------------------------

def test_tombstones_are_versions():
    s = VersionedKeyValueStore(100)
    s.put("k", "a", 5)
    assert s.put("k", None, 8) == PUT_IS_LATEST
    assert latest_value(s, "k") is None
    assert s.put("k", "b", 6) == PUT_NOT_LATEST  # older than the tombstone
    assert latest_value(s, "k") is None
    assert [value_at(s, "k", t) for t in (5, 6, 7, 8, 100)] == ["a", "b", "b", None, None]


def test_tombstone_for_an_absent_key_is_latest_and_makes_older_puts_history():
    s = VersionedKeyValueStore(100)
    assert s.put("k", None, 10) == PUT_IS_LATEST
    assert s.put("k", "x", 5) == PUT_NOT_LATEST
    assert [value_at(s, "k", t) for t in (4, 5, 9, 10)] == [None, "x", "x", None]
    assert s.put("k", "y", 10) == PUT_IS_LATEST  # at the tombstone's ts: the newest again


def test_tombstone_at_the_latest_values_own_ts_leaves_no_trace():
    # RocksDBVersionedStore: the tombstone just deletes the latest value, nothing moves to history,
    # so a later, older put becomes the latest again (unlike a tombstone one ms later)
    erased = VersionedKeyValueStore(100)
    erased.put("k", "a", 5)
    erased.put("k", None, 5)
    assert erased.put("k", "b", 0) == PUT_IS_LATEST
    assert latest_value(erased, "k") == "b"
    assert value_at(erased, "k", 7) == "b"

    kept = VersionedKeyValueStore(100)
    kept.put("k", "a", 5)
    kept.put("k", None, 6)
    assert kept.put("k", "b", 0) == PUT_NOT_LATEST
    assert latest_value(kept, "k") is None
    assert [value_at(kept, "k", t) for t in (0, 4, 5, 6)] == ["b", "b", "a", None]


def test_tombstone_at_the_same_ts_keeps_older_history_ending_there():
    s = VersionedKeyValueStore(100)
    s.put("k", "x", 1)
    s.put("k", "a", 5)      # x valid [1, 5)
    s.put("k", None, 5)     # erases a; the history still ends at 5
    assert s.put("k", "y", 4) == PUT_NOT_LATEST
    assert s.put("k", "z", 6) == PUT_IS_LATEST
    assert [value_at(s, "k", t) for t in (1, 3, 4, 5, 6)] == ["x", "x", "y", None, "z"]


def test_put_into_a_gap_is_valid_until_the_next_version():
    s = VersionedKeyValueStore(100)
    s.put("k", "a", 1)
    s.put("k", None, 3)
    s.put("k", "c", 10)
    assert s.put("k", "b", 5) == PUT_NOT_LATEST
    assert [value_at(s, "k", t) for t in (2, 3, 4, 5, 9, 10)] == ["a", None, None, "b", "b", "c"]


def test_repeated_tombstones_and_tombstone_inside_history():
    s = VersionedKeyValueStore(100)
    s.put("k", "a", 1)
    s.put("k", "c", 10)
    assert s.put("k", None, 5) == PUT_NOT_LATEST
    assert s.put("k", None, 20) == PUT_IS_LATEST
    assert s.put("k", None, 20) == PUT_IS_LATEST
    assert [value_at(s, "k", t) for t in (4, 5, 9, 10, 19, 20)] == ["a", None, None, "c", "c", None]


# --- reads and history retention -----------------------------------------------------------------

def test_as_of_boundaries_are_inclusive_at_the_version_ts():
    s = VersionedKeyValueStore(100)
    s.put("k", "a", 5)
    s.put("k", "b", 8)
    assert [value_at(s, "k", t) for t in (4, 5, 7, 8)] == [None, "a", "a", "b"]
    assert s.get_as_of("k", 6)[1] == 5  # rows carry their validFrom ts


def test_history_retention_edge_for_reads():
    s = VersionedKeyValueStore(10)
    s.put("j", "only", 5)
    s.put("k", "a", 0)
    s.put("k", "b", 30)  # observed 30, history kept for as-of >= 20
    assert value_at(s, "k", 20) == "a"
    assert value_at(s, "k", 19) is None  # beyond history: only the latest value, and it is newer
    assert value_at(s, "j", 19) == "only"  # the latest value never expires
    assert value_at(s, "j", 4) is None


def test_latest_tombstone_beyond_history_answers_none():
    s = VersionedKeyValueStore(10)
    s.put("k", "a", 0)
    s.put("k", None, 2)
    s.put("other", "x", 100)
    assert value_at(s, "k", 50) is None
    assert value_at(s, "k", 1) is None
    assert s.put("k", "z", 90) == PUT_IS_LATEST


def test_get_returns_the_stored_row_with_its_input_index():
    s = VersionedKeyValueStore(10)
    s.put("k", "a", 3, input_index=7)
    assert s.get("k") == ("a", 3, 7)
    assert s.get("absent") is None


def test_memory_is_bounded_by_history_retention():
    s = VersionedKeyValueStore(10)
    for ts in range(0, 10_000, 3):
        s.put("k", ts, ts)
    assert len(s.history("k")) <= 5
    assert value_at(s, "k", 9_990) == 9_990 - 9_990 % 3
    for i in range(1000):
        s.put(f"gone{i}", "v", 10_000 + i)
        s.put(f"gone{i}", None, 10_000 + i + 1)
    s.put("k", "late", 20_000)
    assert len(s) < 50  # keys whose history ended long before the horizon are forgotten
    assert s.put("gone1", "again", 20_000) == PUT_IS_LATEST


def test_newest_ts_counts_tombstones():
    s = VersionedKeyValueStore(100)
    assert s.newest_ts("k") is None
    s.put("k", "a", 5)
    s.put("k", None, 9)
    assert s.newest_ts("k") == 9


# --- the plain key-value store ------------------------------------------------------------------

def test_key_value_store_applies_every_put_and_deletes_on_tombstone():
    s = KeyValueStore()
    assert s.put("k", "a", 10, 0) == PUT_IS_LATEST
    assert s.put("k", "b", 5, 1) == PUT_IS_LATEST  # out of order: still applied
    assert s.get("k") == ("b", 5, 1)
    s.put("k", None, 1, 2)
    assert s.get("k") is None
    s.put("absent", None, 1, 3)
    assert len(s) == 0


@pytest.mark.parametrize("retention", [0, 1, 7])
def test_versioned_store_matches_a_brute_force_model_on_in_order_puts(retention):
    # with puts in timestamp order (and no same-ts tombstones) a versioned store is a plain
    # "value at time t" function; check it against a list of every put
    import random

    rnd = random.Random(retention)
    s = VersionedKeyValueStore(retention)
    log = []
    ts = 0
    for _ in range(300):
        ts += rnd.choice((1, 2, 3))
        value = None if rnd.random() < 0.2 else rnd.randint(0, 9)
        assert s.put("k", value, ts) == PUT_IS_LATEST
        log.append((ts, value))
        for t in range(max(0, ts - retention), ts + 1):
            before = [v for (pt, v) in log if pt <= t]
            assert value_at(s, "k", t) == (before[-1] if before else None)
