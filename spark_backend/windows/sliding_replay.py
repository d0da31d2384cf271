"""The sequential part of a sliding-window aggregation: a task's (or one key's) records in order.

``KStreamSlidingWindowAggregate#process`` decides what to update and create from the windows its
key already has (``processReverse``: the key's windows starting in ``[ts - 2d, ts + 1]``, latest
first; ``processEarly`` for ``ts < d``: those starting in ``[0, ts + 1]``, earliest first). Which of
those windows the store still shows depends on the store's clock, ``observedStreamTime``: the
largest window *start* ever put, by any key of the task. Unlike a session store's clock (the
stream time), it is not known before the replay: a record puts windows starting anywhere from
``ts - d`` to ``ts + 1`` depending on its key's windows (a right window ``[ts + 1, ts + 1 + d]`` only
when a later record of the key exists). So a task whose records reach below the store's possible
floor (``sliding.py`` decides) is replayed in one pass, all keys together, with the store modelled
as Kafka's (``store_models``: what the fetches see, which puts are kept, what the emit-final
``fetchAll`` still finds); any other task one key at a time (a *scope* is a key or a task).

Per record (digest C.2): a null key or null value is dropped before anything else (``sliding.py``,
set-based); the stream time is the largest ``ts`` of the records that passed that check; a record
whose window ``[ts, ts + d]`` ends before the close time (stream time - grace) is dropped
(``expired_window``; in Java longs, so a record whose ``ts + d`` wraps past ``Long.MAX_VALUE`` is
dropped too: ``sliding_late_check_by_window_end``); with a time difference of 0 the next record
fails (``time_window_empty``: its left window ``new TimeWindow(ts, ts)`` throws, before any window
exists); an update of a window that has closed (end before the close time; at or
before it until 3.3, ``sliding_window_close_inclusive``) is skipped with a drop of its own, as
Kafka counts it; forwarded results carry the window's largest record ts. Under emit-on-window-close
(3.3+) a record that took the normal path (not early, not late) forwards, once the close time
moved on, every key's windows starting in ``[max(0, lastClose - d), close - d - 1]`` that the store
still finds, by start and key bytes.
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right, insort

from sortedcontainers import SortedList

from kssim.reference.model.aggregations import aggregation_of
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import serialized_key

from kssim.spark_backend.runtime.outputs import DROP, EVENT_DDL, FAILURE, OLD_JOINED, OLD_NONE, OLD_NULL, OUTPUT
from kssim.spark_backend.windows.replay_rows import arrow_batch, json_value, record_type, windowed_key_text
from kssim.spark_backend.windows.store_models import BY_CLOCK, floor

#: the input columns the replay reads (``sliding.py`` selects them)
IN_COLUMNS = (
    "sid", "task", "scope", "key", "idx", "g1", "g2", "g3", "g4", "seq", "ts", "value", "stream_time", "send_old",
    "sl_diff", "sl_grace", "sl_retention", "sl_segment", "sl_final", "sl_agg", "sl_in_memory",
    "sl_fetch_model", "sl_put_model", "sl_emit_model", "sliding_window_close_inclusive",
    "sliding_late_check_by_window_end",
)
_ROW = ("sid", "task", "scope", "key", "idx", "g1", "g2", "g3", "g4", "seq", "ts", "value", "stream_time")
#: one input row as the replay reads it
_Record = record_type("SlidingRecord", _ROW)
_EXPIRED = DropReason.EXPIRED_WINDOW.code
_UNEMITTED = DropReason.UNEMITTED_WINDOW.code
_EXPIRED_PUT = DropReason.EXPIRED_WINDOW_PUT.code
_EMPTY_WINDOW = FailureCode.TIME_WINDOW_EMPTY.code


class _Settings:
    """One scenario's settings, read once from its first row."""

    __slots__ = ("d", "grace", "retention", "segment", "final", "agg", "in_memory", "fetch_model", "put_model",
                 "emit_model", "close_inclusive", "late_by_window_end", "send_old")

    def __init__(self, c, i, aggregations):
        self.d, self.grace = c["sl_diff"][i], c["sl_grace"][i]
        self.retention, self.segment = c["sl_retention"][i], c["sl_segment"][i]
        self.final, self.in_memory = c["sl_final"][i], c["sl_in_memory"][i]
        name = c["sl_agg"][i]
        if name is None:  # a Python API aggregation, shipped with the function
            self.agg = aggregations[c["sid"][i]]
        else:
            if name not in aggregations:
                aggregations[name] = aggregation_of(name)
            self.agg = aggregations[name]
        self.fetch_model, self.put_model, self.emit_model = (c["sl_fetch_model"][i], c["sl_put_model"][i],
                                                             c["sl_emit_model"][i])
        # [sliding_window_close_inclusive] KAFKA-13739 (3.3): a window ending at the close time is updated
        self.close_inclusive = c["sliding_window_close_inclusive"][i]
        # [sliding_late_check_by_window_end] KAFKA-13785 (3.3): ts + d < close (before: ts + 1 + d <= close)
        self.late_by_window_end = c["sliding_late_check_by_window_end"][i]
        self.send_old = bool(c["send_old"][i])


#: Java's ``Long.MAX_VALUE``, and the span a long sum wraps by
_LONG_MAX, _LONG_SPAN = (1 << 63) - 1, 1 << 64


def _late(ts, s, close) -> bool:
    """The record's late check as Kafka computes it, in Java longs: a sum past ``Long.MAX_VALUE``
    wraps to a negative number, below every close time, so such a record is dropped whatever the
    grace (3.3+ ``ts + d < close``; 2.7-3.2 ``ts + 1 + d <= close``)."""
    if s.late_by_window_end:
        end = ts + s.d
        return (end - _LONG_SPAN if end > _LONG_MAX else end) < close
    after = ts + 1 + s.d
    return (after - _LONG_SPAN if after > _LONG_MAX else after) <= close


class _KeyWindows:
    """One key's windows in the store: ``starts`` ascending, ``values[start] = [aggregate, largest
    record ts]``. Cost: range lookups O(log n) (``bisect``), creating a window O(n) list moves, n
    being the key's stored windows (old ones are dropped as the store's floor passes them)."""

    __slots__ = ("key", "key_bytes", "starts", "values")

    def __init__(self, key):
        self.key = key
        self.key_bytes = serialized_key(json.loads(key))
        self.starts = []
        self.values = {}


class SlidingReplay:
    """Replays one scope (a task: every key, the store's clock, emit-final; or one key) of one
    scenario."""

    def __init__(self, settings: _Settings, out):
        self.s = settings
        self.out = out
        self.keys = {}
        self.clock = None  # the store's observedStreamTime: the largest window start put
        self.last_emit_close = None
        #: every stored window as (start, key bytes, key): fetchAll's order, and the oldest first to forget
        self.index = SortedList()
        #: emit-final: windows the store forgot before an emission range reached them
        self.lost = SortedList()
        self._f1 = 0

    # --- output rows -------------------------------------------------------------------------
    def _row(self, r, etype, key=None, ts=None, n_l=None, o_kind=OLD_NONE, o_l=None, text=None):
        self.out.append((etype, r.sid, r.task, r.idx, r.g1, r.g2, r.g3, r.g4, self._f1, b"", 0,
                         key, ts, n_l is None and etype == OUTPUT, n_l, None, o_kind, o_l, None, text))
        self._f1 += 1

    def _forward(self, r, windows, start, new, old, old_reported, ts):
        if self.s.final:
            return  # emit-on-window-close forwards no update
        if not self.s.send_old:
            o_kind, o_l = OLD_NONE, None
        elif not old_reported or old is None:
            o_kind, o_l = OLD_NULL, None
        else:
            o_kind, o_l = OLD_JOINED, json_value(old)
        self._row(r, OUTPUT, key=windowed_key_text(windows.key, start, start + self.s.d), ts=ts,
                  n_l=json_value(new), o_kind=o_kind, o_l=o_l)

    # --- the store -----------------------------------------------------------------------------
    def _floor(self, model):
        return floor(model, self.clock, self.s.retention, self.s.segment)

    def _fetch(self, windows, lo, hi):
        """The starts of the key's windows in [lo, hi] the store still shows, ascending."""
        lo = max(lo, self._floor(self.s.fetch_model))
        return windows.starts[bisect_left(windows.starts, lo):bisect_right(windows.starts, hi)]

    def _put(self, r, windows, start, value):
        """``windowStore.put(key, value, start)``: the store's clock moves to the largest start;
        a put the store finds expired is skipped (and counted as dropped); windows below the
        store's floor are forgotten."""
        s = self.s
        if s.in_memory:
            self._forget_below(self._floor(BY_CLOCK))  # removeExpiredSegments, before the clock moves
        self.clock = start if self.clock is None else max(self.clock, start)
        put_floor = self._floor(s.put_model)
        if start >= put_floor:
            if start not in windows.values:
                insort(windows.starts, start)
                self.index.add((start, windows.key_bytes, windows.key))
            windows.values[start] = value
        else:
            self._row(r, DROP, text=_EXPIRED_PUT)  # "Skipping record for expired segment"
        self._forget_below(put_floor)

    def _forget_below(self, start_floor):
        """The store no longer holds windows starting before ``start_floor``; under emit-on-window-
        close those no emission range has reached yet are lost. Cost: O(1) when nothing is
        forgotten, O(log n) per forgotten window (the task's oldest windows first)."""
        index = self.index
        covered = None if self.last_emit_close is None else self.last_emit_close - self.s.d
        while index and index[0][0] < start_floor:
            item = index.pop(0)
            start, _, key = item
            windows = self.keys[key]
            del windows.values[start]
            del windows.starts[bisect_left(windows.starts, start)]
            if self.s.final and (covered is None or start >= covered):
                self.lost.add(item)

    # --- one record ----------------------------------------------------------------------------
    def process(self, r):
        s = self.s
        ts = r.ts
        self._f1 = 0
        close = r.stream_time - s.grace  # the task's, computed set-based (a scope may be one key)
        if _late(ts, s, close):
            self._row(r, DROP, text=_EXPIRED)
            return
        if not s.d:
            # time difference 0: the record's left window would be new TimeWindow(ts, ts), which throws
            self._row(r, FAILURE, text=_EMPTY_WINDOW)
            return
        key = r.key
        windows = self.keys.get(key)
        if windows is None:
            windows = self.keys[key] = _KeyWindows(key)
        # count never reads the value: skip parsing it
        value = None if r.value is None or s.agg.name == "count" else json.loads(r.value)
        if ts < s.d:
            self._process_early(r, windows, value, close)
            return  # the early path returns before maybeForwardFinalResult
        self._process_reverse(r, windows, value, close)
        if s.final:
            self._emit_final(r, close)

    def _update(self, r, windows, start, value, seed, close):
        """``updateWindowAndForward``: aggregate the record into window ``start`` (``seed`` = its
        [aggregate, largest ts] before), unless the window has closed."""
        s = self.s
        end = start + s.d
        if end >= close if s.close_inclusive else end > close:
            old, old_ts = seed
            new = s.agg.add(None, value, old)
            new_ts = r.ts if old is None else max(r.ts, old_ts)
            self._put(r, windows, start, [new, new_ts])
            self._forward(r, windows, start, new, old, True, new_ts)
        else:
            self._row(r, DROP, text=_EXPIRED)  # "Skipping record for expired window": counted as dropped

    def _create_right_window(self, r, windows, right_seed):
        """``createCurrentRecordRightWindow``: a copy of the seed, without the record, no close check."""
        start = r.ts + 1
        self._put(r, windows, start, list(right_seed))
        self._forward(r, windows, start, right_seed[0], None, False, right_seed[1])

    def _process_reverse(self, r, windows, value, close):
        s = self.s
        ts, d = r.ts, s.d
        starts_seen = set()
        left_seed = right_seed = None
        left_exists = right_exists = False
        previous = None
        for start in reversed(self._fetch(windows, max(0, ts - 2 * d), ts + 1)):
            starts_seen.add(start)
            end = start + d
            seed = list(windows.values[start])
            if start == ts + 1:
                right_exists = True
            elif end > ts:
                if right_seed is None:
                    right_seed = seed
                self._update(r, windows, start, value, seed, close)
            elif end == ts:
                left_exists = True
                self._update(r, windows, start, value, seed, close)
                if seed[1] < ts:
                    previous = seed[1]
                else:
                    return  # a record at this ts exists already: its windows are all there
            else:
                left_seed, previous = seed, seed[1]
                break
        if previous is not None:
            # the previous record's right window, if missing and the record falls into it
            start = previous + 1
            if start not in starts_seen and start + d >= ts:
                self._update(r, windows, start, value, [s.agg.initial(), ts], close)
        if not left_exists:
            if previous is not None and ts - d <= previous:
                seed = [left_seed[0], ts]
            else:
                seed = [s.agg.initial(), ts]
            self._update(r, windows, ts - d, value, seed, close)
        if not right_exists and right_seed is not None and right_seed[1] > ts:
            self._create_right_window(r, windows, right_seed)

    def _process_early(self, r, windows, value, close):
        """``processEarly`` (0 <= ts < d): every early record shares the window [0, d]."""
        s = self.s
        ts = r.ts
        starts_seen = set()
        combined = right_seed = None
        right_exists = False
        previous = None
        for start in self._fetch(windows, 0, ts + 1):
            starts_seen.add(start)
            seed = list(windows.values[start])
            if start == 0:
                combined = seed
                if seed[1] < ts:
                    previous = seed[1]
            elif start <= ts:
                right_seed = seed
                self._update(r, windows, start, value, seed, close)
            elif start == ts + 1:
                right_exists = True
        if right_seed is None and combined is not None and combined[1] > ts:
            right_seed = combined
        if not right_exists and right_seed is not None and right_seed[1] > ts:
            self._create_right_window(r, windows, right_seed)
        if previous is not None and previous + 1 not in starts_seen:
            self._update(r, windows, previous + 1, value, [s.agg.initial(), ts], close)
        self._update(r, windows, 0, value, combined if combined is not None else [s.agg.initial(), ts], close)

    # --- emit on window close ------------------------------------------------------------------
    def _emit_final(self, r, close):
        """``maybeForwardFinalResult``: once the close time moved on, every key's windows starting
        in ``[max(0, lastClose - d), close - d - 1]`` that ``fetchAll`` still finds."""
        s = self.s
        if self.last_emit_close is not None and self.last_emit_close >= close:
            return
        upper = close - s.d - 1
        if upper < 0:
            return
        lower = 0 if self.last_emit_close is None else max(0, self.last_emit_close - s.d)
        if s.in_memory:
            self._forget_below(self._floor(BY_CLOCK))  # removeExpiredSegments
        seen_from = self._floor(s.emit_model)
        for start, _, key in list(self.index.irange((lower,), (upper + 1,), inclusive=(True, False))):
            if start < seen_from:  # the store hides it: never emitted
                self._row(r, DROP, text=_UNEMITTED)
                continue
            agg, max_ts = self.keys[key].values[start]
            self._row(r, OUTPUT, key=windowed_key_text(key, start, start + s.d), ts=max_ts, n_l=json_value(agg),
                      o_kind=OLD_NULL if s.send_old else OLD_NONE)
        for item in list(self.lost.irange(maximum=(upper + 1,), inclusive=(True, False))):
            if item[0] >= lower:
                self._row(r, DROP, text=_UNEMITTED)
            self.lost.remove(item)
        self.last_emit_close = close


def replay_function(callables=()):
    """The ``mapInArrow`` body; ``callables``: ``((sid, Aggregation), ...)`` of the Python API."""
    def replay(batches):
        return replay_batches(batches, dict(callables))

    return replay


def replay_batches(batches, aggregations=None):
    """``mapInArrow`` body: rows sorted by (sid, task, scope, seq) -> EVENT_DDL rows; ``aggregations``:
    sid -> the Python API aggregation of that scenario."""
    aggregations = dict(aggregations or {})
    current, replay = None, None
    out = []
    for batch in batches:
        c = {name: batch.column(name).to_pylist() for name in IN_COLUMNS}
        for i in range(batch.num_rows):
            group = (c["sid"][i], c["task"][i], c["scope"][i])
            if group != current:
                current, replay = group, SlidingReplay(_Settings(c, i, aggregations), out)
            replay.process(_Record._make([c[name][i] for name in _ROW]))
        if len(out) >= 4096:
            yield arrow_batch(out, EVENT_DDL)
            out.clear()  # the replays hold this list: empty it in place
    if out:
        yield arrow_batch(out, EVENT_DDL)
