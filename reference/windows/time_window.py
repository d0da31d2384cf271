"""Time-windowed aggregations (``groupByKey().windowedBy(TimeWindows)``: tumbling and hopping
windows), ``KStreamWindowAggregate``, Kafka Streams 0.10.0 to 4.x.

Windows are ``[start, start + size)`` every ``advance`` (tumbling when equal). A record at ``ts``
belongs to the windows ``TimeWindows#windowsFor`` gives: starts from
``max(0, ts - size + advance) // advance * advance`` up to ``ts`` in steps of ``advance``, ascending;
no window starts below 0, and a negative ``ts`` has none (dropped as ``no_window``, silently in
Kafka).

Per record (one processor per task; profile rule names in brackets):
- A null key is dropped before stream time moves. A null value is aggregated (``count`` counts it,
  ``sum`` fails as Java's unboxing would: ``aggregator_null_value``).
- Stream time: the largest ts this processor aggregated [windowed_agg_own_stream_time, 2.2,
  KAFKA-7895]; 2.1: the task's stream time, advanced by every record of the task (null keys, the
  other input of a windowed-table join). Close time = stream time - grace.
- Each window in ascending start: live iff ``end > close time``; a late record skips only the
  windows it is too late for (one ``expired_window`` drop per window) and updates the others. Before
  2.1 [windowed_grace] there is no grace and no such check: only the store's retention
  (``Windows#maintainMs``, its three newest segments) forgets windows; a late record then starts a
  fresh window that the store does not keep (``expired_window_put``) but that is still forwarded.
- A live window: the stored aggregate (or the initializer's value) plus the record; stored with
  the window's max record ts, which is also the result's ts [time_window_output_ts_max, 2.3,
  KAFKA-6455; before: the record's ts]. A reduce whose aggregate becomes null deletes the window.
- Emit on update (default): ``Change(new, old)`` per window, old = the stored aggregate or the
  initializer's value when ``send_old_values``. Emit on window close [emit_on_window_close, 3.3,
  KIP-825]: nothing per update; after each non-null-key record, if the close time moved past the
  last emitted one: window starts up to ``close - size`` are fetched over all keys, from
  ``max(0, lastClose - size) + 1`` (0 the first time), unless no new window start lies in that
  range; each is forwarded once, ``Change(aggregate, null)`` at its max record ts. The fetch goes
  through the store's retention filter [window_fetch_hides_expired, 3.4, KAFKA-12960]: a window
  hidden before its range is fetched is never emitted (``unemitted_window``, one drop per window,
  on the record whose close check lost it).

At the edge of the long range (Java ``long`` arithmetic; ``TimeWindows#windowsFor`` and the
``Window`` constructor): the record's last window starts at ``ts - ts % advance``; since 0.10.2
[window_bounds_checked, KAFKA-3452] a window whose end ``start + size`` passes ``Long.MAX_VALUE``
wraps to a negative end, which the constructor rejects (``IllegalArgumentException``): the
application dies at that record (``window_illegal_argument``), before any of its windows is
updated. 0.10.0-0.10.1 check nothing: a hopping window's end wraps to a negative number and is
forwarded so; once the next start ``last start + advance`` wraps, it is negative, still below the
timestamp, and ``windowsFor``'s loop never ends (``windows_for_out_of_memory``). The close checks
(``end > stream time - grace``) never overflow: the loader keeps ``size + grace`` within a long.

Stores (:mod:`reference.stores.time_window_store`): RocksDB (emit on update), RocksDB time-ordered
(emit on close), or in memory (``config.store``, 2.3+); retention from
:func:`reference.model.profiles.time_window_settings` [time_window_retention_size_plus_grace, 3.0].
Keys: stores key windows by the key's identity (:func:`reference.model.keys.key_identity`); output
keys are ``{"key", "start", "end"}`` with the record's own key and ``end = start + size`` (a
Java long: wrapped before 0.10.2).
"""
from __future__ import annotations

from kssim.reference.model.aggregations import AggregatorNullValue, aggregation_of
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import key_identity
from kssim.reference.model.pending import Pending, PendingKind, window_text
from kssim.reference.model.profiles import time_window_settings
from kssim.reference.model.suppression import JAVA_LONG_MAX, java_long
from kssim.reference.model.windows import window_starts
from kssim.reference.runtime.explain import Why, show
from kssim.reference.stores.time_window_store import IN_MEMORY, LEGACY_NUM_SEGMENTS, NO_TIMESTAMP, ROCKSDB, \
    TIME_ORDERED, TimeWindowStore

_REF = "KStreamWindowAggregate"
_REF_UPDATE = "KStreamWindowAggregate; time_window_output_ts_max (KAFKA-6455)"
_REF_LATE = "KStreamWindowAggregate; windowed_grace (KIP-328), windowed_agg_own_stream_time (KAFKA-7895)"
_REF_FINAL = "KStreamWindowAggregate, EmitStrategy.onWindowClose (KIP-825)"


def build(spec, profile, config, instance_state):
    return TimeWindowAggregate(spec.window, aggregation_of(spec.aggregation, spec.merge_separator), profile,
                               config.store, retention_ms=spec.retention_ms, send_old_values=spec.send_old_values,
                               emit_final=spec.emit == "on_window_close")


def held_windows(store, task: int, length: int, grace: int, stream_time: int, clock: str,
                 end_inclusive: bool) -> tuple:
    """``Pending`` items of an emit-final time or sliding window store: each window not fetched by
    a close check yet, released when ``stream time - grace`` reaches the first start the check
    fetches past it (time windows: ``end = start + size``, fetched once ``start <= close - size``;
    sliding windows: ``[start, start + d]``, fetched once ``start <= close - d - 1``); then the
    windows the store already hid unfetched (KAFKA-12960), which no stream time releases."""
    held = []
    closes_after = 1 if end_inclusive else 0  # a sliding window's end is inclusive
    for start, entry in store.unfetched():
        agg, agg_ts, key, index = entry
        end = start + length
        release = end + closes_after + grace
        rule = f"window end {end}{' + 1' if end_inclusive else ''} + grace {grace}"
        held.append(Pending(PendingKind.OPEN_WINDOW, task, window_text(key, start, end, end_inclusive), key, agg,
                            agg_ts, release, rule, stream_time, clock, (key, start, end), index))
    for lost in store.hidden_unfetched():
        agg, agg_ts, key, index = lost.entry
        end = lost.start + length
        rule = f"hidden by {store.name} (observed time {lost.observed_ms}) before a close check fetched it, KAFKA-12960"
        held.append(Pending(PendingKind.LOST_WINDOW, task, window_text(key, lost.start, end, end_inclusive), key, agg,
                            agg_ts, None, rule, stream_time, clock, (key, lost.start, end), index))
    return tuple(held)


def java_hashmap_order(starts) -> list:
    """``starts`` (inserted ascending) in the iteration order of a ``java.util.HashMap<Long, ?>``
    holding them all: by bucket ``spread(Long#hashCode(start)) & (capacity - 1)``, then insertion
    order (a resize keeps the relative order within a bucket). The capacity is the table's size once
    all are in: 16, doubled while there are more than 0.75 * capacity entries. Not modelled: a bucket
    of 8+ colliding starts in a table of 64+ becomes a tree. Cost: O(n log n)."""
    capacity = 16
    while len(starts) > capacity * 3 // 4:
        capacity *= 2

    def bucket(start: int) -> int:
        h = (start ^ (start >> 32)) & 0xFFFFFFFF  # Long#hashCode, as an unsigned 32-bit value
        return (h ^ (h >> 16)) & (capacity - 1)  # HashMap#hash, then the table index

    return sorted(starts, key=bucket)  # stable: insertion order within a bucket


def store_for(profile, store: str, retention_ms: int, emit_final: bool, key_index: bool = False) -> TimeWindowStore:
    """The window store a windowed aggregation materializes in ``profile``'s release."""
    if store == "in_memory":
        return TimeWindowStore(IN_MEMORY, retention_ms, key_index=key_index, track_unemitted=emit_final)
    return TimeWindowStore(TIME_ORDERED if emit_final else ROCKSDB, retention_ms,
                           strict_reads=profile.window_fetch_hides_expired,
                           newest_segments=None if profile.rocksdb_segments_by_retention else LEGACY_NUM_SEGMENTS,
                           first_segment_reads=profile.rocksdb_fetch_from_first_segment,
                           key_index=key_index, track_unemitted=emit_final)


class TimeWindowAggregate:
    """``KStreamWindowAggregate``'s processor and window store in one task.

    ``forward(ctx, key, start, end, new, old, ts, why)``, when given, receives each result update
    (a windowed-table join's side); without it results go to the output topic."""

    __slots__ = ("size", "advance", "grace", "retention_ms", "default_grace", "tumbling", "initial", "add",
                 "aggregation", "store", "send_old", "emit_final", "ts_max", "own_stream_time", "stream_time",
                 "last_emit_close", "forward", "name", "start_order", "windows_for_fixed", "bounds_checked")

    def __init__(self, window, aggregation, profile, store: str, retention_ms=None, send_old_values: bool = False,
                 emit_final: bool = False, forward=None, name: str = "input"):
        settings = time_window_settings(profile, window.size_ms, window.grace_ms, retention_ms)
        self.size = window.size_ms
        self.advance = window.advance_ms
        self.tumbling = window.advance_ms == window.size_ms
        self.grace = settings.grace_ms  # None before 2.1: no close check at all
        self.retention_ms = settings.retention_ms
        self.default_grace = settings.default_grace
        self.aggregation = aggregation
        self.initial = aggregation.initial
        self.add = aggregation.add
        self.store = store_for(profile, store, settings.retention_ms, emit_final)
        self.send_old = send_old_values
        self.emit_final = emit_final
        self.ts_max = profile.time_window_output_ts_max
        self.own_stream_time = profile.windowed_agg_own_stream_time
        self.start_order = profile.time_windows_in_start_order
        self.windows_for_fixed = profile.time_windows_for_fixed
        self.bounds_checked = profile.window_bounds_checked
        self.stream_time = NO_TIMESTAMP
        self.last_emit_close = NO_TIMESTAMP
        self.forward = forward
        self.name = name  # the input it aggregates, for explanations

    def observe_task(self, ts: int) -> None:
        """2.1: the task's stream time moved (every record of the task, before it is processed)."""
        if not self.own_stream_time and ts > self.stream_time:
            self.stream_time = ts

    def process(self, topic, key, value, ts, ctx):
        if ts > self.stream_time and not self.own_stream_time:
            self.stream_time = ts  # 2.1: the task's stream time, which a null-key record moves too
        if key is None:
            self._drop_null_key(value, ts, ctx)
            return
        if ts > self.stream_time:
            self.stream_time = ts
        grace = self.grace
        close = None if grace is None else self.stream_time - grace
        if ts < 0:
            ctx.drop(DropReason.NO_WINDOW, self._why_no_window(key, value, ts) if ctx.explain else None)
        else:
            size = self.size
            if ts - ts % self.advance > JAVA_LONG_MAX - (size if self.bounds_checked else self.advance):
                self._fail_at_the_edge(key, value, ts, ctx)
            key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
            if self.tumbling:
                start = ts - ts % size
                if close is None or start + size > close:
                    self._update(key, key_id, value, ts, start, ctx)
                else:
                    self._drop_expired(key, value, ts, start, close, ctx)
            else:
                for start in self._update_order(key_id, ts):
                    if close is None or start + size > close:
                        self._update(key, key_id, value, ts, start, ctx)
                    else:
                        self._drop_expired(key, value, ts, start, close, ctx)
        if self.emit_final:
            self._maybe_emit_final(ctx)

    def _update_order(self, key_id, ts):
        """The record's window starts in the order they are updated and forwarded: ascending
        [time_windows_in_start_order, 2.0, KAFKA-6560/KAFKA-6486]; before, the windows the store
        already shows first (ascending, as its range fetch returns them), then the new ones in the
        HashMap order of ``windowsFor``'s result."""
        starts = window_starts(ts, self.size, self.advance, self.windows_for_fixed)
        if self.start_order:
            return starts
        get = self.store.get
        stored = [start for start in starts if get(key_id, start) is not None]
        fresh = [start for start in starts if get(key_id, start) is None]
        return stored + java_hashmap_order(fresh)

    def _update(self, key, key_id, value, ts, start, ctx):
        store = self.store
        entry = store.get(key_id, start)
        if entry is None:
            old = self.initial()
            new_ts = ts
        else:
            old = entry[0]
            new_ts = entry[1] if self.ts_max and entry[1] > ts else ts
        try:
            new = self.add(key, value, old)
        except AggregatorNullValue:
            ctx.fail(FailureCode.AGGREGATOR_NULL_VALUE)
        index = ctx.input_index
        if not store.put(key_id, start, None if new is None else (new, new_ts, key, index), index):
            ctx.drop(DropReason.EXPIRED_WINDOW_PUT,
                     Why("expired_window_put", f"{self.name} {show(key)}:{show(value)}@{ts}, window "
                         f"[{start},{start + self.size}): {store.explain_put_dropped(start)}; the update is still "
                         "forwarded, but the window is not stored", ref=f"{_REF}, {store.name}")
                     if ctx.explain else None)
        if self.emit_final:
            return
        why = self._why_update(key, value, ts, start, entry, old, new, new_ts) if ctx.explain else None
        end = self._end(start)
        if self.forward is not None:
            self.forward(ctx, key, key_id, start, end, new, old, new_ts, why)
        elif self.send_old:
            ctx.emit({"key": key, "start": start, "end": end}, new, new_ts, why, old)
        else:
            ctx.emit({"key": key, "start": start, "end": end}, new, new_ts, why)

    def _end(self, start: int) -> int:
        """``start + size`` as a Java long: wrapped (negative) past ``Long.MAX_VALUE``, which only
        0.10.0-0.10.1 let a window have."""
        end = start + self.size
        return end if end <= JAVA_LONG_MAX else java_long(end)

    def _fail_at_the_edge(self, key, value, ts, ctx):
        """``TimeWindows#windowsFor`` at the edge of the long range (see the module docstring)."""
        last = ts - ts % self.advance
        if self.bounds_checked:
            why = None
            if ctx.explain:
                why = Why("window_illegal_argument",
                          f"{self.name} {show(key)}:{show(value)}@{ts}: its last window starts at {last}, and its end "
                          f"{last} + size {self.size} wraps past Long.MAX_VALUE to {java_long(last + self.size)}: "
                          "new TimeWindow(start, end) throws IllegalArgumentException ('Window endMs time cannot be "
                          "smaller than window startMs time.') before any window is updated",
                          ref="TimeWindows#windowsFor, Window; window_bounds_checked (KAFKA-3452)")
            ctx.fail(FailureCode.WINDOW_ILLEGAL_ARGUMENT, why)
        why = None
        if ctx.explain:
            why = Why("windows_for_out_of_memory",
                      f"{self.name} {show(key)}:{show(value)}@{ts}: after its last window start {last} the next one, "
                      f"{last} + advance {self.advance}, wraps past Long.MAX_VALUE to "
                      f"{java_long(last + self.advance)}, still <= {ts}: TimeWindows#windowsFor's loop never ends "
                      "(Kafka 0.10.0-0.10.1, whose Window constructor checks nothing)",
                      ref="TimeWindows#windowsFor; before window_bounds_checked (KAFKA-3452)")
        ctx.fail(FailureCode.WINDOWS_FOR_OUT_OF_MEMORY, why)

    # -- emit on window close ------------------------------------------------------------------
    def _maybe_emit_final(self, ctx):
        close = self.stream_time - self.grace
        last = self.last_emit_close
        if last != NO_TIMESTAMP and last >= close:
            return  # the close time did not move
        upper = close - self.size
        if upper < 0:
            return  # no window has closed yet
        lower = 0 if last == NO_TIMESTAMP else max(0, last - self.size) + 1
        if last != NO_TIMESTAMP and \
                window_starts(upper, self.size, self.advance) == window_starts(lower - 1, self.size, self.advance):
            return  # no window start in [lower, upper]: nothing new closed (shouldRangeFetch)
        shown, lost = self.store.fetch_all(lower, upper)
        explain = ctx.explain
        for window in lost:
            ctx.drop(DropReason.UNEMITTED_WINDOW, self._why_lost(window, close, lower, upper) if explain else None,
                     window=(window.entry[2], window.start, window.start + self.size))
        for start, (agg, agg_ts, key, _index) in shown:
            why = self._why_final(key, start, agg, agg_ts, close, lower, upper, _index) if explain else None
            if self.send_old:
                ctx.emit({"key": key, "start": start, "end": start + self.size}, agg, agg_ts, why, None)
            else:
                ctx.emit({"key": key, "start": start, "end": start + self.size}, agg, agg_ts, why)
        self.last_emit_close = close

    # -- what is held at the end of a run (kssim run --pending) ---------------------------------
    def pending(self, task: int) -> tuple:
        """Emit on window close: the windows not emitted yet (each closes when stream time reaches
        its end + grace) and those the store hid before a close check reached them (lost).
        Emit on update holds nothing: every update is forwarded at once."""
        if not self.emit_final:
            return ()
        return held_windows(self.store, task, self.size, self.grace, self.stream_time, "the aggregation's",
                            end_inclusive=False)

    # -- drops ---------------------------------------------------------------------------------
    def _drop_null_key(self, value, ts, ctx):
        why = None
        if ctx.explain:
            moves = "does not move" if self.own_stream_time else "moves (2.1: the task's stream time)"
            why = Why("null_key", f"{self.name} record null:{show(value)}@{ts} has a null key: skipped by the windowed "
                      f"aggregation ('Skipping record due to null key'); stream time {moves}", ref=_REF)
        ctx.drop(DropReason.NULL_KEY, why)

    def _drop_expired(self, key, value, ts, start, close, ctx):
        why = None
        if ctx.explain:
            whose = "" if self.own_stream_time else " (the task's, which every record of the task moves in 2.1)"
            why = Why("expired_window",
                      f"{self.name} {show(key)}:{show(value)}@{ts} is too late for window [{start},{start + self.size}): "
                      f"its end {start + self.size} <= close time {close} = stream time {self.stream_time}{whose} - "
                      f"grace {self._grace_text()}; skipped for that window only ('Skipping record for expired window')",
                      ref=_REF_LATE)
        ctx.drop(DropReason.EXPIRED_WINDOW, why)

    # -- explanations --------------------------------------------------------------------------
    def _grace_text(self) -> str:
        return f"{self.grace} (the legacy builder's default, max(1 day - size, 0))" if self.default_grace \
            else str(self.grace)

    def _why_no_window(self, key, value, ts):
        return Why("no_window", f"{self.name} {show(key)}:{show(value)}@{ts}: a negative timestamp belongs to no time "
                   "window (TimeWindows#windowsFor starts no window below 0): nothing is aggregated", ref="TimeWindows")

    def _why_update(self, key, value, ts, start, entry, old, new, new_ts):
        window = f"window [{start},{start + self.size}) of {show(key)}"
        if entry is None:
            base = f"new {window}: initializer {show(old)}"
        else:
            base = f"{window}: {show(old)} (last updated by input {entry[3]})"
        if self.ts_max:
            ts_text = f"at the window's max record ts {new_ts}"
        else:
            ts_text = f"at the record's ts {ts} (before 2.3, KAFKA-6455)"
        if self.grace is None:
            ts_text += " (before 2.1 there is no grace: no window is ever too late for a record)"
        return Why("window_update", f"{base} + {show(value)}@{ts} -> {show(new)} ({self.aggregation.name}), "
                                    f"forwarded {ts_text}", ref=_REF_UPDATE if self.grace is not None
                   else f"{_REF_UPDATE}, windowed_grace (KIP-328)")

    def _why_final(self, key, start, agg, agg_ts, close, lower, upper, index):
        return Why("window_closed",
                   f"window [{start},{start + self.size}) of {show(key)} closed: close time {close} = stream time "
                   f"{self.stream_time} - grace {self._grace_text()} >= its end {start + self.size}; the close check "
                   f"fetched window starts [{lower},{upper}] and emits its final value {show(agg)} (last updated by "
                   f"input {index}) at its max record ts {agg_ts}", ref=_REF_FINAL)

    def _why_lost(self, window, close, lower, upper):
        agg, _ts, key, index = window.entry
        return Why("unemitted_window",
                   f"window [{window.start},{window.start + self.size}) of {show(key)} (value {show(agg)}, last updated "
                   f"by input {index}) is never emitted: the close check (stream time {self.stream_time}, close time "
                   f"{close}, window starts [{lower},{upper}]) came after {self.store.explain_hidden(window)}; "
                   f"retention {self.retention_ms} = {self._retention_text()}", ref=f"{_REF_FINAL}, {self.store.name}",
                   window=(key, window.start, window.start + self.size))

    def _retention_text(self) -> str:
        return f"size {self.size} + grace {self.grace}" if self.retention_ms == self.size + self.grace \
            else "Materialized#withRetention"
