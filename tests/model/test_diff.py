"""The streaming comparison of ``kssim diff`` (``reference.model.diff``): each divergence class on a
hand-made case, the bounded lookahead and buffer, the per-key mode, and how captured records are located."""
import json

from kssim.reference.model.captures import open_captures
from kssim.reference.model.diff import (CapturedAt, CapturedRecord, CompareMode, Divergence, ExactDiff, LatestDiff,
                                  captured_records, report_json, report_text)


def rec(key, value, ts, partition=0):
    return (partition, key, value, ts)


def captured(records):
    return [CapturedRecord(p, k, v, ts, CapturedAt("cap.jsonl", f"line {n + 1}")) for n, (p, k, v, ts) in
            enumerate(records)]


def exact(kssim, capture, **bounds):
    diff = ExactDiff(captured(capture), **bounds)
    for n, (p, k, v, ts) in enumerate(kssim):
        diff.add_expected(p, k, v, ts, input_index=100 + n)
    return diff.finish()


def counts(result):
    found = {kind.value: n for kind, n in result.counts.items() if n}
    return {"matched": result.matched, **found}


def check_totals(result):
    classes = result.counts
    both = result.matched + classes[Divergence.VALUE] + classes[Divergence.TIMESTAMP] + classes[Divergence.ORDER]
    assert result.expected_total == both + classes[Divergence.MISSING]
    assert result.captured_total == both + classes[Divergence.EXTRA]


A, B, C, D = rec("a", 1, 10), rec("b", 2, 20), rec("c", 3, 30), rec("d", 4, 40)


def test_the_same_records_match():
    result = exact([A, B, C], [A, B, C])
    assert counts(result) == {"matched": 3} and result.first is None and not result.diverged


def test_a_record_the_capture_lacks_is_missing():
    result = exact([A, B, C], [A, C])
    assert counts(result) == {"matched": 2, "missing": 1}
    first = result.first
    assert first.kind is Divergence.MISSING and first.captured is None
    assert (first.expected.key, first.expected.position, first.input_index) == ("b", 1, 101)
    # the neighbours on both sides, in position order, the divergent one marked
    assert [(r.key, mark) for r, mark in first.expected_context] == [("a", False), ("b", True), ("c", False)]
    assert [r.key for r, _ in first.captured_context] == ["a", "c"]
    check_totals(result)


def test_a_record_kssim_does_not_predict_is_extra():
    result = exact([A, C], [A, B, C])
    assert counts(result) == {"matched": 2, "extra": 1}
    first = result.first
    assert first.kind is Divergence.EXTRA and first.expected is None and first.captured.key == "b"
    assert first.captured.source.where == "line 2"
    # no kssim record here: the input behind kssim's previous record in the partition
    assert first.input_index == 100
    check_totals(result)


def test_the_first_divergences_are_listed_in_the_order_found():
    diff = ExactDiff(captured([A, rec("b", 9, 20), C]), listed=1)
    for n, (p, k, v, ts) in enumerate([A, B, C, D]):
        diff.add_expected(p, k, v, ts, n)
    result = diff.finish()
    assert counts(result) == {"matched": 2, "value": 1, "missing": 1}
    [(kind, partition, e, c)] = result.listed
    assert (kind, partition, e.key, c.value) == (Divergence.VALUE, 0, "b", 9)


def test_the_same_key_with_another_value_is_value():
    result = exact([A, B, C], [A, rec("b", 99, 20), C])
    assert counts(result) == {"matched": 2, "value": 1}
    assert (result.first.expected.value, result.first.captured.value) == (2, 99)


def test_the_same_key_and_value_at_another_time_is_timestamp():
    result = exact([A, B, C], [A, rec("b", 2, 21), C])
    assert counts(result) == {"matched": 2, "timestamp": 1}
    assert result.first.kind is Divergence.TIMESTAMP


def test_swapped_records_are_order():
    result = exact([A, B, C], [B, A, C])
    assert counts(result) == {"matched": 2, "order": 1}
    check_totals(result)


def test_one_record_moved_far_is_one_order_divergence():
    assert counts(exact([D, A, B, C], [A, B, C, D])) == {"matched": 3, "order": 1}
    assert counts(exact([A, B, C, D], [D, A, B, C])) == {"matched": 3, "order": 1}


def test_a_repeated_key_without_its_middle_update_is_missing_not_value():
    # an aggregation's updates of one key: the capture lacks the middle one
    result = exact([rec("k", 1, 1), rec("k", 2, 2), rec("k", 3, 3)], [rec("k", 1, 1), rec("k", 3, 3)])
    assert counts(result) == {"matched": 2, "missing": 1} and result.first.expected.value == 2


def test_partitions_are_compared_separately():
    kssim = [rec("a", 1, 1, 0), rec("b", 1, 1, 1), rec("c", 1, 2, 0), rec("d", 1, 2, 1)]
    capture = [rec("b", 1, 1, 1), rec("d", 1, 2, 1), rec("a", 1, 1, 0), rec("c", 1, 2, 0)]
    assert counts(exact(kssim, capture)) == {"matched": 4}
    # the same record in another partition is missing from one and extra in the other
    moved = exact(kssim, [rec("a", 1, 1, 1) if r == rec("a", 1, 1, 0) else r for r in capture])
    assert counts(moved) == {"matched": 3, "missing": 1, "extra": 1}


def test_keys_compare_by_bytes_and_values_as_json():
    assert counts(exact([rec({"x": 1, "y": 2}, {"p": 1, "q": [1, 2]}, 5)],
                        [rec({"x": 1, "y": 2}, {"q": [1, 2], "p": 1}, 5)])) == {"matched": 1}
    # a long key 1 and a string key "1" are different keys; so are reordered object keys
    assert counts(exact([rec(1, "v", 5)], [rec("1", "v", 5)])) == {"matched": 0, "missing": 1, "extra": 1}
    assert counts(exact([rec({"x": 1, "y": 2}, "v", 5)], [rec({"y": 2, "x": 1}, "v", 5)])) == \
        {"matched": 0, "missing": 1, "extra": 1}
    # 1 and 1.0 are different values
    assert counts(exact([rec("k", 1, 5)], [rec("k", 1.0, 5)])) == {"matched": 0, "value": 1}


def test_past_the_lookahead_a_moved_record_is_missing_and_extra():
    kssim = [D, A, B, C, rec("e", 5, 50)]
    capture = [A, B, C, rec("e", 5, 50), D]
    assert counts(exact(kssim, capture, lookahead=10)) == {"matched": 4, "order": 1}
    result = exact(kssim, capture, lookahead=2, buffer=6)
    assert counts(result) == {"matched": 4, "missing": 1, "extra": 1}
    check_totals(result)


def test_memory_stays_within_the_buffer_whatever_the_input_size():
    # the capture lists partition 1 after partition 0 (not interleaved): past the buffer the
    # comparison settles what it holds; the counts stay consistent
    n = 3000
    kssim = [rec(f"k{i}", i, i, i % 2) for i in range(n)]
    capture = [r for r in kssim if r[0] == 0] + [r for r in kssim if r[0] == 1]
    diff = ExactDiff(captured(capture), lookahead=20, buffer=200)
    peak = 0
    for p, k, v, ts in kssim:
        diff.add_expected(p, k, v, ts, 0)
        peak = max(peak, diff.held)
    result = diff.finish()
    assert peak <= 200
    check_totals(result)
    assert result.expected_total == result.captured_total == n
    # interleaved as consumed, the same records all match within a small buffer
    assert counts(exact(kssim, kssim, lookahead=20, buffer=200)) == {"matched": n}


def test_latest_value_per_key_compares_final_values():
    def latest(kssim, capture):
        diff = LatestDiff(captured(capture))
        for n, (p, k, v, ts) in enumerate(kssim):
            diff.add_expected(p, k, v, ts, n)
        return diff.finish()

    kssim = [rec("k", 1, 1), rec("j", 1, 2), rec("k", 2, 3), rec("gone", 1, 4), rec("gone", None, 5)]
    # record caching dropped the intermediate k:1 and the deleted key never reached the topic
    same = latest(kssim, [rec("j", 1, 2), rec("k", 2, 3)])
    assert same.mode is CompareMode.LATEST_VALUE_PER_KEY and counts(same) == {"matched": 3}
    differs = latest(kssim, [rec("k", 3, 3), rec("j", 1, 7), rec("x", 1, 9)])
    assert counts(differs) == {"matched": 1, "value": 1, "timestamp": 1, "extra": 1}
    # the first: the key whose final record kssim emits first (j, then k)
    assert (differs.first.kind, differs.first.expected.key) == (Divergence.TIMESTAMP, "j")
    assert counts(latest(kssim, [rec("j", 1, 2)])) == {"matched": 2, "missing": 1}


def test_the_report_names_class_place_records_input_and_counts():
    result = exact([A, B, C], [A, rec("b", 99, 20), C])
    text = "\n".join(report_text(result, "HEADER", "input 101 (left[0] b:x@20)", ["why: because"]))
    assert "first divergence: value in partition 0, kssim record #1, captured record #1" in text
    assert "kssim predicts: key=b value=2 ts=20 (emitted while processing input 101)" in text
    assert "captured:       key=b value=99 ts=20 (cap.jsonl line 2)" in text
    assert "input that should have produced it: input 101 (left[0] b:x@20)" in text and "why: because" in text
    assert text.endswith("counts: 2 records matched, 0 missing, 0 extra, 1 value, 0 timestamp, 0 order "
                         "(kssim 3 records, capture 3)")
    obj = report_json(result)
    assert obj["match"] is False and obj["counts"]["value"] == 1
    assert obj["first"]["captured"] == {"partition": 0, "position": 1, "key": "b", "value": 99, "ts": 20,
                                        "file": "cap.jsonl", "where": "line 2", "offset": None}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_captured_records_are_located_by_file_and_record(tmp_path):
    first = write(tmp_path / "part-0.jsonl", [{"topic": "output", "partition": 1, "offset": 7, "ts": 5, "key": "k",
                                               "value": {"a": 1}}])
    second = write(tmp_path / "part-1.jsonl", [
        {"topic": "left", "ts": 1, "key": "k", "value": 1},  # an input topic's record: skipped
        {"topic": "output", "partition": 0, "ts": 6, "key": None, "value": "v"}])
    found = list(captured_records(open_captures([first, second], reading="output")))
    assert [(r.partition, r.key, r.value, r.ts, r.source.path, r.source.where) for r in found] == [
        (1, "k", {"a": 1}, 5, first, "record 1"), (0, None, "v", 6, second, "record 2")]
