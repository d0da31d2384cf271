"""The windowed-table join of seed 003 ("WTable"): two time-windowed aggregations joined on
(key, window) as a KTable-KTable join.

Topology, as the Kafka DSL builds it (``x-notes`` of the conformance files spell the Java):
- ``L = left.groupByKey().windowedBy(W).aggregate(...)`` and ``R = right....`` with the same
  ``TimeWindows`` W: two :class:`reference.windows.time_window.TimeWindowAggregate` processors,
  each with its own window store and stream time, emitting on update. Their result keys are
  ``Windowed<K>``; a window's identity is (key identity, window start).
- ``L.join / leftJoin / outerJoin(R, joiner)``: the KTable-KTable join processors of
  :mod:`reference.joins.table_table` (the same inner/left/outer rules, KIP-77 and before). A side's
  update looks the other side up through its value getter: for a windowed aggregation that is a
  window-store fetch of (key, start), which honours that store's retention (expiry by *that*
  store's observed time; :mod:`reference.stores.time_window_store`). Old values: ``leftJoin``
  makes L send them, ``outerJoin`` both, ``send_old_values`` both (``KTableImpl#doJoin``); a
  window's old value is the initializer's value when the window is new.
- ``shift_ms`` [kstream_to_table, 2.5, KIP-523]: ``R.toStream().map(w -> window shift_ms later)
  .toTable()``: the right updates' new values, keyed by the shifted window, go through a
  repartition topic (its partition: murmur2 over the windowed key's bytes, the key's bytes then the
  8-byte start, as ``TimeWindowedSerializer`` writes them) and land in a ``KTableSource`` with a
  key-value store (:mod:`reference.joins.table_source`): the shifted right table never expires.
  TopologyTestDriver (and kssim's synchronous delivery) processes them after the input that caused
  them. The join's right side is that table; its updates look up L's window store. The shifted
  bounds are Java longs: a right window whose ``end + shift_ms`` passes ``Long.MAX_VALUE`` wraps to
  a negative number, and the mapper's ``new TimeWindow`` throws ``IllegalArgumentException`` (a
  negative start, or an end before the start; ``window_illegal_argument``) at the first such window
  of the right record, in start order: the application dies there, and the shifted windows the
  record sent before are never read back.
- Output: ``{"key", "start", "end"}`` of the updating side (the left window's, shifted right
  windows being keyed like left ones), at ``max(ts, other ts)`` when the other side exists
  [output_ts_max, 2.3, KAFKA-6455], else the update's ts (the window's max record ts since 2.3).
"""
from __future__ import annotations

from kssim.reference.joins.table_source import TableSource
from kssim.reference.joins.table_table import _KIP77_RULES, _LEGACY_RULES, _RULE_TEXTS
from kssim.reference.model.aggregations import aggregation_of
from kssim.reference.model.codes import FailureCode
from kssim.reference.model.joiners import make_joiner
from kssim.reference.model.keys import key_identity, murmur2, serialized_key
from kssim.reference.model.suppression import JAVA_LONG_MAX, java_long
from kssim.reference.runtime.explain import Stored, Why, show
from kssim.reference.stores.kv_store import KeyValueStore
from kssim.reference.windows.time_window import TimeWindowAggregate

#: the internal topic the shifted right windows go through (``toStream().map()`` then ``toTable()``)
SHIFTED_RIGHT_TOPIC = "right-shifted-repartition"
_START = 8  # TimeWindowedSerializer appends the window start as an 8-byte long


def build(spec, profile, config, instance_state):
    return WindowedTableJoin(spec, profile, config)


def shifted_partition(key, start: int, partitions: int) -> int:
    """The repartition topic's partition of a shifted windowed key: the default partitioner over
    ``TimeWindowedSerializer``'s bytes (the key's, then the start as a big-endian long)."""
    data = serialized_key(key) + start.to_bytes(_START, "big", signed=True)
    return (murmur2(data) & 0x7FFFFFFF) % partitions


def _key_id(key):
    return key if key.__class__ is str and key.isascii() else key_identity(key)


class WindowedTableJoin:
    """Both windowed aggregations, the shifted right table (if any) and the join, of one task."""

    __slots__ = ("spec", "left", "right", "shifted", "joiner", "left_rule", "right_rule", "send_old", "ts_max",
                 "task_stream_time", "size", "partitions")

    def __init__(self, spec, profile, config):
        kip77 = profile.kip77_join_semantics
        self.spec = spec
        self.joiner = make_joiner(spec.joiner, spec.joiner_separator)
        self.left_rule, self.right_rule = (_KIP77_RULES if kip77 else _LEGACY_RULES)[spec.join]
        # KTableImpl#doJoin (KIP-77): leftJoin -> L sends old values, outerJoin -> both; a downstream
        # that asks for old values enables them on both
        left_old = spec.send_old_values or (kip77 and spec.join in ("left", "outer"))
        right_old = spec.send_old_values or (kip77 and spec.join == "outer")
        self.send_old = spec.send_old_values
        self.ts_max = profile.output_ts_max
        self.size = spec.window.size_ms
        self.left = TimeWindowAggregate(spec.window, aggregation_of(spec.left_aggregation, spec.merge_separator),
                                        profile, config.store, send_old_values=left_old, forward=self._left_update,
                                        name="left")
        right_forward = self._right_update if spec.shift_ms == 0 else self._right_to_repartition
        self.right = TimeWindowAggregate(spec.window, aggregation_of(spec.right_aggregation, spec.merge_separator),
                                         profile, config.store, send_old_values=right_old, forward=right_forward,
                                         name="right")
        self.shifted = None
        if spec.shift_ms:
            self.shifted = TableSource("shifted right", KeyValueStore(), right_old,
                                       emit_on_change=profile.ktable_emit_on_change)
        # 2.1: both aggregations close windows by the task's stream time, which every record moves
        self.task_stream_time = not profile.windowed_agg_own_stream_time
        self.partitions = config.partition_count("left")

    def process(self, topic, key, value, ts, ctx):
        if self.task_stream_time:
            self.left.observe_task(ts)
            self.right.observe_task(ts)
        if topic == "left":
            self.left.process(topic, key, value, ts, ctx)
        elif topic == "right":
            self.right.process(topic, key, value, ts, ctx)
        else:
            self._shifted_update(key, value, ts, ctx)

    # -- the join's two sides ------------------------------------------------------------------
    def _left_update(self, ctx, key, key_id, start, end, new, old, ts, why):
        if self.shifted is None:
            other = self._window_row(self.right, key_id, start)
        else:
            other = self.shifted.store.rows.get((key_id, start))
        self._join(ctx, True, key, start, end, new, old, ts, other, why)

    def _right_update(self, ctx, key, key_id, start, end, new, old, ts, why):
        self._join(ctx, False, key, start, end, new, old, ts, self._window_row(self.left, key_id, start), why)

    def _right_to_repartition(self, ctx, key, key_id, start, end, new, old, ts, why):
        # toStream() keeps the new value; map() moves the window shift_ms later; the key changed, so
        # toTable() reads it back through a repartition topic
        shift = self.spec.shift_ms
        if end + shift > JAVA_LONG_MAX:
            self._fail_shifted_window(ctx, key, start, end)
        shifted = {"key": key, "start": start + shift, "end": end + shift}
        ctx.send(SHIFTED_RIGHT_TOPIC, shifted, new, ts, shifted_partition(key, start + shift, self.partitions))

    def _fail_shifted_window(self, ctx, key, start, end):
        """The mapper's ``new TimeWindow(start + shift, end + shift)`` where a bound wraps past
        ``Long.MAX_VALUE`` (see the module docstring): the Window constructor throws."""
        shift = self.spec.shift_ms
        why = None
        if ctx.explain:
            if start + shift > JAVA_LONG_MAX:
                bound, message = f"start {start} + shift {shift}", "Window startMs time cannot be negative."
                wrapped = java_long(start + shift)
            else:
                bound, message = f"end {end} + shift {shift}", "Window endMs time cannot be smaller than window startMs time."
                wrapped = java_long(end + shift)
            why = Why("window_illegal_argument",
                      f"right window [{start},{end}) of {show(key)} shifted by {shift}: its {bound} wraps past "
                      f"Long.MAX_VALUE to {wrapped}, and the mapper's new TimeWindow throws IllegalArgumentException "
                      f"('{message}'); the shifted windows this record sent before never reach the table",
                      ref="Window, KStream#map (the shift), KStream#toTable (KIP-523)")
        ctx.fail(FailureCode.WINDOW_ILLEGAL_ARGUMENT, why)

    def _shifted_update(self, windowed, value, ts, ctx):
        key, start = windowed["key"], windowed["start"]
        key_id = _key_id(key)
        change = self.shifted.update(windowed, (key_id, start), value, ts, ctx)
        if change is None:
            return  # skipped by the table source (emit-on-change, 2.6.0-2.7.0)
        why = None
        if ctx.explain:
            why = Why("shifted_right_update", f"shifted right window {show(windowed)} = right window "
                      f"[{start - self.spec.shift_ms},{windowed['end'] - self.spec.shift_ms}) moved {self.spec.shift_ms} "
                      f"ms later, {show(value)}@{ts}, read back by toTable()", ref="KStream#toTable (KIP-523)")
        self._join(ctx, False, key, start, windowed["end"], value, change[0], ts,
                   self._window_row(self.left, key_id, start), why)

    @staticmethod
    def _window_row(aggregate, key_id, start):
        """The other side's window as its value getter answers (``KStreamWindowAggregateValueGetter``:
        a window-store fetch, which hides expired windows): ``(value, ts, input_index)`` or None."""
        entry = aggregate.store.get(key_id, start)
        return None if entry is None else (entry[0], entry[1], entry[3])

    def _join(self, ctx, is_left, key, start, end, new, old, ts, other, update_why):
        rule = self.left_rule if is_left else self.right_rule
        result = rule(self.joiner, is_left, new, old, other, self.send_old)
        if result is None:
            return  # nothing to forward by design (no partner, or KIP-77's unnecessary tombstone)
        new_out, old_out, rule_name = result
        out_ts = ts if other is None or not self.ts_max or other[1] <= ts else other[1]
        windowed = {"key": key, "start": start, "end": end}
        why = self._why(is_left, key, start, end, new, ts, other, new_out, out_ts, rule_name, update_why) \
            if ctx.explain else None
        if self.send_old:
            ctx.emit(windowed, new_out, out_ts, why, old_out)
        else:
            ctx.emit(windowed, new_out, out_ts, why)

    def _why(self, is_left, key, start, end, new, ts, other, new_out, out_ts, rule_name, update_why):
        side, other_side = ("left", "right") if is_left else ("right", "left")
        if self.shifted is not None:
            other_side = "shifted right" if is_left else "left"
            side = side if is_left else "shifted right"
        text, ref = _RULE_TEXTS[rule_name]
        window = f"[{start},{end}) of {show(key)}"
        if other is None:
            where, joined = f"no {other_side} window {window} (never written, or expired from its store)", ()
        else:
            where = f"{other_side} window {window} = {show(other[0])}@{other[1]}"
            joined = (Stored(other_side, {"key": key, "start": start, "end": end}, other[0], other[1], other[2]),)
        ts_text = f"at max({ts}, {other[1]}) = {out_ts}" if other is not None and self.ts_max else f"at {out_ts}"
        result = "tombstone" if new_out is None else show(new_out)
        update = f" ({update_why.text})" if update_why is not None else ""
        return Why(rule_name, f"{self.spec.join} join, {side} window {window} now {show(new)}@{ts}{update}, with "
                              f"{where}: {text} -> {result} {ts_text}", joined,
                   ref=f"{ref}, windowed tables; output_ts_max, time_window_output_ts_max (KAFKA-6455)")
