"""Sliding-windowed aggregations (``groupByKey().windowedBy(SlidingWindows)``, KIP-450, 2.7+),
``KStreamSlidingWindowAggregate``.

A sliding window ``[start, start + d]`` (``d`` = time difference) includes both ends; windows
exist only where records are: each record has a *left* window ``[ts - d, ts]`` (ending at it) and,
when a later record of the key lies within ``d`` after it, a *right* window ``[ts + 1, ts + 1 + d]``.

Per record (one processor per task; profile rule names in brackets):
- A null key or a null value is dropped (``null_key`` / ``null_value``), before stream time moves:
  the only windowed aggregation that drops null values.
- Stream time: the largest ts aggregated; close time = stream time - grace. A record whose left
  window ends before the close time (``ts + d < close``) is dropped whole (``expired_window``).
  Kafka computes the check in Java longs: since 3.3 ``ts + d < close`` [sliding_late_check_by_window_end,
  KAFKA-13785], before ``ts + 1 + d <= close``; a sum that wraps past ``Long.MAX_VALUE`` is negative,
  below any close time the loader allows, so a record at ``ts > MAX - d`` (before 3.3: ``ts >= MAX -
  d``) is dropped as late whatever the grace, after moving the stream time.
- Time difference 0 (``SlidingWindows.ofTimeDifferenceWithNoGrace(Duration.ZERO)``: the builders
  and the store suppliers accept it): the first record that is neither dropped for a null nor too
  late finds no window and creates its left window ``new TimeWindow(ts - 0, ts)``, whose
  constructor rejects an empty window (``IllegalArgumentException``, 2.7 to trunk): the application dies
  at that record (``time_window_empty``), before any window exists, so no record ever gets further.
- Early records (``ts < d``) share the window ``[0, d]`` instead of a negative-start left window:
  the key's windows with start in ``[0, ts + 1]`` are scanned forward; windows starting in
  ``(0, ts]`` are right windows of earlier records and get the record; then, in this order: the
  record's right window is created (a copy of the latest such window's aggregate, or of ``[0, d]``'s,
  when it holds a later record), the previous record's right window is created, and ``[0, d]`` is
  created or updated. Early records never run the emit-final check.
- Other records: the key's windows with start in ``[max(0, ts - 2d), ts + 1]`` are scanned
  backward (both built-in stores support reverse iteration, so Kafka always takes this path):
  start ``ts + 1`` = the record's right window exists; ``end > ts``: contains the record, updated
  (the first such is the right window's seed, taken before its update); ``end == ts``: the
  record's left window exists and is updated, and if it already holds a record at ``ts`` nothing
  more is created; ``end < ts``: the previous record's window, whose max ts is the previous record's
  ts and whose aggregate seeds the left window; the scan stops there. Then, in this order: the
  previous record's right window ``[prev + 1, prev + 1 + d]`` if missing and it reaches ``ts``
  (fresh, plus the record); the record's left window if missing (seeded with the previous
  window's aggregate when ``prev >= ts - d``, plus the record); the record's right window if
  missing and the seed holds a later record (a copy of the seed, without the record, forwarded
  with a null old value and without a close check).
- Every update or creation that adds the record applies only if ``end >= close time``
  [sliding_window_close_inclusive, 3.3, KAFKA-13739; before: ``end > close time``]; otherwise that
  window is skipped (``expired_window``). The result carries the window's max record ts.
- Emit on window close [emit_on_window_close, 3.3, KIP-825]: after each non-early record that was
  not dropped, if the close time moved past the last emitted one, window starts in
  ``[max(0, lastClose - d), close - d - 1]`` (from 0 the first time) are fetched over all keys
  and forwarded once each; windows the store hid before that (``unemitted_window``) are never
  emitted [window_fetch_hides_expired, 3.4, KAFKA-12960].

Stores (:mod:`reference.stores.time_window_store`, with a per-key index for the range scans): the
RocksDB window store (emit on update), the RocksDB time-ordered store (emit on close) or the
in-memory store; retention ``2d + grace`` unless ``retention_ms``
(:func:`reference.model.profiles.sliding_window_retention`). Reads honour the store's retention, so
a record can miss an expired previous window: its left window then starts fresh. Output keys are
``{"key", "start", "end"}`` with ``end = start + d``.
"""
from __future__ import annotations

from kssim.reference.model.aggregations import AggregatorNullValue, aggregation_of
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import key_identity
from kssim.reference.model.profiles import sliding_window_retention
from kssim.reference.model.suppression import JAVA_LONG_MAX, java_long
from kssim.reference.runtime.explain import Why, show
from kssim.reference.stores.time_window_store import NO_TIMESTAMP
from kssim.reference.windows.time_window import held_windows, store_for

_REF = "KStreamSlidingWindowAggregate"
_REF_FINAL = "KStreamSlidingWindowAggregate, EmitStrategy.onWindowClose (KIP-825)"


def build(spec, profile, config, instance_state):
    return SlidingWindowAggregate(spec, profile, config.store)


class SlidingWindowAggregate:
    """``KStreamSlidingWindowAggregate``'s processor and window store in one task."""

    __slots__ = ("d", "grace", "retention_ms", "aggregation", "initial", "add", "store", "send_old", "emit_final",
                 "close_inclusive", "late_by_window_end", "stream_time", "last_emit_close")

    def __init__(self, spec, profile, store: str):
        self.d = spec.time_difference_ms
        self.grace = spec.grace_ms
        self.retention_ms = sliding_window_retention(spec.time_difference_ms, spec.grace_ms, spec.retention_ms)
        self.aggregation = aggregation_of(spec.aggregation, spec.merge_separator)
        self.initial = self.aggregation.initial
        self.add = self.aggregation.add
        self.emit_final = spec.emit == "on_window_close"
        self.store = store_for(profile, store, self.retention_ms, self.emit_final, key_index=True)
        self.send_old = spec.send_old_values
        self.close_inclusive = profile.sliding_window_close_inclusive
        self.late_by_window_end = profile.sliding_late_check_by_window_end
        self.stream_time = NO_TIMESTAMP
        self.last_emit_close = NO_TIMESTAMP

    def process(self, topic, key, value, ts, ctx):
        if key is None or value is None:
            self._drop_null(key, value, ts, ctx)
            return
        if ts > self.stream_time:
            self.stream_time = ts
        close = self.stream_time - self.grace
        if ts + self.d < close or ts + self.d >= JAVA_LONG_MAX and self._wraps_late(ts, close):
            self._drop_late_record(key, value, ts, close, ctx)
            return
        if not self.d:
            self._fail_empty_left_window(key, value, ts, ctx)
        key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
        if ts < self.d:
            self._process_early(key, key_id, value, ts, close, ctx)
            return  # KStreamSlidingWindowAggregate returns before its emit-final check
        self._process(key, key_id, value, ts, close, ctx)
        if self.emit_final:
            self._maybe_emit_final(ctx)

    @staticmethod
    def _fail_empty_left_window(key, value, ts, ctx):
        """Time difference 0 (see the module docstring): the record's left window would be
        ``new TimeWindow(ts, ts)``, which throws."""
        why = None
        if ctx.explain:
            why = Why("time_window_empty",
                      f"input {show(key)}:{show(value)}@{ts}: with time difference 0 the record's left window is "
                      f"new TimeWindow({ts}, {ts}), and TimeWindow throws IllegalArgumentException ('Window endMs must "
                      "be greater than window startMs.'): no record of the key has made a window yet, so every "
                      "record that is not dropped first (null key or value, too late) ends here", ref=_REF)
        ctx.fail(FailureCode.TIME_WINDOW_EMPTY, why)

    def _wraps_late(self, ts, close) -> bool:
        """The late check as Kafka computes it in Java longs, where the sum may wrap (see the
        module docstring)."""
        if self.late_by_window_end:
            return java_long(ts + self.d) < close
        return java_long(ts + 1 + self.d) <= close

    def _process(self, key, key_id, value, ts, close, ctx):
        d = self.d
        seen = set()
        left_seed = right_seed = previous_ts = None
        left_exists = right_exists = False
        for start, entry in self.store.fetch_key(key_id, max(0, ts - 2 * d), ts + 1, backward=True):
            seen.add(start)
            end = start + d
            if start == ts + 1:
                right_exists = True
            elif end > ts:
                if right_seed is None:
                    right_seed = entry
                self._update(key, key_id, value, ts, start, entry, close, ctx, "contains the record")
            elif end == ts:
                left_exists = True
                self._update(key, key_id, value, ts, start, entry, close, ctx, "the record's left window")
                if entry[1] >= ts:
                    return  # a record at ts already made every window this one would
                previous_ts = entry[1]
            else:
                left_seed = entry
                previous_ts = entry[1]
                break
        if previous_ts is not None:
            start = previous_ts + 1
            if start not in seen and start + d >= ts:
                self._update(key, key_id, value, ts, start, None, close, ctx,
                             f"the previous record's (ts {previous_ts}) right window, created")
        if not left_exists:
            seeded = previous_ts is not None and ts - d <= previous_ts
            seed = (left_seed[0], ts, key, left_seed[3]) if seeded else None
            self._update(key, key_id, value, ts, ts - d, seed, close, ctx,
                         "the record's left window, created" + (" from the previous window's aggregate" if seeded
                                                               else ""))
        if not right_exists and right_seed is not None and right_seed[1] > ts:
            self._copy_right_window(key, key_id, ts, right_seed, ctx)

    def _process_early(self, key, key_id, value, ts, close, ctx):
        combined = right_seed = previous_ts = None
        right_exists = False
        seen = set()
        for start, entry in self.store.fetch_key(key_id, 0, ts + 1):
            seen.add(start)
            if start == 0:
                combined = entry
                if entry[1] < ts:
                    previous_ts = entry[1]
            elif start <= ts:
                right_seed = entry
                self._update(key, key_id, value, ts, start, entry, close, ctx, "an earlier record's right window")
            elif start == ts + 1:
                right_exists = True
        if right_seed is None and combined is not None and combined[1] > ts:
            right_seed = combined  # [0, d] then holds only records after ts
        if not right_exists and right_seed is not None and right_seed[1] > ts:
            self._copy_right_window(key, key_id, ts, right_seed, ctx)
        if previous_ts is not None and previous_ts + 1 not in seen:
            self._update(key, key_id, value, ts, previous_ts + 1, None, close, ctx,
                         f"the previous record's (ts {previous_ts}) right window, created")
        self._update(key, key_id, value, ts, 0, combined, close, ctx,
                     "the window [0, d] every early record shares" + (", created" if combined is None else ""))

    def _update(self, key, key_id, value, ts, start, entry, close, ctx, role):
        """Add the record to window ``start`` (``entry`` its current entry; None: a fresh window
        from the initializer) if the window is not closed; forward the update."""
        end = start + self.d
        if end < close or (end == close and not self.close_inclusive):
            self._drop_expired_window(key, value, ts, start, close, ctx)
            return
        old = self.initial() if entry is None else entry[0]
        new_ts = ts if old is None or entry is None or entry[1] < ts else entry[1]
        try:
            new = self.add(key, value, old)
        except AggregatorNullValue:  # cannot happen (null values are dropped); kept for user aggregations
            ctx.fail(FailureCode.AGGREGATOR_NULL_VALUE)
        index = ctx.input_index
        if not self.store.put(key_id, start, None if new is None else (new, new_ts, key, index), index):
            self._drop_expired_put(key, ts, start, ctx)
        if self.emit_final:
            return
        why = self._why_update(key, value, ts, start, entry, old, new, new_ts, role) if ctx.explain else None
        window = {"key": key, "start": start, "end": end}
        if self.send_old:
            ctx.emit(window, new, new_ts, why, old)
        else:
            ctx.emit(window, new, new_ts, why)

    def _copy_right_window(self, key, key_id, ts, seed, ctx):
        """The record's right window: the seed's aggregate and max ts as they are (the records after
        ``ts`` within ``d``), without the record, forwarded with a null old value."""
        start = ts + 1
        agg, agg_ts = seed[0], seed[1]
        index = ctx.input_index
        if not self.store.put(key_id, start, (agg, agg_ts, key, index), index):
            self._drop_expired_put(key, ts, start, ctx)
        if self.emit_final:
            return
        why = None
        if ctx.explain:
            why = Why("sliding_right_window",
                      f"right window [{start},{start + self.d}] of {show(key)}@{ts} created: a copy of the window "
                      f"holding the records after {ts} (value {show(agg)}, max ts {agg_ts}, last updated by input "
                      f"{seed[3]}), without the record itself", ref=_REF)
        window = {"key": key, "start": start, "end": start + self.d}
        if self.send_old:
            ctx.emit(window, agg, agg_ts, why, None)
        else:
            ctx.emit(window, agg, agg_ts, why)

    # -- emit on window close ------------------------------------------------------------------
    def _maybe_emit_final(self, ctx):
        close = self.stream_time - self.grace
        last = self.last_emit_close
        if last != NO_TIMESTAMP and last >= close:
            return
        upper = close - self.d - 1
        if upper < 0:
            return
        lower = 0 if last == NO_TIMESTAMP else max(0, last - self.d)
        shown, lost = self.store.fetch_all(lower, upper)
        explain = ctx.explain
        for window in lost:
            ctx.drop(DropReason.UNEMITTED_WINDOW, self._why_lost(window, close, lower, upper) if explain else None,
                     window=(window.entry[2], window.start, window.start + self.d))
        for start, (agg, agg_ts, key, index) in shown:
            why = self._why_final(key, start, agg, agg_ts, close, lower, upper, index) if explain else None
            window = {"key": key, "start": start, "end": start + self.d}
            if self.send_old:
                ctx.emit(window, agg, agg_ts, why, None)
            else:
                ctx.emit(window, agg, agg_ts, why)
        self.last_emit_close = close

    def pending(self, task: int) -> tuple:
        """Emit on window close: the windows not emitted yet, and those lost (see
        :func:`reference.windows.time_window.held_windows`); emit on update holds nothing."""
        if not self.emit_final:
            return ()
        return held_windows(self.store, task, self.d, self.grace, self.stream_time, "the aggregation's",
                            end_inclusive=True)

    # -- drops ---------------------------------------------------------------------------------
    def _drop_null(self, key, value, ts, ctx):
        reason = DropReason.NULL_KEY if key is None else DropReason.NULL_VALUE
        why = None
        if ctx.explain:
            what = "a null key" if key is None else "a null value"
            why = Why(reason.code, f"input {show(key)}:{show(value)}@{ts} has {what}: dropped by the sliding-window "
                      "aggregation ('Skipping record due to null key or value'); stream time does not move", ref=_REF)
        ctx.drop(reason, why)

    def _drop_late_record(self, key, value, ts, close, ctx):
        why = None
        if ctx.explain:
            if ts + self.d >= JAVA_LONG_MAX:
                checked = f"ts + d = {java_long(ts + self.d)} < close time" if self.late_by_window_end \
                    else f"ts + 1 + d = {java_long(ts + 1 + self.d)} <= close time"
                text = (f"input {show(key)}:{show(value)}@{ts}: Kafka's late check {checked} {close} (= stream time "
                        f"{self.stream_time} - grace {self.grace}) wraps past Long.MAX_VALUE to a negative number: the "
                        "record is dropped as too late ('Skipping record for expired window')")
                why = Why("expired_window", text, ref=f"{_REF}; sliding_late_check_by_window_end (KAFKA-13785)")
            else:
                why = Why("expired_window",
                          f"input {show(key)}:{show(value)}@{ts} is too late: its left window [{ts - self.d},{ts}] ends "
                          f"before close time {close} = stream time {self.stream_time} - grace {self.grace}; the record "
                          "is dropped ('Skipping record for expired window')", ref=_REF)
        ctx.drop(DropReason.EXPIRED_WINDOW, why)

    def _drop_expired_put(self, key, ts, start, ctx):
        why = None
        if ctx.explain:
            why = Why("expired_window_put", f"{show(key)}@{ts}, window [{start},{start + self.d}]: "
                      f"{self.store.explain_put_dropped(start)}; the update is still forwarded, but the window is not "
                      "stored", ref=f"{_REF}, {self.store.name}")
        ctx.drop(DropReason.EXPIRED_WINDOW_PUT, why)

    def _drop_expired_window(self, key, value, ts, start, close, ctx):
        why = None
        if ctx.explain:
            op = "<=" if self.close_inclusive is False else "<"
            why = Why("expired_window",
                      f"input {show(key)}:{show(value)}@{ts} is too late for window [{start},{start + self.d}]: its end "
                      f"{start + self.d} {op} close time {close} = stream time {self.stream_time} - grace {self.grace}; "
                      "skipped for that window only", ref=f"{_REF}; sliding_window_close_inclusive (KAFKA-13739)")
        ctx.drop(DropReason.EXPIRED_WINDOW, why)

    # -- explanations --------------------------------------------------------------------------
    def _why_update(self, key, value, ts, start, entry, old, new, new_ts, role):
        window = f"window [{start},{start + self.d}] of {show(key)} ({role})"
        base = f"{window}: initializer {show(old)}" if entry is None else \
            f"{window}: {show(old)} (last updated by input {entry[3]})"
        return Why("sliding_update", f"{base} + {show(value)}@{ts} -> {show(new)} ({self.aggregation.name}), "
                                     f"forwarded at the window's max record ts {new_ts}", ref=_REF)

    def _why_final(self, key, start, agg, agg_ts, close, lower, upper, index):
        return Why("window_closed",
                   f"window [{start},{start + self.d}] of {show(key)} closed: close time {close} = stream time "
                   f"{self.stream_time} - grace {self.grace} > its end {start + self.d}; the close check fetched window "
                   f"starts [{lower},{upper}] and emits its final value {show(agg)} (last updated by input {index}) at "
                   f"its max record ts {agg_ts}", ref=_REF_FINAL)

    def _why_lost(self, window, close, lower, upper):
        agg, _ts, key, index = window.entry
        default = 2 * self.d + self.grace
        retention = f"2 * time difference {self.d} + grace {self.grace}" if self.retention_ms == default \
            else "Materialized#withRetention"
        return Why("unemitted_window",
                   f"window [{window.start},{window.start + self.d}] of {show(key)} (value {show(agg)}, last updated by "
                   f"input {index}) is never emitted: the close check (stream time {self.stream_time}, close time "
                   f"{close}, window starts [{lower},{upper}]) came after {self.store.explain_hidden(window)}; "
                   f"retention {self.retention_ms} = {retention}", ref=f"{_REF_FINAL}, {self.store.name}",
                   window=(key, window.start, window.start + self.d))
