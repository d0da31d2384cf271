"""Rules of the Spark backend that no conformance file pins, at their boundaries. Each expected
output is derived in the comments from Kafka's code (class named), record by record; all cases
run in one batched job."""
from __future__ import annotations

import pytest
from kssim_testing import scenario

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KafkaWouldFail, UnsupportedOperator
from kssim.reference.model.records import NO_OLD_VALUE

TT_LEFT = {"operator": "table_table_join", "join": "left"}
VERSIONED = {"versioned": True, "history_retention_ms": 100}


def _emit_on_change(release):
    # KTableSource#process with putIfDifferentValues (KIP-557, 2.6.0-2.7.0) versus 2.8's plain put
    return scenario(TT_LEFT, [
        ("right", "k", "x", 1),   # 0 RightJoin: no left value -> nothing
        ("left", "k", "A", 5),    # 1 LeftJoin: A + x, ts max(5, 1) = 5
        ("left", "k", "A", 7),    # 2 same bytes, 7 >= 5: 2.6 skips it (stored ts stays 5); 2.8: A + x @7
        ("right", "k", "y", 6),   # 3 RightJoin: A + y at max(6, left's stored ts): 2.6 -> 6, 2.8 -> 7
        ("left", "k", "A", 3),    # 4 same bytes but 3 < 5: applied in both -> A + y at max(3, 6) = 6
        ("left", "k", None, 8),   # 5 delete, right exists -> tombstone @8
        ("left", "k", None, 9),   # 6 tombstone for an absent key: 2.6 skips it; 2.8: old null but
                                  #   right exists -> tombstone @9
    ], semantics=release)


def _versioned_tombstone_at_latest_ts(with_history):
    # RocksDBVersionedStore#put: a tombstone at the latest version's own ts deletes the latest
    # value without recording a tombstone; a later, older put then finds no newer version and
    # becomes the latest again -- unless an older version in a segment bounds it.
    inputs = [("left", "k", "x", 2)] if with_history else []
    inputs += [
        ("left", "k", "a", 5),     # latest (x, if any, moves to a segment valid [2, 5))
        ("left", "k", None, 5),    # same ts: latest deleted, forwarded as isLatest (old value a)
        ("left", "k", "b", 0),     # no history: isLatest -> b + null @0; with x: validTo 2 -> dropped
        ("right", "k", "r", 1),    # RightJoin sees left's latest: b (b + r @1), or nothing
    ]
    return scenario({"operator": "table_table_join", "join": "left", "left_table": VERSIONED}, inputs)


def _grace_key_order(keys):
    # RocksDBTimeOrderedKeyValueBuffer: evictions come in store-key order (ts, key bytes, seqnum)
    table = [("right", k, f"t{k}", 0) for k in keys]
    stream = [("left", k, f"s{k}", 5) for k in keys]
    return scenario({"operator": "stream_table_join", "join": "inner", "grace_ms": 10, "table": VERSIONED},
                    table + stream + [("left", "zz", "late", 15)])  # clock 15 -> evict ts <= 5


def _null_key_failure(order):
    # 3.9 stream-table LEFT join with grace: the buffer's put rejects the null key (NPE); task 1's
    # record dies, and with timestamp sync it is processed before task 0's ts-20 record
    inputs = [("left", "k", "A", 1, 0), ("left", "k", "B", 2, 0), ("left", "k", "D", 20, 0),
              ("left", None, "C", 3, 1)]
    return scenario({"operator": "stream_table_join", "join": "left", "grace_ms": 0, "table": VERSIONED},
                    inputs, order=order, partitions={"left": 2, "right": 2})


CASES = {
    "eoc-2.6": _emit_on_change("2.6"),
    "eoc-2.8": _emit_on_change("2.8"),
    "versioned-quirk": _versioned_tombstone_at_latest_ts(False),
    "versioned-history": _versioned_tombstone_at_latest_ts(True),
    "grace-strings": _grace_key_order(["b", "a", "ab"]),
    "grace-ints": _grace_key_order([256, -1, 1]),
    "fail-sync": _null_key_failure("timestamp_sync"),
    "fail-listed": _null_key_failure("as_listed"),
    # 0.10.0: the materialized source has no null-key check and the join throws on a null key;
    # before that, every update is forwarded (inner: null when the other side is absent)
    "pre-kip77": scenario({"operator": "table_table_join", "join": "inner"},
                          [("left", "k", "A", 1), ("right", None, "x", 2), ("right", "k", "y", 3)],
                          semantics="0.10.0"),
    # send_old_values: RightJoin computes joiner(left, old) even for a null old value
    "old-values": scenario({"operator": "table_table_join", "join": "left", "send_old_values": True},
                           [("left", "k", "A", 1), ("right", "k", "x", 2), ("right", "k", "y", 3)]),
    # seeded interleavings of an FK join's internal topics are the reference engine's alone
    "unsupported": scenario({"operator": "fk_join", "join": "inner", "foreign_key": {"field": "fk"}},
                            [("left", "k", {"fk": 1}, 1)], delivery="interleaved", seed=1),
}


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    return dict(zip(CASES, run_scenarios(list(CASES.values()), spark)))


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def test_kip557_skips_idempotent_updates_only_in_2_6(results):
    assert outs(results["eoc-2.6"]) == [("k", ["A", "x"], 5, 1), ("k", ["A", "y"], 6, 3), ("k", ["A", "y"], 6, 4),
                                        ("k", None, 8, 5)]
    assert [(d.input_index, d.reason) for d in results["eoc-2.6"].drops] == [(2, DropReason.IDEMPOTENT_UPDATE),
                                                                           (6, DropReason.IDEMPOTENT_UPDATE)]
    assert outs(results["eoc-2.8"]) == [("k", ["A", "x"], 5, 1), ("k", ["A", "x"], 7, 2), ("k", ["A", "y"], 7, 3),
                                        ("k", ["A", "y"], 6, 4), ("k", None, 8, 5), ("k", None, 9, 6)]
    assert results["eoc-2.8"].drops == ()


def test_versioned_store_history_decides_is_latest(results):
    quirk = results["versioned-quirk"]
    assert outs(quirk) == [("k", ["a", None], 5, 0), ("k", None, 5, 1), ("k", ["b", None], 0, 2),
                           ("k", ["b", "r"], 1, 3)]
    assert quirk.drops == ()
    history = results["versioned-history"]
    assert outs(history) == [("k", ["x", None], 2, 0), ("k", ["a", None], 5, 1), ("k", None, 5, 2)]
    assert [(d.input_index, d.reason) for d in history.drops] == [(3, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]


def test_grace_buffer_evicts_in_serialized_key_order(results):
    # strings (UTF-8): "a" < "ab" < "b"; evicted while processing the ts-15 record (input 6)
    assert outs(results["grace-strings"]) == [("a", ["sa", "ta"], 5, 6), ("ab", ["sab", "tab"], 5, 6),
                                              ("b", ["sb", "tb"], 5, 6)]
    # Integer keys, 4 bytes big-endian two's complement: 1 < 256 < -1 (0xFFFFFFFF)
    assert outs(results["grace-ints"]) == [(1, ["s1", "t1"], 5, 6), (256, ["s256", "t256"], 5, 6),
                                           (-1, ["s-1", "t-1"], 5, 6)]


def test_failure_stops_every_task_at_the_first_failing_input(results):
    synced = results["fail-sync"]
    # grace 0: A and B join at once (as of their ts, empty table -> null); C (ts 3) fails before D (ts 20)
    assert outs(synced) == [("k", ["A", None], 1, 0), ("k", ["B", None], 2, 1)]
    assert isinstance(synced.failure, KafkaWouldFail) and synced.failure.input_index == 3
    assert synced.failure.code is FailureCode.GRACE_BUFFER_NULL_KEY
    assert "NullPointerException" in synced.failure.message
    listed = results["fail-listed"]
    assert outs(listed) == [("k", ["A", None], 1, 0), ("k", ["B", None], 2, 1), ("k", ["D", None], 20, 2)]
    assert listed.failure.input_index == 3
    assert all(o.partition == 0 for o in listed.outputs)


def test_pre_kip77_forwards_everything_and_dies_on_a_null_key(results):
    old = results["pre-kip77"]
    assert outs(old) == [("k", None, 1, 0)]
    assert old.failure is not None and old.failure.input_index == 1
    assert old.failure.code is FailureCode.TABLE_SOURCE_NULL_KEY


def test_old_values_of_a_left_join(results):
    got = [(o.value, o.old_value, o.input_index) for o in results["old-values"].outputs]
    # LeftJoin: A + null (old null: no old result); RightJoin: A + x (old: joiner(A, null));
    # RightJoin: A + y, old A + x
    assert got == [(["A", None], None, 0), (["A", "x"], ["A", None], 1), (["A", "y"], ["A", "x"], 2)]
    assert all(o.old_value is NO_OLD_VALUE for o in results["eoc-2.8"].outputs)


def test_unsupported_operator_is_reported_per_scenario(results):
    assert isinstance(results["unsupported"], UnsupportedOperator)
    assert not isinstance(results["eoc-2.8"], Exception)
