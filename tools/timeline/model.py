"""The timeline of one scenario, as plain data: what ``kssim timeline`` draws (``draw.py``).

Built from the scenario and the reference engine's run with explanations (the run ``kssim run
--explain --drops`` makes), plus the order in which the engine's tasks process the inputs
(``reference.model.engines.processing_order``). Nothing here draws; every element is a frozen
value the tests can look at:

- :class:`Lane`: one per input topic partition, then (topology graphs) one per internal topic
  (repartition, foreign-key subscription and response topics), then one per output topic
  partition;
- :class:`RecordMark`: an input, internal or output record at its timestamp, in its lane;
- :class:`StreamTimeStep`: one per processed input, in processing order: the stream time of the
  input's task after it (:func:`task_stream_times`; for a graph, as its task took the input and
  the internal-topic records it caused: :func:`reference.model.engines.record_graph_traffic`);
- :class:`Interval`: a stream-stream join record's window and grace, a stream-table join's grace
  buffer, or an aggregation window, clamped at 0 as Kafka's are, with its close point: the first
  stream time at which its :class:`CloseRule` (Kafka's check, per kind and release) has closed
  it; in a graph, the windows its windowed aggregations' results name on the sink topics;
- :class:`Link`: an output record and the input whose processing emitted it;
- :class:`DropMark`: a dropped (or partly ignored) input and its ``DropReason``; an
  ``unemitted_window`` report is no drop (its input was aggregated, its window was lost):
  :attr:`Timeline.lost_at`.
"""
from __future__ import annotations

import enum
import re
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import attrs

from kssim.reference.model.codes import DropReason
from kssim.reference.model.engines import processing_order, run_scenarios
from kssim.reference.model.profiles import join_window_stores, session_window_settings, time_window_settings
from kssim.reference.model.keys import key_text
from kssim.reference.model.render import show
from kssim.reference.model.windows import window_starts
from kssim.reference.model.scenario import OUTPUT_TOPIC
from kssim.reference.model.suppression import JAVA_LONG_MAX, java_long
from kssim.reference.model.topology import input_topics, output_topics

#: a label's key and value longer than these are cut (at a token, with an ellipsis): a lane holds
#: up to hundreds of labels; the HTML page's hover titles have the whole record
KEY_CHARS, VALUE_CHARS = 14, 14


class LaneKind(enum.Enum):
    INPUT = "input"
    #: a topology graph's internal topic: the records that crossed it (repartition topics, a
    #: foreign-key join's subscription and response topics)
    INTERNAL = "internal"
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
    """An input (``index``: its input index), internal (``index``: its position in
    :attr:`Timeline.internal`) or output record (``index``: its position in the output) at ``ts``
    in lane ``lane`` (an index into :attr:`Timeline.lanes`). ``source``: an internal record's
    input, the one whose processing wrote it (None for the others: outputs have :class:`Link` s)."""

    lane: int
    index: int
    ts: int
    key: object
    value: object
    kind: MarkKind
    label: str
    source: Optional[int] = None


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
    #: the row's name: the record's lane, label and timestamp, ``left k:A@5`` (:func:`row_label`)
    label: str = ""


@attrs.frozen
class Interval:
    """A window of ``kind`` for ``key`` in task ``task``: [start, end], then the grace up to
    ``close``, the first stream time at which the window is closed (:class:`CloseRule`; None: the
    release has no grace, nothing closes the window). ``input_index``: the
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
    #: a topology graph's internal-topic records, in the order its task took them
    internal: Tuple[RecordMark, ...] = ()
    #: the run's ``unemitted_window`` reports: the input whose close check found the window already
    #: expired (an input that was aggregated, not dropped: :func:`split_drops`)
    lost_at: Tuple[DropMark, ...] = ()
    #: how each kind of window drawn closes (:class:`CloseRule`)
    close_rules: Tuple["CloseRule", ...] = ()

    def steps_of(self, task: int) -> List[StreamTimeStep]:
        return [s for s in self.steps if s.task == task]


# --- building it ------------------------------------------------------------------------------------

def build_timeline(scenario) -> Timeline:
    """The timeline of ``scenario`` on the reference engine (explanations on, drops kept)."""
    if scenario.topology.operator == "graph":
        return _graph_timeline(scenario)
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
    steps = named_rows(task_stream_times(scenario, order), lanes, inputs)
    drops, lost_at = split_drops(result.drops)
    return Timeline(name=scenario.name, release=scenario.release, operator=scenario.topology.operator,
                    tasks=scenario.config.task_count, lanes=lanes, inputs=inputs, outputs=outputs, steps=steps,
                    intervals=tuple(intervals_of(scenario, result.outputs, {d.input_index for d in drops},
                                                 lost_windows(scenario, result.drops))),
                    links=tuple(_link(i, o) for i, o in enumerate(result.outputs)), drops=drops, failure=failure,
                    lost_at=lost_at, close_rules=close_rules_of(scenario))


def _lanes(scenario, outputs) -> Tuple[Lane, ...]:
    """Every partition of every input topic (an idle partition is part of the story), then the
    output topic's partition of every task, and any other topic an output went to."""
    config = scenario.config
    several = config.task_count > 1
    lanes = []
    for topic in input_topics(scenario.topology):
        for p in range(config.partition_count(topic)):
            lanes.append(Lane(LaneKind.INPUT, topic, p, f"{topic}[{p}]" if several else topic))
    out = {(OUTPUT_TOPIC, p) for p in range(config.task_count)} | {(o.topic, o.partition) for o in outputs}
    for topic, p in sorted(out):
        lanes.append(Lane(LaneKind.OUTPUT, topic, p, f"{topic}[{p}]" if several else topic))
    return tuple(lanes)


def _mark(lane: int, index: int, ts: int, key, value, source: Optional[int] = None) -> RecordMark:
    kind = MarkKind.NULL_KEY if key is None else MarkKind.NULL_VALUE if value is None else MarkKind.VALUE
    return RecordMark(lane, index, ts, key, value, kind, record_label(key, value), source)


def record_label(key, value) -> str:
    """``k:A``; a windowed key reads ``k[0,10]:2``, a joined pair ``k:A,a``; long texts are cut."""
    if _windowed(key):
        key_text = f"{cut_label(_compact(key['key']), KEY_CHARS)}[{key['start']},{key['end']}]"
    else:
        key_text = cut_label(_compact(key), KEY_CHARS)
    return f"{key_text}:{cut_label(_compact(value), VALUE_CHARS)}"


def _compact(value) -> str:
    """A short rendering for a label: a list's texts without quotes or brackets (a join's pair
    ``["A","a"]`` reads ``A,a``); anything else as ``show`` writes it."""
    if isinstance(value, list) and value and all(v is None or isinstance(v, (str, int, float)) for v in value):
        return ",".join(show(v) for v in value)
    return show(value)


#: the tokens a label is cut between: a JSON string (to its closing quote, or to the end of a
#: text that never closes it), a number, a word, a run of spaces, any other single character
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*(?:"|$)|(?<!\w)-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[^\W\d]+|\s+|.', re.S)
#: tokens that are never cut in two (a half string or half number reads as another value)
_WHOLE = re.compile(r'"|-?\d')


def cut_label(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its longest run of whole tokens that fits
    with an ellipsis after it: never half a JSON string or number (``{"name":"Al…`` would read as
    the string "Al"). A first token that alone is too long is a bare word cut by character (it is
    no JSON value) or, a string or number, just the ellipsis."""
    if len(text) <= limit:
        return text
    kept = ""
    for token in _TOKEN.findall(text):
        if len(kept) + len(token) > limit - 1:
            if not kept and not _WHOLE.match(token):
                kept = token[:limit - 1]
            break
        kept += token
    return kept.rstrip() + "\u2026"



def row_label(lane: Lane, mark: RecordMark) -> str:
    """A processing row's name: the record in short, ``left k:A@5`` (lane, key:value, timestamp)."""
    return f"{lane.label} {mark.label}@{mark.ts}"


def named_rows(steps: Iterable[StreamTimeStep], lanes, inputs) -> Tuple[StreamTimeStep, ...]:
    """``steps``, each named by its input (:func:`row_label`)."""
    return tuple(attrs.evolve(s, label=row_label(lanes[inputs[s.input_index].lane], inputs[s.input_index]))
                 for s in steps)


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

@attrs.frozen
class CloseRule:
    """When a window of ``kind`` is closed, as Kafka checks it: once stream time > ``end +
    offset`` (``strict``) or >= it. An :class:`Interval`'s ``close`` is the first stream time at
    which the window is closed, ``end + offset + (1 if strict)``: where a task's stream-time line
    reaches the close tick, the window is closed. ``text``: the rule in words, for the legend;
    ``source``: the Kafka class (and rule name) that checks it."""

    kind: IntervalKind
    offset: str
    strict: bool
    text: str
    source: str

    def close(self, end: int, offset_ms: Optional[int]) -> Optional[int]:
        return None if offset_ms is None else end + offset_ms + (1 if self.strict else 0)


def _rule(kind: IntervalKind, what: str, edge: str, offset: str, strict: bool, source: str) -> CloseRule:
    if strict:
        text = f"{what} once stream time > {edge} + {offset} (| at {edge} + {offset} + 1)"
    else:
        text = f"{what} once stream time \u2265 {edge} + {offset} (| at {edge} + {offset})"
    return CloseRule(kind, offset, strict, text, source)


def join_close_rule(spec) -> CloseRule:
    """``KStreamKStreamJoin``: with the spurious-result fix (``JoinWindows.ofTimeDifference*``,
    time_difference_windows, KIP-633) a record still unmatched is padded with null (left/outer)
    once ``ts + after + grace < stream time`` (``emitNonJoinedOuterRecords``); without it nothing
    closes the window but the store's retention, at the same point (segment-wise)."""
    if spec.window_api == "time_difference":
        what = "closed" if spec.join == "inner" else "closed (a record left unmatched is padded with null)"
        return _rule(IntervalKind.JOIN_WINDOW, what, "end", "grace", True,
                     "KStreamKStreamJoin#emitNonJoinedOuterRecords (KIP-633)")
    return _rule(IntervalKind.JOIN_WINDOW, "out of the store's retention", "end", "grace", True,
                 "KStreamKStreamJoin, the window store's retention")


#: a stream-table join's buffer emits a record once ``ts <= stream time - grace`` (every release with it)
GRACE_BUFFER_RULE = _rule(IntervalKind.GRACE_BUFFER, "emitted from the buffer", "ts", "grace", False,
                          "RocksDBTimeOrderedKeyValueBuffer#evictWhile (KIP-923)")
#: ``KStreamWindowAggregate``: a window is live while ``end > stream time - grace``
TIME_WINDOW_RULE = _rule(IntervalKind.TIME_WINDOW, "window [start, end) closed", "end", "grace", False,
                         "KStreamWindowAggregate (KIP-328)")


def session_close_rule(profile) -> CloseRule:
    """``KStreamSessionWindowAggregate``: a merged session is late when its end is before
    ``stream time - grace - gap`` (session_close_includes_gap, 3.0, KAFKA-12718; before: ``- grace``);
    2.1-2.2.0 also when it ends at it (session_late_before_close, 2.2.1, KAFKA-8289). Emit on window
    close forwards the sessions ending at most ``stream time - grace - gap - 1``: the same point."""
    offset = "gap + grace" if profile.session_close_includes_gap else "grace"
    return _rule(IntervalKind.SESSION_WINDOW, "session [start, end] closed", "end", offset,
                 profile.session_late_before_close, "KStreamSessionWindowAggregate (KAFKA-12718, KAFKA-8289)")


def sliding_close_rule(profile) -> CloseRule:
    """``KStreamSlidingWindowAggregate``: a window is updated while ``end >= stream time - grace``
    (sliding_window_close_inclusive, 3.3, KAFKA-13739; before: ``end > stream time - grace``)."""
    return _rule(IntervalKind.SLIDING_WINDOW, "window [start, end] closed", "end", "grace",
                 profile.sliding_window_close_inclusive, "KStreamSlidingWindowAggregate (KAFKA-13739)")


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


def split_drops(drops) -> Tuple[Tuple[DropMark, ...], Tuple[DropMark, ...]]:
    """The run's drops as (records dropped, windows lost). An ``unemitted_window`` "drop" is no
    dropped record: its input was aggregated, and its close check found a window the store had
    already expired (KAFKA-12960): the window is what was lost (drawn red among the windows)."""
    marks = [DropMark(d.input_index, d.reason, d.why.describe() if d.why is not None else d.reason.message)
             for d in drops]
    return (tuple(m for m in marks if m.reason is not DropReason.UNEMITTED_WINDOW),
            tuple(m for m in marks if m.reason is DropReason.UNEMITTED_WINDOW))


def close_rules_of(scenario, plan=None) -> Tuple[CloseRule, ...]:
    """The close rule of each kind of window ``scenario`` draws (a graph, whose compiled ``plan``
    is given: of its windowed aggregations)."""
    spec, profile = scenario.topology, scenario.profile
    specs = [one for one, _ in _windowed_sinks(plan)] if spec.operator == "graph" else [spec]
    rules = {}
    for one in specs:
        rule = {"stream_stream_join": lambda: join_close_rule(one),
                "stream_table_join": lambda: GRACE_BUFFER_RULE if one.grace_ms else None,
                "window_aggregate": lambda: TIME_WINDOW_RULE, "windowed_table_join": lambda: TIME_WINDOW_RULE,
                "session_aggregate": lambda: session_close_rule(profile),
                "sliding_aggregate": lambda: sliding_close_rule(profile)}.get(one.operator, lambda: None)()
        if rule is not None:
            rules.setdefault(rule.kind, rule)
    return tuple(rules.values())


def intervals_of(scenario, outputs, dropped: set, lost: Optional[dict] = None) -> List[Interval]:
    """The windows and grace periods of ``scenario``'s operator (``dropped``: input indexes
    dropped before any window; see :class:`IntervalKind`), each closing by its :class:`CloseRule`;
    ``lost``: the windows never emitted (:func:`lost_windows`), drawn even without an output."""
    lost = lost or {}
    spec, profile = scenario.topology, scenario.profile
    operator = spec.operator
    if operator == "stream_stream_join":
        return _join_windows(spec, profile, scenario.inputs, dropped)
    if operator == "stream_table_join" and spec.grace_ms:
        return [Interval(IntervalKind.GRACE_BUFFER, r.partition, r.key, r.ts, r.ts,
                         GRACE_BUFFER_RULE.close(r.ts, spec.grace_ms), r.index)
                for r in scenario.inputs if r.topic == "left" and r.index not in dropped]
    return _aggregation_windows(spec, profile, scenario.inputs, outputs, lost)


def _aggregation_windows(spec, profile, inputs, outputs, lost: dict) -> List[Interval]:
    """The windows of a windowed aggregation (or a windowed-table join) ``spec``."""
    operator = spec.operator
    if operator in ("window_aggregate", "windowed_table_join"):
        window = spec.window
        grace = time_window_settings(profile, window.size_ms, window.grace_ms,
                                     getattr(spec, "retention_ms", None)).grace_ms
        return _time_windows(window.size_ms, window.advance_ms, grace, profile.time_windows_for_fixed,
                             inputs, outputs, lost)
    if operator == "session_aggregate":
        settings = session_window_settings(profile, spec.gap_ms, spec.grace_ms, spec.retention_ms)
        return _reported_windows(session_close_rule(profile), settings.close_offset_ms, outputs, lost)
    if operator == "sliding_aggregate":
        return _reported_windows(sliding_close_rule(profile), spec.grace_ms, outputs, lost)
    return []


def _join_windows(spec, profile, inputs, dropped: set) -> List[Interval]:
    """Each joinable record's window as ``KStreamKStreamJoin`` fetches it: a left record L meets
    right records in [max(0, L.ts - before), max(0, L.ts + after)] (a right record R:
    [R.ts - after, R.ts + before], since 0.10.1 [right_join_swaps_window_bounds]), the sums Java
    longs (a wrapped upper bound is 0: the fetch finds nothing); it closes by
    :func:`join_close_rule` (a close sum that wraps is closed at once: 0)."""
    window = spec.window
    grace = join_window_stores(profile, window.before_ms, window.after_ms, window.grace_ms,
                               spec.window_api == "time_difference").grace_ms
    rule = join_close_rule(spec)
    out = []
    for r in inputs:
        if r.index in dropped and (r.key is None or r.value is None):
            continue  # dropped before the window store: it has no window
        swapped = r.topic != "left" and profile.right_join_swaps_window_bounds
        before, after = (window.after_ms, window.before_ms) if swapped else (window.before_ms, window.after_ms)
        start, upper = java_long(r.ts - before), java_long(r.ts + after)
        close = rule.close(upper, grace)
        if close is not None and (upper < 0 or upper + grace > JAVA_LONG_MAX):
            close = 0  # the close sum wraps: Kafka counts the record as closed at once
        out.append(Interval(IntervalKind.JOIN_WINDOW, r.partition, r.key, max(0, start), max(0, upper), close, r.index))
    return out


def _time_windows(size: int, advance: int, grace: Optional[int], windows_for_fixed: bool, inputs, outputs,
                  lost: dict) -> List[Interval]:
    """Every time window a record with a key falls in (``TimeWindows#windowsFor`` as the release
    has it: no window starts before 0), per task and key (by its serialized identity), and every
    window an output names: a window whose result was never emitted (``suppress`` that never
    fires) is drawn too."""
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
    return [Interval(IntervalKind.TIME_WINDOW, task, key, max(0, start), end, TIME_WINDOW_RULE.close(end, grace),
                     lost=(task, identity, start, end) in lost)
            for (task, identity, start), (key, end) in sorted(found.items(), key=lambda kv: (kv[0][2], kv[0][1], kv[0][0]))]


def _reported_windows(rule: CloseRule, close_offset: Optional[int], outputs, lost: dict) -> List[Interval]:
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
        out.append(Interval(rule.kind, task, key, max(0, start), end, rule.close(end, close_offset),
                            superseded=superseded, lost=where in lost))
    return out


def _windowed(key) -> bool:
    return isinstance(key, dict) and "start" in key and "end" in key and "key" in key


# --- topology graphs --------------------------------------------------------------------------------

def _graph_timeline(scenario) -> Timeline:
    """The timeline of a topology graph: its one task (``TopologyTestDriver``'s), its source
    topics' lanes, a lane per internal topic with the records the task took from it (recorded
    through :func:`reference.model.engines.record_graph_traffic`), its sink topics' lanes; stream time after each
    input and everything it caused; the windows its windowed aggregations' results name."""
    from kssim.reference.model.engines import record_graph_traffic

    with record_graph_traffic() as taken:
        (result,) = run_scenarios("reference", [scenario], explain=True)
    if isinstance(result, Exception):
        raise result
    topology = scenario.topology
    sources = tuple(dict.fromkeys(input_topics(topology)))
    plan = graph_plan(scenario)
    internal_records = _internal_records(taken, set(sources))
    internal_topics = tuple(dict.fromkeys(plan.internal_topics + tuple(r[0] for r in internal_records)))
    lanes = _graph_lanes(scenario, sources, internal_topics, result.outputs)
    lane_of = {(lane.kind, lane.topic, lane.partition): i for i, lane in enumerate(lanes)}
    inputs = tuple(_mark(lane_of[(LaneKind.INPUT, r.topic, r.partition)], r.index, r.ts, r.key, r.value)
                   for r in scenario.inputs)
    internal = tuple(_internal_mark(lane_of[(LaneKind.INTERNAL, topic, 0)], n, ts, key, value, source)
                     for n, (topic, key, value, ts, source, _) in enumerate(internal_records))
    outputs = tuple(_mark(lane_of[(LaneKind.OUTPUT, o.topic, o.partition)], i, o.ts, o.key, o.value)
                    for i, o in enumerate(result.outputs))
    failure = None
    if result.failure is not None:
        failure = FailureMark(result.failure.input_index, str(result.failure.message))
    drops, lost_at = split_drops(result.drops)
    return Timeline(name=scenario.name, release=scenario.release, operator=topology.operator,
                    tasks=scenario.config.task_count, lanes=lanes, inputs=inputs, outputs=outputs,
                    steps=named_rows(graph_stream_times(scenario, taken), lanes, inputs),
                    intervals=tuple(graph_windows(scenario, plan, result.outputs,
                                                  lost_windows(scenario, result.drops))),
                    links=tuple(_link(i, o) for i, o in enumerate(result.outputs)), drops=drops, failure=failure,
                    internal=internal, lost_at=lost_at, close_rules=close_rules_of(scenario, plan))


def graph_plan(scenario):
    """The compiled plan of a graph scenario (``reference.model.graph.plan.compile_graph``)."""
    from kssim.reference.model.graph.plan import compile_graph

    return compile_graph(scenario.topology, scenario.profile, scenario.config.store)


def _internal_records(taken, sources: set) -> list:
    """The records the task took from internal topics: every take but the first of each input
    (the input itself; an internal topic is never a source topic either)."""
    out, seen = [], set()
    for record in taken:
        index = record[4]
        if index not in seen:
            seen.add(index)
            continue
        if record[0] not in sources:
            out.append(record)
    return out


def _internal_mark(lane: int, index: int, ts: int, key, value, source: int) -> RecordMark:
    """An internal record's mark. What is not a JSON value becomes plain data: a ``KTable#groupBy``
    change ``{"new", "old"}`` (labelled ``k:old→new``, either side empty when null: ``k:→2``
    adds 2 to group k, ``k:2→`` subtracts it); a foreign-key join's subscription and response
    wrappers ``{"pk", "instruction", "hash"}`` and ``{"foreign_value", "hash"}`` (the first 8 hex
    digits of the value hash), labelled ``fk:pk=K`` and ``pk:foreign value``."""
    instruction = getattr(value, "instruction", None)
    if instruction is not None:
        value = {"pk": value.pk, "instruction": getattr(instruction, "name", str(instruction)),
                 "hash": _short_hash(value.hash)}
        label = f"{cut_label(_compact(key), KEY_CHARS)}:pk={cut_label(_compact(value['pk']), VALUE_CHARS - 3)}"
        return RecordMark(lane, index, ts, key, value, MarkKind.NULL_KEY if key is None else MarkKind.VALUE, label,
                          source)
    if hasattr(value, "new") and hasattr(value, "old"):  # KTable#groupBy's Change: the adder's and subtractor's
        new_value, old_value = value.new, value.old
        value = {"new": new_value, "old": old_value}
        both_null = new_value is None and old_value is None
        side = (VALUE_CHARS - 1) // (1 if old_value is None or new_value is None else 2)
        text = "null" if both_null else "\u2192".join(
            "" if v is None else cut_label(_compact(v), side) for v in (old_value, new_value))
        kind = MarkKind.NULL_KEY if key is None else MarkKind.NULL_VALUE if both_null else MarkKind.VALUE
        label = f"{cut_label(_compact(key), KEY_CHARS)}:{cut_label(text, VALUE_CHARS)}"
        return RecordMark(lane, index, ts, key, value, kind, label, source)
    if hasattr(value, "foreign_value"):
        value = {"foreign_value": value.foreign_value, "hash": _short_hash(value.hash)}
        mark = _mark(lane, index, ts, key, value["foreign_value"], source)
        return attrs.evolve(mark, value=value)
    return _mark(lane, index, ts, key, value, source)


def _short_hash(value_hash) -> Optional[str]:
    return None if value_hash is None else bytes(value_hash).hex()[:8]


def _graph_lanes(scenario, sources, internal_topics, outputs) -> Tuple[Lane, ...]:
    """Every source topic's partitions, every internal topic (one partition: the driver's), then
    every sink topic's partitions (in the order the graph writes them) and any other topic an
    output went to."""
    config = scenario.config
    several = config.task_count > 1
    lanes = [Lane(LaneKind.INPUT, topic, p, f"{topic}[{p}]" if several else topic)
             for topic in sources for p in range(config.partition_count(topic))]
    lanes += [Lane(LaneKind.INTERNAL, topic, 0, topic) for topic in internal_topics]
    declared = [(topic, p) for topic in output_topics(scenario.topology) for p in range(config.task_count)]
    extra = sorted({(o.topic, o.partition) for o in outputs} - set(declared))
    lanes += [Lane(LaneKind.OUTPUT, topic, p, f"{topic}[{p}]" if several else topic) for topic, p in declared + extra]
    return tuple(lanes)


def graph_stream_times(scenario, taken) -> Iterable[StreamTimeStep]:
    """One step per input the graph's task took (in the order taken: the list's, up to a
    failure): the task's stream time after the input and every internal-topic record it caused
    (their timestamps move it too: ``PartitionGroup#streamTime`` covers the repartition topics'
    partitions of the task)."""
    after: Dict[int, int] = {}
    for record in taken:
        after[record[4]] = record[5]  # the last take of an input's processing holds its stream time
    for step, index in enumerate(after):
        yield StreamTimeStep(step, index, scenario.inputs[index].ts, 0, after[index])


def graph_windows(scenario, plan, outputs, lost: dict) -> List[Interval]:
    """The windows of a graph's windowed aggregations, with their close points: each sink topic
    whose records descend from a windowed aggregation (through ``suppress``, ``to_stream``,
    ``filter``, ``map_values``: nodes whose keys stay windowed) draws the windows its records
    name, as format 1 draws sessions and sliding windows (a graph's aggregation reads records the
    graph has filtered and re-keyed, not the inputs as such); the windows the run reports never
    emitted go with the first windowed aggregation."""
    profile = scenario.profile
    out: List[Interval] = []
    for n, (spec, topics) in enumerate(_windowed_sinks(plan)):
        mine = [o for o in outputs if o.topic in topics]
        own_lost = lost if n == 0 else {}
        out += _aggregation_windows(spec, profile, (), mine, own_lost)
    return out


def _windowed_sinks(plan) -> List[Tuple[object, set]]:
    """``(format-1 spec of a windowed aggregation, the sink topics its results reach)``, in the
    graph's order of the aggregations; a sink reached by none is left out."""
    from kssim.reference.model.graph.nodes import AggregateOp, ToOp

    nodes = plan.nodes
    by_aggregation: Dict[int, set] = {}
    for node_plan in nodes:
        node = node_plan.node
        if not isinstance(node.op, ToOp):
            continue
        index = node.upstream
        while index is not None:
            above = nodes[index]
            if isinstance(above.node.op, AggregateOp) and above.spec is not None:
                by_aggregation.setdefault(index, set()).add(node.op.topic)
                break
            if above.node.windowed is None:
                break
            index = above.node.upstream
    # an aggregation node with a format-1 spec is a windowed one (the plan gives no other a spec)
    aggregations = [n for n in nodes if isinstance(n.node.op, AggregateOp) and n.spec is not None]
    return [(n.spec, by_aggregation.get(n.node.index, set())) for n in aggregations]
