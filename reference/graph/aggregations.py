"""Aggregation processors: ``count``/``reduce``/``aggregate`` of a grouped stream
(``KStreamAggregate``, ``KStreamReduce``), of a grouped table (``KTableAggregate``,
``KTableReduce``: adder and subtractor), and of a windowed stream (the format-1 operators of
:mod:`reference.windows`, whose results are forwarded as changes).

Rules:

- Grouped stream: a record with a null key or a null value is skipped (the aggregator never sees
  a null value). The aggregate is the stored one, or the initializer's value (a reduce takes the
  first value as it is); the result is stored and forwarded as ``Change(new, old)`` (old only when
  old values are sent) at ``max(record ts, stored ts)``.
- Grouped table: a null key is skipped. The subtractor is applied to the old value when both it
  and a stored aggregate exist, then the adder to the new value (on the initializer's value when
  no aggregate is left); the result is stored and forwarded at the record's ts, or at
  ``max(record ts, stored ts)`` once an aggregate existed. An aggregate is never deleted by a
  subtract (a count goes down to 0 and stays).

Stores: :class:`reference.stores.kv_store.KeyValueStore`, keyed by key identity. Cost per record:
O(1) plus the aggregator's.
"""
from __future__ import annotations

from kssim.reference.graph.stream_nodes import Change, Processor
from kssim.reference.graph.table_nodes import ForwardingContext, identity_of
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.model.pending import pending_of, with_node
from kssim.reference.stores.time_window_store import NO_TIMESTAMP
from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.runtime.explain import show
from kssim.reference.stores.kv_store import KeyValueStore

_new_tuple = tuple.__new__  # a Change without the NamedTuple's generated __new__ (hot path)


class StreamAggregate(Processor):
    """``KStreamAggregate`` / ``KStreamReduce`` of one task (a reduce is an aggregation without
    initializer, :class:`reference.model.aggregations.Aggregation`)."""

    __slots__ = ("aggregation", "send_old", "store", "rows", "cache", "ts_max", "skips_null_values",
                 "null_key_fatal")
    cacheable = True

    def __init__(self, name, ctx, aggregation, send_old: bool, profile):
        super().__init__(name, ctx)
        self.aggregation = aggregation
        self.send_old = send_old
        self.store = KeyValueStore()
        self.rows = self.store.rows
        self.cache = None  # a NamedCache when record caches are on
        self.ts_max = profile.output_ts_max  # KAFKA-6455 (2.3): max(record ts, aggregate ts)
        self.skips_null_values = profile.stream_aggregate_skips_null_values  # KAFKA-6451 (1.1)
        self.null_key_fatal = not profile.stream_aggregate_null_key_skipped  # 0.10.0

    def process(self, key, value, ts, why=None):
        if key is None and self.null_key_fatal:
            self.ctx.fail(FailureCode.AGGREGATION_NULL_KEY)
        if key is None or (value is None and self.skips_null_values):
            reason = DropReason.NULL_KEY if key is None else DropReason.NULL_VALUE
            self.drop(reason, f"{show(key)}:{show(value)}@{ts} has a null {'key' if key is None else 'value'}: "
                              "skipped by the aggregation ('Skipping record due to null key or value')",
                      "KStreamAggregate")
            return
        key_id = identity_of(key)
        row = self.rows.get(key_id)
        aggregation = self.aggregation
        if row is None:
            # the old value of a key's first update is the initializer's result (null for a reduce):
            # KStreamAggregate reads "oldAgg = initializer" before adding
            old = aggregation.initial()
            new = old if value is None else aggregation.add(key, value, old)
            new_ts = ts
        else:
            old = row[0]
            # before 1.1 a null value re-stores and re-forwards the current aggregate
            new = old if value is None else aggregation.add(key, value, old)
            new_ts = ts if ts > row[1] or not self.ts_max else row[1]
        self.store.put(key_id, new, new_ts, self.ctx.input_index)
        if self.ctx.explain:
            why = self.hop(why, "aggregate", f"{aggregation.name} of {show(key)}: {show(old)} + {show(value)} = "
                                             f"{show(new)} at ts {new_ts}")
        if self.cache is not None:
            self.cache.put(key, key_id, new, None if row is None else row[0], new_ts, why)
            return
        self.forward(key, Change(new, old if self.send_old else None), new_ts, why)

    def get(self, key, key_id):
        return self.rows.get(key_id)


class TableAggregate(Processor):
    """``KTableAggregate`` / ``KTableReduce`` of one task: adder and subtractor."""

    __slots__ = ("aggregation", "subtract", "send_old", "store", "rows", "cache", "ts_max")
    cacheable = True

    def __init__(self, name, ctx, aggregation, subtract, send_old: bool, profile):
        super().__init__(name, ctx)
        self.ts_max = profile.output_ts_max  # KAFKA-6455 (2.3): max(record ts, aggregate ts)
        self.aggregation = aggregation
        self.subtract = subtract  # (key, aggregate, value) -> aggregate
        self.send_old = send_old
        self.store = KeyValueStore()
        self.rows = self.store.rows
        self.cache = None  # a NamedCache when record caches are on

    def process(self, key, change, ts, why=None):
        if key is None:
            self.drop(DropReason.NULL_KEY, f"null:{show(change.new)}@{ts} has a null key: skipped by the "
                                           "aggregation ('Skipping record due to null key')", "KTableAggregate")
            return
        key_id = key if key.__class__ is str and key.isascii() else identity_of(key)
        rows = self.rows
        row = rows.get(key_id)
        if row is None:
            old = None
            new_ts = ts
        else:
            old = row[0]
            new_ts = ts if ts > row[1] or not self.ts_max else row[1]
        agg = old
        removed, added = change[1], change[0]
        subtracted = removed is not None and old is not None
        if subtracted:
            agg = self.subtract(key, old, removed)
        initialized = False
        if added is not None:
            aggregation = self.aggregation
            initialized = agg is None
            agg = aggregation.add(key, added, aggregation.initial() if initialized else agg)
        ctx = self.ctx
        if agg is None:
            rows.pop(key_id, None)
        else:
            rows[key_id] = (agg, new_ts, ctx.input_index)  # KeyValueStore#put, inlined (hot path)
        if ctx.explain:
            steps = ([f"- {show(removed)}"] if subtracted else []) + ([f"+ {show(added)}"] if added is not None else [])
            start = f"{show(self.aggregation.initial())} (initializer)" if initialized else show(old)
            why = self.hop(why, "aggregate", f"{self.aggregation.name} of {show(key)}: {start} "
                                             f"{' '.join(steps)} = {show(agg)} at ts {new_ts}")
        if self.cache is not None:
            self.cache.put(key, key_id, agg, old, new_ts, why)
            return
        result = _new_tuple(Change, (agg, old if self.send_old else None, True))
        for child in self.children:
            child(key, result, new_ts, why)

    def get(self, key, key_id):
        return self.rows.get(key_id)


class WindowedAggregate(Processor):
    """A windowed aggregation: the format-1 operator (time, sliding or session windows, emit on
    update or on window close) fed the records, its results forwarded as changes of a table with
    windowed keys ``{"key", "start", "end"}``.

    With record caches (emit on update only: emit-on-window-close results are forwarded by the
    processor itself, not by a cache flush), each result goes to the window store's cache, which
    forwards at the commit ``Change(latest, the store's value before this generation)``
    (``CachingWindowStore`` / ``CachingSessionStore#putAndMaybeForward``): a window's first result
    has a null old value (not the initializer's), and a session merged away within the record that
    made it is never forwarded. The store's flushed values are tracked here (``flushed``), forgotten
    once the store's retention has passed them."""

    __slots__ = ("operator", "forwarding", "cache", "cacheable", "flushed", "retention_ms", "observed", "flushes")

    def __init__(self, name, ctx, operator, emit_final: bool = False):
        super().__init__(name, ctx)
        self.operator = operator
        self.forwarding = _CachingForwarding(ctx, self)
        self.cache = None  # a NamedCache when record caches are on
        self.cacheable = not emit_final
        self.flushed: dict = {}  # windowed key identity -> the value the store holds after the last flush
        settings = getattr(operator, "settings", None)
        self.retention_ms = getattr(operator, "retention_ms", None) or getattr(settings, "retention_ms", None)
        self.observed = NO_TIMESTAMP
        self.flushes = 0

    def process(self, key, value, ts, why=None):
        self.forwarding.incoming = why
        if ts > self.observed:
            self.observed = ts
        self.operator.process("input", key, value, ts, self.forwarding)

    def cache_result(self, key, new, ts, why) -> None:
        window_id = _window_identity(key)
        self.cache.put(key, window_id, new, self.flushed.get(window_id), ts, why)

    def forward_flushed(self, key, new, old, ts, why):
        window_id = _window_identity(key)
        if new is None:
            self.flushed.pop(window_id, None)
        else:
            self.flushed[window_id] = new
        self.flushes += 1
        if self.flushes % 4096 == 0 and self.retention_ms is not None:
            horizon = self.observed - self.retention_ms
            for stale in [w for w in self.flushed if w[2] < horizon]:
                del self.flushed[stale]
        self.forward(key, _new_tuple(Change, (new, old, True)), ts, why)

    def get(self, key, key_id):
        raise NotImplementedError("a windowed table is not read through a value getter in graphs")

    def pending(self, task: int) -> tuple:
        """The format-1 operator's open emit-on-window-close windows, named by this node."""
        return with_node(pending_of(self.operator, task), self.name)



def _window_identity(key) -> tuple:
    """A windowed key's identity: the key's, the window's start and end."""
    return identity_of(key["key"]), key["start"], key["end"]


class _CachingForwarding(ForwardingContext):
    """The windowed operator's context: with a cache, its results go to the cache."""

    __slots__ = ()

    def emit(self, key, value, ts, why=None, old_value=NO_OLD_VALUE, topic=None):
        node = self._node
        if node.cache is None:
            ForwardingContext.emit(self, key, value, ts, why, old_value, topic)
            return
        node.cache_result(key, value, ts, self._path(why))
