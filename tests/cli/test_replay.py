"""Replaying captured record files (JSONL, Parquet) with kssim replay on the reference engine."""
import json

import pytest

from kssim.reference.model.errors import ScenarioError
from kssim.reference.model.record_files import read_record_files
from kssim.tools.cli import main

TOPOLOGY = """format: kssim-scenario/1
name: replay
semantics: "3.9"
topology: {operator: stream_stream_join, join: left, window_api: time_difference,
           window: {before_ms: 5, after_ms: 5, grace_ms: 0}, joiner: concat, joiner_separator: "-"}
"""


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def files(tmp_path):
    topo = tmp_path / "topo.yaml"
    topo.write_text(TOPOLOGY)
    left = write_jsonl(tmp_path / "left.jsonl", [
        {"topic": "left", "offset": 0, "ts": 5, "key": "k", "value": "A"},
        {"topic": "left", "offset": 1, "ts": 30, "key": "k", "value": "B"}])
    right = write_jsonl(tmp_path / "right.jsonl", [
        {"topic": "right", "offset": 0, "ts": 7, "key": "k", "value": "a"},
        {"topic": "right", "offset": 1, "ts": 8, "key": None, "value": "x"}])
    return tmp_path, str(topo), left, right


def test_rows_are_numbered_in_file_order(files):
    _, _, left, right = files
    recs = read_record_files([left, right], ("left", "right"), {})
    assert [(r.index, r.topic, r.ts) for r in recs] == [(0, "left", 5), (1, "left", 30), (2, "right", 7), (3, "right", 8)]


def test_replay_in_timestamp_order_by_default(files, capsys):
    tmp, topo, left, right = files
    out = tmp / "out.jsonl"
    assert main(["replay", topo, "-i", left, "-i", right, "-o", str(out)]) == 0
    # timestamp sync: A@5, a@7 (joins A), x@8 (null key, dropped), B@30 (waits in the outer store)
    assert [json.loads(l) for l in out.read_text().splitlines()] == [
        {"topic": "output", "partition": 0, "key": "k", "value": "A-a", "ts": 7, "input": 2}]
    assert "1 output records" in capsys.readouterr().out


def test_replay_as_listed_processes_file_order(files):
    tmp, topo, left, right = files
    out = tmp / "out.jsonl"
    assert main(["replay", topo, "-i", left, "-i", right, "-o", str(out), "--order", "as_listed"]) == 0
    # A@5, then B@30: stream time 30 > 5 + after 5 flushes A-null while B is processed; a@7 comes
    # after that: A@5 has left the left window store's retention (5 < 30 - 10 + 1) and B@30 is
    # outside a's window, so a joins nothing
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [(r["value"], r["ts"], r["input"]) for r in rows] == [("A-null", 5, 1)]


def test_parquet_in_and_out(files, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, topo, left, right = files
    rows = [json.loads(l) for path in (left, right) for l in open(path)]
    for r in rows:  # Parquet carries keys and values as JSON text
        r["key"], r["value"] = json.dumps(r["key"]) if r["key"] is not None else None, json.dumps(r["value"])
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "in.parquet")
    assert main(["replay", topo, "-i", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet")]) == 0
    assert pq.read_table(tmp_path / "out.parquet").to_pylist() == [
        {"topic": "output", "partition": 0, "key": '"k"', "value": '"A-a"', "ts": 7, "input": 2}]


@pytest.mark.parametrize("row, where", [
    ({"topic": "left", "ts": "x", "key": 1, "value": 2}, "line 2, field ts"),
    ({"topic": "middle", "ts": 1, "key": 1, "value": 2}, "line 2, field topic"),
    ({"topic": "left", "ts": 1, "key": 1}, "line 2, field value"),
    ({"topic": "left", "ts": 1, "key": 1, "value": 2, "headers": {}}, "line 2, field headers"),
    ({"topic": "left", "ts": 1, "key": 1, "value": 2, "offset": 0}, "line 2, field offset"),  # not after offset 3
    ({"topic": "left", "ts": 1, "key": 1, "value": 2, "partition": 1}, "line 2, field partition"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, row, where):
    path = write_jsonl(tmp_path / "bad.jsonl", [{"topic": "left", "offset": 3, "ts": 1, "key": 1, "value": 1}, row])
    with pytest.raises(ScenarioError) as info:
        read_record_files([path], ("left", "right"), {})
    assert info.value.path == path and info.value.where == where


def test_offsets_are_checked_only_where_the_order_reads_them(tmp_path):
    rows = [{"topic": "left", "offset": 3, "ts": 1, "key": 1, "value": 1},
            {"topic": "left", "offset": 0, "ts": 1, "key": 1, "value": 2}]
    path = write_jsonl(tmp_path / "captured.jsonl", rows)
    with pytest.raises(ScenarioError, match="increasing offset order"):
        read_record_files([path], ("left", "right"), {})  # timestamp_sync reads partitions in offset order
    as_listed = read_record_files([path], ("left", "right"), {}, offsets_matter=False)
    assert [r.value for r in as_listed] == [1, 2]


def test_bad_file_exits_2(files, tmp_path, capsys):
    _, topo, _, _ = files
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    assert main(["replay", topo, "-i", str(bad), "-o", str(tmp_path / "o.jsonl")]) == 2
    assert "bad.jsonl: line 1: not valid JSON" in capsys.readouterr().err


def test_a_folder_is_its_data_files_in_name_order(tmp_path):
    folder = tmp_path / "captured.parquet"  # as Spark writes it
    folder.mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    for n, value in ((1, "second"), (0, "first")):
        pq.write_table(pa.Table.from_pylist([{"topic": "left", "ts": n, "key": '"k"', "value": json.dumps(value)}]),
                       folder / f"part-0000{n}.parquet")
    (folder / "_SUCCESS").write_text("")
    recs = read_record_files([str(folder)], ("left", "right"), {})
    assert [(r.index, r.value) for r in recs] == [(0, "first"), (1, "second")]
