"""``KTableSuppressProcessor`` (``KTableSuppressProcessorSupplier``; 2.1-2.2: its own class): one
per task, between a table-result operator and the output topic.

For each ``Change(new, old)`` the operator forwards (key K, timestamp T):

1. stream time: ``max(stream time, T)`` [``suppress_observed_stream_time``, 2.2+, KAFKA-7895];
   in 2.1 the processor reads the task's stream time instead, which every input record of the
   task advances before it is processed (:meth:`KTableSuppressProcessor.observe_task_record`).
   Both start at -1 (``NO_TIMESTAMP``).
2. buffer: put K at its buffer time (T, or the window end; :mod:`reference.model.suppression`)
   into :class:`~reference.stores.suppress_buffer.SuppressBuffer` (non-resetting: a buffered key
   keeps its place and prior value, its record is replaced by this one).
3. evict by time: while the smallest buffer time is ``<= stream time - duration`` (Java ``long``
   arithmetic), emit the first entry in buffer order (time, then key bytes).
4. capacity: if ``num_records > max_records`` or ``buffer_size > max_bytes`` (strictly), then
   ``emit_early``: emit first entries until neither holds; ``shut_down``: the application dies at
   this input (:attr:`~reference.model.codes.FailureCode.SUPPRESS_BUFFER_FULL`); what was emitted
   before (also by step 3 for this record) stays emitted.

Emitting an entry forwards its latest ``Change`` (key, new value, old value) at the timestamp of
the latest update (its record context), attributed to the input being processed; a tombstone is
not forwarded when ``safeToDropTombstones`` (untilWindowCloses). The output carries the old value
only when the scenario's downstream asks for old values (``send_old_values``).
"""
from __future__ import annotations

from kssim.reference.model.codes import FailureCode
from kssim.reference.model.keys import key_identity
from kssim.reference.model.pending import Pending, PendingKind, record_text, window_text
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.suppression import (NO_TIMESTAMP, buffer_key_bytes, buffer_time, buffered_record_size,
                                         java_long, value_bytes)
from kssim.reference.stores.suppress_buffer import BufferedChange, SuppressBuffer
from kssim.reference.suppress import explain


def buffer_identity(key, key_kind: str):
    """The key identity the buffer indexes a result by: what its serialized bytes say. A time
    window's key serializes key and start (the end follows from the size), a session's key, end
    and start."""
    if key_kind == "plain":
        return key_identity(key)
    if key_kind == "time_window":
        return key_identity(key["key"]), key["start"]
    return key_identity(key["key"]), key["end"], key["start"]


def _window_of(key, key_kind: str) -> tuple:
    """``(key, start, end)`` of a windowed result's key, () for a plain key."""
    if key_kind == "plain":
        return ()
    return key["key"], key["start"], key["end"]


class KTableSuppressProcessor:
    """The suppress processor of one task (see the module docstring)."""

    __slots__ = ("plan", "report_old_values", "delay_note", "buffer", "observed_stream_time", "task_stream_time")

    def __init__(self, plan, report_old_values: bool, delay_note: str = ""):
        self.plan = plan
        self.report_old_values = report_old_values
        self.delay_note = delay_note  # what the duration is made of, for explanations
        self.buffer = SuppressBuffer()
        self.observed_stream_time = NO_TIMESTAMP  # 2.2+: the largest ts that reached suppress
        self.task_stream_time = NO_TIMESTAMP  # 2.1: the task's stream time

    def observe_task_record(self, ts: int) -> None:
        """The task is about to process an input record at ``ts`` (2.1's ``PartitionGroup``
        advances the task's stream time when it hands the record out)."""
        if ts > self.task_stream_time:
            self.task_stream_time = ts

    def stream_time(self) -> int:
        return self.observed_stream_time if self.plan.observed_stream_time else self.task_stream_time

    def process(self, key, new, old, ts, why, topic, ctx) -> None:
        """One ``Change(new, old)`` of ``key`` at ``ts`` forwarded by the operator while it processed
        a record of ``topic``; ``why`` is the operator's explanation of it (or None)."""
        if ts > self.observed_stream_time:
            self.observed_stream_time = ts
        self._buffer(key, new, None if old is NO_OLD_VALUE else old, ts, why, topic, ctx)
        self._enforce_constraints(ctx, key, ts)

    def _buffer(self, key, new, old, ts, why, topic, ctx) -> None:
        plan = self.plan
        key_id = buffer_identity(key, plan.key_kind)
        key_bytes = buffer_key_bytes(key, plan.key_kind)
        old_bytes = value_bytes(old)
        existing = self.buffer.buffered(key_id)
        if existing is None:
            prior = old_bytes if plan.prior_value else None
            prior_value = old if plan.prior_value else None
            first_input = ctx.input_index
        else:
            prior, prior_value = existing.prior, existing.prior_value
            first_input = existing.first_input_index
        size = buffered_record_size(plan, key_bytes, prior, old_bytes, value_bytes(new), topic)
        entry = BufferedChange(key_id, key, new, old, prior, ts, topic, ctx.input_index, first_input, why, size,
                               prior_value)
        self.buffer.put(buffer_time(plan, key, ts), key_bytes, entry)

    def prior_value_for_buffered(self, key_id) -> tuple:
        """``TimeOrderedKeyValueBuffer#priorValueForBuffered`` (2.3+, KAFKA-8199) of a buffer key
        identity (:func:`buffer_identity`): ``(True, value)`` when the key is buffered, ``value``
        being the old value of the update that first buffered it (None: a null prior value, which
        ``ValueAndTimestamp.make`` turns into no row); ``(False, None)`` when it is not buffered."""
        entry = self.buffer.buffered(key_id)
        return (False, None) if entry is None else (True, entry.prior_value)

    def pending(self, task: int, node=None) -> tuple:
        """Every buffered result, in buffer order, with the stream time that evicts it: its buffer
        time (untilWindowCloses: the window end; untilTimeLimit: the update's ts) + the duration
        (the close delay, i.e. the window's grace, or the time limit)."""
        plan = self.plan
        stream_time = self.stream_time()
        final = plan.until == "window_close"
        held = []
        for place, entry in self.buffer.entries():
            if final:
                rule = f"window end {place.time} + close delay {plan.duration_ms} (the window's grace)"
            else:
                rule = f"first buffered update's ts {place.time} + time limit {plan.duration_ms}"
            window = _window_of(entry.key, plan.key_kind)
            what = window_text(*window, end_inclusive=plan.key_kind != "time_window") if window else \
                record_text("", entry.key, entry.new, entry.ts)
            held.append(Pending(PendingKind.SUPPRESSED, task, what, entry.key, entry.new, entry.ts,
                                place.time + plan.duration_ms, rule, stream_time, "the suppress processor's",
                                window, entry.input_index, node))
        return tuple(held)

    def _enforce_constraints(self, ctx, key, ts) -> None:
        plan, buffer = self.plan, self.buffer
        stream_time = self.stream_time()
        expiry = java_long(stream_time - plan.duration_ms)

        def emit_expired(place, entry):
            self._emit(entry, ctx, explain.expired if ctx.explain else None, place, stream_time)

        buffer.evict_while(lambda: buffer.min_timestamp <= expiry, emit_expired)
        if not self._over_capacity():
            return
        if plan.when_full == "emit_early":
            def emit_early(place, entry):
                self._emit(entry, ctx, explain.emitted_early if ctx.explain else None, place, stream_time)

            buffer.evict_while(self._over_capacity, emit_early)
            return
        ctx.fail(FailureCode.SUPPRESS_BUFFER_FULL, explain.buffer_full(plan, buffer, key, ts) if ctx.explain else None)

    def _over_capacity(self) -> bool:
        buffer, plan = self.buffer, self.plan
        return buffer.num_records > plan.max_records or buffer.buffer_size > plan.max_bytes

    def _emit(self, entry: BufferedChange, ctx, why_of, place, stream_time) -> None:
        if entry.new is None and self.plan.safe_to_drop_tombstones:
            return  # a window that never had a result needs no tombstone (SuppressedInternal)
        why = why_of(self, entry, place, stream_time) if why_of is not None else None
        if self.report_old_values:
            ctx.emit(entry.key, entry.new, entry.ts, why, entry.old)
        else:
            ctx.emit(entry.key, entry.new, entry.ts, why)
