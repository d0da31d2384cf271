"""The Spark backend's KStream-GlobalKTable join against the reference engine: the null rules of every
release line, both join types, ``as_listed`` and ``bootstrap`` tables, both processing orders, one
global store shared by several tasks (co-partitioned or not), the table source's drops, failures,
key mappers and key identity. Outputs, drops and failures must be byte-identical; all cases run in
one batched Spark job, a few again alone (a one-scenario batch is planned with literal settings)."""
from __future__ import annotations

import json
import os

import pytest
from kssim_testing import BUNDLED, result_bytes, scenario

from kssim.reference.model.profiles import RELEASE_LINES, profile_for
from kssim.reference.model.scenario import find_scenario_files, load_scenario
from kssim.reference.runtime.engine import run_scenario

GLOBAL_LINES = RELEASE_LINES[RELEASE_LINES.index("0.10.2"):]


def topo(join, source="value", field="to"):
    mapper = {"field": field} if source == "value" else ({"from": "key"} if field is None else {"from": "key", "field": field})
    return {"operator": "global_table_join", "join": join, "key_mapper": mapper, "joiner": "concat", "joiner_separator": "-"}


def v(to, x="v"):
    return {"to": to, "x": x}


# null keys, null values, null mapped keys, tombstones, a null-key table record, equal updates
NULLS = [("right", "a", "A", 1), ("left", None, v("a", 1), 2), ("left", "k", v(None, 2), 3),
         ("left", None, v(None, 3), 4), ("left", "j", None, 5), ("right", "a", "A", 6), ("right", None, "Z", 7),
         ("right", "b", None, 8), ("left", "k", v("a", 4), 9), ("right", "a", None, 10), ("left", "k", v("a", 5), 11),
         ("left", "m", v("b", 6), 12)]
# two tasks: the global topic's records of either partition are seen by both
PARTITIONED = [("right", "a", "A", 4, 1), ("left", "k1", v("a", 1), 5, 0), ("left", "k2", v("a", 2), 1, 1),
               ("right", "a", "B", 2, 0), ("left", "k3", v("a", 3), 3, 1), ("right", "a", None, 6, 1),
               ("left", "k4", v("a", 4), 7, 0), ("left", None, v("a", 5), 2, 0), ("left", "k5", v(None, 6), 8, 1)]


def _cases():
    cases = {}
    for release in GLOBAL_LINES + ("1.0.1", "2.6.2", "2.7.1"):
        for join in ("inner", "left"):
            for table in ("as_listed", "bootstrap"):
                cases[f"nulls-{release}-{join}-{table}"] = scenario(topo(join), NULLS, semantics=release,
                                                                    global_table=table)
    for release in ("2.3", "2.6", "3.9", "4.1"):
        for order in ("as_listed", "timestamp_sync"):
            for table in ("as_listed", "bootstrap"):
                cases[f"partitioned-{release}-{order}-{table}"] = scenario(
                    topo("left"), PARTITIONED, semantics=release, order=order, global_table=table,
                    partitions={"left": 2, "right": 2})
        # the global topic with fewer partitions than the stream (no co-partitioning)
        uneven = [(t, k, val, ts, p if t == "left" else 0) for t, k, val, ts, p in PARTITIONED]
        cases[f"uneven-{release}"] = scenario(topo("left"), uneven, semantics=release, order="timestamp_sync",
                                              partitions={"left": 2, "right": 1})
    keyed = [("right", "k", "K", 1), ("left", "k", "A", 2), ("left", "j", "B", 3), ("left", None, "C", 4),
             ("right", 7, "seven", 5)]
    for release in ("0.10.2", "2.6", "3.9", "4.3"):
        for join in ("inner", "left"):
            cases[f"key-mapper-{release}-{join}"] = scenario(topo(join, "key", None), keyed, semantics=release)
    by_key_field = [("right", 7, "seven", 1), ("left", {"id": 7, "n": 1}, "A", 2), ("left", {"id": None}, "B", 3),
                    ("left", {"id": 8}, "C", 4)]
    cases["key-field-mapper-4.3"] = scenario(topo("left", "key", "id"), by_key_field, semantics="4.3")
    identity = [("right", 1, "int", 1), ("right", 1.0, "float", 2), ("right", True, "bool", 3), ("right", "1", "str", 4),
                ("right", {"a": 1, "b": 2}, "obj", 5)]
    identity += [("left", f"k{i}", {"to": to}, 10 + i)
                 for i, to in enumerate((1, 1.0, True, "1", {"a": 1, "b": 2}, {"b": 2, "a": 1}, [1]))]
    cases["key-identity"] = scenario(topo("left"), identity)
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def batch(spark):
    from kssim.spark_backend.runtime.runner import run_scenarios

    names = sorted(CASES)
    return dict(zip(names, run_scenarios([CASES[n] for n in names], spark)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_spark_matches_the_reference(batch, name):
    assert result_bytes(batch[name]).decode() == result_bytes(run_scenario(CASES[name])).decode()


def test_the_cases_reach_every_outcome(batch):
    codes = {str(d.reason) for r in batch.values() for d in r.drops}
    failures = {str(r.failure.code) for r in batch.values() if r.failure is not None}
    assert codes == {"null_key", "null_value", "null_join_key", "idempotent_update"}
    assert failures == {"global_lookup_null_key", "global_restore_null_key"}
    assert any(o.key is None for r in batch.values() for o in r.outputs)


ALONE = ["nulls-0.10.2-left-bootstrap", "nulls-0.10.2-inner-as_listed", "nulls-2.6-left-as_listed",
         "nulls-4.1-left-bootstrap", "partitioned-3.9-timestamp_sync-as_listed", "uneven-4.1"]


@pytest.mark.parametrize("name", ALONE)
def test_a_scenario_run_alone_matches(spark, name):
    from kssim.spark_backend.runtime.runner import run_scenario as spark_run

    assert result_bytes(spark_run(CASES[name], spark)).decode() == result_bytes(run_scenario(CASES[name])).decode()


def _bundled():
    files = find_scenario_files([os.path.join(BUNDLED, "kafka-tests", "global-table"), os.path.join(BUNDLED, "features")])
    return [f for f in files if '"global_table_join"' in open(f, encoding="utf-8").read()
            or "operator: global_table_join" in open(f, encoding="utf-8").read()]


def test_bundled_global_table_scenarios_pass(spark, assert_scenario_passes):
    from kssim.reference.model.compare import Status, judge
    from kssim.spark_backend.runtime.runner import run_scenarios

    files = _bundled()
    assert len(files) >= 20
    scenarios = [load_scenario(f) for f in files]
    for path, sc, result in zip(files, scenarios, run_scenarios(scenarios, spark)):
        verdict = judge(sc, result)
        assert verdict.status is Status.PASS, f"{path}: {verdict.detail}"


@pytest.mark.parametrize("release", GLOBAL_LINES + ("1.0.1",))
def test_rule_columns_carry_the_rule_of_the_same_name(release):
    from kssim.spark_backend.joins.global_table_settings import RULE_COLUMNS
    from kssim.spark_backend.runtime.inputs import config_row

    row = config_row(0, scenario(topo("left"), [], semantics=release, global_table="bootstrap"))
    profile = profile_for(release)
    assert len(RULE_COLUMNS) == 5
    for column in RULE_COLUMNS + ("null_key_outer_emit", "kip77_join_semantics", "ktable_emit_on_change"):
        assert row[column] == getattr(profile, column), column
    assert row["gt_bootstrap"] is True and row["gt_source"] == "value" and row["gt_field"] == "to"


@pytest.mark.parametrize("order", ["as_listed", "timestamp_sync"])
@pytest.mark.parametrize("table", ["as_listed", "bootstrap"])
def test_replay_gives_the_same_bytes_on_both_engines(spark, tmp_path, capsys, table, order):
    from kssim.tools.cli import main

    doc = {"format": "kssim-scenario/1", "name": "replay", "semantics": "3.9", "topology": topo("left"),
           "config": {"global_table": table, "order": order, "partitions": {"left": 2, "right": 1}}}
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(doc))
    rows = [{"topic": t, "partition": p if t == "left" else 0, "ts": ts, "key": k, "value": val}
            for t, k, val, ts, p in PARTITIONED]
    records = tmp_path / "captured.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = {}
    for engine in ("reference", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        assert main(["replay", str(path), "-i", str(records), "-o", str(out), "--engine", engine,
                     "--order", order]) == 0
        written[engine] = out.read_bytes()
    capsys.readouterr()
    assert written["reference"] == written["spark"] and written["reference"].count(b"\n") == 5  # k5: null mapped key, dropped (3.9)
