"""The Python API for windowed aggregations, windowed-table joins and suppress: it builds exactly
the specs scenario files parse to, rejects what Kafka Streams' DSL rejects, runs a user's Python
callables, and its driver reproduces Kafka's verified outputs (the digest's examples, Kafka's
SuppressScenarioTest, the windowed conformance corpus) record for record."""
from __future__ import annotations

import datetime
import functools
import json
import os

import pytest

from kssim.reference import api
from kssim.reference.api import (
    BufferConfig, EmitStrategy, IllegalArgumentError, IllegalStateError, KeyValueMapper, Materialized,
    SessionWindows, SlidingWindows, Stores, StreamsBuilder, Suppressed, TestRecord, TimeWindows, Topology,
    TopologyError, TopologyTestDriver, UnsavableTopologyError, ValueJoiner, Windowed,
)
from kssim.reference.model.aggregations import named_aggregation
from kssim.reference.model.codes import DropReason
from kssim.reference.model.compare import canonical, compare_outputs
from kssim.reference.model.errors import KafkaWouldFail
from kssim.reference.model.records import OutputRecord, RunResult
from kssim.reference.model.scenario import find_scenario_files, load_scenario, scenario_from_dict
from kssim.reference.model.topology import (
    SessionAggregateSpec, SlidingAggregateSpec, SuppressBufferSpec, SuppressSpec, TableTableJoinSpec, TimeWindowSpec,
    WindowedTableJoinSpec, parse_topology,
)
from kssim.reference.runtime.engine import run_scenario

from kssim_testing import BUNDLED, CONFORMANCE, assert_passes  # noqa: E402

WINDOWED_OPERATORS = ("session_aggregate", "window_aggregate", "sliding_aggregate", "windowed_table_join")
METHODS = {"inner": "join", "left": "left_join", "outer": "outer_join"}


def parsed(topology: dict, release: str = "3.9"):
    """The spec a scenario file with this ``topology`` object parses to."""
    doc = {"format": "kssim-scenario/1", "name": "t", "semantics": release, "topology": topology, "inputs": []}
    return scenario_from_dict(doc).topology


# --- the test's own mapping from a spec to the API calls a Kafka user would write ----------------

def _time_windows(w: TimeWindowSpec) -> TimeWindows:
    if w.grace_ms is None:
        windows = TimeWindows.of(w.size_ms)
    elif w.grace_ms == 0:
        windows = TimeWindows.of_size_with_no_grace(w.size_ms)
    else:
        windows = TimeWindows.of_size_and_grace(w.size_ms, w.grace_ms)
    return windows.advance_by(w.advance_ms)


def _windows(spec):
    if isinstance(spec, SessionAggregateSpec):
        if spec.grace_ms is None:
            return SessionWindows.with_(spec.gap_ms)
        return SessionWindows.of_inactivity_gap_and_grace(spec.gap_ms, spec.grace_ms)
    if isinstance(spec, SlidingAggregateSpec):
        return SlidingWindows.of_time_difference_and_grace(spec.time_difference_ms, spec.grace_ms)
    return _time_windows(spec.window)


def _java(value) -> str:
    """How Java's string concatenation prints a JSON value of the corpus."""
    return "null" if value is None else str(value)


#: Python callables doing what each named aggregation does, as a user would write them
CALLABLES = {
    "count": dict(initializer=lambda: 0, aggregator=lambda k, v, agg: agg + 1, merger=lambda k, a, b: a + b),
    "string_adder": dict(initializer=lambda: "0", aggregator=lambda k, v, agg: f"{agg}+{_java(v)}",
                         merger=lambda k, a, b: f"{a}+{b}"),
    "string_reduce": dict(reducer=lambda agg, v: f"{_java(agg)}+{_java(v)}"),
}


def _aggregated(windowed, aggregation, merge_separator="+", materialized=None, callables=False):
    """``count()`` / ``aggregate(...)`` / ``reduce(...)`` of ``aggregation`` on ``windowed``."""
    session = isinstance(windowed, api.SessionWindowedKStream)
    if callables:
        c = CALLABLES[aggregation]
        if "reducer" in c:
            return windowed.reduce(c["reducer"], materialized)
        if session:
            return windowed.aggregate(c["initializer"], c["aggregator"], c["merger"], materialized)
        return windowed.aggregate(c["initializer"], c["aggregator"], materialized)
    if aggregation == "count" and merge_separator == "+":
        return windowed.count(materialized)
    if named_aggregation(aggregation).is_reduce:
        return windowed.reduce(aggregation, materialized, merge_separator=merge_separator)
    return windowed.aggregate(aggregation, materialized=materialized, merge_separator=merge_separator)


def _suppressed(table, spec):
    s = spec.suppress
    if s is None:
        return table
    b = s.buffer
    buffer = BufferConfig.unbounded()
    if b.max_records is not None:
        buffer = buffer.with_max_records(b.max_records)
    if b.max_bytes is not None:
        buffer = buffer.with_max_bytes(b.max_bytes)
    buffer = buffer.shut_down_when_full() if b.when_full == "shut_down" else buffer.emit_early_when_full()
    if s.until == "window_close":
        return table.suppress(Suppressed.until_window_closes(buffer))
    return table.suppress(Suppressed.until_time_limit(s.time_limit_ms, buffer))


def _table(b, topic, table):
    if not table.versioned:
        return b.table(topic)
    return b.table(topic, Materialized.as_(Stores.persistent_versioned_key_value_store("s", table.history_retention_ms)))


def api_topology(spec, callables=False) -> Topology:
    """Build a windowed ``spec`` (or a suppressed table-table join) with the API calls a Kafka user
    would write; ``callables``: with Python callables in place of the named aggregations."""
    b = StreamsBuilder()
    if isinstance(spec, TableTableJoinSpec):
        result = getattr(_table(b, "left", spec.left_table), METHODS[spec.join])(
            _table(b, "right", spec.right_table), ValueJoiner(spec.joiner, spec.joiner_separator))
    elif isinstance(spec, WindowedTableJoinSpec):
        windows = _time_windows(spec.window)
        left = _aggregated(b.stream("left").group_by_key().windowed_by(windows), spec.left_aggregation,
                           spec.merge_separator, callables=callables)
        right = _aggregated(b.stream("right").group_by_key().windowed_by(windows), spec.right_aggregation,
                            spec.merge_separator, callables=callables)
        if spec.shift_ms:
            right = right.to_stream().map(KeyValueMapper.shift_window(spec.shift_ms)).to_table()
        result = getattr(left, METHODS[spec.join])(right, ValueJoiner(spec.joiner, spec.joiner_separator))
    else:
        windowed = b.stream("input").group_by_key().windowed_by(_windows(spec))
        if spec.emit == "on_window_close":
            windowed = windowed.emit_strategy(EmitStrategy.on_window_close())
        materialized = Materialized.as_("store").with_retention(spec.retention_ms) \
            if spec.retention_ms is not None else None
        result = _aggregated(windowed, spec.aggregation, spec.merge_separator, materialized, callables)
    if spec.send_old_values:
        result.enable_sending_old_values()
    _suppressed(result, spec).to_stream().to("output")
    return b.build()


@functools.lru_cache(maxsize=None)
def windowed_scenarios():
    """Every windowed or suppressed scenario of the conformance corpus and of the project's own
    scenarios (``BUNDLED``): (path relative to the corpus or ``scenarios/...``, scenario)."""
    found = []
    for root, prefix in ((CONFORMANCE, ""), (BUNDLED, "scenarios/")):
        for path in find_scenario_files([root]):
            scenario = load_scenario(path)
            if scenario.topology.operator in WINDOWED_OPERATORS or getattr(scenario.topology, "suppress", None):
                found.append((prefix + os.path.relpath(path, root), scenario))
    return tuple(found)


def distinct_topologies():
    """One corpus file per distinct (topology, release): the shapes the API must build."""
    seen = {}
    for rel, scenario in windowed_scenarios():
        seen.setdefault((repr(scenario.topology), scenario.release), rel)
    return sorted(seen.values())


def corpus_scenario(rel):
    return dict(windowed_scenarios())[rel]


# --- the API builds the specs scenario files parse to ----------------------------------------------

def _agg(windows, build=lambda w: w.count(), emit=None):
    b = StreamsBuilder()
    w = b.stream("input").group_by_key().windowed_by(windows)
    if emit is not None:
        w = w.emit_strategy(emit)
    build(w).to_stream().to("output")
    return b.build().spec


def _wtj(join="join", windows=None, left=lambda w: w.count(), right=lambda w: w.count(), shift=None,
         joiner="pair", then=lambda t: t, right_windows=None):
    b = StreamsBuilder()
    windows = windows or TimeWindows.of_size_and_grace(10, 2)
    lt = left(b.stream("left").group_by_key().windowed_by(windows))
    rt = right(b.stream("right").group_by_key().windowed_by(right_windows or windows))
    if shift is not None:
        rt = rt.to_stream().map(KeyValueMapper.shift_window(shift)).to_table()
    then(getattr(lt, join)(rt, joiner)).to_stream().to("output")
    return b.build().spec


SA = {"operator": "session_aggregate"}
WA = {"operator": "window_aggregate"}
SL = {"operator": "sliding_aggregate"}
WTJ = {"operator": "windowed_table_join"}
UNTIL_CLOSE = Suppressed.until_window_closes(BufferConfig.unbounded())

EQUIVALENTS = [
    (lambda: _agg(SessionWindows.of_inactivity_gap_and_grace(10, 5)), {**SA, "gap_ms": 10, "grace_ms": 5}),
    (lambda: _agg(SessionWindows.of_inactivity_gap_with_no_grace(datetime.timedelta(seconds=1))),
     {**SA, "gap_ms": 1000, "grace_ms": 0}),
    (lambda: _agg(SessionWindows.with_(10)), {**SA, "gap_ms": 10, "grace_ms": None}),
    (lambda: _agg(SessionWindows.with_(10).grace(3)), {**SA, "gap_ms": 10, "grace_ms": 3}),
    (lambda: _agg(SessionWindows.of_inactivity_gap_and_grace(10, 5), lambda w: w.aggregate("string_adder"),
                  EmitStrategy.on_window_close()),
     {**SA, "gap_ms": 10, "grace_ms": 5, "aggregation": "string_adder", "emit": "on_window_close"}),
    (lambda: _agg(SessionWindows.of_inactivity_gap_and_grace(10, 5),
                  lambda w: w.aggregate("string_adder", merge_separator="|")),
     {**SA, "gap_ms": 10, "grace_ms": 5, "aggregation": "string_adder", "merge_separator": "|"}),
    (lambda: _agg(SessionWindows.of_inactivity_gap_and_grace(10, 5), lambda w: w.reduce("string_reduce")),
     {**SA, "gap_ms": 10, "grace_ms": 5, "aggregation": "string_reduce"}),
    (lambda: _agg(SessionWindows.of_inactivity_gap_and_grace(10, 5),
                  lambda w: w.aggregate("list", Materialized.with_retention(100))),
     {**SA, "gap_ms": 10, "grace_ms": 5, "aggregation": "list", "retention_ms": 100}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3).advance_by(5)),
     {**WA, "size_ms": 10, "advance_ms": 5, "grace_ms": 3}),
    (lambda: _agg(TimeWindows.of_size_with_no_grace(10)), {**WA, "size_ms": 10, "grace_ms": 0}),
    (lambda: _agg(TimeWindows.of(10)), {**WA, "size_ms": 10, "grace_ms": None}),
    (lambda: _agg(TimeWindows.of(10).advance_by(2).grace(4)), {**WA, "size_ms": 10, "advance_ms": 2, "grace_ms": 4}),
    # Kafka's advanceBy forgets that ofSizeAndGrace set the grace, so grace() may follow it
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 1).advance_by(5).grace(2)),
     {**WA, "size_ms": 10, "advance_ms": 5, "grace_ms": 2}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.aggregate("sum"), EmitStrategy.on_window_close()),
     {**WA, "size_ms": 10, "grace_ms": 3, "aggregation": "sum", "emit": "on_window_close"}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.count(Materialized.as_("c").with_retention(13)),
                  EmitStrategy.on_window_update()),
     {**WA, "size_ms": 10, "grace_ms": 3, "retention_ms": 13}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.count().enable_sending_old_values()),
     {**WA, "size_ms": 10, "grace_ms": 3, "send_old_values": True}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.count().suppress(UNTIL_CLOSE)),
     {**WA, "size_ms": 10, "grace_ms": 3, "suppress": {"until": "window_close"}}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3),
                  lambda w: w.count().suppress(UNTIL_CLOSE).enable_sending_old_values()),
     {**WA, "size_ms": 10, "grace_ms": 3, "send_old_values": True, "suppress": {"until": "window_close"}}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.count().suppress(
        Suppressed.until_window_closes(BufferConfig.max_records(3).shut_down_when_full()))),
     {**WA, "size_ms": 10, "grace_ms": 3,
      "suppress": {"until": "window_close", "buffer": {"max_records": 3, "when_full": "shut_down"}}}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.count().suppress(
        Suppressed.until_time_limit(5, BufferConfig.max_bytes(100).with_max_records(2)).with_name("s"))),
     {**WA, "size_ms": 10, "grace_ms": 3, "suppress": {"until": "time_limit", "time_limit_ms": 5, "buffer": {
         "max_records": 2, "max_bytes": 100, "when_full": "emit_early"}}}),
    (lambda: _agg(TimeWindows.of_size_and_grace(10, 3), lambda w: w.count().suppress(
        Suppressed.until_time_limit(datetime.timedelta(seconds=1), None))),
     {**WA, "size_ms": 10, "grace_ms": 3, "suppress": {"until": "time_limit", "time_limit_ms": 1000}}),
    (lambda: _agg(SlidingWindows.of_time_difference_and_grace(10, 5)), {**SL, "time_difference_ms": 10, "grace_ms": 5}),
    (lambda: _agg(SlidingWindows.of_time_difference_with_no_grace(10), lambda w: w.reduce("string_reduce"),
                  EmitStrategy.on_window_close()),
     {**SL, "time_difference_ms": 10, "grace_ms": 0, "aggregation": "string_reduce", "emit": "on_window_close"}),
    (lambda: _wtj(), {**WTJ, "join": "inner", "window": {"size_ms": 10, "grace_ms": 2}}),
    (lambda: _wtj("left_join", TimeWindows.of_size_and_grace(5, 0).advance_by(2), right=lambda w: w.aggregate(
        "string_adder"), shift=4, joiner=ValueJoiner.concat("-")),
     {**WTJ, "join": "left", "window": {"size_ms": 5, "advance_ms": 2, "grace_ms": 0}, "right_aggregation": "string_adder",
      "shift_ms": 4, "joiner": "concat", "joiner_separator": "-"}),
    (lambda: _wtj("outer_join", shift=7, then=lambda t: t.enable_sending_old_values().suppress(UNTIL_CLOSE)),
     {**WTJ, "join": "outer", "window": {"size_ms": 10, "grace_ms": 2}, "shift_ms": 7, "send_old_values": True,
      "suppress": {"until": "window_close"}}),
]


@pytest.mark.parametrize("build, topology", EQUIVALENTS, ids=[json.dumps(t, sort_keys=True) for _, t in EQUIVALENTS])
def test_api_builds_the_spec_of_the_equivalent_scenario(build, topology):
    assert build() == parsed(topology)


def test_a_table_table_join_result_can_be_suppressed_until_a_time_limit():
    b = StreamsBuilder()
    (b.table("left").left_join(b.table("right"), "concat")
     .suppress(Suppressed.until_time_limit(10, BufferConfig.max_records(2))).to_stream().to("output"))
    assert b.build().spec == parsed({"operator": "table_table_join", "join": "left", "joiner": "concat", "suppress": {
        "until": "time_limit", "time_limit_ms": 10, "buffer": {"max_records": 2, "when_full": "emit_early"}}})


def test_buffer_configs_follow_kafkas_strict_and_eager_types():
    assert BufferConfig.unbounded().spec == SuppressBufferSpec() and BufferConfig.unbounded().is_strict
    eager = BufferConfig.max_records(5)
    assert eager.spec == SuppressBufferSpec(max_records=5, when_full="emit_early") and not eager.is_strict
    assert BufferConfig.max_bytes(9).spec == SuppressBufferSpec(max_bytes=9, when_full="emit_early")
    strict = eager.shut_down_when_full().with_max_bytes(9)
    assert strict.spec == SuppressBufferSpec(5, 9, "shut_down") and strict.is_strict
    assert strict.emit_early_when_full().spec == SuppressBufferSpec(5, 9, "emit_early")
    assert strict.emit_early_when_full().with_no_bound().spec == SuppressBufferSpec()
    assert BufferConfig.unbounded().with_max_records(2).spec == SuppressBufferSpec(max_records=2)  # stays strict
    assert eager.with_logging_disabled() == eager == eager.with_logging_enabled({})
    assert api.Suppressed.BufferConfig is BufferConfig
    assert Suppressed.until_time_limit(3, eager).with_name("x") == Suppressed.until_time_limit(3, eager)


def test_named_and_callable_aggregations_make_the_specs_aggregation():
    init, add, merge = (lambda: 0), (lambda k, v, agg: agg + v), (lambda k, a, b: a + b)
    spec = _agg(SessionWindows.of_inactivity_gap_with_no_grace(5), lambda w: w.aggregate(init, add, merge))
    assert spec.aggregation.initializer is init and spec.aggregation.aggregator is add
    assert spec.aggregation.merger is merge and not spec.aggregation.is_reduce
    reducer = lambda a, v: a + v  # noqa: E731
    spec = _agg(TimeWindows.of_size_with_no_grace(5), lambda w: w.reduce(reducer))
    assert spec.aggregation.is_reduce and spec.aggregation.add("k", 2, 1) == 3 and spec.aggregation.add("k", 2, None) == 2
    assert spec.aggregation.merge("k", 1, 2) == 3
    given = named_aggregation("sum")
    assert _agg(TimeWindows.of_size_with_no_grace(5), lambda w: w.aggregate(given)).aggregation is given
    # a named aggregation's Materialized may come second, as Kafka's aggregate(initializer, aggregator, materialized)
    assert _agg(TimeWindows.of_size_and_grace(5, 1), lambda w: w.aggregate("sum", Materialized.with_retention(6))) == \
        parsed({**WA, "size_ms": 5, "grace_ms": 1, "aggregation": "sum", "retention_ms": 6})
    assert _agg(TimeWindows.of_size_with_no_grace(5), lambda w: w.aggregate("count")) == \
        _agg(TimeWindows.of_size_with_no_grace(5))


def test_emit_strategy_sets_the_strategy_of_the_windowed_stream_as_kafkas_does():
    b = StreamsBuilder()
    windowed = b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10))
    assert windowed.emit_strategy(EmitStrategy.on_window_close()) is windowed
    windowed.count().to_stream().to("output")
    assert b.build().spec.emit == "on_window_close"


@pytest.mark.parametrize("rel", distinct_topologies())
def test_every_corpus_windowed_topology_is_buildable_and_round_trips(rel):
    scenario = corpus_scenario(rel)
    spec = scenario.topology
    assert api_topology(spec).spec == spec
    # describe() is code that rebuilds it
    namespace = {name: getattr(api, name) for name in api.__all__}
    exec(Topology(spec).describe(), namespace)
    assert namespace["topology"].spec == spec
    # to_scenario writes the topology object a scenario file would hold
    doc = Topology(spec).to_scenario([], name="x", release=scenario.release)
    assert parse_topology(doc["topology"], lambda where, msg: AssertionError(f"{where}: {msg}")) == spec


@pytest.mark.parametrize("build", [b for b, _ in EQUIVALENTS], ids=[json.dumps(t, sort_keys=True) for _, t in EQUIVALENTS])
def test_every_equivalent_round_trips_through_describe_and_to_scenario(build):
    spec = build()
    namespace = {name: getattr(api, name) for name in api.__all__}
    exec(Topology(spec).describe(), namespace)
    assert namespace["topology"].spec == spec
    doc = Topology(spec).to_scenario([], name="x", release="3.9")
    assert scenario_from_dict(doc).topology == spec


def test_a_table_table_join_with_suppress_round_trips():
    b = StreamsBuilder()
    (b.table("left").outer_join(b.table("right"), "pair").enable_sending_old_values()
     .suppress(Suppressed.until_time_limit(10, BufferConfig.unbounded().emit_early_when_full())).to_stream().to("output"))
    spec = b.build().spec
    assert isinstance(spec, TableTableJoinSpec) and spec.send_old_values
    assert spec.suppress == SuppressSpec("time_limit", 10, SuppressBufferSpec(when_full="emit_early"))
    namespace = {name: getattr(api, name) for name in api.__all__}
    exec(Topology(spec).describe(), namespace)
    assert namespace["topology"].spec == spec
    assert scenario_from_dict(Topology(spec).to_scenario([], name="x")).topology == spec


# --- misuse raises, as Kafka's DSL does -----------------------------------------------------------

@pytest.mark.parametrize("make, kind, message", [
    (lambda: TimeWindows.of_size_with_no_grace(0), "TimeWindows", "window size must be above 0 ms, got 0"),
    (lambda: TimeWindows.of(-1), "TimeWindows", "window size must be above 0 ms, got -1"),
    (lambda: TimeWindows.of_size_and_grace(10, -1), "TimeWindows", "grace period must not be negative"),
    (lambda: TimeWindows.of(10).grace(-1), "TimeWindows", "grace period must not be negative"),
    (lambda: TimeWindows.of_size_with_no_grace(10).advance_by(0), "TimeWindows", "advance must be above 0"),
    (lambda: TimeWindows.of_size_with_no_grace(10).advance_by(11), "TimeWindows", "at most the window size 10 ms, got 11"),
    (lambda: SessionWindows.of_inactivity_gap_with_no_grace(0), "SessionWindows", "inactivity gap must be above 0"),
    (lambda: SessionWindows.of_inactivity_gap_and_grace(5, -1), "SessionWindows", "grace period must not be negative"),
    (lambda: SessionWindows.with_(5).grace(-1), "SessionWindows", "grace period must not be negative"),
    (lambda: SlidingWindows.of_time_difference_with_no_grace(-1), "SlidingWindows", "time difference must not be negative"),
    (lambda: SlidingWindows.of_time_difference_and_grace(5, -1), "SlidingWindows", "grace period must not be negative"),
])
def test_bad_windows_are_rejected_when_made(make, kind, message):
    with pytest.raises(TopologyError) as info:
        make()
    assert info.value.field == kind and message in info.value.message


def test_windows_that_kafka_allows_at_the_edges():
    assert TimeWindows.of_size_with_no_grace(10).advance_by(10).spec == TimeWindowSpec(10, 10, 0)
    assert TimeWindows.of_size_with_no_grace(1).size() == 1
    assert SlidingWindows.of_time_difference_with_no_grace(0).time_difference_ms == 0
    assert SessionWindows.of_inactivity_gap_with_no_grace(1).inactivity_gap() == 1


def test_grace_after_a_grace_factory_raises_like_kafka():
    with pytest.raises(IllegalStateError, match="ofSizeAndGrace or ofSizeWithNoGrace"):
        TimeWindows.of_size_and_grace(10, 1).grace(2)
    with pytest.raises(IllegalStateError, match="ofSizeAndGrace"):
        TimeWindows.of_size_with_no_grace(10).grace(2)
    with pytest.raises(IllegalStateError, match="ofInactivityGapAndGrace or ofInactivityGapWithNoGrace"):
        SessionWindows.of_inactivity_gap_with_no_grace(10).grace(2)
    assert TimeWindows.of(10).grace(1).grace(2).grace_ms == 2
    assert SessionWindows.with_(10).grace(1).grace(2).grace_ms == 2


def test_durations_are_whole_milliseconds():
    assert TimeWindows.of_size_and_grace(datetime.timedelta(seconds=1), datetime.timedelta(0)).size_ms == 1000
    with pytest.raises(TypeError):
        TimeWindows.of_size_with_no_grace(1.5)
    with pytest.raises(IllegalArgumentError):
        SessionWindows.of_inactivity_gap_with_no_grace(datetime.timedelta(microseconds=10))
    with pytest.raises(IllegalArgumentError, match="Retention must not be negative"):
        Materialized.with_retention(-1)
    with pytest.raises(TypeError):
        BufferConfig.max_records(1.0)


def _time_windowed(windows=None):
    return StreamsBuilder().stream("input").group_by_key().windowed_by(windows or TimeWindows.of_size_with_no_grace(10))


def _session_windowed():
    return StreamsBuilder().stream("input").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5))


def test_aggregation_arguments_are_checked_like_kafkas_overloads():
    with pytest.raises(TypeError, match="sessionMerger can't be null"):
        _session_windowed().aggregate(lambda: 0, lambda k, v, a: a)
    with pytest.raises(TypeError, match="initializer can't be null"):
        _session_windowed().aggregate(None, lambda k, v, a: a, lambda k, a, b: a)
    with pytest.raises(TypeError, match="aggregator can't be null"):
        _time_windowed().aggregate(lambda: 0)
    with pytest.raises(TypeError, match="reducer can't be null"):
        _time_windowed().reduce(None)
    with pytest.raises(TypeError, match="takes no merger"):
        _time_windowed().aggregate(lambda: 0, lambda k, v, a: a, lambda k, a, b: a)
    with pytest.raises(IllegalArgumentError, match="a reduce: use reduce"):
        _time_windowed().aggregate("string_reduce")
    with pytest.raises(IllegalArgumentError, match="use aggregate"):
        _time_windowed().reduce("sum")
    with pytest.raises(IllegalArgumentError, match="unknown aggregation 'avg'"):
        _time_windowed().aggregate("avg")
    with pytest.raises(TypeError, match="brings its own aggregator"):
        _time_windowed().aggregate("sum", lambda k, v, a: a)
    with pytest.raises(TypeError, match="merge_separator"):
        _session_windowed().aggregate(lambda: "", lambda k, v, a: a, lambda k, a, b: a, merge_separator="|")
    with pytest.raises(TypeError, match="Materialized"):
        _time_windowed().count("store")
    with pytest.raises(TypeError, match="key-value store supplier"):
        _time_windowed().count(Materialized.as_(Stores.persistent_versioned_key_value_store("s", 10)))
    with pytest.raises(TypeError, match="windowed_by takes"):
        StreamsBuilder().stream("input").group_by_key().windowed_by(api.JoinWindows.of(5))
    with pytest.raises(TypeError, match="EmitStrategy"):
        _time_windowed().emit_strategy("on_window_close")


def test_store_retention_below_the_window_is_rejected_and_equal_is_allowed():
    with pytest.raises(TopologyError, match="retention 12 ms is below size_ms \\+ grace_ms = 13 ms"):
        _time_windowed(TimeWindows.of_size_and_grace(10, 3)).count(Materialized.with_retention(12))
    assert _time_windowed(TimeWindows.of_size_and_grace(10, 3)).count(Materialized.with_retention(13)) is not None
    with pytest.raises(TopologyError, match="gap_ms \\+ grace_ms"):
        _session_windowed().count(Materialized.with_retention(4))
    with pytest.raises(TopologyError, match="2 \\* time_difference_ms"):
        _time_windowed(SlidingWindows.of_time_difference_and_grace(5, 1)).count(Materialized.with_retention(10))


def test_suppress_arguments_are_checked():
    with pytest.raises(TypeError, match="strict buffer"):
        Suppressed.until_window_closes(BufferConfig.max_records(3))
    assert Suppressed.until_window_closes(None).spec == SuppressSpec("window_close")
    table = _time_windowed().count()
    # Kafka checks no number: a negative limit evicts at once, a negative bound is always exceeded
    assert table.suppress(Suppressed.until_time_limit(-1, None)) is not None
    assert table.suppress(Suppressed.until_window_closes(BufferConfig.unbounded().with_max_records(-1))) is not None
    # a suppressed table suppressed again, or a source table suppressed: topology graphs
    assert table.suppress(UNTIL_CLOSE).suppress(UNTIL_CLOSE)._node is None
    with pytest.raises(TypeError, match="Suppressed"):
        table.suppress(BufferConfig.unbounded())
    b = StreamsBuilder()
    joined = b.table("left").join(b.table("right"), "pair")
    with pytest.raises(TopologyError, match="only defined for windowed computations"):
        joined.suppress(UNTIL_CLOSE)
    assert b.table("other").suppress(Suppressed.until_time_limit(1, None))._node is None


def test_windowed_table_joins_kssim_cannot_describe_are_rejected():
    def fails(match, **kwargs):
        with pytest.raises(TopologyError, match=match):
            _wtj(**kwargs)

    fails("same TimeWindows", right_windows=TimeWindows.of_size_and_grace(10, 3))
    fails("TimeWindows only", windows=SessionWindows.of_inactivity_gap_with_no_grace(5))
    fails("TimeWindows only", windows=SlidingWindows.of_time_difference_with_no_grace(5))
    fails("emit strategy", left=lambda w: w.emit_strategy(EmitStrategy.on_window_close()).count())
    fails("a retention", right=lambda w: w.count(Materialized.with_retention(100)))
    fails("sending old values", left=lambda w: w.count().enable_sending_old_values())
    fails("suppressed", left=lambda w: w.count().suppress(UNTIL_CLOSE))
    fails("shift of 0", shift=0)
    b = StreamsBuilder()
    counts = b.stream("left").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5)).count()
    with pytest.raises(TopologyError, match="one of each"):
        counts.join(b.table("right"), "pair")
    assert counts.to_stream().map(lambda k, v: (k, v))._node is None  # a graph's map, giving plain keys
    with pytest.raises(TopologyError, match="time-windowed"):
        b.stream("other").map(KeyValueMapper.shift_window(3))
    with pytest.raises(TopologyError, match="toTable only after"):
        counts.to_stream().to_table()


def _build_error(setup):
    b = StreamsBuilder()
    setup(b)
    with pytest.raises(TopologyError) as info:
        b.build()
    return info.value.message


def _count(b, topic="input"):
    return b.stream(topic).group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5)).count()


def _builds_a_graph(setup):
    b = StreamsBuilder()
    setup(b)
    return b.build().is_graph


def test_topologies_that_are_not_one_aggregation_of_input_into_output_are_graphs_or_rejected():
    assert "exactly once" in _build_error(lambda b: _count(b))
    # before topology graphs these were rejected; they are Kafka programs, so they are graphs now
    assert _builds_a_graph(lambda b: (_count(b).to_stream().to("output"), _count(b, "left")))
    assert _builds_a_graph(lambda b: _count(b, "left").to_stream().to("output"))
    assert _builds_a_graph(
        lambda b: b.table("input").to_stream().group_by_key().windowed_by(TimeWindows.of(5)).count()
        .to_stream().to("output"))
    assert _builds_a_graph(lambda b: _count(b).to_stream().to("result"))
    assert _builds_a_graph(lambda b: (b.stream("extra"), _count(b).to_stream().to("output")))

    def windowed_join_of(left, right):
        def setup(b):
            lt = _count(b, left)
            rt = _count(b, right)
            lt.join(rt, "pair").to_stream().to("output")
        return setup
    assert "left windowed table's input must be read from topic 'left'" in _build_error(windowed_join_of("a", "right"))
    assert "right windowed table's input must be read from topic 'right'" in _build_error(windowed_join_of("left", "b"))

    def sink_of_an_input(b):
        lt = _count(b, "left")
        lt.join(_count(b, "right"), "pair")
        lt.to_stream().to("output")
    assert "not the join's result" in _build_error(sink_of_an_input)


def test_a_dangling_suppress_changes_nothing():
    b = StreamsBuilder()
    counts = _count(b)
    counts.suppress(UNTIL_CLOSE)  # built but not written anywhere, as Kafka would leave it
    counts.to_stream().to("output")
    assert b.build().spec.suppress is None


@pytest.mark.parametrize("release, build, field", [
    ("3.9", lambda: _agg(TimeWindows.of(10)), None),
    ("4.0", lambda: _agg(TimeWindows.of(10)), "grace_ms"),
    ("4.0", lambda: _agg(SessionWindows.with_(10)), "grace_ms"),
    ("3.3", lambda: _agg(TimeWindows.of_size_with_no_grace(10), emit=EmitStrategy.on_window_close()), None),
    ("3.2", lambda: _agg(TimeWindows.of_size_with_no_grace(10), emit=EmitStrategy.on_window_close()), "emit"),
    ("2.7", lambda: _agg(SlidingWindows.of_time_difference_with_no_grace(10)), None),
    ("2.6", lambda: _agg(SlidingWindows.of_time_difference_with_no_grace(10)), "operator"),
    ("2.0", lambda: _agg(TimeWindows.of(10)), None),
    ("2.0", lambda: _agg(TimeWindows.of(10).grace(1)), "grace_ms"),
    ("2.0", lambda: _agg(TimeWindows.of(10), lambda w: w.count().suppress(UNTIL_CLOSE)), "suppress"),
    ("2.0", lambda: _agg(TimeWindows.of(10), lambda w: w.count(Materialized.with_retention(86_400_000))),
     "retention_ms"),
    ("0.10.1", lambda: _agg(SessionWindows.with_(10)), "operator"),
    ("0.10.2", lambda: _agg(SessionWindows.with_(10)), None),
])
def test_the_driver_checks_the_apis_of_its_release(release, build, field):
    topology = Topology(build())
    if field is None:
        assert TopologyTestDriver(topology, release=release).release == release
        return
    with pytest.raises(TopologyError) as info:
        TopologyTestDriver(topology, release=release)
    assert field in info.value.field and release in info.value.message


def test_legacy_builders_are_checked_under_the_last_release_that_had_them():
    # TimeWindows.of(10) is accepted when made (the newest API, 4.x, has no such builder, 3.9 had it)
    assert TimeWindows.of(10).grace_ms is None
    with pytest.raises(TopologyError, match="advance"):
        TimeWindows.of(10).advance_by(20)


# --- the driver: Kafka's verified outputs -----------------------------------------------------------

def _drive(topology, inputs, release="3.9", store="rocksdb", topic="input", **kwargs):
    """Pipe ``(key, value, ts)`` inputs; the records read after each, and the driver."""
    driver = TopologyTestDriver(topology, release=release, store=store, **kwargs)
    source, out = driver.create_input_topic(topic), driver.create_output_topic("output")
    reads = []
    for key, value, ts in inputs:
        source.pipe_input(key, value, ts=ts)
        reads.append([(r.key, r.value, r.ts) for r in out.read_records_to_list()])
    return reads, driver


def _count_topology(windows, emit=None, suppressed=None, store_retention=None):
    b = StreamsBuilder()
    w = b.stream("input").group_by_key().windowed_by(windows)
    if emit is not None:
        w = w.emit_strategy(emit)
    table = w.count(Materialized.with_retention(store_retention) if store_retention else None)
    if suppressed is not None:
        table = table.suppress(suppressed)
    table.to_stream().to("output")
    return b.build()


def W(key, start, end):  # noqa: N802 (reads like Kafka's Windowed)
    return Windowed(key, start, end)


#: digest C.1 (hop 10/5, grace 3, count), verified against Kafka: outputs after each input
HOPPING_INPUTS = [("k", "v", ts) for ts in (3, 7, 12, 25, 14, 9, 30, 2)]
HOPPING_OUTPUTS = [
    [(W("k", 0, 10), 1, 3)],
    [(W("k", 0, 10), 2, 7), (W("k", 5, 15), 1, 7)],
    [(W("k", 5, 15), 2, 12), (W("k", 10, 20), 1, 12)],
    [(W("k", 20, 30), 1, 25), (W("k", 25, 35), 1, 25)],
    [],
    [],
    [(W("k", 25, 35), 2, 30), (W("k", 30, 40), 1, 30)],
    [],
]


def test_hopping_windows_give_the_digests_verified_table():
    reads, driver = _drive(_count_topology(TimeWindows.of_size_and_grace(10, 3).advance_by(5)), HOPPING_INPUTS)
    assert reads == HOPPING_OUTPUTS
    drops = driver.drops()
    assert sorted({d.input_index for d in drops}) == [4, 5, 7]  # @14, @9, @2: too late for every window
    assert {d.reason for d in drops} == {DropReason.EXPIRED_WINDOW}


def test_a_users_aggregator_and_reducer_give_what_the_named_ones_give():
    windows = TimeWindows.of_size_and_grace(10, 3).advance_by(5)
    b = StreamsBuilder()
    (b.stream("input").group_by_key().windowed_by(windows)
     .aggregate(lambda: 0, lambda key, value, count: count + 1).to_stream().to("output"))
    assert _drive(b.build(), HOPPING_INPUTS)[0] == HOPPING_OUTPUTS
    # a reducer concatenating values, against the named string_reduce
    named, mine = StreamsBuilder(), StreamsBuilder()
    named.stream("input").group_by_key().windowed_by(windows).reduce("string_reduce").to_stream().to("output")
    mine.stream("input").group_by_key().windowed_by(windows).reduce(lambda a, v: f"{a}+{v}").to_stream().to("output")
    inputs = [("k", f"v{ts}", ts) for _, _, ts in HOPPING_INPUTS]
    got = _drive(mine.build(), inputs)[0]
    assert got == _drive(named.build(), inputs)[0]
    assert got[1] == [(W("k", 0, 10), "v3+v7", 7), (W("k", 5, 15), "v7", 7)]


def test_windowed_keys_are_hashable_and_read_into_a_map():
    driver = TopologyTestDriver(_count_topology(TimeWindows.of_size_and_grace(10, 3).advance_by(5)), release="3.9")
    source, out = driver.create_input_topic("input"), driver.create_output_topic("output")
    source.pipe_key_value_list([("a", "x"), ("b", "y"), ("a", "z")], start_ts=1, advance_ms=1)
    assert out.read_key_values_to_map() == {W("a", 0, 10): 2, W("b", 0, 10): 1}
    source.pipe_input("a", "w", ts=6)
    rec = out.read_record()
    assert rec == TestRecord(W("a", 0, 10), 3, 6) and rec.key.as_dict() == {"key": "a", "start": 0, "end": 10}
    assert rec.input_index == 3 and Windowed.from_dict(rec.key.as_dict()) == rec.key


#: digest B.2 (gap 10, grace 5, count), verified: [0,5] is hidden by the store's retention when @12 arrives
SESSION_INPUTS = [("k", "v", ts) for ts in (0, 5, 20, 12, 100)]


def test_sessions_merge_as_the_digest_verified():
    reads, _ = _drive(_count_topology(SessionWindows.of_inactivity_gap_and_grace(10, 5)), SESSION_INPUTS)
    assert reads[:4] == [
        [(W("k", 0, 0), 1, 0)],
        [(W("k", 0, 0), None, 0), (W("k", 0, 5), 2, 5)],
        [(W("k", 20, 20), 1, 20)],
        [(W("k", 20, 20), None, 20), (W("k", 12, 20), 2, 20)],
    ]


def test_a_late_record_that_merges_into_a_live_session_is_accepted():
    """Digest B.2: stream time 100, gap 10, grace 5 (close 85): @80 alone is dropped, @84 and then
    @76 merge into the session of @86 and are accepted."""
    inputs = [("k", "v", ts) for ts in (100, 80, 86, 84, 76)]
    reads, driver = _drive(_count_topology(SessionWindows.of_inactivity_gap_and_grace(10, 5)), inputs)
    assert reads == [
        [(W("k", 100, 100), 1, 100)],
        [],
        [(W("k", 86, 86), 1, 86)],
        [(W("k", 86, 86), None, 86), (W("k", 84, 86), 2, 86)],
        [(W("k", 84, 86), None, 86), (W("k", 76, 86), 3, 86)],
    ]
    assert [(d.input_index, d.reason) for d in driver.drops()] == [(1, DropReason.EXPIRED_WINDOW)]


@pytest.mark.parametrize("store, emitted", [
    ("rocksdb", [(W("k", 0, 5), 2, 5), (W("k", 12, 20), 2, 20)]),
    ("in_memory", []),  # its retention expiry removes the sessions before the fetch (digest B.4)
])
def test_session_emit_on_window_close_as_the_digest_verified(store, emitted):
    reads, _ = _drive(_count_topology(SessionWindows.of_inactivity_gap_and_grace(10, 5),
                                      EmitStrategy.on_window_close()), SESSION_INPUTS, store=store)
    assert reads == [[], [], [], [], emitted]


def test_sliding_windows_give_the_digests_verified_table():
    inputs = [("k", "v", ts) for ts in (3, 8, 20, 15, 40, 22, 19, 30)]
    reads, driver = _drive(_count_topology(SlidingWindows.of_time_difference_and_grace(10, 5)), inputs)
    assert reads == [
        [(W("k", 0, 10), 1, 3)],
        [(W("k", 4, 14), 1, 8), (W("k", 0, 10), 2, 8)],
        [(W("k", 10, 20), 1, 20)],
        [(W("k", 10, 20), 2, 20), (W("k", 9, 19), 1, 15), (W("k", 5, 15), 2, 15), (W("k", 16, 26), 1, 20)],
        [(W("k", 30, 40), 1, 40)],
        [],
        [],
        [(W("k", 30, 40), 2, 40), (W("k", 31, 41), 1, 40)],
    ]
    drops = driver.drops()
    # @22 and @19 are dropped; @30 is too late for some of its windows only
    assert {5, 6} <= {d.input_index for d in drops} <= {5, 6, 7}
    assert {d.reason for d in drops} == {DropReason.EXPIRED_WINDOW}


@pytest.mark.parametrize("store", ["rocksdb", "in_memory"])
def test_hopping_emit_on_window_close_never_emits_the_windows_retention_expired(store):
    """Digest C.1's caveat: after the jump to @25 nothing is ever emitted for [0,10), [5,15) or
    [10,20) on RocksDB (the store's retention drops them before the close check reaches them);
    in-memory stores emitted nothing at all."""
    reads, _ = _drive(_count_topology(TimeWindows.of_size_and_grace(10, 3).advance_by(5),
                                      EmitStrategy.on_window_close()), HOPPING_INPUTS, store=store)
    emitted = {key for rs in reads for key, _, _ in rs}
    assert not emitted & {W("k", 0, 10), W("k", 5, 15), W("k", 10, 20)}
    if store == "in_memory":
        assert reads == [[]] * len(HOPPING_INPUTS)


# Kafka's SuppressScenarioTest (3.9): a raw count and its suppress(untilWindowCloses(unbounded())),
# with the legacy builders the test uses; both outputs verified by the test
SUPPRESS_SCENARIOS = {
    "shouldSupportFinalResultsForTimeWindows": (
        lambda: TimeWindows.of(2).grace(1), [0, 1, 2, 1, 0, 5, 0],
        [((0, 2), 1, 0), ((0, 2), 2, 1), ((2, 4), 1, 2), ((0, 2), 3, 1), ((0, 2), 4, 1), ((4, 6), 1, 5)],
        [((0, 2), 4, 1), ((2, 4), 1, 2)]),
    "shouldSupportFinalResultsForTimeWindowsWithLargeJump": (
        lambda: TimeWindows.of(2).grace(2), [0, 1, 2, 0, 3, 0, 4, 0, 30],
        [((0, 2), 1, 0), ((0, 2), 2, 1), ((2, 4), 1, 2), ((0, 2), 3, 1), ((2, 4), 2, 3), ((0, 2), 4, 1),
         ((4, 6), 1, 4), ((30, 32), 1, 30)],
        [((0, 2), 4, 1), ((2, 4), 2, 3), ((4, 6), 1, 4)]),
}


@pytest.mark.parametrize("name", sorted(SUPPRESS_SCENARIOS))
def test_kafkas_suppress_scenarios_for_time_windows(name):
    windows, timestamps, raw, final = SUPPRESS_SCENARIOS[name]
    inputs = [("k1", "v1", ts) for ts in timestamps]
    got_raw = [r for rs in _drive(_count_topology(windows()), inputs)[0] for r in rs]
    assert got_raw == [(W("k1", s, e), v, ts) for (s, e), v, ts in raw]
    got_final = [r for rs in _drive(_count_topology(windows(), suppressed=UNTIL_CLOSE), inputs)[0] for r in rs]
    assert got_final == [(W("k1", s, e), v, ts) for (s, e), v, ts in final]


def test_kafkas_suppress_scenario_for_sliding_windows():
    """SuppressScenarioTest#shouldSupportFinalResultsForSlidingWindows (withTimeDifferenceAndGrace(5, 15))."""
    inputs = [("k1", "v1", ts) for ts in (10, 11, 10, 13, 10, 24, 5, 7, 90)]
    windows = SlidingWindows.of_time_difference_and_grace(5, 15)
    raw = [r for rs in _drive(_count_topology(windows), inputs)[0] for r in rs]
    # the test sorts by the key's text "[k1@start/end]", then by timestamp
    raw.sort(key=lambda r: (f"[{r[0].key}@{r[0].start}/{r[0].end}]", r[2]))
    assert [(k.start, v, ts) for k, v, ts in raw] == [
        (11, 1, 11), (11, 2, 13), (12, 1, 13), (19, 1, 24), (5, 1, 10), (5, 2, 10), (5, 3, 10), (5, 4, 10),
        (5, 5, 10), (6, 2, 11), (6, 3, 11), (6, 4, 11), (6, 5, 11), (8, 4, 13), (8, 5, 13), (85, 1, 90)]
    final = [r for rs in _drive(_count_topology(windows, suppressed=UNTIL_CLOSE), inputs)[0] for r in rs]
    assert final == [(W("k1", 5, 10), 5, 10), (W("k1", 6, 11), 5, 11), (W("k1", 8, 13), 5, 13),
                     (W("k1", 11, 16), 2, 13), (W("k1", 12, 17), 1, 13), (W("k1", 19, 24), 1, 24)]


def test_kafkas_suppress_scenario_for_session_windows():
    """SuppressScenarioTest#shouldSupportFinalResultsForSessionWindows (SessionWindows.with(5).grace(0))."""
    inputs = [("k1", "v1", 0), ("k1", "v1", 5), ("k1", "v1", 1), ("k2", "v1", 11), ("k1", "v1", 5), ("k1", "v1", 30)]
    windows = SessionWindows.with_(5).grace(0)
    raw = [r for rs in _drive(_count_topology(windows), inputs)[0] for r in rs]
    assert raw == [(W("k1", 0, 0), 1, 0), (W("k1", 0, 0), None, 0), (W("k1", 0, 5), 2, 5), (W("k1", 0, 5), None, 5),
                   (W("k1", 0, 5), 3, 5), (W("k2", 11, 11), 1, 11), (W("k1", 30, 30), 1, 30)]
    final = [r for rs in _drive(_count_topology(windows, suppressed=UNTIL_CLOSE), inputs)[0] for r in rs]
    assert final == [(W("k1", 0, 5), 3, 5), (W("k2", 11, 11), 1, 11)]


def test_a_full_shut_down_buffer_kills_the_driver():
    suppressed = Suppressed.until_window_closes(BufferConfig.max_records(1).shut_down_when_full())
    driver = TopologyTestDriver(_count_topology(TimeWindows.of_size_with_no_grace(10), suppressed=suppressed),
                                release="3.9")
    source = driver.create_input_topic("input")
    source.pipe_input("a", "v", ts=1)
    with pytest.raises(KafkaWouldFail) as info:
        source.pipe_input("b", "v", ts=2)  # a second window in a one-record buffer
    assert info.value.code.code == "suppress_buffer_full" and info.value.input_index == 1


def test_a_sum_of_a_null_value_kills_the_driver_but_a_users_aggregator_decides_itself():
    b = StreamsBuilder()
    b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).aggregate("sum") \
        .to_stream().to("output")
    driver = TopologyTestDriver(b.build(), release="3.9")
    with pytest.raises(KafkaWouldFail) as info:
        driver.create_input_topic("input").pipe_input("k", None, ts=1)
    assert info.value.code.code == "aggregator_null_value"
    b = StreamsBuilder()
    b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)) \
        .aggregate(lambda: 0, lambda k, v, total: total + (v or 0)).to_stream().to("output")
    assert _drive(b.build(), [("k", 2, 1), ("k", None, 2)])[0] == [[(W("k", 0, 10), 2, 1)], [(W("k", 0, 10), 2, 2)]]


def test_what_was_written_before_kafka_would_fail_can_still_be_read():
    """A session sum: the record @5 merges with [0,0], whose tombstone is forwarded before the
    aggregator dies on the null value (digest B.2 step 8)."""
    b = StreamsBuilder()
    b.stream("input").group_by_key().windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(10)).aggregate("sum") \
        .to_stream().to("output")
    driver = TopologyTestDriver(b.build(), release="3.9")
    source, out = driver.create_input_topic("input"), driver.create_output_topic("output")
    source.pipe_input("k", 1, ts=0)
    with pytest.raises(KafkaWouldFail):
        source.pipe_input("k", None, ts=5)
    assert [(r.key, r.value, r.ts, r.input_index) for r in out.read_records_to_list()] == \
        [(W("k", 0, 0), 1, 0, 0), (W("k", 0, 0), None, 0, 1)]


def test_a_value_a_named_aggregation_cannot_read_is_refused_before_processing():
    b = StreamsBuilder()
    b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).aggregate("sum") \
        .to_stream().to("output")
    driver = TopologyTestDriver(b.build(), release="3.9")
    source = driver.create_input_topic("input")
    with pytest.raises(IllegalArgumentError, match="sum aggregation adds integer values, got 'x'"):
        source.pipe_input("k", "x", ts=1)
    assert source.pipe_input("k", 3, ts=1) == 0  # nothing was processed, no input index used up


def test_old_values_of_a_windowed_count():
    b = StreamsBuilder()
    b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)).count() \
        .enable_sending_old_values().to_stream().to("output")
    driver = TopologyTestDriver(b.build(), release="3.9")
    driver.create_input_topic("input").pipe_key_value_list([("k", "a"), ("k", "b")], start_ts=1)
    # digest C.1: Change(new, sendOldValues ? oldAgg : null), oldAgg the initializer's for a new window
    assert [(r.value, r.old_value) for r in driver.create_output_topic("output").read_records_to_list()] == \
        [(1, 0), (2, 1)]


# --- the corpus through the driver ------------------------------------------------------------------

def replay(scenario, topology):
    """Pipe the scenario's inputs one by one and read the output after each, as Kafka's test did;
    stops where Kafka would fail. Returns the driver, the reads and the failure (or None)."""
    driver = TopologyTestDriver(topology, release=scenario.release, store=scenario.config.store,
                                emit_interval_ms=scenario.config.emit_interval_ms)
    topics = {topic: driver.create_input_topic(topic) for topic in driver.input_topics}
    output = driver.create_output_topic("output")
    reads, failure = [], None
    for rec in scenario.inputs:
        try:
            assert topics[rec.topic].pipe_input(rec.key, rec.value, ts=rec.ts) == rec.index
        except KafkaWouldFail as exc:
            failure = exc
        reads.append(output.read_records_to_list())
        if failure is not None:
            break
    return driver, reads, failure


def as_outputs(reads):
    return [OutputRecord("output", 0, r.key.as_dict() if isinstance(r.key, Windowed) else r.key, r.value, r.ts,
                         r.input_index, r.old_value)
            for rs in reads for r in rs]


def assert_replay_passes(scenario, topology):
    """The driver's run of ``scenario`` gets the verdict ``kssim check`` gives the scenario runner's."""
    driver, reads, failure = replay(scenario, topology)
    result = RunResult(outputs=tuple(as_outputs(reads)), drops=tuple(driver.drops()), failure=failure,
                       processed=len(reads))
    assert_passes(scenario, result, engine="reference through the API's driver")


def driver_replayable(rel):
    """The driver is Kafka's: one partition per topic, each record processed when piped."""
    config = corpus_scenario(rel).config
    return config.task_count == 1 and config.order == "as_listed" and config.delivery == "synchronous"


def corpus_ids():
    return [rel for rel, _ in windowed_scenarios() if driver_replayable(rel)]


@pytest.mark.parametrize("rel", corpus_ids())
def test_the_driver_reproduces_every_windowed_corpus_file(rel):
    scenario = corpus_scenario(rel)
    assert_replay_passes(scenario, api_topology(scenario.topology))


def _with_callables(rel):
    """A windowed file whose named aggregations ``CALLABLES`` writes as lambdas."""
    spec = corpus_scenario(rel).topology
    aggregations = {getattr(spec, f, None) for f in ("aggregation", "left_aggregation", "right_aggregation")} - {None}
    return bool(aggregations) and aggregations <= set(CALLABLES) and spec.merge_separator == "+"


@pytest.mark.parametrize("rel", [rel for rel in corpus_ids() if _with_callables(rel)][::5])
def test_python_callables_reproduce_the_corpus_files_of_named_aggregations(rel):
    """The named aggregations written as a user's lambdas give Kafka's outputs too (every fifth file)."""
    scenario = corpus_scenario(rel)
    topology = api_topology(scenario.topology, callables=True)
    assert not isinstance(getattr(topology.spec, "aggregation", "x"), str) or \
        not isinstance(getattr(topology.spec, "left_aggregation", "x"), str)
    assert_replay_passes(scenario, topology)


def test_the_driver_runs_like_the_scenario_runner():
    for rel in corpus_ids()[::25]:
        scenario = corpus_scenario(rel)
        driver, reads, _ = replay(scenario, Topology(scenario.topology))
        result = run_scenario(scenario)
        got = [(canonical(o.key), canonical(o.value), o.ts, o.input_index) for o in as_outputs(reads)]
        want = [(canonical(o.key), canonical(o.value), o.ts, o.input_index) for o in result.outputs]
        assert got == want, rel
        assert [(d.input_index, d.reason) for d in driver.drops()] == [(d.input_index, d.reason) for d in result.drops]


# --- saving what was built -----------------------------------------------------------------------------

def test_to_scenario_saves_a_windowed_run_that_replays(tmp_path):
    topology = _count_topology(TimeWindows.of_size_and_grace(10, 3).advance_by(5), suppressed=UNTIL_CLOSE)
    driver = TopologyTestDriver(topology, release="3.9")
    source = driver.create_input_topic("input")
    for key, value, ts in HOPPING_INPUTS:
        source.pipe_input(key, value, ts=ts)
    records = driver.create_output_topic("output").read_records_to_list()
    assert records, "the case emits"
    inputs = [("input", k, v, ts) for k, v, ts in HOPPING_INPUTS]
    doc = topology.to_scenario(inputs, name="saved", release="3.9", expected=records,
                               checkpoints=range(len(inputs)))
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(doc, indent=1))
    scenario = load_scenario(path)
    assert scenario.topology == topology.spec
    assert [e.key for e in scenario.expected] == [r.key.as_dict() for r in records]
    assert compare_outputs(scenario, run_scenario(scenario).outputs) is None
    doc["expected"][0]["value"] = 99
    assert compare_outputs(scenario_from_dict(doc), run_scenario(scenario).outputs) is not None


def test_windowed_keys_of_expected_tuples_are_written_as_the_format_says():
    doc = _count_topology(TimeWindows.of_size_with_no_grace(10)).to_scenario(
        [("input", "k", "v", 1)], name="x", release="3.9", expected=[(W("k", 0, 10), 1, 1)])
    assert doc["expected"] == [{"topic": "output", "key": {"key": "k", "start": 0, "end": 10}, "value": 1, "ts": 1}]


def test_callable_aggregations_cannot_be_saved():
    b = StreamsBuilder()
    b.stream("input").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(10)) \
        .aggregate(lambda: 0, lambda k, v, a: a + 1).to_stream().to("output")
    with pytest.raises(UnsavableTopologyError, match="callables"):
        b.build().to_scenario([], name="x")
    assert "<callable aggregation" in b.build().describe()
    b = StreamsBuilder()
    windows = TimeWindows.of_size_with_no_grace(10)
    left = b.stream("left").group_by_key().windowed_by(windows).reduce(lambda a, v: v)
    left.join(b.stream("right").group_by_key().windowed_by(windows).count(), "pair").to_stream().to("output")
    with pytest.raises(UnsavableTopologyError, match="left_aggregation"):
        b.build().to_scenario([], name="x")


def test_topology_wraps_every_windowed_spec():
    for rel in distinct_topologies()[:5]:
        spec = corpus_scenario(rel).topology
        assert Topology(spec).spec is spec
    with pytest.raises(TypeError, match="windowed aggregation"):
        Topology(TimeWindowSpec(1, 1, 0))


# --- the README's example ----------------------------------------------------------------------------

def test_the_readme_example_prints_what_it_says():
    from kssim_testing import readme_example

    printed, promised = readme_example("Windowed aggregations in Python")
    assert printed == promised