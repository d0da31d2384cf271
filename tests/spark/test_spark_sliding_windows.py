"""The Spark backend's sliding-window aggregation, rule by rule at its boundaries and releases.

Every case below is declared at module level and the whole set runs as one Spark batch with the
sliding conformance files, so each test only reads its case's result. Records are written
``(key, value, ts[, partition])``; results ``(key, value, ts, input)`` with the windowed key
written ``(key, start, end)``. Each expectation is derived in the comment above it from the Kafka
rule it pins (digest part C.2, ``KStreamSlidingWindowAggregate`` at the release tags).
"""
from __future__ import annotations

import copy
import os
import random

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all, result_bytes, run_on

from kssim.reference.model.codes import DropReason
from kssim.reference.model.scenario import read_document, scenario_from_dict

CASES = {}
EXPIRED, UNEMITTED = DropReason.EXPIRED_WINDOW, DropReason.UNEMITTED_WINDOW


def case(name, records, *, release="3.9", diff=10, grace=5, aggregation="count", emit="on_update",
         store="rocksdb", partitions=1, send_old=False):
    """Declare a scenario (run with every other one in one batch); returns its name."""
    inputs = []
    for rec in records:
        key, value, ts = rec[:3]
        item = {"topic": "input", "key": key, "value": value, "ts": ts}
        if len(rec) > 3:
            item["partition"] = rec[3]
        inputs.append(item)
    config = {"store": store}
    if partitions > 1:
        config["partitions"] = {"input": partitions}
    doc = {"format": "kssim-scenario/1", "name": name, "semantics": release, "config": config, "inputs": inputs,
           "topology": {"operator": "sliding_aggregate", "time_difference_ms": diff, "grace_ms": grace,
                        "aggregation": aggregation, "emit": emit, "send_old_values": send_old}}
    assert name not in CASES
    CASES[name] = scenario_from_dict(doc)
    return name


def outputs(result, partition=None):
    return [((o.key["key"], o.key["start"], o.key["end"]), o.value, o.ts, o.input_index)
            for o in result.outputs if partition is None or o.partition == partition]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


FILES = conformance_files("sliding_aggregate")


@pytest.fixture(scope="module")
def results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    names = list(CASES)
    scenarios = [CASES[n] for n in names] + load_all(FILES)
    out = run_scenarios(scenarios, spark)
    return dict(zip(names + FILES, zip(scenarios, out)))


def result_of(results, name):
    scenario, result = results[name]
    assert not isinstance(result, Exception), result
    return result


# --- the corpus ----------------------------------------------------------------------------------

def test_the_sliding_corpus_is_all_there():
    assert len(FILES) == 96  # 80 randomized against Kafka 3.9, 16 of KStreamSlidingWindowAggregateTest


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(results, path):
    assert_conforms(*results[path])


ALONE = FILES[::10]


@pytest.mark.parametrize("path", ALONE, ids=[os.path.relpath(f, CONFORMANCE) for f in ALONE])
def test_a_scenario_run_alone_conforms(spark, path):  # noqa: F811
    """A one-scenario batch takes the literal plan (its settings folded by the optimizer)."""
    from kssim.spark_backend.runtime.inputs import Features, config_row
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenario, = load_all([path])
    assert Features.of([config_row(0, scenario)]).constants
    assert_conforms(scenario, run_scenarios([scenario], spark)[0])


# --- the digest's walk-through (C.2: time difference 10, grace 5, count) ----------------------------

WALK = [("k", "a", 3), ("k", "b", 8), ("k", "c", 20), ("k", "d", 15), ("k", "e", 40), ("k", "f", 22),
        ("k", "g", 19), ("k", "h", 30)]
case("walk", WALK)


def test_windows_are_updated_and_created_as_kafka_does(results):
    result = result_of(results, "walk")
    assert outputs(result) == [
        # @3 and @8 are early (< 10): they share [0,10]; @8 first creates @3's right window
        (("k", 0, 10), 1, 3, 0), (("k", 4, 14), 1, 8, 1), (("k", 0, 10), 2, 8, 1),
        (("k", 10, 20), 1, 20, 2),
        # @15: updates [10,20] (its right seed), creates @8's right window [9,19], its own left
        # window [5,15] from the left seed [4,14], and its right window [16,26] = [10,20] without it
        (("k", 10, 20), 2, 20, 3), (("k", 9, 19), 1, 15, 3), (("k", 5, 15), 2, 15, 3), (("k", 16, 26), 1, 20, 3),
        (("k", 30, 40), 1, 40, 4),
        # @30 (close 35): [30,40] updated, [21,31] and [20,30] have closed (skipped, counted as
        # dropped), its right window [31,41] is a copy of [30,40] without it
        (("k", 30, 40), 2, 40, 7), (("k", 31, 41), 1, 40, 7)]
    assert drops(result) == [(5, EXPIRED), (6, EXPIRED), (7, EXPIRED), (7, EXPIRED)]


# emit on window close: @20 (close 15) emits the windows starting in [0, 4], @40 (close 35) those
# in [5, 24]; the in-memory store has already expired [5,15] (start 5 < 30 - 25 + 1)
case("walk-final-rocksdb", WALK, emit="on_window_close")
case("walk-final-in-memory", WALK, emit="on_window_close", store="in_memory")


def test_emit_final_rocksdb_and_in_memory(results):
    at_20 = [(("k", 0, 10), 2, 8, 2), (("k", 4, 14), 1, 8, 2)]
    at_40 = [(("k", 5, 15), 2, 15, 4), (("k", 9, 19), 1, 15, 4), (("k", 10, 20), 2, 20, 4), (("k", 16, 26), 1, 20, 4)]
    assert outputs(result_of(results, "walk-final-rocksdb")) == at_20 + at_40
    in_memory = result_of(results, "walk-final-in-memory")
    assert outputs(in_memory) == at_20 + at_40[1:]
    assert (4, UNEMITTED) in drops(in_memory)


# --- rules -------------------------------------------------------------------------------------------

# grace 0, @20: its left window [10,20] ends at the close time 20: updated since 3.3, skipped
# before [sliding_window_close_inclusive]
case("close-3.2", [("k", "a", 20)], release="3.2", grace=0)
case("close-3.3", [("k", "a", 20)], release="3.3", grace=0)


def test_since_3_3_a_window_ending_at_the_close_time_is_updated(results):
    assert outputs(result_of(results, "close-3.2")) == []
    assert drops(result_of(results, "close-3.2")) == [(0, EXPIRED)]
    assert outputs(result_of(results, "close-3.3")) == [(("k", 10, 20), 1, 20, 0)]


# null keys and null values are dropped (the only windowed aggregation that drops null values)
case("nulls", [(None, "a", 0), ("k", None, 0), ("k", "b", 20)])


def test_null_keys_and_values_are_dropped(results):
    result = result_of(results, "nulls")
    assert drops(result) == [(0, DropReason.NULL_KEY), (1, DropReason.NULL_VALUE)]
    assert outputs(result) == [(("k", 10, 20), 1, 20, 2)]


# old values: an updated fresh window reports the initializer's value (count: 0) as its old value;
# a right window copied from its seed reports none
case("old-values", [("k", "a", 8), ("k", "b", 3)], grace=100, send_old=True)


def test_old_values(results):
    result = result_of(results, "old-values")
    assert [(o.key["start"], o.value, o.old_value) for o in result.outputs] == [(0, 1, 0), (4, 1, None), (0, 2, 1)]


# stream time is per task: task 1 at 100 does not close task 0's windows (grace 0)
case("per-task", [("k", "a", 20, 0), ("k2", "b", 100, 1), ("k", "c", 15, 0)], grace=0, partitions=2)


def test_stream_time_is_per_task(results):
    result = result_of(results, "per-task")
    assert outputs(result, 0)[:2] == [(("k", 10, 20), 1, 20, 0), (("k", 10, 20), 2, 20, 2)]
    assert outputs(result, 1) == [(("k2", 90, 100), 1, 100, 1)]


# --- variants of the corpus, and a task larger than one Arrow batch of results -----------------------

def variant(doc, rng):
    """A conformance scenario spread over 2-3 partitions, without its expectations."""
    doc = copy.deepcopy(doc)
    for name in ("expected", "checkpoints", "expected_failure", "compare"):
        doc.pop(name, None)
    partitions = rng.choice([2, 3])
    config = doc.setdefault("config", {})
    config["order"] = rng.choice(["as_listed", "timestamp_sync"])
    config["store"] = rng.choice(["rocksdb", "in_memory"])
    config["partitions"] = {"input": partitions}
    doc["topology"]["send_old_values"] = rng.random() < 0.3
    for rec in doc["inputs"]:
        rec["partition"] = rng.randrange(partitions)
    doc["name"] += f"-p{partitions}-{config['order']}"
    return doc


def large(emit):
    """6 000 records of 40 keys in one task: more results than one Arrow batch of the replay."""
    rng = random.Random(3)
    inputs = [{"topic": "input", "key": f"k{rng.randrange(40)}", "value": str(i), "ts": i // 3 + rng.randrange(30)}
              for i in range(6000)]
    return scenario_from_dict({"format": "kssim-scenario/1", "name": f"large-{emit}", "semantics": "3.9",
                               "topology": {"operator": "sliding_aggregate", "time_difference_ms": 20,
                                            "grace_ms": 10, "aggregation": "string_adder", "emit": emit},
                               "inputs": inputs})


@pytest.fixture(scope="module")
def variants():
    rng = random.Random(11)
    return [scenario_from_dict(variant(read_document(p), rng)) for p in FILES[::3]] + \
        [large("on_update"), large("on_window_close")]


def test_byte_identical_with_1_and_7_shuffle_partitions(spark, variants):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    before = spark.conf.get("spark.sql.shuffle.partitions")
    runs = {}
    try:
        for partitions in ("1", "7"):
            spark.conf.set("spark.sql.shuffle.partitions", partitions)
            runs[partitions] = [result_bytes(r) for r in run_scenarios(variants, spark)]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    assert runs["1"] == runs["7"]
    assert len(runs["1"][-2].splitlines()) > 10_000  # the large case's results span several batches


def test_the_variants_agree_with_the_reference_engine(spark, variants):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    spark_runs = run_scenarios(variants, spark)
    reference_runs = run_on("reference", variants)
    for scenario, mine, theirs in zip(variants, spark_runs, reference_runs):
        assert result_bytes(mine) == result_bytes(theirs), scenario.name


def test_a_python_api_aggregation(spark):  # noqa: F811
    """An ``Aggregation`` of callables (the Python API) is shipped to the replay as it is."""
    import attrs

    from kssim.reference.model.aggregations import aggregation_from_callables
    from kssim.spark_backend.runtime.runner import run_scenarios

    lengths = aggregation_from_callables(initializer=lambda: 0, aggregator=lambda k, v, agg: agg + len(v),
                                         name="lengths")
    base = scenario_from_dict({"format": "kssim-scenario/1", "name": "api", "semantics": "3.9",
                               "topology": {"operator": "sliding_aggregate", "time_difference_ms": 10,
                                            "grace_ms": 5},
                               "inputs": [{"topic": "input", "key": "k", "value": v, "ts": t}
                                          for v, t in (("ab", 20), ("cde", 25))]})
    api = attrs.evolve(base, topology=attrs.evolve(base.topology, aggregation=lengths))
    result, = run_scenarios([api], spark)
    # @20: its left window [10,20]; @25: [10,20] + its left [15,25] (seeded with 2) and @20's right [21,31]
    assert [(o.key["start"], o.value) for o in result.outputs] == [(10, 2), (21, 3), (15, 5)]
    assert result_bytes(result) == result_bytes(run_on("reference", [api])[0])


def test_a_task_is_replayed_per_key_unless_a_record_reaches_the_stores_floor(spark):  # noqa: F811
    """The store's clock never passes the stream time: a task none of whose records fetches or puts
    below stream time - retention + 1 cannot depend on it, and runs one replay per key."""
    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.inputs import scenarios_to_frames, with_configs
    from kssim.spark_backend.runtime.processing_order import by_task, with_processing_order
    from kssim.spark_backend.windows.sliding import _scoped

    names = ["walk", "old-values", "walk-final-rocksdb"]
    records, configs, features = scenarios_to_frames(spark, [CASES[n] for n in names], [0, 1, 2])
    rows = with_processing_order(with_configs(by_task(records, features), configs, features), features)
    scopes = {(r["sid"], r["scope"]) for r in _scoped(rows.filter(F.col("key").isNotNull()), features).collect()}
    # walk: @15 arrives at stream time 20 (close 15), its fetch reaches 15 - 20 < 20 - 25 + 1: one replay
    assert scopes == {(0, ""), (1, '"k"'), (2, "")}  # old-values: per key; emit-final: per task
