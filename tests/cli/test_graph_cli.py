"""Topology graphs through the command line: run, check, describe, bad graphs."""
import glob
import json
import os

import pytest

from kssim.tools.cli import main

from kssim_testing import CONFORMANCE, CONFORMANCE_GRAPHS

GRAPH_FILES = sorted(glob.glob(os.path.join(CONFORMANCE_GRAPHS, "**", "*.json"), recursive=True))
REKEY_JOIN = os.path.join(CONFORMANCE_GRAPHS, "kafka-oracle", "rekey-join", "graph-rekey-join-142.json")


def run_cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("path", GRAPH_FILES[::25], ids=os.path.basename)
def test_describe_prints_what_kafka_printed(capsys, path):
    code, out, _ = run_cli(capsys, "describe", path)
    with open(path, encoding="utf-8") as f:
        assert code == 0 and out == json.load(f)["x-topology-description"]


def test_describe_refuses_a_single_operator_scenario(capsys):
    code, _, err = run_cli(capsys, "describe", os.path.join(CONFORMANCE, "seeds", "seed-stream-stream-left-3.1.json"))
    assert code == 2 and "topology graphs" in err


def test_run_prints_each_sink_topic_with_the_input_that_emitted_it(capsys):
    code, out, _ = run_cli(capsys, "run", REKEY_JOIN, "--format", "jsonl")
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [(r["topic"], r["key"], r["ts"], r["input"]) for r in rows] == [
        ("out", "a-0", 19, 5), ("out", "a-0", 43, 12)]


def test_check_passes_the_graph_corpus(capsys):
    code, out, _ = run_cli(capsys, "check", CONFORMANCE_GRAPHS, "-q")
    assert code == 0 and f"{len(GRAPH_FILES)} passed, 0 failed" in out


def test_a_bad_graph_exits_2_naming_file_node_and_field(capsys, tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"format": "kssim-scenario/1", "name": "bad", "inputs": [],
                                "topology": {"graph": [{"stream": "s"}, {"select_key": {"feld": "g"}}, {"to": "o"}]}}))
    for command in ("run", "check", "describe"):
        code, out, err = run_cli(capsys, command, str(path))
        text = out + err
        assert code == 2, command
        assert str(path) in text and "topology.graph[1].select_key" in text, command


def test_describe_at_another_release_says_whose_names_it_prints(capsys):
    code, out, err = run_cli(capsys, "describe", REKEY_JOIN, "--release", "3.8")
    assert code == 0 and out.startswith("Topologies:") and "Kafka 3.9" in err and "3.8" in err
