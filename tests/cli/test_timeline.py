"""``kssim timeline``: the elements the timeline model holds for known scenarios, the pictures the
command writes, its refusals (exit 2, nothing written), and every file of ``scenarios/`` drawn."""
from __future__ import annotations

import os
import re

import pytest

from kssim_testing import ROOT
from kssim.reference.model.codes import DropReason
from kssim.reference.model.scenario import find_scenario_files, load_scenario
from kssim.tools.cli import main
from kssim.tools.timeline.draw import figure, render
from kssim.tools.timeline.model import IntervalKind, LaneKind, MarkKind, build_timeline, cut_label, task_stream_times

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
    # closed once stream time > end + grace: the tick is at the first such stream time
    assert (e.start, e.end, e.close) == (25, 55, 61)
    assert (f.start, f.end, f.close) == (65, 95, 101)
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
    tl = timeline_of(SESSIONS)  # gap 5, grace 20: closed once stream time > end + gap + grace (3.0+)
    sessions = [(iv.start, iv.end, iv.close, iv.superseded) for iv in tl.intervals]
    assert sessions == [(1, 1, 27, True), (1, 10, 36, False), (10, 10, 36, True)]
    assert {iv.kind for iv in tl.intervals} == {IntervalKind.SESSION_WINDOW}


def test_two_partitions_one_stream_time_line_per_task():
    tl = timeline_of(TWO_TASKS)
    assert tl.tasks == 2
    assert [lane.label for lane in tl.lanes] == ["left[0]", "left[1]", "right[0]", "right[1]", "output[0]", "output[1]"]
    assert [s.stream_time for s in tl.steps_of(0)] == [1]  # task 0 never sees another record
    assert [s.stream_time for s in tl.steps_of(1)] == [5, 7, 20, 100]
    a = next(iv for iv in tl.intervals if iv.input_index == 0)
    # A-null needs task 0's stream time above 1 + 10 + 0: it stays at 1, below the close at 12
    assert a.close == 12 and max(s.stream_time for s in tl.steps_of(0)) < a.close


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


def test_labels_are_cut_between_tokens_never_inside_a_string_or_number():
    assert cut_label('{"name":"Alexander","age":42}', 12) == '{"name":\u2026'
    assert cut_label('{"amount":1234.5678}', 15) == '{"amount":\u2026'  # not {"amount":1234.…
    assert cut_label("order-1234-xyz", 9) == "order-\u2026"  # not order-12…
    assert cut_label("12345678901", 7) == "\u2026" and cut_label('"a long string"', 7) == "\u2026"
    assert cut_label("averyverylongword", 7) == "averyv\u2026"  # a bare word (no JSON value) is cut by character
    assert cut_label("A,a", 3) == "A,a"  # what fits is left whole


@pytest.mark.parametrize("value", [
    {"order": "ord-00017", "amount": 1234.5, "items": ["widget", "gadget"], "note": "a \"quoted\" text"},
    ["A", None, 12, -3.5e-7, "x,y"], "plain text with spaces", -1234567890123, {"nested": {"a": [1, 2, {"b": "c"}]}}])
def test_a_cut_label_is_whole_tokens_of_the_text(value):
    from kssim.reference.model.render import show

    text = show(value)
    for limit in range(2, len(text) + 2):
        cut = cut_label(text, limit)
        assert len(cut) <= limit
        if cut == text:
            continue
        head = cut[:-1]
        assert cut.endswith("\u2026") and text.startswith(head)
        if head:  # what is kept ends where a token ends: the next character starts a new token
            assert head.count('"') % 2 == 0, (limit, cut)  # no string left open
            rest = text[len(head):]
            assert not (head[-1].isdigit() and (rest[0].isdigit() or rest[0] in ".eE")), (limit, cut)


def test_join_windows_are_clamped_at_zero(seed_left):
    # KStreamKStreamJoin fetches from max(0, ts - before): A@3 with before 15 meets records from 0
    a = next(iv for iv in seed_left.intervals if iv.input_index == 2)
    assert (seed_left.inputs[2].ts, a.start, a.end) == (3, 0, 18)
    assert min(iv.start for iv in seed_left.intervals) == 0
    hopping = _window_timeline("3.9", [("k", 3)], size=10, advance=5)  # windowsFor: [0, 10) only, no [-5, 5)
    assert [(iv.start, iv.end) for iv in hopping.intervals] == [(0, 10)]


@pytest.mark.parametrize("semantics,window,joined", [("0.10.2", (30, 55), True), ("0.10.0", (45, 70), False)])
def test_a_right_record_s_window_is_the_one_its_lookup_uses(semantics, window, joined):
    # before 5, after 20: a right record looks back "after" ms since 0.10.1 (KAFKA-4153), so R@50
    # finds L@31 in 0.10.2; 0.10.0 gave it the left side's bounds, and it does not
    tl = build_timeline(_scenario(semantics, {"operator": "stream_stream_join", "join": "inner",
                                              "window": {"before_ms": 5, "after_ms": 20}},
                                  [{"topic": "left", "key": "k", "value": "L", "ts": 31},
                                   {"topic": "right", "key": "k", "value": "R", "ts": 50}]))
    right = next(iv for iv in tl.intervals if iv.input_index == 1)
    assert (right.start, right.end) == window
    assert (right.start <= 31 <= right.end) is joined and bool(tl.outputs) is joined


def test_a_join_window_whose_upper_bound_wraps_is_empty_and_closed_at_once():
    # B@Long.MAX-5 + after 10 wraps: Kafka's fetch is [ts - before, max(0, wrapped)] = [.., 0],
    # which finds nothing, and the record counts as closed: B-null comes out at once
    tl = timeline_of(os.path.join(ROOT, "scenarios", "features", "stream-stream-left-upper-bound-wraps-3.9.yaml"))
    b = next(iv for iv in tl.intervals if iv.input_index == 1)
    assert (b.end, b.close) == (0, 0) and b.start > 0
    assert [(o.value, link.input_index) for o, link in zip(tl.outputs, tl.links)][1] == ("B-null", 1)


def test_rows_name_their_record(seed_left):
    assert [s.label for s in seed_left.steps[:3]] == ["left k:null@1", "right k:null@2", "left k:A@3"]
    assert seed_left.steps[17].label == "right k:f@80"
    assert [s.label for s in timeline_of(TWO_TASKS).steps][:2] == ["left[0] k1:A@1", "left[1] k2:B@5"]


def test_inputs_of_lost_windows_are_aggregated_not_dropped(tmp_path, capsys):
    # 3.9 loses hopping windows a stream-time jump carries past size + grace (KAFKA-12960): the
    # inputs whose close check found them gone (D@25, E@40) were aggregated; the windows are lost
    path = os.path.join(ROOT, "scenarios", "features", "window-emit-final-hopping-windows-lost-3.9.json")
    tl = timeline_of(path)
    assert tl.drops == ()
    assert sorted({d.input_index for d in tl.lost_at}) == [3, 4]
    assert {d.reason for d in tl.lost_at} == {DropReason.UNEMITTED_WINDOW}
    assert sum(iv.lost for iv in tl.intervals) == 5
    page = tmp_path / "lost.html"
    assert run(capsys, path, "-o", page)[0] == 0
    html = page.read_text(encoding="utf-8")
    assert "0 dropped" in html and "not dropped; unemitted_window" in html


# --- close points agree with the engine -------------------------------------------------------------

def _scenario(semantics, topology, inputs):
    from kssim.reference.model.scenario import scenario_from_dict

    return scenario_from_dict({"format": "kssim-scenario/1", "name": "close", "semantics": semantics,
                               "topology": topology, "inputs": inputs})


def _updates_window(scenario, window) -> bool:
    """Whether the scenario's last input updated ``window`` (an output of its key and bounds)."""
    from kssim.reference.model.engines import run_scenarios

    (result,) = run_scenarios("reference", [scenario])
    last = len(scenario.inputs) - 1
    return any(o.input_index == last and o.key == {"key": "k", "start": window.start, "end": window.end}
               for o in result.outputs)


SESSION = {"operator": "session_aggregate", "gap_ms": 5, "grace_ms": 3, "aggregation": "count"}
TUMBLING = {"operator": "window_aggregate", "size_ms": 10, "advance_ms": 10, "grace_ms": 3, "aggregation": "count"}
SLIDING = {"operator": "sliding_aggregate", "time_difference_ms": 10, "grace_ms": 3, "aggregation": "count"}


@pytest.mark.parametrize("semantics,topology,rule", [
    ("3.9", SESSION, "> end + gap + grace"),  # KAFKA-12718: the gap counts since 3.0
    ("2.8", SESSION, "> end + grace"),
    ("2.2", SESSION, "\u2265 end + grace"),  # 2.1-2.2.0: a session ending at the close time is late
    ("3.9", TUMBLING, "\u2265 end + grace"),
    ("3.9", SLIDING, "> end + grace"),  # KAFKA-13739: end >= close time stays open since 3.3
    ("3.2", SLIDING, "\u2265 end + grace"),
])
def test_the_drawn_close_is_the_first_stream_time_at_which_kafka_refuses_the_window_an_update(
        semantics, topology, rule):
    """k@10 opens a window; another key moves stream time to ``t``; k@10 again: it updates the
    window while ``t`` is below the drawn close, not from the close on, and the legend's rule
    says so."""
    first = [{"topic": "input", "key": "k", "value": "a", "ts": 10}]
    window = next(iv for iv in build_timeline(_scenario(semantics, topology, first + [
        {"topic": "input", "key": "other", "value": "b", "ts": 10}])).intervals if iv.key == "k")
    close = window.close
    for stream_time, late in ((close - 1, False), (close, True)):
        scenario = _scenario(semantics, topology, first + [
            {"topic": "input", "key": "other", "value": "b", "ts": stream_time},
            {"topic": "input", "key": "k", "value": "c", "ts": 10}])
        assert _updates_window(scenario, window) is not late, (stream_time, close)
        tl = build_timeline(scenario)
        assert [r.text for r in tl.close_rules if r.kind is window.kind][0].split(" once stream time ")[1] \
            .startswith(rule)


def test_an_outer_join_pads_with_null_from_the_drawn_close():
    topology = {"operator": "stream_stream_join", "join": "outer", "window_api": "time_difference",
                "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 2}}
    first = [{"topic": "left", "key": "k", "value": "A", "ts": 0}]
    close = next(iv.close for iv in build_timeline(_scenario("3.9", topology, first)).intervals)
    assert close == 13  # padded once stream time > 0 + 10 + 2
    for stream_time, padded in ((close - 1, False), (close, True)):
        tl = build_timeline(_scenario("3.9", topology, first + [
            {"topic": "right", "key": "other", "value": "x", "ts": stream_time}]))
        assert any(o.value == ["A", None] for o in tl.outputs) is padded, stream_time


# --- layout ---------------------------------------------------------------------------------------------

def _dense_timeline():
    """36 inputs, long JSON values, records a few ms apart: labels fight for room."""
    from kssim.reference.model.scenario import scenario_from_dict

    inputs = [{"topic": "left" if i % 3 else "right", "key": f"customer-{i % 5:04d}",
               "value": {"order": f"ord-{i:05d}", "amount": 1234.5 + i, "items": ["widget", "gadget"][:1 + i % 2],
                         "note": "a rather long description text"},
               "ts": 3 * i + (i % 4)} for i in range(36)]
    inputs[7]["value"] = None  # a drop code to place as well
    return build_timeline(scenario_from_dict({
        "format": "kssim-scenario/1", "name": "dense-json-outer", "semantics": "3.9",
        "topology": {"operator": "stream_stream_join", "join": "outer", "window_api": "time_difference",
                     "window": {"before_ms": 6, "after_ms": 6, "grace_ms": 2}}, "inputs": inputs}))


def _drawn_text_boxes(monkeypatch, timeline, dpi=110):
    """The extent of every text matplotlib draws for ``timeline`` (recorded as it draws them)."""
    import matplotlib.pyplot as plt
    from matplotlib.text import Text

    drawn = []
    original = Text.draw

    def draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append((self.get_text(), self.get_window_extent(renderer)))
        return original(self, renderer)

    fig = figure(timeline, dpi)
    try:
        monkeypatch.setattr(Text, "draw", draw)
        fig.canvas.draw()
        return drawn, fig.bbox.frozen()
    finally:
        monkeypatch.setattr(Text, "draw", original)
        plt.close(fig)


GRAPH_WINDOWS = os.path.join(ROOT, "scenarios", "cookbook", "13-orders-per-customer-3.9.yaml")
FAILING = os.path.join(ROOT, "scenarios", "features", "session-sum-null-value-fails-3.9.json")


@pytest.mark.parametrize("which", ["dense", "seed", "hopping", "sessions", "graph", "failing"])
def test_no_two_drawn_texts_overlap(monkeypatch, which):
    timeline = {"dense": _dense_timeline, "seed": lambda: timeline_of(SEED_LEFT),
                "hopping": lambda: timeline_of(HOPPING), "sessions": lambda: timeline_of(SESSIONS),
                "graph": lambda: timeline_of(GRAPH_WINDOWS), "failing": lambda: timeline_of(FAILING)}[which]()
    drawn, frame = _drawn_text_boxes(monkeypatch, timeline)
    labels = {m.label for m in timeline.inputs + timeline.outputs}
    assert len([t for t, _ in drawn if t in labels]) >= min(10, len(labels) // 3)  # labels are drawn at all
    for i, (text, box) in enumerate(drawn):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 + 0.5 and frame.y0 <= box.y0 and box.y1 <= frame.y1 + 0.5, \
            text
        for other, other_box in drawn[i + 1:]:
            overlap = box.x0 < other_box.x1 - 0.5 and other_box.x0 < box.x1 - 0.5 \
                and box.y0 < other_box.y1 - 0.5 and other_box.y0 < box.y1 - 0.5
            assert not overlap, (text, other)


def test_timestamps_near_long_max_are_drawn_from_an_origin():
    # floats hold milliseconds exactly only up to 2^52: near Long.MAX_VALUE the axis counts from
    # the first record, so records 5 ms apart stay 5 ms apart
    import warnings

    import matplotlib.pyplot as plt

    tl = timeline_of(os.path.join(ROOT, "scenarios", "features", "stream-stream-left-upper-bound-wraps-3.9.yaml"))
    origin = min(m.ts for m in tl.inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib warns of a singular axis without the origin
        fig = figure(tl)
    try:
        top, bottom = fig.axes
        assert bottom.get_xlabel() == f"timestamp - {origin} (ms)"
        xs = sorted(x for collection in top.collections for x, _ in collection.get_offsets())
        assert {round(x) for x in xs} == {m.ts - origin for m in tl.inputs + tl.outputs}
    finally:
        plt.close(fig)
    assert figure_xlabel(timeline_of(SEED_LEFT)) == "timestamp (ms)"


def figure_xlabel(timeline) -> str:
    import matplotlib.pyplot as plt

    fig = figure(timeline)
    try:
        return fig.axes[1].get_xlabel()
    finally:
        plt.close(fig)


def test_svg_and_html_are_byte_identical_for_the_same_timeline():
    timeline = _dense_timeline()
    assert render(timeline, "svg") == render(timeline, "svg")
    assert render(timeline, "html") == render(_dense_timeline(), "html")


def test_the_html_page_carries_every_record_s_full_text_as_a_hover_title():
    import html as html_lib

    timeline = _dense_timeline()
    page = render(timeline, "html").decode("utf-8")
    svg = page[page.index("<svg"):page.index("</svg>")]
    titles = [html_lib.unescape(t) for t in re.findall(r"<title>(.*?)</title>", svg, re.S)]
    from kssim.reference.model.render import show

    full = show(timeline.inputs[4].value)
    assert len(full) > 40 and any(full in t for t in titles)  # the label only shows its start
    for kind, marks in (("input", timeline.inputs), ("output", timeline.outputs)):
        for m in marks:  # every marker has one, labelled or not
            assert any(t.startswith(f"{kind} {m.index} on ") for t in titles), (kind, m.index)


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
