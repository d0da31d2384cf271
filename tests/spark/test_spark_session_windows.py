"""The Spark backend's session aggregation, rule by rule at its boundaries and release switches.

Every case below is declared at module level and the whole set runs as one Spark batch with the
346 session conformance files, so each test only reads its case's result. Records are written
``(key, value, ts[, partition])``; results ``(key, value, ts, input)`` with the windowed key
written ``(key, start, end)``. Each expectation is derived in the comment above it from the Kafka
rule it pins (digest part B, ``KStreamSessionWindowAggregate`` at the release tags).
"""
from __future__ import annotations

import copy
import os
import random

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all, result_bytes, run_on

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.scenario import read_document, scenario_from_dict

CASES = {}
EXPIRED, UNEMITTED, NULL_KEY = DropReason.EXPIRED_WINDOW, DropReason.UNEMITTED_WINDOW, DropReason.NULL_KEY


def case(name, records, *, release="3.9", gap=10, grace=5, aggregation="count", emit="on_update",
         store="rocksdb", partitions=1, send_old=False, retention=None):
    """Declare a scenario (run with every other one in one batch); returns its name."""
    inputs = []
    for rec in records:
        key, value, ts = rec[:3]
        item = {"topic": "input", "key": key, "value": value, "ts": ts}
        if len(rec) > 3:
            item["partition"] = rec[3]
        inputs.append(item)
    topology = {"operator": "session_aggregate", "gap_ms": gap, "grace_ms": grace, "aggregation": aggregation,
                "emit": emit, "send_old_values": send_old}
    if retention is not None:
        topology["retention_ms"] = retention
    config = {"store": store}
    if partitions > 1:
        config["partitions"] = {"input": partitions}
    doc = {"format": "kssim-scenario/1", "name": name, "semantics": release, "config": config, "inputs": inputs,
           "topology": topology}
    assert name not in CASES
    CASES[name] = scenario_from_dict(doc)
    return name


def outputs(result, partition=None):
    return [((o.key["key"], o.key["start"], o.key["end"]), o.value, o.ts, o.input_index)
            for o in result.outputs if partition is None or o.partition == partition]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


FILES = conformance_files("session_aggregate")


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

def test_the_session_corpus_is_all_there():
    assert len(FILES) == 346


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(results, path):
    assert_conforms(*results[path])


#: every 20th file (every release, both stores, both emit strategies)
ALONE = FILES[::20]


@pytest.mark.parametrize("path", ALONE, ids=[os.path.relpath(f, CONFORMANCE) for f in ALONE])
def test_a_scenario_run_alone_conforms(spark, path):  # noqa: F811
    """A one-scenario batch takes the literal plan (its settings folded by the optimizer)."""
    from kssim.spark_backend.runtime.inputs import Features, config_row
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenario, = load_all([path])
    assert Features.of([config_row(0, scenario)]).constants
    assert_conforms(scenario, run_scenarios([scenario], spark)[0])


def test_an_emit_on_update_replay_is_one_pass_over_narrow_rows(spark):  # noqa: F811
    """Without emit-on-window-close the replay reads the records once (no local checkpoint), and
    only their own columns travel to it: the settings ship with the function, and a count gets
    no values (issue 19: the rows entering the Python replay were 37 columns wide)."""
    import re

    from kssim.spark_backend.runtime.inputs import scenarios_to_frames
    from kssim.spark_backend.runtime.runner import batch_events
    from kssim.spark_backend.windows.session_replay import IN_COLUMNS

    records, configs, features = scenarios_to_frames(spark, [CASES["late-merges"]], [0])
    plan = batch_events(records, configs, features)._jdf.queryExecution().executedPlan().toString()
    assert "ExistingRDD" not in plan  # what a local checkpoint reads back
    replay_input = plan[plan.index("MapInArrow replay(") + len("MapInArrow replay("):].split(")#", 1)[0]
    assert [c.split("#")[0] for c in replay_input.split(", ")] == list(IN_COLUMNS)
    assert not any(c.startswith(("sw_", "session_")) for c in IN_COLUMNS)
    assert re.search(r"\(sw_agg#\d+ = count\) THEN null ELSE value#\d+ END AS value#", plan)


def test_a_segment_id_truncates_towards_zero_as_java_does():
    from kssim.spark_backend.windows.store_models import java_div

    assert [java_div(a, b) for a, b in ((7, 2), (-7, 2), (7, -2), (-7, -2), (0, 5), (-1, 60_000))] == [
        3, -3, -3, 3, 0, 0]


# --- merging, lateness, the store's retention (3.9, digest B.2) ------------------------------------

# gap 10, grace 5: [0,5] and [20,20], then @12 (stream time 20): the store's fetch hides sessions
# ending before clock 20 - retention 15 + 1 = 6, so [0,5] is not merged; [12,20] counts 2
HIDDEN = [("k", "a", 0), ("k", "b", 5), ("k", "c", 20), ("k", "d", 12)]
HIDDEN_OUT = [(("k", 0, 0), 1, 0, 0), (("k", 0, 0), None, 0, 1), (("k", 0, 5), 2, 5, 1),
              (("k", 20, 20), 1, 20, 2), (("k", 20, 20), None, 20, 3), (("k", 12, 20), 2, 20, 3)]
case("hidden-rocksdb", HIDDEN)
case("hidden-in-memory", HIDDEN, store="in_memory")


@pytest.mark.parametrize("name", ["hidden-rocksdb", "hidden-in-memory"])
def test_the_store_hides_a_session_that_ends_at_the_close_time(results, name):
    assert outputs(result_of(results, name)) == HIDDEN_OUT


# stream time 100, close 85: @80 alone is late; @86 starts a session; @84 and then @76 merge into
# it (their merged session ends at 86, not before the close) and are accepted
case("late-merges", [("k1", "x", 100), ("k", "a", 80), ("k", "b", 86), ("k", "c", 84), ("k", "d", 76)])


def test_a_late_record_is_accepted_when_it_merges_into_a_live_session(results):
    result = result_of(results, "late-merges")
    assert outputs(result) == [(("k1", 100, 100), 1, 100, 0), (("k", 86, 86), 1, 86, 2),
                               (("k", 86, 86), None, 86, 3), (("k", 84, 86), 2, 86, 3),
                               (("k", 84, 86), None, 86, 4), (("k", 76, 86), 3, 86, 4)]
    assert drops(result) == [(1, EXPIRED)]


# a null key is dropped before anything; a null value is counted
case("nulls", [(None, "a", 0), ("k", None, 0), ("k", "b", 3)])


def test_a_null_key_is_dropped_and_a_null_value_counted(results):
    result = result_of(results, "nulls")
    assert outputs(result) == [(("k", 0, 0), 1, 0, 1), (("k", 0, 0), None, 0, 2), (("k", 0, 3), 2, 3, 2)]
    assert drops(result) == [(0, NULL_KEY)]


# --- release rules ---------------------------------------------------------------------------------

# gap 10, grace 0: k@0, k2@15, k@8 merges to [0,8]. 3.0+ closes at 15 - 0 - 10 = 5 (accepted);
# 2.8 at 15 - 0 = 15 (late) [session_close_includes_gap]
CLOSE = [("k", "a", 0), ("k2", "b", 15), ("k", "c", 8)]
case("close-2.8", CLOSE, release="2.8", grace=0)
case("close-3.0", CLOSE, release="3.0", grace=0)


def test_since_3_0_the_close_time_includes_the_gap(results):
    first = [(("k", 0, 0), 1, 0, 0), (("k2", 15, 15), 1, 15, 1)]
    assert outputs(result_of(results, "close-2.8")) == first
    assert drops(result_of(results, "close-2.8")) == [(2, EXPIRED)]
    assert outputs(result_of(results, "close-3.0")) == first + [(("k", 0, 0), None, 0, 2), (("k", 0, 8), 2, 8, 2)]


# gap 10, grace 1, k@0, k2@11, k@10 merges to [0,10], ending at the close time 11 - 1:
# late in 2.2.0 (end <= close), accepted since 2.2.1 [session_late_before_close]
AT_CLOSE = [("k", "a", 0), ("k2", "b", 11), ("k", "c", 10)]
case("at-close-2.2.0", AT_CLOSE, release="2.2", grace=1)
case("at-close-2.2.1", AT_CLOSE, release="2.2.1", grace=1)


def test_a_session_ending_at_the_close_time_is_late_until_2_2_1(results):
    assert drops(result_of(results, "at-close-2.2.0")) == [(2, EXPIRED)]
    assert drops(result_of(results, "at-close-2.2.1")) == []
    # 2.2 forwards at the record's ts [session_output_ts_window_end: window end from 2.3]
    assert outputs(result_of(results, "at-close-2.2.1"))[-2:] == [(("k", 0, 0), None, 10, 2),
                                                                 (("k", 0, 10), 2, 10, 2)]


# 2.1 closes by the task's stream time, which a null-key record advances too (grace 5: @100 with a
# null key makes k@5 late); 2.2 by the aggregation's own [session_own_stream_time]
OWN_TIME = [("k", "a", 0), (None, "b", 100), ("k", "c", 5)]
case("own-time-2.1", OWN_TIME, release="2.1")
case("own-time-2.2", OWN_TIME, release="2.2")


def test_since_2_2_the_stream_time_is_the_aggregations_own(results):
    assert drops(result_of(results, "own-time-2.1")) == [(1, NULL_KEY), (2, EXPIRED)]
    assert drops(result_of(results, "own-time-2.2")) == [(1, NULL_KEY)]


# sum of a null value: 2.1+ forwards the merged-away session's tombstone, then the aggregator
# throws; before 2.1 the aggregator runs first [windowed_grace]
NULL_SUM = [("k", 1, 0), ("k", None, 5), ("k", 2, 6)]
case("null-sum-3.9", NULL_SUM, aggregation="sum", grace=100)
case("null-sum-1.1", NULL_SUM, release="1.1", aggregation="sum", grace=None)


def test_the_tombstones_of_a_merge_precede_a_failing_aggregator_since_2_1(results):
    new = result_of(results, "null-sum-3.9")
    assert outputs(new) == [(("k", 0, 0), 1, 0, 0), (("k", 0, 0), None, 0, 1)]
    assert new.failure.input_index == 1 and new.failure.code is FailureCode.AGGREGATOR_NULL_VALUE
    old = result_of(results, "null-sum-1.1")
    assert outputs(old) == [(("k", 0, 0), 1, 0, 0)]
    assert old.failure.input_index == 1


# sending old values: a tombstone carries the merged-away session's aggregate, an update none
case("old-values", [("k", "a", 0), ("k", "b", 5)], send_old=True)


def test_old_values(results):
    result = result_of(results, "old-values")
    assert [(o.value, o.old_value) for o in result.outputs] == [(1, None), (None, 1), (2, None)]


# before 2.1 the zero-byte cache keeps the caching layer, which forwards at the session's end,
# finds the session a tombstone replaces (0.11+; 0.10.2 never does, so merges forward no
# tombstone) [zero_cache_strips_caching_layer, session_cache_finds_previous]; and a reduce of a
# null value puts nothing over nothing, which the layer does not forward (3.9 forwards null)
case("cache-0.10.2", [("k", "a", 0), ("k", "b", 5)], release="0.10.2", grace=None)
case("cache-1.1", [("k", "a", 0), ("k", "b", 5)], release="1.1", grace=None)
case("null-reduce-1.1", [("k", None, 0)], release="1.1", grace=None, aggregation="string_reduce")
case("null-reduce-3.9", [("k", None, 0)], aggregation="string_reduce")


def test_before_2_1_the_caching_layer_forwards(results):
    assert outputs(result_of(results, "cache-0.10.2")) == [(("k", 0, 0), 1, 0, 0), (("k", 0, 5), 2, 5, 1)]
    assert outputs(result_of(results, "cache-1.1")) == [(("k", 0, 0), 1, 0, 0), (("k", 0, 0), None, 0, 1),
                                                         (("k", 0, 5), 2, 5, 1)]
    assert outputs(result_of(results, "null-reduce-1.1")) == []
    assert outputs(result_of(results, "null-reduce-3.9")) == [(("k", 0, 0), None, 0, 0)]


# [10,30] from k@10, 20, 30; then k@5 (gap 10): 0.11-2.1.0 fetch through a range ending at
# (ts + gap, ts + gap), which hides [10,30] (it ends after 15): a new session [5,5]; 2.1.1+
# merges [5,30] [session_fetch_end_bounded]
END_BOUNDED = [("k", "a", 10), ("k", "b", 20), ("k", "c", 30), ("k", "d", 5)]
case("end-bounded-1.1", END_BOUNDED, release="1.1", grace=None)
case("end-bounded-2.8", END_BOUNDED, release="2.8")


def test_until_2_1_1_the_fetch_hides_sessions_ending_after_ts_plus_gap(results):
    assert outputs(result_of(results, "end-bounded-1.1"))[-1] == (("k", 5, 5), 1, 5, 3)
    assert outputs(result_of(results, "end-bounded-2.8"))[-2:] == [(("k", 10, 30), None, 30, 3),
                                                                  (("k", 5, 30), 4, 30, 3)]


# --- emit on window close (digest B.4) ------------------------------------------------------------

# the input of the hidden-session case, then @100 (close 85): RocksDB emits [0,5] and [12,20] (its
# range fetch reads the live segments); the in-memory store expires [0,5] when @20's emit-final
# fetch reads it at clock 20 (end 5 < 20 - 15 + 1), [12,20] at @100's: both are lost
FINAL = HIDDEN + [("k", "e", 100)]
case("final-rocksdb", FINAL, emit="on_window_close")
case("final-in-memory", FINAL, emit="on_window_close", store="in_memory")


def test_emit_final_rocksdb_and_in_memory(results):
    assert outputs(result_of(results, "final-rocksdb")) == [(("k", 0, 5), 2, 5, 4), (("k", 12, 20), 2, 20, 4)]
    in_memory = result_of(results, "final-in-memory")
    assert outputs(in_memory) == []
    assert drops(in_memory) == [(2, UNEMITTED), (4, UNEMITTED)]


# in memory, gap 10, grace 0, retention 100: k2@30 emits [0,0] (its range [0, 19]); k@200 reaches
# [30,30] (range [20, 189]) after its end fell below 200 - 100 + 1. 3.3-3.5.1 and 3.6.0 leak the
# range iterator, whose position (0) stops the expiry: [30,30] is still there and emitted
# [session_emit_final_iterator_leak]
LEAK = [("k", "a", 0), ("k2", "b", 30), ("k", "c", 200)]
case("leak-3.3", LEAK, release="3.3", grace=0, emit="on_window_close", store="in_memory", retention=100)
case("leak-3.6.1", LEAK, release="3.6.1", grace=0, emit="on_window_close", store="in_memory", retention=100)


def test_leaked_emit_final_iterators_stop_the_in_memory_expiry(results):
    first = [(("k", 0, 0), 1, 0, 1)]
    assert outputs(result_of(results, "leak-3.3")) == first + [(("k2", 30, 30), 1, 30, 2)]
    fixed = result_of(results, "leak-3.6.1")
    assert outputs(fixed) == first
    assert drops(fixed) == [(2, UNEMITTED)]


# --- tasks ------------------------------------------------------------------------------------------

# stream time is per task: task 1 at 100 does not close task 0's session (gap 10, grace 0)
case("per-task", [("k", "a", 0, 0), ("k2", "b", 100, 1), ("k", "c", 5, 0)], grace=0, partitions=2)


def test_stream_time_is_per_task(results):
    result = result_of(results, "per-task")
    assert outputs(result, 0) == [(("k", 0, 0), 1, 0, 0), (("k", 0, 0), None, 0, 2), (("k", 0, 5), 2, 5, 2)]
    assert outputs(result, 1) == [(("k2", 100, 100), 1, 100, 1)]


# --- variants of the corpus: several partitions, both orders and stores, old values ----------------

def variant(doc, rng):
    """A conformance scenario spread over 2-3 partitions, without its expectations."""
    doc = copy.deepcopy(doc)
    for name in ("expected", "checkpoints", "expected_failure"):
        doc.pop(name, None)
    partitions = rng.choice([2, 3])
    config = doc.setdefault("config", {})
    config["order"] = rng.choice(["as_listed", "timestamp_sync"])
    if profile_for(doc.get("semantics")).in_memory_window_stores:
        config["store"] = rng.choice(["rocksdb", "in_memory"])
    config["partitions"] = {"input": partitions}
    doc["topology"]["send_old_values"] = rng.random() < 0.3
    for rec in doc["inputs"]:
        rec["partition"] = rng.randrange(partitions)
    doc["name"] += f"-p{partitions}-{config['order']}"
    return doc


@pytest.fixture(scope="module")
def variants():
    rng = random.Random(7)
    return [scenario_from_dict(variant(read_document(p), rng)) for p in FILES[::4]]


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
    assert sum(len(b) for b in runs["1"]) > 20_000  # the variants do produce output


def test_the_variants_agree_with_the_reference_engine(spark, variants):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    spark_runs = run_scenarios(variants, spark)
    reference_runs = run_on("reference", variants)
    for scenario, mine, theirs in zip(variants, spark_runs, reference_runs):
        assert result_bytes(mine) == result_bytes(theirs), scenario.name
    assert any(o.old_value is not NO_OLD_VALUE for r in spark_runs for o in r.outputs)


def test_a_python_api_aggregation(spark):  # noqa: F811
    """An ``Aggregation`` of callables (the Python API) is shipped to the replay as it is."""
    import attrs

    from kssim.reference.model.aggregations import aggregation_from_callables
    from kssim.spark_backend.runtime.runner import run_scenarios

    lengths = aggregation_from_callables(initializer=lambda: 0, aggregator=lambda k, v, agg: agg + len(v),
                                         merger=lambda k, a, b: a * 100 + b, name="lengths")
    base = scenario_from_dict({"format": "kssim-scenario/1", "name": "api", "semantics": "3.9",
                               "topology": {"operator": "session_aggregate", "gap_ms": 10, "grace_ms": 5},
                               "inputs": [{"topic": "input", "key": "k", "value": v, "ts": t}
                                          for v, t in (("ab", 0), ("cde", 30), ("f", 20))]})
    api = attrs.evolve(base, topology=attrs.evolve(base.topology, aggregation=lengths))
    result, = run_scenarios([api], spark)
    # @20 merges [0,0]? no (0 < 20 - 10); it merges [30,30]: 0 * 100 + 3, then + len("f")
    assert [(o.key["start"], o.key["end"], o.value) for o in result.outputs] == [
        (0, 0, 2), (30, 30, 3), (30, 30, None), (20, 30, 4)]
    assert result_bytes(result) == result_bytes(run_on("reference", [api])[0])
