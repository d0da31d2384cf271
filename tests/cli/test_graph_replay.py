"""``kssim replay`` and ``kssim diff`` on topology graphs (reference engine): captures mapped to
the graph's source topics, the records of every sink topic in one output file, drops named by
node, diff against one sink topic; graphs run as listed; on the Spark backend too (driver read, or a scan of large record files)."""
import json

import pytest

from kssim.reference.model.captures import CaptureOptions, TextFormat, default_text_formats, open_captures
from kssim.reference.model.record_files import load_replay_topology
from kssim.tools.cli import main

#: orders re-keyed by customer: every positive order to ``orders-by-customer``, the running sum
#: of amounts per customer (through a repartition topic) to ``totals``
GRAPH = """format: kssim-scenario/1
name: orders-graph
semantics: "3.9"
topology:
  graph:
    - {stream: orders}
    - {filter: {cmp: [{field: amount}, ">", {const: 0}]}}
    - {select_key: {field: customer}, id: keyed}
    - {to: orders-by-customer}
    - {from: keyed, map_values: {field: amount}}
    - {group_by_key: {}}
    - {aggregate: sum}
    - {to_stream: {}}
    - {to: totals}
"""
ORDERS = [("o1", {"customer": "c1", "amount": 5}, 10),
          ("o2", {"customer": "c2", "amount": 0}, 11),  # filtered
          ("o3", {"customer": None, "amount": 7}, 12),  # null key: not repartitioned
          ("o4", {"customer": "c1", "amount": 3}, 13),
          ("o5", None, 14)]  # filtered (null amount)
EXPECTED = [
    {"topic": "orders-by-customer", "partition": 0, "key": "c1", "value": {"customer": "c1", "amount": 5}, "ts": 10,
     "input": 0},
    {"topic": "totals", "partition": 0, "key": "c1", "value": 5, "ts": 10, "input": 0},
    {"topic": "orders-by-customer", "partition": 0, "key": None, "value": {"customer": None, "amount": 7}, "ts": 12,
     "input": 2},
    {"topic": "orders-by-customer", "partition": 0, "key": "c1", "value": {"customer": "c1", "amount": 3}, "ts": 13,
     "input": 3},
    {"topic": "totals", "partition": 0, "key": "c1", "value": 8, "ts": 13, "input": 3},
]


def write_lines(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return str(path)


def compact(value):
    return None if value is None else json.dumps(value, separators=(",", ":"))


def kcat(topic, rows):
    """``kcat -C -J`` lines: key and payload as the JSON serde's bytes, as text."""
    return [{"topic": topic, "partition": 0, "offset": n, "tstype": "create", "ts": ts, "broker": 1,
             "key": compact(key), "payload": compact(value)} for n, (key, value, ts) in enumerate(rows)]


@pytest.fixture
def graph(tmp_path):
    topo = tmp_path / "graph.yaml"
    topo.write_text(GRAPH)
    capture = write_lines(tmp_path / "orders.jsonl",
                          [{"topic": "orders", "offset": n, "ts": ts, "key": key, "value": value}
                           for n, (key, value, ts) in enumerate(ORDERS)])
    return tmp_path, str(topo), capture


def rows_of(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_jsonl_replay_writes_every_sink_topic_byte_identically(graph, capsys):
    tmp, topo, capture = graph
    first, second = tmp / "out.jsonl", tmp / "again.jsonl"
    assert main(["replay", topo, "-i", capture, "-o", str(first)]) == 0
    out = capsys.readouterr().out
    assert "(as_listed) through graph" in out and "5 output records" in out and "3 drops" in out
    assert rows_of(first) == EXPECTED
    assert main(["replay", topo, "-i", capture, "-o", str(second), "--order", "as_listed"]) == 0
    assert first.read_bytes() == second.read_bytes()
    # the same lines as kssim run --format jsonl of a scenario with these inputs
    scenario = tmp / "scenario.yaml"
    scenario.write_text(GRAPH + "inputs:\n" + "".join(
        f"  - {json.dumps({'topic': 'orders', 'key': k, 'value': v, 'ts': ts})}\n" for k, v, ts in ORDERS))
    capsys.readouterr()
    assert main(["run", str(scenario), "--format", "jsonl"]) == 0
    assert capsys.readouterr().out.encode("utf-8") == first.read_bytes()


def test_parquet_round_trip_with_two_sink_topics(graph):
    import pyarrow as pa
    import pyarrow.parquet as pq

    tmp, topo, _ = graph
    rows = [{"topic": "orders", "partition": 0, "offset": n, "ts": ts, "key": compact(key), "value": compact(value)}
            for n, (key, value, ts) in enumerate(ORDERS)]
    pq.write_table(pa.Table.from_pylist(rows), tmp / "orders.parquet")
    out = tmp / "out.parquet"
    assert main(["replay", topo, "-i", str(tmp / "orders.parquet"), "-o", str(out)]) == 0
    got = pq.read_table(out).to_pylist()
    assert [r["topic"] for r in got] == [r["topic"] for r in EXPECTED]
    assert got == [{**r, "key": compact(r["key"]), "value": compact(r["value"])} for r in EXPECTED]
    again = tmp / "again.parquet"
    assert main(["replay", topo, "-i", str(tmp / "orders.parquet"), "-o", str(again)]) == 0
    assert pq.read_table(again).to_pylist() == got


def test_kcat_capture_mapped_to_the_graph_s_source_topic(graph, capsys):
    tmp, topo, _ = graph
    # production names the topic prod-orders; the capture also holds a sink topic's records
    lines = kcat("prod-orders", ORDERS) + kcat("totals", [("c1", 5, 10)])
    capture = write_lines(tmp / "capture.kcat", lines)
    out = tmp / "out.jsonl"
    assert main(["replay", topo, "-i", capture, "--topic", "orders=prod-orders", "-o", str(out)]) == 0
    assert rows_of(out) == EXPECTED
    assert "1 record of topic totals skipped" in capsys.readouterr().out
    # without the mapping the captured topic is unknown: exit 2 naming file, line and topic
    assert main(["replay", topo, "-i", capture, "-o", str(tmp / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "capture.kcat" in err and "line 1, field topic" in err and "prod-orders" in err
    assert not (tmp / "x.jsonl").exists()


def test_graph_topics_are_json_by_default_and_a_bad_text_names_its_line(graph, capsys):
    tmp, topo, _ = graph
    scenario = load_replay_topology(topo)
    formats = default_text_formats(scenario.topology)
    assert {t: f[:2] for t, f in formats.items()} == {
        t: (TextFormat.JSON, TextFormat.JSON) for t in ("orders", "orders-by-customer", "totals")}
    lines = kcat("orders", ORDERS[:1])
    lines.append({**kcat("orders", ORDERS[:1])[0], "offset": 1, "payload": "not json"})
    capture = write_lines(tmp / "bad.kcat", lines)
    assert main(["replay", topo, "-i", capture, "-o", str(tmp / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "bad.kcat: line 2, field payload" in err and "--value-format string" in err
    assert not (tmp / "out.jsonl").exists()


def test_a_captured_partition_beyond_the_graph_s_one_is_refused(graph, capsys):
    tmp, topo, _ = graph
    capture = write_lines(tmp / "two.jsonl", [{"topic": "orders", "partition": 1, "ts": 1, "key": "k", "value": 1}])
    assert main(["replay", topo, "-i", capture, "-o", str(tmp / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "two.jsonl: line 1, field partition" in err and "one partition per topic" in err


def test_open_captures_reads_a_graph_s_sources_and_one_sink(graph):
    tmp, topo, capture = graph
    topology = load_replay_topology(topo).topology
    mixed = write_lines(tmp / "mixed.jsonl", [
        {"topic": "orders", "ts": 1, "key": "o", "value": {"amount": 1}},
        {"topic": "totals", "ts": 2, "key": "c1", "value": 1},
        {"topic": "orders-by-customer", "ts": 3, "key": "c1", "value": {"amount": 1}}])
    inputs = open_captures([mixed], CaptureOptions(), topology, offsets_matter=False)
    assert [r.topic for r in inputs.records()] == ["orders"]
    assert inputs.ignored == {"totals": 1, "orders-by-customer": 1}
    totals = open_captures([mixed], CaptureOptions(), topology, reading="output", output_topic="totals")
    assert [(r.topic, r.value) for r in totals.records()] == [("totals", 1)]


def test_drops_file_names_the_node(graph, capsys):
    tmp, topo, capture = graph
    drops = tmp / "drops.jsonl"
    assert main(["replay", topo, "-i", capture, "-o", str(tmp / "out.jsonl"), "--drops", str(drops)]) == 0
    assert rows_of(drops) == [
        {"input": 1, "drop": "filtered", "topic": "orders", "partition": 0, "key": "o2", "node": "graph[1] filter"},
        {"input": 2, "drop": "null_key", "topic": "orders", "partition": 0, "key": "o3",
         "node": "KSTREAM-AGGREGATE-STATE-STORE-0000000005-repartition"},
        {"input": 4, "drop": "filtered", "topic": "orders", "partition": 0, "key": "o5", "node": "graph[1] filter"}]
    assert "(listed in" in capsys.readouterr().out


def captured(tmp, name, topic_rows):
    """A captured output: the record-file form of kssim's rows (no ``input``)."""
    return write_lines(tmp / name, [{"topic": r["topic"], "partition": r["partition"], "ts": r["ts"], "key": r["key"],
                                     "value": r["value"]} for r in topic_rows])


def test_diff_passes_on_the_right_output_and_finds_a_divergence_on_a_sink(graph, capsys):
    tmp, topo, capture = graph
    both = captured(tmp, "both.jsonl", EXPECTED)
    for sink in ("totals", "orders-by-customer"):
        assert main(["diff", topo, "-i", capture, "-e", both, "--sink", sink]) == 0
        out = capsys.readouterr().out
        assert f"(graph, sink topic {sink}, Kafka 3.9, engine reference, as_listed)" in out
        assert "no divergence" in out
    # production's totals topic holds 9 where Kafka Streams computes 8 (input 3)
    wrong = [dict(r, value=9) if r["topic"] == "totals" and r["ts"] == 13 else r for r in EXPECTED]
    bad = captured(tmp, "wrong.jsonl", [r for r in wrong if r["topic"] == "totals"])
    assert main(["diff", topo, "-i", capture, "-e", bad, "--sink", "totals", "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["matched"] == 1 and report["counts"]["value"] == 1
    assert report["first"]["kssim"]["value"] == 8 and report["first"]["captured"]["value"] == 9
    assert report["first"]["input"] == 3 and "orders.jsonl record 4" in report["input_text"]
    # the text report explains kssim's records of that sink only
    assert main(["diff", topo, "-i", capture, "-e", bad, "--sink", "totals"]) == 1
    text = capsys.readouterr().out
    assert "first divergence: value in partition 0, kssim record #1" in text
    assert "why (reference engine):" in text and "#1 c1:8@13 while processing input 3" in text
    # the other sink of the same capture still matches; --output gets every sink topic
    predicted = tmp / "predicted.jsonl"
    assert main(["diff", topo, "-i", capture, "-e", captured(tmp, "by.jsonl", wrong), "--sink",
                 "orders-by-customer", "-o", str(predicted)]) == 0
    assert rows_of(predicted) == EXPECTED


def test_diff_maps_captured_sink_names(graph, capsys):
    tmp, topo, _ = graph
    capture = write_lines(tmp / "orders.kcat", kcat("prod-orders", ORDERS))
    totals = write_lines(tmp / "totals.kcat", kcat("prod-totals", [("c1", 5, 10), ("c1", 8, 13)]))
    assert main(["diff", topo, "-i", capture, "-e", totals, "--topic", "orders=prod-orders", "--topic",
                 "totals=prod-totals", "--sink", "totals"]) == 0
    assert "counts: 2 records matched" in capsys.readouterr().out


def test_diff_needs_a_sink_when_the_graph_writes_several(graph, capsys):
    tmp, topo, capture = graph
    both = captured(tmp, "both.jsonl", EXPECTED)
    assert main(["diff", topo, "-i", capture, "-e", both]) == 2
    err = capsys.readouterr().err
    assert "the graph writes 2 topics (orders-by-customer, totals)" in err and "--sink TOPIC" in err
    assert main(["diff", topo, "-i", capture, "-e", both, "--sink", "nope"]) == 2
    assert "(its output topics: orders-by-customer, totals)" in capsys.readouterr().err


def test_diff_of_a_one_sink_graph_needs_no_sink(tmp_path, capsys):
    topo = tmp_path / "one.yaml"
    topo.write_text(GRAPH.split("    - {to: orders-by-customer}\n")[0] + "    - {to: orders-by-customer}\n")
    capture = write_lines(tmp_path / "orders.jsonl", [{"topic": "orders", "ts": ts, "key": k, "value": v}
                                                     for k, v, ts in ORDERS])
    expected = captured(tmp_path, "out.jsonl", [r for r in EXPECTED if r["topic"] == "orders-by-customer"])
    assert main(["diff", str(topo), "-i", capture, "-e", expected]) == 0
    assert "sink topic orders-by-customer" in capsys.readouterr().out


def test_spark_replays_and_diffs_a_graph_as_the_reference_does(graph, capsys, spark):
    tmp, topo, capture = graph
    outputs = {}
    for engine in ("reference", "spark"):
        out = tmp / f"{engine}.jsonl"
        assert main(["replay", topo, "-i", capture, "-o", str(out), "--engine", engine]) == 0
        outputs[engine] = out.read_bytes()
    assert outputs["spark"] == outputs["reference"] and rows_of(tmp / "spark.jsonl") == EXPECTED
    capsys.readouterr()
    expected = captured(tmp, "e.jsonl", EXPECTED)
    assert main(["diff", topo, "-i", capture, "-e", expected, "--sink", "totals", "--engine", "spark"]) == 0
    assert "no divergence" in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_spark_scans_a_large_graph_capture_itself_with_the_same_bytes(graph, capsys, spark, monkeypatch, fmt):
    """Above ``DRIVER_READ_RECORDS`` Spark reads the record file itself and streams the events
    back in order (``graph/replay.py``); set to -1 here, so the five-record capture takes that way."""
    from kssim.spark_backend.runtime import replay

    tmp, topo, capture = graph
    if fmt == "parquet":
        import pandas as pd

        rows = [{"topic": "orders", "partition": 0, "offset": n, "ts": ts, "key": compact(k), "value": compact(v)}
                for n, (k, v, ts) in enumerate(ORDERS)]
        capture = str(tmp / "orders.parquet")
        pd.DataFrame(rows).to_parquet(capture)
    scanned = []
    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    original = replay.scans_with_spark
    monkeypatch.setattr(replay, "scans_with_spark", lambda *a, **k: scanned.append(original(*a, **k)) or scanned[-1])
    assert main(["replay", topo, "-i", capture, "-o", str(tmp / "reference.jsonl")]) == 0
    assert main(["replay", topo, "-i", capture, "-o", str(tmp / "spark.jsonl"), "--engine", "spark"]) == 0
    assert scanned == [True]
    assert (tmp / "spark.jsonl").read_bytes() == (tmp / "reference.jsonl").read_bytes()
    assert "5 output records" in capsys.readouterr().out


#: a member as the key, another as the value: two native columns, guarded where floats may be
FIELDS_GRAPH = """format: kssim-scenario/1
name: fields
semantics: "3.9"
topology:
  graph:
    - {stream: orders}
    - {select_key: {field: customer}}
    - {map_values: {field: amount}}
    - {to: amounts}
"""


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_spark_scan_of_floats_in_any_spelling_gives_the_reference_s_bytes(tmp_path, capsys, spark, monkeypatch, fmt):
    """Floats spelled as Python would not (``1E3``, ``2.50``, ``-0.0``) next to plain numbers and
    flat objects: the scan finds them (``RecordStats.float_like``), so the graph's native columns
    keep their guard and the rows that hold a float go through the UDF; the bytes are the reference's."""
    import pandas as pd

    from kssim.spark_backend.runtime import replay

    topo = tmp_path / "graph.yaml"
    topo.write_text(FIELDS_GRAPH)
    texts = ['{"customer":"c1","amount":5}', '{"customer": "c2", "amount": 1E3}', '{"customer":"c1","amount":2.50}',
             '{"customer":"c1","amount":-0.0}', '{"customer":"c2","amount":7}', '{"amount":1.5e-3,"customer":"c1"}',
             # after a nested object the member is read by Spark's JSON path, whose writer spells 1e+16 1.0E16
             '{"meta":{"v":1},"customer":"c2","amount":1e16}']
    rows = [{"topic": "orders", "partition": 0, "offset": n, "ts": n, "key": f'"o{n}"', "value": text}
            for n, text in enumerate(texts)]
    capture = tmp_path / f"orders.{fmt}"
    if fmt == "parquet":
        pd.DataFrame(rows).to_parquet(capture)
    else:
        capture.write_text("".join(
            f'{{"topic":"orders","offset":{r["offset"]},"ts":{r["ts"]},"key":{r["key"]},"value":{r["value"]}}}\n'
            for r in rows))
    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    for engine in ("reference", "spark"):
        assert main(["replay", str(topo), "-i", str(capture), "-o", str(tmp_path / f"{engine}.jsonl"),
                     "--engine", engine, "--quiet"]) == 0
    assert (tmp_path / "spark.jsonl").read_bytes() == (tmp_path / "reference.jsonl").read_bytes()
    assert [(r["key"], r["value"]) for r in rows_of(tmp_path / "spark.jsonl")] == [
        ("c1", 5), ("c2", 1000.0), ("c1", 2.5), ("c1", -0.0), ("c2", 7), ("c1", 0.0015), ("c2", 1e16)]


def test_spark_scan_writes_parquet_as_the_reference_does(graph, capsys, spark, monkeypatch):
    """The scan's outputs are written by Spark (rows built in the JVM, part files joined in
    order): the Parquet rows and schema the reference writes."""
    import pyarrow.parquet as pq

    from kssim.spark_backend.runtime import replay

    tmp, topo, capture = graph
    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    written = {}
    for engine in ("reference", "spark"):
        path = str(tmp / f"{engine}.parquet")
        assert main(["replay", topo, "-i", capture, "-o", path, "--engine", engine, "--quiet"]) == 0
        written[engine] = pq.read_table(path)
    assert written["spark"].equals(written["reference"]) and written["spark"].num_rows == len(EXPECTED)


WINDOWED_GRAPH = """
format: kssim-scenario/1
name: windowed
topology:
  graph:
    - {stream: clicks}
    - {group_by_key: {}}
    - {windowed_by: {time: {size_ms: 10, grace_ms: 0}}}
    - {count: {}}
    - {to_stream: {}}
    - {to: counts}
"""


def test_spark_scan_keeps_what_came_before_a_failure_and_writes_windowed_keys(tmp_path, capsys, spark, monkeypatch):
    """A record whose window would end past Long.MAX kills the application (window_illegal_argument):
    the outputs before it are written, windowed keys as ``{"key","start","end"}``."""
    from kssim.spark_backend.runtime import replay

    topo = tmp_path / "windowed.yaml"
    topo.write_text(WINDOWED_GRAPH)
    capture = write_lines(tmp_path / "clicks.jsonl", [
        {"topic": "clicks", "ts": ts, "key": key, "value": 1}
        for key, ts in [("a", 1), ("b", 12), ("a", 15), ("a", (1 << 63) - 3), ("a", 17)]])
    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    status = {}
    for engine in ("reference", "spark"):
        status[engine] = main(["replay", str(topo), "-i", capture, "-o", str(tmp_path / f"{engine}.jsonl"),
                               "--engine", engine, "--quiet"])
    assert status["spark"] == status["reference"] != 0
    assert (tmp_path / "spark.jsonl").read_bytes() == (tmp_path / "reference.jsonl").read_bytes()
    assert [(r["key"], r["value"]) for r in rows_of(tmp_path / "spark.jsonl")] == [
        ({"key": "a", "start": 0, "end": 10}, 1), ({"key": "b", "start": 10, "end": 20}, 1),
        ({"key": "a", "start": 10, "end": 20}, 1)]


def test_spark_scan_of_a_graph_capture_names_a_bad_record_as_the_reference_does(graph, capsys, spark, monkeypatch):
    from kssim.spark_backend.runtime import replay

    tmp, topo, _ = graph
    bad = write_lines(tmp / "bad.jsonl", [{"topic": "orders", "ts": 1, "key": "o1", "value": 1},
                                         {"topic": "orders", "ts": "soon", "key": "o2", "value": 2}])
    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    messages = {}
    for engine in ("reference", "spark"):
        assert main(["replay", topo, "-i", bad, "-o", str(tmp / f"{engine}.jsonl"), "--engine", engine]) == 2
        messages[engine] = capsys.readouterr().err
        assert not (tmp / f"{engine}.jsonl").exists()
    assert messages["spark"] == messages["reference"] and "bad.jsonl" in messages["spark"]


def test_spark_scan_of_a_graph_capture_with_sink_records_replays_what_the_reader_reads(graph, capsys, spark,
                                                                                       monkeypatch):
    """A capture holding records of a sink topic: the scan refuses them, the shared reader skips
    them, and the driver way replays the rest (the same bytes as the reference)."""
    from kssim.spark_backend.runtime import replay

    tmp, topo, _ = graph
    rows = [{"topic": "orders", "ts": ts, "key": k, "value": v} for k, v, ts in ORDERS]
    capture = write_lines(tmp / "mixed.jsonl", rows + [{"topic": "totals", "ts": 99, "key": "c1", "value": 8}])
    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    for engine in ("reference", "spark"):
        assert main(["replay", topo, "-i", capture, "-o", str(tmp / f"{engine}.jsonl"), "--engine", engine]) == 0
    assert (tmp / "spark.jsonl").read_bytes() == (tmp / "reference.jsonl").read_bytes()
    assert "1 record of topic totals skipped" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["replay", "diff"])
def test_timestamp_sync_is_refused_for_graphs(graph, capsys, command):
    tmp, topo, capture = graph
    args = [command, topo, "-i", capture, "--order", "timestamp_sync"]
    args += ["-o", str(tmp / "out.jsonl")] if command == "replay" else ["-e", captured(tmp, "e.jsonl", EXPECTED),
                                                                      "--sink", "totals"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--order timestamp_sync" in err and "graph.yaml is a topology graph, processed as listed" in err
    assert not (tmp / "out.jsonl").exists()


def test_a_replay_output_is_a_valid_replay_input(tmp_path, capsys):
    # the output rows carry input (and old_value): accepted and ignored, in JSONL and Parquet
    from kssim.reference.model.record_files import check_parquet_columns, check_record

    first = tmp_path / "first.yaml"
    first.write_text('format: kssim-scenario/1\nname: a\nsemantics: "3.9"\n'
                     'topology: {graph: [{stream: orders}, {map_values: {field: n}}, {to: amounts}]}\n')
    second = tmp_path / "second.yaml"
    second.write_text('format: kssim-scenario/1\nname: b\nsemantics: "3.9"\n'
                      'topology: {graph: [{stream: amounts}, {filter: {cmp: ["$value", ">", {const: 1}]}}, '
                      '{to: big}]}\n')
    captured = tmp_path / "orders.jsonl"
    captured.write_text('{"topic":"orders","key":"o1","value":{"n":1},"ts":1}\n'
                        '{"topic":"orders","key":"o2","value":{"n":5},"ts":2}\n')
    for fmt in ("jsonl", "parquet"):
        middle = tmp_path / f"amounts.{fmt}"
        assert main(["replay", str(first), "-i", str(captured), "-o", str(middle)]) == 0
        out = tmp_path / f"big-{fmt}.jsonl"
        assert main(["replay", str(second), "-i", str(middle), "-o", str(out)]) == 0
        assert [json.loads(line)["key"] for line in out.read_text().splitlines()] == ["o2"]
    assert check_record({"topic": "t", "ts": 1, "key": "k", "value": 1, "input": 3, "old_value": None}, ("t",))[0] == "t"
    check_parquet_columns("x.parquet", {"topic": "string", "ts": "integer", "key": "string", "value": "string",
                                        "input": "integer", "old_value": "string"})
    with pytest.raises(Exception, match="unknown field 'inputs'"):
        check_record({"topic": "t", "ts": 1, "key": "k", "value": 1, "inputs": 3}, ("t",))
