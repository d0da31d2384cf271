"""Windowed aggregations at the edge of the long range (timestamps near ``Long.MAX_VALUE``), shared
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
}


def outputs(result):
    return [(o.key, o.value, o.ts, o.input_index) for o in result.outputs]


def drops(result):
    return [(d.input_index, d.reason) for d in result.drops]


def failure(result):
    return None if result.failure is None else (result.failure.input_index, result.failure.code)
