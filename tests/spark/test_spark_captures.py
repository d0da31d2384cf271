"""``kssim replay --engine spark`` on captures, against the reference engine: the same records from
every capture format (the shared readers of ``reference.model.captures`` on the driver), the same
message and exit code 2 for every malformed input, the same drop counts (also when Kafka Streams
would fail), and the same bytes whatever the shuffle partitions. One Spark session for the file
(the ``spark`` fixture); the CLI finds it as the active session."""
from __future__ import annotations

import json
import os

import pytest

from kssim.tools.cli import main

STREAM_TABLE = """format: kssim-scenario/1
name: enrich
semantics: "3.9"
topology: {operator: stream_table_join, join: left, joiner: concat, joiner_separator: "/"}
"""
#: kcat -C -J of the two input topics, the output topic and an unrelated one
KCAT = """\
{"topic":"customers","partition":0,"offset":0,"tstype":"create","ts":1,"broker":1,"key":"c1","payload":"alice"}
{"topic":"audit","partition":0,"offset":0,"tstype":"logappend","ts":2,"broker":1,"key":null,"payload":"login"}
{"topic":"orders","partition":0,"offset":0,"tstype":"create","ts":5,"broker":1,"headers":["trace","t-1"],"key":"c1","payload":"book"}
{"topic":"enriched","partition":0,"offset":0,"tstype":"create","ts":5,"broker":1,"key":"c1","payload":"book/alice"}
{"topic":"orders","partition":0,"offset":1,"tstype":"create","ts":7,"broker":1,"key":"c2","payload":"pen"}
{"topic":"customers","partition":0,"offset":1,"tstype":"create","ts":8,"broker":1,"key":"c2","payload":"bob \\u00e9"}
{"topic":"orders","partition":0,"offset":2,"tstype":"create","ts":9,"broker":1,"key":null,"payload":"lost"}
{"topic":"orders","partition":0,"offset":3,"tstype":"create","ts":9,"broker":1,"key":"c2","payload":"ink"}
"""
#: kafka-console-consumer with print.timestamp, print.partition, print.offset, print.key
CONSOLE_ORDERS = ("CreateTime:5\tPartition:0\tOffset:0\tc1\tbook\nCreateTime:7\tPartition:0\tOffset:1\tc2\tpen\n"
                  "CreateTime:9\tPartition:0\tOffset:2\tc1\tink\n")
CONSOLE_CUSTOMERS = "CreateTime:1\tPartition:0\tOffset:0\tc1\talice\nCreateTime:8\tPartition:0\tOffset:1\tc1\tann\n"
#: a JSONL record file with varied keys and values (objects, floats, unicode, nulls, tombstones)
RECORDS = [
    {"topic": "right", "ts": 1, "key": {"id": 1, "r": "x"}, "value": {"name": "alice", "score": 1.5}},
    {"topic": "left", "ts": 2, "key": {"id": 1, "r": "x"}, "value": [1, 2.0, "\u00e9"]},
    {"topic": "left", "ts": 3, "key": None, "value": "no key"},
    {"topic": "right", "ts": 4, "key": "k", "value": "plain"},
    {"topic": "left", "ts": 4, "key": "k", "value": 10},
    {"topic": "right", "ts": 5, "key": "k", "value": None},
    {"topic": "left", "ts": 6, "key": "k", "value": True},
    {"topic": "left", "ts": 6, "key": 1.0, "value": {"nested": {"a": [None]}}},
]


def write_parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), str(path))


def parquet_rows(rows):
    """Record rows as a Parquet record file holds them: key and value as JSON text."""
    return [{**r, "key": None if r["key"] is None else json.dumps(r["key"]),
             "value": None if r["value"] is None else json.dumps(r["value"])} for r in rows]


@pytest.fixture
def folder(tmp_path):
    (tmp_path / "topo.yaml").write_text(STREAM_TABLE)
    (tmp_path / "all.json").write_text(KCAT)
    (tmp_path / "orders.txt").write_text(CONSOLE_ORDERS)
    (tmp_path / "customers.txt").write_text(CONSOLE_CUSTOMERS)
    (tmp_path / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    write_parquet(tmp_path / "records.parquet", parquet_rows(RECORDS))
    return tmp_path


def replay_both(folder, capsys, args, suffix=".jsonl"):
    """Run ``kssim replay`` with ``args`` on each engine; ``{engine: (exit code, stdout line
    without timing, stderr, output bytes or None)}``."""
    got = {}
    for engine in ("reference", "spark"):
        out = folder / f"{engine}{suffix}"
        if out.exists():
            out.unlink()
        code = main(["replay", str(folder / "topo.yaml"), *args, "-o", str(out), "--engine", engine, "--quiet"])
        said = capsys.readouterr()
        summary = said.out.split(" in ")[-1].split(": ", 1)[-1].replace(str(out), "OUT").strip()
        got[engine] = (code, summary, said.err.replace(str(out), "OUT"),
                       out.read_bytes() if out.exists() else None)
    return got


CAPTURES = {
    "kcat": ["-i", "{f}/all.json", "--topic", "left=orders", "--topic", "right=customers", "--topic",
             "output=enriched", "--ignore-topic", "audit"],
    "console": ["-i", "{f}/orders.txt", "-i", "right={f}/customers.txt", "--topic", "left=orders",
                "--input-format", "console"],
    "jsonl": ["-i", "{f}/records.jsonl", "--order", "as_listed"],
    "parquet": ["-i", "{f}/records.parquet"],
}


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_every_capture_format_replays_on_spark_as_on_the_reference(spark, folder, capsys, suffix):
    for name, args in CAPTURES.items():
        got = replay_both(folder, capsys, [a.format(f=folder) for a in args], suffix)
        assert got["reference"][0] == 0, (name, got["reference"])
        assert got["reference"][3], name  # the case is not vacuous: outputs were written
        assert got["spark"] == got["reference"], name


def test_drop_counts_equal_the_reference_also_when_kafka_would_fail(spark, tmp_path, capsys):
    """Null keys are dropped before the failing input (a null-key record that a left join with a
    grace period puts into its buffer: Kafka Streams 3.9 dies there); both engines count the
    drops before it and write the outputs before it."""
    from kssim.reference.model.engines import replay
    from kssim.reference.model.record_files import load_replay_topology

    (tmp_path / "topo.yaml").write_text(
        'format: kssim-scenario/1\nname: npe\nsemantics: "3.9"\ntopology: {operator: stream_table_join, join: left, '
        "grace_ms: 0, table: {versioned: true, history_retention_ms: 10}}\n")
    rows = [("right", None, 1), ("left", "k", 1), ("right", None, 2), ("right", "k", 2), ("left", "k", 3),
            ("left", None, 4), ("right", None, 5), ("left", "k", 6)]
    (tmp_path / "in.jsonl").write_text("".join(json.dumps({"topic": t, "ts": ts, "key": k, "value": f"v{i}"}) + "\n"
                                               for i, (t, k, ts) in enumerate(rows)))
    scenario = load_replay_topology(str(tmp_path / "topo.yaml"), order="as_listed")
    summaries = {}
    for engine in ("reference", "spark"):
        out = tmp_path / f"{engine}.jsonl"
        summary = replay(engine, scenario, [str(tmp_path / "in.jsonl")], str(out))
        summaries[engine] = (summary.outputs, dict(summary.drops), summary.failure.input_index,
                             summary.failure.message, out.read_bytes())
    assert summaries["reference"][:3] == (2, {"null_key": 2}, 5)
    assert summaries["spark"] == summaries["reference"]
    # Spark's scan of large files (forced here) counts the same drops before the failure
    from kssim.spark_backend.runtime.replay import replay as folder_replay

    counts, failure = folder_replay(scenario, [str(tmp_path / "in.jsonl")], str(tmp_path / "parts"), spark=spark,
                                    driver_read=False)
    assert counts == {"null_key": 2} and failure.input_index == 5


def test_small_replays_are_identical_whatever_the_shuffle_partitions(spark, folder):
    from kssim.reference.model.captures import CaptureOptions
    from kssim.reference.model.record_files import load_replay_topology
    from kssim.spark_backend.runtime.replay import replay_to_file

    scenario = load_replay_topology(str(folder / "topo.yaml"))
    written = []
    for partitions in (1, 7):
        out = folder / f"out{partitions}.jsonl"
        summary = replay_to_file(scenario, [str(folder / "all.json")], str(out), spark=spark,
                                 options=CaptureOptions(topics={"left": "orders", "right": "customers"},
                                                        ignore_topics=frozenset({"audit", "enriched"})),
                                 shuffle_partitions=partitions)
        assert summary.outputs >= 3 and summary.ignored == {"audit": 1, "enriched": 1}
        written.append(out.read_bytes())
    assert written[0] == written[1]


GOOD = {"topic": "left", "ts": 1, "key": "k", "value": "v"}
MAX_LONG = (1 << 63) - 1


def _jsonl(*rows):
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def _parquet_bytes(tmp_path, rows):
    write_parquet(tmp_path / "tmp.parquet", rows)
    data = (tmp_path / "tmp.parquet").read_bytes()
    (tmp_path / "tmp.parquet").unlink()
    return data


#: name -> (file name, its bytes from tmp_path); every one is bad input (exit 2) on both engines
BAD_INPUTS = {
    "unknown field": ("in.jsonl", lambda t: _jsonl(GOOD, {**GOOD, "extra": 1})),
    "ts beyond a long": ("in.jsonl", lambda t: _jsonl(GOOD, {**GOOD, "ts": MAX_LONG + 1})),
    "negative ts": ("in.jsonl", lambda t: _jsonl(GOOD, {**GOOD, "ts": -1})),
    "no such partition": ("in.jsonl", lambda t: _jsonl(GOOD, {**GOOD, "partition": 1})),
    "offsets going back": ("in.jsonl", lambda t: _jsonl({**GOOD, "offset": 5}, {**GOOD, "offset": 5})),
    "not JSON": ("in.jsonl", lambda t: _jsonl(GOOD, '{"topic": "left", ts: 1}')),
    "JSON with trailing content": ("in.jsonl", lambda t: _jsonl(GOOD, json.dumps(GOOD) + " 7")),
    "nested thousands of levels": ("in.jsonl", lambda t: _jsonl(GOOD, '{"topic":"left","ts":2,"key":"k","value":'
                                                               + "[" * 5000 + "]" * 5000 + "}")),
    "not UTF-8": ("in.jsonl", lambda t: _jsonl(GOOD) + b'{"topic":"left","ts":2,"key":"\xe9","value":"v"}\n'),
    "UTF-16": ("in.jsonl", lambda t: _jsonl(GOOD).decode().encode("utf-16")),
    "parquet repeated object key": ("in.parquet", lambda t: _parquet_bytes(t, [
        {"topic": "left", "ts": 1, "key": '"k"', "value": '"v"'},
        {"topic": "left", "ts": 2, "key": '"k"', "value": '{"a":1,"a":2}'}])),
    "parquet NaN value": ("in.parquet", lambda t: _parquet_bytes(t, [{"topic": "left", "ts": 1, "key": '"k"',
                                                                       "value": "NaN"}])),
    "parquet trailing content": ("in.parquet", lambda t: _parquet_bytes(t, [{"topic": "left", "ts": 1, "key": "1 2",
                                                                              "value": '"v"'}])),
    "parquet raw text value": ("in.parquet", lambda t: _parquet_bytes(t, [{"topic": "left", "ts": 1, "key": '"k"',
                                                                           "value": "hello"}])),
    "parquet ts as text": ("in.parquet", lambda t: _parquet_bytes(t, [{"topic": "left", "ts": "1", "key": '"k"',
                                                                       "value": '"v"'}])),
    "truncated parquet": ("in.parquet", lambda t: _parquet_bytes(t, [{"topic": "left", "ts": i, "key": '"k"',
                                                                      "value": '"v"'} for i in range(100)])[:300]),
}


@pytest.mark.parametrize("way", ["driver", "scan"])
def test_bad_inputs_get_the_reference_message_and_exit_2_on_spark(spark, tmp_path, capsys, monkeypatch, way):
    """Every malformed input, read by the shared reader on the driver (small inputs) or scanned
    by Spark (large ones; forced here): exit 2, the reference's message (file, line or row,
    field), no traceback, no output file."""
    from kssim.spark_backend.runtime import replay

    if way == "scan":
        monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    (tmp_path / "topo.yaml").write_text(STREAM_TABLE)
    for case, (name, content) in BAD_INPUTS.items():
        data = content(tmp_path)
        (tmp_path / name).write_bytes(data)
        folder = tmp_path / "mixed"
        said = {}
        for engine in ("reference", "spark"):
            out = tmp_path / f"{engine}.jsonl"
            code = main(["replay", str(tmp_path / "topo.yaml"), "-i", str(tmp_path / name), "-o", str(out),
                         "--engine", engine, "--quiet"])
            err = capsys.readouterr().err
            said[engine] = (code, err, out.exists())
        assert said["reference"][0] == 2 and said["reference"][1].startswith("kssim: "), case
        assert "Traceback" not in said["spark"][1], case
        assert said["spark"] == said["reference"], case
        (tmp_path / name).unlink()
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(_jsonl(GOOD))
    write_parquet(folder / "b.parquet", [{"topic": "left", "ts": 2, "key": '"k"', "value": '"v"'}])
    codes = [main(["replay", str(tmp_path / "topo.yaml"), "-i", str(folder), "-o", str(tmp_path / "o.jsonl"),
                   "--engine", engine, "--quiet"]) for engine in ("reference", "spark")]
    errors = capsys.readouterr().err.splitlines()
    assert codes == [2, 2] and "mixes capture formats" in errors[0] and errors[1] == errors[0]


@pytest.mark.parametrize("way", ["driver", "scan"])
def test_timestamps_up_to_long_max_replay_as_on_the_reference(spark, tmp_path, capsys, monkeypatch, way):
    from kssim.spark_backend.runtime import replay

    if way == "scan":
        monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    (tmp_path / "topo.yaml").write_text(STREAM_TABLE)
    (tmp_path / "in.jsonl").write_bytes(_jsonl({**GOOD, "topic": "right", "ts": MAX_LONG - 1}, GOOD,
                                               {**GOOD, "ts": MAX_LONG}, {**GOOD, "ts": MAX_LONG, "offset": MAX_LONG}))
    got = replay_both(tmp_path, capsys, ["-i", str(tmp_path / "in.jsonl")])
    assert got["reference"][0] == 0 and got["reference"][3].count(b"\n") == 3
    assert got["spark"] == got["reference"]


def test_a_scan_refusing_what_the_reader_accepts_replays_what_the_reader_reads(spark, tmp_path, capsys, monkeypatch):
    """A record file holding the output topic too: the reader skips (and counts) those records,
    Spark's scan of large files refuses them; the replay falls back to the reader's records."""
    from kssim.spark_backend.runtime import replay

    monkeypatch.setattr(replay, "DRIVER_READ_RECORDS", -1)
    (tmp_path / "topo.yaml").write_text(STREAM_TABLE)
    (tmp_path / "in.jsonl").write_bytes(_jsonl({**GOOD, "topic": "right", "value": "r"}, {**GOOD, "ts": 2},
                                               {**GOOD, "topic": "output", "value": "v/r"}, {**GOOD, "ts": 3}))
    got = replay_both(tmp_path, capsys, ["-i", str(tmp_path / "in.jsonl")])
    assert got["reference"][0] == 0 and "1 record of topic output skipped" in got["reference"][1]
    assert got["spark"] == got["reference"]
