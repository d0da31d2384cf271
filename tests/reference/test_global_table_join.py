"""KStream-GlobalKTable join: lookups, the null rules per release (KAFKA-6378, KAFKA-10277, KIP-962,
KAFKA-19208), failures, the global table's source and restore, as_listed vs bootstrap, one store
shared by every task, key mappers, explanations."""
import pytest
from kssim_testing import scenario

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import InputRecord
from kssim.reference.model.scenario import RunConfig
from kssim.reference.model.topology import GlobalTableJoinSpec, KeyExtractorSpec
from kssim.reference.runtime.engine import run_records, run_scenario

S, T = "left", "right"  # stream, global table topic
NK = DropReason.NULL_KEY
NV = DropReason.NULL_VALUE
NJ = DropReason.NULL_JOIN_KEY


def spec(join="inner", source="value", field="to"):
    return GlobalTableJoinSpec(join=join, key_mapper=KeyExtractorSpec(source=source, field=field),
                               joiner="concat", joiner_separator="-")


def run(topology, records, release="3.9", explain=False, **config):
    """records: (topic, key, value, ts[, partition]) in list order."""
    inputs = [InputRecord(r[0], r[1], r[2], r[3], r[4] if len(r) > 4 else 0, i) for i, r in enumerate(records)]
    return run_records(topology, profile_for(release), RunConfig(**config), inputs, explain=explain)


def outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


def v(to, x="v"):
    return {"to": to, "x": x}


# --- lookups --------------------------------------------------------------------------------------

def test_only_stream_records_trigger_and_see_the_table_as_of_their_turn():
    records = [(S, "k1", v("a", 1), 1), (T, "a", "A", 2), (S, "k2", v("a", 2), 3), (T, "a", "B", 4),
               (S, "k3", v("a", 3), 5), (T, "a", None, 6), (S, "k4", v("a", 4), 7)]
    assert outs(run(spec("inner"), records)) == [
        ("k2", "{to=a, x=2}-A", 3, 2), ("k3", "{to=a, x=3}-B", 5, 4)]
    assert outs(run(spec("left"), records)) == [
        ("k1", "{to=a, x=1}-null", 1, 0), ("k2", "{to=a, x=2}-A", 3, 2), ("k3", "{to=a, x=3}-B", 5, 4),
        ("k4", "{to=a, x=4}-null", 7, 6)]
    assert drops(run(spec("left"), records)) == []


@pytest.mark.parametrize("release", ["0.10.2", "2.2", "2.3", "3.9", "4.3"])
def test_output_key_and_timestamp_are_the_stream_records_in_every_release(release):
    # the processor forwards the stream record with a new value: KAFKA-6455 (output_ts_max) does not apply
    r = run(spec("inner"), [(T, "a", "A", 100), (S, "k", v("a"), 5)], release)
    assert outs(r) == [("k", "{to=a, x=v}-A", 5, 1)]


def test_tombstone_for_an_absent_table_key_changes_nothing():
    r = run(spec("left"), [(T, "a", None, 1), (S, "k", v("a"), 2)])
    assert outs(r) == [("k", "{to=a, x=v}-null", 2, 1)] and drops(r) == []


def test_mapped_keys_match_table_keys_by_serialized_bytes():
    table = [(T, 1, "int", 1), (T, 1.0, "float", 2), (T, True, "bool", 3), (T, "1", "str", 4)]
    stream = [(S, f"k{i}", {"to": to}, 10 + i) for i, to in enumerate((1, 1.0, True, "1", {"a": 1}))]
    r = run(spec("left"), table + stream)
    assert [o.value for o in r.outputs] == ["{to=1}-int", "{to=1.0}-float", "{to=true}-bool", "{to=1}-str",
                                            "{to={a=1}}-null"]


@pytest.mark.parametrize("release", ["0.10.2", "3.9", "4.3"])
def test_key_mappers_that_read_the_key(release):
    # the KeyValueMapper always received (key, value): a key-reading mapper needs no KIP-1104
    by_key = spec("left", source="key", field=None)
    r = run(by_key, [(T, "k", "K", 1), (S, "k", "A", 2), (S, "j", "B", 3)], release)
    assert outs(r) == [("k", "A-K", 2, 1), ("j", "B-null", 3, 2)]
    by_key_field = spec("left", source="key", field="id")
    r = run(by_key_field, [(T, 7, "seven", 1), (S, {"id": 7, "n": 1}, "A", 2)], release)
    assert outs(r) == [({"id": 7, "n": 1}, "A-seven", 2, 1)]


# --- null rules per release -------------------------------------------------------------------------
# Four stream records after "a" -> "A": (null key, mapped a), (key, mapped null), (null key, mapped
# null), (key, null value). Expected per release from KStreamKTableJoinProcessor at the tags.

NULLS = [(T, "a", "A", 1), (S, None, v("a", 1), 2), (S, "k", v(None, 2), 3), (S, None, v(None, 3), 4),
         (S, "j", None, 5)]
NULL_KEY_JOINED = (None, "{to=a, x=1}-A", 2, 1)
MAPPED_NULL_LEFT = ("k", "{to=null, x=2}-null", 3, 2)
BOTH_NULL_LEFT = (None, "{to=null, x=3}-null", 4, 3)


@pytest.mark.parametrize("release,join,expected_outs,expected_drops", [
    # 1.0.1-2.6: null checks on the stream key first; a null mapped key is "no match" (KAFKA-6378)
    ("1.0.1", "inner", [], [(1, NK), (3, NK), (4, NV)]),
    ("1.0.1", "left", [MAPPED_NULL_LEFT], [(1, NK), (3, NK), (4, NV)]),
    ("2.6", "inner", [], [(1, NK), (3, NK), (4, NV)]),
    ("2.6", "left", [MAPPED_NULL_LEFT], [(1, NK), (3, NK), (4, NV)]),
    # 2.7-3.6 (KAFKA-10277): the mapper first, a null mapped key dropped, a null stream key joined
    ("2.7", "inner", [NULL_KEY_JOINED], [(2, NJ), (3, NJ), (4, NV)]),
    ("2.7", "left", [NULL_KEY_JOINED], [(2, NJ), (3, NJ), (4, NV)]),
    ("3.6", "left", [NULL_KEY_JOINED], [(2, NJ), (3, NJ), (4, NV)]),
    # 3.7-4.0 (KIP-962): a left join keeps a null-key record with a value
    ("3.7", "inner", [NULL_KEY_JOINED], [(2, NJ), (3, NJ), (4, NV)]),
    ("3.7", "left", [NULL_KEY_JOINED, BOTH_NULL_LEFT], [(2, NJ), (4, NV)]),
    ("4.0", "left", [NULL_KEY_JOINED, BOTH_NULL_LEFT], [(2, NJ), (4, NV)]),
    # 4.1+ (KAFKA-19208): ... and a record with a value whose mapped key is null
    ("4.1", "inner", [NULL_KEY_JOINED], [(2, NJ), (3, NJ), (4, NV)]),
    ("4.1", "left", [NULL_KEY_JOINED, MAPPED_NULL_LEFT, BOTH_NULL_LEFT], [(4, NV)]),
    ("4.3", "left", [NULL_KEY_JOINED, MAPPED_NULL_LEFT, BOTH_NULL_LEFT], [(4, NV)]),
])
def test_null_rules_per_release(release, join, expected_outs, expected_drops):
    r = run(spec(join), NULLS, release)
    assert r.failure is None
    assert outs(r) == expected_outs
    assert drops(r) == expected_drops


@pytest.mark.parametrize("release", ["0.10.2", "0.11.0", "1.0"])
@pytest.mark.parametrize("join", ["inner", "left"])
def test_a_null_mapped_key_kills_the_application_before_1_0_1(release, join):
    # KAFKA-6378: the store's get(null) throws NullPointerException (fixed in 1.0.1 and 1.1.0)
    r = run(spec(join), [(T, "a", "A", 1), (S, None, v("a"), 2), (S, "k", v("a"), 3), (S, "k", v(None), 4),
                         (S, "j", v("a"), 5)], release)
    assert r.failure.code is FailureCode.GLOBAL_LOOKUP_NULL_KEY and r.failure.input_index == 3
    assert outs(r) == [("k", "{to=a, x=v}-A", 3, 2)] and drops(r) == [(1, NK)]
    assert run(spec(join), [(S, "k", v(None), 1)], "1.0.1").failure is None


def test_a_null_value_never_reaches_the_mapper_result():
    # a mapper reading a null value gives null; the null value is what is reported
    for release in ("0.10.2", "2.6", "2.7", "4.3"):
        r = run(spec("left"), [(S, "k", None, 1)], release)
        assert outs(r) == [] and drops(r) == [(0, NV)] and r.failure is None


# --- the global table's source and restore ------------------------------------------------------------

def test_null_key_table_records_are_skipped():
    r = run(spec("left"), [(T, None, "Z", 1), (S, "k", v("a"), 2)])
    assert drops(r) == [(0, NK)] and outs(r) == [("k", "{to=a, x=v}-null", 2, 1)]


@pytest.mark.parametrize("release,skipped", [("2.5", False), ("2.6", True), ("2.6.1", True), ("2.6.2", False),
                                             ("2.7", True), ("2.7.1", False), ("2.8", False)])
def test_emit_on_change_skips_idempotent_table_updates_as_listed_only(release, skipped):
    records = [(T, "a", "A", 1), (T, "a", "A", 2), (T, "b", None, 3), (S, "k", v("a"), 4)]
    listed = run(spec("inner"), records, release)
    assert outs(listed) == [("k", "{to=a, x=v}-A", 4, 3)]
    assert drops(listed) == ([(1, DropReason.IDEMPOTENT_UPDATE), (2, DropReason.IDEMPOTENT_UPDATE)] if skipped else [])
    # the start-up restore writes the store without KTableSource
    booted = run(spec("inner"), records, release, global_table="bootstrap")
    assert outs(booted) == outs(listed) and drops(booted) == []


@pytest.mark.parametrize("release", ["0.11.0", "1.1", "3.9"])
def test_bootstrap_skips_null_key_table_records(release):
    r = run(spec("left"), [(S, "k", v("a"), 1), (T, None, "Z", 2), (T, "a", "A", 3)], release,
            global_table="bootstrap")
    assert outs(r) == [("k", "{to=a, x=v}-A", 1, 0)] and drops(r) == [(1, NK)]


def test_bootstrap_of_a_null_key_kills_the_application_in_0_10_2():
    # KAFKA-5047: GlobalStateManagerImpl#restoreState handed the null key to the store (0.10.2)
    r = run(spec("left"), [(S, "k", v("a"), 1), (T, "a", "A", 2), (T, None, "Z", 3), (T, None, "Y", 4)], "0.10.2",
            global_table="bootstrap")
    assert r.failure.code is FailureCode.GLOBAL_RESTORE_NULL_KEY and r.failure.input_index == 2
    assert outs(r) == [] and drops(r) == [] and r.processed == 1  # input 1 restored, the stream never ran
    # TopologyTestDriver's KTableSource skips it
    listed = run(spec("left"), [(S, "k", v("a"), 1), (T, "a", "A", 2), (T, None, "Z", 3)], "0.10.2")
    assert listed.failure is None and drops(listed) == [(2, NK)]


# --- when the table's records are applied ------------------------------------------------------------

BOOT = [(S, "k1", v("a", 1), 1), (T, "a", "A", 2), (S, "k2", v("a", 2), 3), (T, "a", None, 4), (T, "b", "B", 5),
        (S, "k3", v("b", 3), 6), (S, "k4", v("a", 4), 7)]


def test_as_listed_and_bootstrap_give_different_outputs():
    listed = run(spec("left"), BOOT)
    booted = run(spec("left"), BOOT, global_table="bootstrap")
    assert [o.value for o in listed.outputs] == ["{to=a, x=1}-null", "{to=a, x=2}-A", "{to=b, x=3}-B", "{to=a, x=4}-null"]
    assert [o.value for o in booted.outputs] == ["{to=a, x=1}-null", "{to=a, x=2}-null", "{to=b, x=3}-B", "{to=a, x=4}-null"]
    assert [o.input_index for o in booted.outputs] == [0, 2, 5, 6]
    assert booted.processed == len(BOOT)


def test_bootstrap_with_timestamp_sync_orders_only_the_stream():
    records = [(S, "k1", v("a", 1), 5, 0), (S, "k2", v("a", 2), 1, 1), (T, "a", "A", 9, 0), (S, "k3", v("a", 3), 3, 0)]
    r = run(spec("left"), records, order="timestamp_sync", partitions={"left": 2, "right": 2},
            global_table="bootstrap")
    # the table first; then task 0: k1@5 then k3@3 (offset order), task 1: k2@1, interleaved by head ts
    assert [(o.key, o.value, o.partition) for o in r.outputs] == [
        ("k2", "{to=a, x=2}-A", 1), ("k1", "{to=a, x=1}-A", 0), ("k3", "{to=a, x=3}-A", 0)]


# --- one store for every task ------------------------------------------------------------------------

def test_every_task_reads_the_one_global_table_whatever_the_partitions():
    records = [(T, "a", "A", 1, 1), (S, "k1", v("a", 1), 2, 0), (S, "k2", v("a", 2), 3, 1),
               (T, "a", "B", 4, 0), (S, "k3", v("a", 3), 5, 1), (T, "a", None, 6, 1), (S, "k4", v("a", 4), 7, 0)]
    r = run(spec("left"), records, partitions={"left": 2, "right": 2})
    assert [(o.partition, o.key, o.value) for o in r.outputs] == [
        (0, "k1", "{to=a, x=1}-A"), (1, "k2", "{to=a, x=2}-A"), (1, "k3", "{to=a, x=3}-B"), (0, "k4", "{to=a, x=4}-null")]


def test_the_global_topic_needs_no_co_partitioning():
    topology = {"operator": "global_table_join", "join": "left", "key_mapper": {"field": "to"}, "joiner": "pair"}
    sc = scenario(topology, [("right", "a", "A", 1, 0), ("left", "k", {"to": "a"}, 2, 2)],
                  partitions={"left": 3, "right": 1})
    assert [(o.partition, o.value) for o in run_scenario(sc).outputs] == [(2, [{"to": "a"}, "A"])]
    with pytest.raises(ScenarioError, match="co-partitioned"):
        scenario({"operator": "stream_table_join", "join": "left"}, [], partitions={"left": 3, "right": 1})


def test_bootstrap_is_only_for_global_table_joins():
    with pytest.raises(ScenarioError, match="global_table"):
        scenario({"operator": "stream_table_join", "join": "left"}, [], global_table="bootstrap")


def test_global_table_joins_do_not_exist_before_0_10_2():
    with pytest.raises(ScenarioError, match="KIP-99"):
        scenario({"operator": "global_table_join", "join": "left", "key_mapper": {"field": "to"}}, [],
                 semantics="0.10.1")


def test_a_replayed_record_the_mapper_cannot_read_is_an_error_naming_it():
    with pytest.raises(KssimError, match="input 1: value.to"):
        run(spec("left"), [(S, "k", v("a"), 1), (S, "k", {"other": 1}, 2)])


# --- explanations --------------------------------------------------------------------------------------

def test_explanations_name_the_rule_and_the_table_row():
    r = run(spec("left"), [(T, "a", "A", 1), (S, "k", v("a"), 2), (S, "j", v("b"), 3), (S, "n", v(None), 4),
                           (S, None, v(None), 5)], "4.1", explain=True)
    whys = [o.why for o in r.outputs]
    assert [w.rule for w in whys] == ["left_match", "left_no_match", "null_mapped_key_left_emit", "null_key_left_emit"]
    assert whys[0].joined[0].input_index == 0 and "KAFKA-19208" in whys[2].text and "KIP-962" in whys[3].text
    dropped = run(spec("inner"), [(S, "n", v(None), 1), (S, None, v("a"), 2)], "2.6", explain=True).drops
    assert [(d.reason, d.why.rule) for d in dropped] == [(NK, "null_key")]
    dropped = run(spec("inner"), [(S, "n", v(None), 1)], "2.7", explain=True).drops
    assert dropped[0].why.rule == "null_join_key" and "null join key or value" in dropped[0].why.text
