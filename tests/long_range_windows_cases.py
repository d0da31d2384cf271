"""Windowed aggregations and joins at the edge of the long range (timestamps near ``Long.MAX_VALUE``), shared
by the reference tests (``tests/reference/test_long_range_windows.py``) and the Spark ones
(``tests/spark/test_spark_long_range_windows.py``): each case's scenario and the outputs, drops and
failure derived in its comments from Kafka's code, which computes window bounds in Java longs.

Facts (Kafka's source at the release tags):

- ``TimeWindows#windowsFor`` (0.10.0-4.x): ``new TimeWindow(start, start + size)`` for every start
  from the first up to ``ts`` (the last is ``ts - ts % advance``), then ``start += advance``.
- ``Window``'s constructor (0.10.2+, KAFKA-3452): ``IllegalArgumentException`` for a negative start
  ("Window startMs time cannot be negative.") or an end below the start ("Window endMs time cannot
  be smaller than window startMs time."); 0.10.0-0.10.1 check nothing.
- ``KStreamWindowAggregate``: ``windowEnd > observedStreamTime - grace``: no overflow.
- ``KStreamSlidingWindowAggregate``: 3.3+ ``ts + d < closeTime`` drops the record; 2.7-3.2
  ``ts + 1 + d <= closeTime``.
- ``KStreamSessionWindowAggregate``: ``store.findSessions(key, ts - gap, ts + gap)``; the RocksDB
  session stores' range ends at ``SessionKeySchema.upperRangeFixedWindow(key, to)`` = ``new
  SessionWindow(to, Long.MAX_VALUE)``; ``InMemorySessionStore`` filters ``start <= to`` without a
  window.
- ``KStreamKStreamJoin`` (0.10.0-3.9, ``...LeftSide`` / ``RightSide`` alike): ``timeFrom =
  Math.max(0L, ts - joinBefore)``, ``timeTo = Math.max(0L, ts + joinAfter)``, then
  ``otherWindow.fetch(key, timeFrom, timeTo)``; an outer record that found nothing is emitted at
  once iff ``timeTo < sharedTimeTracker.streamTime`` (3.1+), else held. The window store's fetch of
  a reversed range: before 2.1 ``Segments#segments`` loops from the first segment id to the last
  (no iteration); 2.1-3.3 ``segments.subMap(segmentId(from), true, segmentId(to), true)``, and
  ``TreeMap#subMap`` throws ``IllegalArgumentException("fromKey > toKey")``; 3.4+
  (``AbstractRocksDBSegmentedBytesStore#fetch``) and ``InMemoryWindowStore`` return an empty
  iterator when ``to < from``. Segment interval ``max(retention / 2, 60 000)``.
- The emission scan (3.1+): 3.1.1-3.7 exit early iff ``minTime >= streamTime - joinBefore - grace``
  (a subtraction: no overflow), walk until ``ts + joinAfter + grace >= streamTime``; 3.8+ exit iff
  ``minTime + joinAfter + grace >= streamTime``, an entry open iff ``ts + lookBack + grace >=
  streamTime``. A sum past ``Long.MAX_VALUE`` is negative: the entry counts as closed.
- ``SlidingWindows`` accepts a time difference of 0 (only a negative one throws), and so do the
  store suppliers; ``KStreamSlidingWindowAggregate`` then creates the record's left window as
  ``new TimeWindow(ts - 0, ts)``, and ``TimeWindow``'s constructor throws
  ``IllegalArgumentException("Window endMs must be greater than window startMs.")``.
- The shifted windowed-table join's mapper (the corpus's DSL): ``new TimeWindow(start + shift, end +
  shift)``; ``Window``'s constructor throws for a negative start or an end below the start.
"""
from __future__ import annotations

from kssim_testing import scenario

from kssim.reference.model.codes import DropReason, FailureCode

MAX = (1 << 63) - 1
#: ``start + size`` past ``Long.MAX_VALUE`` as a Java long holds it
WRAP = 1 << 64


def _records(*items):
    return [("input",) + item for item in items]


def _time(size, advance=None, grace=0, **more):
    topology = {"operator": "window_aggregate", "size_ms": size, "advance_ms": advance or size, "grace_ms": grace,
                "aggregation": "count"}
    topology.update(more)
    return topology


def _sliding(d, grace):
    return {"operator": "sliding_aggregate", "time_difference_ms": d, "grace_ms": grace, "aggregation": "count"}


def _session(gap, grace=0, **more):
    topology = {"operator": "session_aggregate", "gap_ms": gap, "grace_ms": grace, "aggregation": "count"}
    topology.update(more)
    return topology


def _join(join, before, after, grace, api="time_difference"):
    return {"operator": "stream_stream_join", "join": join, "window_api": api, "joiner": "concat",
            "window": {"before_ms": before, "after_ms": after, "grace_ms": grace}}


def _windowed_join(join, size, advance, shift):
    return {"operator": "windowed_table_join", "join": join, "shift_ms": shift,
            "window": {"size_ms": size, "advance_ms": advance, "grace_ms": 0}}


def _sides(*items):
    return list(items)


def wk(key, start, end):
    return {"key": key, "start": start, "end": end}


#: name -> (scenario, outputs as (key, value, ts, input), drops as (input, reason), failure as
#: (input, code) or None)
CASES = {
    # tumbling 10: ts MAX-17 and MAX-8 are in [MAX-17, MAX-7); ts MAX-7's window would end at
    # MAX+3, which wraps: new TimeWindow throws at input 2, and input 3 is never processed
    "tumbling-3.9": (
        scenario(_time(10), _records(("k", "a", MAX - 17), ("k", "b", MAX - 8), ("k", "c", MAX - 7),
                                     ("k", "d", 5))),
        [(wk("k", MAX - 17, MAX - 7), 1, MAX - 17, 0), (wk("k", MAX - 17, MAX - 7), 2, MAX - 8, 1)],
        [], (2, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # hopping 20/10: ts MAX-25 has windows [MAX-37, MAX-17) and [MAX-27, MAX-7); ts MAX-16's last
    # window [MAX-17, MAX+3) wraps: windowsFor throws before [MAX-27, MAX-7), which fits, is updated
    "hopping-3.9": (
        scenario(_time(20, 10), _records(("k", "a", MAX - 25), ("k", "b", MAX - 16))),
        [(wk("k", MAX - 37, MAX - 17), 1, MAX - 25, 0), (wk("k", MAX - 27, MAX - 7), 1, MAX - 25, 0)],
        [], (1, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # a window size near the long range: 2^62 every 2^61; ts 3 * 2^61's last window would end at
    # 5 * 2^61 > MAX
    "hopping-huge-size-3.9": (
        scenario(_time(1 << 62, 1 << 61), _records(("k", "a", 3), ("k", "b", (1 << 61) + 1),
                                                   ("k", "c", 3 << 61))),
        [(wk("k", 0, 1 << 62), 1, 3, 0), (wk("k", 0, 1 << 62), 2, (1 << 61) + 1, 1),
         (wk("k", 1 << 61, 3 << 61), 1, (1 << 61) + 1, 1)],
        [], (2, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # 0.10.1 checks no window: ts MAX-16's windows [MAX-27, MAX-7) and [MAX-17, MAX+3 wrapped)
    # are both aggregated, forwarded (before 2.0) in HashMap order: Long#hashCode spread puts
    # MAX-17 in bucket 1 and MAX-27 in bucket 11 of 16; at ts MAX-6 the last start MAX-7 plus
    # the advance wraps below the timestamp: windowsFor's loop never ends
    "hopping-0.10.1": (
        scenario(_time(20, 10, grace=None), _records(("k", "a", MAX - 16), ("k", "b", MAX - 6)),
                 semantics="0.10.1"),
        [(wk("k", MAX - 17, MAX - 17 + 20 - WRAP), 1, MAX - 16, 0), (wk("k", MAX - 27, MAX - 7), 1, MAX - 16, 0)],
        [], (1, FailureCode.WINDOWS_FOR_OUT_OF_MEMORY)),
    # 0.10.2 checks: the same first record fails at once
    "hopping-0.10.2": (
        scenario(_time(20, 10, grace=None), _records(("k", "a", MAX - 16), ("k", "b", MAX - 6)),
                 semantics="0.10.2"),
        [], [], (0, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # emit on window close, grace 100: [MAX-127, MAX-117) closes when stream time MAX-8 passes its
    # end + grace (the store, retention 110, still shows it: MAX-127 >= MAX-17 - 110); [MAX-17,
    # MAX-7) would close at MAX+93: never
    "final-3.9": (
        scenario(_time(10, grace=100, emit="on_window_close"), _records(("k", "a", MAX - 120), ("k", "b", MAX - 8))),
        [(wk("k", MAX - 127, MAX - 117), 1, MAX - 120, 1)], [], None),
    # sliding d 10, grace 100: ts MAX-10's left window [MAX-20, MAX-10] is aggregated; at ts MAX-9
    # ts + d wraps to a negative number, below the close time: dropped as late (3.3+)
    "sliding-3.9": (
        scenario(_sliding(10, 100), _records(("k", "a", MAX - 10), ("k", "b", MAX - 9))),
        [(wk("k", MAX - 20, MAX - 10), 1, MAX - 10, 0)], [(1, DropReason.EXPIRED_WINDOW)], None),
    # 3.2 checks ts + 1 + d <= close time: at ts MAX-10 that sum is MAX+1, wrapped: dropped too
    "sliding-3.2": (
        scenario(_sliding(10, 100), _records(("k", "a", MAX - 10), ("k", "b", MAX - 9)), semantics="3.2"),
        [], [(0, DropReason.EXPIRED_WINDOW), (1, DropReason.EXPIRED_WINDOW)], None),
    # session gap 10 (RocksDB): ts MAX-12 looks up to MAX-2; ts MAX-5's lookup up to MAX+5 wraps,
    # and new SessionWindow(negative, MAX) throws
    "session-rocksdb-3.9": (
        scenario(_session(10), _records(("k", "a", MAX - 12), ("k", "b", MAX - 5))),
        [(wk("k", MAX - 12, MAX - 12), 1, MAX - 12, 0)], [], (1, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # the in-memory store finds no session starting by the wrapped bound: MAX-5 starts a session of
    # its own, although MAX-12 lies within the gap
    "session-memory-3.9": (
        scenario(_session(10), _records(("k", "a", MAX - 12), ("k", "b", MAX - 5)), store="in_memory"),
        [(wk("k", MAX - 12, MAX - 12), 1, MAX - 12, 0), (wk("k", MAX - 5, MAX - 5), 1, MAX - 5, 1)], [], None),
    # before 2.1 (0.10.2: no grace) the RocksDB store throws the same way
    "session-rocksdb-0.10.2": (
        scenario(_session(10, grace=None), _records(("k", "a", MAX - 12), ("k", "b", MAX - 5)), semantics="0.10.2"),
        [(wk("k", MAX - 12, MAX - 12), 1, MAX - 12, 0)], [], (1, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # --- stream-stream joins (before = after = 10) ---------------------------------------------
    # left B@MAX-5 looks up [MAX-15, MAX+5]: the upper bound wraps, Math.max makes it 0, and the
    # reversed range [MAX-15, 0] finds nothing, although a@MAX-15 is within 10 of it; so does the
    # right b@MAX-3 ([MAX-13, MAX+7], wrapped); A@MAX-20 ([MAX-30, MAX-10]) still joins a
    "join-inner-3.9": (
        scenario(_join("inner", 10, 10, 0), _sides(("right", "k", "a", MAX - 15), ("left", "k", "A", MAX - 20),
                                                   ("left", "k", "B", MAX - 5), ("right", "k", "b", MAX - 3))),
        [("k", "A+a", MAX - 15, 1)], [], None),
    # 2.1-3.3 RocksDB: fetch(MAX-15, 0) asks the segment TreeMap for subMap(segmentId(MAX-15), 0),
    # which throws at B
    "join-inner-3.3": (
        scenario(_join("inner", 10, 10, 0), _sides(("right", "k", "a", MAX - 15), ("left", "k", "A", MAX - 20),
                                                   ("left", "k", "B", MAX - 5), ("right", "k", "b", MAX - 3)),
                 semantics="3.3"),
        [("k", "A+a", MAX - 15, 1)], [], (2, FailureCode.WINDOW_FETCH_REVERSED_RANGE)),
    # the in-memory store returns nothing for to < from in every release
    "join-inner-in-memory-3.3": (
        scenario(_join("inner", 10, 10, 0), _sides(("right", "k", "a", MAX - 15), ("left", "k", "A", MAX - 20),
                                                   ("left", "k", "B", MAX - 5), ("right", "k", "b", MAX - 3)),
                 semantics="3.3", store="in_memory"),
        [("k", "A+a", MAX - 15, 1)], [], None),
    # 2.0 loops over no segment; the result carries the triggering record's ts (before KAFKA-6455)
    "join-inner-2.0": (
        scenario(_join("inner", 10, 10, None, api="legacy"),
                 _sides(("right", "k", "a", MAX - 15), ("left", "k", "A", MAX - 20), ("left", "k", "B", MAX - 5),
                        ("right", "k", "b", MAX - 3)), semantics="2.0"),
        [("k", "A+a", MAX - 20, 1)], [], None),
    # before -5, after 10: left A@MAX-2's bounds both wrap, to [0, 0], which finds the right record
    # at ts 0 (its store's clock is 0: still shown)
    "join-negative-before-3.9": (
        scenario(_join("inner", -5, 10, 0), _sides(("right", "k", "a", 0), ("left", "k", "A", MAX - 2))),
        [("k", "A+a", MAX - 2, 1)], [], None),
    # left join, grace 100 (3.8+ scan): A@MAX-20 is held (its window ends at MAX-10); B@MAX-5's
    # scan: minTime + after + grace = MAX-20 + 110 wraps, no early exit; A's close sum wraps too:
    # flushed A+null at once; B's own lookup wraps (0 < stream time): B+null at once; a@MAX-15
    # still finds A in the left store: A+a
    "join-left-scan-3.9": (
        scenario(_join("left", 10, 10, 100), _sides(("left", "k", "A", MAX - 20), ("left", "k2", "B", MAX - 5),
                                                    ("right", "k", "a", MAX - 15))),
        [("k", "A+null", MAX - 20, 1), ("k2", "B+null", MAX - 5, 1), ("k", "A+a", MAX - 15, 2)], [], None),
    # 3.1.1-3.7 exit early by a subtraction (MAX-20 >= MAX-5 - 10 - 100): A stays held and joins a
    "join-left-scan-3.7": (
        scenario(_join("left", 10, 10, 100), _sides(("left", "k", "A", MAX - 20), ("left", "k2", "B", MAX - 5),
                                                    ("right", "k", "a", MAX - 15)), semantics="3.7"),
        [("k2", "B+null", MAX - 5, 1), ("k", "A+a", MAX - 15, 2)], [], None),
    # ... until an entry that is really closed lets the scan walk: Z@10 is flushed at A's scan
    # (minTime stays 10), and B's scan walks on to A, whose ts + after + grace wraps: closed
    "join-left-walk-3.7": (
        scenario(_join("left", 10, 10, 100), _sides(("left", "k", "Z", 10), ("left", "k", "A", MAX - 20),
                                                    ("left", "k2", "B", MAX - 5), ("right", "k", "a", MAX - 15)),
                 semantics="3.7"),
        [("k", "Z+null", 10, 1), ("k", "A+null", MAX - 20, 2), ("k2", "B+null", MAX - 5, 2),
         ("k", "A+a", MAX - 15, 3)], [], None),
    # --- sliding windows of time difference 0 ------------------------------------------------
    # the null value is dropped first; k@5 creates its left window new TimeWindow(5, 5): throws
    "sliding-zero-3.9": (
        scenario(_sliding(0, 0), _records(("k", None, 3), ("k", "a", 5), ("k", "b", 7))),
        [], [(0, DropReason.NULL_VALUE)], (1, FailureCode.TIME_WINDOW_EMPTY)),
    # 2.7-3.2: ts + 1 + 0 wraps at ts MAX, and MAX-1 + 1 <= close MAX: every record is late
    "sliding-zero-late-3.2": (
        scenario(_sliding(0, 0), _records(("k", "a", MAX), ("k", "b", MAX - 1), ("k", "c", MAX)), semantics="3.2"),
        [], [(0, DropReason.EXPIRED_WINDOW), (1, DropReason.EXPIRED_WINDOW), (2, DropReason.EXPIRED_WINDOW)], None),
    # 3.3+: ts + 0 < close is false for the first record: it throws
    "sliding-zero-late-3.9": (
        scenario(_sliding(0, 0), _records(("k", "a", MAX), ("k", "b", MAX - 1), ("k", "c", MAX))),
        [], [], (0, FailureCode.TIME_WINDOW_EMPTY)),
    # --- windowed-table join, shifted -----------------------------------------------------------
    # tumbling 10 (MAX-7 is a multiple of 10), shift 20: right [MAX-37, MAX-27) shifts to [MAX-17,
    # MAX-7), which left MAX-10's window joins; right [MAX-27, MAX-17) would shift to end MAX+3
    "windowed-join-shift-3.9": (
        scenario(_windowed_join("inner", 10, 10, 20), _sides(("right", "k", "a", MAX - 30), ("left", "k", "A", MAX - 10),
                                                             ("right", "k", "b", MAX - 20), ("left", "k", "B", MAX - 9))),
        [(wk("k", MAX - 17, MAX - 7), [1, 1], MAX - 10, 1)], [], (2, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # hopping 20/10, shift 25, outer: right MAX-50's windows shift to [MAX-42, MAX-22) and [MAX-32,
    # MAX-12); right MAX-30's first window shifts to [MAX-22, MAX-2), sent to the repartition topic,
    # its second to an end of MAX+8: the mapper throws, and the first is never read back
    "windowed-join-shift-hopping-3.9": (
        scenario(_windowed_join("outer", 20, 10, 25), _sides(("right", "k", "a", MAX - 50), ("right", "k", "b", MAX - 30))),
        [(wk("k", MAX - 42, MAX - 22), [None, 1], MAX - 50, 0), (wk("k", MAX - 32, MAX - 12), [None, 1], MAX - 50, 0)],
        [], (1, FailureCode.WINDOW_ILLEGAL_ARGUMENT)),
    # --- the same operators inside graphs (the format-1 operators run as graph nodes) -----------
    "graph-join-left-scan-3.9": (
        scenario({"graph": [{"stream": "left", "id": "l"}, {"stream": "right", "id": "r"},
                            {"from": "l", "left_join": {"other": "r", "joiner": "concat",
                                                        "window": {"before_ms": 10, "after_ms": 10, "grace_ms": 100}}},
                            {"to": "output"}]},
                 _sides(("left", "k", "A", MAX - 20), ("left", "k2", "B", MAX - 5), ("right", "k", "a", MAX - 15))),
        [("k", "A+null", MAX - 20, 1), ("k2", "B+null", MAX - 5, 1), ("k", "A+a", MAX - 15, 2)], [], None),
    "graph-sliding-zero-3.9": (
        scenario({"graph": [{"stream": "input"}, {"group_by_key": {}},
                            {"windowed_by": {"sliding": {"time_difference_ms": 0, "grace_ms": 0}}}, {"count": {}},
                            {"to_stream": {}}, {"to": "output"}]},
                 _records(("k", "a", 5), ("k", "b", 7))),
        [], [], (0, FailureCode.TIME_WINDOW_EMPTY)),
}


def outputs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


def failure(result):
    return None if result.failure is None else (result.failure.input_index, result.failure.code)
