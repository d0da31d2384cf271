"""kssim replay never destroys a capture and never leaves a partial output, on either engine; the
checks run before any work."""
import hashlib
import json
import os

import pytest

from kssim.tools.cli import main

TOPOLOGY = """format: kssim-scenario/1
name: replay
semantics: "3.9"
topology: {operator: stream_stream_join, join: left, window_api: time_difference,
           window: {before_ms: 5, after_ms: 5, grace_ms: 0}, joiner: concat, joiner_separator: "-"}
"""
ROWS = [{"topic": "left", "offset": 0, "ts": 5, "key": "k", "value": "A"},
        {"topic": "left", "offset": 1, "ts": 30, "key": "k", "value": "B"},
        {"topic": "right", "offset": 0, "ts": 7, "key": "k", "value": "a"}]


@pytest.fixture
def capture(tmp_path):
    topo = tmp_path / "topo.yaml"
    topo.write_text(TOPOLOGY)
    path = tmp_path / "captured.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return str(topo), path


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def no_work(monkeypatch):
    """Fail the test if either engine's replay starts."""
    import kssim.reference.runtime.replay as reference_replay

    def forbidden(*args, **kwargs):
        raise AssertionError("the replay ran")

    monkeypatch.setattr(reference_replay, "open_captures", forbidden)
    monkeypatch.setattr(reference_replay, "run_records", forbidden)
    import kssim.spark_backend.runtime.replay as spark_replay

    monkeypatch.setattr(spark_replay, "get_spark", forbidden)
    monkeypatch.setattr(spark_replay, "replay", forbidden)


@pytest.mark.parametrize("engine", ["reference", "spark"])
def test_output_equal_to_the_input_exits_2_and_leaves_it_untouched(capture, capsys, monkeypatch, engine):
    topo, path = capture
    before = digest(path)
    no_work(monkeypatch)
    assert main(["replay", topo, "-i", str(path), "-o", str(path), "--engine", engine]) == 2
    err = capsys.readouterr().err
    assert f"output {path} is the input {path}" in err and "refusing to overwrite" in err
    assert digest(path) == before


@pytest.mark.parametrize("engine", ["reference", "spark"])
def test_output_in_an_input_folder_exits_2(tmp_path, capture, capsys, monkeypatch, engine):
    topo, path = capture
    folder = tmp_path / "captures"
    folder.mkdir()
    os.replace(path, folder / "part-0.jsonl")
    no_work(monkeypatch)
    assert main(["replay", topo, "-i", str(folder), "-o", str(folder / "out.jsonl"), "--engine", engine]) == 2
    assert "lies inside the input folder" in capsys.readouterr().err
    assert os.listdir(folder) == ["part-0.jsonl"]


@pytest.mark.parametrize("engine", ["reference", "spark"])
@pytest.mark.parametrize("output, message", [("missing/out.jsonl", "missing does not exist"),
                                             ("out.csv", "unknown extension (expected .jsonl or .parquet)")])
def test_bad_output_paths_exit_2_before_any_work(tmp_path, capture, capsys, monkeypatch, engine, output, message):
    topo, path = capture
    no_work(monkeypatch)
    assert main(["replay", topo, "-i", str(path), "-o", str(tmp_path / output), "--engine", engine]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / output) in err and message in err


def test_a_failure_mid_write_leaves_no_file(capture, capsys, monkeypatch):
    topo, path = capture
    out = path.parent / "out.jsonl"
    from kssim.reference.model.record_files import OutputWriter

    write_many = OutputWriter.write_many

    def write_then_fail(self, records):
        write_many(self, records)
        raise KeyboardInterrupt  # Ctrl-C after the first records are written

    monkeypatch.setattr(OutputWriter, "write_many", write_then_fail)
    assert main(["replay", topo, "-i", str(path), "-o", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert sorted(os.listdir(path.parent)) == ["captured.jsonl", "topo.yaml"]  # no output, no temporary file
    # an existing output stays as it was
    out.write_text("previous\n")
    assert main(["replay", topo, "-i", str(path), "-o", str(out)]) == 130
    assert out.read_text() == "previous\n"
    assert sorted(os.listdir(path.parent)) == ["captured.jsonl", "out.jsonl", "topo.yaml"]
    monkeypatch.setattr(OutputWriter, "write_many", write_many)
    assert main(["replay", topo, "-i", str(path), "-o", str(out)]) == 0
    assert json.loads(out.read_text()) == {"topic": "output", "partition": 0, "key": "k", "value": "A-a", "ts": 7,
                                           "input": 2}


def test_a_bad_row_leaves_no_file(capture, capsys):
    topo, path = capture
    with open(path, "a") as handle:
        handle.write('{"topic":"left","ts":1,"key":"k","value":NaN}\n')
    out = path.parent / "out.parquet"
    assert main(["replay", topo, "-i", str(path), "-o", str(out)]) == 2
    assert "line 4: not valid JSON: NaN is not a JSON value" in capsys.readouterr().err
    assert not out.exists()


def test_a_replay_kafka_would_fail_keeps_the_outputs_before_it_and_exits_1(tmp_path, capsys):
    topo = tmp_path / "npe.json"
    topo.write_text(json.dumps({"format": "kssim-scenario/1", "name": "npe", "semantics": "3.9",
                                "topology": {"operator": "stream_table_join", "join": "left", "grace_ms": 0,
                                             "table": {"versioned": True, "history_retention_ms": 10}}}))
    path = tmp_path / "captured.jsonl"
    path.write_text("".join(json.dumps({"topic": "left", "ts": ts, "key": key, "value": value}) + "\n"
                            for ts, key, value in ((1, "k", "A"), (2, None, "B"), (3, "k", "C"))))
    out = tmp_path / "out.jsonl"
    assert main(["replay", str(topo), "-i", str(path), "-o", str(out), "--order", "as_listed"]) == 1
    assert "Kafka Streams would fail while processing input 1" in capsys.readouterr().err
    assert out.read_text() == '{"topic":"output","partition":0,"key":"k","value":["A",null],"ts":1,"input":0}\n'
