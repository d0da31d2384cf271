"""The Spark backend's foreign-key join (``spark_backend.foreign_key``): every fk_join conformance file
(one batched job), the KIP-213 walkthrough per release, a Kafka 4.1.0 capture, byte-identical
results whatever the shuffle partitioning, agreement with the reference engine on generated cases
(several partitions, timestamp synchronisation, versioned tables, old values, emit-on-change, a
key extractor), and ``delivery: interleaved`` reported as unsupported."""
from __future__ import annotations

import os
import random

import pytest
from kssim_testing import CONFORMANCE, assert_conforms, conformance_files, load_all, result_bytes, results_per_shuffle_partitioning, run_on, scenario

from kssim.reference.model.errors import UnsupportedOperator
from kssim.reference.model.scenario import scenario_from_dict

FILES = conformance_files("fk_join")


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_corpus_is_all_there():
    # kafka-tests/fk 52, kafka-oracle/fk_join 48, kafka-oracle-releases 2.4/2.8/3.0 24 each,
    # 3.6/3.7 28 each, seeds 2
    assert len(FILES) == 230


@pytest.mark.parametrize("path", FILES, ids=[os.path.relpath(f, CONFORMANCE) for f in FILES])
def test_conformance_file(batch, path):
    assert_conforms(*batch[path])


def test_a_scenario_run_alone_conforms(spark):  # noqa: F811
    """A one-scenario batch (a replay, ``kssim run`` of one file) takes the literal-settings plan."""
    from kssim.spark_backend.runtime.runner import run_scenarios

    paths = [f for f in FILES if "both_versioned" in f][:1] + [f for f in FILES if "left-unversioned-k3.7" in f][:1]
    for scenario_ in load_all(paths):
        assert_conforms(scenario_, run_scenarios([scenario_], spark)[0])


# --- the KIP-213 walkthrough (digest A.9) and a Kafka 4.1.0 capture --------------------------------

FK = {"field": "fk"}


def _walkthrough(join, release):
    # RHS (1, foo)@5, then the steps of the KIP's table; the joiner pairs (lhs value, rhs value)
    return scenario({"operator": "fk_join", "join": join, "foreign_key": FK}, [
        ("right", "1", "foo", 5),      # 0
        ("left", "k", {"fk": "1"}, 10),   # 1 step 1
        ("left", "k", {"fk": "2"}, 11),   # 2 step 2: RHS 2 missing
        ("left", "k", {"fk": "3"}, 12),   # 3 step 3
        ("right", "3", "bar", 13),        # 4 step 4
        ("left", "k", None, 14),          # 5 step 5: delete k
        ("left", "k", {"fk": "1"}, 15),   # 6 step 6: k again (old value null)
        ("left", "q", {"fk": "10"}, 16),  # 7 step 7: RHS 10 missing
        ("right", "10", "baz", 17),       # 8 step 8
    ], semantics=release)


def _walkthrough_expected(join, release):
    def fk(v):
        return {"fk": v}

    # (key, value, ts, input); ts: max(LHS ts, RHS row ts) on the subscription path, the RHS ts
    # when the RHS triggers (A.7)
    step1 = [("k", [fk("1"), "foo"], 10, 1)]
    step4 = [("k", [fk("3"), "bar"], 13, 4)]
    step6 = [("k", [fk("1"), "foo"], 15, 6)]
    step8 = [("q", [fk("10"), "baz"], 17, 8)]
    if join == "inner":
        # FK changes: DELETE_KEY_NO_PROPAGATE + PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE -> (k, null),
        # unnecessary at step 3; the delete: DELETE_KEY_AND_PROPAGATE at max(14, 13); step 7:
        # PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, nothing (the same in 3.6, 3.9 and 4.1)
        return step1 + [("k", None, 11, 2), ("k", None, 12, 3)] + step4 + [("k", None, 14, 5)] + step6 + step8
    # left: 3.7-4.0 send DELETE_KEY_AND_PROPAGATE to the old FK too (a second result at each FK
    # change, a second tombstone at the delete, KAFKA-16394); 3.6 and 4.1+ one each
    twice = 2 if release == "3.9" else 1
    return (step1 + [("k", [fk("2"), None], 11, 2)] * twice + [("k", [fk("3"), None], 12, 3)] * twice + step4
            + [("k", None, 14, 5)] * twice + step6 + [("q", [fk("10"), None], 16, 7)] + step8)


WALKTHROUGH = [(join, release) for release in ("3.6", "3.9", "4.1") for join in ("inner", "left")]


def _capture(join):
    # digest 4.x rule table: TopologyTestDriver on kafka-streams 4.1.0 (robot-head/crabka
    # testdata/fk_join/behavior.json); the FK is the LHS value itself, "_" there = null here
    inputs = [("left", "k1", "A", 0), ("right", "A", "X", 1), ("left", "k1", "A2", 2), ("left", "k2", "A", 3),
              ("right", "A", "Y", 4), ("left", "k1", "B", 5), ("left", "k1", None, 6)]
    return scenario({"operator": "fk_join", "join": join, "foreign_key": {"from": "value"}}, inputs, semantics="4.1")


CAPTURED = {
    "inner": [("k1", ["A", "X"]), ("k1", None), ("k2", ["A", "X"]), ("k2", ["A", "Y"]), ("k1", None), ("k1", None)],
    "left": [("k1", ["A", None]), ("k1", ["A", "X"]), ("k1", ["A2", None]), ("k2", ["A", "X"]), ("k2", ["A", "Y"]),
             ("k1", ["B", None]), ("k1", None)],
}


@pytest.fixture(scope="module")
def worked(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    cases = {("walkthrough",) + case: _walkthrough(*case) for case in WALKTHROUGH}
    cases.update({("capture", join): _capture(join) for join in CAPTURED})
    interleaved = scenario({"operator": "fk_join", "join": "inner", "foreign_key": FK},
                           [("left", "k", {"fk": "1"}, 1)], delivery="interleaved", seed=7)
    cases[("interleaved",)] = interleaved
    # one stream-table scenario in the same batch: it runs, the FK scenarios beside it too
    cases[("other",)] = scenario({"operator": "stream_table_join", "join": "left"}, [("left", "k", "v", 1)])
    # KIP-557 (2.6.0): a skipped tombstone for an absent key, then a put, then the same value again
    # (skipped); the shared table source of the table joins (spark_backend.joins.table_source)
    kip557 = [("left", "k", None, 1), ("left", "k", "v", 2), ("left", "k", "v", 3)]
    cases[("kip557",)] = scenario({"operator": "table_table_join", "join": "left"}, kip557, semantics="2.6")
    names = list(cases)
    return dict(zip(names, run_scenarios([cases[n] for n in names], spark)))


@pytest.mark.parametrize("join,release", WALKTHROUGH)
def test_kip213_walkthrough(worked, join, release):
    result = worked[("walkthrough", join, release)]
    got = [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]
    assert got == _walkthrough_expected(join, release)
    assert result.drops == () and result.failure is None
    assert all(o.partition == 0 for o in result.outputs)


@pytest.mark.parametrize("join", sorted(CAPTURED))
def test_kafka_4_1_capture(worked, join):
    assert [(o.key, o.value) for o in worked[("capture", join)].outputs] == CAPTURED[join]


def test_interleaved_delivery_is_unsupported(worked):
    result = worked[("interleaved",)]
    assert isinstance(result, UnsupportedOperator)
    assert str(result) == "interleaved delivery is not supported by engine spark"
    assert [o.value for o in worked[("other",)].outputs] == [["v", None]]


def test_emit_on_change_after_a_skipped_tombstone(worked):
    from kssim.reference.model.codes import DropReason

    result = worked[("kip557",)]
    assert [(o.value, o.ts) for o in result.outputs] == [(["v", None], 2)]
    assert [(d.input_index, d.reason) for d in result.drops] == [(0, DropReason.IDEMPOTENT_UPDATE),
                                                                 (2, DropReason.IDEMPOTENT_UPDATE)]


@pytest.mark.parametrize("release", ["2.4", "2.4.1", "2.6", "3.2", "3.3", "3.7", "4.0", "4.1", "4.3"])
def test_rule_columns_carry_the_fk_rules(release):
    from kssim.reference.model.profiles import profile_for
    from kssim.spark_backend.foreign_key.settings import RULE_COLUMNS
    from kssim.spark_backend.runtime.inputs import config_row

    row = config_row(0, scenario({"operator": "fk_join", "join": "left", "foreign_key": FK}, [], semantics=release))
    assert {c: row[c] for c in RULE_COLUMNS} == {c: getattr(profile_for(release), c) for c in RULE_COLUMNS}
    assert len(RULE_COLUMNS) == 7


# --- generated cases: the reference engine agrees, and so does every shuffle partitioning ------------

RELEASES = ("2.4", "2.5", "2.6", "2.6.1", "2.7", "2.8", "3.0", "3.2", "3.3", "3.5", "3.6", "3.7", "3.9", "4.0",
            "4.1", "4.3")


def _generated(rng, n):
    """A random fk_join scenario document: few PKs and FKs of several JSON types, null FKs, null
    keys, tombstones, FK changes, out-of-order timestamps; 1-3 partitions, both orders, versioned
    tables, old values, a key extractor (4.0+)."""
    release = rng.choice(RELEASES)
    line = tuple(int(x) for x in release.split(".")[:2])
    parts = rng.choice([1, 1, 2, 3])
    fks = rng.sample(["x", "y", "z", 3, True], rng.randint(1, 4))
    pks = rng.sample(["k1", "k2", "a", 7, 1.5, "é"], rng.randint(1, 4))
    topology = {"operator": "fk_join", "join": rng.choice(["inner", "left"]), "joiner": rng.choice(["pair", "concat"]),
                "foreign_key": FK}
    by_key = line >= (4, 0) and rng.random() < 0.2
    if by_key:  # KIP-1104: the FK is a field of the LHS key
        topology["foreign_key"] = {"from": "key", "field": "f"}
        pks = [{"f": rng.choice(fks + [None]), "i": i} for i in range(rng.randint(1, 3))]
    if line >= (3, 5):
        for table in ("left_table", "right_table"):
            if rng.random() < 0.35:
                topology[table] = {"versioned": True, "history_retention_ms": rng.choice([0, 5, 20, 1000])}
    if rng.random() < 0.3 and release != "2.4":  # fk_result_old_values: 2.4.1
        topology["send_old_values"] = True
    inputs, ts = [], 0
    for _ in range(rng.randint(3, n)):
        ts = max(0, ts + rng.randint(-4, 6))
        partition = rng.randrange(parts)
        if rng.random() < 0.55:
            key = None if rng.random() < 0.04 else rng.choice(pks)
            value = None if rng.random() < 0.2 else (rng.choice("ABC") if by_key else
                                                     {"fk": rng.choice(fks + [None]), "v": rng.choice("ABC")})
            inputs.append({"topic": "left", "key": key, "value": value, "ts": ts, "partition": partition})
        else:
            key = None if rng.random() < 0.04 else rng.choice(fks)
            value = None if rng.random() < 0.25 else rng.choice("abc")
            inputs.append({"topic": "right", "key": key, "value": value, "ts": ts, "partition": partition})
    config = {"order": rng.choice(["as_listed", "timestamp_sync"]), "store": rng.choice(["rocksdb", "in_memory"])}
    if parts > 1:
        config["partitions"] = {"left": parts, "right": parts}
    return {"format": "kssim-scenario/1", "name": "generated", "semantics": release, "topology": topology,
            "config": config, "inputs": inputs}


@pytest.fixture(scope="module")
def generated():
    rng = random.Random(213)
    docs = [_generated(rng, 30) for _ in range(120)]
    for n, doc in enumerate(docs):
        doc["name"] = f"generated-{n}"
    return [scenario_from_dict(doc) for doc in docs]


def test_generated_cases_agree_with_the_reference_engine(spark, generated):  # noqa: F811
    spark_runs = run_on("spark", generated)
    reference_runs = run_on("reference", generated)
    for scenario_, ours, theirs in zip(generated, spark_runs, reference_runs):
        assert result_bytes(ours) == result_bytes(theirs), scenario_.name
    # the cases exercise what they should: outputs, stale responses, null FKs, versioned drops
    codes = {str(d.reason) for r in reference_runs for d in r.drops}
    assert {"stale_fk_response", "null_foreign_key", "out_of_order_versioned_update", "idempotent_update"} <= codes
    assert sum(len(r.outputs) for r in reference_runs) > 300
    assert any(o.partition > 0 for r in reference_runs for o in r.outputs)


def test_byte_identical_for_any_shuffle_partitioning(spark, generated):  # noqa: F811
    # a job's cost grows with its tasks, not its records: a sixth of the cases will do
    runs = results_per_shuffle_partitioning(spark, generated[::6])
    first, *others = runs.values()
    assert all(other == first for other in others)
    assert sum(len(b) for b in first) > 3_000


# --- the FK read natively from the value's text ------------------------------------------------------

FK_VALUES = ['{"fk":"f1","v":"x"}', '{"v":"x","fk":12}', '{"fk":null}', '{"fk":true}', '{"fk":"é"}', '{"fk":""}',
             '{"fk":12345678901234567890123}', '{"fk":-0}', '{"fk":1.5}', '{"fk":1e3}', '{"fk":{"a":1}}',
             '{"fk":[1,2]}', '{"a":{"fk":1},"fk":2}', '{"fk":1,"fk":2}', '{"fk":"a\\u0062"}', '{"a":"\\"fk\\":3","fk":4}',
             '{ "fk" : 1 }', '{"x":"{","fk":"z"}', '{"fk":"f","b":[1,{"fk":2}]}', '{"f\\u006b":1,"fk":2}',
             '{"a":",\\"fk\\":1","fk":9}']
WHOLE_VALUES = ['"s"', "12", "1.0", '{"a":1}', "true", "-0", '"a\\u0062"']


def test_the_fk_read_natively_is_the_extractors(spark):  # noqa: F811
    """``keys.foreign_key``: the FK cut out of the text where that is exact, the shared model's
    extractor elsewhere; both give ``key_text(extract_key(...))`` (duplicate members, floats, -0,
    escapes, nested members of the same name), and the plain cases are native."""
    import json

    from pyspark.sql import functions as F

    from kssim.reference.model.keys import key_text
    from kssim.reference.model.topology import KeyExtractorSpec, extract_key
    from kssim.spark_backend.foreign_key.keys import _native_foreign_key, foreign_key

    rows = [('"k"', v, "fk") for v in FK_VALUES] + [('"k"', v, None) for v in WHOLE_VALUES]
    frame = spark.createDataFrame(rows, "key STRING, value STRING, field STRING")
    exact, _ = _native_foreign_key(F.col("value"), F.col("field"))
    fk = foreign_key(F.col("key"), F.col("value"), F.lit("value"), F.col("field"), F.lit(True))
    got = frame.select("value", "field", fk.alias("fk"), exact.alias("exact")).collect()
    for r in got:
        expected = key_text(extract_key(KeyExtractorSpec(source="value", field=r["field"]), None, json.loads(r["value"])))
        assert r["fk"] == expected, r
    assert {r["value"] for r in got if r["exact"] and r["field"]} == set(FK_VALUES[:7])
    assert {r["value"] for r in got if r["exact"] and not r["field"]} == {'"s"', "12", "true"}
