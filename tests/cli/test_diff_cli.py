"""``kssim diff``: replay captured inputs and compare kssim's prediction with a captured output
topic. An outer stream-stream join captured in production at Kafka 3.6 and diffed at 3.6 (a
match) and 3.9 (KIP-962: 3.7+ emits a null-key left record at once with null, 3.6 drops it)."""
import json

import pytest

from kssim_testing import ROOT
from kssim.tools.cli import main

TOPOLOGY = """format: kssim-scenario/1
name: orders-payments
semantics: "{release}"
topology:
  operator: stream_stream_join
  join: outer
  window_api: time_difference
  window: {{before_ms: 10, after_ms: 10, grace_ms: 0}}
  joiner: concat
  joiner_separator: "+"
"""
ORDERS = [(1000, "o1", "order1"), (1005, None, "order-without-customer"), (1010, "o2", "order2"),
          (1040, "o3", "order3"), (1100, "o4", "order4")]
PAYMENTS = [(1003, "o1", "pay1"), (1045, "o3", "pay3"), (1090, "o9", "pay9")]
#: what the topic held at 3.6 (by hand: o1 joins at pay1; order2 is flushed unjoined when
#: order3@1040 passes 1010 + 10 + 0; o3 joins at pay3; the null-key order is dropped)
CAPTURED_AT_3_6 = [(1003, "o1", "order1+pay1"), (1010, "o2", "order2+null"), (1045, "o3", "order3+pay3")]


def kcat_lines(topic, rows, partition=0):
    return [json.dumps({"topic": topic, "partition": partition, "offset": n, "tstype": "create", "ts": ts,
                        "broker": 1, "headers": [], "key": key, "payload": value}) for n, (ts, key, value) in
            enumerate(rows)]


def record_lines(topic, rows):
    return [json.dumps({"topic": topic, "offset": n, "ts": ts, "key": key, "value": value})
            for n, (ts, key, value) in enumerate(rows)]


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


@pytest.fixture
def case(tmp_path):
    """Topology files at 3.6 and 3.9, the inputs as record files, the 3.6 capture of the output."""
    files = {release: str(tmp_path / f"topology-{release}.yaml") for release in ("3.6", "3.9")}
    for release, path in files.items():
        with open(path, "w") as handle:
            handle.write(TOPOLOGY.format(release=release))
    files["left"] = write(tmp_path / "orders.jsonl", record_lines("left", ORDERS))
    files["right"] = write(tmp_path / "payments.jsonl", record_lines("right", PAYMENTS))
    files["captured"] = write(tmp_path / "output.jsonl", record_lines("output", CAPTURED_AT_3_6))
    files["tmp"] = tmp_path
    return files


def diff(capsys, case, release, captured=None, *options):
    code = main(["diff", case[release], "-i", case["left"], "-i", case["right"], "-e", captured or case["captured"],
                 *options])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_capture_that_is_what_kafka_streams_produces_matches(case, capsys):
    code, out, err = diff(capsys, case, "3.6")
    assert code == 0 and err == ""
    assert "no divergence" in out
    assert "counts: 3 records matched, 0 missing, 0 extra, 0 value, 0 timestamp, 0 order (kssim 3 records, capture 3)" \
        in out


def test_the_first_divergence_is_classified_located_and_explained(case, capsys):
    code, out, _ = diff(capsys, case, "3.9")
    assert code == 1
    lines = out.splitlines()
    assert lines[1] == "first divergence: missing in partition 0, kssim record #1"
    assert "kssim predicts: key=null value=order-without-customer+null ts=1005 (emitted while processing input 1)" \
        in out
    assert "captured:       (nothing: the capture lacks it)" in out
    assert "input that should have produced it: input 1 (left[0] null:order-without-customer@1005)" in out
    # the reference engine's why for that record names the rule
    assert any(line.strip().startswith("#1 null:order-without-customer+null@1005 while processing input 1:")
               and "KIP-962" in line for line in lines)
    assert lines[-3:] == [
        "divergences (1 of 1, in the order found):",
        "  missing   partition 0, kssim #1: key=null value=order-without-customer+null ts=1005 (input 1)",
        "counts: 3 records matched, 1 missing, 0 extra, 0 value, 0 timestamp, 0 order (kssim 4 records, capture 3)"]


@pytest.mark.parametrize("change, kind, where", [
    (lambda rows: [rows[0], (1010, "o2", "order2+pay2"), rows[2]], "value", "kssim record #1, captured record #1"),
    (lambda rows: [rows[0], (1011, "o2", "order2+null"), rows[2]], "timestamp", "kssim record #1, captured record #1"),
    (lambda rows: [rows[1], rows[0], rows[2]], "order", "kssim record #0, captured record #1"),
    (lambda rows: rows[:2] + [(1044, "o7", "order7+null")] + rows[2:], "extra", "captured record #2"),
])
def test_each_class_names_the_records_and_the_input(case, capsys, change, kind, where):
    captured = write(case["tmp"] / f"{kind}.jsonl", record_lines("output", change(CAPTURED_AT_3_6)))
    code, out, _ = diff(capsys, case, "3.6", captured)
    assert code == 1
    assert f"first divergence: {kind} in partition 0, {where}" in out
    assert "input that should have produced it: input " in out
    assert f"1 {kind}" in out.splitlines()[-1]


def test_a_kcat_capture_with_topic_names_diffs_as_the_record_files(case, capsys):
    tmp = case["tmp"]
    inputs = write(tmp / "inputs.kcat", kcat_lines("orders", ORDERS) + kcat_lines("payments", PAYMENTS))
    output = write(tmp / "enriched.kcat", kcat_lines("enriched", CAPTURED_AT_3_6))
    mapping = ["--topic", "left=orders", "--topic", "right=payments", "--topic", "output=enriched"]
    assert main(["diff", case["3.6"], "-i", inputs, "-e", output, *mapping]) == 0
    assert "no divergence" in capsys.readouterr().out
    # one capture of every topic serves as inputs and as the output (each reading skips the other side)
    everything = write(tmp / "all.kcat", kcat_lines("orders", ORDERS) + kcat_lines("payments", PAYMENTS)
                       + kcat_lines("enriched", CAPTURED_AT_3_6))
    assert main(["diff", case["3.9"], "-i", everything, "-e", everything, *mapping]) == 1
    assert "first divergence: missing in partition 0, kssim record #1" in capsys.readouterr().out


def test_latest_value_per_key_compares_final_values_and_says_why(case, capsys):
    # record caching would have kept only each key's last update: the order within the topic is lost
    shuffled = write(case["tmp"] / "cached.jsonl", record_lines("output", CAPTURED_AT_3_6[::-1]))
    code, out, _ = diff(capsys, case, "3.6", shuffled, "--compare", "latest_value_per_key")
    assert code == 0
    assert "kssim does not model record caching" in out
    assert "counts: 3 keys matched" in out
    code, out, _ = diff(capsys, case, "3.6", shuffled, "--compare", "exact")
    assert code == 1 and "first divergence: order" in out
    changed = write(case["tmp"] / "changed.jsonl", record_lines("output", CAPTURED_AT_3_6[:2] + [
        (1045, "o3", "order3+pay3b")]))
    code, out, _ = diff(capsys, case, "3.6", changed, "--compare", "latest_value_per_key")
    assert code == 1 and "first divergence: value in partition 0" in out and "input 6 (right[0] o3:pay3@1045)" in out


def test_json_report(case, capsys):
    code, out, _ = diff(capsys, case, "3.9", None, "--format", "json", "--no-explain")
    report = json.loads(out)
    assert code == 1 and report["match"] is False and report["compare"] == "exact"
    assert report["counts"] == {"matched": 3, "missing": 1, "extra": 0, "value": 0, "timestamp": 0, "order": 0}
    assert report["first"]["class"] == "missing" and report["first"]["input"] == 1
    assert report["first"]["kssim"] == {"partition": 0, "position": 1, "key": None,
                                        "value": "order-without-customer+null", "ts": 1005, "input": 1}


@pytest.mark.parametrize("line, where", [
    ('{"topic":"output","offset":1,"ts":1010,"key":"o2","value":"order2+null","inputs":3}', "line 2, field inputs"),
    ('{"topic":"output","offset":1,"ts":"late","key":"o2","value":"order2+null"}', "line 2, field ts"),
    ('{"topic":"output","offset":1,"ts":1010,"key":"o2","value":"order2+null"', "line 2"),
])
def test_a_bad_capture_exits_2_naming_file_line_and_field(case, capsys, line, where):
    good = record_lines("output", CAPTURED_AT_3_6)
    bad = write(case["tmp"] / "bad.jsonl", [good[0], line, good[2]])
    code, out, err = diff(capsys, case, "3.9", bad)
    assert code == 2 and "Traceback" not in err
    assert f"{bad}: {where}" in err


def test_missing_files_exit_2_before_any_work(case, capsys):
    code, _, err = diff(capsys, case, "3.9", str(case["tmp"] / "nope.jsonl"))
    assert code == 2 and "nope.jsonl" in err


def test_the_prediction_is_written_only_when_asked_and_never_over_a_capture(case, capsys):
    before = open(case["captured"]).read()
    code, _, err = diff(capsys, case, "3.9", None, "--output", case["captured"])
    assert code == 2 and "refusing to overwrite a capture" in err
    assert open(case["captured"]).read() == before
    predicted = case["tmp"] / "predicted.jsonl"
    code, _, _ = diff(capsys, case, "3.9", None, "--output", str(predicted), "--no-explain")
    assert code == 1
    rows = [json.loads(line) for line in predicted.read_text().splitlines()]
    assert [(r["key"], r["value"], r["input"]) for r in rows] == [
        ("o1", "order1+pay1", 5), (None, "order-without-customer+null", 1), ("o2", "order2+null", 3),
        ("o3", "order3+pay3", 6)]
    assert sorted(p.name for p in case["tmp"].iterdir()) == [
        "orders.jsonl", "output.jsonl", "payments.jsonl", "predicted.jsonl", "topology-3.6.yaml", "topology-3.9.yaml"]


def test_spark_gives_the_reference_s_report(case, capsys, spark):
    reports = {}
    for engine in ("reference", "spark"):
        for release in ("3.6", "3.9"):
            code, out, _ = diff(capsys, case, release, None, "--engine", engine)
            # the header names the engine; the explanation says who explains
            lines = [line for line in out.splitlines()[1:] if not line.strip().startswith("why (")]
            reports[engine, release] = (code, lines)
    assert reports["reference", "3.6"] == reports["spark", "3.6"] and reports["spark", "3.6"][0] == 0
    assert reports["reference", "3.9"] == reports["spark", "3.9"] and reports["spark", "3.9"][0] == 1


def test_the_readme_cookbook_example_runs_as_written(capsys, monkeypatch):
    monkeypatch.chdir(f"{ROOT}/scenarios/cookbook/diff-outer-join-3.6-to-3.9")
    records = ["-i", "capture/orders.jsonl", "-i", "capture/payments.jsonl", "-e", "capture/orders-enriched.jsonl"]
    assert main(["diff", "orders-payments-3.6.yaml", *records]) == 0
    assert main(["diff", "orders-payments-3.9.yaml", *records]) == 1
    text = capsys.readouterr().out
    assert "no divergence" in text and "first divergence: missing in partition 0, kssim record #1" in text
    assert "counts: 3 records matched, 2 missing, 0 extra, 0 value, 0 timestamp, 0 order (kssim 5 records, capture 3)" \
        in text
    # the same capture made with kcat -C -J and with kafka-console-consumer, under production topic names
    names = ["--topic", "left=orders", "--topic", "right=payments", "--topic", "output=orders-enriched"]
    for suffix in ("kcat", "txt"):
        files = ["-i", f"capture/orders.{suffix}", "-i", f"capture/payments.{suffix}",
                 "-e", f"capture/orders-enriched.{suffix}"]
        assert main(["diff", "orders-payments-3.6.yaml", *files, *names, "--format", "json"]) == 0
        assert json.loads(capsys.readouterr().out)["counts"]["matched"] == 3
        assert main(["diff", "orders-payments-3.9.yaml", *files, *names, "--format", "json", "--no-explain"]) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["counts"] == {"matched": 3, "missing": 2, "extra": 0, "value": 0, "timestamp": 0, "order": 0}
        assert report["input_text"] == f"input 1 (left[0] null:order-without-id@1005), capture/orders.{suffix} record 2"


def test_where_kafka_streams_would_fail_the_report_says_so(tmp_path, capsys):
    # a stream-table left join with grace dies on a null-key stream record at 3.7+ (KIP-962)
    topology = f"{ROOT}/scenarios/features/stream-table-left-grace-null-key-fails-3.9.yaml"
    inputs = write(tmp_path / "in.jsonl", record_lines("right", [(1, "k", "a")])
                   + record_lines("left", [(10, "k", "A"), (11, None, "B"), (20, "k", "C")]))
    empty = write(tmp_path / "out.jsonl", [])
    assert main(["diff", topology, "-i", inputs, "-e", empty]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].startswith("note: Kafka Streams would fail while processing input 2: ")
    assert "no divergence" in out
    # a capture from a release that did not die has records kssim cannot predict past the failure
    lived = write(tmp_path / "lived.jsonl", record_lines("output", [(10, "k", "A-a"), (20, "k", "C-a")]))
    assert main(["diff", topology, "-i", inputs, "-e", lived, "--no-explain"]) == 1
    out = capsys.readouterr().out
    assert "note: Kafka Streams would fail while processing input 2" in out and "2 extra" in out


@pytest.mark.parametrize("engine", ["reference", "spark"])
def test_an_input_capture_given_as_expected_is_named_not_reported_missing(case, capsys, spark, engine):
    code, out, err = diff(capsys, case, "3.9", case["left"], "--engine", engine)
    assert code == 2 and out == ""
    assert f"--expected {case['left']}: holds no record of the output topic output, only records of left (" in err


def test_an_empty_expected_capture_is_a_valid_expectation_of_nothing(case, capsys):
    empty = write(case["tmp"] / "nothing.jsonl", [])
    code, out, _ = diff(capsys, case, "3.9", empty)
    assert code == 1 and "capture 0)" in out  # kssim predicts records the capture does not hold
