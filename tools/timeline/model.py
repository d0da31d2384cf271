"""The timeline of one scenario, as plain data: what ``kssim timeline`` draws (``draw.py``).

Built from the scenario and the reference engine's run with explanations (the run ``kssim run
--explain --drops`` makes), plus the order in which the engine's tasks process the inputs
(``reference.model.engines.processing_order``). Nothing here draws; every element is a frozen
value the tests can look at:

- :class:`Lane`: one per input topic partition, then one per output topic partition;
- :class:`RecordMark`: an input or output record at its timestamp, in its lane;
- :class:`StreamTimeStep`: one per processed input, in processing order: the stream time of the
  input's task after it (:func:`task_stream_times`);
- :class:`Interval`: a stream-stream join record's window and grace, a stream-table join's grace
  buffer, or an aggregation window with its close point (window end + grace);
- :class:`Link`: an output record and the input whose processing emitted it;
- :class:`DropMark`: a dropped (or partly ignored) input and its ``DropReason``.
"""
from __future__ import annotations

import enum
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import attrs

from reference.model.codes import DropReason
from reference.model.engines import processing_order, run_scenarios
from reference.model.profiles import join_window_stores, session_window_settings, time_window_settings
from reference.model.keys import key_text
from reference.model.render import show
from reference.model.windows import window_starts
from reference.model.scenario import OUTPUT_TOPIC
from reference.model.topology import OPERATOR_INPUT_TOPICS

#: labels longer than this are cut (with an ellipsis): a lane holds up to hundreds of them
LABEL_CHARS = 14


class LaneKind(enum.Enum):
    INPUT = "input"
    OUTPUT = "output"


class MarkKind(enum.Enum):
    """How a record is drawn: null keys and null values (tombstones) must stand out."""

    VALUE = "value"
    NULL_VALUE = "null_value"  # a tombstone on a table topic; dropped by stream joins (KIP-77)
    NULL_KEY = "null_key"


class IntervalKind(enum.Enum):
    #: a stream-stream join record's window [ts - before, ts + after] (as the other side sees it
    #: for a right record: [ts - after, ts + before]), its grace up to the close
    JOIN_WINDOW = "join_window"
    #: a stream-table join with a grace period (KIP-923): the stream record waits in the buffer
    #: until stream time reaches ts + grace
    GRACE_BUFFER = "grace_buffer"
    #: a time window [start, end) of a windowed aggregation (or a windowed-table join)
    TIME_WINDOW = "time_window"
    #: a session [start, end] (both inclusive)
    SESSION_WINDOW = "session_window"
    #: a sliding window [start, end] (both inclusive)
    SLIDING_WINDOW = "sliding_window"


@attrs.frozen
class Lane:
    kind: LaneKind
    topic: str
    partition: int
    label: str


@attrs.frozen
class RecordMark:
    """An input (``index``: its input index) or output record (``index``: its position in the
    output) at ``ts`` in lane ``lane`` (an index into :attr:`Timeline.lanes`)."""

    lane: int
    index: int
    ts: int
    key: object
    value: object
    kind: MarkKind
    label: str


@attrs.frozen
class StreamTimeStep:
    """The ``step``-th input processed: input ``input_index`` (timestamp ``ts``) in task ``task``,
    whose stream time is ``stream_time`` after it. ``task`` None: a GlobalKTable record, read by
    the global thread, which has no stream time."""

    step: int
    input_index: int
    ts: int
    task: Optional[int]
    stream_time: Optional[int]


@attrs.frozen
class Interval:
    """A window of ``kind`` for ``key`` in task ``task``: [start, end], then the grace up to
    ``close`` (None: the release has no grace, nothing closes the window). ``input_index``: the
    input the interval belongs to (join windows, grace buffers), None for aggregation windows.
    ``superseded``: a session or window whose latest output is a tombstone (merged away).
    ``lost``: an emit-on-window-close window whose final result is never emitted (the run's
    ``unemitted_window`` drop: the store expired it before the close check reached it)."""

    kind: IntervalKind
    task: int
    key: object
    start: int
    end: int
    close: Optional[int]
    input_index: Optional[int] = None
    superseded: bool = False
    lost: bool = False


@attrs.frozen
class Link:
    """Output ``output`` was emitted while input ``input_index`` was processed; ``joined``: the
    inputs of the stored records it was built from (the explanation's)."""

    output: int
    input_index: int
    joined: Tuple[int, ...] = ()


@attrs.frozen
class DropMark:
    input_index: int
    reason: DropReason
    text: str


@attrs.frozen
class FailureMark:
    """Kafka Streams would die while processing input ``input_index``."""

    input_index: int
    message: str


@attrs.frozen
class Timeline:
    name: str
    release: str
    operator: str
    tasks: int
    lanes: Tuple[Lane, ...]
    inputs: Tuple[RecordMark, ...]
    outputs: Tuple[RecordMark, ...]
    steps: Tuple[StreamTimeStep, ...]
    intervals: Tuple[Interval, ...]
    links: Tuple[Link, ...]
    drops: Tuple[DropMark, ...]
    failure: Optional[FailureMark] = None

    def steps_of(self, task: int) -> List[StreamTimeStep]:
        return [s for s in self.steps if s.task == task]


# --- building it ------------------------------------------------------------------------------------

def build_timeline(scenario) -> Timeline:
    """The timeline of ``scenario`` on the reference engine (explanations on, drops kept)."""
    (result,) = run_scenarios("reference", [scenario], explain=True)
    if isinstance(result, Exception):
        raise result
    lanes = _lanes(scenario, result.outputs)
    lane_of = {(lane.kind, lane.topic, lane.partition): i for i, lane in enumerate(lanes)}
    inputs = tuple(_mark(lane_of[(LaneKind.INPUT, r.topic, r.partition)], r.index, r.ts, r.key, r.value)
                   for r in scenario.inputs)
    outputs = tuple(_mark(lane_of[(LaneKind.OUTPUT, o.topic, o.partition)], i, o.ts, o.key, o.value)
                    for i, o in enumerate(result.outputs))
    failure = None
    if result.failure is not None:
        failure = FailureMark(result.failure.input_index, str(result.failure.message))
    order = processing_order(scenario)
    if failure is not None:  # Kafka dies on the failing input: nothing after it is processed
        order = order[:order.index(failure.input_index) + 1]
    steps = tuple(task_stream_times(scenario, order))
    drops = tuple(DropMark(d.input_index, d.reason, d.why.describe() if d.why is not None else d.reason.message)
                  for d in result.drops)
    return Timeline(name=scenario.name, release=scenario.release, operator=scenario.topology.operator,
                    tasks=scenario.config.task_count, lanes=lanes, inputs=inputs, outputs=outputs, steps=steps,
                    intervals=tuple(intervals_of(scenario, result.outputs, {d.input_index for d in drops},
                                                 lost_windows(scenario, result.drops))),
                    links=tuple(_link(i, o) for i, o in enumerate(result.outputs)), drops=drops, failure=failure)


def _lanes(scenario, outputs) -> Tuple[Lane, ...]:
    """Every partition of every input topic (an idle partition is part of the story), then the
    output topic's partition of every task, and any other topic an output went to."""
    config = scenario.config
    several = config.task_count > 1
    lanes = []
    for topic in OPERATOR_INPUT_TOPICS[scenario.topology.operator]:
        for p in range(config.partition_count(topic)):
            lanes.append(Lane(LaneKind.INPUT, topic, p, f"{topic}[{p}]" if several else topic))
    out = {(OUTPUT_TOPIC, p) for p in range(config.task_count)} | {(o.topic, o.partition) for o in outputs}
    for topic, p in sorted(out):
        lanes.append(Lane(LaneKind.OUTPUT, topic, p, f"{topic}[{p}]" if several else topic))
    return tuple(lanes)


def _mark(lane: int, index: int, ts: int, key, value) -> RecordMark:
    kind = MarkKind.NULL_KEY if key is None else MarkKind.NULL_VALUE if value is None else MarkKind.VALUE
    return RecordMark(lane, index, ts, key, value, kind, record_label(key, value))


def record_label(key, value) -> str:
    """``k:A``; a windowed key reads ``k[0,10]:2``, a joined pair ``k:A,a``; long texts are cut."""
    if _windowed(key):
        key_text = f"{_cut(_compact(key['key']), LABEL_CHARS // 2)}[{key['start']},{key['end']}]"
    else:
        key_text = _cut(_compact(key), LABEL_CHARS // 2)
    return f"{key_text}:{_cut(_compact(value), LABEL_CHARS - 2)}"


def _compact(value) -> str:
    """A short rendering for a label: a list's texts without quotes or brackets (a join's pair
    ``["A","a"]`` reads ``A,a``); anything else as ``show`` writes it."""
    if isinstance(value, list) and value and all(v is None or isinstance(v, (str, int, float)) for v in value):
        return ",".join(show(v) for v in value)
    return show(value)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _link(position: int, output) -> Link:
    why = output.why
    joined = () if why is None else tuple(
        s.input_index for s in why.joined if s.input_index >= 0 and s.input_index != output.input_index)
    return Link(position, output.input_index, joined)


def task_stream_times(scenario, order: Sequence[int]) -> Iterable[StreamTimeStep]:
    """The stream time of each task after each input, in processing order ``order``.

    Computed, because the engine reports no clock: a task's stream time is the largest timestamp
    among the records it has processed (Kafka's ``PartitionGroup#streamTime``, which every record
    moves, dropped ones included). Operators keep clocks of their own that can lag behind it (a
    join's shared clock, a window store's observed time; their explanations give those numbers).
    A GlobalKTable's records are read by the global thread and move no task's stream time."""
    clocks: Dict[int, int] = {}
    global_topic = "right" if scenario.topology.operator == "global_table_join" else None
    for step, index in enumerate(order):
        rec = scenario.inputs[index]
        if rec.topic == global_topic:
            yield StreamTimeStep(step, index, rec.ts, None, None)
            continue
        clocks[rec.partition] = max(clocks.get(rec.partition, rec.ts), rec.ts)
        yield StreamTimeStep(step, index, rec.ts, rec.partition, clocks[rec.partition])


# --- intervals --------------------------------------------------------------------------------------

def lost_windows(scenario, drops) -> Dict[Tuple[int, str, int, int], object]:
    """``(task, key_text, start, end) -> key`` of every window the run reports never emitted
    (an ``unemitted_window`` drop's explanation names its window; the task is the one of the
    input whose processing expired it)."""
    lost = {}
    for d in drops:
        window = getattr(d.why, "window", ()) if d.reason is DropReason.UNEMITTED_WINDOW else ()
        if window:
            key, start, end = window
            lost[(scenario.inputs[d.input_index].partition, key_text(key), start, end)] = key
    return lost


def intervals_of(scenario, outputs, dropped: set, lost: Optional[dict] = None) -> List[Interval]:
    """The windows the topology keeps, each with its close point (see :class:`IntervalKind`);
    ``lost``: the windows never emitted (:func:`lost_windows`), drawn even without an output."""
    lost = lost or {}
    spec, profile = scenario.topology, scenario.profile
    operator = spec.operator
    if operator == "stream_stream_join":
        return _join_windows(spec, profile, scenario.inputs, dropped)
    if operator == "stream_table_join" and spec.grace_ms:
        return [Interval(IntervalKind.GRACE_BUFFER, r.partition, r.key, r.ts, r.ts, r.ts + spec.grace_ms, r.index)
                for r in scenario.inputs if r.topic == "left" and r.index not in dropped]
    if operator in ("window_aggregate", "windowed_table_join"):
        window = spec.window
        grace = time_window_settings(profile, window.size_ms, window.grace_ms,
                                     getattr(spec, "retention_ms", None)).grace_ms
        return _time_windows(window.size_ms, window.advance_ms, grace, profile.time_windows_for_fixed,
                             scenario.inputs, outputs, lost)
    if operator == "session_aggregate":
        settings = session_window_settings(profile, spec.gap_ms, spec.grace_ms, spec.retention_ms)
        return _reported_windows(IntervalKind.SESSION_WINDOW, settings.close_offset_ms, outputs, lost)
    if operator == "sliding_aggregate":
        return _reported_windows(IntervalKind.SLIDING_WINDOW, spec.grace_ms, outputs, lost)
    return []


def _join_windows(spec, profile, inputs, dropped: set) -> List[Interval]:
    """Each joinable record's window: a left record L meets right records in
    [L.ts - before, L.ts + after] (a right record R: [R.ts - after, R.ts + before]); the window
    closes at its end + grace, when an unmatched left/outer record can be padded with null."""
    window = spec.window
    grace = join_window_stores(profile, window.before_ms, window.after_ms, window.grace_ms,
                               spec.window_api == "time_difference").grace_ms
    out = []
    for r in inputs:
        if r.index in dropped and (r.key is None or r.value is None):
            continue  # dropped before the window store: it has no window
        before, after = (window.before_ms, window.after_ms) if r.topic == "left" else (window.after_ms, window.before_ms)
        out.append(Interval(IntervalKind.JOIN_WINDOW, r.partition, r.key, r.ts - before, r.ts + after,
                            r.ts + after + grace, r.index))
    return out


def _time_windows(size: int, advance: int, grace: Optional[int], windows_for_fixed: bool, inputs, outputs,
                  lost: dict) -> List[Interval]:
    """Every time window a record with a key falls in (``TimeWindows#windowsFor`` as the release
    has it), per task and key (by its serialized identity), and every window an output names: a
    window whose result was never emitted (``suppress`` that never fires) is drawn too."""
    found = {}
    for r in inputs:
        if r.key is None:
            continue
        for start in window_starts(r.ts, size, advance, windows_for_fixed):
            found.setdefault((r.partition, key_text(r.key), start), (r.key, start + size))
    for o in outputs:
        if _windowed(o.key):
            found.setdefault((o.partition, key_text(o.key["key"]), o.key["start"]), (o.key["key"], o.key["end"]))
    for (task, identity, start, end), key in lost.items():
        found.setdefault((task, identity, start), (key, end))
    return [Interval(IntervalKind.TIME_WINDOW, task, key, start, end, None if grace is None else end + grace,
                     lost=(task, identity, start, end) in lost)
            for (task, identity, start), (key, end) in sorted(found.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0]))]


def _reported_windows(kind: IntervalKind, close_offset: Optional[int], outputs, lost: dict) -> List[Interval]:
    """The windows the outputs name (sessions and sliding windows depend on merges and on the
    records around them: the engine's outputs say which exist) and the ones the run reports
    never emitted (``lost``), each once; a window whose latest output is a tombstone was merged
    away (superseded)."""
    windows = {}  # (task, key_text, start, end) -> (key, superseded)
    for o in outputs:
        if _windowed(o.key):
            windows[(o.partition, key_text(o.key["key"]), o.key["start"], o.key["end"])] = (o.key["key"], o.value is None)
    for where, key in lost.items():
        windows.setdefault(where, (key, False))
    out = []
    for where, (key, superseded) in sorted(windows.items(), key=lambda kv: (kv[0][2], kv[0][3], kv[0][1])):
        task, _, start, end = where
        out.append(Interval(kind, task, key, start, end, None if close_offset is None else end + close_offset,
                            superseded=superseded, lost=where in lost))
    return out


def _windowed(key) -> bool:
    return isinstance(key, dict) and "start" in key and "end" in key and "key" in key
