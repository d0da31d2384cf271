"""The Spark backend against the shared model (``reference.model``): release rules named as in
``profiles.RULES``, one key identity (``keys.key_text``, ``keys.serialized_key``), closed drop and
failure codes (``codes``), the join-window constants (``profiles.join_window_stores``)."""
from __future__ import annotations

import json
import math
import os

import pytest
from kssim_testing import ROOT, scenario

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import key_text, serialized_key
from kssim.reference.model.profiles import RELEASE_LINES, RULES, RULES_BY_NAME, profile_for

SPARK_BACKEND = os.path.join(ROOT, "spark_backend")


def _sources():
    for folder, _, names in os.walk(SPARK_BACKEND):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    yield path, handle.read()


# --- rule names: grep RULE_NAME finds the Spark code -------------------------------------------

#: the rules of what the Spark backend refuses by name (none: record caches run in ``graph/cache_stage.py``)
NOT_ON_SPARK = ()


def test_every_release_rule_is_named_in_spark_backend():
    # every rule must appear (as a column, a variable or a ``# [rule]`` comment where the
    # expression implements it, or in the docstring of the graph stage that implements it)
    text = "\n".join(source for _, source in _sources())
    claimed = [rule for rule in RULES if rule.name not in NOT_ON_SPARK]
    missing = [rule.name for rule in claimed if rule.name not in text]
    assert missing == [], f"release rules not named anywhere in spark_backend/: {missing}"
    assert len(claimed) >= 60


@pytest.mark.parametrize("release", RELEASE_LINES + ("2.5.1", "2.6.2", "3.1.1", "3.4.1"))
def test_rule_columns_carry_the_rule_of_the_same_name(release):
    from kssim.spark_backend.runtime.inputs import CONFIG_COLUMNS, config_row

    stream_stream = scenario({"operator": "stream_stream_join", "join": "outer", "window_api": "legacy",
                              "window": {"before_ms": 10, "after_ms": 10, "grace_ms": None}}, [], semantics=release)
    table_table = scenario({"operator": "table_table_join", "join": "outer"}, [], semantics=release)
    rule_columns = [c for c in CONFIG_COLUMNS if c in RULES_BY_NAME]
    assert len(rule_columns) >= 18
    profile = profile_for(release)
    for sc in (stream_stream, table_table):
        row = config_row(0, sc)
        for column in rule_columns:
            if row[column] is not None:  # the stream-stream columns are null for other operators
                assert row[column] == getattr(profile, column), (release, column)


def test_no_free_text_failure_messages_in_spark_backend():
    # drops and failures are written as codes; the messages live in reference.model.codes only
    for path, source in _sources():
        assert "_FAILURE = (" not in source, path
        assert "should not be null" not in source, path


# --- join windows: the shared definition ---------------------------------------------------------

@pytest.mark.parametrize("release", ["0.10.0", "1.1", "2.0", "2.1", "2.8", "3.0", "3.9"])
@pytest.mark.parametrize("api,before,after,grace", [
    ("legacy", 10, 5, None), ("legacy", 0, 0, None), ("legacy", 86_000_000, 399_999, None),
    ("legacy", 10, 5, 7), ("legacy", 86_400_000, 5, None), ("time_difference", 10, 10, 0),
    ("time_difference", 100, 0, 50)])
def test_window_settings_follow_join_window_stores(release, api, before, after, grace):
    from kssim.reference.model.errors import KssimError
    from kssim.reference.model.profiles import join_window_stores
    from kssim.spark_backend.joins import stream_stream_settings as settings

    doc = {"operator": "stream_stream_join", "join": "left", "window_api": api,
           "window": {"before_ms": before, "after_ms": after, "grace_ms": grace}}
    try:
        sc = scenario(doc, [], semantics=release)
    except KssimError:
        return  # the release rejects this window (checked by the loader)
    profile = profile_for(release)
    stores = join_window_stores(profile, before, after, grace, api == "time_difference")
    got = settings.window_settings(sc.topology, profile)
    assert got == (before, after, stores.grace_ms, stores.retention_ms,
                   max(stores.retention_ms // 2, settings.MIN_SEGMENT_INTERVAL_MS))
    if not profile.join_window_grace:  # JoinWindows#maintainMs: 1 day
        assert stores.retention_ms == 24 * 60 * 60 * 1000


# --- key identity ------------------------------------------------------------------------------------

KEYS = ["a", "", "ab", "b", "é", "日本", "\x00", "\x01", 'qu"ote', "back\\slash", "tab\t", "\ud800x", "?x",
        0, 1, -1, 256, 2 ** 31, -(2 ** 63), 2 ** 63 - 1, 2 ** 63, -(2 ** 63) - 1, 10 ** 30,
        1.0, -0.0, 0.0, 0.25, 1.5, -2.0, 1e16, 1.5e-7, 1e300, -2.5e-07, math.inf, -math.inf, math.nan,
        True, False, [1, 2], [], {"b": 1, "a": 2}, {"a": 2, "b": 1}, {}, [{"x": [1, "é"]}, None]]


def test_key_bytes_in_spark_are_serialized_key(spark):  # noqa: F811
    from kssim.spark_backend.joins.stream_table import key_bytes

    texts = [key_text(k) for k in KEYS]
    frame = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "i INT, key STRING")
    got = {r["i"]: bytes(r["b"]) for r in frame.select("i", key_bytes(frame["key"]).alias("b")).collect()}
    assert [got[i] for i in range(len(KEYS))] == [serialized_key(k) for k in KEYS]


def test_key_text_is_the_key_identity():
    # 1, 1.0, true and "1" are four keys; reordered object fields are another key
    texts = [key_text(k) for k in (1, 1.0, True, "1", {"a": 1, "b": 2}, {"b": 2, "a": 1})]
    assert len(set(texts)) == len(texts)
    assert key_text(json.loads("1.00")) == key_text(json.loads("1e0")) == "1.0"


#: JSON text of keys as a record file may spell them: spaces, exponents, trailing zeros, escapes
KEY_SPELLINGS = ["1", "1.0", "1.00", "1e2", "1E2", "-0", "-0.0", "true", "false", '"1"', '"a"',
                 '{"b":1,"a":2}', '{"b": 1, "a": 2}', '{"a":2,"b":1}', "[1, 2]", "[1,2]", ' [ 1 , 2 ] ',
                 '"\\u00e9"', '"é"', '"日本"', '"x\\ty"', '"\\/"', "12345678901234567890123",
                 "9223372036854775808", "1.5e-7", '{"k": [1.50, {"z": null}]}', "null"]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_record_files_give_keys_their_key_text(spark, tmp_path, fmt):  # noqa: F811
    """Whatever the spelling in the file, Spark's ``key`` column is ``key_text(json.loads(text))``:
    the identity the reference gets from the same file."""
    from kssim.spark_backend.runtime.record_files import read_record_files

    path = str(tmp_path / ("in.parquet" if fmt == "parquet" else "in.jsonl"))
    if fmt == "jsonl":
        with open(path, "w", encoding="utf-8") as handle:
            for ts, text in enumerate(KEY_SPELLINGS):
                handle.write(f'{{"topic": "left", "ts": {ts}, "key": {text}, "value": 1}}\n')
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"topic": ["left"] * len(KEY_SPELLINGS), "ts": list(range(len(KEY_SPELLINGS))),
                                 "key": KEY_SPELLINGS, "value": ["1.00"] * len(KEY_SPELLINGS)}), path)
    records, _ = read_record_files(spark, [path], with_offsets=False)
    got = [r["key"] for r in records.orderBy("idx").collect()]
    assert got == [key_text(json.loads(text)) for text in KEY_SPELLINGS]
    # values keep their spelling unless their bytes are compared (KIP-557)
    if fmt == "parquet":
        assert {r["value"] for r in records.collect()} == {"1.00"}
        canonical, _ = read_record_files(spark, [path], with_offsets=False, canonical_values=True)
        assert {r["value"] for r in canonical.collect()} == {"1.0"}


def test_a_lone_surrogate_key_is_a_bad_row_as_on_the_reference(spark, tmp_path):  # noqa: F811
    from kssim.reference.model.errors import ScenarioError
    from kssim.spark_backend.runtime.record_files import read_record_files

    path = tmp_path / "in.jsonl"
    path.write_text('{"topic": "left", "ts": 0, "key": "ok", "value": 1}\n'
                    '{"topic": "left", "ts": 1, "key": "\\ud800x", "value": 1}\n', encoding="utf-8")
    with pytest.raises(ScenarioError, match="lone surrogate"):
        read_record_files(spark, [str(path)], with_offsets=False)


def test_a_parquet_key_python_refuses_is_a_bad_row(spark, tmp_path):  # noqa: F811
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kssim.reference.model.errors import ScenarioError
    from kssim.spark_backend.runtime.record_files import read_record_files

    path = str(tmp_path / "bad.parquet")
    pq.write_table(pa.table({"topic": ["left", "left"], "ts": [0, 1], "key": ["[1, 2]", "1 2"],
                             "value": ["1", "2"]}), path)
    with pytest.raises(ScenarioError, match=r"input record 1: field key must be JSON text"):
        read_record_files(spark, [path], with_offsets=False)


# --- keys compare by serialized bytes in the joins ---------------------------------------------------

def _key_cases():
    cases = {}
    for join in ("inner", "left", "outer"):
        # left key 1; right keys true, 1.0 and "1" are other keys (other bytes); right key 1 joins
        cases[f"scalar-{join}"] = scenario({"operator": "table_table_join", "join": join}, [
            ("left", 1, "A", 1), ("right", True, "x", 2), ("right", 1.0, "y", 3), ("right", "1", "w", 4),
            ("right", 1, "z", 5)])
        # a JSON serde writes fields in document order: reordered fields are another key
        cases[f"object-{join}"] = scenario({"operator": "table_table_join", "join": join}, [
            ("left", {"a": 1, "b": 2}, "A", 1), ("right", {"b": 2, "a": 1}, "x", 2),
            ("right", {"a": 1, "b": 2}, "y", 3)])
    # the grace buffer evicts in (ts, serialized key) order: floats by their IEEE bytes (negative
    # ones after the positive ones), not by their text
    keys = [1.5, -2.0, 0.25, 1e10]
    cases["grace-floats"] = scenario(
        {"operator": "stream_table_join", "join": "inner", "grace_ms": 10,
         "table": {"versioned": True, "history_retention_ms": 100}},
        [("right", k, f"t{k}", 0) for k in keys] + [("left", k, f"s{k}", 5) for k in keys]
        + [("left", "zz", "late", 15)])
    # the outer-join store flushes in (ts, side, serialized key) order; keys of different types
    # with equal bytes ("\x01" and true) stay two entries, ordered as the reference orders them
    flushed = [1.5, -2.0, "\x01", True, 1, "a", [1], {"a": 1}]
    cases["outer-flush"] = scenario(
        {"operator": "stream_stream_join", "join": "outer", "window_api": "time_difference",
         "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0}},
        [("left", k, f"l{i}", 0) for i, k in enumerate(flushed)] + [("right", "b", "rb", 0), ("right", 2.5, "r2.5", 0)]
        + [("left", "late", "x", 100)])
    return cases


KEY_CASES = _key_cases()


@pytest.fixture(scope="module")
def key_results(spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    return dict(zip(KEY_CASES, run_scenarios(list(KEY_CASES.values()), spark)))


def _typed(result):
    # json.dumps keeps 1, 1.0 and true apart (Python's == does not)
    return [(json.dumps(o.key), o.value, o.ts, o.input_index) for o in result.outputs]


def test_scalar_keys_of_other_types_never_join(key_results):
    assert _typed(key_results["scalar-inner"]) == [("1", ["A", "z"], 5, 4)]
    # LeftJoin: A + null at once; RightJoin of true / 1.0 / "1": no left value there -> nothing
    assert _typed(key_results["scalar-left"]) == [("1", ["A", None], 1, 0), ("1", ["A", "z"], 5, 4)]
    assert _typed(key_results["scalar-outer"]) == [
        ("1", ["A", None], 1, 0), ("true", [None, "x"], 2, 1), ("1.0", [None, "y"], 3, 2), ('"1"', [None, "w"], 4, 3),
        ("1", ["A", "z"], 5, 4)]


def test_reordered_object_fields_are_another_key(key_results):
    assert _typed(key_results["object-inner"]) == [('{"a": 1, "b": 2}', ["A", "y"], 3, 2)]
    assert _typed(key_results["object-outer"]) == [
        ('{"a": 1, "b": 2}', ["A", None], 1, 0), ('{"b": 2, "a": 1}', [None, "x"], 2, 1),
        ('{"a": 1, "b": 2}', ["A", "y"], 3, 2)]


def test_grace_buffer_evicts_floats_in_serialized_key_order(key_results):
    assert [o.key for o in key_results["grace-floats"].outputs] == [0.25, 1.5, 1e10, -2.0]
    assert sorted([0.25, 1.5, 1e10, -2.0], key=serialized_key) == [0.25, 1.5, 1e10, -2.0]


def test_outer_store_flushes_in_serialized_key_order(key_results):
    # right entries before left ones; within a side by key bytes: 1 (0x00..01), then true and
    # "\x01" (both 0x01: by JSON type, bool before str), 1.5 (0x3ff8...), [1] ("["), "a", {"a":1}
    # ("{"), -2.0 (0xc000...)
    got = [o.value for o in key_results["outer-flush"].outputs if o.input_index == 10]
    assert got == [[None, "r2.5"], [None, "rb"], ["l4", None], ["l3", None], ["l2", None], ["l0", None],
                   ["l6", None], ["l5", None], ["l7", None], ["l1", None]]


def test_key_cases_agree_with_the_reference(key_results):
    from kssim.reference.runtime.engine import run_scenario

    for name, sc in KEY_CASES.items():
        assert _typed(key_results[name]) == _typed(run_scenario(sc)), name


# --- codes ------------------------------------------------------------------------------------------

def test_drops_and_failures_are_members_of_the_closed_sets(key_results, spark):  # noqa: F811
    from kssim.spark_backend.runtime.runner import run_scenarios

    null_key = scenario({"operator": "table_table_join", "join": "inner"},
                        [("left", None, "A", 1), ("right", "k", None, 2)], semantics="0.10.0")
    dropped = scenario({"operator": "stream_table_join", "join": "inner"},
                       [("left", None, "A", 1), ("left", "k", None, 2)])
    failed, ok = run_scenarios([null_key, dropped], spark)
    assert failed.failure.code is FailureCode.TABLE_SOURCE_NULL_KEY
    assert failed.failure.message == FailureCode.TABLE_SOURCE_NULL_KEY.message
    assert [(d.input_index, d.reason) for d in ok.drops] == [(0, DropReason.NULL_KEY), (1, DropReason.NULL_VALUE)]
