"""The windowed-table join (seed 003's "WTable"): two time-windowed aggregations joined on (key,
window) by the KTable-KTable join rules, lookups through each window store's retention, the shifted
right table (toStream().map().toTable() through a repartition topic), partitions, old values,
release rules and explanations."""
import pytest

from kssim.reference.model.codes import DropReason
from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import TimeWindowSpec, WindowedTableJoinSpec
from kssim.reference.runtime.engine import run_records
from kssim.reference.windows.windowed_table_join import shifted_partition

from kssim_testing import scenario

L, R = "left", "right"


def spec(join, size=10, advance=None, grace=100, shift=0, send_old_values=False, left="count", right="count"):
    return WindowedTableJoinSpec(join=join, window=TimeWindowSpec(size, advance or size, grace), left_aggregation=left,
                                 right_aggregation=right, shift_ms=shift, joiner="concat", joiner_separator="-",
                                 send_old_values=send_old_values)


def run(topology, records, release="3.9", explain=False, partitions=None):
    """records: (topic, key, value, ts[, partition]) in processing order."""
    inputs = [InputRecord(r[0], r[1], r[2], r[3], r[4] if len(r) > 4 else 0, i) for i, r in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(partitions=partitions or {}), inputs, explain=explain)


def outs(result):
    return [(o.key["key"], o.key["start"], o.value, o.ts, o.input_index) for o in result.outputs]


def test_inner_join_on_key_and_window_at_the_larger_timestamp():
    r = run(spec("inner"), [(L, "k", "A", 1), (R, "k", "a", 4), (L, "k", "B", 3), (R, "j", "x", 5), (L, "k", "C", 12)])
    assert outs(r) == [("k", 0, "1-1", 4, 1), ("k", 0, "2-1", 4, 2)]


def test_left_and_outer_joins_emit_the_missing_side_as_null():
    records = [(L, "k", "A", 1), (R, "j", "x", 2), (R, "k", "a", 3)]
    assert outs(run(spec("left"), records)) == [("k", 0, "1-null", 1, 0), ("k", 0, "1-1", 3, 2)]
    assert outs(run(spec("outer"), records)) == [("k", 0, "1-null", 1, 0), ("j", 0, "null-1", 2, 1),
                                                ("k", 0, "1-1", 3, 2)]


def test_a_hopping_record_joins_each_of_its_windows_in_start_order():
    r = run(spec("inner", size=10, advance=5), [(L, "k", "A", 7), (R, "k", "a", 8)])
    assert outs(r) == [("k", 0, "1-1", 8, 1), ("k", 5, "1-1", 8, 1)]


def test_lookups_honour_the_other_window_stores_retention():
    # right k@5 writes [0,10) of the right store; right j@100 moves that store's observed time to 100,
    # hiding starts < 91; left k@6 then finds no right window (the left side's own window is live)
    records = [(R, "k", "a", 5), (R, "j", "x", 100), (L, "k", "A", 6)]
    assert outs(run(spec("left", grace=0), records))[-1] == ("k", 0, "1-null", 6, 2)
    assert outs(run(spec("left", grace=0), records[:1] + records[2:]))[-1] == ("k", 0, "1-1", 6, 1)
    # a retention that covers the jump keeps it: grace 200 gives retention 210
    assert outs(run(spec("left", grace=200), records))[-1] == ("k", 0, "1-1", 6, 2)


def test_late_records_are_skipped_by_their_aggregation_and_join_nothing():
    r = run(spec("outer", grace=0), [(L, "k", "A", 30), (L, "k", "B", 5), (R, "k", "b", 5)])
    # each aggregation has its own stream time: the right one is at 5, so b@5 is not late
    assert outs(r) == [("k", 30, "1-null", 30, 0), ("k", 0, "null-1", 5, 2)]
    assert [(d.input_index, d.reason) for d in r.drops] == [(1, DropReason.EXPIRED_WINDOW)]


def test_shift_joins_each_left_window_with_the_right_window_shift_earlier():
    r = run(spec("inner", shift=10), [(R, "k", "a", 5), (L, "k", "A", 15), (L, "k", "B", 5)])
    # right [0,10) is compared with left [10,20); left [0,10) has no shifted partner
    assert outs(r) == [("k", 10, "1-1", 15, 1)]


def test_the_shifted_right_table_never_expires():
    records = [(R, "k", "a", 5), (R, "j", "x", 5000), (L, "k", "A", 15)]
    assert outs(run(spec("inner", shift=10, grace=0), records)) == [("k", 10, "1-1", 15, 2)]


def test_a_right_update_of_a_shifted_join_is_processed_after_its_input_through_the_repartition_topic():
    r = run(spec("outer", shift=10), [(L, "k", "A", 15), (R, "k", "a", 5)], explain=True)
    assert outs(r) == [("k", 10, "1-null", 15, 0), ("k", 10, "1-1", 15, 1)]
    assert "shifted right window" in r.outputs[1].why.text


def test_with_two_partitions_the_shifted_window_lands_where_its_windowed_key_hashes():
    # the repartition topic is keyed by Windowed<K>: murmur2 over the key's bytes + the 8-byte start
    target = shifted_partition("k", 10, 2)
    other = 1 - target
    # left k and right k in partition `other`: the shifted window goes to task `target`, where no
    # left window of k lives, so the inner join never matches
    records = [(L, "k", "A", 15, other), (R, "k", "a", 5, other)]
    r = run(spec("inner", shift=10), records, partitions={L: 2, R: 2})
    assert outs(r) == []
    outer = run(spec("outer", shift=10), records, partitions={L: 2, R: 2})
    assert [(o.partition, o.value) for o in outer.outputs] == [(other, "1-null"), (target, "null-1")]
    same = run(spec("inner", shift=10), [(L, "k", "A", 15, target), (R, "k", "a", 5, other)], partitions={L: 2, R: 2})
    assert outs(same) == [("k", 10, "1-1", 15, 1)]


def test_shifted_partition_hashes_the_time_windowed_serializer_bytes():
    from kssim.reference.model.keys import murmur2

    data = b"k" + (10).to_bytes(8, "big")
    assert shifted_partition("k", 10, 3) == (murmur2(data) & 0x7FFFFFFF) % 3


def test_old_values_reach_the_join_and_its_result():
    r = run(spec("left", send_old_values=True), [(L, "k", "A", 1), (R, "k", "a", 2), (L, "k", "B", 3)])
    # a new window's old value is the initializer's 0 (KStreamWindowAggregate forwards oldAgg), so the
    # old results of new windows join a 0: 0-null for the left window, 1-0 for the right one
    assert [(o.value, o.old_value) for o in r.outputs] == [("1-null", "0-null"), ("1-1", "1-0"), ("2-1", "1-1")]


def test_before_kip77_every_update_is_forwarded():
    r = run(spec("inner", grace=None), [(L, "k", "A", 1)], release="0.10.1")
    assert outs(r) == [("k", 0, None, 1, 0)]
    assert outs(run(spec("inner", grace=None), [(L, "k", "A", 1)], release="0.10.2")) == []


def test_before_2_3_results_carry_the_updating_records_timestamp():
    records = [(L, "k", "A", 8), (R, "k", "a", 2)]
    assert outs(run(spec("inner", grace=None), records, release="2.2")) == [("k", 0, "1-1", 2, 1)]
    assert outs(run(spec("inner", grace=None), records, release="2.3")) == [("k", 0, "1-1", 8, 1)]


def test_explanations_name_the_join_rule_and_both_windows():
    r = run(spec("inner"), [(L, "k", "A", 1), (R, "k", "a", 4)], explain=True)
    why = r.outputs[0].why
    assert why.rule == "inner_match"
    assert why.text.startswith("inner join, right window [0,10) of k now 1@4 (new window [0,10) of k: initializer 0 "
                               "+ a@4 -> 1 (count), forwarded at the window's max record ts 4), with left window "
                               "[0,10) of k = 1@1: both values present -> 1-1 at max(4, 1) = 4")
    assert [s.side for s in why.joined] == ["left"]


@pytest.mark.parametrize("topology, release, field", [
    ({"shift_ms": 10}, "2.4", "topology.shift_ms"),
    ({"shift_ms": -10}, "3.9", "topology.shift_ms"),
    ({"window": {"size_ms": 0, "grace_ms": 0}}, "3.9", "topology.window.size_ms"),
    ({"window": {"size_ms": 10, "advance_ms": 20, "grace_ms": 0}}, "3.9", "topology.window.advance_ms"),
    ({"window": {"size_ms": 10, "grace_ms": -1}}, "3.9", "topology.window.grace_ms"),
    ({"window": {"size_ms": 10, "grace_ms": None}}, "4.0", "topology.window.grace_ms"),
])
def test_check_topology_rejects_what_kafka_rejects(topology, release, field):
    doc = {"operator": "windowed_table_join", "join": "inner", "window": {"size_ms": 10, "grace_ms": 0}, **topology}
    with pytest.raises(ScenarioError) as error:
        scenario(doc, [], semantics=release)
    assert field in str(error.value)
