"""Record files in, output files out: the replay path (``spark_backend.replay``) gives the same
records as ``run_scenarios`` on the same inputs, for JSONL and Parquet, several partitions."""
from __future__ import annotations

import glob
import json
import os
import random

import pytest
from spark_fixtures import conformance_files, spark  # noqa: F401
from test_spark_determinism import variant

from reference.scenario import read_document, scenario_from_dict


def expected_lines(result, send_old):
    lines = []
    for o in result.outputs:
        obj = {"topic": o.topic, "partition": o.partition, "key": o.key, "value": o.value, "ts": o.ts,
               "input": o.input_index}
        if send_old:
            obj["old_value"] = o.old_value
        lines.append(obj)
    return lines


def read_jsonl_folder(folder):
    lines = []
    for part in sorted(glob.glob(os.path.join(folder, "part-*"))):
        with open(part, encoding="utf-8") as handle:
            lines += [json.loads(line) for line in handle if line.strip()]
    return lines


def pick_scenario(fmt):
    """A versioned grace stream-table join for JSONL, a table-table join with old values for
    Parquet; both spread over two partitions with timestamp synchronisation."""
    if fmt == "jsonl":
        path = [p for p in conformance_files("stream_table_join") if p.endswith("inner-versioned_grace-18.json")][0]
    else:
        path = [p for p in conformance_files("table_table_join") if '"send_old_values": true' in open(p).read()][0]
    return scenario_from_dict(variant(read_document(path), random.Random(5), 2, "timestamp_sync"))


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_replaying_record_files_equals_running_the_scenario(spark, tmp_path, fmt):  # noqa: F811
    from spark_backend.inputs import write_record_files
    from spark_backend.replay import replay
    from spark_backend.runner import run_scenarios

    scenarios = [pick_scenario(fmt)]
    direct = run_scenarios(scenarios, spark)
    assert direct[0].outputs  # the case is not vacuous
    for n, (sc, result) in enumerate(zip(scenarios, direct)):
        records = str(tmp_path / f"in{n}.{fmt}")
        write_record_files(spark, sc, records, fmt)
        out = str(tmp_path / f"out{n}")
        counts, failure = replay(sc, [records], out, fmt="jsonl", spark=spark)
        assert read_jsonl_folder(out) == expected_lines(result, sc.topology.send_old_values
                                                        if hasattr(sc.topology, "send_old_values") else False)
        assert (failure is None) == (result.failure is None)
        drops = {}
        for d in result.drops:
            drops[d.reason] = drops.get(d.reason, 0) + 1
        assert counts == drops


def test_parquet_output_and_failure_exit_code(spark, tmp_path):  # noqa: F811
    import pyarrow.parquet as pq

    from spark_backend.replay import main

    doc = {"format": "kssim-scenario/1", "name": "npe", "semantics": "3.9",
           "topology": {"operator": "stream_table_join", "join": "left", "grace_ms": 0,
                        "table": {"versioned": True, "history_retention_ms": 10}},
           "inputs": [{"topic": "left", "key": "k", "value": "A", "ts": 1},
                      {"topic": "left", "key": None, "value": "B", "ts": 2},
                      {"topic": "left", "key": "k", "value": "C", "ts": 3}]}
    path = tmp_path / "npe.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    assert main([str(path), "--output", str(out), "--format", "parquet"]) == 1  # Kafka would die at input 1
    table = pq.read_table(str(out)).to_pylist()
    assert [(r["key"], r["value"], r["ts"], r["input"]) for r in table] == [('"k"', '["A",null]', 1, 0)]


def test_rows_are_numbered_in_the_order_the_files_are_given(spark, tmp_path):  # noqa: F811
    from reference.record_files import read_record_files as reference_reader
    from spark_backend.inputs import read_record_files

    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps({"topic": "right", "partition": p, "ts": i, "key": i, "value": "s"}) + "\n"
                             for i, p in enumerate([0, 1, 1])))
    big = tmp_path / "big.jsonl"  # Spark reads the largest split first
    rows = [{"topic": "left", "partition": i % 2, "offset": 10 + i, "ts": i, "key": {"b": i, "a": 0}, "value": [i]}
            for i in range(300)]
    rows[5].pop("offset")  # previous offset of its partition + 1
    big.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    paths = [str(small), str(big)]
    got = read_record_files(spark, paths, partitions={"left": 2, "right": 2}).orderBy("idx").collect()
    expected = reference_reader(paths, ("left", "right"), {"left": 2, "right": 2})
    assert [(r["idx"], r["side"], r["task"], r["ts"], r["key"], r["value"]) for r in got] == \
        [(e.index, ("left", "right").index(e.topic), e.partition, e.ts,
          json.dumps(e.key, separators=(",", ":")), json.dumps(e.value, separators=(",", ":"))) for e in expected]
    offsets = {}
    for r in got:
        offsets.setdefault((r["side"], r["task"]), []).append(r["off"])
    assert offsets[(1, 0)] == [0] and offsets[(1, 1)] == [0, 1]
    assert offsets[(0, 1)][:4] == [11, 13, 14, 17]  # row 5 (partition 1) had no offset: 13 + 1
    assert got[3]["key"] == '{"b":0,"a":0}'  # document order kept: what a JSON serde writes


def test_bad_record_files_name_the_file_and_the_problem(spark, tmp_path):  # noqa: F811
    from reference.errors import ScenarioError
    from spark_backend.inputs import read_record_files

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"topic": "left", "offset": 5, "ts": 1, "key": "k", "value": 1}) + "\n"
                    + json.dumps({"topic": "left", "offset": 5, "ts": 2, "key": "k", "value": 2}) + "\n")
    with pytest.raises(ScenarioError, match="offsets of a topic partition must increase"):
        read_record_files(spark, [str(path)])
    path.write_text(json.dumps({"topic": "left", "ts": 1, "key": "k", "value": 1, "extra": 0}) + "\n")
    with pytest.raises(ScenarioError, match="unknown field 'extra'"):
        read_record_files(spark, [str(path)])
    path.write_text(json.dumps({"topic": "left", "partition": 3, "ts": 1, "key": "k", "value": 1}) + "\n")
    with pytest.raises(ScenarioError, match="partition 3 does not exist"):
        read_record_files(spark, [str(path)], partitions={"left": 2, "right": 2})
