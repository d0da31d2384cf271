"""The shared record-file rules (strict JSON, rows, Parquet columns) and the safe output writer."""
import json
import os

import pytest

from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import (NotJson, OutputPathError, RecordProblem, atomic_path, check_output_path,
                                          check_record, open_output, parse_json, read_record_files)
from kssim.reference.model.records import NO_OLD_VALUE, OutputRecord

TOPICS = ("left", "right")


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a":-Infinity}', "1e400", '[-1.5E+309]', "1" * 400 + ".5", '{"a":1,"a":2}', '[{"b":{"c":1,"c":1}}]',
                                  "1 2", "{} {}", '"x" y', "", "  "])
def test_strict_json_refuses_what_spark_refuses(text):
    with pytest.raises(NotJson):
        parse_json(text)


@pytest.mark.parametrize("text, value", [("1", 1), (' {"a": [1, 2.5]} ', {"a": [1, 2.5]}), ("null", None),
                                         ('"\\u00e9"', "é"), ('{"a":{"a":1}}', {"a": {"a": 1}}),
                                         ("1e-400", 0.0), ("1.7e308", 1.7e308), ("1" * 400, int("1" * 400))])
def test_strict_json_reads_json(text, value):
    assert parse_json(text) == value


@pytest.mark.parametrize("row, field", [
    ([1], None),
    ({"topic": "left", "ts": 1, "key": 1, "value": 1, "headers": {}}, "headers"),
    ({"topic": "left", "ts": 1, "key": 1}, "value"),
    ({"topic": None, "ts": 1, "key": 1, "value": 1}, "topic"),
    ({"topic": 5, "ts": 1, "key": 1, "value": 1}, "topic"),
    ({"topic": "left", "partition": None, "ts": 1, "key": 1, "value": 1}, "partition"),
    ({"topic": "left", "partition": 1, "ts": 1, "key": 1, "value": 1}, "partition"),
    ({"topic": "left", "offset": -1, "ts": 1, "key": 1, "value": 1}, "offset"),
    ({"topic": "left", "ts": 1.0, "key": 1, "value": 1}, "ts"),
    ({"topic": "left", "ts": True, "key": 1, "value": 1}, "ts"),
    ({"topic": "left", "ts": 1 << 63, "key": 1, "value": 1}, "ts"),  # not a Java long
])
def test_bad_records_name_the_field(row, field):
    with pytest.raises(RecordProblem) as info:
        check_record(row, TOPICS, {})
    assert info.value.field == field


def test_a_good_record_with_defaults():
    assert check_record({"topic": "right", "ts": 3, "key": None, "value": [1], "offset": None}, TOPICS, {}) == \
        ("right", 0, None, 3, None, [1])


def write_parquet(path, rows, schema=None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return str(path)


@pytest.mark.parametrize("column, values, where", [
    ("ts", [1.5], "column ts"),
    ("partition", ["0"], "column partition"),
    ("key", [5], "column key"),
    ("headers", ["x"], "column headers"),
])
def test_parquet_columns_must_have_the_record_types(tmp_path, column, values, where):
    row = {"topic": "left", "ts": 1, "key": '"k"', "value": '"v"', column: values[0]}
    path = write_parquet(tmp_path / "in.parquet", [row])
    with pytest.raises(ScenarioError) as info:
        read_record_files([path], TOPICS, {})
    assert info.value.where == where


def test_a_column_of_nulls_is_a_column_of_any_type(tmp_path):
    path = write_parquet(tmp_path / "in.parquet", [{"topic": "left", "ts": 1, "key": None, "value": '"v"', "offset": None}])
    assert [(r.key, r.value) for r in read_record_files([path], TOPICS, {})] == [(None, "v")]


# --- output paths ----------------------------------------------------------------------------------

def test_output_equal_to_an_input_is_refused_naming_it(tmp_path):
    capture = tmp_path / "captured.jsonl"
    capture.write_text("{}\n")
    with pytest.raises(OutputPathError, match=f"output {capture} is the input {capture}"):
        check_output_path(str(capture), [str(capture)])
    # the same file by another name: a relative path, a symbolic link, a hard link
    link, hard = tmp_path / "link.jsonl", tmp_path / "hard.jsonl"
    link.symlink_to(capture)
    os.link(capture, hard)
    for other in (os.path.relpath(capture), str(link), str(hard)):
        with pytest.raises(OutputPathError, match="refusing to overwrite"):
            check_output_path(other, [str(capture)])


def test_output_inside_an_input_folder_is_refused(tmp_path):
    folder = tmp_path / "captured.parquet"
    folder.mkdir()
    with pytest.raises(OutputPathError, match="lies inside the input folder"):
        check_output_path(str(folder / "out.jsonl"), [str(folder)])


@pytest.mark.parametrize("name, message", [("missing/out.jsonl", "folder .*missing does not exist"),
                                           ("out.csv", "unknown extension"),
                                           ("dir.jsonl", "is a folder")])
def test_unwritable_outputs_are_refused(tmp_path, name, message):
    (tmp_path / "dir.jsonl").mkdir()
    with pytest.raises(OutputPathError, match=message):
        check_output_path(str(tmp_path / name), [])


def test_a_good_output_path_gives_its_format(tmp_path):
    assert check_output_path(str(tmp_path / "out.parquet"), [str(tmp_path / "in.parquet")]) == "parquet"


# --- atomic writes ---------------------------------------------------------------------------------

def leftovers(folder):
    return sorted(name for name in os.listdir(folder) if name.startswith("."))


@pytest.mark.parametrize("error", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_an_interrupted_write_leaves_nothing_and_keeps_the_old_file(tmp_path, error):
    target = tmp_path / "out.jsonl"
    with pytest.raises(type(error)):
        with open_output(str(target)) as writer:
            writer.write(OutputRecord("output", 0, "k", "v", 1, 0))
            raise error
    assert not target.exists() and leftovers(tmp_path) == []
    target.write_text("old\n")
    with pytest.raises(type(error)):
        with atomic_path(str(target)) as temp:
            with open(temp, "w") as handle:
                handle.write("partial")
            raise error
    assert target.read_text() == "old\n" and leftovers(tmp_path) == []


def test_a_complete_write_replaces_the_file(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with open_output(str(target), with_old_value=True) as writer:
        writer.write(OutputRecord("output", 0, "k", ["é", None], 1, 0, NO_OLD_VALUE))
    assert target.read_bytes() == '{"topic":"output","partition":0,"key":"k","value":["é",null],"ts":1,"input":0,' \
                                  '"old_value":null}\n'.encode()
    assert writer.count == 1 and leftovers(tmp_path) == []


def test_an_empty_parquet_output_has_the_output_columns(tmp_path):
    import pyarrow.parquet as pq

    with open_output(str(tmp_path / "out.parquet")):
        pass
    assert pq.read_schema(tmp_path / "out.parquet").names == ["topic", "partition", "key", "value", "ts", "input"]


def test_parquet_output_holds_json_text(tmp_path):
    import pyarrow.parquet as pq

    with open_output(str(tmp_path / "out.parquet"), with_old_value=True) as writer:
        writer.write(OutputRecord("output", 1, {"b": 1, "a": 2}, None, 5, 3, "x"))
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == [
        {"topic": "output", "partition": 1, "key": '{"b":1,"a":2}', "value": None, "ts": 5, "input": 3,
         "old_value": '"x"'}]
    assert json.loads(pq.read_table(tmp_path / "out.parquet").to_pylist()[0]["key"]) == {"b": 1, "a": 2}


def test_an_output_folder_must_not_hold_or_be_an_input(tmp_path):
    """Spark's own replay writes a folder and overwrites it: neither may touch a capture."""
    from kssim.reference.model.record_files import clashing_input

    captures = tmp_path / "captures"
    captures.mkdir()
    capture = str(captures / "left.jsonl")
    assert clashing_input(str(tmp_path / "captures"), [capture], either_way=True) == capture
    assert clashing_input(str(tmp_path / "captures"), [capture]) is None  # a file output cannot hold one
    assert clashing_input(str(tmp_path / "out"), [capture], either_way=True) is None
    assert clashing_input("hdfs://cluster/out", ["hdfs://cluster/out"], either_way=True) is None


def test_a_full_disk_names_the_output_file_and_leaves_nothing(tmp_path, capsys):
    import errno

    from kssim.tools import cli

    out = tmp_path / "out.jsonl"
    with pytest.raises(OSError) as info:
        with atomic_path(out) as temp:
            with open(temp, "wb") as handle:
                handle.write(b"x")
                raise OSError(errno.ENOSPC, "No space left on device")  # what write() raises, no file named
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(out)
    assert os.listdir(tmp_path) == []

    def full_disk(args):
        with atomic_path(out):
            raise OSError(errno.ENOSPC, "No space left on device")

    class Args:
        func = staticmethod(full_disk)

    assert cli._run(Args()) == 2
    assert capsys.readouterr().err == f"kssim: No space left on device: {out}\n"
