"""Sliding-windowed aggregations (KIP-450): both ends inclusive, the early-record path, left and right
window creation, equal timestamps, nulls, late records, emit on window close, release rules,
explanations, and what check_topology rejects."""
import pytest

from kssim.reference.model.codes import DropReason
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.profiles import profile_for, sliding_window_retention
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import SlidingAggregateSpec
from kssim.reference.runtime.engine import run_records

from kssim_testing import scenario


def spec(d=10, grace=5, aggregation="count", emit="on_update", send_old_values=False, retention_ms=None):
    return SlidingAggregateSpec(time_difference_ms=d, grace_ms=grace, aggregation=aggregation, emit=emit,
                                send_old_values=send_old_values, retention_ms=retention_ms)


def run(topology, records, release="3.9", explain=False, store="rocksdb"):
    """records: (key, value, ts) in processing order."""
    inputs = [InputRecord("input", k, v, ts, 0, i) for i, (k, v, ts) in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(store=store), inputs, explain=explain)


def outs(result):
    return [(o.key["start"], o.key["end"], o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


VERIFIED = [("k", "a", 3), ("k", "b", 8), ("k", "c", 20), ("k", "d", 15), ("k", "e", 40), ("k", "f", 22),
            ("k", "g", 19), ("k", "h", 30)]


def test_count_as_verified_against_kafka():
    # digest C.2 (d 10, grace 5), verified with TopologyTestDriver
    r = run(spec(), VERIFIED)
    assert outs(r) == [
        (0, 10, 1, 3, 0),
        (4, 14, 1, 8, 1), (0, 10, 2, 8, 1),  # early path: the previous record's right window first
        (10, 20, 1, 20, 2),
        (10, 20, 2, 20, 3), (9, 19, 1, 15, 3), (5, 15, 2, 15, 3), (16, 26, 1, 20, 3),
        (30, 40, 1, 40, 4),
        (30, 40, 2, 40, 7), (31, 41, 1, 40, 7),
    ]
    # f@22 and g@19 are dropped whole (close 35); h@30 creates [21,31] and [20,30] too late for both
    assert drops(r) == [(5, DropReason.EXPIRED_WINDOW), (6, DropReason.EXPIRED_WINDOW),
                        (7, DropReason.EXPIRED_WINDOW), (7, DropReason.EXPIRED_WINDOW)]


def test_emit_final_as_verified_against_kafka_and_in_memory_loses_a_window():
    r = run(spec(emit="on_window_close"), VERIFIED)
    assert outs(r) == [(0, 10, 2, 8, 2), (4, 14, 1, 8, 2),
                       (5, 15, 2, 15, 4), (9, 19, 1, 15, 4), (10, 20, 2, 20, 4), (16, 26, 1, 20, 4)]
    in_memory = run(spec(emit="on_window_close"), VERIFIED, store="in_memory")
    assert [o[:2] for o in outs(in_memory)] == [(0, 10), (4, 14), (9, 19), (10, 20), (16, 26)]
    assert (4, DropReason.UNEMITTED_WINDOW) in drops(in_memory)


def test_both_window_ends_are_inclusive():
    r = run(spec(grace=100), [("k", "a", 20), ("k", "b", 30)])
    # b@30 is in a's left window? no: [10,20] ends at 20. a is in b's left window [20,30]: start inclusive
    assert (20, 30, 2, 30, 1) in outs(r)


def test_equal_timestamps_update_the_existing_window_and_create_nothing():
    r = run(spec(), [("k", "a", 20), ("k", "b", 20)])
    assert outs(r) == [(10, 20, 1, 20, 0), (10, 20, 2, 20, 1)]


def test_a_record_between_two_others_gets_its_right_window_as_a_copy():
    r = run(spec(grace=100), [("k", "a", 10), ("k", "c", 18), ("k", "b", 14)], explain=True)
    created = [o for o in r.outputs if o.input_index == 2 and o.key["start"] == 15]
    assert [(o.value, o.ts, o.why.rule) for o in created] == [(1, 18, "sliding_right_window")]


def test_null_values_and_null_keys_are_dropped_before_stream_time_moves():
    r = run(spec(grace=0), [("k", "a", 20), ("k", None, 100), (None, "b", 100), ("k", "c", 15)])
    # c@15 is not late (stream time is still 20): it updates [10,20] and gets its right window; only
    # its own left window [5,15] ends before the close time 20
    assert drops(r) == [(1, DropReason.NULL_VALUE), (2, DropReason.NULL_KEY), (3, DropReason.EXPIRED_WINDOW)]
    assert outs(r)[1:] == [(10, 20, 2, 20, 3), (16, 26, 1, 20, 3)]


def test_a_record_whose_left_window_ends_before_the_close_time_is_dropped_whole():
    r = run(spec(grace=5), [("k", "a", 40), ("k", "b", 24), ("k", "c", 25)], explain=True)
    # close time 35: b@24 + d = 34 < 35, the record is dropped whole; c@25 + d = 35 is processed, but
    # the window it would create, its left window [15,25], ends before the close time and is skipped
    assert drops(r) == [(1, DropReason.EXPIRED_WINDOW), (2, DropReason.EXPIRED_WINDOW)]
    assert "the record is dropped" in r.drops[0].why.text
    assert "skipped for that window only" in r.drops[1].why.text
    assert outs(r) == [(30, 40, 1, 40, 0)]


def test_without_grace_the_records_own_left_window_is_updated_since_3_3():
    # KAFKA-13739: with grace 0 the left window ends exactly at the close time
    assert outs(run(spec(grace=0), [("k", "a", 20)], release="3.3")) == [(10, 20, 1, 20, 0)]
    before = run(spec(grace=0), [("k", "a", 20)], release="3.2")
    assert outs(before) == [] and drops(before) == [(0, DropReason.EXPIRED_WINDOW)]


def test_store_retention_hides_a_previous_window_since_3_4():
    # d 10, grace 10, retention 30: after a@57 the store shows starts >= 28 (3.4+), so b@42 no longer
    # finds its previous window [27,37] and does not create that record's right window [38,48]
    records = [("b", "v", 37), ("a", "v", 56), ("a", "v", 57), ("b", "v", 42)]
    assert outs(run(spec(grace=10), records, release="3.3"))[-1] == (38, 48, 1, 42, 3)
    assert [o[4] for o in outs(run(spec(grace=10), records, release="3.4"))] == [0, 1, 2, 2]


def test_send_old_values():
    r = run(spec(grace=100, send_old_values=True), [("k", "a", 20), ("k", "b", 20)])
    assert [(o.value, o.old_value) for o in r.outputs] == [(1, 0), (2, 1)]


def test_early_records_do_not_run_the_emit_final_check():
    # stream time 30 from a@30; b@2 is early (2 < d) and not late: no close check for it
    r = run(spec(d=10, grace=100, emit="on_window_close"), [("k", "a", 30), ("k", "b", 2), ("k", "c", 150)])
    assert {o[4] for o in outs(r)} == {2}


def test_retention_default():
    assert sliding_window_retention(10, 5, None) == 25
    assert sliding_window_retention(10, 5, 100) == 100


def test_explanations_name_the_window_and_its_role():
    r = run(spec(), [("k", "a", 3), ("k", "b", 8)], explain=True)
    texts = [o.why.text for o in r.outputs]
    assert texts[1] == ("window [4,14] of k (the previous record's (ts 3) right window, created): initializer 0 "
                        "+ b@8 -> 1 (count), forwarded at the window's max record ts 8")
    late = run(spec(grace=0), [("k", "a", 40), ("k", "b", 20)], explain=True)
    assert late.drops[0].why.text == ("input k:b@20 is too late: its left window [10,20] ends before close time 40 "
                                      "= stream time 40 - grace 0; the record is dropped ('Skipping record for "
                                      "expired window')")


@pytest.mark.parametrize("topology, release, field", [
    ({"time_difference_ms": 10, "grace_ms": 0}, "2.6", "topology.operator"),
    ({"time_difference_ms": -1, "grace_ms": 0}, "3.9", "topology.time_difference_ms"),
    ({"time_difference_ms": 10, "grace_ms": None}, "3.9", "topology.grace_ms"),
    ({"time_difference_ms": 10, "grace_ms": -5}, "3.9", "topology.grace_ms"),
    ({"time_difference_ms": 10, "grace_ms": 5, "retention_ms": 24}, "3.9", "topology.retention_ms"),
    ({"time_difference_ms": 10, "grace_ms": 5, "emit": "on_window_close"}, "3.2", "topology.emit"),
])
def test_check_topology_rejects_what_kafka_rejects(topology, release, field):
    with pytest.raises(ScenarioError) as error:
        scenario({"operator": "sliding_aggregate", **topology}, [], semantics=release)
    assert field in str(error.value)
