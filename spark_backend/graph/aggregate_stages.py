"""The stages of non-windowed aggregations: ``count``/``reduce``/``aggregate`` of a grouped stream
(``KStreamAggregate``, ``KStreamReduce``) and of a grouped table (``KTableAggregate``,
``KTableReduce``). Each is a fold per key (:mod:`spark_backend.graph.keyed_fold`) over the
node's store, forwarding a table change: ``value`` the new aggregate, ``old`` the previous one
when the node sends old values (``NodePlan.send_old_values``).

Rules (profile rule names in brackets; the reference: ``reference/graph/aggregations.py``,
``docs/internals/graph-rules.md`` sections 5 and 6):

- The functions: the named ones of ``reference/model/graph/functions.py`` (``count``, the
  aggregations and reducers, their grouped-table subtractors; integer arithmetic wraps as a Java
  ``long``) or the Python API's :class:`~reference.model.aggregations.Aggregation` and subtractor
  callables (:func:`reference.model.graph.plan.aggregation_of_node`). A reduce takes a group's
  first value as it is.
- Grouped stream: a null key is dropped (``null_key``) [``stream_aggregate_null_key_skipped``;
  0.10.0 fails: ``aggregation_null_key``]; a null value is dropped (``null_value``)
  [``stream_aggregate_skips_null_values``, KAFKA-6451, 1.1; before, it re-stores and re-forwards
  the aggregate]. The aggregate is the stored one or the initializer's (the first update's old
  value is the initializer's); forwarded at ``max(record ts, stored ts)`` [``output_ts_max``,
  KAFKA-6455, 2.3; before, the record's ts].
- Grouped table: a null key is dropped (``null_key``). The subtractor is applied to the old value
  when both it and a stored aggregate exist, then the adder to the new value (on the initializer's
  value when no aggregate is left: a count goes down to 0 and stays); forwarded at the record's ts,
  or ``max(record ts, stored ts)`` once an aggregate existed [``output_ts_max``]. A single record
  with both values (KIP-904, [``table_group_by_single_record``]) is one subtract-then-add.

Costs: the null checks are projections; ``count`` and ``sum`` are running totals in the JVM
(:mod:`spark_backend.graph.running_totals`: a shuffle by key, a sort, window aggregates); the
other functions a fold, a shuffle by key, a sort and one Python pass, O(1) per record plus the
function's work (``list`` copies its aggregate). Record caches
(``config.caching``) are applied to what this stage emits by :mod:`spark_backend.graph.cache_stage`.
"""
from __future__ import annotations

import json
from typing import List

import attrs

from kssim.reference.model.codes import DropReason, FailureCode
from kssim.reference.model.graph import functions as fn
from kssim.reference.model.graph.plan import aggregation_of_node

from kssim.spark_backend.graph import flow, keyed_fold, mappers, running_totals
from kssim.spark_backend.graph.batch import Instance
from kssim.spark_backend.graph.keyed_fold import Emit, Folder


def _load(text):
    return None if text is None else json.loads(text)


@attrs.frozen
class StreamAggregate(Folder):
    """``KStreamAggregate``/``KStreamReduce`` of one node; state: the key's ``(aggregate, ts)``."""

    aggregation: object  # reference.model.aggregations.Aggregation
    send_old: bool
    ts_max: bool  # [output_ts_max]

    def step(self, row, a):
        aggregation = self.aggregation
        value = _load(a.value)
        if row is None:
            old, new_ts = aggregation.initial(), a.ts
        else:
            old = row[0]
            new_ts = a.ts if a.ts > row[1] or not self.ts_max else row[1]
        # before 1.1 a null value reaches here: the aggregate is re-stored and re-forwarded as is
        new = old if value is None else aggregation.add(mappers.seen_key(a.key, a.wstart, a.wend), value, old)
        emitted = Emit(mappers.value_text(new), mappers.value_text(old) if self.send_old else None, new_ts)
        return (None if new is None else (new, new_ts)), (emitted,)


@attrs.frozen
class TableAggregate(Folder):
    """``KTableAggregate``/``KTableReduce`` of one node; state: the key's ``(aggregate, ts)``."""

    aggregation: object  # reference.model.aggregations.Aggregation
    subtract: object  # (key, aggregate, value) -> aggregate
    send_old: bool
    ts_max: bool  # [output_ts_max]

    def step(self, row, a):
        key = mappers.seen_key(a.key, a.wstart, a.wend)
        if row is None:
            old, new_ts = None, a.ts
        else:
            old = row[0]
            new_ts = a.ts if a.ts > row[1] or not self.ts_max else row[1]
        added, removed = _load(a.value), _load(a.old)
        agg = old
        if removed is not None and old is not None:
            agg = self.subtract(key, old, removed)
        if added is not None:
            aggregation = self.aggregation
            agg = aggregation.add(key, added, aggregation.initial() if agg is None else agg)
        emitted = Emit(mappers.value_text(agg), mappers.value_text(old) if self.send_old else None, new_ts)
        return (None if agg is None else (agg, new_ts)), (emitted,)


def _subtractor(op):
    if op.subtractor is not None:
        return op.subtractor
    named = fn.graph_subtractor(op.type.value, op.function)
    return lambda key, aggregate, value: named(aggregate, value)


def stream_aggregate(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    folders, fatal, skipping = {}, [], []
    for inst in instances:
        profile = inst.profile
        folders[(inst.sid, inst.index)] = StreamAggregate(aggregation_of_node(inst.node.op),
                                                          inst.node_plan.send_old_values, profile.output_ts_max)
        if not profile.stream_aggregate_null_key_skipped:
            fatal.append((inst.sid, inst.index))
        if profile.stream_aggregate_skips_null_values:
            skipping.append((inst.sid, inst.index))
    ruled = batch.settled(arrivals, [(s, n, (s, n) in fatal, (s, n) in skipping) for s, n in folders],
                          "sid INT, node INT, null_key_fatal BOOLEAN, skips_null_values BOOLEAN")
    null_key = F.col("key").isNull()
    null_value = F.col("value").isNull() & F.col("skips_null_values") & ~null_key
    kept = ruled.filter(~null_key & ~null_value)
    result = _folded_or_totals(kept, instances, folders, batch, running_totals.stream_totals)
    return flow.StageResult(
        emitted=result.emitted,
        drops=flow.union_all([
            result.drops,
            flow.drops(ruled.filter(null_key & ~F.col("null_key_fatal")), DropReason.NULL_KEY.code),
            flow.drops(ruled.filter(null_value), DropReason.NULL_VALUE.code)]),
        failures=flow.union_all([
            result.failures,
            flow.failures(ruled.filter(null_key & F.col("null_key_fatal")), FailureCode.AGGREGATION_NULL_KEY.code)]))


def table_aggregate(arrivals, instances: List[Instance], batch) -> flow.StageResult:
    from pyspark.sql import functions as F

    folders = {}
    for inst in instances:
        op = inst.node.op
        folders[(inst.sid, inst.index)] = TableAggregate(aggregation_of_node(op), _subtractor(op),
                                                         inst.node_plan.send_old_values, inst.profile.output_ts_max)
    null_key = F.col("key").isNull()
    result = _folded_or_totals(arrivals.filter(~null_key), instances, folders, batch, running_totals.table_totals)
    return flow.StageResult(
        emitted=result.emitted,
        drops=flow.union_all([result.drops, flow.drops(arrivals.filter(null_key), DropReason.NULL_KEY.code)]),
        failures=result.failures)


def _folded_or_totals(rows, instances: List[Instance], folders, batch, totals) -> flow.StageResult:
    """The instances computing ``count``/``sum`` as running totals (``totals``, a function of
    :mod:`spark_backend.graph.running_totals`: no Python), the others by their folders."""
    from pyspark.sql import functions as F

    native = [(i.sid, i.index, running_totals.native_function(i.node.op), i.node_plan.send_old_values,
               bool(i.profile.output_ts_max)) for i in instances]
    native = [row for row in native if row[2] is not None]
    if not native:
        return keyed_fold.split(keyed_fold.fold(rows, folders))
    ddl = "sid INT, node INT, function STRING, send_old BOOLEAN, ts_max BOOLEAN"
    parts = [totals(batch.settled(rows, native, ddl))]
    if len(native) < len(instances):
        settings = F.broadcast(batch.frame(native, ddl))
        parts.append(keyed_fold.split(keyed_fold.fold(rows.join(settings, ["sid", "node"], "left_anti"), folders)))
    return flow.merged(parts)


STAGES = {
    "stream_aggregate": stream_aggregate,
    "table_aggregate": table_aggregate,
}
