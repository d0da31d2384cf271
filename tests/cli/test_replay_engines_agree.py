"""``kssim replay`` on both engines: the same record files are accepted or refused alike (the rules
are the shared model's, ``reference.model.record_files``), and the same capture gives the same
output bytes. Runs Spark (the session fixture)."""
import json
import os

import pytest

from kssim.tools.cli import main

TOPOLOGY = {"format": "kssim-scenario/1", "name": "replay", "semantics": "3.9",
            "topology": {"operator": "stream_stream_join", "join": "outer", "window_api": "time_difference",
                         "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0}, "joiner": "pair"}}
GOOD = {"topic": "left", "ts": 1, "key": '"k"', "value": '"v"'}


@pytest.fixture
def topology(tmp_path):
    path = tmp_path / "topology.json"
    path.write_text(json.dumps(TOPOLOGY))
    return str(path)


def write_parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def replay(capsys, topology, records, out, engine):
    code = main(["replay", topology, "-i", records, "-o", str(out), "--engine", engine])
    return code, capsys.readouterr().err


# (row, where the complaint points, the complaint): each a small Parquet file
BAD_PARQUET = {
    "NaN": ({**GOOD, "value": "NaN"}, "field value", "must be JSON text, got"),
    "nested Infinity": ({**GOOD, "value": '{"a":[Infinity]}'}, "field value", "must be JSON text, got"),
    "repeated object key": ({**GOOD, "value": '{"a":1,"a":2}'}, "field value", "must be JSON text, got"),
    "a number beyond a double": ({**GOOD, "value": '{"a":[1e400]}'}, "field value", "must be JSON text, got"),
    "repeated key in a key": ({**GOOD, "key": '{"id":1,"id":2}'}, "field key", "must be JSON text, got"),
    "trailing content": ({**GOOD, "value": "1 2"}, "field value", "must be JSON text, got"),
    "trailing object": ({**GOOD, "value": '{"a":1} {"b":2}'}, "field value", "must be JSON text, got"),
    "trailing bracket": ({**GOOD, "value": "[1] ]"}, "field value", "must be JSON text, got"),
    "null topic": ({**GOOD, "topic": None}, "field topic", "must be one of left, right, got"),
    "float ts column": ({**GOOD, "ts": 1.5}, "column ts", "must hold integer, got double"),
    "integer key column": ({**GOOD, "key": 5}, "column key", "must hold JSON text (string), got"),
    "unknown column": ({**GOOD, "headers": "x"}, "column headers", "unknown field 'headers'"),
}


@pytest.mark.parametrize("case", sorted(BAD_PARQUET))
def test_both_engines_refuse_the_same_parquet_rows(spark, tmp_path, topology, capsys, case):
    row, where, complaint = BAD_PARQUET[case]
    # a bad row follows a good one; a column of a bad type is so in every row
    records = write_parquet(tmp_path / "captured.parquet", [GOOD, row] if where.startswith("field") else [row, row])
    errors = {}
    for engine in ("reference", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        code, err = replay(capsys, topology, records, out, engine)
        assert code == 2, (engine, err)
        assert not out.exists() and not [n for n in os.listdir(tmp_path) if n.startswith(".")]
        errors[engine] = err
    for engine, err in errors.items():
        assert "captured.parquet" in err and where in err and complaint in err, (engine, err)
    if where.startswith("field"):  # a row: both name it as the shared reader does
        assert "row 1, " in errors["reference"] and errors["spark"] == errors["reference"]


BAD_JSONL = {
    "NaN": ('{"topic":"left","ts":1,"key":"k","value":NaN}', "not valid JSON: NaN is not a JSON value"),
    "a number beyond a double": ('{"topic":"left","ts":1,"key":"k","value":-1E+400}',
                                 "not valid JSON: the number -1E+400 is beyond a double's range"),
    "repeated object key": ('{"topic":"left","ts":1,"key":"k","value":{"a":1,"a":2}}',
                            "not valid JSON: repeated object key 'a'"),
    "ts beyond a long": ('{"topic":"left","ts":9223372036854775808,"key":"k","value":1}',
                         "field ts: must be a non-negative integer timestamp"),
    "null partition": ('{"topic":"left","partition":null,"ts":1,"key":"k","value":1}',
                       "field partition: must be a non-negative integer, got None"),
}


@pytest.mark.parametrize("case", sorted(BAD_JSONL))
def test_both_engines_refuse_the_same_jsonl_lines(spark, tmp_path, topology, capsys, case):
    line, complaint = BAD_JSONL[case]
    records = tmp_path / "captured.jsonl"
    records.write_text(json.dumps({"topic": "left", "ts": 0, "key": "k", "value": 0}) + "\n" + line + "\n")
    for engine in ("reference", "spark"):
        code, err = replay(capsys, topology, str(records), tmp_path / f"{engine}.jsonl", engine)
        assert code == 2 and "captured.jsonl" in err and complaint in err, (engine, err)


def test_columns_of_nulls_are_accepted_by_both(spark, tmp_path, topology, capsys):
    """A Parquet column without a value (Arrow's null type: null keys, tombstones, no offsets)."""
    records = write_parquet(tmp_path / "captured.parquet", [{"topic": "left", "ts": 1, "key": None, "value": None,
                                                              "offset": None}])
    for engine in ("reference", "spark"):
        code, err = replay(capsys, topology, records, tmp_path / f"{engine}.jsonl", engine)
        assert code == 0, (engine, err)
        assert (tmp_path / f"{engine}.jsonl").read_bytes() == b""


def test_the_same_capture_gives_the_same_bytes_on_both_engines(spark, tmp_path, topology, capsys):
    rows = [{"topic": "left", "offset": 0, "ts": 5, "key": "k", "value": {"name": "Zoë", "n": 2.5, "tags": ["a", None]}},
            {"topic": "right", "offset": 0, "ts": 7, "key": "k", "value": "ü\u2028"},
            {"topic": "right", "offset": 1, "ts": 8, "key": {"b": 1, "a": [True]}, "value": 10 ** 15},
            {"topic": "left", "offset": 1, "ts": 9, "key": {"b": 1, "a": [True]}, "value": -0.0},
            {"topic": "left", "offset": 2, "ts": 30, "key": "k", "value": "B"}]
    records = tmp_path / "captured.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in rows))
    written = {}
    for engine in ("reference", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        code, err = replay(capsys, topology, str(records), out, engine)
        assert code == 0, err
        written[engine] = out.read_bytes()
    assert written["spark"] == written["reference"]
    lines = written["reference"].decode("utf-8").split("\n")
    assert lines[-1] == "" and len(lines) == 3 and all(" " not in line for line in lines)  # compact
    assert "Zoë" in lines[0] and "\u2028" in lines[0]  # non-ASCII as is
    assert json.loads(lines[1]) == {"topic": "output", "partition": 0, "key": {"b": 1, "a": [True]},
                                    "value": [-0.0, 10 ** 15], "ts": 9, "input": 3}


def test_json_text_as_any_writer_spells_it_gives_the_same_bytes(spark, tmp_path, topology, capsys):
    """Parquet keys and values are JSON text as some writer spelt it: both engines write what a
    JSON serde would (compact, numbers as parsed)."""
    rows = [{"topic": "left", "offset": 0, "ts": 5, "key": ' "k" ', "value": '{"a": 1, "b": [1.0, 1e2]}'},
            {"topic": "right", "offset": 0, "ts": 7, "key": '"k"', "value": '"\\u00e9"'},
            {"topic": "right", "offset": 1, "ts": 8, "key": "[1, 2]", "value": "-0"},
            {"topic": "left", "offset": 1, "ts": 9, "key": "[1,2]", "value": "2.50"}]
    records = write_parquet(tmp_path / "captured.parquet", rows)
    written = {}
    for engine in ("reference", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        code, err = replay(capsys, topology, records, out, engine)
        assert code == 0, err
        written[engine] = out.read_bytes()
    assert written["spark"] == written["reference"]
    assert written["reference"].decode("utf-8").split("\n")[:2] == [
        '{"topic":"output","partition":0,"key":"k","value":[{"a":1,"b":[1.0,100.0]},"é"],"ts":7,"input":1}',
        '{"topic":"output","partition":0,"key":[1,2],"value":[2.5,0],"ts":9,"input":3}']


def test_a_capture_folder_with_hive_style_subfolders_is_refused_by_both(spark, tmp_path, topology, capsys):
    # Spark's partitionBy("topic") writes topic=left/part-...; read as a folder, its records were
    # skipped unseen (0 outputs, exit 0)
    folder = tmp_path / "capture"
    (folder / "topic=left").mkdir(parents=True)
    (folder / "topic=left" / "part-0.jsonl").write_text('{"ts":1,"key":"k","value":1}\n')
    (folder / "_SUCCESS").write_text("")
    for engine in ("reference", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        code, err = replay(capsys, topology, str(folder), out, engine)
        assert code == 2 and not out.exists(), (engine, err)
        assert f"{folder}: holds the subfolder 'topic=left' (Hive-style partitioning" in err, (engine, err)


@pytest.mark.parametrize("engine", ["reference", "spark"])
def test_a_compressed_capture_and_an_empty_input_are_named_for_what_they_are(spark, tmp_path, topology, capsys,
                                                                            engine):
    import gzip

    packed = tmp_path / "capture.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"topic":"left","ts":1,"key":"k","value":1}\n'))
    out = tmp_path / "out.jsonl"
    code, err = replay(capsys, topology, str(packed), out, engine)
    assert code == 2 and "capture.jsonl.gz: is a gzip-compressed file" in err and "UTF-16" not in err, err
    code, err = replay(capsys, topology, "", out, engine)
    assert code == 2 and "--input '': an empty path names no capture" in err and "is the input" not in err, err
    assert not out.exists()
