"""KStream-KStream join (inner, left, outer), Kafka Streams 0.10.0 to 3.9.

Structure, as ``KStreamImplJoin`` builds it:
- per side a windowed step (``KStreamJoinWindow``): forward the record to this side's join
  processor, then put it into this side's window store (:mod:`reference.stores.window_store`);
- per side a join processor (``KStreamKStreamJoin``, since 3.8 ``...LeftSide`` / ``...RightSide``)
  that looks the record up in the *other* side's store;
- the clock both join processors share (``KStreamImplJoin.TimeTracker``, 3.1+);
- for left/outer joins with the spurious-result fix, the shared outer-join store
  (:mod:`reference.stores.outer_join_store`).

Rules (``kafka-semantics-joins.md`` §1.3, §2, §5; profile rule names in brackets):
- Lookup: left ``[max(0, t - before), max(0, t + after)]``, right ``[max(0, t - after), max(0, t + before)]``
  (0.10.0 gave the right side the left side's bounds [right_join_swaps_window_bounds, KAFKA-4153]).
  Matches in the other store's order (ts, then insertion); one result each, forwarded at once, at
  ``max(t, other ts)`` [output_ts_max, KAFKA-6455; before: t].
- Bounds are Java longs (every release): ``t + after`` past ``Long.MAX_VALUE`` wraps to a negative
  number, which ``Math.max`` makes 0, so the lookup ``[t - before, 0]`` is reversed and finds
  nothing (a negative ``before`` can wrap ``t - before`` too: ``[0, 0]``, which finds the other
  side's records at ts 0 if the store still shows them). Before 2.1 ``Segments#segments`` loops
  over no segment id, in memory and since 3.4 [window_fetch_hides_expired] the store returns
  nothing for a range that ends before it starts; 2.1-3.3 RocksDB [rocksdb_segments_by_retention]
  asks its segment TreeMap for ``subMap(segmentId(t - before), segmentId(0))``, which throws when
  ``t - before`` lies past the first segment: ``window_fetch_reversed_range``, after the emission
  scan, before the record is stored. An outer record that found nothing is emitted at once
  (``0 < stream time``). The emission scan's sums (``minTime + after + grace``, an entry's ``ts +
  look-back + grace``) wrap alike: an entry whose sum wraps counts as closed and is flushed by the
  next scan that reaches it.
- Stores: retention = before + after + grace, size = before + after. Window API "legacy" with
  ``grace_ms`` null: before 2.1 ``JoinWindows#maintainMs`` = 1 day (and a window of 1 day or more is
  rejected: ``KStreamJoinWindow`` needs size + 1 <= retention); since 2.1 grace = max(1 day - size, 0).
- Eager left/outer (no fix: releases before 3.1, and ``JoinWindows.of`` in any release): a record
  with no match is emitted with null at once.
- Spurious-result fix (window API "time_difference", 3.1+, KAFKA-10847): an unmatched record of an
  outer side is held in the outer store unless ``max(0, t + joinAfter) < stream time`` (then it is
  emitted at once). Every record with ``t == stream time`` first runs the emission scan, which
  emits held records (at their own ts, before the record's own results) and deletes them:
  3.1.0 exits early when ``minTime >= ST - joinAfter - grace``; 3.1.1-3.7 with the processor's
  before bound [outer_scan_early_exit_before_bound, KAFKA-13721]; both walk the store until the
  first entry with ``ts + joinAfter + grace >= ST``. 3.8+ [outer_scan_per_side_lookback,
  KAFKA-15417]: early exit when ``minTime + joinAfter + grace >= ST`` (Java long arithmetic), a walk
  with per-side look-back (left entry: window after, right entry: window before) that skips open
  entries until both sides are open, and ``minTime`` overwritten by every entry visited. A match
  deletes the partner's outer-store entry. Emit throttle: ``config.emit_interval_ms`` against
  ``ctx.wall_clock_ms`` (re-armed from now since 3.5 [emit_throttle_from_now, KAFKA-13817], before
  from its previous value).
- Clock: max ts of the records reaching either join processor; until 3.6 only records that were not
  dropped, since 3.7 every record [stream_time_advanced_by_dropped]. One clock per application
  instance in 3.1-3.4.0 (``instance_state``), per task since 3.4.1 [stream_time_tracker_per_task, KAFKA-14862].
- Nulls: null keys never reach the join before 3.7 (``KStreamJoinWindow``); since 3.7 an outer side
  emits a null-key record with null at once [null_key_outer_emit, KIP-962], others drop it. Null
  values are dropped [kip77_join_semantics, 0.10.2]; before, they were joined (the joiner got null)
  and the left join was one-sided: only left records looked up the right store, left records were
  not stored, and a null-key left record made 0.10.0 throw [stream_join_null_key_throws].
  A null value is still put into the window store (see :mod:`reference.stores.window_store`).
- Keys: the window stores and the outer-join store key records by the key's identity
  (:func:`reference.model.keys.key_identity`): two records join exactly when their serialized keys
  are equal (``1``, ``1.0``, ``true`` and ``"1"`` are four keys); outputs keep the record's own key.
"""
from __future__ import annotations

from typing import Optional

import attrs

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.joiners import make_joiner
from kssim.reference.model.keys import key_identity
from kssim.reference.model.pending import Pending, PendingKind, record_text
from kssim.reference.model.profiles import join_window_stores
from kssim.reference.runtime.explain import Stored, Why, show
from kssim.reference.stores.outer_join_store import LEFT_SIDE, RIGHT_SIDE, OuterJoinStore
from kssim.reference.model.suppression import java_long
from kssim.reference.stores.window_store import (LEGACY_NUM_SEGMENTS, InMemoryWindowStore, RocksDBWindowStore,
                                                 segment_interval)

NO_TIMESTAMP = -1
LONG_MAX = (1 << 63) - 1

SCAN_UNTIL_OPEN_AFTER_BOUND = "3.1.0"  # early exit and walk with the processor's after bound
SCAN_UNTIL_OPEN_BEFORE_BOUND = "3.1.1-3.7"  # early exit with the processor's before bound (KAFKA-13721)
SCAN_PER_SIDE = "3.8+"  # KAFKA-15417

_TRACKER_KEY = "stream_stream_join.time_tracker"
_REF = "KStreamKStreamJoin"


@attrs.frozen
class JoinSettings:
    """What the DSL call builds for a release: bounds, grace, store sizes, which fix applies."""

    before_ms: int
    after_ms: int
    grace_ms: int
    retention_ms: int
    window_size_ms: int
    spurious_result_fix: bool
    legacy_default_grace: bool


def join_settings(spec, profile) -> JoinSettings:
    """Bounds, grace and store sizes of ``spec`` under ``profile``: the grace and retention are
    :func:`reference.model.profiles.join_window_stores`'s (the release's JoinWindows defaults)."""
    w = spec.window
    fix = spec.window_api == "time_difference"  # JoinWindows.ofTimeDifference* (KIP-633)
    stores = join_window_stores(profile, w.before_ms, w.after_ms, w.grace_ms, fix)
    return JoinSettings(w.before_ms, w.after_ms, stores.grace_ms, stores.retention_ms, w.before_ms + w.after_ms,
                        fix, stores.default_grace)


def one_sided_left(spec, profile) -> bool:
    """Before KIP-77 (0.10.0, 0.10.1) ``leftJoin`` is one-sided: only left records look up the right
    store, left records are not stored, and the left source feeds the join processor directly."""
    return spec.join == "left" and not profile.kip77_join_semantics


class TimeTracker:
    """``KStreamImplJoin.TimeTracker``: the clock and emit state both join processors share (3.1+)."""

    __slots__ = ("stream_time", "min_time", "next_time_to_emit", "emit_interval_ms")

    def __init__(self, emit_interval_ms: int):
        self.stream_time = NO_TIMESTAMP
        self.min_time = LONG_MAX
        self.next_time_to_emit = 0
        self.emit_interval_ms = emit_interval_ms


class _JoinSide:
    """One side of the join: its ``KStreamJoinWindow`` step and its ``KStreamKStreamJoin`` processor."""

    __slots__ = (
        "side", "other", "side_byte", "other_byte", "is_left", "join_kind",
        "join_before", "join_after", "before_name", "after_name",
        "window_before", "window_after", "grace",
        "outer", "joins", "has_window_step", "store", "other_store", "tracker", "outer_store",
        "joiner", "ts_max", "kip77", "null_key_to_join", "advance_on_drop", "null_key_throws",
        "scan", "throttle_from_now", "eager_reason", "reversed_range_throws", "segment_interval",
    )

    def __init__(self, is_left: bool, spec, profile, settings: JoinSettings, stores, joiner,
                 tracker: Optional[TimeTracker] = None, outer_store: Optional[OuterJoinStore] = None):
        """``stores``: the (left, right) window stores (left None for the one-sided left join);
        ``tracker`` and ``outer_store``: the state both sides share (spurious-result fix only)."""
        self.is_left = is_left
        self.side, self.other = ("left", "right") if is_left else ("right", "left")
        self.side_byte, self.other_byte = (LEFT_SIDE, RIGHT_SIDE) if is_left else (RIGHT_SIDE, LEFT_SIDE)
        self.join_kind = spec.join
        self.join_before, self.join_after, self.before_name, self.after_name = self._lookup_bounds(profile, settings)
        self.window_before, self.window_after = settings.before_ms, settings.after_ms
        self.grace = settings.grace_ms
        self.outer = self._is_outer(spec.join)
        one_sided = one_sided_left(spec, profile)
        self.joins = self._joins(one_sided)
        self.has_window_step = self._has_window_step(one_sided)
        self.store, self.other_store = stores if is_left else stores[::-1]
        self.tracker = tracker
        self.outer_store = outer_store
        self.joiner = joiner
        self.ts_max = profile.output_ts_max
        self.kip77 = profile.kip77_join_semantics
        self.null_key_to_join = profile.null_key_outer_emit
        self.advance_on_drop = profile.stream_time_advanced_by_dropped
        self.null_key_throws = profile.stream_join_null_key_throws
        self.scan = self._scan_kind(profile)
        self.throttle_from_now = profile.emit_throttle_from_now
        self.eager_reason = self._eager_reason(profile)
        # [rocksdb_segments_by_retention] [window_fetch_hides_expired] 2.1-3.3: the RocksDB store's
        # segments are a TreeMap, and a reversed fetch range reaches its subMap
        self.reversed_range_throws = (isinstance(self.other_store, RocksDBWindowStore)
                                      and profile.rocksdb_segments_by_retention
                                      and not profile.window_fetch_hides_expired)
        self.segment_interval = segment_interval(settings.retention_ms)

    # -- settings derived from the spec and the profile ------------------------------------------
    def _lookup_bounds(self, profile, settings: JoinSettings):
        """``(before, after, before name, after name)`` of this side's lookup ``[t - before, t + after]``:
        the right side looks up with the bounds swapped since 0.10.1 [right_join_swaps_window_bounds]."""
        if self.is_left or not profile.right_join_swaps_window_bounds:
            return settings.before_ms, settings.after_ms, "before", "after"
        return settings.after_ms, settings.before_ms, "after", "before"

    def _is_outer(self, join: str) -> bool:
        """Whether an unmatched record of this side is emitted with null (left side of a left join,
        both sides of an outer join)."""
        return join == "outer" or (join == "left" and self.is_left)

    def _joins(self, one_sided: bool) -> bool:
        """Whether this side's records look up the other store (not the one-sided left join's right side)."""
        return not (one_sided and not self.is_left)

    def _has_window_step(self, one_sided: bool) -> bool:
        """Whether this side has a ``KStreamJoinWindow`` (not the one-sided left join's left side)."""
        return not (one_sided and self.is_left)

    @staticmethod
    def _scan_kind(profile) -> str:
        """Which emission scan the release runs (see the module docstring)."""
        if profile.outer_scan_per_side_lookback:
            return SCAN_PER_SIDE
        if profile.outer_scan_early_exit_before_bound:
            return SCAN_UNTIL_OPEN_BEFORE_BOUND
        return SCAN_UNTIL_OPEN_AFTER_BOUND

    @staticmethod
    def _eager_reason(profile) -> str:
        """Why an unmatched record is emitted at once without the fix, for explanations."""
        if profile.time_difference_windows:
            return "JoinWindows.of keeps the eager semantics"
        return "eager semantics before 3.1"

    def process(self, key, value, ts, ctx):
        """The windowed step: forward to this side's join processor, then put into this side's store."""
        if key is None:
            self._null_key(value, ts, ctx)
            return
        # an ASCII string is its own identity (the hot path); key_identity for the rest
        key_id = key if key.__class__ is str and key.isascii() else key_identity(key)
        if value is None:
            self._null_value(key, key_id, ts, ctx)
        elif self.joins:
            self._join(key, key_id, value, ts, ctx)
        store = self.store
        if store is not None and not store.put(key_id, value, ts, ctx.input_index) and value is not None:
            ctx.drop(DropReason.EXPIRED_WINDOW_PUT, self._why_expired(store, key, value, ts) if ctx.explain else None)

    # -- the join processor ----------------------------------------------------------------------
    def _join(self, key, key_id, value, ts, ctx):
        tracker = self.tracker
        if tracker is not None:
            if ts > tracker.stream_time:
                tracker.stream_time = ts
            if ts == tracker.stream_time:
                self._emit_non_joined(ctx)
        lo = ts - self.join_before
        if lo < 0 or lo > LONG_MAX:  # a negative before: t - before may wrap to a negative long
            lo = 0
        hi = ts + self.join_after
        if hi < 0:
            hi = 0
        elif hi > LONG_MAX:
            hi = self._wrapped_upper_bound(key, value, ts, lo, ctx)
        matches = self.other_store.fetch(key_id, lo, hi)
        if matches:
            if self.outer_store is not None:  # the partners found a match: never emitted with null
                self.outer_store.delete_matched(self.other_byte, key_id, matches)
            if ctx.explain:
                self._emit_matches_explained(key, value, ts, lo, hi, matches, ctx)
                return
            emit = ctx.emit
            joiner = self.joiner
            if self.ts_max:
                if self.is_left:
                    for m in matches:
                        emit(key, joiner(value, m[2]), m[0] if m[0] > ts else ts)
                else:
                    for m in matches:
                        emit(key, joiner(m[2], value), m[0] if m[0] > ts else ts)
            elif self.is_left:
                for m in matches:
                    emit(key, joiner(value, m[2]), ts)
            else:
                for m in matches:
                    emit(key, joiner(m[2], value), ts)
        elif self.outer:
            if self.outer_store is None:
                ctx.emit(key, self._with_null(value), ts,
                         self._why_eager(value, ts, lo, hi) if ctx.explain else None)
            elif hi < tracker.stream_time:
                ctx.emit(key, self._with_null(value), ts,
                         self._why_closed(value, ts, lo, hi) if ctx.explain else None)
            else:
                if ts < tracker.min_time:
                    tracker.min_time = ts
                self.outer_store.put(ts, self.side_byte, key, key_id, value, ctx.input_index)

    def _wrapped_upper_bound(self, key, value, ts, lo, ctx) -> int:
        """``Math.max(0L, t + joinAfter)`` where the sum wraps past ``Long.MAX_VALUE``: 0, so the
        lookup ``[lo, 0]`` is reversed (or ``[0, 0]`` when ``t - before`` wrapped too); a RocksDB
        store of 2.1-3.3 asks its segment TreeMap for ``subMap(segmentId(lo), segmentId(0))``,
        which throws when ``lo`` lies past the first segment (see the module docstring)."""
        if self.reversed_range_throws and lo // self.segment_interval > 0:
            why = None
            if ctx.explain:
                why = Why("window_fetch_reversed_range",
                          f"{self.side} {show(key)}:{show(value)}@{ts}: the lookup's upper bound {ts} + "
                          f"{self.after_name} {self.join_after} wraps past Long.MAX_VALUE to "
                          f"{java_long(ts + self.join_after)}, clamped to 0 by Math.max; the {self.other} store's "
                          f"fetch [{lo}, 0] asks its segments for subMap(segmentId({lo}) = "
                          f"{lo // self.segment_interval}, segmentId(0) = 0), and TreeMap throws "
                          "IllegalArgumentException ('fromKey > toKey')",
                          ref=f"{_REF}, AbstractSegments#segments; rocksdb_segments_by_retention (KAFKA-7072), "
                              "window_fetch_hides_expired (KAFKA-12960)")
            ctx.fail(FailureCode.WINDOW_FETCH_REVERSED_RANGE, why)
        return 0

    def _with_null(self, value):
        return self.joiner(value, None) if self.is_left else self.joiner(None, value)

    def _null_key(self, value, ts, ctx):
        if not self.has_window_step:
            # the one-sided pre-KIP-77 leftJoin wires the left source straight to the join processor
            if self.null_key_throws:
                ctx.fail(FailureCode.STREAM_JOIN_NULL_KEY)
            ctx.drop(DropReason.NULL_KEY, Why("null_key", f"null key on the left (ts {ts}): the one-sided left "
                                              "join processor ignores it", ref="KAFKA-3561") if ctx.explain else None)
            return
        if not self.null_key_to_join:
            ctx.drop(DropReason.NULL_KEY, Why("null_key", f"null key on the {self.side} (ts {ts}): KStreamJoinWindow "
                                              "neither forwards nor stores it (silently dropped before 3.7)",
                                              ref="KStreamJoinWindow") if ctx.explain else None)
            return
        tracker = self.tracker
        if tracker is not None and ts > tracker.stream_time:
            tracker.stream_time = ts  # KIP-962: every record advances the shared clock
        if self.outer and value is not None:
            ctx.emit(None, self._with_null(value), ts,
                     Why("null_key_outer", f"null key on the {self.side} side of {'an' if self.join_kind[0] in 'aeiou' else 'a'} {self.join_kind} join: "
                         f"{show(value)}@{ts} emitted at once with null and a null key", ref="KIP-962")
                     if ctx.explain else None)
            return
        if ctx.explain:
            what = "null key and null value" if value is None else "null key"
            why = Why("null_key", f"{what} on the {self.side} (ts {ts}): dropped by the join processor (only "
                      f"outer sides emit null-key records, KIP-962)", ref=_REF)
        else:
            why = None
        ctx.drop(DropReason.NULL_KEY, why)

    def _null_value(self, key, key_id, ts, ctx):
        if not self.joins:
            ctx.drop(DropReason.NULL_VALUE, Why("null_value", f"null value on the {self.side} (ts {ts}): a one-sided "
                                                "left join only stores right records, and a null value stores nothing",
                                                ref="KStreamJoinWindow") if ctx.explain else None)
            return
        if self.kip77:
            tracker = self.tracker
            if self.advance_on_drop and tracker is not None and ts > tracker.stream_time:
                tracker.stream_time = ts  # KIP-962: the dropped record still moves the shared clock
            ctx.drop(DropReason.NULL_VALUE, Why("null_value", f"null value on the {self.side} (ts {ts}): dropped by "
                                                f"the join processor, and a null value is never stored"
                                                f"{self._null_put_note(ts)}", ref="KIP-77") if ctx.explain else None)
            return
        self._join(key, key_id, None, ts, ctx)  # before KIP-77 a null value is joined like any value

    # -- the emission scan (spurious-result fix) -------------------------------------------------
    def _emit_non_joined(self, ctx):
        tracker = self.tracker
        stream_time = tracker.stream_time
        scan = self.scan
        if scan is SCAN_PER_SIDE:
            # Java long overflow: minTime is Long.MAX_VALUE after an empty scan, or an entry's ts
            # near it, and the sum wraps to a negative long: the scan runs
            if java_long(tracker.min_time + self.join_after + self.grace) >= stream_time:
                return
        elif scan is SCAN_UNTIL_OPEN_BEFORE_BOUND:
            if tracker.min_time >= stream_time - self.join_before - self.grace:
                return
        elif tracker.min_time >= stream_time - self.join_after - self.grace:
            return
        now = ctx.wall_clock_ms
        if now < tracker.next_time_to_emit:
            return
        if self.throttle_from_now:
            tracker.next_time_to_emit = now + tracker.emit_interval_ms
        else:
            if tracker.next_time_to_emit == 0:
                tracker.next_time_to_emit = now
            tracker.next_time_to_emit += tracker.emit_interval_ms
        tracker.min_time = LONG_MAX
        if not self.outer_store:
            return  # an empty store: nothing to walk, minTime stays Long.MAX_VALUE
        if scan is SCAN_PER_SIDE:
            self._scan_per_side(stream_time, ctx)
        else:
            self._scan_until_open(stream_time, ctx)

    def _scan_until_open(self, stream_time, ctx):
        """3.1-3.7: emit entries in store order up to the first one this processor sees open."""
        tracker = self.tracker
        reach = self.join_after + self.grace
        done = []
        for store_key, values in self.outer_store.items():
            entry_ts = store_key[0]
            tracker.min_time = entry_ts
            if java_long(entry_ts + reach) >= stream_time:  # still open (a sum that wraps is not)
                break
            self._flush(store_key, values, stream_time, self.join_after, self.after_name, ctx)
            done.append(store_key)
        self.outer_store.delete_entries(done)

    def _scan_per_side(self, stream_time, ctx):
        """3.8+: per-side look-back, skipping open entries until both sides are open."""
        tracker = self.tracker
        grace = self.grace
        left_open = right_open = False
        done = []
        for store_key, values in self.outer_store.items():
            entry_ts = store_key[0]
            tracker.min_time = entry_ts  # overwritten by every entry visited (KAFKA-15417 quirk)
            if left_open and right_open:
                break
            left = store_key[1] == LEFT_SIDE
            lookback = self.window_after if left else self.window_before
            if java_long(entry_ts + lookback + grace) >= stream_time:  # open (a sum that wraps is not)
                left_open, right_open = left_open or left, right_open or not left
                # ListValueStore's iterator yields each value of an entry on its own: when this
                # open entry made both sides open and holds more values, its second value is
                # visited next (minTime = this ts) and the loop stops there
                if left_open and right_open and len(values) > 1:
                    break
                continue
            self._flush(store_key, values, stream_time, lookback, "after" if left else "before", ctx)
            done.append(store_key)
        self.outer_store.delete_entries(done)

    def _flush(self, store_key, values, stream_time, lookback, lookback_name, ctx):
        entry_ts, entry_side = store_key[0], store_key[1]
        joiner = self.joiner
        for key, value, input_index in values:
            joined = joiner(value, None) if entry_side == LEFT_SIDE else joiner(None, value)
            why = None
            if ctx.explain:
                side = "left" if entry_side == LEFT_SIDE else "right"
                scanner = "" if self.scan is SCAN_PER_SIDE else f" by a {self.side} record"
                closed = f"stream time {stream_time} > {entry_ts} + {lookback_name} {lookback} + grace {self.grace}"
                if entry_ts + lookback + self.grace > LONG_MAX:
                    closed = (f"{entry_ts} + {lookback_name} {lookback} + grace {self.grace} wraps past Long.MAX_VALUE "
                              f"to {java_long(entry_ts + lookback + self.grace)} < stream time {stream_time}")
                why = Why("outer_flush", f"unjoined {side} {show(value)}@{entry_ts} flushed{scanner}: {closed}",
                          (Stored(side, key, value, entry_ts, input_index),),
                          "KAFKA-15417" if self.scan is SCAN_PER_SIDE else "KAFKA-10847")
            ctx.emit(key, joined, entry_ts, why)

    # -- explanations ----------------------------------------------------------------------------
    def _range_text(self, ts, lo, hi):
        raw_lo, raw_hi = ts - self.join_before, ts + self.join_after
        clamp = " (clamped at 0)" if (lo, hi) != (raw_lo, raw_hi) else ""
        if raw_lo > LONG_MAX or raw_hi > LONG_MAX:
            clamp = " (wrapped past Long.MAX_VALUE to a negative long, clamped at 0 by Math.max)"
        return (f"[{lo}, {hi}] = [{ts} - {self.before_name} {self.join_before}, "
                f"{ts} + {self.after_name} {self.join_after}]{clamp}")

    def _emit_matches_explained(self, key, value, ts, lo, hi, matches, ctx):
        for m in matches:
            other_ts, other_value = m[0], m[2]
            if self.ts_max:
                out_ts = other_ts if other_ts > ts else ts
                ts_text = f"output ts max({ts}, {other_ts}) = {out_ts} (KAFKA-6455)"
            else:
                out_ts = ts
                ts_text = f"output ts {ts}, the triggering record's (before KAFKA-6455)"
            joined = self.joiner(value, other_value) if self.is_left else self.joiner(other_value, value)
            why = Why("inner_match", f"{self.side} {show(value)}@{ts} joins {self.other} {show(other_value)}@{other_ts}: "
                      f"{other_ts} in {self._range_text(ts, lo, hi)}; {ts_text}",
                      (Stored(self.other, key, other_value, other_ts, m[3]),), _REF)
            ctx.emit(key, joined, out_ts, why)

    def _why_eager(self, value, ts, lo, hi):
        return Why("outer_eager", f"no {self.other} record in {self._range_text(ts, lo, hi)}: the {self.join_kind} "
                   f"join emits {self.side} {show(value)}@{ts} with null at once ({self.eager_reason})", ref=_REF)

    def _why_closed(self, value, ts, lo, hi):
        return Why("outer_window_closed", f"no {self.other} record in {self._range_text(ts, lo, hi)} and the window "
                   f"has closed: {hi} < stream time {self.tracker.stream_time}; {self.side} {show(value)}@{ts} emitted "
                   f"with null at once, not held", ref="KAFKA-10847")

    def _why_expired(self, store, key, value, ts):
        return Why("expired_window_put", f"{store.explain_expired(ts)}: {self.side} {show(value)}@{ts} went through "
                   f"the join first, but is not stored", ref=type(store).__name__)

    def _null_put_note(self, ts):
        store = self.store
        if store is None or getattr(store, "null_put_noop", False):
            return ""
        if ts <= store.observed_ms:
            return ""
        return f" (its put still moves the {self.side} store's clock to {ts})"


class StreamStreamJoinTask:
    """The join as one task runs it: the two sides, their window stores, and the shared state."""

    __slots__ = ("settings", "left", "right", "left_store", "right_store", "outer_store", "tracker")

    def __init__(self, settings: JoinSettings, left: _JoinSide, right: _JoinSide, left_store, right_store,
                 outer_store: Optional[OuterJoinStore], tracker: Optional[TimeTracker]):
        self.settings = settings
        self.left, self.right = left, right
        self.left_store, self.right_store = left_store, right_store
        self.outer_store, self.tracker = outer_store, tracker

    def process(self, topic, key, value, ts, ctx):
        if topic == "left":
            self.left.process(key, value, ts, ctx)
        else:
            self.right.process(key, value, ts, ctx)

    def pending(self, task: int) -> tuple:
        """The unmatched records held in the outer-join store (spurious-result fix, 3.1+), each with
        the stream time that flushes it (:func:`outer_release`). The window stores hold records for
        later lookups, but none of those waits for an emit decision: nothing else is listed."""
        if self.outer_store is None:
            return ()
        # KStreamImplJoin.TimeTracker: one clock both join processors share (per task since 3.4.1)
        clock = "the join's"
        held = []
        for ts, side, key, value, input_index in self.outer_store.flattened():
            side_name = "left" if side == LEFT_SIDE else "right"
            release, rule = outer_release(self.left, ts, side == LEFT_SIDE)
            held.append(Pending(PendingKind.OUTER_JOIN_RECORD, task, record_text(side_name, key, value, ts), key,
                                value, ts, release, rule, self.tracker.stream_time, clock, input_index=input_index))
        return tuple(held)


def outer_release(side: "_JoinSide", ts: int, left_entry: bool):
    """``(stream time that flushes an outer-store entry at ts, its formula)``: the emission scan
    flushes an entry once stream time is strictly past ``ts + look-back + grace``. 3.8+
    (KAFKA-15417): the look-back is the entry's side's (a left entry: the window's after, a right
    one: its before); 3.1-3.7: the scanning processor's after bound, so it depends on which side's
    record comes (the left processor's after, the right processor's, with bounds swapped, before):
    the earlier of the two is given, both are named."""
    grace = side.grace
    after, before = side.window_after, side.window_before
    bounds = (("after", after), ("before", before))
    if side.scan is SCAN_PER_SIDE:
        bounds = bounds[:1] if left_entry else bounds[1:]
    wraps = [name for name, bound in bounds if ts + bound + grace > LONG_MAX]
    if wraps:
        # the sum wraps to a negative long: the entry is closed at any stream time, so the next scan
        # that reaches it (a record at the join's stream time) flushes it
        stream_time = side.tracker.stream_time
        return stream_time, (f"any record at stream time {stream_time}: {ts} + {wraps[0]} + grace {grace} wraps past "
                             "Long.MAX_VALUE to a negative long, so the scan counts the entry as closed")
    if side.scan is SCAN_PER_SIDE:
        lookback, name = (after, "after") if left_entry else (before, "before")
        return ts + lookback + grace + 1, f"stream time > {ts} + {name} {lookback} + grace {grace}"
    by_left, by_right = ts + after + grace + 1, ts + before + grace + 1
    return min(by_left, by_right), (f"stream time > {ts} + after {after} + grace {grace} when a left record "
                                    f"scans, > {ts} + before {before} + grace {grace} when a right record does "
                                    f"({side.scan}); and the scan stops at the first entry still open")


class _TaskClockJoinTask(StreamStreamJoinTask):
    """2.1: the RocksDB segments expire by the task's stream time, which every record moves first."""

    __slots__ = ()

    def process(self, topic, key, value, ts, ctx):
        for store in (self.left_store, self.right_store):
            if store is not None:
                store.observe(ts)
        StreamStreamJoinTask.process(self, topic, key, value, ts, ctx)


def _window_store(settings: JoinSettings, profile, config):
    if config.store == "in_memory":  # possible from 2.4 (StreamJoined), see check_topology
        return InMemoryWindowStore(settings.retention_ms, settings.window_size_ms)
    return RocksDBWindowStore(
        settings.retention_ms, settings.window_size_ms,
        live_segments=None if profile.rocksdb_segments_by_retention else LEGACY_NUM_SEGMENTS,
        task_clock=profile.rocksdb_segments_by_retention and not profile.window_store_own_clock,
        strict_fetch=profile.window_fetch_hides_expired,
        null_put_noop=profile.rocksdb_null_window_put_skipped,
        fetch_from_first_segment=profile.rocksdb_fetch_from_first_segment,
    )


def build(spec, profile, config, instance_state) -> StreamStreamJoinTask:
    """One task's join processors and stores for ``spec`` under ``profile``."""
    settings = join_settings(spec, profile)
    joiner = make_joiner(spec.joiner, spec.joiner_separator)
    left_store = None if one_sided_left(spec, profile) else _window_store(settings, profile, config)
    right_store = _window_store(settings, profile, config)

    outer_store: Optional[OuterJoinStore] = None
    tracker: Optional[TimeTracker] = None
    if settings.spurious_result_fix and spec.join in ("left", "outer"):
        outer_store = OuterJoinStore()
        if profile.stream_time_tracker_per_task:
            tracker = TimeTracker(config.emit_interval_ms)
        else:  # 3.1-3.4.0: one tracker per join for the whole instance (KAFKA-14862)
            tracker = instance_state.setdefault(_TRACKER_KEY, TimeTracker(config.emit_interval_ms))

    stores = (left_store, right_store)
    left = _JoinSide(True, spec, profile, settings, stores, joiner, tracker, outer_store)
    right = _JoinSide(False, spec, profile, settings, stores, joiner, tracker, outer_store)
    task_clock = any(getattr(s, "task_clock", False) for s in stores)
    task_class = _TaskClockJoinTask if task_clock else StreamStreamJoinTask
    return task_class(settings, left, right, left_store, right_store, outer_store, tracker)
