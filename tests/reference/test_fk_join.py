"""The foreign-key table join (KIP-213) on the reference engine, per release: the KIP walkthrough,
hash validation, prefix-scan order, output timestamps, versioned tables, partitions, interleaved
delivery and the 4.1 rule changes. Expected outputs are written out in full."""
import re

import attrs
import pytest

from kssim_testing import assert_passes, conformance_files
from kssim.reference.model.codes import DropReason
from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.keys import partition_for
from kssim.reference.model.scenario import load_scenario, scenario_from_dict
from kssim.reference.runtime.delivery import run_interleaved
from kssim.reference.runtime.engine import Engine, processing_order, run_scenario


def doc(release, join, inputs, config=None, **topology):
    """A scenario document; inputs are (topic, key, value, ts[, partition]) with topic "L" or "R"."""
    recs = []
    for rec in inputs:
        topic, key, value, ts = rec[:4]
        r = {"topic": {"L": "left", "R": "right"}[topic], "key": key, "value": value, "ts": ts}
        if len(rec) > 4:
            r["partition"] = rec[4]
        recs.append(r)
    top = {"operator": "fk_join", "join": join, "foreign_key": {"field": "fk"}}
    top.update(topology)
    d = {"format": "kssim-scenario/1", "name": "t", "semantics": release, "topology": top, "inputs": recs}
    if config:
        d["config"] = config
    return d


def run(release, join, inputs, config=None, explain=False, **topology):
    return run_scenario(scenario_from_dict(doc(release, join, inputs, config, **topology)), explain=explain)


def outs(result):
    """(key, value, ts, input) of every output."""
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


def fk(f, v=None):
    return {"fk": f} if v is None else {"fk": f, "v": v}


# --- the KIP-213 walkthrough (digest A.9) -----------------------------------------------------------

WALKTHROUGH = [
    ("R", 1, "foo", 5),
    ("L", "k", fk(1), 10),    # 1: k -> fk 1
    ("L", "k", fk(2), 11),    # 2: k -> fk 2, no right row
    ("L", "k", fk(3), 12),    # 3: k -> fk 3, no right row
    ("R", 3, "bar", 13),      # 4: right 3 arrives
    ("L", "k", None, 14),     # 5: delete k
    ("L", "k", fk(1), 15),    # 6: k -> fk 1 again
    ("L", "q", fk(10), 16),   # 7: q -> fk 10, no right row
    ("R", 10, "baz", 17),     # 8: right 10 arrives
]
INNER = [
    ("k", [fk(1), "foo"], 10, 1),
    ("k", None, 11, 2),
    ("k", None, 12, 3),                    # unnecessary: the result was already deleted
    ("k", [fk(3), "bar"], 13, 4),
    ("k", None, 14, 5),
    ("k", [fk(1), "foo"], 15, 6),
    ("q", [fk(10), "baz"], 17, 8),
]
LEFT_SINGLE = [
    ("k", [fk(1), "foo"], 10, 1),
    ("k", [fk(2), None], 11, 2),
    ("k", [fk(3), None], 12, 3),
    ("k", [fk(3), "bar"], 13, 4),
    ("k", None, 14, 5),
    ("k", [fk(1), "foo"], 15, 6),
    ("q", [fk(10), None], 16, 7),
    ("q", [fk(10), "baz"], 17, 8),
]
LEFT_DOUBLE = [  # 3.7-4.0: DELETE_KEY_AND_PROPAGATE to the old FK answers too (KAFKA-16394/16644)
    ("k", [fk(1), "foo"], 10, 1),
    ("k", [fk(2), None], 11, 2), ("k", [fk(2), None], 11, 2),
    ("k", [fk(3), None], 12, 3), ("k", [fk(3), None], 12, 3),
    ("k", [fk(3), "bar"], 13, 4),
    ("k", None, 14, 5), ("k", None, 14, 5),
    ("k", [fk(1), "foo"], 15, 6),
    ("q", [fk(10), None], 16, 7),
    ("q", [fk(10), "baz"], 17, 8),
]


@pytest.mark.parametrize("release, join, expected", [
    ("3.6", "inner", INNER), ("3.9", "inner", INNER), ("4.1", "inner", INNER),
    ("2.4", "left", LEFT_SINGLE), ("3.6", "left", LEFT_SINGLE), ("3.9", "left", LEFT_DOUBLE),
    ("4.1", "left", LEFT_SINGLE),
])
def test_kip213_walkthrough(release, join, expected):
    assert outs(run(release, join, WALKTHROUGH)) == expected


# --- output timestamps (digest A.7) ----------------------------------------------------------------

def test_output_timestamps():
    inputs = [
        ("R", 1, "X", 100),
        ("L", "m", fk(1), 50),     # 1: max(50, 100)
        ("L", "m", None, 60),      # 2: delete: max(60, 100)
        ("L", "k", fk(1), 50),     # 3: 100
        ("L", "k", fk(1, "b"), 200),  # 4: 200
        ("R", 1, "Y", 60),         # 5: the right record's ts, below the previous result's
        ("L", "k", fk(9), 70),     # 6: missing FK: the LHS ts
        ("L", "k", fk(1, "c"), 80),   # 7: max(80, 60)
    ]
    assert [(o[0], o[2], o[3]) for o in outs(run("3.9", "inner", inputs))] == [
        ("m", 100, 1), ("m", 100, 2), ("k", 100, 3), ("k", 200, 4), ("k", 60, 5), ("k", 70, 6), ("k", 80, 7)]
    # the 3.9 left join's delete: the old FK's answer at max(60, 100), then the null FK's at 60
    left = outs(run("3.9", "left", inputs[:3]))
    assert left == [("m", [fk(1), "X"], 100, 1), ("m", None, 100, 2), ("m", None, 60, 2)]


# --- the 4.1 rule changes (kafka-semantics-4x.md rule table) -----------------------------------------

def test_fk_left_unsubscribe_no_propagate_example_1():
    inputs = [("R", 1, "X", 100), ("L", "m", fk(1, "a"), 50), ("L", "m", None, 60)]
    joined = ("m", [fk(1, "a"), "X"], 100, 1)
    assert outs(run("3.9", "left", inputs)) == [joined, ("m", None, 100, 2), ("m", None, 60, 2)]
    assert outs(run("4.0", "left", inputs)) == [joined, ("m", None, 100, 2), ("m", None, 60, 2)]
    assert outs(run("4.1", "left", inputs)) == [joined, ("m", None, 60, 2)]


def test_fk_left_unsubscribe_no_propagate_example_2_observed_on_4_1():
    # the FK is the whole value; Kafka's joiner printed "A_" for A with no right value: concat with
    # an empty separator prints "Anull" here
    inputs = [{"topic": t, "key": k, "value": v, "ts": ts} for t, k, v, ts in [
        ("left", "k1", "A", 0), ("right", "A", "X", 1), ("left", "k1", "A2", 2), ("left", "k2", "A", 3),
        ("right", "A", "Y", 4), ("left", "k1", "B", 5), ("left", "k1", None, 6)]]
    d = {"format": "kssim-scenario/1", "name": "crabka", "semantics": "4.1", "inputs": inputs,
         "topology": {"operator": "fk_join", "join": "left", "foreign_key": {"from": "value"},
                      "joiner": "concat", "joiner_separator": ""}}
    assert outs(run_scenario(scenario_from_dict(d))) == [
        ("k1", "Anull", 0, 0), ("k1", "AX", 1, 1), ("k1", "A2null", 2, 2), ("k2", "AX", 3, 3),
        ("k2", "AY", 4, 4), ("k1", "Bnull", 5, 5), ("k1", None, 6, 6)]
    d["semantics"] = "3.9"  # two records for A2@2, B@5 and null@6
    assert outs(run_scenario(scenario_from_dict(d))) == [
        ("k1", "Anull", 0, 0), ("k1", "AX", 1, 1), ("k1", "A2null", 2, 2), ("k1", "A2null", 2, 2),
        ("k2", "AX", 3, 3), ("k2", "AY", 4, 4), ("k1", "Bnull", 5, 5), ("k1", "Bnull", 5, 5),
        ("k1", None, 6, 6), ("k1", None, 6, 6)]


def test_fk_inner_null_fk_transitions_a_fk_turns_null():
    inputs = [("R", 1, "X", 5), ("L", "k", fk(1, "a"), 10), ("L", "k", fk(None, "b"), 20)]
    joined = ("k", [fk(1, "a"), "X"], 10, 1)
    r39, r41 = run("3.9", "inner", inputs), run("4.1", "inner", inputs)
    assert outs(r39) == [joined]  # the stale result stays (KAFKA-16434)
    assert outs(r41) == [joined, ("k", None, 20, 2)]
    assert drops(r39) == drops(r41) == [(2, DropReason.NULL_FOREIGN_KEY)]


def test_fk_inner_null_fk_transitions_b_fk_turns_non_null():
    inputs = [("R", 1, "X", 5), ("L", "k", fk(None, "a"), 10), ("L", "k", fk(1, "b"), 20)]
    r39, r41 = run("3.9", "inner", inputs), run("4.1", "inner", inputs)
    assert outs(r39) == []
    assert drops(r39) == [(1, DropReason.NULL_FOREIGN_KEY), (2, DropReason.NULL_FOREIGN_KEY)]
    assert outs(r41) == [("k", [fk(1, "b"), "X"], 20, 2)]
    assert drops(r41) == [(1, DropReason.NULL_FOREIGN_KEY)]


def test_fk_inner_null_fk_transitions_c_same_fk_right_missing():
    inputs = [("L", "k", fk(9, "a"), 10), ("L", "k", fk(9, "b"), 11)]
    assert outs(run("3.9", "inner", inputs)) == [("k", None, 11, 1)]
    assert outs(run("4.1", "inner", inputs)) == []


def test_the_left_join_null_foreign_key_rule_of_3_7():
    inputs = [("L", "k", fk(None, "a"), 10), ("L", "k", None, 11)]
    assert outs(run("3.6", "left", inputs)) == []
    assert drops(run("3.6", "left", inputs)) == [(0, DropReason.NULL_FOREIGN_KEY), (1, DropReason.NULL_FOREIGN_KEY)]
    assert outs(run("3.7", "left", inputs)) == [("k", [fk(None, "a"), None], 10, 0), ("k", None, 11, 1)]


# --- hash validation -----------------------------------------------------------------------------------

def _interleaved(release, join, inputs, schedule, partitions=None):
    config = {"delivery": "interleaved", "schedule": schedule}
    if partitions:
        config["partitions"] = partitions
    return run(release, join, inputs, config, explain=True)


def test_a_stale_response_is_dropped():
    # both updates are processed before their subscriptions: r1 carries the hash of v1, and the
    # left row holds v2 when r1 arrives (queues: 0 input, then subscription/0, response/0)
    inputs = [("R", "Y", "bar", 1), ("L", "A", fk("Y", 1), 2), ("L", "A", fk("Y", 2), 3)]
    result = _interleaved("3.9", "inner", inputs, [0, 0, 0, 0, 1, 0, 0])
    assert outs(result) == [("A", [fk("Y", 2), "bar"], 3, 2)]
    assert drops(result) == [(1, DropReason.STALE_FK_RESPONSE)]
    text = result.drops[0].why.describe()
    assert "hash check failed" in text and "stale" in text
    # the response's hash and the current value's, abbreviated to 8 hex digits
    carried, current = re.search(r"carries hash ([0-9a-f]{8}), .* hashes to ([0-9a-f]{8}): stale", text).groups()
    assert carried != current and f"with hash {carried}" in text


def test_a_value_that_comes_back_makes_an_old_response_valid_again():
    v1, v2 = fk("Y", 1), fk("Y", 2)
    inputs = [("R", "Y", "bar", 1), ("L", "A", v1, 2), ("L", "A", v2, 3), ("L", "A", fk("Y", 1), 4)]
    # all inputs first, then every subscription, then every response
    result = _interleaved("3.9", "inner", inputs, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    assert outs(result) == [("A", [v1, "bar"], 2, 1), ("A", [v1, "bar"], 4, 3)]
    assert drops(result) == [(2, DropReason.STALE_FK_RESPONSE)]


def test_before_3_3_responses_go_by_the_pk_and_miss_a_row_in_another_partition():
    # "A" hashes to partition 0 of 2; the left record sits in partition 1
    assert partition_for("A", 2) == 0
    inputs = [("R", "Y", "bar", 1, partition_for("Y", 2)), ("L", "A", fk("Y", 1), 2, 1)]
    parts = {"partitions": {"left": 2, "right": 2}}
    old = run("3.2", "inner", inputs, parts)
    assert outs(old) == [] and drops(old) == [(1, DropReason.STALE_FK_RESPONSE)]
    new = run("3.3", "inner", inputs, parts)
    assert [(o.partition, o.key, o.value, o.ts) for o in new.outputs] == [(1, "A", [fk("Y", 1), "bar"], 2)]


# --- prefix-scan order --------------------------------------------------------------------------------

def test_a_right_update_answers_subscribers_in_serialized_pk_order_at_its_own_ts():
    inputs = [("L", "p", fk(1), 300), ("L", "a", fk(1), 301), ("L", "z", fk(1), 302), ("R", 1, "x", 10),
              ("R", 1, None, 5)]
    result = run("3.9", "inner", inputs)
    assert outs(result) == [
        ("a", [fk(1), "x"], 10, 3), ("p", [fk(1), "x"], 10, 3), ("z", [fk(1), "x"], 10, 3),
        ("a", None, 5, 4), ("p", None, 5, 4), ("z", None, 5, 4)]


def test_every_right_change_rescans_repeated_deletes_included():
    inputs = [("L", "k", fk(1), 1), ("R", 1, "x", 2), ("R", 1, "x", 3), ("R", 1, None, 4), ("R", 1, None, 5)]
    assert outs(run("3.9", "left", inputs)) == [
        ("k", [fk(1), None], 1, 0), ("k", [fk(1), "x"], 2, 1), ("k", [fk(1), "x"], 3, 2),
        ("k", [fk(1), None], 4, 3), ("k", [fk(1), None], 5, 4)]
    assert outs(run("3.9", "inner", inputs)) == [
        ("k", [fk(1), "x"], 2, 1), ("k", [fk(1), "x"], 3, 2), ("k", None, 4, 3), ("k", None, 5, 4)]


# --- tombstones, null keys, old values -------------------------------------------------------------------

def test_deleting_a_row_that_never_joined_emits_a_tombstone_but_an_absent_key_does_not():
    inputs = [("L", "k", fk(9), 1), ("L", "k", None, 2), ("L", "k", None, 3)]
    assert outs(run("3.9", "inner", inputs)) == [("k", None, 2, 1)]


def test_null_keys_are_dropped_by_the_table_sources():
    result = run("3.9", "left", [("L", None, fk(1), 1), ("R", None, "x", 2)])
    assert outs(result) == [] and drops(result) == [(0, DropReason.NULL_KEY), (1, DropReason.NULL_KEY)]


def test_send_old_values_reports_the_result_tables_previous_value():
    inputs = [("R", 1, "x", 1), ("L", "k", fk(1), 2), ("R", 1, "y", 3), ("L", "k", None, 4)]
    result = run("3.9", "inner", inputs, send_old_values=True)
    assert [(o.key, o.value, o.old_value, o.ts) for o in result.outputs] == [
        ("k", [fk(1), "x"], None, 2), ("k", [fk(1), "y"], [fk(1), "x"], 3), ("k", None, [fk(1), "y"], 4)]


def test_emit_on_change_of_2_6_skips_an_idempotent_left_update():
    inputs = [("R", 1, "x", 1), ("L", "k", fk(1), 2), ("L", "k", fk(1), 3)]
    assert outs(run("2.6", "inner", inputs)) == [("k", [fk(1), "x"], 2, 1)]
    assert drops(run("2.6", "inner", inputs)) == [(2, DropReason.IDEMPOTENT_UPDATE)]
    assert outs(run("2.8", "inner", inputs)) == [("k", [fk(1), "x"], 2, 1), ("k", [fk(1), "x"], 3, 2)]


# --- versioned tables (3.5+) -----------------------------------------------------------------------------

VERSIONED = {"versioned": True, "history_retention_ms": 100}


def test_a_versioned_left_table_drops_updates_that_are_not_the_latest():
    inputs = [("R", 1, "x", 1), ("R", 2, "y", 1), ("L", "k", fk(1), 10), ("L", "k", fk(2), 5)]
    versioned = run("3.9", "inner", inputs, left_table=VERSIONED)
    assert outs(versioned) == [("k", [fk(1), "x"], 10, 2)]
    assert drops(versioned) == [(3, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]
    assert outs(run("3.9", "inner", inputs)) == [("k", [fk(1), "x"], 10, 2), ("k", [fk(2), "y"], 5, 3)]


def test_a_versioned_right_table_drops_updates_that_are_not_the_latest():
    inputs = [("R", 1, "x", 10), ("L", "k", fk(1), 20), ("R", 1, "old", 5)]
    versioned = run("3.9", "inner", inputs, right_table=VERSIONED)
    assert outs(versioned) == [("k", [fk(1), "x"], 20, 1)]
    assert drops(versioned) == [(2, DropReason.OUT_OF_ORDER_VERSIONED_UPDATE)]
    assert outs(run("3.9", "inner", inputs))[-1] == ("k", [fk(1), "old"], 5, 2)


# --- partitions ------------------------------------------------------------------------------------------

def test_two_partitions_synchronous():
    parts = {"partitions": {"left": 2, "right": 2}}
    inputs = [("R", "X", "x", 1, partition_for("X", 2)), ("R", "Y", "y", 2, partition_for("Y", 2)),
              ("L", "A", fk("X"), 3, partition_for("A", 2)), ("L", "B", fk("Y"), 4, partition_for("B", 2)),
              ("L", "A", fk("Y"), 5, partition_for("A", 2)), ("R", "Y", "y2", 6, partition_for("Y", 2))]
    result = run("3.9", "left", inputs, parts)
    pa, pb = partition_for("A", 2), partition_for("B", 2)
    assert [(o.partition, o.key, o.value, o.ts, o.input_index) for o in result.outputs] == [
        (pa, "A", [fk("X"), "x"], 3, 2),
        (pb, "B", [fk("Y"), "y"], 4, 3),
        (pa, "A", [fk("Y"), None], 5, 4),   # 3.9 left: the old FK's DELETE_KEY_AND_PROPAGATE answers first
        (pa, "A", [fk("Y"), "y"], 5, 4),
        (pa, "A", [fk("Y"), "y2"], 6, 5),   # subscribers in PK byte order: A, then B
        (pb, "B", [fk("Y"), "y2"], 6, 5),
    ]


def test_left_and_right_may_have_different_partition_counts():
    parts = {"partitions": {"left": 3, "right": 1}}
    inputs = [("R", "X", "x", 1), ("L", "A", fk("X"), 2, 2), ("L", "B", fk("X"), 3, 1)]
    result = run("3.9", "inner", inputs, parts)
    assert [(o.partition, o.key, o.ts) for o in result.outputs] == [(2, "A", 2), (1, "B", 3)]


# --- interleaved delivery ------------------------------------------------------------------------------

RACE = [("R", "X", "x", 1, partition_for("X", 2)), ("R", "Y", "y", 2, partition_for("Y", 2)),
        ("L", "A", fk("X", 1), 3, 0), ("L", "A", fk("Y", 2), 4, 0)]
RACE_PARTS = {"left": 2, "right": 2}


def _race(seed=None, schedule=None, release="3.9"):
    config = {"partitions": RACE_PARTS, "delivery": "interleaved"}
    if seed is not None:
        config["seed"] = seed
    if schedule is not None:
        config["schedule"] = list(schedule)
    return run(release, "left", RACE, config)


def test_the_race_needs_two_partitions():
    assert partition_for("X", 2) != partition_for("Y", 2)


def test_same_seed_same_run():
    a, b = _race(seed=7), _race(seed=7)
    assert outs(a) == outs(b) and a.schedule == b.schedule and a.schedule_options == b.schedule_options
    assert len(a.schedule) == len(a.schedule_options) and all(0 <= c < w for c, w in zip(a.schedule, a.schedule_options))


def test_a_recorded_schedule_replays_exactly():
    for seed in range(10):
        taken = _race(seed=seed)
        again = _race(schedule=taken.schedule)
        assert outs(again) == outs(taken) and again.schedule == taken.schedule and drops(again) == drops(taken)


def test_different_seeds_reach_different_outputs_on_an_fk_change_race():
    seen = {tuple(map(repr, outs(_race(seed=seed)))) for seed in range(30)}
    assert len(seen) >= 2
    # digest A.10: a 3.9 left join can end on ((Y,2), null) after ((Y,2), y); 4.1 cannot
    finals = {outs(_race(seed=seed))[-1][1][1] for seed in range(30)}
    assert finals == {"y", None}
    assert {outs(_race(seed=seed, release="4.1"))[-1][1][1] for seed in range(30)} == {"y"}


def test_without_a_seed_a_schedule_prefix_continues_synchronously():
    synchronous = run("3.9", "left", RACE, {"partitions": RACE_PARTS})
    assert outs(_race(schedule=[0])) == outs(synchronous)


def test_steps_name_the_queues_in_option_order():
    scenario = scenario_from_dict(doc("3.9", "inner", [("R", "Y", "bar", 1), ("L", "A", fk("Y", 1), 2),
                                                       ("L", "A", fk("Y", 2), 3)],
                                      {"delivery": "interleaved", "schedule": [0, 0, 0, 0, 1, 0, 0]}))
    engine = Engine(scenario.topology, scenario.profile, scenario.config)
    steps = []
    result = run_interleaved(engine, processing_order(scenario.inputs, scenario.config, scenario.profile,
                                                      engine.topics), scenario.config, steps=steps)
    sub, resp = "fk-subscription-registration/0", "fk-subscription-response/0"
    assert [(s.options, s.chosen) for s in steps] == [
        (("input",), "input"), (("input",), "input"), (("input", sub), "input"), ((sub,), sub),
        ((sub, resp), resp), ((sub,), sub), ((resp,), resp)]
    assert result.schedule == (0, 0, 0, 0, 1, 0, 0) and result.schedule_options == (1, 1, 2, 1, 2, 1, 1)


def test_a_choice_that_names_no_queue_is_an_error():
    with pytest.raises(KssimError, match=r"config.schedule\[0\]"):
        _race(schedule=[3])


def test_synchronous_order_equals_topology_test_driver_order():
    # TTD: one task; internal records re-enqueued per topic; the queue with the lowest head ts goes
    # next (PartitionGroup), the next input only once every queue is empty
    def ttd(labels, heads):
        internal = [i for i, label in enumerate(labels) if label != "input"]
        return min(internal, key=lambda i: (heads[i], -i)) if internal else 0

    for path in conformance_files("fk_join")[::7]:
        scenario = load_scenario(path)
        config = attrs.evolve(scenario.config, delivery="interleaved")
        engine = Engine(scenario.topology, scenario.profile, config)
        result = run_interleaved(engine, processing_order(scenario.inputs, config, scenario.profile, engine.topics),
                                 config, chooser=ttd)
        assert outs(result) == outs(run_scenario(scenario)), path


# --- explanations --------------------------------------------------------------------------------------

def test_explain_names_the_hops():
    result = run("3.9", "inner", [("R", 1, "x", 1), ("L", "k", fk(1), 2), ("R", 1, "y", 3)], explain=True)
    first, second = (o.why.describe() for o in result.outputs)
    for part in ("sent PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE for FK 1", "subscription partition 0",
                 "received by foreign task 0", "looked up right 1:x@1", "response partition 0",
                 "hash check passed"):
        assert part in first
    assert "prefix scan of FK 1" in second and "hash check passed" in second


def test_drops_are_explained():
    result = run("3.9", "inner", [("L", "k", fk(None), 1)], explain=True)
    assert drops(result) == [(0, DropReason.NULL_FOREIGN_KEY)]
    assert "null foreign key" in result.drops[0].why.describe()


# --- loader and replay ---------------------------------------------------------------------------------

def test_fk_joins_before_2_4_are_rejected():
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(doc("2.3", "inner", []))
    assert err.value.where == "topology.operator"


def test_old_values_from_an_unmaterialized_result_need_2_4_1():
    inputs = [("R", 1, "x", 1), ("L", "k", fk(1), 2)]
    with pytest.raises(ScenarioError) as err:
        run("2.4", "inner", inputs, send_old_values=True)
    assert err.value.where == "topology.send_old_values" and "KAFKA-9500" in err.value.message
    assert [(o.value, o.old_value) for o in run("2.4.1", "inner", inputs, send_old_values=True).outputs] == [
        ([fk(1), "x"], None)]


@pytest.mark.parametrize("value, where", [("text", "inputs[0].value.fk"), ({"v": 1}, "inputs[0].value.fk")])
def test_a_left_value_without_the_fk_is_a_loader_error(value, where):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict(doc("3.9", "inner", [("L", "k", value, 1)]))
    assert err.value.where == where


def test_a_bad_left_record_in_a_replay_names_file_record_and_field(tmp_path):
    from kssim.reference.runtime.replay import replay

    data = tmp_path / "in.jsonl"
    data.write_text('{"topic":"left","key":"a","value":{"fk":1},"ts":1}\n'
                    '{"topic":"left","key":"b","value":{"v":1},"ts":2}\n')
    scenario = scenario_from_dict(doc("3.9", "inner", []))
    with pytest.raises(ScenarioError) as err:
        replay(scenario, [str(data)], str(tmp_path / "out.jsonl"))
    assert err.value.path == str(data) and err.value.where == "line 2, field value.fk"
    assert not (tmp_path / "out.jsonl").exists()


# --- the conformance corpus ------------------------------------------------------------------------------

def test_every_fk_join_conformance_file_passes():
    files = conformance_files("fk_join")
    assert len(files) == 230
    for path in files:
        scenario = load_scenario(path)
        assert_passes(scenario, run_scenario(scenario))
