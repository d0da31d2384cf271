"""kssim replay of real captures on the reference engine, end to end: a kcat -C -J capture of every
topic (inputs, output and an unrelated topic) and a kafka-console-consumer capture, both written by
hand in the formats those tools print."""
import json

import pytest

from kssim.tools.cli import main

TOPOLOGY = """format: kssim-scenario/1
name: enrich
semantics: "3.9"
topology: {operator: stream_table_join, join: left, joiner: concat, joiner_separator: "/"}
"""
FK_TOPOLOGY = """format: kssim-scenario/1
name: fk
semantics: "3.9"
topology: {operator: fk_join, join: inner, foreign_key: {field: customer}, joiner: pair}
"""
#: kcat -C -J -t customers -t orders -t enriched -t audit (one envelope a line)
KCAT = """\
{"topic":"customers","partition":0,"offset":0,"tstype":"create","ts":1,"broker":1,"key":"c1","payload":"alice"}
{"topic":"audit","partition":0,"offset":0,"tstype":"logappend","ts":2,"broker":1,"key":null,"payload":"login"}
{"topic":"orders","partition":0,"offset":0,"tstype":"create","ts":5,"broker":1,"headers":["trace","t-1"],"key":"c1","payload":"book"}
{"topic":"enriched","partition":0,"offset":0,"tstype":"create","ts":5,"broker":1,"key":"c1","payload":"book/alice"}
{"topic":"orders","partition":0,"offset":1,"tstype":"create","ts":7,"broker":1,"key":"c2","payload":"pen"}
"""
#: kafka-console-consumer --topic orders --property print.timestamp=true --property print.partition=true
#: --property print.offset=true --property print.key=true
CONSOLE_ORDERS = "CreateTime:5\tPartition:0\tOffset:0\tc1\tbook\nCreateTime:7\tPartition:0\tOffset:1\tc2\tpen\n"
CONSOLE_CUSTOMERS = "CreateTime:1\tPartition:0\tOffset:0\tc1\talice\n"
EXPECTED = [{"topic": "output", "partition": 0, "key": "c1", "value": "book/alice", "ts": 5},
            {"topic": "output", "partition": 0, "key": "c2", "value": "pen/null", "ts": 7}]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "topo.yaml").write_text(TOPOLOGY)
    (tmp_path / "fk.yaml").write_text(FK_TOPOLOGY)
    (tmp_path / "all.json").write_text(KCAT)
    (tmp_path / "orders.txt").write_text(CONSOLE_ORDERS)
    (tmp_path / "customers.txt").write_text(CONSOLE_CUSTOMERS)
    return tmp_path


def outputs(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_kcat_capture_of_every_topic_replays(folder, capsys):
    out = folder / "out.jsonl"
    code = main(["replay", str(folder / "topo.yaml"), "-i", str(folder / "all.json"), "--topic", "left=orders",
                 "--topic", "right=customers", "--topic", "output=enriched", "--ignore-topic", "audit",
                 "-o", str(out)])
    assert code == 0
    # the inputs keep their place in the capture: orders are its records 2 and 4
    assert outputs(out) == [{**EXPECTED[0], "input": 2}, {**EXPECTED[1], "input": 4}]
    said = capsys.readouterr().out
    assert "1 record of topic audit skipped" in said and "1 record of topic enriched skipped" in said


def test_a_console_capture_replays_with_topics_from_names(folder):
    out = folder / "out.jsonl"
    code = main(["replay", str(folder / "topo.yaml"), "-i", str(folder / "orders.txt"),
                 "-i", "right=" + str(folder / "customers.txt"), "--topic", "left=orders", "-o", str(out),
                 "--input-format", "console"])
    assert code == 0
    assert outputs(out) == [{**EXPECTED[0], "input": 0}, {**EXPECTED[1], "input": 1}]


def test_an_fk_join_reads_json_values_by_default(folder):
    (folder / "fk.json").write_text(
        '{"topic":"right","partition":0,"offset":0,"tstype":"create","ts":1,"key":"c1","payload":"alice"}\n'
        '{"topic":"left","partition":0,"offset":0,"tstype":"create","ts":2,"key":"o1",'
        '"payload":"{\\"customer\\":\\"c1\\"}"}\n')
    out = folder / "out.jsonl"
    assert main(["replay", str(folder / "fk.yaml"), "-i", str(folder / "fk.json"), "-o", str(out)]) == 0
    assert [(r["key"], r["value"]) for r in outputs(out)] == [("o1", [{"customer": "c1"}, "alice"])]


@pytest.mark.parametrize("args, says", [
    (["-i", "{all}"], "all.json: line 1, field topic: topic 'customers' is not a topic the topology reads"),
    (["-i", "{all}", "--topic", "left=orders", "--topic", "right=customers"], "line 2, field topic: topic 'audit'"),
    (["-i", "{orders}", "--topic", "left=orders", "--value-format", "json"],
     "orders.txt: line 1, field value: not valid JSON"),
    (["-i", "{orders}", "--topic", "middle=orders"], "the topology has no topic 'middle'"),
    (["-i", "{orders}", "--topic", "left=orders", "--value-format", "xml"], "expected json or string"),
    (["-i", "{orders}", "--topic", "left=orders", "--value-format", "left=json"], "line 1, field value"),
])
def test_bad_captures_and_options_exit_2(folder, capsys, args, says):
    args = [a.format(all=folder / "all.json", orders=folder / "orders.txt") for a in args]
    out = folder / "out.jsonl"
    assert main(["replay", str(folder / "topo.yaml"), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert not out.exists()


def test_an_output_equal_to_a_named_console_input_is_refused(folder, capsys):
    before = (folder / "orders.txt").read_bytes()
    code = main(["replay", str(folder / "topo.yaml"), "-i", "left=" + str(folder / "orders.txt"),
                 "-o", str(folder / "orders.txt")])
    assert code == 2 and "refusing to overwrite" in capsys.readouterr().err
    assert (folder / "orders.txt").read_bytes() == before


def test_help_says_the_default_formats(capsys):
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--input-format" in text and "json when the topology reads into values" in text
    assert "--ignore-topic" in text and "--topic" in text
