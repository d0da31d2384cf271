"""``kssim timeline``: the elements the timeline model holds for known scenarios, the pictures the
command writes, its refusals (exit 2, nothing written), and every file of ``scenarios/`` drawn."""
from __future__ import annotations

import os

import pytest

from kssim_testing import ROOT
from kssim.reference.model.codes import DropReason
from kssim.reference.model.scenario import find_scenario_files, load_scenario
from kssim.tools.cli import main
from kssim.tools.timeline.draw import _thin, figure, render
from kssim.tools.timeline.model import IntervalKind, LaneKind, MarkKind, build_timeline, task_stream_times

SHARED = os.path.join(os.path.dirname(ROOT), "shared", "conformance")
SEED_LEFT = os.path.join(SHARED, "seeds", "seed-stream-stream-left-3.1.json")
HOPPING = os.path.join(ROOT, "scenarios", "features", "window-emit-final-hopping-windows-kept-3.3.json")
TWO_TASKS = os.path.join(ROOT, "scenarios", "cookbook", "02-outer-join-never-emits-two-partitions-3.9.yaml")
SESSIONS = os.path.join(ROOT, "scenarios", "cookbook", "07-session-merge-tombstones-3.9.yaml")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def timeline_of(path):
    return build_timeline(load_scenario(path))


# --- the model --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def seed_left():
    return timeline_of(SEED_LEFT)


def test_seed_lanes_are_the_input_topics_then_the_output(seed_left):
    assert [(lane.kind, lane.label) for lane in seed_left.lanes] == [
        (LaneKind.INPUT, "left"), (LaneKind.INPUT, "right"), (LaneKind.OUTPUT, "output")]
    assert len(seed_left.inputs) == 19 and len(seed_left.outputs) == 18
    topics = [r.topic for r in load_scenario(SEED_LEFT).inputs]
    assert [seed_left.lanes[m.lane].topic for m in seed_left.inputs] == topics
    assert [m.ts for m in seed_left.inputs][-4:] == [40, 60, 80, 100]


def test_seed_output_16_links_to_input_17_and_the_record_it_padded(seed_left):
    link = seed_left.links[16]
    assert (link.output, link.input_index, link.joined) == (16, 17, (15,))
    out = seed_left.outputs[16]
    assert (out.ts, out.value, out.label) == (40, ["E", None], "k:E,null")


def test_seed_drops_carry_their_reason(seed_left):
    first = seed_left.drops[0]
    assert (first.input_index, first.reason) == (0, DropReason.NULL_VALUE)
    assert "null value on the left" in first.text
    assert [d.input_index for d in seed_left.drops] == [0, 1, 6, 7, 10, 11, 12]
    assert seed_left.inputs[0].kind is MarkKind.NULL_VALUE and seed_left.inputs[2].kind is MarkKind.VALUE


def test_seed_join_windows_and_grace(seed_left):
    by_input = {iv.input_index: iv for iv in seed_left.intervals}
    assert all(iv.kind is IntervalKind.JOIN_WINDOW for iv in seed_left.intervals)
    e, f = by_input[15], by_input[17]  # left E@40, right f@80; window 15 each way, grace 5
    assert (e.start, e.end, e.close) == (25, 55, 60)
    assert (f.start, f.end, f.close) == (65, 95, 100)
    assert not {0, 1, 6, 7, 10, 11, 12} & set(by_input)  # null values never reach a window store


def test_seed_stream_time_steps(seed_left):
    steps = seed_left.steps
    assert [s.input_index for s in steps] == list(range(19))  # as_listed: list order
    assert [s.stream_time for s in steps] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 40, 60, 80, 100]
    assert {s.task for s in steps} == {0}
    # output 16 (E-null) was emitted when stream time 80 had passed E's close at 60
    assert steps[17].stream_time > seed_left.intervals[[iv.input_index for iv in seed_left.intervals].index(15)].close


def test_hopping_window_aggregation_windows_and_close_points():
    tl = timeline_of(HOPPING)  # size 10, advance 5, grace 3; records at 3, 7, 12, 25, 40
    windows = [(iv.kind, iv.start, iv.end, iv.close) for iv in tl.intervals]
    expected = [(0, 10), (5, 15), (10, 20), (20, 30), (25, 35), (35, 45), (40, 50)]
    assert windows == [(IntervalKind.TIME_WINDOW, s, e, e + 3) for s, e in expected]
    assert all(iv.input_index is None and iv.key == "k" for iv in tl.intervals)


def test_windows_the_store_expired_before_their_close_are_marked_never_emitted():
    # 3.9's emit-final store hides hopping windows a stream-time jump carries past size + grace:
    # the run's unemitted_window drops name them, and the picture marks exactly those
    lost = timeline_of(os.path.join(ROOT, "scenarios", "features", "window-emit-final-hopping-windows-lost-3.9.json"))
    assert [(iv.start, iv.end) for iv in lost.intervals if iv.lost] == [(0, 10), (5, 15), (10, 20), (20, 30), (25, 35)]
    assert [(iv.start, iv.end) for iv in lost.intervals if not iv.lost] == [(35, 45), (40, 50)]  # still open
    assert not any(iv.lost for iv in timeline_of(HOPPING).intervals)  # 3.3 emits them all


def test_sessions_never_emitted_are_drawn_although_no_output_names_them():
    t = timeline_of(os.path.join(ROOT, "scenarios", "features", "session-emit-final-in-memory-loses-sessions-3.9.json"))
    assert not t.outputs
    assert [(iv.kind, iv.start, iv.end, iv.lost) for iv in t.intervals] == [
        (IntervalKind.SESSION_WINDOW, 0, 5, True), (IntervalKind.SESSION_WINDOW, 12, 20, True)]


def test_sessions_come_from_the_outputs_and_merged_ones_are_superseded():
    tl = timeline_of(SESSIONS)  # gap 5, grace 20: a session closes at end + gap + grace (3.0+)
    sessions = [(iv.start, iv.end, iv.close, iv.superseded) for iv in tl.intervals]
    assert sessions == [(1, 1, 26, True), (1, 10, 35, False), (10, 10, 35, True)]
    assert {iv.kind for iv in tl.intervals} == {IntervalKind.SESSION_WINDOW}


def test_two_partitions_one_stream_time_line_per_task():
    tl = timeline_of(TWO_TASKS)
    assert tl.tasks == 2
    assert [lane.label for lane in tl.lanes] == ["left[0]", "left[1]", "right[0]", "right[1]", "output[0]", "output[1]"]
    assert [s.stream_time for s in tl.steps_of(0)] == [1]  # task 0 never sees another record
    assert [s.stream_time for s in tl.steps_of(1)] == [5, 7, 20, 100]
    a = next(iv for iv in tl.intervals if iv.input_index == 0)
    assert a.close == 11 and max(s.stream_time for s in tl.steps_of(0)) < a.close  # why A-null never comes


def test_stream_time_never_goes_back_and_global_records_have_none():
    from kssim.reference.model.scenario import scenario_from_dict

    doc = {"format": "kssim-scenario/1", "name": "late", "semantics": "3.9",
           "topology": {"operator": "stream_stream_join", "join": "inner", "window_api": "time_difference",
                        "window": {"before_ms": 5, "after_ms": 5, "grace_ms": 0}},
           "inputs": [{"topic": "left", "key": "k", "value": "A", "ts": 10},
                      {"topic": "right", "key": "k", "value": "a", "ts": 4},
                      {"topic": "left", "key": "k", "value": "B", "ts": 12}]}
    scenario = scenario_from_dict(doc)
    assert [s.stream_time for s in task_stream_times(scenario, (0, 1, 2))] == [10, 10, 12]
    bootstrap = timeline_of(os.path.join(ROOT, "scenarios", "features", "global-table-left-bootstrap-3.9.yaml"))
    table = [s for s in bootstrap.steps if s.task is None]
    assert table and all(bootstrap.inputs[s.input_index].lane == 1 and s.stream_time is None for s in table)
    assert [s.step for s in table] == [0, 1, 2]  # the global table is restored first


def test_a_failing_run_stops_at_the_failing_input():
    tl = timeline_of(os.path.join(ROOT, "scenarios", "features", "session-sum-null-value-fails-3.9.json"))
    assert tl.failure is not None and tl.failure.input_index == 1
    assert "NullPointerException" in tl.failure.message
    assert tl.steps[-1].input_index == 1


def test_grace_buffer_of_a_stream_table_join():
    tl = timeline_of(os.path.join(ROOT, "scenarios", "features", "stream-table-left-grace-null-key-dropped-3.6.yaml"))
    assert [(iv.kind, iv.input_index, iv.start, iv.close) for iv in tl.intervals] == [
        (IntervalKind.GRACE_BUFFER, 1, 10, 15), (IntervalKind.GRACE_BUFFER, 3, 20, 25)]
    assert [(d.input_index, d.reason) for d in tl.drops] == [(2, DropReason.NULL_KEY)]


def test_labels_are_thinned_where_they_would_overlap():
    crowded = [(float(x), "k:value") for x in range(100)]  # one ms apart
    assert 0 < len(_thin(crowded, per_ms=0.01)) < 10  # 0.01 inch per ms: a label spans ~40 ms
    assert len(_thin(crowded, per_ms=1.0)) == 100  # an inch per ms: all fit
    assert {tier for _, tier in _thin(crowded, per_ms=0.1)} == {0, 1}


# --- the command ------------------------------------------------------------------------------------

def run(capsys, *argv):
    code = main(["timeline", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_writes_png_svg_and_html(tmp_path, capsys):
    png, svg, page = tmp_path / "t.png", tmp_path / "t.svg", tmp_path / "t.html"
    for path in (png, svg, page):
        code, out, err = run(capsys, SEED_LEFT, "-o", path)
        assert (code, err) == (0, "") and str(path) in out
    assert png.read_bytes().startswith(PNG_SIGNATURE)
    text = svg.read_text(encoding="utf-8")
    assert "<svg" in text and "seed-stream-stream-left-3.1" in text
    for label in ("k:E", "k:G", "k:E,null", "null_value", "stream time", "join window"):
        assert label in text, label
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "<svg" in html and "<?xml" not in html
    assert "<td>null_value: null value on the left" in html
    assert html.count("<tr>") == 1 + 19 + 1 + 18  # two tables: header rows, inputs, outputs
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".kssim-partial")]


def test_default_output_is_in_the_current_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, TWO_TASKS)
    written = tmp_path / "02-outer-join-never-emits-two-partitions-3.9.timeline.png"
    assert code == 0 and written.read_bytes().startswith(PNG_SIGNATURE)


def test_release_override(tmp_path, capsys):
    svg = tmp_path / "t.svg"
    path = os.path.join(ROOT, "scenarios", "cookbook", "01-eager-left-null-3.0.yaml")
    code, _, _ = run(capsys, path, "--release", "3.1", "-o", svg)
    assert code == 0 and "Kafka 3.1" in svg.read_text(encoding="utf-8")
    assert load_scenario(path, "3.1").release == "3.1" and load_scenario(path).release == "3.0"


@pytest.mark.parametrize("case", ["extension", "input", "folder", "invalid", "directory", "release"])
def test_bad_input_exits_2_without_traceback_and_writes_nothing(tmp_path, capsys, case):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "kssim-scenario/1", "name": "x"}', encoding="utf-8")
    existing = tmp_path / "old.png"
    existing.write_bytes(b"old picture")
    argv, message = {
        "extension": ((SEED_LEFT, "-o", tmp_path / "t.pdf"), "unknown extension"),
        "input": ((bad, "-o", bad), "refusing to overwrite the scenario"),
        "folder": ((SEED_LEFT, "-o", tmp_path / "missing" / "t.png"), "does not exist"),
        "invalid": ((bad, "-o", existing), "topology"),
        "directory": ((tmp_path, "-o", existing), "is a folder"),
        "release": ((SEED_LEFT, "--release", "9.9", "-o", existing), "semantics"),
    }[case]
    code, out, err = run(capsys, *argv)
    assert code == 2 and message in err and "Traceback" not in err and out == ""
    assert existing.read_bytes() == b"old picture"  # untouched: replaced only by a complete picture
    assert sorted(os.listdir(tmp_path)) == ["bad.json", "old.png"]


# --- every scenario -----------------------------------------------------------------------------------

SCENARIO_FILES = find_scenario_files([os.path.join(ROOT, "scenarios")])


def test_every_file_of_scenarios_is_drawn():
    """Every scenario of ``scenarios/`` (found as ``kssim check`` finds them: capture files are not
    scenarios) gets a model and a figure with all its artists. Rasterising all 160 takes ~75 s,
    text layout mostly; one file per folder and operator is rasterised to a low-resolution PNG."""
    import matplotlib.pyplot as plt

    assert len(SCENARIO_FILES) > 100
    sampled = {}
    for path in SCENARIO_FILES:
        scenario = load_scenario(path)
        timeline = build_timeline(scenario)
        assert len(timeline.inputs) == len(scenario.inputs)
        plt.close(figure(timeline))
        sampled.setdefault((os.path.dirname(path), scenario.topology.operator), timeline)
    assert len(sampled) >= 15
    for timeline in sampled.values():
        assert render(timeline, "png", dpi=20).startswith(PNG_SIGNATURE)


def test_two_hundred_records_render(tmp_path):
    from kssim.reference.model.scenario import scenario_from_dict

    inputs = [{"topic": "left" if i % 3 else "right", "partition": i % 2, "key": f"k{i % 7}",
               "value": None if i % 17 == 0 else f"v{i}", "ts": 5 * i + 50 - (40 if i % 11 == 0 else 0)}
              for i in range(200)]
    doc = {"format": "kssim-scenario/1", "name": "two-hundred", "semantics": "3.9",
           "topology": {"operator": "stream_stream_join", "join": "outer", "window_api": "time_difference",
                        "window": {"before_ms": 20, "after_ms": 20, "grace_ms": 10}},
           "config": {"order": "timestamp_sync", "partitions": {"left": 2, "right": 2}}, "inputs": inputs}
    timeline = build_timeline(scenario_from_dict(doc))
    assert len(timeline.steps) == 200 and len(timeline.links) == len(timeline.outputs) > 100
    svg = render(timeline, "svg").decode("utf-8")
    # labels thinned: far fewer record labels than records
    assert 20 < sum(svg.count(f"<!-- {m.label} -->") for m in timeline.inputs) < 200


def _window_timeline(semantics, inputs, size=10, advance=5, grace=0):
    from kssim.reference.model.scenario import scenario_from_dict

    return build_timeline(scenario_from_dict({
        "format": "kssim-scenario/1", "name": "windows", "semantics": semantics,
        "topology": {"operator": "window_aggregate", "size_ms": size, "advance_ms": advance, "grace_ms": grace,
                     "aggregation": "count"},
        "inputs": [{"topic": "input", "key": k, "value": "v", "ts": ts} for k, ts in inputs]}))


def test_windows_of_keys_that_print_alike_stay_apart():
    # "1" and 1 are different keys (different serialized bytes): each has its own windows
    tl = _window_timeline("3.9", [("1", 12), (1, 12)])
    assert sorted((repr(iv.key), iv.start) for iv in tl.intervals) == [("'1'", 5), ("'1'", 10), ("1", 5), ("1", 10)]


def test_windows_follow_the_release_s_windows_for():
    # 0.10.0's windowsFor starts one advance early when the size is no multiple of it (KAFKA-3784)
    assert [iv.start for iv in _window_timeline("0.10.2", [("k", 12)], size=7, advance=5, grace=None).intervals] == [10]
    assert [iv.start for iv in _window_timeline("0.10.0", [("k", 12)], size=7, advance=5, grace=None).intervals] == [5, 10]
