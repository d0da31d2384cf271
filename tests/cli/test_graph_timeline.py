"""``kssim timeline`` on topology graphs: the model of a graph (source, internal and sink lanes,
the records that crossed the repartition and foreign-key topics, stream time per input, windows of
windowed aggregations, links, drops) and pictures of a sample of ``../shared/conformance-graphs``
across its families (every file's model is built)."""
from __future__ import annotations

import glob
import os

import pytest

from kssim_testing import CONFORMANCE_GRAPHS
from kssim.reference.model.codes import DropReason
from kssim.reference.model.scenario import load_scenario
from kssim.tools.cli import main
from kssim.tools.timeline.draw import figure, lane_name, render
from kssim.tools.timeline.model import IntervalKind, LaneKind, MarkKind, build_timeline

ORACLE = os.path.join(CONFORMANCE_GRAPHS, "kafka-oracle")
GRAPH_FILES = sorted(glob.glob(os.path.join(ORACLE, "*", "*.json")))
FAMILIES = sorted({os.path.basename(os.path.dirname(f)) for f in GRAPH_FILES})
REKEY_JOIN = os.path.join(ORACLE, "rekey-join", "graph-rekey-join-142.json")
FK_JOIN = os.path.join(ORACLE, "fk-join", "graph-fk-join-562.json")
TABLE_AGGREGATE = os.path.join(ORACLE, "table-aggregate", "graph-table-aggregate-214.json")
SESSIONS = os.path.join(ORACLE, "windowed-aggregate", "graph-windowed-aggregate-352.json")
JOIN_THEN_WINDOW = os.path.join(ORACLE, "join-then-window", "graph-join-then-window-422.json")
TWO_SINKS = os.path.join(ORACLE, "stateless", "graph-stateless-2.json")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def timeline_of(path):
    return build_timeline(load_scenario(path))


# --- one graph as data: lanes and counts ------------------------------------------------------------

@pytest.fixture(scope="module")
def rekey_join():
    return timeline_of(REKEY_JOIN)


def test_a_re_keyed_join_has_a_lane_per_source_its_repartition_topic_and_its_sink(rekey_join):
    # stream("s1").select_key(...).join(table("t1")).map_values(...).to("out")
    assert [(lane.kind, lane.topic) for lane in rekey_join.lanes] == [
        (LaneKind.INPUT, "s1"), (LaneKind.INPUT, "t1"),
        (LaneKind.INTERNAL, "KSTREAM-KEY-SELECT-0000000001-repartition"), (LaneKind.OUTPUT, "out")]
    assert (rekey_join.operator, rekey_join.tasks) == ("graph", 1)
    assert (len(rekey_join.inputs), len(rekey_join.internal), len(rekey_join.outputs)) == (13, 10, 2)
    scenario = load_scenario(REKEY_JOIN)
    assert [rekey_join.lanes[m.lane].topic for m in rekey_join.inputs] == [r.topic for r in scenario.inputs]
    assert {m.lane for m in rekey_join.internal} == {2} and {m.lane for m in rekey_join.outputs} == {3}


def test_every_s1_record_crosses_the_repartition_topic_re_keyed_null_values_too(rekey_join):
    scenario = load_scenario(REKEY_JOIN)
    s1 = [r.index for r in scenario.inputs if r.topic == "s1"]
    assert [m.source for m in rekey_join.internal] == s1  # each written by its own input, in order
    assert [m.ts for m in rekey_join.internal] == [scenario.inputs[i].ts for i in s1]
    first, null = rekey_join.internal[0], rekey_join.internal[1]
    # the value is cut between tokens, never inside a JSON string or number
    assert (first.key, first.label, first.kind) == ("b-1", 'b-1:{"g":"b","n":\u2026', MarkKind.VALUE)
    # a null value still crosses (KIP-962 keeps it); the join behind drops it
    assert (null.source, null.value, null.kind) == (2, None, MarkKind.NULL_VALUE)


def test_outputs_link_to_their_input_and_the_table_row_they_joined(rekey_join):
    assert [(link.output, link.input_index, link.joined) for link in rekey_join.links] == [(0, 5, (1,)), (1, 12, (10,))]
    assert [(d.input_index, d.reason) for d in rekey_join.drops] == [(2, DropReason.NULL_VALUE),
                                                                     (3, DropReason.NULL_VALUE)]
    assert "null value" in rekey_join.drops[0].text


def test_stream_time_per_input_covers_the_internal_records_it_caused(rekey_join):
    steps = rekey_join.steps
    assert [s.input_index for s in steps] == list(range(13)) and {s.task for s in steps} == {0}
    assert [s.stream_time for s in steps] == [9, 9, 11, 15, 21, 21, 27, 36, 36, 39, 40, 40, 43]
    # the task's stream time is the largest timestamp it took: inputs and internal records alike
    for s in steps:
        taken = [m.ts for m in rekey_join.inputs[:s.input_index + 1]]
        taken += [m.ts for m in rekey_join.internal if m.source <= s.input_index]
        assert s.stream_time == max(taken)


def test_a_foreign_key_join_shows_its_subscription_and_response_topics():
    tl = timeline_of(FK_JOIN)
    internal = [lane.topic for lane in tl.lanes if lane.kind is LaneKind.INTERNAL]
    assert internal == ["graph[3] join subscription", "graph[3] join response"]
    sub = tl.internal[0]
    # the wrappers become plain data: the primary key, the instruction, the value hash
    assert (tl.lanes[sub.lane].topic, sub.key, sub.label, sub.source) == (internal[0], "a", "a:pk=k2", 4)
    assert sub.value == {"pk": "k2", "instruction": "PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE", "hash": "cc5c87d9"}
    response = next(m for m in tl.internal if tl.lanes[m.lane].topic == internal[1])
    assert (response.key, response.value, response.label) == ("k1", {"foreign_value": None, "hash": "b96293e5"},
                                                               "k1:null")


def test_a_table_group_by_sends_its_changes_through_the_repartition_topic():
    tl = timeline_of(TABLE_AGGREGATE)
    changes = [m.value for m in tl.internal]
    assert changes[0] == {"new": {"g": "c", "n": 5, "fk": None}, "old": None}
    assert changes[2] == {"new": {"g": "b", "n": 8, "fk": "y"}, "old": {"g": "c", "n": 5, "fk": None}}
    assert [m.label for m in tl.internal[:4]] == ['2:\u2192{"g":"c","n"\u2026', '2:\u2192{"g":"a","n"\u2026',
                                                  '2:{"g":\u2026\u2192{"g":\u2026', '2:{"g":"b","n"\u2026\u2192']


def test_windows_of_a_graph_s_windowed_aggregation():
    sessions = timeline_of(SESSIONS)
    assert sessions.intervals and {iv.kind for iv in sessions.intervals} == {IntervalKind.SESSION_WINDOW}
    first = sessions.intervals[0]
    # 3.9: closed once stream time > end + gap + grace
    assert (first.key, first.start, first.end, first.close) == ("k1", 4, 4, 13)
    assert [(r.kind, r.strict, r.offset) for r in sessions.close_rules] == [
        (IntervalKind.SESSION_WINDOW, True, "gap + grace")]
    assert "> end + gap + grace (| at end + gap + grace + 1)" in sessions.close_rules[0].text
    assert any(iv.superseded for iv in sessions.intervals)  # a session merged away (its tombstone)
    # a stream-stream join, then a time-windowed aggregation whose first windows are never emitted
    windows = timeline_of(JOIN_THEN_WINDOW).intervals
    assert [(iv.kind, iv.key, iv.start, iv.end, iv.close, iv.lost) for iv in windows] == [
        (IntervalKind.TIME_WINDOW, "k1", 0, 12, 14, True), (IntervalKind.TIME_WINDOW, "k2", 0, 12, 14, True),
        (IntervalKind.TIME_WINDOW, "k1", 12, 24, 26, False), (IntervalKind.TIME_WINDOW, "k2", 12, 24, 26, False)]


def test_two_sink_topics_are_two_output_lanes():
    tl = timeline_of(TWO_SINKS)
    assert [(lane.kind, lane.topic) for lane in tl.lanes] == [
        (LaneKind.INPUT, "s1"), (LaneKind.INPUT, "s2"), (LaneKind.OUTPUT, "out"), (LaneKind.OUTPUT, "out2")]
    assert not tl.internal
    by_topic = {}
    for m in tl.outputs:
        by_topic.setdefault(tl.lanes[m.lane].topic, []).append(m.index)
    assert sorted(by_topic) == ["out", "out2"] and len(tl.outputs) == 20


def test_long_internal_topic_names_are_broken_at_dashes():
    assert lane_name("out") == "out"
    assert lane_name("KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition") == \
        "KSTREAM-AGGREGATE-STATE-\nSTORE-0000000003-\nrepartition"
    assert lane_name("graph[3] join subscription") == "graph[3] join\nsubscription"


# --- pictures -------------------------------------------------------------------------------------------

def sample():
    """Two files per family (the first and the middle one), and the one with two sink topics."""
    picked = []
    for family in FAMILIES:
        files = [f for f in GRAPH_FILES if os.path.basename(os.path.dirname(f)) == family]
        picked += [files[0], files[len(files) // 2]]
    return picked + [TWO_SINKS]


def test_the_sample_covers_every_family():
    assert len(GRAPH_FILES) > 300 and len(FAMILIES) >= 12
    assert len(sample()) >= 20


@pytest.mark.parametrize("path", sample(), ids=os.path.basename)
def test_a_sample_of_the_graph_corpus_renders(path):
    timeline = timeline_of(path)
    fmt = ("png", "svg", "html")[GRAPH_FILES.index(path) % 3]
    data = render(timeline, fmt, dpi=30)
    if fmt == "png":
        assert data.startswith(PNG_SIGNATURE)
    else:
        text = data.decode("utf-8")
        assert "<svg" in text and timeline.name in text
        if fmt == "html" and timeline.internal:
            assert "<h2>Internal records</h2>" in text


@pytest.mark.parametrize("family", FAMILIES)
def test_every_graph_of_the_corpus_has_a_model_and_a_figure(family):
    """Every file's model (and its figure's artists for one in four, without rasterising)."""
    import matplotlib.pyplot as plt

    for n, path in enumerate(f for f in GRAPH_FILES if os.path.basename(os.path.dirname(f)) == family):
        scenario = load_scenario(path)
        timeline = build_timeline(scenario)
        assert len(timeline.inputs) == len(scenario.inputs)
        assert {timeline.lanes[m.lane].kind for m in timeline.internal} <= {LaneKind.INTERNAL}
        sinks = list(scenario.topology.sink_topics)
        assert [lane.topic for lane in timeline.lanes if lane.kind is LaneKind.OUTPUT][:len(sinks)] == sinks
        if n % 4 == 0:
            plt.close(figure(timeline))


def test_the_command_draws_a_graph(tmp_path, capsys):
    out = tmp_path / "rekey.html"
    assert main(["timeline", REKEY_JOIN, "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    page = out.read_text(encoding="utf-8")
    assert "Kafka 3.9, graph: 13 inputs, 10 internal records, 2 outputs, 2 dropped" in page
    assert "<h2>Internal records</h2>" in page and "KSTREAM-KEY-SELECT-0000000001-repartition" in page
