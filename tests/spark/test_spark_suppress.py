"""``KTable#suppress`` on the Spark backend (``spark_backend.suppress``): Kafka's own suppress tests
(``scenarios/kafka-tests/suppress``, one batched job, and some alone: the literal-settings plan),
the rules one by one (non-resetting buffer, the expiry edge, 2.1's task stream time, a full
``shutDownWhenFull`` buffer, the old values suppress asks of its operator), the buffer's key bytes
against the shared model, the settings, a replay of record files, and generated cases of every
suppressible operator at several releases: the reference engine agrees, the set-based and the
sequential computation agree, and shuffle partitions 1 and 7 give byte-identical results."""
from __future__ import annotations

import copy
import glob
import json
import os
import random

import pytest
from kssim_testing import BUNDLED, assert_conforms, load_all, result_bytes, results_per_shuffle_partitioning, run_on, scenario

from kssim.reference.model.codes import FailureCode
from kssim.reference.model.errors import KssimError
from kssim.reference.model.profiles import profile_for
from kssim.reference.model.scenario import scenario_from_dict
from kssim.reference.model.suppression import JAVA_LONG_MAX, buffer_key_bytes

FILES = sorted(glob.glob(os.path.join(BUNDLED, "kafka-tests", "suppress", "*.json")))


@pytest.fixture(scope="module")
def batch(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    scenarios = load_all(FILES)
    return dict(zip(FILES, zip(scenarios, run_scenarios(scenarios, spark))))


def test_the_ported_suite_is_all_there():
    assert len(FILES) == 27


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_kafka_suppress_test(batch, path):
    assert_conforms(*batch[path])


@pytest.mark.parametrize("name", ["SuppressScenarioTest.shouldSuppressIntermediateEventsWithBytesLimit",
                                  "KTableSuppressProcessorTest.suppressShouldShutDownWhenOverRecordCapacity",
                                  "SuppressScenarioTest.shouldSupportFinalResultsForSessionWindows",
                                  "SuppressScenarioTest.shouldSuppressIntermediateEventsWithTimeLimit"])
def test_a_suppressed_scenario_run_alone_conforms(spark, name):  # noqa: F811
    """A one-scenario batch (``kssim run``, a replay) reads its settings as literals."""
    from kssim.spark_backend.runtime.inputs import Features, config_row
    from kssim.spark_backend.runtime.runner import run_scenarios

    sc, = load_all([os.path.join(BUNDLED, "kafka-tests", "suppress", name + ".json")])
    assert Features.of([config_row(0, sc)]).constants
    assert_conforms(sc, run_scenarios([sc], spark)[0])


# --- the rules one by one (each checked against the reference engine too) --------------------------

def _both(sc):
    """The Spark result, after checking the reference engine gives the same bytes."""
    spark_result, = run_on("spark", [sc])
    reference_result, = run_on("reference", [sc])
    assert result_bytes(spark_result) == result_bytes(reference_result)
    return spark_result


def _outs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def _left_table(suppress, **extra):
    """A left table-table join fed only left records: a suppressible table of the left updates."""
    return dict({"operator": "table_table_join", "join": "left", "joiner": "pair", "suppress": suppress}, **extra)


def test_a_buffered_key_keeps_its_place_and_is_evicted_when_stream_time_reaches_its_time_plus_the_limit():
    limit = {"until": "time_limit", "time_limit_ms": 10}
    result = _both(scenario(_left_table(limit), [
        ("left", "k", 1, 0), ("left", "k", 2, 5),   # k stays at buffer time 0, its record is replaced
        ("left", "j", 1, 9),                         # stream time 9: 0 > 9 - 10, nothing yet
        ("left", "j", 3, 10),                        # stream time 10: k (0 <= 0) goes, j (9) stays
        ("left", "x", 1, 19)]))                      # 9 <= 19 - 10: j goes, x stays buffered
    assert _outs(result) == [("k", [2, None], 5, 3), ("j", [3, None], 10, 4)]


@pytest.mark.parametrize("release,evicted", [("2.1", True), ("2.2", False)])
def test_before_2_2_the_task_stream_time_moves_with_every_record_even_a_dropped_one(release, evicted):
    # [suppress_observed_stream_time] the null-key record is dropped by the join's table source,
    # yet in 2.1 it moves the task's stream time that suppress reads
    result = _both(scenario(_left_table({"until": "time_limit", "time_limit_ms": 10}), [
        ("left", "k", 1, 0), ("left", None, 1, 100), ("left", "j", 1, 1)], semantics=release))
    assert _outs(result) == ([("k", [1, None], 0, 2), ("j", [1, None], 1, 2)] if evicted else [])


def test_a_full_shut_down_buffer_fails_at_that_input_and_keeps_what_it_emitted_before():
    suppress = {"until": "time_limit", "time_limit_ms": 5, "buffer": {"max_records": 1, "when_full": "shut_down"}}
    result = _both(scenario(_left_table(suppress), [
        ("left", "a", 1, 0), ("left", "b", 1, 10),   # b evicts a by time; one key buffered: fits
        ("left", "c", 1, 11), ("left", "d", 1, 30)]))  # two keys: over max_records
    assert _outs(result) == [("a", [1, None], 0, 1)]
    assert result.failure.input_index == 2 and result.failure.code is FailureCode.SUPPRESS_BUFFER_FULL


def test_from_2_3_suppress_asks_its_operator_for_old_values_which_can_change_what_it_forwards():
    # [suppress_enables_old_values] 2.6.0's FK join with old values materializes its result table,
    # whose emit-on-change skips the tombstone of a key that never had a result; a zero time limit
    # forwards every change at once, so the output is the operator's as suppress asked for it
    fk = {"operator": "fk_join", "join": "inner", "foreign_key": {"field": "fk"}}
    inputs = [("left", "j", {"fk": "1"}, 9), ("left", "k", {"fk": "2"}, 9), ("left", "j", {"fk": "2"}, 12),
              ("right", "2", "x", 3)]
    suppressed = _both(scenario(dict(fk, suppress={"until": "time_limit", "time_limit_ms": 0}), inputs,
                                semantics="2.6.0"))
    plain, asked = run_on("reference", [scenario(fk, inputs, semantics="2.6.0"),
                                        scenario(dict(fk, send_old_values=True), inputs, semantics="2.6.0")])
    assert _outs(plain) != _outs(asked)
    assert _outs(suppressed) == _outs(asked)
    assert all(o.old_value is not None for o in suppressed.outputs)  # NO_OLD_VALUE: not reported


# --- the buffer's key bytes and order, built in Spark ----------------------------------------------

_INNER_KEYS = ["k", "ü", "", 1, -1, 0, 2 ** 70, 1.5, -0.0, True, False, [1, "a"], {"a": 1},
               {"x": ',"start":1'}, '","start":5,"end":7}']


def _spark_buffer_key_bytes(spark, keys, json_serde: bool) -> list:
    """``[(key, kind, Spark's bytes)]`` for every key, plain and in time and session windows,
    written by graphs' JSON serde or by format 1's serdes."""
    from pyspark.sql import functions as F

    from kssim.reference.model.keys import key_text
    from kssim.spark_backend.suppress.changes import buffer_key_bytes as spark_key_bytes

    cases = [(key_text(k), "plain", k) for k in keys]
    for k in keys:
        for start, end in ((0, 10), (-7, 3), (2 ** 40, 2 ** 40 + 5)):
            windowed = {"key": k, "start": start, "end": end}
            cases += [(key_text(windowed), "time_window", windowed), (key_text(windowed), "session_window", windowed)]
    frame = spark.createDataFrame([(i, text, kind) for i, (text, kind, _) in enumerate(cases)],
                                  "i INT, key STRING, kind STRING")
    got = {r["i"]: bytes(r["b"]) for r in frame.select(
        "i", spark_key_bytes(F.col("key"), F.col("kind"), F.lit(json_serde)).alias("b")).collect()}
    return [(key, kind, got[i]) for i, (_, kind, key) in enumerate(cases)]


@pytest.mark.parametrize("json_serde", [False, True], ids=["format-1-serdes", "graph-json-serde"])
def test_spark_builds_the_buffer_key_bytes_of_the_shared_model(spark, json_serde):  # noqa: F811
    from kssim.reference.model.keys import set_json_key_serde

    built = _spark_buffer_key_bytes(spark, _INNER_KEYS, json_serde)
    previous = set_json_key_serde(json_serde)
    try:
        for key, kind, got in built:
            assert got == buffer_key_bytes(key, kind), (key, kind)
    finally:
        set_json_key_serde(previous)


def test_spark_orders_graph_keys_with_escapes_as_the_json_serde_does(spark):  # noqa: F811
    # Jackson writes a \u00XX escape's hex upper-case, the key text lower-case: other bytes, same order
    from kssim.reference.model.keys import json_key_serde

    keys = ["a\x1fb", "a\x19b", "a\x1bb", "a\x1b", "a\\u001fb", "a\nb", "a\x0bb", "a", "a!", 9, 10]
    built = _spark_buffer_key_bytes(spark, keys, True)
    with json_key_serde():
        expected = [(buffer_key_bytes(key, kind), kind) for key, kind, _ in built]
    spark_order = sorted(range(len(built)), key=lambda i: (built[i][2], built[i][1]))
    assert spark_order == sorted(range(len(built)), key=lambda i: expected[i])
    assert any(got != want for (_, _, got), (want, _) in zip(built, expected))  # the escapes' case differs


def test_spark_orders_key_bytes_unsigned_as_the_buffer_does(spark):  # noqa: F811
    values = [b"\xff", b"\x01", b"\x7f", b"\x80", b"", b"\x00\xff", b"\x01\x00"]
    frame = spark.createDataFrame([(bytearray(v),) for v in values], "b BINARY")
    assert [bytes(r["b"]) for r in frame.orderBy("b").collect()] == sorted(values)


# --- settings --------------------------------------------------------------------------------------

def _settings(topology, release="3.9"):
    from kssim.spark_backend.suppress.settings import config_fields

    return config_fields(scenario(topology, [], semantics=release))


def test_unbounded_buffers_with_a_wait_that_cannot_wrap_are_set_based_the_others_sequential():
    unbounded = _settings(_left_table({"until": "time_limit", "time_limit_ms": 5}))
    assert unbounded["sup"] and not unbounded["sup_sequential"] and unbounded["sup_wait"] == 5
    assert _settings(_left_table({"until": "time_limit", "time_limit_ms": JAVA_LONG_MAX}))["sup_sequential"] is False
    for suppress in ({"until": "time_limit", "time_limit_ms": -1},
                     {"until": "time_limit", "time_limit_ms": 5, "buffer": {"max_records": 10 ** 12}},
                     {"until": "time_limit", "time_limit_ms": 5, "buffer": {"max_bytes": 100}}):
        assert _settings(_left_table(suppress))["sup_sequential"] is True
    plain = _settings({"operator": "table_table_join", "join": "left"})
    assert plain["sup"] is False and plain["sup_wait"] == 0


@pytest.mark.parametrize("release", ["2.1", "2.2", "2.3", "2.4", "3.9"])
def test_rule_columns_carry_the_rules_of_the_same_name(release):
    from kssim.spark_backend.suppress.settings import RULE_COLUMNS

    fields = _settings(_left_table({"until": "time_limit", "time_limit_ms": 5}), release)
    profile = profile_for(release)
    assert RULE_COLUMNS and all(fields[rule] == getattr(profile, rule) for rule in RULE_COLUMNS)


def test_record_topics_are_the_reference_engines():
    from kssim.reference.foreign_key.instructions import RESPONSE_TOPIC
    from kssim.reference.windows.windowed_table_join import SHIFTED_RIGHT_TOPIC
    from kssim.spark_backend.suppress import settings

    assert settings.FK_RESPONSE_TOPIC == RESPONSE_TOPIC
    assert settings.SHIFTED_RIGHT_TOPIC == SHIFTED_RIGHT_TOPIC


# --- a replay of record files ----------------------------------------------------------------------

def test_replaying_a_suppressed_topology_writes_what_the_reference_writes(spark, tmp_path):  # noqa: F811
    """3.9 asks the operator for old values; the output, without ``send_old_values``, has none."""
    from kssim.spark_backend.runtime.record_files import write_record_files
    from kssim.tools.cli import main

    topology = _left_table({"until": "time_limit", "time_limit_ms": 3, "buffer": {"max_records": 2,
                                                                                  "when_full": "emit_early"}})
    rng = random.Random(4)
    inputs = [("left", rng.choice("abcd"), rng.randrange(5), rng.randrange(40)) for _ in range(40)]
    sc = scenario(topology, inputs)
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps({"format": "kssim-scenario/1", "name": "suppressed", "semantics": "3.9",
                                "topology": topology}))
    records = str(tmp_path / "in.jsonl")
    write_record_files(spark, sc, records, "jsonl")
    outputs = {}
    for engine in ("reference", "spark"):
        out = str(tmp_path / f"{engine}.jsonl")
        assert main(["replay", str(topo), "-i", records, "-o", out, "--order", "as_listed", "--engine", engine]) == 0
        with open(out, encoding="utf-8") as handle:
            outputs[engine] = [json.loads(line) for line in handle]
    assert len(outputs["reference"]) >= 10 and outputs["spark"] == outputs["reference"]
    assert all("old_value" not in line for line in outputs["spark"])


# --- generated cases --------------------------------------------------------------------------------

#: (operator, releases): every suppressible operator, at releases where a suppress rule changes
GENERATED = (("table_table_join", ("2.1", "2.2", "2.3", "2.4", "3.9")), ("fk_join", ("2.6.0", "3.9")),
             ("window_aggregate", ("2.1", "2.4", "3.9")), ("session_aggregate", ("2.2.0", "2.2.1", "3.9")),
             ("sliding_aggregate", ("3.9",)), ("windowed_table_join", ("2.8", "3.9")))
WINDOWED = ("window_aggregate", "session_aggregate", "sliding_aggregate", "windowed_table_join")


def _suppress_spec(rng, windowed):
    """Any suppress the API takes: both kinds, bounded or not, both strategies, edge numbers (a
    zero or negative limit, Long.MAX_VALUE, a zero bound)."""
    until = rng.choice(("window_close", "time_limit")) if windowed else "time_limit"
    spec = {"until": until}
    if until == "time_limit":
        spec["time_limit_ms"] = rng.choice((0, 1, 3, 10, 40, -5, JAVA_LONG_MAX))
    kind = rng.choice(("unbounded", "records", "bytes"))
    if kind != "unbounded":
        when_full = "shut_down" if until == "window_close" else rng.choice(("shut_down", "emit_early"))
        bound = rng.choice((0, 1, 2, 3, 5)) if kind == "records" else rng.choice((60, 120, 250, 500))
        spec["buffer"] = {"max_records" if kind == "records" else "max_bytes": bound, "when_full": when_full}
    return spec


def _sequential_twin(doc):
    """The same case with a bound no buffer reaches: computed by the sequential pass."""
    twin = copy.deepcopy(doc)
    twin["topology"]["suppress"]["buffer"] = {"max_records": 10 ** 12}
    twin["name"] += "-sequential"
    return twin


@pytest.fixture(scope="module")
def generated():
    from kssim.differential_tests.engines import at_release
    from kssim.differential_tests.runner import draw_cases

    rng = random.Random(17)
    docs = []
    for operator, releases in GENERATED:
        for release in releases:
            for doc in draw_cases(operator, (profile_for(release),), 5, seed=len(docs)):
                doc = at_release(doc, release)
                doc["topology"]["suppress"] = _suppress_spec(rng, operator in WINDOWED)
                if not profile_for(release).suppress_enables_old_values:
                    doc["topology"].pop("send_old_values", None)
                try:
                    scenario_from_dict(doc)
                except KssimError:
                    continue  # e.g. a release that rejects the drawn window
                docs.append(doc)
                if "buffer" not in doc["topology"]["suppress"]:
                    docs.append(_sequential_twin(doc))
    return docs


def test_generated_cases_agree_with_the_reference_engine(spark, generated):  # noqa: F811
    scenarios = [scenario_from_dict(d) for d in generated]
    assert len(scenarios) >= 100
    assert sum(1 for d in generated if d["name"].endswith("-sequential")) >= 20
    got = [result_bytes(r) for r in run_on("spark", scenarios, catch=KssimError)]
    reference = [result_bytes(r) for r in run_on("reference", scenarios, catch=KssimError)]
    differing = [d["name"] for d, mine, want in zip(generated, got, reference) if mine != want]
    assert differing == []
    # the cases are not vacuous: results come out, and full buffers stop runs
    assert sum(b.count(b'"output"') for b in reference) >= 120
    assert sum(1 for b in reference if b"suppress_buffer_full" in b) >= 3
    # the sequential pass computes what the set-based stages compute
    by_name = dict(zip((d["name"] for d in generated), got))
    twins = [d["name"] for d in generated if d["name"].endswith("-sequential")]
    assert all(by_name[name] == by_name[name[:-len("-sequential")]] for name in twins)


#: the operators of the determinism check: one per suppress stage (table results, windowed
#: results); the operators' own plans (the FK join's among them) are checked for determinism by
#: their own tests
SPREAD = ("table_table_join", "window_aggregate")


def test_byte_identical_for_shuffle_partitions_1_and_7(spark, generated):  # noqa: F811
    docs = [d for d in generated if d["topology"]["operator"] in SPREAD]
    spread = [d for d in docs if d.get("config", {}).get("order") == "timestamp_sync"
              or max(d.get("config", {}).get("partitions", {"_": 1}).values()) > 1]
    assert len(docs) >= 40 and len(spread) >= 10
    runs = results_per_shuffle_partitioning(spark, [scenario_from_dict(d) for d in docs], counts=("1", "7"))
    assert runs["1"] == runs["7"]
