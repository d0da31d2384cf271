"""Session-windowed aggregation (``groupByKey().windowedBy(SessionWindows)``),
``KStreamSessionWindowAggregate``, Kafka Streams 0.10.2 to 4.x.

A session is ``[start, end]`` of one key, both ends inclusive; a lone record makes ``[ts, ts]``.
Per record (one processor per task; profile rule names in brackets):

1. A null key is dropped (``null_key``) before the processor's stream time moves. A null value is
   aggregated like any value (``count`` counts it; ``sum`` fails as Java's unboxing would:
   ``aggregator_null_value``; a reduce keeps the null, whose put deletes the session).
2. Stream time: the largest ts of the non-null-key records this processor saw, the current one
   included [session_own_stream_time, 2.2, KAFKA-7895]; 2.1: the task's stream time, which every
   record of the task moves (null keys too). Close time = stream time - grace (- gap since 3.0
   [session_close_includes_gap, KAFKA-12718]). Before 2.1 [windowed_grace] there is no grace and no
   close time: no record is dropped as late, only the store's retention forgets sessions.
3. Candidates: the store's sessions of the key that end at or after ``ts - gap`` and start at or
   before ``ts + gap`` (a Java long: past ``Long.MAX_VALUE`` it wraps to a negative latest start;
   the RocksDB session stores and any caching layer build their range's upper key as
   ``new SessionWindow(latestStart, Long.MAX_VALUE)``, whose constructor throws
   ``IllegalArgumentException`` [window_bounds_checked]: the application dies at the record,
   ``window_illegal_argument``; the in-memory store without a cache finds nothing, so the record
   starts a session of its own), in store order (end, then start), as the store shows them
   (:mod:`reference.stores.session_store`: the retention filter since 3.4, the 0.11.0-2.1.0 lookup
   that misses sessions ending after ``ts + gap`` [session_fetch_end_bounded, KAFKA-7652]).
4. Merge: ``agg = merger(key, agg, candidate)`` for each candidate in that order, starting from the
   initializer's value (null for a reduce); the window widens to ``[min start, max end]`` with
   ``[ts, ts]``.
5. Late check on the merged window (2.1+): dropped (``expired_window``) when its end is before the
   close time [session_late_before_close, 2.2.1, KAFKA-8289]; 2.1-2.2.0: at or before it. A
   record older than the close time is accepted when it merges into a live session.
6. Otherwise, unless the merged window is ``[ts, ts]`` (then an existing ``[ts, ts]`` is overwritten
   in place, without a tombstone): each candidate, in order, is removed from the store and
   forwarded as a tombstone ``Change(null, old)`` (old = its aggregate when old values are sent).
   Then ``agg = aggregator(key, value, agg)``, the merged session is put, and ``Change(agg, null)``
   is forwarded. Before 2.1 the aggregator runs before the candidates are removed (a failing
   aggregator forwards no tombstone). Timestamps: the session's end for both the result and the
   tombstones [session_output_ts_window_end, 2.3, KAFKA-6455]; 2.1-2.2, the record's ts. A put the
   store drops (a dead segment before 2.1, an in-memory session at the retention edge) is still
   forwarded (``expired_window_put``).
   Before 2.1 [zero_cache_strips_caching_layer, KAFKA-6998] the zero-byte record cache of the
   scenario contract leaves the store's caching layer in place, and it does the forwarding: each
   write (removal or put) is evicted at once; ``CachingSessionStore#putAndMaybeForward`` reads the
   stored session the write replaces (the first one overlapping its window, needed for a removal
   or for old values; never found in 0.10.2 [session_cache_finds_previous, KAFKA-5172]), forwards
   ``Change(new, old)`` at the cache entry's timestamp, the session's end, unless both are null
   (so 0.10.2 forwards no tombstone, and a null reduce result replacing nothing is not forwarded),
   then writes the store.
7. Emit on window close [emit_on_window_close, 3.3, KIP-825], after every non-null-key record,
   accepted or late: no per-record forwards; when the close time passed the last emitted one,
   every key's sessions that end in ``[max(0, last close), close - 1]`` are forwarded once,
   ``Change(agg, null)`` at the session's end, in the store's range order, and the close time is
   remembered. Emitted sessions stay in the store. The RocksDB range fetch ignores the retention
   filter; the in-memory store forgets sessions first (so it loses those at the retention edge),
   and in 3.3-3.5.1 / 3.6.0 its leaked iterators stop it forgetting
   [session_emit_final_iterator_leak]. A session the store loses before an emission range reaches
   it is reported on the record whose processing lost it (``unemitted_window``). The throttle
   (``__emit.interval.ms.kstreams.windowed.aggregation__``) is 0 in the scenario contract, so it
   never holds an emission back.

Grace and retention come from :func:`reference.model.profiles.session_window_settings`
[session_retention_gap_plus_grace, 3.0, KAFKA-7106]. Old values are sent when the topology asks
(``send_old_values``) or, since 2.3, when a suppress downstream asks [suppress_enables_old_values].
Keys: the store keys sessions by the key's identity (:func:`reference.model.keys.key_identity`);
output keys are ``{"key", "start", "end"}`` with the record's own key.
"""
from __future__ import annotations

from kssim.reference.model.aggregations import AggregatorNullValue, aggregation_of
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.keys import key_identity
from kssim.reference.model.pending import Pending, PendingKind, window_text
from kssim.reference.model.profiles import session_window_settings
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.suppression import JAVA_LONG_MAX, java_long
from kssim.reference.runtime.explain import Why, show
from kssim.reference.stores.session_store import NO_TIMESTAMP, RocksDBSessionStore, make_session_store

_REF = "KStreamSessionWindowAggregate"
_REF_FINAL = "KStreamSessionWindowAggregate, EmitStrategy.onWindowClose (KIP-825)"


def build(spec, profile, config, instance_state):
    """One task's session aggregation processor and store."""
    return SessionAggregate(spec, profile, config.store, caching=getattr(config, "caching", False))


class SessionAggregate:
    """``KStreamSessionWindowAggregateProcessor`` of one task with its session store."""

    __slots__ = ("profile", "settings", "gap", "close_offset", "late_at_close", "task_time", "ts_end",
                 "aggregate_first", "cache_layer", "cache_finds_previous", "emit_final", "send_old", "store",
                 "observe_store", "stream_time", "last_emit_close", "initial", "add", "merge", "range_key_window")

    def __init__(self, spec, profile, store_kind: str, caching: bool = False):
        settings = session_window_settings(profile, spec.gap_ms, spec.grace_ms, spec.retention_ms)
        self.profile = profile
        self.settings = settings
        self.gap = spec.gap_ms
        self.close_offset = settings.close_offset_ms  # None before 2.1: nothing is ever late
        self.late_at_close = not profile.session_late_before_close  # 2.1-2.2.0: ending at the close time is late
        self.task_time = profile.windowed_grace and not profile.session_own_stream_time  # 2.1
        self.ts_end = profile.session_output_ts_window_end
        self.aggregate_first = not profile.windowed_grace  # before KAFKA-7222 the aggregator ran first
        self.cache_layer = not profile.zero_cache_strips_caching_layer  # before 2.1: forwards on cache flush
        self.cache_finds_previous = profile.session_cache_finds_previous
        self.emit_final = spec.emit == "on_window_close"
        self.send_old = spec.send_old_values or (spec.suppress is not None and profile.suppress_enables_old_values)
        self.store = make_session_store(profile, store_kind, settings.retention_ms, self.emit_final)
        # findSessions builds a SessionWindow as its range's upper key: the RocksDB stores, and the
        # caching layer (never under emit-on-window-close, SessionStoreMaterializer)
        self.range_key_window = store_kind != "in_memory" or (caching and not self.emit_final)
        self.observe_store = getattr(self.store, "task_clock", False)
        self.stream_time = NO_TIMESTAMP
        self.last_emit_close = NO_TIMESTAMP
        aggregation = aggregation_of(spec.aggregation, spec.merge_separator)
        self.initial = aggregation.initial
        # the raw functions where the Aggregation's reduce handling has nothing to do (the hot path)
        self.add = aggregation.add if aggregation.is_reduce else aggregation.aggregator
        self.merge = aggregation.merge if aggregation.is_reduce else aggregation.merger

    def process(self, topic, key, value, ts, ctx):
        if self.task_time and ts > self.stream_time:
            self.stream_time = ts  # 2.1: the task's stream time moves before the record is processed
        if self.observe_store:
            self.store.observe(ts)
        if key is None:
            ctx.drop(DropReason.NULL_KEY, self._why_null_key(value, ts) if ctx.explain else None)
            return
        # an ASCII string is its own identity (the hot path); key_identity for the rest
        key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
        if ts > self.stream_time:
            self.stream_time = ts
        gap = self.gap
        latest = ts + gap
        if latest > JAVA_LONG_MAX:
            latest = self._wrapped_latest_start(key, value, ts, ctx)
        found = self.store.find(key_id, ts - gap, latest)
        agg = self.initial()
        start = end = ts
        if found:
            merge = self.merge
            for s in found:
                agg = merge(key, agg, s[2])
                if s[1] < start:
                    start = s[1]
                if s[0] > end:
                    end = s[0]
        story = self._story(key, key_id, value, ts, start, end, found) if ctx.explain else None
        offset = self.close_offset
        if offset is not None:
            close = self.stream_time - offset
            if end < close or (end == close and self.late_at_close):
                ctx.drop(DropReason.EXPIRED_WINDOW, self._why_late(story, end, close) if story else None)
                if self.emit_final:
                    self._emit_final(key, value, ts, ctx)
                return
        self._accept(key, key_id, value, ts, start, end, agg, found, story, ctx)
        if self.emit_final:
            self._emit_final(key, value, ts, ctx)

    def _wrapped_latest_start(self, key, value, ts, ctx) -> int:
        """``ts + gap`` past ``Long.MAX_VALUE``: the wrapped (negative) latest start the in-memory
        store finds nothing below, or the failure of a store whose range key is a SessionWindow."""
        latest = java_long(ts + self.gap)
        if self.range_key_window:
            why = None
            if ctx.explain:
                why = Why("window_illegal_argument",
                          f"{show(key)}:{show(value)}@{ts}: the session lookup's latest start ts + gap {self.gap} wraps "
                          f"past Long.MAX_VALUE to {latest}; the store's range key new SessionWindow({latest}, "
                          "Long.MAX_VALUE) throws IllegalArgumentException ('Window startMs time cannot be negative.')",
                          ref=f"{_REF}, SessionKeySchema#upperRangeFixedSize; window_bounds_checked (KAFKA-3452)")
            ctx.fail(FailureCode.WINDOW_ILLEGAL_ARGUMENT, why)
        return latest

    def _accept(self, key, key_id, value, ts, start, end, agg, found, story, ctx):
        """Remove the merged-away sessions (tombstones), aggregate the record, put and forward."""
        try:
            if self.aggregate_first:
                agg = self.add(key, value, agg)
            if found and (start != ts or end != ts):
                self._remove_merged(key, key_id, value, ts, start, end, found, story, ctx)
            if not self.aggregate_first:
                agg = self.add(key, value, agg)
        except AggregatorNullValue:
            ctx.fail(FailureCode.AGGREGATOR_NULL_VALUE, Why(
                "aggregator_null_value", f"{story.text}; the sum aggregator gets the null value: unboxing it throws "
                "NullPointerException and the application dies" + (" after the merged-away sessions' tombstones"
                                                                      if found and not self.aggregate_first else ""),
                ref=_REF) if story else None)
        if self.cache_layer:
            self._cached_write(key, key_id, start, end, agg, value, ts, story, None, ctx)
            return
        if not self.store.put(key_id, key, start, end, agg):
            ctx.drop(DropReason.EXPIRED_WINDOW_PUT, self._why_expired_put(value, ts, end) if story else None)
        if not self.emit_final:
            ctx.emit({"key": key, "start": start, "end": end}, agg, end if self.ts_end else ts,
                     self._why_result(story, agg) if story else None,
                     None if self.send_old else NO_OLD_VALUE)

    def _remove_merged(self, key, key_id, value, ts, start, end, found, story, ctx):
        """Remove each merged-away session and forward its tombstone, in store order."""
        if self.cache_layer:
            for s in found:
                self._cached_write(key, key_id, s[1], s[0], None, value, ts, story, s, ctx)
            return
        store = self.store
        forward = not self.emit_final
        send_old = self.send_old
        ts_end = self.ts_end
        for s in found:
            store.remove(key_id, key, s[1], s[0])
            if forward:
                ctx.emit({"key": key, "start": s[1], "end": s[0]}, None, s[0] if ts_end else ts,
                         self._why_tombstone(story, s) if story else None, s[2] if send_old else NO_OLD_VALUE)

    def _cached_write(self, key, key_id, start, end, agg, value, ts, story, merged_away, ctx):
        """A store write through the zero-byte caching layer (before 2.1): the cache evicts it at
        once, and ``CachingSessionStore#putAndMaybeForward`` reads the stored session it replaces
        (the first stored session overlapping the window, ``fetchPrevious``; never found in 0.10.2
        [session_cache_finds_previous, KAFKA-5172]), forwards ``Change(new, old)`` at the cache
        entry's timestamp, the session's end, unless both are null, then writes the store.
        ``merged_away``: the session this write removes (a tombstone), None for the result."""
        store = self.store
        old = None
        if self.cache_finds_previous and (agg is None or self.send_old):
            previous = store.find(key_id, start, end)
            old = previous[0][2] if previous else None
        if agg is not None or old is not None:
            why = None
            if story:
                why = self._why_tombstone(story, merged_away) if merged_away else self._why_result(story, agg)
                why = self._why_cached(why, old, agg is None or self.send_old)
            ctx.emit({"key": key, "start": start, "end": end}, agg, end, why, old if self.send_old else NO_OLD_VALUE)
        elif story:
            what = f"the tombstone of [{start},{end}]" if merged_away else f"the null result [{start},{end}]"
            story.notes.append(f"{what} is not forwarded: the caching layer found no stored session it replaces")
        if not store.put(key_id, key, start, end, agg):
            ctx.drop(DropReason.EXPIRED_WINDOW_PUT, self._why_expired_put(value, ts, end) if story else None)

    def _emit_final(self, key, value, ts, ctx):
        """``maybeForwardFinalResult``: forward every key's sessions that closed since the last
        emission, once (the throttle interval is 0 in the scenario contract, so it never holds one
        back)."""
        close = self.stream_time - self.close_offset
        last = self.last_emit_close
        covered = last if last > 0 else 0  # sessions ending before this were in an emitted range
        upper = close - 1  # session ends are inclusive: a session ending at close - 1 is closed
        # emit only when the close time moved past the last emission and something can have closed
        # (otherwise the last close time is not updated either)
        if (last == NO_TIMESTAMP or last < close) and upper >= covered:
            old = None if self.send_old else NO_OLD_VALUE
            for s_end, s_start, s_key, s_agg in self.store.find_by_end(covered, upper):
                ctx.emit({"key": s_key, "start": s_start, "end": s_end}, s_agg, s_end,
                         self._why_final(key, value, ts, s_key, s_start, s_end, close, covered, upper)
                         if ctx.explain else None, old)
            self.last_emit_close = close
        for lost in self.store.take_expired():
            if lost[0] >= covered:  # expired before any emission range reached it: never emitted
                ctx.drop(DropReason.UNEMITTED_WINDOW, self._why_lost(key, value, ts, lost) if ctx.explain else None,
                         window=(lost[2], lost[1], lost[0]))

    # -- what is held at the end of a run (kssim run --pending) -----------------------------------
    def pending(self, task: int) -> tuple:
        """Emit on window close: the sessions no emission range reached yet; a session ``[s, e]``
        is emitted once ``stream time - close offset - 1 >= e``. Emit on update holds nothing."""
        if not self.emit_final or self.close_offset is None:
            return ()
        last = self.last_emit_close
        covered = last if last > 0 else 0
        offset = self.close_offset
        held = []
        for s_end, s_start, s_key, s_agg in self.store.sessions_ending_from(covered):
            held.append(Pending(PendingKind.OPEN_WINDOW, task, f"session {window_text(s_key, s_start, s_end, True)}",
                                s_key, s_agg, s_end, s_end + 1 + offset,
                                f"session end {s_end} + 1 + close offset {offset}", self.stream_time,
                                "the aggregation's", (s_key, s_start, s_end)))
        return tuple(held)

    # -- explanations (built only when ctx.explain) -------------------------------------------------
    def _story(self, key, key_id, value, ts, start, end, found) -> "_Story":
        """What the record found, told before the store changes (the sessions it merges, the ones
        the store hid from it)."""
        gap = self.gap
        if found:
            merged = ", ".join(f"[{s[1]},{s[0]}]={show(s[2])}" for s in found)
            text = (f"{show(value)}@{ts} merges the sessions of key {show(key)} within gap {gap} ({merged}; in store "
                    f"order, folded from the initializer with the merger) into [{start},{end}]")
        elif ts + gap > JAVA_LONG_MAX:
            text = (f"{show(value)}@{ts} starts session [{ts},{ts}]: the lookup's latest start ts + gap {gap} wraps "
                    f"past Long.MAX_VALUE to {java_long(ts + gap)}, and no session starts by then (the in-memory "
                    "store's range, whose bounds are not windows, finds nothing)")
            return _Story(key, value, ts, start, end, found, text, [])
        else:
            text = (f"{show(value)}@{ts} starts session [{ts},{ts}]: no session of key {show(key)} ends at or after "
                    f"{ts} - gap {gap} = {ts - gap} and starts by {ts + gap}")
        for (e, s, agg), why in self.store.missed(key_id, ts - gap, ts + gap):
            if why == "retention":
                text += (f"; not merged with [{s},{e}]={show(agg)}: the store hides it, {self.store.explain_floor()} "
                         f"[window_fetch_hides_expired, KAFKA-12960] ({self._retention_text()})")
            elif why == "first_segment":
                text += (f"; not merged with [{s},{e}]={show(agg)}: the lookup skips it, {self.store.explain_floor()} "
                         "[rocksdb_fetch_from_first_segment]")
            else:
                text += (f"; not merged with [{s},{e}]={show(agg)}: it ends after {ts} + gap {gap}, beyond the lookup's "
                         "upper bound [session_fetch_end_bounded, KAFKA-7652]")
        return _Story(key, value, ts, start, end, found, text, [])

    def _retention_text(self) -> str:
        s = self.settings
        if self.profile.windowed_grace and not s.maintain_ms and s.retention_ms == s.minimum_retention_ms \
                and self.profile.session_retention_gap_plus_grace:
            return f"retention {s.retention_ms} = gap {self.gap} + grace {s.grace_ms} [session_retention_gap_plus_grace]"
        if s.maintain_ms:
            return (f"retention {s.retention_ms} = SessionWindows#maintainMs = max(1 day, gap) (before "
                    "session_retention_gap_plus_grace)")
        return f"retention {s.retention_ms} = Materialized#withRetention (retention_ms)"

    def _close_formula(self) -> str:
        s = self.settings
        clock = "the task's stream time" if self.task_time else "stream time"
        text = f"{clock} {self.stream_time} - grace {s.grace_ms}"
        if self.profile.session_close_includes_gap:
            text += f" - gap {self.gap} [session_close_includes_gap]"
        if s.default_grace:
            text += " (grace: SessionWindows.with's default)"
        if self.task_time:
            text += " (2.1, before session_own_stream_time)"
        return text

    def _ts_text(self, ts, end) -> str:
        if self.ts_end:
            return f"output ts = session end {end} [session_output_ts_window_end, KAFKA-6455]"
        return f"output ts = the record's ts {ts} (before session_output_ts_window_end, KAFKA-6455)"

    def _why_result(self, story, agg):
        start, end, ts, found = story.start, story.end, story.ts, story.found
        parts = [f"{story.text}, aggregate {show(agg)}"] + story.notes
        if found and start == ts and end == ts:
            parts.append(f"[{ts},{ts}] is overwritten in place, no tombstone")
        if self.close_offset is None:
            parts.append("no grace before 2.1 [windowed_grace]: nothing is dropped as late, only the store's retention "
                         f"({self.settings.retention_ms} ms) forgets sessions")
        else:
            close = self.stream_time - self.close_offset
            if self.late_at_close:
                verdict = f"ends at {end}, after the close time {close} (2.1-2.2.0: ending at it is late, before " \
                          "session_late_before_close)"
            else:
                verdict = f"ends at {end}, not before the close time {close}"
            parts.append(f"not late: the session {verdict} = {self._close_formula()}")
        if not self.cache_layer:
            parts.append(self._ts_text(ts, end))
        return Why("session_merge" if found else "session_new", "; ".join(parts), ref=_REF)

    def _why_tombstone(self, story, s):
        old = f", old value {show(s[2])}" if self.send_old else ""
        text = (f"session [{s[1]},{s[0]}]={show(s[2])} of key {show(story.key)} is merged into [{story.start},"
                f"{story.end}] by {show(story.value)}@{story.ts}: removed from the store and forwarded as a "
                f"tombstone{old}")
        if not self.cache_layer:
            text += "; " + self._ts_text(story.ts, s[0])
        return Why("session_merged_away", text, ref=_REF)

    def _why_cached(self, why, old, looked_up):
        text = (f"{why.text}; forwarded by the zero-byte caching layer, which evicts the write at once "
                "[zero_cache_strips_caching_layer, KAFKA-6998]: output ts = the cache entry's, the session end")
        if not self.cache_finds_previous:
            text += "; the stored session it replaces is never found in 0.10.2 [session_cache_finds_previous, KAFKA-5172]"
        elif looked_up:
            text += f"; old value from the stored session it replaces: {'none' if old is None else show(old)}"
        return Why(why.rule, text, why.joined, why.ref)

    def _why_late(self, story, end, close):
        if self.late_at_close:
            how, rule = "at or before", " (2.1-2.2.0: ending at the close time is late, before session_late_before_close)"
        else:
            how, rule = "before", " [session_late_before_close]"
        return Why("expired_window", f"{story.text}; dropped as late: the merged session ends at {end}, {how} the close "
                   f"time {close} = {self._close_formula()}{rule}; nothing is stored or forwarded ('Skipping record for "
                   "expired window')", ref=_REF)

    def _why_null_key(self, value, ts):
        moved = f"; the task's stream time still moves to {self.stream_time} (2.1)" if self.task_time else \
            "; stream time does not move"
        return Why("null_key", f"null key ({show(value)}@{ts}): the session aggregation skips it ('Skipping record due "
                   f"to null key'){moved}", ref=_REF)

    def _why_expired_put(self, value, ts, end):
        return Why("expired_window_put", f"{show(value)}@{ts}: the session store drops the put, "
                   f"{self.store.explain_expired(end)}; the result is still forwarded", ref=type(self.store).__name__)

    def _why_lost(self, key, value, ts, lost):
        s_end, s_start, s_key, s_agg = lost
        store = self.store
        if isinstance(store, RocksDBSessionStore):
            how = (f"the RocksDB store deleted its segment (session end {s_end} below segment "
                   f"{store.min_live_segment()} = segment of {store.explain_clock()} - retention "
                   f"{store.retention_ms}, {store.segment_interval_ms} ms segments; {self._retention_text()})")
        else:
            how = (f"the in-memory store forgot it (session end {s_end} < store clock {store.observed_ms} - retention "
                   f"{store.retention_ms} + 1; {self._retention_text()})")
        close = self.stream_time - self.close_offset
        return Why("unemitted_window", f"session [{s_start},{s_end}]={show(s_agg)} of key {show(s_key)} is never emitted: "
                   f"while {show(key)}:{show(value)}@{ts} was processed (stream time {self.stream_time}, close time "
                   f"{close} = {self._close_formula()}), {how} before an emission range reached it "
                   "[emit_on_window_close]", ref=_REF_FINAL, window=(s_key, s_start, s_end))

    def _why_final(self, key, value, ts, s_key, s_start, s_end, close, lower, upper):
        previous = "the first emission" if self.last_emit_close == NO_TIMESTAMP else \
            f"the previous close time {self.last_emit_close}"
        store = self.store
        if isinstance(store, RocksDBSessionStore):
            fetch = "the RocksDB range fetch applies no retention filter"
        elif store.pin is not None and store.pin < store.observed_ms - store.retention_ms + 1:
            fetch = (f"the in-memory store forgets nothing ending at or after {store.pin}, the position of an emit-final "
                     "iterator left open [session_emit_final_iterator_leak]")
        else:
            fetch = "the in-memory store first forgets sessions ending before its clock - retention + 1"
        return Why("session_emit_final", f"session [{s_start},{s_end}] of key {show(s_key)} closed: {show(key)}:"
                   f"{show(value)}@{ts} moved the close time to {close} = {self._close_formula()}; every session ending "
                   f"in [{lower}, {upper}] (from {previous}) is emitted once, at its end ({fetch}) "
                   "[emit_on_window_close]", ref=_REF_FINAL)


class _Story:
    """What one record found in the store, told for its explanations: the record, the merged
    window, the candidates, the sentence saying what merged (or was hidden), and notes added along
    the way."""

    __slots__ = ("key", "value", "ts", "start", "end", "found", "text", "notes")

    def __init__(self, key, value, ts, start, end, found, text, notes):
        self.key, self.value, self.ts, self.start, self.end, self.found, self.text, self.notes = \
            key, value, ts, start, end, found, text, notes
