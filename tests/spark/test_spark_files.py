"""Record files in, output files out: the replay path (``spark_backend.runtime.replay``) gives the same
records as ``run_scenarios`` on the same inputs, for JSONL and Parquet, several partitions."""
from __future__ import annotations

import glob
import json
import os
import random

import pytest
from kssim_testing import conformance_files
from test_spark_determinism import variant

from kssim.reference.model.scenario import read_document, scenario_from_dict


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
    from kssim.spark_backend.runtime.record_files import write_record_files
    from kssim.spark_backend.runtime.replay import replay
    from kssim.spark_backend.runtime.runner import run_scenarios

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
            drops[str(d.reason)] = drops.get(str(d.reason), 0) + 1
        assert counts == drops


def test_parquet_output_and_failure_exit_code(spark, tmp_path):  # noqa: F811
    import pyarrow.parquet as pq

    from kssim.spark_backend.runtime.replay import main

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
    from kssim.reference.model.record_files import read_record_files as reference_reader
    from kssim.spark_backend.runtime.record_files import read_record_files

    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps({"topic": "right", "partition": p, "ts": i, "key": i, "value": "s"}) + "\n"
                             for i, p in enumerate([0, 1, 1])))
    big = tmp_path / "big.jsonl"  # Spark reads the largest split first
    rows = [{"topic": "left", "partition": i % 2, "offset": 10 + i, "ts": i, "key": {"b": i, "a": 0}, "value": [i]}
            for i in range(300)]
    rows[5].pop("offset")  # previous offset of its partition + 1
    big.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    paths = [str(small), str(big)]
    records, stats = read_record_files(spark, paths, partitions={"left": 2, "right": 2})
    got = records.orderBy("idx").collect()
    assert stats.records == len(got) == 303 and stats.complex_values == 300  # [i] is not simple JSON
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
    from kssim.reference.model.errors import ScenarioError
    from kssim.spark_backend.runtime.record_files import read_record_files

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


def _first_bad_index(paths):
    """How many records the reference reader accepts before it raises (None: the files are fine)."""
    from kssim.reference.model.errors import ScenarioError
    from kssim.reference.model.record_files import iter_record_files

    count = 0
    try:
        for _ in iter_record_files(paths, ("left", "right"), {"left": 2, "right": 2}):
            count += 1
    except ScenarioError:
        return count
    return None


@pytest.mark.parametrize("seed", range(10))
def test_offset_checks_across_files_agree_with_the_reference(spark, tmp_path, seed):  # noqa: F811
    """Missing and given offsets over several files: the first bad record (if any) is the
    reference reader's; without offsets (as_listed) neither engine checks them."""
    import random

    from kssim.reference.model.errors import ScenarioError
    from kssim.reference.model.record_files import iter_record_files
    from kssim.spark_backend.runtime.record_files import read_record_files

    rng = random.Random(seed)
    next_offset = {}
    paths = []
    for f in range(3):
        lines = []
        for _ in range(rng.randint(1, 40)):
            topic, partition = rng.choice(("left", "right")), rng.randint(0, 1)
            row = {"topic": topic, "partition": partition, "ts": rng.randint(0, 9), "key": "k", "value": 1}
            expected = next_offset.get((topic, partition), 0)
            choice = rng.random()
            if choice < 0.3:
                next_offset[(topic, partition)] = expected + 1  # no offset: the previous one + 1
            else:
                jump = -2 if rng.random() < 0.02 else rng.choice((0, 0, 0, 3))  # rarely one that goes back
                row["offset"] = max(0, expected + jump)
                next_offset[(topic, partition)] = row["offset"] + 1
            lines.append(json.dumps(row))
        path = tmp_path / f"part-{f}.jsonl"
        path.write_text("\n".join(lines) + "\n")
        paths.append(str(path))
    bad = _first_bad_index(paths)
    if bad is None:
        got = read_record_files(spark, paths, partitions={"left": 2, "right": 2})[0].orderBy("idx").collect()
        assert [r["idx"] for r in got] == list(range(len(got)))
    else:
        with pytest.raises(ScenarioError, match=f"input record {bad}\\b.*offsets of a topic partition must increase"):
            read_record_files(spark, paths, partitions={"left": 2, "right": 2})
    as_listed, stats = read_record_files(spark, paths, partitions={"left": 2, "right": 2}, with_offsets=False)
    assert as_listed.count() == stats.records == sum(1 for _ in iter_record_files(paths, ("left", "right"), {"left": 2, "right": 2},
                                                                   offsets_matter=False))


def _largest(operator, order):
    """``(path, scenario)``: the conformance scenario of ``operator`` with the most outputs in
    processing order ``order``."""
    from kssim.reference.runtime.engine import run_scenario
    from kssim.reference.model.scenario import load_scenario

    best = None
    for path in conformance_files(operator):
        sc = load_scenario(path)
        if sc.config.order != order or sc.expected_failure is not None:
            continue
        n = len(run_scenario(sc).outputs)
        if best is None or n > best[0]:
            best = (n, path, sc)
    return best[1:]


@pytest.mark.parametrize("operator", ["stream_stream_join", "stream_table_join", "table_table_join"])
@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_one_pass_replay_writes_outputs_in_order_and_the_drops(spark, tmp_path, operator, fmt):  # noqa: F811
    """The one-pass writer (outputs ordered by ranges of input indexes over several part files,
    drops beside them) against the reference engine, with simple values (no Python step) and
    with object values (joined in Python)."""
    import attrs
    import pyarrow.parquet as pq

    from kssim.reference.runtime.engine import run_scenario
    from kssim.spark_backend.runtime.record_files import write_record_files
    from kssim.spark_backend.runtime.replay import replay

    _, base = _largest(operator, "as_listed")
    boxed = attrs.evolve(base, inputs=tuple(r._replace(value=None if r.value is None else {"v": r.value})
                                            for r in base.inputs))
    for n, sc in enumerate((base, boxed)):
        expected = run_scenario(sc)
        assert len(expected.outputs) >= 4
        records = str(tmp_path / f"in{n}.{fmt}")
        write_record_files(spark, sc, records, fmt)
        out, drops_path = str(tmp_path / f"out{n}"), str(tmp_path / f"drops{n}")
        counts, failure = replay(sc, [records], out, fmt=fmt, drops_path=drops_path, spark=spark)
        assert failure is None
        send_old = getattr(sc.topology, "send_old_values", False)
        if fmt == "jsonl":
            got = read_jsonl_folder(out)
        else:
            parts = sorted(glob.glob(os.path.join(out, "part-*.parquet")))
            assert len(parts) >= 1
            got = []
            for part in parts:
                assert pq.read_schema(part).names == ["topic", "partition", "key", "value", "ts", "input"] \
                    + (["old_value"] if send_old else [])  # the reference's Parquet columns
                for r in pq.read_table(part).to_pylist():
                    obj = {"topic": r["topic"], "partition": r["partition"], "key": None if r["key"] is None else json.loads(r["key"]),
                           "value": None if r["value"] is None else json.loads(r["value"]), "ts": r["ts"],
                           "input": r["input"]}
                    if send_old:
                        obj["old_value"] = None if r["old_value"] is None else json.loads(r["old_value"])
                    got.append(obj)
        assert got == expected_lines(expected, send_old)
        reasons = {}
        for d in expected.drops:
            reasons[str(d.reason)] = reasons.get(str(d.reason), 0) + 1
        assert counts == reasons
        written = read_jsonl_folder(drops_path) if expected.drops else []
        assert [(d["input"], d["reason"]) for d in written] == [(d.input_index, str(d.reason)) for d in expected.drops]


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_kssim_replay_on_spark_writes_what_the_reference_writes(spark, tmp_path, fmt):  # noqa: F811
    """``kssim replay --engine spark`` (part files joined in order into one file) against
    ``kssim replay`` on the reference engine, same record file and topology file."""
    import pyarrow.parquet as pq

    from kssim.spark_backend.runtime.record_files import write_record_files
    from kssim.tools.cli import main

    path, sc = _largest("table_table_join", "as_listed")
    doc = {"format": "kssim-scenario/1", "name": sc.name, "semantics": sc.release,
           "topology": read_document(path)["topology"]}
    topo = tmp_path / "topology.json"
    topo.write_text(json.dumps(doc))
    records = str(tmp_path / f"in.{fmt}")
    write_record_files(spark, sc, records, fmt)
    outputs = {}
    for engine in ("reference", "spark"):
        out = str(tmp_path / f"{engine}.{fmt}")
        assert main(["replay", str(topo), "-i", records, "-o", out, "--order", "as_listed", "--engine", engine]) == 0
        if fmt == "parquet":
            outputs[engine] = pq.read_table(out).to_pylist()
        else:
            with open(out, encoding="utf-8") as handle:
                outputs[engine] = [json.loads(line) for line in handle]
    assert len(outputs["reference"]) >= 4 and outputs["spark"] == outputs["reference"]


def test_parquet_keys_and_values_must_be_json_text(spark, tmp_path):  # noqa: F811
    """A raw string where JSON text belongs is an error naming the record and field, in both engines."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kssim.reference.model.errors import ScenarioError
    from kssim.reference.model.record_files import read_record_files as reference_reader
    from kssim.spark_backend.runtime.record_files import read_record_files

    rows = [{"topic": "left", "ts": 0, "key": '"k"', "value": '{"a":[1,2.5]}'},
            {"topic": "right", "ts": 1, "key": '"k"', "value": None},
            {"topic": "left", "ts": 2, "key": '"k"', "value": "hello"}]
    path = str(tmp_path / "raw.parquet")
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(ScenarioError, match="row 2, field value"):
        reference_reader([path], ("left", "right"), {})
    with pytest.raises(ScenarioError, match="input record 2.*field value must be JSON text, got hello"):
        read_record_files(spark, [path])
    rows[2]["value"] = '"hello"'
    pq.write_table(pa.Table.from_pylist(rows), path)
    records, stats = read_record_files(spark, [path])
    assert records.count() == 3 and stats.complex_values == 1


@pytest.mark.parametrize("texts, float_like", [
    (['{"a":1,"b":"x.y"}', '"k-1"', '-0', '[12345678901234567890123456789012345678]'], 0),  # 38 digits
    (['{"a":1.5}'], 1), (['1E3'], 1), (['[2e-2]'], 1),
    (['123456789012345678901234567890123456789'], 1),  # 39 digits: a VARIANT holds a double
    (['"v1.2"', '{"a":"3e"}'], 2)])  # a false alarm costs only the guard: still counted
def test_the_scan_counts_texts_that_may_hold_a_float(spark, tmp_path, texts, float_like):  # noqa: F811
    """``RecordStats.float_like``: keys and values where a float or an integer beyond 38 digits may be (``MAY_HOLD_FLOAT``); with none, a scanned graph replay's native
    columns need no guard."""
    from kssim.spark_backend.runtime.record_files import read_record_files

    path = tmp_path / "in.jsonl"
    path.write_text("".join(f'{{"topic": "left", "ts": {i}, "key": "k", "value": {t}}}\n' for i, t in enumerate(texts)))
    _, stats = read_record_files(spark, [str(path)])
    assert stats.float_like == float_like


def test_output_sort_leads_with_the_input_order_and_each_kind_keeps_it(spark, tmp_path):  # noqa: F811
    """The one-pass writer's sort starts with ``g1`` (a discriminating key: Spark's sort compares
    a prefix of the first key, and ``sid``/``kind`` are constant on nearly every row), yet the
    write partitioned by ``kind`` leaves every kind's rows in output order over the part files."""
    import types

    from pyspark.sql import functions as F

    from kssim.spark_backend.runtime.record_files import RecordStats
    from kssim.spark_backend.runtime.replay import _in_output_order, _kinds_written_apart

    n = 3000
    rng = random.Random(7)
    rows = [(("drop" if i % 5 == 3 else "output"), 0, i, 0, 0, 0, f, None, 0, f"{i}:{f}")
            for i in range(n) for f in range(1 + i % 2)]
    rng.shuffle(rows)
    frame = spark.createDataFrame(rows, "kind STRING, sid INT, g1 BIGINT, g2 BIGINT, g3 BIGINT, g4 BIGINT, "
                                        "f1 BIGINT, f2 BINARY, f3 BIGINT, value STRING").repartition(4)
    ordered = _in_output_order(spark, frame, types.SimpleNamespace(ts_sync=False), RecordStats(n, 0), 3)
    plan = ordered._jdf.queryExecution().optimizedPlan().toString()
    assert "Sort [g1#" in plan and "Sort [kind#" not in plan and "Sort [sid#" not in plan
    out = str(tmp_path / "staged")
    with _kinds_written_apart(spark):
        ordered.write.mode("overwrite").partitionBy("kind").text(out)
    for kind in ("output", "drop"):
        parts = sorted(glob.glob(os.path.join(out, f"kind={kind}", "part-*")))
        assert len(parts) == 3  # one file per range of input indexes
        got = [line.rstrip("\n") for part in parts for line in open(part, encoding="utf-8")]
        want = sorted((r for r in rows if r[0] == kind), key=lambda r: (r[2], r[6]))
        assert got == [r[-1] for r in want]
    assert spark.conf.get("spark.sql.maxConcurrentOutputFileWriters") == "0"  # restored
