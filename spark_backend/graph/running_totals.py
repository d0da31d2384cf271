"""Native plans for the folds whose state is a running total or the key's last value: window
functions over ``(sid, node, key, window)`` in order-key order, no Python.

The per-key folds of :mod:`spark_backend.graph.keyed_fold` send every record through Python (one
``mapInArrow`` pass: tens of microseconds a record with the Arrow round trip). The commonest
states need no such pass:

- a materialized, unversioned table source without emit-on-change (``table_stages.PlainStore``):
  the old value is the key's previous record's value, a ``lag``;
- ``count`` and ``sum`` of a grouped stream (``aggregate_stages.StreamAggregate``) or a grouped
  table (``aggregate_stages.TableAggregate``): the aggregate is a running sum of each record's
  contribution, and the forwarded timestamp a running max [``output_ts_max``].

Each function here gives exactly what its fold gives (the same texts: integers in decimal, a
null aggregate as null), so a stage can run any of its instances natively or folded. Arithmetic
wraps as a Java ``long``: contributions are summed as their high and low 32 bits
(:mod:`spark_backend.runtime.long_sums`, ``bigint`` sums that cannot overflow) and wrapped once,
which equals wrapping at every step (arithmetic modulo 2^64).
``INT(v)`` of the spec is ``v`` for a JSON integer within the long range, else 0.

Cost: one shuffle by key and a sort (the fold's too), then the window's running aggregates in the
JVM: O(1) per record.
"""
from __future__ import annotations

from typing import Optional

from kssim.reference.model.aggregations import Aggregation
from kssim.reference.model.graph.nodes import AggregationType

from kssim.spark_backend.graph import flow
from kssim.spark_backend.runtime import long_sums

#: the named aggregations computed here, by their function name
NATIVE_FUNCTIONS = ("count", "sum")
_JSON_INTEGER = r"^-?(0|[1-9][0-9]{0,18})$"  # at most 19 digits: try_cast refuses what exceeds a long


def native_function(op) -> Optional[str]:
    """``count`` or ``sum`` when the aggregation node computes that named function (not a
    Python API object, not a reducer, whose first value is taken as it is); else None."""
    if isinstance(op.function, Aggregation):
        return None
    if op.type is AggregationType.COUNT:
        return "count"
    if op.type is AggregationType.AGGREGATE and op.function in NATIVE_FUNCTIONS:
        return op.function
    return None


def _key_window():
    from pyspark.sql import Window

    return Window.partitionBy("sid", "node", "key", "wstart", "wend").orderBy(*flow.IN_ORDER)


def _upto_here():
    from pyspark.sql import Window

    return _key_window().rowsBetween(Window.unboundedPreceding, Window.currentRow)


def _before_here():
    from pyspark.sql import Window

    return _key_window().rowsBetween(Window.unboundedPreceding, -1)


def integer_of(text):
    """``INT(v)`` of a JSON-text column: the integer, or 0 (null, not an integer, beyond a long),
    as :class:`long_sums.Parts`."""
    from pyspark.sql import functions as F

    return long_sums.parts(F.when(text.rlike(_JSON_INTEGER), text.try_cast("bigint")))


def running_sums(contribution: long_sums.Parts, upto):
    """``(total, before)``: the wrapped (Java long) sums of ``contribution`` over the window
    ``upto`` (up to and including the row) and before the row, as ``bigint`` columns."""
    total = long_sums.summed(contribution, upto)
    return long_sums.as_long(total), long_sums.as_long(long_sums.minus_own(total, contribution))


def last_value_source(rows) -> flow.StageResult:
    """``PlainStore`` without emit-on-change: ``rows`` (the arrivals with a boolean ``send_old``
    column) forwarded as ``Change(value, previous value of the key if send_old)``."""
    from pyspark.sql import functions as F

    old = F.when(F.col("send_old"), F.lag("value").over(_key_window()))
    return flow.StageResult(emitted=flow.records(rows, old=old, latest=F.lit(True)))


def stream_totals(rows) -> flow.StageResult:
    """``StreamAggregate`` of ``count``/``sum``: ``rows`` (the kept arrivals: keys not null, null
    values only where the release re-forwards the aggregate) with columns ``function``,
    ``send_old``, ``ts_max``. The initializer is 0, so the first old value is ``0``."""
    from pyspark.sql import functions as F

    value = F.col("value")
    contribution = long_sums.chosen(F.col("function") == "count", long_sums.parts(value.isNotNull()),
                                    integer_of(value))
    total, before = running_sums(contribution, _upto_here())
    new_ts = F.when(F.col("ts_max"), F.max("ts").over(_upto_here())).otherwise(F.col("ts"))
    return flow.StageResult(emitted=flow.records(
        rows, value=total.cast("string"), old=F.when(F.col("send_old"), before.cast("string")), ts=new_ts,
        latest=F.lit(True)))


def table_totals(rows) -> flow.StageResult:
    """``TableAggregate`` of ``count``/``sum``: ``rows`` (the arrivals with keys: ``value`` the
    added value, ``old`` the subtracted one) with columns ``function``, ``send_old``, ``ts_max``.
    The aggregate is null until a first add; a subtract applies only once an aggregate exists;
    the timestamp is the record's until then, after it the running max from that add on."""
    from pyspark.sql import functions as F

    count = F.col("function") == "count"
    added, removed = F.col("value"), F.col("old")
    had_aggregate = F.coalesce(F.max(added.isNotNull().cast("int")).over(_before_here()), F.lit(0)) == 1
    has_aggregate = had_aggregate | added.isNotNull()
    zero, one = long_sums.parts(F.lit(0)), long_sums.parts(F.lit(1))
    add = long_sums.chosen(added.isNull(), zero, long_sums.chosen(count, one, integer_of(added)))
    subtract = long_sums.chosen(removed.isNull() | ~had_aggregate, zero,
                                long_sums.negated(long_sums.chosen(count, one, integer_of(removed))))
    total, before = running_sums(long_sums.plus(add, subtract), _upto_here())
    ts_since_first_add = F.max(F.when(has_aggregate, F.col("ts"))).over(_upto_here())
    new_ts = F.when(had_aggregate & F.col("ts_max"), ts_since_first_add).otherwise(F.col("ts"))
    return flow.StageResult(emitted=flow.records(
        rows, value=F.when(has_aggregate, total.cast("string")),
        old=F.when(F.col("send_old") & had_aggregate, before.cast("string")), ts=new_ts, latest=F.lit(True)))
