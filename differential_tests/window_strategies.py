"""Hypothesis strategies for the windowed operators: session, time (tumbling/hopping) and sliding
window aggregations, and the windowed-table join (seed 003's "WTable").

Windowed results turn on a handful of boundaries, so the timestamps are not drawn freely: each
record's timestamp is an *anchor* plus an *edge*. Anchors are the previous record's timestamp, the
task's stream time so far (the largest timestamp drawn), any earlier record's timestamp, or the
start of a window (a multiple of the advance). Edges are the offsets at which a rule flips for the
drawn topology (:func:`edges_of`):

- sessions: ``ts - gap`` / ``ts + gap`` (and one past them: the merge bounds, both inclusive), two
  gaps (a record between two sessions bridges them, out of order or not), ``gap + grace`` below
  stream time and one either side (the close time, with and without KAFKA-12718's gap);
- time windows: the window end (exclusive: ``size - 1``, ``size``), end + grace and one either
  side, one advance (hopping windows a record shares);
- sliding windows: ``d`` and ``d + 1`` (both ends inclusive; a record's right window starts at
  ``ts + 1``), ``2d`` (the store's fetch range), ``d + grace`` (late) and one either side.

Plus ties (edge 0), and jumps far past grace and the store's retention (emit-final windows that
retention expires before the close check reaches them, 3.8+). Keys come from
:data:`differential_tests.strategies.KEY_POOLS` plus null keys; values are letters (``sum``:
small integers) with a few nulls; several partitions, some of them idle (no record at all: their
stream time never moves), keys mostly where Kafka's default partitioner puts them; both stores
and processing orders; ``send_old_values``, ``retention_ms``, ``merge_separator``; emit on update
or on window close (3.3+); ``grace_ms: null`` (the legacy builders' default grace) where every
release asked allows it (never 4.0+, always before 2.1); ``suppress`` (2.1+) where the engines
under test implement it (``suppress=False`` otherwise). Every drawn document is valid in every
release asked for (the loader checks).
"""
from __future__ import annotations

import copy

from hypothesis import assume, strategies as st

from kssim.reference.model.keys import partition_for
from kssim.reference.model import topology
from kssim.reference.model.profiles import legacy_window_grace

WINDOWED_OPERATORS = topology.WINDOWED_OPERATORS
AGGREGATIONS = ("count", "sum", "string_adder", "string_reduce", "list")
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def window_caps(profiles) -> dict:
    """What every profile in ``profiles`` allows, by the rules of ``reference.model.profiles``."""
    every = lambda rule: all(getattr(p, rule) for p in profiles)  # noqa: E731
    return {
        "session_windows": every("session_windows"),
        "sliding_windows": every("sliding_windows"),
        "explicit_grace": every("windowed_grace"),
        "legacy_grace": not any(p.legacy_window_builders_removed for p in profiles),
        "emit_on_window_close": every("emit_on_window_close"),
        "suppress": every("suppress_operator"),
        "suppress_old_values": every("suppress_enables_old_values"),
        "in_memory": every("in_memory_window_stores"),
        "shift": every("kstream_to_table"),
    }


# --- topologies ----------------------------------------------------------------------------------

def _grace(draw, caps, values=(0, 0, 1, 2, 5)):
    """An explicit grace where every release has one (KIP-328, 2.1+), ``None`` (the legacy
    builders' default) where every release still has those (before 4.0), sometimes either."""
    if not caps["explicit_grace"]:
        assume(caps["legacy_grace"])  # no release pair spans both 2.0 and 4.0 with a grace to give
        return None
    if caps["legacy_grace"] and draw(st.integers(0, 7)) == 0:
        return None
    return draw(st.sampled_from(values))


def _aggregate_fields(draw, caps, minimum_retention):
    """The fields every windowed aggregation has: the aggregation, emit strategy, old values,
    merge separator and (2.1+) a store retention at or just above the minimum Kafka accepts."""
    fields = {"aggregation": draw(st.sampled_from(AGGREGATIONS))}
    if caps["emit_on_window_close"] and draw(st.booleans()):
        fields["emit"] = "on_window_close"
    if draw(st.booleans()):
        fields["send_old_values"] = True
    if draw(st.integers(0, 3)) == 0:
        fields["merge_separator"] = "|"
    if minimum_retention is not None and caps["explicit_grace"] and draw(st.integers(0, 4)) == 0:
        fields["retention_ms"] = minimum_retention + draw(st.sampled_from((0, 1, 7, 50)))
    return fields


@st.composite
def suppress_spec(draw, windowed: bool = True):
    """``KTable#suppress``: untilWindowCloses (windowed results only, strict buffers) or
    untilTimeLimit, with an unbounded buffer or one bounded by records or bytes (small bounds, so
    they overflow: ``shut_down`` fails the run there, ``emit_early`` evicts the oldest)."""
    until = draw(st.sampled_from(("window_close", "time_limit"))) if windowed else "time_limit"
    spec = {"until": until}
    if until == "time_limit":
        spec["time_limit_ms"] = draw(st.sampled_from((0, 1, 3, 10, 40)))
    kind = draw(st.sampled_from(("unbounded", "unbounded", "records", "bytes")))
    if kind != "unbounded":
        when_full = "shut_down" if until == "window_close" else draw(st.sampled_from(("shut_down", "emit_early")))
        bound = draw(st.sampled_from((1, 2, 3, 5))) if kind == "records" else draw(st.sampled_from((60, 120, 250, 500)))
        spec["buffer"] = {"max_records" if kind == "records" else "max_bytes": bound, "when_full": when_full}
    return spec


def _maybe_suppress(draw, topology, caps, suppress):
    # before 2.3 (KAFKA-8199) a suppressed table cannot send old values
    old_values_ok = caps["suppress_old_values"] or not topology.get("send_old_values")
    if suppress and caps["suppress"] and old_values_ok and draw(st.integers(0, 3)) == 0:
        topology["suppress"] = draw(suppress_spec(windowed=True))
    return topology


@st.composite
def session_topology(draw, caps, suppress=False):
    assume(caps["session_windows"])
    gap = draw(st.sampled_from((1, 2, 3, 5, 10)))
    grace = _grace(draw, caps)
    # retention_ms only with an explicit grace: with the legacy default grace the minimum Kafka
    # accepts (gap + grace) is about a day, far beyond any timestamp drawn here
    minimum = gap + grace if grace is not None else None
    topo = {"operator": "session_aggregate", "gap_ms": gap, "grace_ms": grace, **_aggregate_fields(draw, caps, minimum)}
    return _maybe_suppress(draw, topo, caps, suppress)


def _time_window(draw, caps):
    size = draw(st.sampled_from((1, 2, 3, 5, 10)))
    advance = size if draw(st.booleans()) else draw(st.integers(1, size))
    return {"size_ms": size, "advance_ms": advance, "grace_ms": _grace(draw, caps)}


@st.composite
def window_topology(draw, caps, suppress=False):
    window = _time_window(draw, caps)
    minimum = window["size_ms"] + window["grace_ms"] if window["grace_ms"] is not None else None
    topo = {"operator": "window_aggregate", **window, **_aggregate_fields(draw, caps, minimum)}
    return _maybe_suppress(draw, topo, caps, suppress)


@st.composite
def sliding_topology(draw, caps, suppress=False):
    assume(caps["sliding_windows"])
    difference = draw(st.sampled_from((0, 1, 2, 3, 5, 10)))
    grace = draw(st.sampled_from((0, 0, 1, 2, 5)))  # SlidingWindows always take an explicit grace
    topo = {"operator": "sliding_aggregate", "time_difference_ms": difference, "grace_ms": grace,
            **_aggregate_fields(draw, caps, 2 * difference + grace)}
    return _maybe_suppress(draw, topo, caps, suppress)


@st.composite
def windowed_table_join_topology(draw, caps, suppress=False):
    window = _time_window(draw, caps)
    topo = {"operator": "windowed_table_join", "join": draw(st.sampled_from(("inner", "left", "outer"))),
            "window": window,
            "left_aggregation": draw(st.sampled_from(AGGREGATIONS)),
            "right_aggregation": draw(st.sampled_from(AGGREGATIONS)),
            "joiner": "concat", "joiner_separator": "-"}
    if caps["shift"] and draw(st.booleans()):
        # a shift onto window starts (the day-a-week-earlier use) or off them (windows that never meet)
        topo["shift_ms"] = draw(st.sampled_from((window["advance_ms"], window["size_ms"], 2 * window["advance_ms"], 1, 7)))
    if draw(st.booleans()):
        topo["send_old_values"] = True
    if draw(st.integers(0, 3)) == 0:
        topo["merge_separator"] = "|"
    return _maybe_suppress(draw, topo, caps, suppress)


WINDOW_TOPOLOGIES = {
    "session_aggregate": session_topology,
    "window_aggregate": window_topology,
    "sliding_aggregate": sliding_topology,
    "windowed_table_join": windowed_table_join_topology,
}

INPUT_TOPICS = {
    "session_aggregate": ("input",),
    "window_aggregate": ("input",),
    "sliding_aggregate": ("input",),
    "windowed_table_join": ("left", "right"),
}


# --- timestamps at the edges ------------------------------------------------------------------

def effective_grace(grace_ms, size_ms) -> int:
    """The grace a topology runs with: its own, or the legacy builders' default (1 day - size)."""
    return legacy_window_grace(size_ms) if grace_ms is None else grace_ms


def _window_of(topology) -> dict:
    return topology.get("window", topology)


def edges_of(topology) -> dict:
    """The offsets at which ``topology``'s rules flip: ``up`` (added to an anchor: records just
    inside or outside a window, bridges, the close time of an earlier record's window: it
    closes, or the store's retention hides it, exactly then) and ``late`` (subtracted from
    stream time: records just inside or beyond grace), and ``align`` (the advance, for
    window-start anchors; None for sessions)."""
    op = topology["operator"]
    if op == "session_aggregate":
        gap = topology["gap_ms"]
        close = gap + effective_grace(topology["grace_ms"], gap)
        up = (1, gap - 1, gap, gap + 1, 2 * gap, 2 * gap + 1, 3 * gap, close, close + 1)
        late = (gap, gap + 1, close - 1, close, close + 1, close + gap)
        jumps = (close + 1, 2 * close + gap + 1)
        return {"up": up, "late": late, "jumps": jumps, "align": None}
    if op == "sliding_aggregate":
        d, grace = topology["time_difference_ms"], topology["grace_ms"]
        up = (1, d, d + 1, 2 * d, 2 * d + 1, d + grace, d + grace + 1, 2 * d + grace + 1)
        late = (d, d + 1, d + grace - 1, d + grace, d + grace + 1, 2 * d + grace)
        jumps = (d + grace + 2, 3 * d + 2 * grace + 3)
        return {"up": up, "late": late, "jumps": jumps, "align": None}
    window = _window_of(topology)
    size, advance = window["size_ms"], window["advance_ms"]
    close = size + effective_grace(window["grace_ms"], size)
    shift = topology.get("shift_ms", 0)
    up = (1, advance - 1, advance, size - 1, size, size + 1, close, close + 1) + ((shift,) if shift else ())
    late = (size, close - 1, close, close + 1)
    jumps = (close + 1, 2 * close + size + 1)
    return {"up": up, "late": late, "jumps": jumps, "align": advance}


@st.composite
def edge_timestamps(draw, n, edges):
    """``n`` timestamps (>= 0): each an anchor (the previous timestamp, stream time, an earlier
    timestamp, or a window start) plus an edge offset, ties and small steps, now and then a jump
    past grace and retention, a record just before or beyond the close time, or one between two
    earlier records (an edge above the lower or below the higher one, or halfway)."""
    out = []
    for _ in range(n):
        if not out:
            out.append(draw(st.sampled_from((0, 0, 1, 3, 10, 25))))
            continue
        stream_time = max(out)
        move = draw(st.sampled_from(("tie", "step", "step", "edge", "edge", "edge", "late", "late", "jump", "between")))
        if move == "between" and len(set(out)) >= 2:
            # between two earlier timestamps: a bridge between two sessions, a record in the gap
            # between two windows, out of order
            low, high = sorted(draw(st.lists(st.sampled_from(sorted(set(out))), min_size=2, max_size=2, unique=True)))
            edge = draw(st.sampled_from(edges["up"]))
            out.append(max(0, draw(st.sampled_from(((low + high) // 2, low + edge, high - edge)))))
            continue
        if move == "between":
            move = "edge"
        if move == "late":
            out.append(max(0, stream_time - draw(st.sampled_from(edges["late"])) + draw(st.sampled_from((0, 0, -1, 1)))))
            continue
        if move == "jump":
            out.append(stream_time + draw(st.sampled_from(edges["jumps"])))
            continue
        anchors = ["previous", "stream", "earlier"] + (["window"] if edges["align"] else [])
        anchor = draw(st.sampled_from(anchors))
        if anchor == "previous":
            base = out[-1]
        elif anchor == "stream":
            base = stream_time
        elif anchor == "earlier":
            base = draw(st.sampled_from(out))
        else:
            base = stream_time - stream_time % edges["align"]
        if move == "tie":
            offset = 0
        elif move == "step":
            offset = draw(st.sampled_from((1, 2, -1, -2)))
        else:
            offset = draw(st.sampled_from(edges["up"])) * draw(st.sampled_from((1, 1, -1)))
        out.append(max(0, base + offset))
    return out


# --- records and run configuration -------------------------------------------------------------

@st.composite
def window_config(draw, topics, in_memory=True):
    """One to three partitions per topic (co-partitioned), some of them idle, both stores (the
    in-memory ones from 2.3), both processing orders; returns the config and the partitions
    records may go to."""
    cfg = {"order": draw(st.sampled_from(("as_listed", "as_listed", "timestamp_sync"))),
           "store": draw(st.sampled_from(("rocksdb", "in_memory") if in_memory else ("rocksdb",)))}
    partitions = draw(st.sampled_from((1, 1, 1, 2, 3)))
    if partitions == 1:
        return cfg, (0,)
    cfg["partitions"] = {t: partitions for t in topics}
    # a partition without records is idle: its task's stream time never moves
    active = draw(st.lists(st.integers(0, partitions - 1), min_size=1, max_size=partitions, unique=True))
    return cfg, tuple(sorted(active))


def _value_pool(aggregation):
    """Values an aggregation can take: small integers for ``sum``, letters otherwise."""
    if aggregation == "sum":
        return st.integers(1, 9)
    return st.sampled_from(_LETTERS)


@st.composite
def window_records(draw, topology, topics, partitions, active, keys, max_records=20):
    """Records whose timestamps sit on ``topology``'s edges (:func:`edge_timestamps`), keys from
    ``keys`` plus null keys, values by each topic's aggregation with a few nulls (``sum`` of a null
    fails the run, so rarer there), partitions among the ``active`` ones: mostly where Kafka's
    default partitioner puts the key, otherwise anywhere."""
    n = draw(st.integers(1, max_records))
    ts = draw(edge_timestamps(n, edges_of(topology)))
    aggregation = {"input": topology.get("aggregation", "count"),
                   "left": topology.get("left_aggregation"), "right": topology.get("right_aggregation")}
    key_choice = st.sampled_from(tuple(keys) + (None,)).map(copy.deepcopy)
    by_partitioner = draw(st.booleans())
    out = []
    for i in range(n):
        topic = draw(st.sampled_from(topics))
        agg = aggregation[topic]
        null_odds = 12 if agg == "sum" else 6
        value = None if draw(st.integers(0, null_odds)) == 0 else draw(_value_pool(agg))
        key = draw(key_choice)
        rec = {"topic": topic, "key": key, "value": value, "ts": ts[i]}
        if partitions > 1:
            if by_partitioner and key is not None:
                rec["partition"] = active[partition_for(key, len(active))]
            else:
                rec["partition"] = draw(st.sampled_from(active))
        out.append(rec)
    return out


@st.composite
def window_scenario(draw, operator, caps, keys, suppress=False, max_records=20):
    """A scenario document for the windowed ``operator`` (the caller checks it in every release)."""
    topology = draw(WINDOW_TOPOLOGIES[operator](caps, suppress))
    topics = INPUT_TOPICS[operator]
    cfg, active = draw(window_config(topics, caps["in_memory"]))
    partitions = max(cfg.get("partitions", {"_": 1}).values())
    inputs = draw(window_records(topology, topics, partitions, active, keys, max_records))
    return {"format": "kssim-scenario/1", "name": f"{operator}-generated", "topology": topology,
            "config": cfg, "inputs": inputs}

