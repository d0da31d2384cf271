"""KTable-KTable joins: the KIP-77 rules per join type and side, the pre-KIP-77 rules, output
timestamps, old values, versioned parents (KIP-914), emit-on-change, nulls, explanations."""
import pytest

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.runtime.engine import run_records
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import NO_OLD_VALUE, InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import TableSpec, TableTableJoinSpec

L, R = "left", "right"


def spec(join, send_old_values=False, left=None, right=None):
    def table(retention):
        return TableSpec() if retention is None else TableSpec(versioned=True, history_retention_ms=retention)
    return TableTableJoinSpec(join=join, left_table=table(left), right_table=table(right), joiner="concat",
                              joiner_separator="-", send_old_values=send_old_values)


def run(topology, records, release="3.9", explain=False, store="rocksdb", partitions=None):
    """records: (topic, key, value, ts[, partition]) in processing order."""
    inputs = [InputRecord(r[0], r[1], r[2], r[3], r[4] if len(r) > 4 else 0, i) for i, r in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(store=store, partitions=partitions or {}), inputs,
                       explain=explain)


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


# --- inner ----------------------------------------------------------------------------------------

def test_inner_emits_only_with_a_partner_and_both_sides_trigger():
    r = run(spec("inner"), [(L, "k", "A", 1), (R, "k", "a", 2), (L, "k", "B", 3), (R, "j", "x", 4)])
    assert outs(r) == [("k", "A-a", 2, 1), ("k", "B-a", 3, 2)]
    assert drops(r) == []


def test_inner_tombstone_is_sent_whenever_the_other_side_exists():
    # no old values in inner joins: a delete of a key this side never had is still forwarded
    r = run(spec("inner"), [(R, "k", "a", 1), (L, "k", None, 2), (L, "j", None, 3)])
    assert outs(r) == [("k", None, 2, 1)]


# --- left ------------------------------------------------------------------------------------------

def test_left_join_left_side_suppresses_only_tombstones_of_results_that_never_existed():
    r = run(spec("left"), [(L, "k", None, 1), (L, "k", "A", 2), (L, "k", None, 3), (L, "k", None, 4)])
    # 1: nothing existed; 2: A-null; 3: A existed (old value) -> tombstone; 4: nothing left
    assert outs(r) == [("k", "A-null", 2, 1), ("k", None, 3, 2)]


def test_left_join_right_side_needs_the_left_value_and_joins_a_delete_as_null():
    records = [(R, "k", "a", 1), (L, "k", "A", 2), (R, "k", "b", 3), (R, "k", None, 4), (R, "k", None, 5)]
    assert outs(run(spec("left"), records)) == \
        [("k", "A-a", 2, 1), ("k", "A-b", 3, 2), ("k", "A-null", 4, 3), ("k", "A-null", 5, 4)]


def test_left_delete_while_right_exists_is_a_tombstone():
    r = run(spec("left"), [(R, "k", "a", 1), (L, "k", "A", 2), (L, "k", None, 3)])
    assert outs(r)[-1] == ("k", None, 3, 2)


# --- outer -----------------------------------------------------------------------------------------

def test_outer_join_passes_nulls_through_and_suppresses_unnecessary_tombstones():
    records = [(R, "k", None, 1), (R, "k", "a", 2), (L, "k", "A", 3), (L, "k", None, 4), (R, "k", None, 5),
               (R, "k", None, 6)]
    # 1: nothing; 2: null-a; 3: A-a; 4: left delete, right exists -> null-a; 5: right delete with
    # an old value, left absent -> tombstone; 6: nothing existed any more
    assert outs(run(spec("outer"), records)) == \
        [("k", "null-a", 2, 1), ("k", "A-a", 3, 2), ("k", "null-a", 4, 3), ("k", None, 5, 4)]


# --- before KIP-77 (0.10.0/0.10.1) --------------------------------------------------------------------

@pytest.mark.parametrize("release", ["0.10.0", "0.10.1"])
def test_before_kip77_every_update_forwards_a_change(release):
    records = [(L, "k", None, 1), (R, "k", None, 2), (L, "k", "A", 3), (R, "k", "a", 4), (L, "k", None, 5)]
    assert [o[1] for o in outs(run(spec("inner"), records, release))] == [None, None, None, "A-a", None]
    assert [o[1] for o in outs(run(spec("left"), records, release))] == [None, None, "A-null", "A-a", None]
    assert [o[1] for o in outs(run(spec("outer"), records, release))] == [None, None, "A-null", "A-a", "null-a"]
    assert [o[1] for o in outs(run(spec("left"), records, "0.10.2"))] == ["A-null", "A-a", None]


@pytest.mark.parametrize("release", ["0.10.0", "0.10.1"])
def test_null_key_kills_the_application_before_0_10_2(release):
    r = run(spec("left"), [(L, "k", "A", 1), (R, None, "a", 2), (L, "k", "B", 3)], release)
    assert r.failure is not None and r.failure.input_index == 1
    assert r.failure.code is FailureCode.TABLE_SOURCE_NULL_KEY
    assert str(r.failure) == f"Kafka Streams would fail at input 1: {FailureCode.TABLE_SOURCE_NULL_KEY.message}"
    assert [o[3] for o in outs(r)] == [0]


@pytest.mark.parametrize("release", ["0.10.2", "3.9"])
def test_null_key_is_dropped_since_0_10_2(release):
    r = run(spec("outer"), [(L, None, "A", 1), (R, None, None, 2)], release)
    assert r.failure is None and outs(r) == []
    assert drops(r) == [(0, DropReason.NULL_KEY), (1, DropReason.NULL_KEY)]


# --- output timestamps ---------------------------------------------------------------------------------

@pytest.mark.parametrize("release, ts_of_late_partner", [("2.2", 5), ("2.3", 9)])
def test_output_ts_is_the_max_of_both_sides_since_2_3(release, ts_of_late_partner):
    r = run(spec("inner"), [(R, "k", "a", 9), (L, "k", "A", 5), (L, "k", "B", 9), (L, "k", "C", 12)], release)
    assert [o[2] for o in outs(r)] == [ts_of_late_partner, 9, 12]


def test_left_join_without_partner_keeps_the_records_ts():
    assert outs(run(spec("left"), [(L, "k", "A", 0)])) == [("k", "A-null", 0, 0)]


def test_out_of_order_unversioned_update_is_applied_and_its_ts_stored():
    records = [(L, "k", "A", 10), (L, "k", "B", 3), (R, "k", "a", 5)]
    assert outs(run(spec("left"), records)) == [("k", "A-null", 10, 0), ("k", "B-null", 3, 1), ("k", "B-a", 5, 2)]


# --- old values -------------------------------------------------------------------------------------

def test_without_send_old_values_no_old_value_is_reported():
    r = run(spec("left"), [(L, "k", "A", 1), (L, "k", "B", 2)])
    assert [o.old_value for o in r.outputs] == [NO_OLD_VALUE, NO_OLD_VALUE]


def test_send_old_values_reports_the_results_old_value():
    records = [(L, "k", "A", 1), (R, "k", "a", 2), (L, "k", "B", 3), (R, "k", None, 4), (L, "k", None, 5)]
    inner = run(spec("inner", send_old_values=True), records)
    # the right delete ends the result B-a (its old value); the left delete then finds no partner
    assert [(o.value, o.old_value) for o in inner.outputs] == [("A-a", None), ("B-a", "A-a"), (None, "B-a")]
    left = run(spec("left", send_old_values=True), records)
    # the right join computes the old value from the right's old value even when it is null;
    # a result's old value uses the other side's *current* value (KTableKTableLeftJoin)
    assert [(o.value, o.old_value) for o in left.outputs] == \
        [("A-null", None), ("A-a", "A-null"), ("B-a", "A-a"), ("B-null", "B-a"), (None, "B-null")]


def test_send_old_values_before_kip77_enables_old_values_on_both_sources():
    r = run(spec("outer", send_old_values=True), [(L, "k", "A", 1), (L, "k", "B", 2)], "0.10.0")
    assert [(o.value, o.old_value) for o in r.outputs] == [("A-null", None), ("B-null", "A-null")]


# --- versioned parents (3.5+, KIP-914) ---------------------------------------------------------------

def test_out_of_order_update_of_a_versioned_table_is_dropped_by_the_join():
    records = [(R, "k", "a", 1), (L, "k", "A", 10), (L, "k", "B", 5), (L, "k", "C", 10)]
    r = run(spec("inner", left=100), records)
    # B@5 is history (not the newest version): stored, not joined; C@10 replaces A at the same ts
    assert outs(r) == [("k", "A-a", 10, 1), ("k", "C-a", 10, 3)]
    assert drops(r) == [(2, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]
    # an unversioned left table joins the out-of-order update
    assert [o[1] for o in outs(run(spec("inner"), records))] == ["A-a", "B-a", "C-a"]


def test_only_the_versioned_side_drops_out_of_order_updates():
    records = [(L, "k", "A", 10), (R, "k", "b", 20), (R, "k", "a", 15), (L, "k", "B", 5)]
    r = run(spec("outer", right=100), records)
    assert outs(r) == [("k", "A-null", 10, 0), ("k", "A-b", 20, 1), ("k", "B-b", 20, 3)]
    assert drops(r) == [(2, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]


def test_versioned_other_side_lookup_is_the_latest_value_not_as_of():
    r = run(spec("inner", left=100, right=100), [(L, "k", "A", 10), (R, "k", "a", 5)])
    assert outs(r) == [("k", "A-a", 10, 1)]


def test_versioned_table_expired_put_is_dropped_at_the_retention_edge():
    records = [(L, "k", "A", 20), (L, "j", "X", 9), (L, "j", "Y", 10)]
    r = run(spec("left", left=10), records)
    assert drops(r) == [(1, DropReason.EXPIRED_VERSIONED_PUT)]
    assert outs(r) == [("k", "A-null", 20, 0), ("j", "Y-null", 10, 2)]


def test_versioned_tombstone_older_than_the_newest_version_is_dropped():
    r = run(spec("left", left=100), [(L, "k", "A", 10), (L, "k", None, 5), (L, "k", None, 11)])
    assert outs(r) == [("k", "A-null", 10, 0), ("k", None, 11, 2)]
    assert drops(r) == [(1, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]


# --- emit-on-change (2.6.0, 2.6.1, 2.7.0) -------------------------------------------------------------

@pytest.mark.parametrize("release, on", [("2.5", False), ("2.6", True), ("2.6.1", True), ("2.6.2", False),
                                         ("2.7", True), ("2.7.1", False), ("3.0", False)])
def test_emit_on_change_skips_idempotent_updates(release, on):
    records = [(R, "k", "a", 5), (L, "k", "A", 5), (L, "k", "A", 5), (L, "k", "A", 4), (L, "j", None, 6),
               (R, "j", "x", 7), (L, "j", None, 8)]
    r = run(spec("inner"), records, release)
    if on:
        # equal value, ts not older: skipped; an older ts is a change; a tombstone for an absent key
        # is skipped even where the inner join would forward it
        assert outs(r) == [("k", "A-a", 5, 1), ("k", "A-a", 5, 3)]
        assert drops(r) == [(i, DropReason.IDEMPOTENT_UPDATE) for i in (2, 4, 6)]
    else:
        assert outs(r) == [("k", "A-a", 5, 1), ("k", "A-a", 5, 2), ("k", "A-a", 5, 3), ("j", None, 8, 6)]
        assert drops(r) == []


def test_emit_on_change_compares_serialized_values():
    r = run(spec("left"), [(L, "k", 1, 5), (L, "k", 1.0, 5), (L, "k", 1.0, 6)], "2.6")
    assert [o[1] for o in outs(r)] == ["1-null", "1.0-null"]


# --- store types, tasks, explanations -----------------------------------------------------------------

@pytest.mark.parametrize("store", ["rocksdb", "in_memory"])
def test_store_type_does_not_change_table_joins(store):
    records = [(L, "k", "A", 5), (R, "k", "a", 3), (L, "k", "B", 1), (R, "k", None, 9)]
    assert outs(run(spec("outer"), records, store=store)) == \
        [("k", "A-null", 5, 0), ("k", "A-a", 5, 1), ("k", "B-a", 3, 2), ("k", "B-null", 9, 3)]


def test_tasks_are_independent():
    records = [(L, "k", "A", 1, 0), (R, "k", "a", 2, 1), (R, "k", "b", 3, 0)]
    r = run(spec("inner"), records, partitions={"left": 2, "right": 2})
    assert [(o.partition, o.value) for o in r.outputs] == [(0, "A-b")]


def test_explanations_name_the_rule_and_the_stored_partner():
    r = run(spec("left"), [(L, "k", "A", 2), (R, "k", None, 7), (R, "k", "a", 4), (R, "k", None, 9)], explain=True)
    last = r.outputs[-1].why
    assert last.rule == "right_delete"
    assert [(s.side, s.value, s.ts, s.input_index) for s in last.joined] == [("left", "A", 2, 0)]
    assert "max(9, 2) = 9" in last.text
    assert run(spec("left"), [(L, "k", "A", 2)]).outputs[0].why is None


def test_dropped_out_of_order_update_explains_the_newest_version():
    r = run(spec("left", left=100), [(L, "k", "A", 10), (L, "k", "B", 5)], explain=True)
    assert "newest ts 10" in r.drops[0].why.text
