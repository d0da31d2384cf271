"""The processors of table nodes: sources, ``filter``, ``map_values``, ``to_table``, ``group_by``
and ``suppress``, and their value getters.

Every table processor receives :class:`~reference.graph.stream_nodes.Change` records and has
``get(key, key_id)``, its value getter: the row ``(value, ts, input index)`` the table holds for a
key, or None. A materialized table answers from its store; ``filter`` and ``map_values`` answer by
applying their predicate or mapper to their parent's row (``KTableFilter``/``KTableMapValues``'s
value getters), so they need no store.

Rules (profile names in brackets):

- Table source (``KTableSource``): a null key is skipped. Materialized (old values asked for, a
  value getter needed, or versioned), it reads the old value then puts the new one
  (:class:`reference.joins.table_source.TableSource`: versioned stores, KIP-557's emit-on-change
  [``ktable_emit_on_change``]); not materialized, it forwards ``Change(new, null)`` as is.
- ``KTable#filter``: a new (old) value that does not pass becomes null; only non-null values reach
  the predicate. Without old values every update is forwarded, a row that never passed as a
  delete; with old values a change whose new and old results are both null is not forwarded,
  unless the table descends from a versioned table [``ktable_filter_skips_null_changes``].
- ``KTable#mapValues``: only non-null values reach the mapper; the old value is mapped too when
  old values are sent.
- ``KTable#groupBy`` (``KTableRepartitionMap``): the old value's pair is a subtract, the new
  value's an add; equal keys (JSON equality, Java ``equals``) are one record with both since 3.5
  [``table_group_by_single_record``, KIP-904], else the subtract goes first. A pair with a null
  key or value is not sent. A versioned table's out-of-order update (not ``latest``) is ignored.
"""
from __future__ import annotations

import json

from kssim.reference.graph.stream_nodes import Change, Processor
from kssim.reference.joins.table_source import TableSource
from kssim.reference.model.codes import DropReason
from kssim.reference.model.graph.expressions import json_equal
from kssim.reference.model.keys import key_identity
from kssim.reference.model.records import NO_OLD_VALUE
from kssim.reference.runtime.explain import Why, show
from kssim.reference.suppress.processor import buffer_identity

#: ``RecordQueue.UNKNOWN``: the timestamp of a suppressed table's prior value
NO_TIMESTAMP = -1

_new_tuple = tuple.__new__  # a Change without the NamedTuple's generated __new__ (hot path)


def identity_of(key):
    """A key's identity (:func:`reference.model.keys.key_identity`), ASCII strings inline."""
    return key if key.__class__ is str and key.isascii() else key_identity(key)


def key_of(key_id):
    """The key whose identity is ``key_id`` (:func:`identity_of`, under graphs' JSON serde): a
    string is its own identity, any other key is (its type's name, its JSON bytes). For the format-1
    stages that look a table up by identity only: a getter needs the key itself, as Kafka's
    ``KTableMapValues`` and ``KTableFilter`` getters call the mapper or predicate with it."""
    if key_id is None or key_id.__class__ is str:
        return key_id
    return json.loads(key_id[1])


class MaterializedTableSource(Processor):
    """``KTableSource`` with a store (see the module docstring)."""

    __slots__ = ("source", "send_old", "rows", "store", "cache", "node_ctx")

    def __init__(self, name, ctx, store, send_old: bool, emit_on_change: bool):
        super().__init__(name, ctx)
        self.node_ctx = ForwardingContext(ctx, self)  # the source's drops are named after the node
        self.source = TableSource(name, store, send_old, emit_on_change=emit_on_change)
        self.store = store
        self.send_old = send_old
        self.rows = None if store.versioned else store.rows
        self.cache = None  # a NamedCache when record caches are on (never for a versioned store)

    @property
    def cacheable(self) -> bool:
        return self.rows is not None

    def process(self, key, value, ts, why=None):
        ctx = self.ctx
        key_id = None if key is None else identity_of(key)
        cache = self.cache
        prior = None if cache is None or key is None else self.rows.get(key_id)
        self.node_ctx.incoming = why
        change = self.source.update(key, key_id, value, ts, self.node_ctx)
        if change is None:
            return  # dropped by the source (reason recorded there)
        old, latest = change
        if ctx.explain:
            text = f"{show(key)}:{show(value)}@{ts}" + (f" (old {show(old)})" if self.send_old else "")
            why = Why("table_update", f"{self.name} {text}") if why is None else self.hop(why, "table_update", text)
        if cache is not None:
            cache.put(key, key_id, value, None if prior is None else prior[0], ts, why)
            return
        self.forward(key, _new_tuple(Change, (value, old if self.send_old else None, latest)), ts, why)

    def get(self, key, key_id):
        if self.rows is not None:
            return self.rows.get(key_id)
        return self.store.get(key_id)

    def get_as_of(self, key_id, ts):
        """A versioned table's row valid at ``ts`` (KIP-889), for stream-table joins."""
        return self.store.get_as_of(key_id, ts)


class PassThroughTableSource(Processor):
    """``KTableSource`` without a store: forwards ``Change(new, null)``; a null key is skipped."""

    __slots__ = ()

    def process(self, key, value, ts, why=None):
        if key is None:
            self.drop(DropReason.NULL_KEY, f"null:{show(value)}@{ts} has a null key: skipped by the KTable source "
                                           "('Skipping record due to null key')", "KTableSource")
            return
        if self.ctx.explain:
            text = f"{show(key)}:{show(value)}@{ts}"
            why = Why("table_update", f"{self.name} {text}") if why is None else self.hop(why, "table_update", text)
        self.forward(key, Change(value, None, True), ts, why)


class TableFilter(Processor):
    __slots__ = ("predicate", "negate", "send_old", "skip_null_changes", "parent")

    def __init__(self, name, ctx, predicate, negate, send_old: bool, skip_null_changes: bool, parent):
        super().__init__(name, ctx)
        self.predicate = predicate
        self.negate = negate
        self.send_old = send_old
        self.skip_null_changes = skip_null_changes
        self.parent = parent

    def _passes(self, key, value) -> bool:
        return value is not None and self.predicate(key, value) is not self.negate

    def process(self, key, change, ts, why=None):
        new = change.new if self._passes(key, change.new) else None
        old = change.old if self.send_old and self._passes(key, change.old) else None
        if new is None and old is None and self.skip_null_changes:
            self.drop(DropReason.FILTERED, f"{show(key)}:{show(change.new)}@{ts}: neither the new nor the old value "
                                           "passes: nothing to forward", "KTableFilter")
            return
        if self.ctx.explain:
            why = self.hop(why, "pass", f"new value {'passes' if new is not None else '-> null (delete)'}")
        self.forward(key, _new_tuple(Change, (new, old, change[2])), ts, why)

    def get(self, key, key_id):
        row = self.parent.get(key, key_id)
        return row if row is not None and self._passes(key, row[0]) else None


class TableMapValues(Processor):
    __slots__ = ("mapper", "send_old", "parent")

    def __init__(self, name, ctx, mapper, send_old: bool, parent):
        super().__init__(name, ctx)
        self.mapper = mapper
        self.send_old = send_old
        self.parent = parent

    def process(self, key, change, ts, why=None):
        mapper = self.mapper
        new = None if change.new is None else mapper(key, change.new)
        old = mapper(key, change.old) if self.send_old and change.old is not None else None
        if self.ctx.explain:
            why = self.hop(why, "pass", f"value -> {show(new)}")
        self.forward(key, _new_tuple(Change, (new, old, change[2])), ts, why)

    def get(self, key, key_id):
        row = self.parent.get(key, key_id)
        if row is None:
            return None
        mapped = self.mapper(key, row[0])
        return None if mapped is None else (mapped,) + tuple(row[1:])


class TableGroupBy(Processor):
    """``KTableRepartitionMap`` (see the module docstring); its children are the repartition sink."""

    __slots__ = ("key_mapper", "value_mapper", "single_record", "drop_not_latest", "subtract_first")

    def __init__(self, name, ctx, key_mapper, value_mapper, single_record: bool, drop_not_latest: bool,
                 subtract_first: bool = True):
        super().__init__(name, ctx)
        self.key_mapper = key_mapper
        self.value_mapper = value_mapper
        self.single_record = single_record
        self.drop_not_latest = drop_not_latest
        self.subtract_first = subtract_first  # [table_group_by_subtract_first]: 0.10.0 added first

    def process(self, key, change, ts, why=None):
        if self.drop_not_latest and not change.latest:
            self.drop(DropReason.OUT_OF_ORDER_VERSIONED_UPDATE, f"{show(key)}:{show(change.new)}@{ts} is not the "
                      "newest version of its key: not re-grouped", "KTableRepartitionMap, KIP-914")
            return
        key_mapper, value_mapper = self.key_mapper, self.value_mapper
        added, removed = change[0], change[1]
        new = None if added is None else (key_mapper(key, added), value_mapper(key, added))
        old = None if removed is None else (key_mapper(key, removed), value_mapper(key, removed))
        new_ok = new is not None and new[0] is not None and new[1] is not None
        old_ok = old is not None and old[0] is not None and old[1] is not None
        if (new is not None and not new_ok) or (old is not None and not old_ok):
            self.drop(DropReason.NULL_GROUP_KEY, f"{show(key)}@{ts}: the group-by mapper gave a null key or value",
                      "KTableRepartitionMap")
        explain = self.ctx.explain
        if self.single_record and new_ok and old_ok and _same_group(new[0], old[0]):
            self.forward(new[0], _new_tuple(Change, (new[1], old[1], True)), ts,
                         self.hop(why, "pass", f"re-grouped under {show(new[0])}: one record, subtract and add "
                                               "(KIP-904)") if explain else None)
            return
        if old_ok and self.subtract_first:
            self._subtract(old, ts, why)
        if new_ok:
            self.forward(new[0], _new_tuple(Change, (new[1], None, True)), ts,
                         self.hop(why, "pass", f"add {show(new[1])} to group {show(new[0])}") if explain else None)
        if old_ok and not self.subtract_first:
            self._subtract(old, ts, why)

    def _subtract(self, old, ts, why):
        self.forward(old[0], _new_tuple(Change, (None, old[1], True)), ts,
                     self.hop(why, "pass", f"subtract {show(old[1])} from group {show(old[0])}")
                     if self.ctx.explain else None)


def _same_group(a, b) -> bool:
    """Java ``equals`` of two mapped group keys (JSON equality); strings compared inline (hot path)."""
    if a.__class__ is str and b.__class__ is str:
        return a == b
    return json_equal(a, b)


class ForwardingContext:
    """The task context as a format-1 operator sees it inside a graph: what it emits is forwarded
    to the graph node's children (as a table change unless the result is a stream), its
    explanation following the path of the record being processed (``incoming``); what it drops is
    named after the node; everything else is the task's context."""

    __slots__ = ("_ctx", "_node", "_stream", "incoming")

    def __init__(self, ctx, node: Processor, stream: bool = False):
        self._ctx = ctx
        self._node = node
        self._stream = stream  # the operator's result is a KStream: plain values, not changes
        self.incoming = None  # the Why of the record the operator is processing (explanations only)

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def _path(self, why):
        if why is None:
            return None
        step = f"{self._node.name}: {why.text}"
        incoming = self.incoming
        text = step if incoming is None else f"{incoming.text} -> {step}"
        return Why(why.rule, text, tuple(why.joined) + (() if incoming is None else tuple(incoming.joined)),
                   ref=why.ref, window=why.window)

    def emit(self, key, value, ts, why=None, old_value=NO_OLD_VALUE, topic=None):
        why = self._path(why)
        if self._stream:
            self._node.forward(key, value, ts, why)
        else:
            self._node.forward(key, Change(value, None if old_value is NO_OLD_VALUE else old_value), ts, why)

    def drop(self, reason, why=None, window=()):
        self._ctx.drop(reason, self._path(why), self._node.name, window)

    def fail(self, code, why=None):
        self._ctx.fail(code, self._path(why))


class Suppress(Processor):
    """``KTable#suppress``: the format-1 suppress processor, its evictions forwarded as changes.

    Its value getter (``KTableSuppressProcessorSupplier#view``, 2.3+, KAFKA-8199; before, a
    suppressed table has no getter and the plan refuses a join on it) answers, for a key the buffer
    holds, the buffer's prior value (``priorValueForBuffered``: the old value of the update that
    first buffered the key) with timestamp -1 (``RecordQueue.UNKNOWN``: the buffer does not know
    it), no row when that prior value is null; for a key not buffered, the parent's getter."""

    __slots__ = ("processor", "forwarding", "topic", "upstream_table")

    def __init__(self, name, ctx, processor, upstream_table=None):
        super().__init__(name, ctx)
        self.processor = processor
        self.forwarding = ForwardingContext(ctx, self)
        self.upstream_table = upstream_table  # the parent table's processor (its getter)

    def process(self, key, change, ts, why=None):
        self.forwarding.incoming = why
        self.processor.process(key, change.new, change.old, ts, None, self.ctx.current_topic, self.forwarding)

    def get(self, key, key_id):
        processor = self.processor
        kind = processor.plan.key_kind
        buffered, prior = processor.prior_value_for_buffered(key_id if kind == "plain" else
                                                             buffer_identity(key, kind))
        if buffered:
            return None if prior is None else (prior, NO_TIMESTAMP, -1)
        return self.upstream_table.get(key, key_id)

    def pending(self, task: int) -> tuple:
        """The suppress buffer, named by this node."""
        return self.processor.pending(task, self.name)
