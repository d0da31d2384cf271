"""The Python API (reference.api): it builds exactly the specs scenario files parse to, its driver
reproduces scenario files record for record, and it rejects what Kafka Streams' API rejects."""
from __future__ import annotations

import datetime
import functools
import json
import os

import pytest

from kssim.reference import api
from kssim.reference.api import (
    IllegalArgumentError, IllegalStateError, JoinWindows, Joined, KafkaWouldFail, KeyValue, Materialized,
    NoSuchElementError, Stores, StreamsBuilder, TestRecord, Topology, TopologyError, TopologyTestDriver,
    UnsavableTopologyError, ValueJoiner,
)
from kssim.reference.model.compare import canonical, compare_outputs
from kssim.reference.runtime.engine import run_scenario
from kssim.reference.model.errors import KssimError, ScenarioError
from kssim.reference.model.records import NO_OLD_VALUE, OutputRecord
from kssim.reference.model.scenario import find_scenario_files, load_scenario, scenario_from_dict
from kssim.reference.model.topology import (
    JoinWindowSpec, StreamStreamJoinSpec, StreamTableJoinSpec, TableSpec, TableTableJoinSpec, parse_topology,
)

from kssim_testing import CONFORMANCE  # noqa: E402
SEEDS = os.path.join(CONFORMANCE, "seeds")
JOIN_OPERATORS = ("stream_stream_join", "stream_table_join", "table_table_join")
METHODS = {"inner": "join", "left": "left_join", "outer": "outer_join"}


def parsed(topology: dict):
    """The spec a scenario file with this ``topology`` object parses to."""
    doc = {"format": "kssim-scenario/1", "name": "t", "semantics": "3.9", "topology": topology, "inputs": []}
    return scenario_from_dict(doc).topology


@functools.lru_cache(maxsize=None)
def join_scenarios():
    """Every conformance scenario of the three joins (path relative to the corpus, scenario)."""
    found = []
    for path in find_scenario_files([CONFORMANCE]):
        scenario = load_scenario(path)
        if scenario.topology.operator in JOIN_OPERATORS:
            found.append((os.path.relpath(path, CONFORMANCE), scenario))
    return tuple(found)


def corpus_ids():
    return [rel for rel, _ in join_scenarios()]


def corpus_scenario(rel):
    return dict(join_scenarios())[rel]


def _materialized(table: TableSpec):
    if not table.versioned:
        return None
    return Materialized.as_(Stores.persistent_versioned_key_value_store("store", table.history_retention_ms))


def api_topology(spec, joiner=None) -> Topology:
    """Build ``spec`` with the API calls a Kafka user would write (the test's own mapping)."""
    b = StreamsBuilder()
    j = joiner if joiner is not None else ValueJoiner(spec.joiner, spec.joiner_separator)
    method = METHODS[spec.join]
    if isinstance(spec, StreamStreamJoinSpec):
        w = spec.window
        widest = max(w.before_ms, w.after_ms)
        if spec.window_api == "time_difference":
            windows = JoinWindows.of_time_difference_and_grace(widest, w.grace_ms)
        else:
            windows = JoinWindows.of(widest)
            if w.grace_ms is not None:
                windows = windows.grace(w.grace_ms)
        windows = windows.before(w.before_ms).after(w.after_ms)
        getattr(b.stream("left"), method)(b.stream("right"), j, windows).to("output")
    elif isinstance(spec, StreamTableJoinSpec):
        joined = Joined.with_grace_period(spec.grace_ms) if spec.grace_ms is not None else None
        getattr(b.stream("left"), method)(b.table("right", _materialized(spec.table)), j, joined).to("output")
    else:
        result = getattr(b.table("left", _materialized(spec.left_table)), method)(
            b.table("right", _materialized(spec.right_table)), j)
        if spec.send_old_values:
            result.enable_sending_old_values()
        result.to_stream().to("output")
    return b.build()


# --- the API builds the specs scenario files parse to --------------------------------------------

def _ss(join, windows, joiner="pair"):
    b = StreamsBuilder()
    getattr(b.stream("left"), METHODS[join])(b.stream("right"), joiner, windows).to("output")
    return b.build().spec


def _st(join, table_materialized=None, joined=None, joiner="pair"):
    b = StreamsBuilder()
    getattr(b.stream("left"), METHODS[join])(b.table("right", table_materialized), joiner, joined).to("output")
    return b.build().spec


def _tt(join, left=None, right=None, joiner="pair", old_values=False):
    b = StreamsBuilder()
    result = getattr(b.table("left", left), METHODS[join])(b.table("right", right), joiner)
    if old_values:
        assert result.enable_sending_old_values() is result
    result.to_stream().to("output")
    return b.build().spec


def _versioned(retention):
    return Materialized.as_(Stores.persistent_versioned_key_value_store("s", history_retention_ms=retention))


SS = {"operator": "stream_stream_join"}
ST = {"operator": "stream_table_join"}
TT = {"operator": "table_table_join"}

EQUIVALENTS = [
    (lambda: _ss("left", JoinWindows.of_time_difference_and_grace(15, 5)),
     {**SS, "join": "left", "window_api": "time_difference", "window": {"before_ms": 15, "after_ms": 15, "grace_ms": 5}}),
    (lambda: _ss("inner", JoinWindows.of_time_difference_with_no_grace(10)),
     {**SS, "join": "inner", "window_api": "time_difference", "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 0}}),
    (lambda: _ss("outer", JoinWindows.of(100)),
     {**SS, "join": "outer", "window_api": "legacy", "window": {"before_ms": 100, "after_ms": 100, "grace_ms": None}}),
    (lambda: _ss("outer", JoinWindows.of(100).grace(7)),
     {**SS, "join": "outer", "window": {"before_ms": 100, "after_ms": 100, "grace_ms": 7}}),
    (lambda: _ss("inner", JoinWindows.of(10).before(0).after(20)),
     {**SS, "join": "inner", "window": {"before_ms": 0, "after_ms": 20}}),
    (lambda: _ss("left", JoinWindows.of_time_difference_and_grace(10, 3).before(-4)),
     {**SS, "join": "left", "window_api": "time_difference", "window": {"before_ms": -4, "after_ms": 10, "grace_ms": 3}}),
    (lambda: _ss("inner", JoinWindows.of_time_difference_and_grace(datetime.timedelta(seconds=2), datetime.timedelta(0))),
     {**SS, "join": "inner", "window_api": "time_difference",
      "window": {"before_ms": 2000, "after_ms": 2000, "grace_ms": 0}}),
    (lambda: _ss("inner", JoinWindows.of(5), joiner="concat"),
     {**SS, "join": "inner", "joiner": "concat", "window": {"before_ms": 5, "after_ms": 5}}),
    (lambda: _ss("inner", JoinWindows.of(5), joiner=ValueJoiner.concat("-")),
     {**SS, "join": "inner", "joiner": "concat", "joiner_separator": "-", "window": {"before_ms": 5, "after_ms": 5}}),
    (lambda: _st("inner"), {**ST, "join": "inner"}),
    (lambda: _st("left", Materialized.as_("right-store")), {**ST, "join": "left"}),
    (lambda: _st("left", Materialized.as_(Stores.persistent_key_value_store("kv"))), {**ST, "join": "left"}),
    (lambda: _st("inner", _versioned(100), Joined.with_grace_period(10), joiner="concat"),
     {**ST, "join": "inner", "joiner": "concat", "grace_ms": 10, "table": {"versioned": True, "history_retention_ms": 100}}),
    (lambda: _st("left", _versioned(10), Joined.as_("j").with_grace_period(10)),
     {**ST, "join": "left", "grace_ms": 10, "table": {"versioned": True, "history_retention_ms": 10}}),
    (lambda: _st("left", _versioned(0)), {**ST, "join": "left", "table": {"versioned": True, "history_retention_ms": 0}}),
    (lambda: _tt("inner"), {**TT, "join": "inner"}),
    (lambda: _tt("left", old_values=True), {**TT, "join": "left", "send_old_values": True}),
    (lambda: _tt("outer", _versioned(50), None, joiner=ValueJoiner.concat()),
     {**TT, "join": "outer", "joiner": "concat", "left_table": {"versioned": True, "history_retention_ms": 50}}),
    (lambda: _tt("outer", None, _versioned(60)),
     {**TT, "join": "outer", "right_table": {"versioned": True, "history_retention_ms": 60}}),
]


@pytest.mark.parametrize("build, topology", EQUIVALENTS, ids=[json.dumps(t, sort_keys=True) for _, t in EQUIVALENTS])
def test_api_builds_the_spec_of_the_equivalent_scenario(build, topology):
    assert build() == parsed(topology)


def test_the_brief_examples_build_the_scenario_specs():
    b = StreamsBuilder()
    left = b.stream("left")
    right = b.stream("right")
    joiner = lambda l, r: f"{l}+{r}"  # noqa: E731
    left.left_join(right, joiner, JoinWindows.of_time_difference_and_grace(15, 5)).to("output")
    topology = b.build()
    assert topology.spec == StreamStreamJoinSpec(join="left", window=JoinWindowSpec(15, 15, 5),
                                                 window_api="time_difference", joiner=joiner)
    b = StreamsBuilder()
    b.stream("left").join(
        b.table("right", Materialized.as_(Stores.persistent_versioned_key_value_store("s", history_retention_ms=100))),
        joiner, Joined.with_grace_period(10)).to("output")
    assert b.build().spec == StreamTableJoinSpec(join="inner", table=TableSpec(True, 100), grace_ms=10, joiner=joiner)


def test_callable_joiners_are_kept_as_given():
    joiner = lambda l, r: (l, r)  # noqa: E731
    spec = _tt("outer", joiner=joiner)
    assert spec.joiner is joiner and spec == TableTableJoinSpec(join="outer", joiner=joiner)
    assert spec != parsed({**TT, "join": "outer"})


@pytest.mark.parametrize("rel", corpus_ids())
def test_every_corpus_join_topology_is_buildable_and_round_trips(rel):
    spec = corpus_scenario(rel).topology
    assert api_topology(spec).spec == spec
    # describe() is code that rebuilds it
    namespace = {name: getattr(api, name) for name in api.__all__}
    exec(api_topology(spec).describe(), namespace)
    assert namespace["topology"].spec == spec
    # to_scenario writes the topology object a scenario file would hold
    doc = Topology(spec).to_scenario([], name="x", release=corpus_scenario(rel).release)
    assert parse_topology(doc["topology"], lambda where, msg: AssertionError(f"{where}: {msg}")) == spec


def test_legacy_windows_keep_the_release_default_grace_and_size():
    w = JoinWindows.of(10)
    assert w.grace_ms is None and w.window_api == "legacy" and w.size() == 20
    assert w.before(3).grace_ms is None and w.before(3).window_api == "legacy"
    t = JoinWindows.of_time_difference_and_grace(10, 4).after(1)
    assert (t.before_ms, t.after_ms, t.grace_ms, t.window_api) == (10, 1, 4, "time_difference")


# --- misuse raises, as Kafka's API does ---------------------------------------------------------

@pytest.mark.parametrize("make", [
    lambda: JoinWindows.of(-1),
    lambda: JoinWindows.of_time_difference_and_grace(-1, 0),
    lambda: JoinWindows.of_time_difference_with_no_grace(-1),
    lambda: JoinWindows.of_time_difference_and_grace(5, -1),
    lambda: JoinWindows.of(5).grace(-1),
    lambda: JoinWindows.of(5).before(-6),
    lambda: JoinWindows.of_time_difference_and_grace(5, 0).after(-6),
], ids=["of", "and_grace", "no_grace", "negative_grace", "legacy_negative_grace", "before", "after"])
def test_negative_windows_and_grace_are_rejected(make):
    with pytest.raises(TopologyError, match="negative"):
        make()


def test_a_window_of_size_zero_is_allowed():
    w = JoinWindows.of(5).before(-5)
    assert w.size() == 0 and (w.before_ms, w.after_ms) == (-5, 5)
    assert JoinWindows.of(0).size() == 0


def test_grace_after_of_time_difference_raises_like_kafka():
    for windows in (JoinWindows.of_time_difference_and_grace(10, 5), JoinWindows.of_time_difference_with_no_grace(10),
                    JoinWindows.of_time_difference_and_grace(10, 5).before(2)):
        with pytest.raises(IllegalStateError, match="Cannot call grace"):
            windows.grace(1)
    legacy = JoinWindows.of(10).grace(1).grace(2)
    assert legacy.grace_ms == 2 and legacy.window_api == "legacy"


def test_durations_must_be_whole_milliseconds():
    with pytest.raises(TypeError):
        JoinWindows.of(1.5)
    with pytest.raises(TypeError):
        JoinWindows.of(True)
    with pytest.raises(IllegalArgumentError):
        JoinWindows.of(datetime.timedelta(microseconds=1500))


def test_grace_on_an_unversioned_stream_table_join_is_rejected():
    b = StreamsBuilder()
    with pytest.raises(TopologyError, match="versioned"):
        b.stream("left").join(b.table("right"), "pair", Joined.with_grace_period(0))


def test_history_retention_below_grace_is_rejected_and_equal_is_allowed():
    b = StreamsBuilder()
    with pytest.raises(TopologyError, match="history retention 9 ms is below the join's grace period 10 ms"):
        b.stream("left").left_join(b.table("right", _versioned(9)), "pair", Joined.with_grace_period(10))
    assert _st("left", _versioned(10), Joined.with_grace_period(10)).grace_ms == 10


def test_negative_stream_table_grace_and_history_retention_are_rejected():
    b = StreamsBuilder()
    with pytest.raises(TopologyError, match="negative"):
        b.stream("left").join(b.table("right", _versioned(10)), "pair", Joined.with_grace_period(-1))
    with pytest.raises(IllegalArgumentError, match="historyRetention cannot be negative"):
        Stores.persistent_versioned_key_value_store("s", -1)


@pytest.mark.parametrize("release, build, field", [
    ("3.0", lambda: _ss("inner", JoinWindows.of_time_difference_and_grace(5, 1)), "window_api"),
    ("2.0", lambda: _ss("inner", JoinWindows.of(5).grace(1)), "grace_ms"),
    ("3.4", lambda: _st("inner", _versioned(10)), "versioned"),
    ("3.5", lambda: _st("inner", _versioned(10), Joined.with_grace_period(1)), "grace_ms"),
    ("3.4", lambda: _tt("left", None, _versioned(10)), "versioned"),
])
def test_the_driver_rejects_apis_its_release_does_not_have(release, build, field):
    topology = Topology(build())
    with pytest.raises(TopologyError) as info:
        TopologyTestDriver(topology, release=release)
    assert field in info.value.field and release in info.value.message


@pytest.mark.parametrize("release, build", [
    ("3.1", lambda: _ss("inner", JoinWindows.of_time_difference_and_grace(5, 1))),
    ("2.1", lambda: _ss("inner", JoinWindows.of(5).grace(1))),
    ("2.0", lambda: _ss("inner", JoinWindows.of(5))),
    ("3.5", lambda: _st("inner", _versioned(10))),
    ("3.6", lambda: _st("inner", _versioned(10), Joined.with_grace_period(1))),
])
def test_the_first_release_with_an_api_accepts_it(release, build):
    assert TopologyTestDriver(Topology(build()), release=release).release == release


def _stream_stream(b, left="left", right="right"):
    return b.stream(left).join(b.stream(right), "pair", JoinWindows.of(5))


def _build_error(setup):
    b = StreamsBuilder()
    setup(b)
    with pytest.raises(TopologyError) as info:
        b.build()
    return info.value.message


def _builds_a_graph(setup):
    b = StreamsBuilder()
    setup(b)
    return b.build().is_graph


def test_programs_that_are_not_one_join_of_left_and_right_into_output_become_graphs():
    # before topology graphs these were rejected; they are Kafka programs, so they are graphs now
    assert _builds_a_graph(lambda b: b.stream("left").to("output"))
    assert _builds_a_graph(lambda b: (_stream_stream(b).to("output"), _stream_stream(b, "a", "c").to("output")))
    assert _builds_a_graph(lambda b: [j.to("output") for j in [_stream_stream(b)] * 2])
    assert _builds_a_graph(lambda b: _stream_stream(b).to("result"))
    assert _builds_a_graph(lambda b: _stream_stream(b, "a", "right").to("output"))
    assert _builds_a_graph(lambda b: _stream_stream(b, "right", "left").to("output"))
    assert _builds_a_graph(lambda b: (b.stream("extra"), _stream_stream(b).to("output")))
    assert _builds_a_graph(
        lambda b: b.table("left").to_stream().join(b.stream("right"), "pair", JoinWindows.of(1)).to("output"))
    assert _builds_a_graph(lambda b: b.table("left").to_stream().left_join(b.table("right"), "pair").to("output"))

    def source_to_output(b):
        _stream_stream(b)
        b.stream("extra").to("output")
    assert _builds_a_graph(source_to_output)
    # what is neither says why in both forms
    for setup in (lambda b: _stream_stream(b), lambda b: b.table("left").join(b.table("right"), "pair")):
        message = _build_error(setup)
        assert "no sink" in message and "exactly once" in message


def test_a_topic_can_be_read_by_one_source_only():
    b = StreamsBuilder()
    b.stream("left")
    with pytest.raises(TopologyError, match="already been registered"):
        b.table("left")


def test_join_arguments_are_type_checked_like_kafkas_overloads():
    b = StreamsBuilder()
    left, right, table = b.stream("left"), b.stream("right"), StreamsBuilder().table("right")
    with pytest.raises(TypeError, match="needs JoinWindows"):
        left.join(right, "pair")
    with pytest.raises(TypeError, match="not Joined"):
        left.join(right, "pair", Joined.with_grace_period(1))
    with pytest.raises(TypeError, match="joiner can't be null"):
        left.join(right, None, JoinWindows.of(1))
    with pytest.raises(TypeError, match="a joiner is a callable"):
        left.join(right, 42, JoinWindows.of(1))
    with pytest.raises(IllegalArgumentError, match="unknown joiner 'sum'"):
        left.join(right, "sum", JoinWindows.of(1))
    with pytest.raises(TopologyError, match="same StreamsBuilder"):
        left.join(table, "pair")
    b2 = StreamsBuilder()
    s, t = b2.stream("left"), b2.table("right")
    with pytest.raises(TypeError, match="no KStream-KTable outer join"):
        s.outer_join(t, "pair", JoinWindows.of(1))
    with pytest.raises(TypeError, match="optional Joined"):
        s.join(t, "pair", JoinWindows.of(1))
    with pytest.raises(TypeError, match="joins a KTable"):
        t.join(s, "pair")
    with pytest.raises(TopologyError, match="table-table join"):
        t.enable_sending_old_values()
    with pytest.raises(TypeError, match="Materialized"):
        StreamsBuilder().table("left", "store-name")


# --- the driver reproduces scenario files record for record ---------------------------------------

def replay(scenario, topology, explain=False):
    """Pipe the scenario's inputs one by one and read the output after each, as a Kafka test does:
    returns the driver and, per input index, the records read right after piping it."""
    driver = TopologyTestDriver(topology, release=scenario.release, store=scenario.config.store,
                                explain=explain, emit_interval_ms=scenario.config.emit_interval_ms)
    topics = {topic: driver.create_input_topic(topic) for topic in driver.input_topics}
    output = driver.create_output_topic("output")
    reads = []
    for rec in scenario.inputs:
        assert topics[rec.topic].pipe_input(rec.key, rec.value, ts=rec.ts) == rec.index
        reads.append(output.read_records_to_list())
    return driver, reads


def assert_reads_match_expected(scenario, reads):
    """Each checkpoint's read (the records emitted since the previous one) is the file's expected
    records for that checkpoint: key, value, ts, and old_value where the file has it."""
    checkpoints = scenario.effective_checkpoints()
    assert checkpoints, "these files pin the read points"
    previous = -1
    for point in checkpoints:
        got = [r for i in range(previous + 1, point + 1) for r in reads[i]]
        want = [e for e in scenario.expected if e.after_input == point]
        assert [(canonical(r.key), canonical(r.value), r.ts) for r in got] == \
               [(canonical(e.key), canonical(e.value), e.ts) for e in want], f"read after input {point}"
        for r, e in zip(got, want):
            if e.old_value is not NO_OLD_VALUE:
                assert canonical(r.old_value) == canonical(e.old_value), f"old value read after input {point}"
        previous = point
    assert sum(1 for e in scenario.expected if e.after_input is not None) == len(scenario.expected)


def as_outputs(reads):
    return [OutputRecord("output", 0, r.key, r.value, r.ts, r.input_index, r.old_value) for rs in reads for r in rs]


REQUIRED_SEEDS = ["seed-stream-stream-left-3.1.json", "seed-stream-table-left-0.10.2.json",
                  "seed-table-table-outer-0.10.2.json"]
RECORD_FOR_RECORD = sorted(
    [os.path.join("seeds", f) for f in os.listdir(SEEDS) if not f.startswith("seed-fk")]
    + ["kafka-tests/table-table/KTableKTableLeftJoinTest.testSendingOldValue.json",
       "kafka-tests/table-table/KTableKTableInnerJoinTest.testSendingOldValues.json",
       "kafka-tests/stream-table/KStreamKTableJoinTest.shouldHandleLateJoinsWithGracePeriod.json"])


def test_the_required_seeds_are_replayed():
    assert all(os.path.join("seeds", s) in RECORD_FOR_RECORD for s in REQUIRED_SEEDS)


@pytest.mark.parametrize("rel", RECORD_FOR_RECORD)
def test_the_driver_reproduces_the_file_record_for_record(rel):
    scenario = load_scenario(os.path.join(CONFORMANCE, rel))
    _, reads = replay(scenario, api_topology(scenario.topology))
    assert_reads_match_expected(scenario, reads)
    assert compare_outputs(scenario, as_outputs(reads)) is None


@pytest.mark.parametrize("rel", [os.path.join("seeds", s) for s in REQUIRED_SEEDS])
def test_a_callable_joiner_gives_what_the_named_joiner_gives(rel):
    scenario = load_scenario(os.path.join(CONFORMANCE, rel))
    _, reads = replay(scenario, api_topology(scenario.topology, joiner=lambda left, right: [left, right]))
    assert_reads_match_expected(scenario, reads)


def test_the_brief_stream_stream_example_with_its_lambda_joiner():
    scenario = load_scenario(os.path.join(SEEDS, "seed-stream-stream-left-3.1.json"))
    b = StreamsBuilder()
    b.stream("left").left_join(b.stream("right"), lambda l, r: f"{l}+{r}",
                               JoinWindows.of_time_difference_and_grace(15, 5)).to("output")
    _, reads = replay(scenario, b.build())
    # the file's pairs [l, r], printed by the lambda (a missing side is None)
    want = {point: [f"{e.value[0]}+{e.value[1]}" for e in scenario.expected if e.after_input == point]
            for point in scenario.effective_checkpoints()}
    assert {i: [r.value for r in rs] for i, rs in enumerate(reads)} == want


@pytest.mark.parametrize("rel", corpus_ids())
def test_the_driver_runs_like_the_scenario_runner(rel):
    """Piping a scenario through the driver gives what run_scenario gives: same records, input
    indexes, old values and drops."""
    scenario = corpus_scenario(rel)
    driver, reads = replay(scenario, Topology(scenario.topology))
    result = run_scenario(scenario)
    assert result.failure is None
    got = [(canonical(r.key), canonical(r.value), r.ts, r.input_index, canonical(r.old_value)
            if r.old_value is not NO_OLD_VALUE else "-") for rs in reads for r in rs]
    want = [(canonical(o.key), canonical(o.value), o.ts, o.input_index, canonical(o.old_value)
             if o.old_value is not NO_OLD_VALUE else "-") for o in result.outputs]
    assert got == want
    assert [(d.input_index, d.reason) for d in driver.drops()] == [(d.input_index, d.reason) for d in result.drops]
    assert all(i == r.input_index for i, rs in enumerate(reads) for r in rs)


# --- driver behaviour ------------------------------------------------------------------------------

def stream_stream_driver(join="inner", windows=None, **kwargs):
    b = StreamsBuilder()
    getattr(b.stream("left"), METHODS[join])(b.stream("right"), "pair",
                                             windows or JoinWindows.of_time_difference_with_no_grace(10)).to("output")
    return TopologyTestDriver(b.build(), **kwargs)


def test_defaults_are_the_newest_release_rocksdb_and_emit_interval_0():
    driver = stream_stream_driver()
    assert driver.release == "4.3" and driver.config.store == "rocksdb" and driver.config.emit_interval_ms == 0
    assert driver.config.order == "as_listed" and driver.config.task_count == 1


def test_input_indexes_count_across_topics_and_outputs_carry_them():
    driver = stream_stream_driver()
    left, right = driver.create_input_topic("left"), driver.create_input_topic("right")
    out = driver.create_output_topic("output")
    assert left.pipe_input("k", "A", ts=3) == 0
    assert right.pipe_input("x", "b", ts=3) == 1
    assert out.is_empty() and out.get_queue_size() == 0
    assert right.pipe_input("k", "a", ts=4) == 2
    assert out.get_queue_size() == 1
    rec = out.read_record()
    assert rec == TestRecord("k", ["A", "a"], 4) and rec.input_index == 2 and rec.why is None
    with pytest.raises(NoSuchElementError, match="Empty topic: output"):
        out.read_value()


def test_output_topic_objects_of_one_topic_share_its_queue():
    driver = stream_stream_driver()
    driver.create_input_topic("left").pipe_input("k", "A", ts=3)
    driver.create_input_topic("right").pipe_input("k", "a", ts=3)
    first, second = driver.create_output_topic("output"), driver.create_output_topic("output")
    assert first.get_queue_size() == 1 == second.get_queue_size()
    assert second.read_key_value() == KeyValue("k", ["A", "a"])
    assert first.is_empty()


def test_timestamps_default_to_the_topics_current_time():
    driver = stream_stream_driver()
    left = driver.create_input_topic("left", start_ts=100, auto_advance_ms=5)
    right = driver.create_input_topic("right")
    out = driver.create_output_topic("output")
    left.pipe_input("k", "A")           # ts 100
    left.pipe_input("k", "B")           # ts 105
    left.advance_time(2)
    left.pipe_input(TestRecord("k", "C"))  # ts 112
    right.pipe_input("k", "a", ts=110)
    assert [(r.value, r.ts) for r in out.read_records_to_list()] == [(["A", "a"], 110), (["B", "a"], 110), (["C", "a"], 112)]
    right.pipe_key_value_list([("k", "b"), ("k", "c")], start_ts=95, advance_ms=3)  # ts 95, 98
    assert out.read_values_to_list() == [["A", "b"], ["B", "b"], ["A", "c"], ["B", "c"]]
    with pytest.raises(IllegalArgumentError):
        left.advance_time(-1)
    with pytest.raises(IllegalArgumentError):
        driver.create_input_topic("left", auto_advance_ms=-1)


def test_a_value_alone_is_piped_with_a_null_key_and_dropped():
    driver = stream_stream_driver()
    left = driver.create_input_topic("left")
    left.pipe_input("A")
    left.pipe_value_list(["B"], start_ts=1)
    assert [d.input_index for d in driver.drops()] == [0, 1]
    assert [d.reason for d in driver.drops()] == [api.DropReason.NULL_KEY] * 2
    assert [d.reason.code for d in driver.drops()] == ["null_key"] * 2
    assert driver.create_output_topic("output").is_empty()


def test_read_key_values_to_map_keeps_the_last_value_and_refuses_null_keys():
    b = StreamsBuilder()
    b.table("left").left_join(b.table("right"), "concat").to_stream().to("output")
    driver = TopologyTestDriver(b.build())
    left, right = driver.create_input_topic("left"), driver.create_input_topic("right")
    out = driver.create_output_topic("output")
    left.pipe_key_value_list([("a", "A"), ("b", "B")], start_ts=1, advance_ms=1)
    right.pipe_input("a", "x", ts=5)
    left.pipe_input("b", None, ts=6)
    assert out.read_key_values_to_map() == {"a": "A+x", "b": None}
    assert out.read_key_values_to_list() == []


def test_explanations_only_when_asked():
    for explain in (False, True):
        driver = stream_stream_driver(explain=explain)
        driver.create_input_topic("left").pipe_input("k", "A", ts=3)
        driver.create_input_topic("right").pipe_input("k", "a", ts=4)
        driver.create_input_topic("left").pipe_input(None, "N", ts=5)
        rec = driver.create_output_topic("output").read_record()
        (drop,) = driver.drops()
        assert drop.input_index == 2
        if explain:
            assert rec.why is not None and rec.why.text and drop.why is not None and drop.why.text
            assert [s.input_index for s in rec.why.joined if s.side == "left"] == [0]
        else:
            assert rec.why is None and drop.why is None


def test_old_values_are_reported_when_sent():
    b = StreamsBuilder()
    b.table("left").join(b.table("right"), "concat").enable_sending_old_values().to_stream().to("output")
    driver = TopologyTestDriver(b.build())
    driver.create_input_topic("right").pipe_input("k", "x", ts=1)
    left = driver.create_input_topic("left")
    left.pipe_input("k", "A", ts=2)
    left.pipe_input("k", "B", ts=3)
    out = driver.create_output_topic("output").read_records_to_list()
    assert [(r.value, r.old_value) for r in out] == [("A+x", None), ("B+x", "A+x")]


@pytest.mark.parametrize("release, first_emit", [("3.4", [("a", 0)]), ("3.9", [])])
def test_a_throttled_emit_waits_for_the_wall_clock(release, first_emit):
    """Kafka's driver before 3.8 kept the 1000 ms outer-join emit interval: after a scan, unjoined
    records wait until the wall clock moves. In 3.8+ the very first record's scan already uses up
    the slot (its early-exit test overflows on minTime = Long.MAX_VALUE, KAFKA-15417), so A waits too."""
    def run(emit_interval_ms, advance_before_last):
        driver = stream_stream_driver("left", JoinWindows.of_time_difference_with_no_grace(10), release=release,
                                      emit_interval_ms=emit_interval_ms)
        left, out = driver.create_input_topic("left"), driver.create_output_topic("output")
        reads = []
        for i, (key, value, ts) in enumerate([("a", "A", 0), ("b", "B", 20), ("c", "C", 40), ("d", "D", 60)]):
            if i == 3:
                driver.advance_wall_clock_time(advance_before_last)
            left.pipe_input(key, value, ts=ts)
            reads.append([(r.key, r.ts) for r in out.read_records_to_list()])
        return reads

    assert run(0, 0) == [[], [("a", 0)], [("b", 20)], [("c", 40)]]
    assert run(1000, 999) == [[], first_emit, [], []]
    late = [] if first_emit else [("a", 0)]
    assert run(1000, 1000) == [[], first_emit, [], late + [("b", 20), ("c", 40)]]


def test_kafka_would_fail_stops_the_driver():
    b = StreamsBuilder()
    b.stream("left").left_join(b.table("right", _versioned(10)), "pair", Joined.with_grace_period(5)).to("output")
    driver = TopologyTestDriver(b.build(), release="3.9")
    left = driver.create_input_topic("left")
    left.pipe_input("k", "A", ts=1)
    with pytest.raises(KafkaWouldFail) as info:
        left.pipe_input(None, "B", ts=2)
    assert info.value.input_index == 1 and info.value.code.code == "grace_buffer_null_key"
    with pytest.raises(KafkaWouldFail):
        left.pipe_input("k", "C", ts=3)


def test_a_negative_timestamp_is_rejected_like_kafkas_test_record():
    # TestRecord(key, value, headers, Long timestampMs) throws IllegalArgumentException: the record
    # never reaches the driver, which stays usable (no input index is used up)
    driver = stream_stream_driver()
    left = driver.create_input_topic("left")
    left.pipe_input("k", "A", ts=0)
    with pytest.raises(IllegalArgumentError, match="Invalid timestamp: -1"):
        left.pipe_input("k", "B", ts=-1)
    assert left.pipe_input("k", "C", ts=1) == 1


@pytest.mark.parametrize("key, value, ts, message", [
    ("k", "B", 2 ** 63, "Invalid timestamp: 9223372036854775808. A timestamp is a Java long"),
    ("k", float("nan"), 1, "left: record value: nan is not a JSON number"),
    ("k", {"a": [1, float("-inf")]}, 1, r"left: record value.a\[1\]: -inf is not a JSON number"),
    ({1, 2}, "B", 1, "left: record key: a set is no JSON value: use text"),
])
def test_a_record_no_kafka_serde_could_write_is_rejected_and_the_driver_stays_usable(key, value, ts, message):
    driver = stream_stream_driver()
    left = driver.create_input_topic("left")
    left.pipe_input("k", "A", ts=0)
    with pytest.raises(IllegalArgumentError, match=message):
        left.pipe_input(key, value, ts=ts)
    assert left.pipe_input("k", "C", ts=2 ** 63 - 1) == 1  # Long.MAX itself is a timestamp


def test_malformed_record_lists_are_named_not_unpacked():
    driver = stream_stream_driver()
    left = driver.create_input_topic("left")
    with pytest.raises(IllegalArgumentError, match=r"pipe_key_value_list: element 1 must be a \(key, value\) pair"):
        left.pipe_key_value_list([("k", "A"), ("k", "B", 3)], start_ts=0)
    with pytest.raises(IllegalArgumentError, match="pipe_record_list: element 0 must be a TestRecord, got"):
        left.pipe_record_list([("k", "A")])
    assert left.pipe_input("k", "C", ts=1) == 1  # the pair before the bad one was piped


def test_driver_misuse_raises():
    with pytest.raises(TypeError):
        TopologyTestDriver(parsed({**TT, "join": "inner"}))
    topology = Topology(parsed({**TT, "join": "inner"}))
    with pytest.raises(IllegalArgumentError, match="store"):
        TopologyTestDriver(topology, store="memory")
    with pytest.raises(KssimError, match="not modelled"):
        TopologyTestDriver(topology, release="4.4")
    driver = TopologyTestDriver(topology, store="in_memory")
    with pytest.raises(IllegalArgumentError, match="Unknown topic: input"):
        driver.create_input_topic("input")
    with pytest.raises(IllegalArgumentError, match="Unknown topic: result"):
        driver.create_output_topic("result")
    with pytest.raises(TypeError):
        driver.create_input_topic("left").pipe_input("k", "v", ts="3")
    with pytest.raises(IllegalArgumentError, match="advance"):
        driver.advance_wall_clock_time(-1)
    with TopologyTestDriver(topology) as closing:
        pass
    with pytest.raises(IllegalStateError, match="closed"):
        closing.create_input_topic("left").pipe_input("k", "v", ts=1)


# --- saving what was built as a scenario file --------------------------------------------------------

def test_to_scenario_saves_a_file_that_runs_like_the_driver(tmp_path):
    b = StreamsBuilder()
    b.stream("left").outer_join(b.stream("right"), ValueJoiner.concat("|"),
                                JoinWindows.of_time_difference_and_grace(5, 2)).to("output")
    topology = b.build()
    inputs = [("left", "k", "A", 1), ("right", "k", "a", 3), ("left", "j", "B", 4), ("right", "k", "b", 30)]
    driver = TopologyTestDriver(topology, release="3.7", store="in_memory")
    for topic, key, value, ts in inputs:
        driver.create_input_topic(topic).pipe_input(key, value, ts=ts)
    records = driver.create_output_topic("output").read_records_to_list()
    assert records, "the case emits"
    doc = topology.to_scenario(inputs, name="saved", release="3.7", store="in_memory", expected=records,
                               checkpoints=range(len(inputs)))
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc, indent=1))
    scenario = load_scenario(path)
    assert scenario.topology == topology.spec and scenario.release == "3.7" and scenario.config.store == "in_memory"
    assert [e.after_input for e in scenario.expected] == [r.input_index for r in records]
    assert compare_outputs(scenario, run_scenario(scenario).outputs) is None
    # and a different output would not pass
    doc["expected"][0]["value"] = "other"
    assert compare_outputs(scenario_from_dict(doc), run_scenario(scenario).outputs) is not None


def test_a_callable_joiner_cannot_be_saved():
    b = StreamsBuilder()
    b.table("left").join(b.table("right"), lambda l, r: l).to_stream().to("output")
    with pytest.raises(UnsavableTopologyError, match="callable"):
        b.build().to_scenario([], name="x")
    assert "<callable" in b.build().describe()


def test_to_scenario_rejects_what_a_scenario_file_cannot_hold():
    topology = Topology(parsed({**TT, "join": "inner"}))
    with pytest.raises(ScenarioError, match=r"inputs\[0\]\.ts"):
        topology.to_scenario([("left", "k", "v", -1)], name="x")
    with pytest.raises(ScenarioError, match="not modelled"):
        topology.to_scenario([], name="x", release="5.0")
    with pytest.raises(IllegalArgumentError, match="JSON"):
        topology.to_scenario([("left", "k", {1, 2}, 1)], name="x")
    with pytest.raises(ScenarioError, match="topology.window_api"):
        Topology(_ss("inner", JoinWindows.of_time_difference_with_no_grace(1))).to_scenario([], name="x", release="3.0")
