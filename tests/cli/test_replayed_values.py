"""Values an aggregation reads, in replays: a captured value a ``sum`` cannot add (a string, a
fraction, a boolean, a number beyond a Java long) is an error naming the file, the record and the
field, as in a scenario file, on both engines and in every capture format."""
import json

import pytest

from kssim.tools.cli import main

TOPOLOGY = """format: kssim-scenario/1
name: sums
semantics: "3.9"
topology: {operator: window_aggregate, size_ms: 10, grace_ms: 0, aggregation: sum}
"""
BAD_VALUES = ['"7"', "1.5", "true", str(2 ** 63)]


@pytest.fixture
def topology(tmp_path):
    path = tmp_path / "sums.yaml"
    path.write_text(TOPOLOGY)
    return str(path)


@pytest.mark.parametrize("bad", BAD_VALUES)
def test_a_jsonl_capture_with_a_value_sum_cannot_add_exits_2(tmp_path, topology, capsys, bad):
    capture = tmp_path / "in.jsonl"
    capture.write_text('{"topic":"input","key":"k","value":1,"ts":1}\n'
                       f'{{"topic":"input","key":"k","value":{bad},"ts":2}}\n')
    assert main(["replay", topology, "-i", str(capture), "-o", str(tmp_path / "out.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"{capture}: line 2, field value" in err and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


def test_a_kcat_capture_is_checked_alike(tmp_path, topology, capsys):
    capture = tmp_path / "input.kcat"
    capture.write_text(json.dumps({"topic": "input", "partition": 0, "offset": 0, "tstype": "create", "ts": 1,
                                   "key": "k", "payload": "1.5"}) + "\n")
    assert main(["replay", topology, "-i", str(capture), "-o", str(tmp_path / "out.jsonl")]) == 2
    assert "field value" in capsys.readouterr().err


def test_the_spark_scan_refuses_what_the_reference_refuses(spark, tmp_path):
    from kssim.reference.model.errors import ScenarioError
    from kssim.spark_backend.runtime.record_files import read_record_files

    capture = tmp_path / "in.jsonl"
    capture.write_text('{"topic":"input","key":"k","value":1,"ts":1}\n'
                       '{"topic":"input","key":"k","value":"7","ts":2}\n')
    with pytest.raises(ScenarioError) as err:
        read_record_files(spark, [str(capture)], topics=("input",), sum_topics=("input",))
    assert err.value.where == "input record 1" and "field value" in err.value.message
    records, _ = read_record_files(spark, [str(capture)], topics=("input",))  # a count adds nothing
    assert records.count() == 2
